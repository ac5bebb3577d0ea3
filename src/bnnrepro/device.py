"""The device a job runs on: `cuda` when asked for and present, `auto` picks cuda, then cpu."""

from __future__ import annotations

import resource

import torch


def resolve_device(requested: str) -> torch.device:
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            "device=cuda was requested, but torch sees no CUDA GPU (no GPU on this machine, "
            "CUDA_VISIBLE_DEVICES is empty, or torch is a CPU build); use device=cpu or device=auto"
        )
    if requested not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {requested!r}; choose auto, cpu or cuda")
    return torch.device(requested)


def peak_memory_mib(device: torch.device) -> float:
    """Peak memory of this job so far in MiB: the CUDA allocator's peak on a GPU, else the process's peak
    resident set size (`ru_maxrss`, KiB on Linux; SDE-BNN Figs. 5, 13 compare backprop and adjoint memory)."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
