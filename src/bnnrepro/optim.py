"""Adam (Kingma & Ba 2015) over parameter groups that may grow during training.

The same update as `torch.optim.Adam` with its defaults (tests compare the two on the same inputs).
We keep our own because every `torch.optim.Optimizer` method imports `torch._dynamo` on first use,
about 1.5 s per training job on 2 cores, which would dominate the start-up of the many short jobs
of a study. Parameters appended to a group's "params" list later (UDN Algorithm 1) get fresh state.
"""

from __future__ import annotations

import torch


class Adam:
    def __init__(self, param_groups: list[dict], betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.param_groups = [{**group, "params": list(group["params"])} for group in param_groups]
        self.betas, self.eps = betas, eps
        self.state: dict[torch.Tensor, dict[str, torch.Tensor]] = {}

    def _parameters(self) -> list[torch.Tensor]:
        return [p for group in self.param_groups for p in group["params"]]

    def zero_grad(self) -> None:
        for p in self._parameters():
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        beta1, beta2 = self.betas
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:  # inactive (e.g. a layer beyond the support of q(l)): no update
                    continue
                state = self.state.setdefault(
                    p,
                    {
                        "step": torch.zeros(()),
                        "exp_avg": torch.zeros_like(p),
                        "exp_avg_sq": torch.zeros_like(p),
                    },
                )
                state["step"] += 1
                step = float(state["step"])
                state["exp_avg"].lerp_(p.grad, 1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                bias_correction1 = 1 - beta1**step
                bias_correction2_sqrt = (1 - beta2**step) ** 0.5
                denom = (state["exp_avg_sq"].sqrt() / bias_correction2_sqrt).add_(self.eps)
                p.addcdiv_(state["exp_avg"], denom, value=-group["lr"] / bias_correction1)

    def state_dict(self) -> dict:
        """Moments keyed by the parameter's position across groups (the order survives a resume)."""
        positions = {p: i for i, p in enumerate(self._parameters())}
        return {
            "state": {positions[p]: s for p, s in self.state.items()},
            "lrs": [g["lr"] for g in self.param_groups],
        }

    def load_state_dict(self, state_dict: dict) -> None:
        params = self._parameters()
        self.state = {
            params[i]: {k: v.to(params[i].device) for k, v in s.items()} for i, s in state_dict["state"].items()
        }
        for group, lr in zip(self.param_groups, state_dict["lrs"], strict=True):
            group["lr"] = lr
