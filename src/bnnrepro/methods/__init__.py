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
}


def build_method(cfg: DictConfig, spec: DataSpec) -> nn.Module:
    name = cfg.method.name
    if name not in METHOD_MODULES:
        raise KeyError(f"unknown method {name!r}; known methods: {', '.join(sorted(METHOD_MODULES))}")
    return importlib.import_module(METHOD_MODULES[name]).build(cfg, spec)
