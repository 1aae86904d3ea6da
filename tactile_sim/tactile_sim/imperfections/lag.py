"""First-order sensing element (docs/models/temperature_grid.md#sensing-element), measured branch, transform stage 4.

T_m,k = T_m,k−1 + (1 − exp(−dt/τ_s))·(T_k − T_m,k−1): the exact discretisation of a first-order lag for an input
held over each step. τ_s = 0 gives T_m = T. After a reset T_m restarts at the current true value (no fake transient).
This module holds the lag's state and weight; the sensor advances them in its own kernel (TemperatureGrid: in its
readout kernel).
"""

from __future__ import annotations

import math

import torch


class FirstOrderLag:
    """Lag state T_m [E, *S] (``state``, on the initial value's device/dtype) and weight w = 1 − exp(−dt/τ_s)
    (``weight``: a float, or a tensor broadcastable to S).

    tau: time constant τ_s ≥ 0, s — a float or a tensor broadcastable to S (one per cell or per sensor of a batch);
    dt: evaluation period, s. Call :meth:`reset` (from the true value) before the first step.
    """

    def __init__(self, tau: float | torch.Tensor, dt: float, initial: torch.Tensor):
        if isinstance(tau, torch.Tensor):
            tau = tau.to(dtype=initial.dtype, device=initial.device)
            safe = torch.where(tau > 0, tau, torch.ones_like(tau))
            self.weight = torch.where(tau > 0, -torch.expm1(-dt / safe), torch.ones_like(tau))
        else:
            self.weight = -math.expm1(-dt / tau) if tau > 0 else 1.0
        self.state = initial.clone()

    def reset(self, true_value: torch.Tensor, env_mask: torch.Tensor | None = None) -> None:
        """T_m ← true value [E, *S] for the envs of env_mask ([E] bool; None = all)."""
        if env_mask is None:
            self.state.copy_(true_value)
        else:
            m = env_mask.view((-1,) + (1,) * (self.state.dim() - 1))
            self.state.copy_(torch.where(m, true_value, self.state))
