"""Inference methods. Each Hydra `method` name maps to the module that builds it.

A method is an `nn.Module` with `parameter_groups(lr, depth_lr_ratio)`, `adapt_architecture(optimizer)`,
`loss(x, y, num_train)`, `predict(x)`, `diagnostics()` and `prepare_resume(state)`. Modules are imported
only when their method runs, so a job loads nothing it does not use.
"""

from __future__ import annotations

import importlib

from omegaconf import DictConfig
from torch import nn

from bnnrepro.data.spec import DataSpec

METHOD_MODULES = {
    "udn": "bnnrepro.methods.depth_networks",
    "finite": "bnnrepro.methods.depth_networks",
    "dun": "bnnrepro.methods.depth_networks",
    "sdebnn": "bnnrepro.methods.continuous_depth",
    "odenet": "bnnrepro.methods.continuous_depth",
    "gp": "bnnrepro.methods.toy_baselines",
    "deep_ensemble": "bnnrepro.methods.toy_baselines",
    "mfvi": "bnnrepro.methods.toy_baselines",
    "latent_sde": "bnnrepro.methods.latent_sde",
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


def build_method(cfg: DictConfig, spec: DataSpec) -> nn.Module:
    name = cfg.method.name
    if name not in METHOD_MODULES:
        raise KeyError(f"unknown method {name!r}; known methods: {', '.join(sorted(METHOD_MODULES))}")
    return importlib.import_module(METHOD_MODULES[name]).build(cfg, spec)
