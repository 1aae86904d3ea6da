"""Warp kernels of the thermal system step (spec §10.2–10.3; the math is documented in :mod:`.thermal_system`).

* Contact kernel (:func:`.sample_kernel.sample_kernel` over the grids' surface samples, :class:`.body_samples.SampleCells`,
  query cutoff = the sample's ``contact_band``): every sample that touches a body B adds its area a_k to the covered
  area of its cell and G_k = U_k a_k (0 for a body without material) to the fixed-partner conductance and heat
  G_k T_B of its cell (``acc`` [E, Nc, 3]: covered m², G W/K, Q W). With ``simulate_all_link_temperatures`` a
  lumped partner's G_k·dt (``dt`` [1] s) goes to ``g_cl`` [E, M, NL] (its surface cell, body), and a sample of an earlier grid
  touching a later grid writes its G_k·dt and the partner cell at its slot of the cell-major pair order
  (``g_cc``, ``cell_y`` [E, K]). Samples that touch nothing add nothing, so the broad phase skips them whole.
* Exchange kernel (steps A and D) over (E, N): the exact relaxation towards the fixed partners, convection and
  linearised radiation; it clears the accumulators it read and optionally clamps (D is followed by the clamp).
* Conduction kernel (step C + the clamp E) over (E, G) for small grids: the backward-Euler DCT step as one dense
  operator per grid, M_g = Kᵀ diag(1/(1 + dt α Λ)) K with K the 3-axis orthonormal DCT-II (precomputed at build).
"""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from ..constants import KELVIN_OFFSET, STEFAN_BOLTZMANN
from .probe_set import WP_TYPES, probe_struct
from .sample_kernel import sample_kernel

FIXED, LUMPED, GRIDDED = 0, 1, 2
_LUMPED = wp.constant(LUMPED)
_GRIDDED = wp.constant(GRIDDED)
_FIXED = wp.constant(FIXED)


@wp.func
def _sample_contact(call: Any, tables: Any, e: int, i: int, x: Any, sd: Any, shape: int, normal: Any, link: int,
                    link_rot: Any, link_pos: Any):
    """Covered area and conductances of sample i (env e) touching shape ``shape`` (sd < contact_band)."""
    zero = type(sd)(0.0)
    b = tables.shape_body[shape]
    a = call.area[i]
    weight = a * call.body_mat[b]
    inv_k = call.body_inv_k[b]
    c = call.sample_cell[i]
    # without simulate_all_link_temperatures every body is FIXED: ℓ_B = ℓ_S and all of G is fixed-partner
    category = call.body_category[b]
    r_partner = call.l_fixed[i]
    if category == _LUMPED:
        r_partner = call.body_vs[b]
    partner_grid = call.body_grid[b]
    if category == _GRIDDED:  # ℓ_B = Δ⊥_B(ν)/2 with ν in the partner link's frame
        nu = wp.transpose(call.body_rot[e, b]) @ (link_rot @ call.local_normal[i])
        d = call.grid_delta[partner_grid]
        r_partner = (nu[0] * nu[0] * d[0] + nu[1] * nu[1] * d[1] + nu[2] * nu[2] * d[2]) / type(sd)(2.0)
    g = weight / (call.r_self[i] + r_partner * inv_k + call.inv_hc[i])
    g_fixed = zero
    if category == _FIXED:
        g_fixed = g
    dt = call.dt[0]
    if category == _LUMPED:
        wp.atomic_add(call.g_cl, e, call.sample_surf[i], call.body_lumped[b], g * dt)
    if category == _GRIDDED and weight > zero and partner_grid > call.sample_grid[i]:
        # the partner grid's cell holding the sample (clamped), as its flat padded index
        p = wp.transpose(call.body_rot[e, b]) @ (x - call.body_pos[e, b])
        q = wp.cw_div(p - call.grid_lo[partner_grid], call.grid_delta[partner_grid])
        n = call.grid_n[partner_grid]
        ix = wp.min(wp.max(int(wp.floor(q[0])), 0), n[0] - 1)
        iy = wp.min(wp.max(int(wp.floor(q[1])), 0), n[1] - 1)
        iz = wp.min(wp.max(int(wp.floor(q[2])), 0), n[2] - 1)
        pad = call.pad
        slot = call.pair_slot[i]
        call.cell_y[e, slot] = partner_grid * (pad[0] * pad[1] * pad[2]) + (ix * pad[1] + iy) * pad[2] + iz
        call.g_cc[e, slot] = g * dt
    wp.atomic_add(call.acc, e, c, 0, a)
    wp.atomic_add(call.acc, e, c, 1, g_fixed)
    wp.atomic_add(call.acc, e, c, 2, g_fixed * call.body_base[b])


