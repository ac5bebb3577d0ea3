"""Inference methods. Each Hydra `method` name maps to the module whose `build(cfg, spec)` builds it.

A method is an `nn.Module` with the hooks of `bnnrepro.methods.protocol.Method`, checked when it is built.
Modules are imported only when their method runs, so a job loads nothing it does not use.
"""

from __future__ import annotations

import importlib

import yaml
from omegaconf import DictConfig

from bnnrepro.data.spec import DataSpec
from bnnrepro.methods.protocol import Method, check_method
from bnnrepro.paths import train_config_dir

METHOD_MODULES = {
    "udn": "bnnrepro.methods.depth_networks",
    "finite": "bnnrepro.methods.depth_networks",
    "dun": "bnnrepro.methods.depth_networks",
    "sdebnn": "bnnrepro.methods.continuous_depth",
    "odenet": "bnnrepro.methods.continuous_depth",
    "hyperodenet": "bnnrepro.methods.continuous_depth",
    "mfvi_odenet": "bnnrepro.methods.continuous_depth",
    "mfvi_hyperodenet": "bnnrepro.methods.continuous_depth",
    "resnet32": "bnnrepro.methods.continuous_depth",
    "mfvi_resnet32": "bnnrepro.methods.continuous_depth",
    "gp": "bnnrepro.methods.toy_baselines",
    "deep_ensemble": "bnnrepro.methods.toy_baselines",
    "mfvi": "bnnrepro.methods.toy_baselines",
    "latent_sde": "bnnrepro.methods.latent_sde",
    "repulsive_ensemble": "bnnrepro.methods.repulsive_ensembles",
    "hmc": "bnnrepro.methods.hmc",
    "laplace": "bnnrepro.methods.laplace",
}


# Families of Bayesian supervised learning methods and their properties (SDE-BNN paper, Table 5, App. C.5):
# (posterior over a stochastic process, flexible approximate posterior, adaptive computation), the references,
# and the methods of METHOD_MODULES that belong to the family.
METHOD_FAMILIES = {
    "Bayes by Backprop": {"properties": (False, False, False), "references": "Blundell et al. (2015)",
                          "implemented_by": ("mfvi",)},
    "MCMC for BNNs": {"properties": (False, True, False),
                      "references": "(Neal, 1996; Wenzel et al., 2020; Izmailov et al., 2021)", "implemented_by": ()},
    "Bayesian Hypernets": {"properties": (False, True, False), "references": "Krueger et al. (2018)",
                           "implemented_by": ()},
    "BBVI for SDEs": {"properties": (True, False, False), "references": "Ryder et al. (2018)", "implemented_by": ()},
    "Bayesian Neural ODEs": {"properties": (False, False, True),
                             "references": "Yildiz et al. (2019) Dandekar et al. (2020)", "implemented_by": ()},
    "SDE-BNN": {"properties": (True, True, True), "references": "current work", "implemented_by": ("sdebnn",)},
}  # fmt: skip


def config_method_name(config_name: str) -> str:
    """The method `name` that config/train/method/<config_name>.yaml sets, itself or through its defaults list
    (e.g. sdebnn_cifar10 -> sdebnn_mnist -> "sdebnn"): how the workflow finds the code a run's method runs."""
    cfg = yaml.safe_load((train_config_dir() / "method" / f"{config_name}.yaml").read_text())
    if "name" in cfg:
        return cfg["name"]
    parents = [entry for entry in cfg.get("defaults", []) if entry != "_self_"]
    if not parents:
        raise KeyError(f"config/train/method/{config_name}.yaml sets no method name")
    return config_method_name(parents[0])


def build_method(cfg: DictConfig, spec: DataSpec) -> Method:
    """The method `cfg.method.name` on data `spec`; an error names a missing hook of the protocol."""
    name = cfg.method.name
    if name not in METHOD_MODULES:
        raise KeyError(f"unknown method {name!r}; known methods: {', '.join(sorted(METHOD_MODULES))}")
    module = METHOD_MODULES[name]
    method = importlib.import_module(module).build(cfg, spec)
    check_method(method, module)
    return method
