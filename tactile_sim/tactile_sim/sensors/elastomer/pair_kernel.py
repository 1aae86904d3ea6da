"""The ElastomerTaxel kernel pair (K_in, G) of docs/models/elastomer_taxel.md#kernels as one warp function,
:func:`dilation_pair`, evaluated by every dilation path (tables at build, per step, cached source rows), and the
tables of the layer profile κ₁ it reads."""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from .layer_profile import FAR_FIELD, layer_profile


@wp.func
def layer_profile_at(rho: Any, coefficients: wp.array2d(dtype=Any), table: wp.array(dtype=Any)):
    """κ₁(ρ): cubic pieces on [0, ρ_max] (table = spacing, ρ_max, 3/(4π)), far field 3/(4πρ) beyond."""
    if rho >= table[1]:
        return table[2] / rho
    k = wp.min(int(rho / table[0]), coefficients.shape[0] - 1)
    s = rho - type(rho)(k) * table[0]
    return coefficients[k, 3] + s * (coefficients[k, 2] + s * (coefficients[k, 1] + s * coefficients[k, 0]))


@wp.func
def dilation_pair(d: Any, a: Any, params: wp.array2d(dtype=Any), s: int, coefficients: wp.array2d(dtype=Any),
                  table: wp.array(dtype=Any)):
    """(K_in(P d), G(‖P d‖)) for the raw offset d = p_i − p_j, target normal a and the parameters of sensor s
    (without dilate_scale)."""
    lam = params[s, 0]
    c = params[s, 1]
    zero = c - c
    one = zero + type(c)(1.0)
    delta = d - wp.dot(a, d) * a
    r2 = wp.dot(delta, delta)
    g = wp.exp(-lam * r2)
    k = (c * g) * delta
    if c < one:
        peak = params[s, 2]
        eps0 = params[s, 3]
        h = params[s, 4]
        if h > zero:
            r = wp.sqrt(r2)
            if r > zero:
                k = k + ((one - c) * peak * params[s, 5] * layer_profile_at(r / h, coefficients, table) / r) * delta
        else:
            k = k + ((one - c) * peak * (eps0 + eps0) / (r2 + eps0 * eps0)) * delta
    return k, g


def profile_arrays(device, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(cubic coefficients [NODES, 4], (spacing, ρ_max, 3/(4π))) of κ₁ as tensors."""
    prof = layer_profile()
    return (torch.tensor(prof.coefficients, device=device, dtype=dtype),
            torch.tensor([prof.spacing, prof.rho_max, FAR_FIELD], device=device, dtype=dtype))