def _contact_kernel(dtype: torch.dtype):
    f, v, _ = WP_TYPES[dtype]
    arr, i32 = wp.array(dtype=f), wp.array(dtype=wp.int32)
    call_type = probe_struct(f"ThermalContactCall_{f.__name__}", dtype, {
        "cell_cull": i32, "cell_mask": wp.array2d(dtype=wp.bool),
        "area": arr, "local_normal": wp.array(dtype=v), "sample_cell": i32, "sample_grid": i32,
        "sample_surf": i32, "pair_slot": i32, "r_self": arr, "l_fixed": arr, "inv_hc": arr,
        "body_mat": arr, "body_inv_k": arr, "body_base": arr, "body_vs": arr, "body_category": i32,
        "body_grid": i32, "body_lumped": i32, "grid_delta": wp.array(dtype=v), "grid_lo": wp.array(dtype=v),
        "grid_n": wp.array(dtype=wp.vec3i), "pad": wp.array(dtype=wp.int32), "dt": arr,
        "acc": wp.array3d(dtype=f), "g_cl": wp.array3d(dtype=f), "cell_y": wp.array2d(dtype=wp.int32),
        "g_cc": wp.array2d(dtype=f)})
    return sample_kernel(f"thermal_contact_{f.__name__}", call_type, dtype, _sample_contact), call_type


@wp.func
def exchange(t: Any, ic: Any, eps: Any, exposed: Any, g_fixed: Any, q_fixed: Any, power: Any, h: Any, ambient: Any,
             dt: Any):
    """Steps A / D for one cell or lumped body: T ← T_eq + (T − T_eq)·exp(−dt G/C), G = G_fixed + (h + h_rad)·A_exp,
    Q = Q_fixed + (h + h_rad) A_exp T_amb + P; T + dt Q/C where G = 0 (ic = 1/C)."""
    zero = t - t
    tk = t + type(t)(KELVIN_OFFSET)
    ta = ambient + type(t)(KELVIN_OFFSET)
    h_rad = eps * type(t)(STEFAN_BOLTZMANN) * (tk * tk + ta * ta) * (tk + ta)
    h_area = (h + h_rad) * wp.max(exposed, zero)
    g = g_fixed + h_area
    q = q_fixed + h_area * ambient + power
    if g > zero:
        t_eq = q / g
        return t_eq + (t - t_eq) * wp.exp(-dt * g * ic)
    return t + dt * q * ic


def _exchange_kernel(dtype: torch.dtype):
    f = WP_TYPES[dtype][0]
    arr = wp.array(dtype=f)
    fields = {"t": wp.array2d(dtype=f), "ic": arr, "eps": arr, "area": arr, "power": arr, "low": arr, "high": arr,
              "acc": wp.array3d(dtype=f)}
    call_type = wp.struct(type(f"ThermalExchangeCall_{f.__name__}", (), {
        "__annotations__": fields, "__module__": __name__, "__qualname__": f"ThermalExchangeCall_{f.__name__}"}))

    def kernel(call, h, ambient, dt, clamp):
        """acc[e, c] = (covered area, G_fixed, Q_fixed), cleared after use; ``clamp`` != 0 clamps to [low, high]."""
        e, c = wp.tid()
        zero = h - h
        t = exchange(call.t[e, c], call.ic[c], call.eps[c], call.area[c] - call.acc[e, c, 0], call.acc[e, c, 1],
                     call.acc[e, c, 2], call.power[c], h, ambient, dt)
        if clamp != 0:
            t = wp.min(wp.max(t, call.low[c]), call.high[c])
        call.t[e, c] = t
        for k in range(3):
            call.acc[e, c, k] = zero

    kernel.__name__ = f"thermal_exchange_{f.__name__}"
    kernel.__annotations__ = {"call": call_type, "h": f, "ambient": f, "dt": f, "clamp": int}
    return wp.kernel(kernel, enable_backward=False, module="unique"), call_type


def _conduction_kernel(dtype: torch.dtype):
    f = WP_TYPES[dtype][0]
    arr = wp.array(dtype=f)
    fields = {"t": wp.array2d(dtype=f), "scratch": wp.array2d(dtype=f), "dense": wp.array3d(dtype=f),
              "low": arr, "high": arr}
    call_type = wp.struct(type(f"ThermalConductionCall_{f.__name__}", (), {
        "__annotations__": fields, "__module__": __name__, "__qualname__": f"ThermalConductionCall_{f.__name__}"}))

    def kernel(call):
        """Grid g of env e: T ← clamp(M_g T) over its padded cells (dense operator [G, n, n])."""
        e, g = wp.tid()
        n = call.dense.shape[1]
        first = g * n
        for c in range(first, first + n):
            call.scratch[e, c] = call.t[e, c]
        for r in range(n):
            s = call.scratch[e, first] - call.scratch[e, first]
            for c in range(n):
                s += call.dense[g, r, c] * call.scratch[e, first + c]
            call.t[e, first + r] = wp.min(wp.max(s, call.low[first + r]), call.high[first + r])

    kernel.__name__ = f"thermal_conduction_{f.__name__}"
    kernel.__annotations__ = {"call": call_type}
    return wp.kernel(kernel, enable_backward=False, module="unique"), call_type


CONTACT_KERNELS = {dt: _contact_kernel(dt) for dt in WP_TYPES}
"""(kernel, call struct type) of the contact kernel per working dtype."""
EXCHANGE_KERNELS = {dt: _exchange_kernel(dt) for dt in WP_TYPES}
CONDUCTION_KERNELS = {dt: _conduction_kernel(dt) for dt in WP_TYPES}
