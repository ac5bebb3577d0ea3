"""One CPU arithmetic for the machines of one vendor (`cpu_arithmetic` in config/config.yaml).

PyTorch picks its CPU kernels by the widest vector instructions the machine has (ATen's `cpu_capability`: AVX2 or
AVX-512 on x86-64), and so do MKL (the matrix products) and oneDNN (convolutions). Kernels of another width round
differently, and thousands of training epochs amplify the rounding: the same command gave other accuracies on an
AVX-512 machine than on the AVX2 machine that made the committed results. The setting `portable` runs every job on
ATen's and oneDNN's AVX2 kernels (every x86-64 machine since 2013 has them) and on MKL's compatible branch, so that
machines with and without AVX-512 compute alike. It does not make an AMD and an Intel CPU compute alike, although MKL
documents its compatible branch as vendor-neutral: UCI benchmark runs trained on an AMD EPYC and again on an Intel Xeon
under this setting differ in the last float32 digits (none of 920 runs bit-identical; README). The variables are
pinned through the libraries' environment, which the workflow sets for itself and every job it starts (they are read
once, when torch loads, so a job cannot set them itself). `native` leaves each library its own choice (the fastest;
numbers then follow the CPU). Either way the numbers also depend on the thread count (`threads_per_job`), which a run
records.

Whatever the setting, a job flushes subnormal floats (magnitudes below 1.2e-38) to zero (`set_up_process`). An x86
CPU takes a slow path for every operation on a subnormal, and the moment-propagating networks of the thesis (VBP,
BEDL, the CLT-BNN of RAL) make them in their training steps: BEDL-PAC's default-scale CIFAR-10 run of thesis ch. 5
took 239 s with them and 51 s without (its epochs 7x faster; benchmarks/subnormals.py). Of the default build's 467
training runs, 466 gave bit-identical metrics and histories with and without flushing; the last-layer Laplace on the
SDE-BNN toy, whose full-batch Adam training amplifies any difference, departed after epoch 1500 of 2000 (test NLL
10.23 without, 11.14 with).

A training job checks that the kernels it runs are the setting's (`check`) and records the CPU, the kernels, the
variables and the flushing in its metrics.json (`describe`).
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

SETTINGS: dict[str, dict[str, str]] = {
    "portable": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "native": {},
}
"""The environment of each setting: the variables ATen, MKL and oneDNN read when torch loads."""
CAPABILITY = {"portable": "AVX2"}
"""The ATen kernels (`torch.backends.cpu.get_cpu_capability()`) a job of each pinned setting must run."""
VARIABLES = sorted({name for settings in SETTINGS.values() for name in settings})


def environment(setting: str) -> dict[str, str]:
    """The environment variables of `setting` (see `SETTINGS`); a setting not there is an error naming the valid."""
    if setting not in SETTINGS:
        raise ValueError(f"unknown cpu_arithmetic {setting!r}; choose {' or '.join(SETTINGS)}")
    return SETTINGS[setting]


def check(setting: str) -> None:
    """Stop a job whose torch runs other kernels than `setting` pins (its variables were not set before torch loaded,
    or the CPU lacks the instructions), with the fix."""
    wanted, running = CAPABILITY.get(setting), running_kernels()
    if wanted is not None and running != wanted:
        variables = " ".join(f"{k}={v}" for k, v in environment(setting).items())
        raise RuntimeError(
            f"cpu_arithmetic={setting} runs torch's {wanted} kernels, but this job runs {running} ({cpu_model()}): "
            f"start it with {variables} in its environment (the workflow sets them), or use cpu_arithmetic=native "
            "on a CPU without AVX2, whose numbers then follow the CPU"
        )


def set_up_process(threads: int) -> None:
    """Flush subnormal floats to zero and give torch `threads` threads, before the job's first parallel operation:
    torch's worker threads take the flushing from the thread that starts them."""
    import torch

    torch.set_flush_denormal(True)
    torch.set_num_threads(threads)


def flushes_subnormals() -> bool:
    """Whether this thread's float arithmetic flushes subnormals to zero (a subnormal times one gives zero)."""
    import torch

    return torch.tensor([1e-39]).mul(1.0).item() == 0.0


def running_kernels() -> str:
    """The ATen kernels this process's torch runs. torch is imported here, not with the module: the workflow reads
    `environment` while it builds the DAG, where loading torch would add seconds to every `snakemake` call."""
    import torch

    return torch.backends.cpu.get_cpu_capability()


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux), else the platform's processor string."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def describe(setting: str) -> dict:
    """What a job's arithmetic ran on: the setting, the CPU, torch's kernels, the pinning variables as set and
    whether subnormals were flushed to zero."""
    return {
        "cpu_arithmetic": setting,
        "cpu": cpu_model(),
        "cpu_capability": running_kernels(),
        "variables": {name: os.environ.get(name) for name in VARIABLES},
        "flush_subnormals": flushes_subnormals(),
    }
