"""Warp kernels of the thermal system step (docs/models/temperature_grid.md#contact-area; the math is documented in
:mod:`.system`).

* Contact kernel (:func:`..points.cell_kernel.cell_kernel` over the grids' surface samples,
  :class:`..points.body_samples.SampleCells`, query cutoff = the sample's ``contact_band``): every sample that touches a body
  B adds its area a_k to the covered area of its cell and G_k = U_k a_k (0 for a body without material) to the
  fixed-partner conductance and heat G_k T_B of its cell (``acc`` [E, Nc, 3]: covered m², G W/K, Q W). With
  ``simulate_all_link_temperatures`` a lumped partner's G_k·dt (``dt`` [1] s) goes to ``g_cl`` [E, M, NL] (its
  surface cell, body), and a sample of an earlier grid touching a later grid writes its G_k·dt and the partner cell
  at its slot of the cell-major pair order (``g_cc``, ``cell_y`` [E, K]). Samples that touch nothing add nothing, so the broad phase skips them whole.
* Cell kernel over (E, G), one grid per thread: step A (the exact relaxation towards the fixed partners, convection
  and linearised radiation; it clears the accumulators it read) and/or, for small grids, step C + the clamp E: the
  backward-Euler DCT step as one dense operator per grid, M_g = Kᵀ diag(1/(1 + dt α Λ)) K with K the 3-axis
  orthonormal DCT-II (precomputed at build). Without pairs (step B) both run in one launch.
* Lumped contact kernel (the same skeleton over the lumped bodies' samples, cutoff = the band): covered area and
  fixed-partner exchange per lumped body (``acc`` [E, NL, 3]) and the area of each towards every other lumped body
  (``area_ll`` [E, NL, NL], consumed by the pair kernel of :mod:`.pairs`).
* Exchange kernel over (E, NL): step D of the lumped bodies (the same relaxation), then their clamp.
* Readout kernel over (E, P) of a TemperatureGrid batch: ground truth of its cells and the first-order sensing
  element, written into the measured branch's staging buffers.
"""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from ...constants import KELVIN_OFFSET, STEFAN_BOLTZMANN
from ...geometry.struct_launch import warp_struct
from ...geometry.warp_kernels import unique_kernel
from ..points.probe_set import WP_TYPES, probe_struct
from ..points.cell_kernel import cell_kernel

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
        "area": arr, "local_normal": wp.array(dtype=v), "sample_cell": i32, "sample_grid": i32,
        "sample_surf": i32, "pair_slot": i32, "r_self": arr, "l_fixed": arr, "inv_hc": arr,
        "body_mat": arr, "body_inv_k": arr, "body_base": arr, "body_vs": arr, "body_category": i32,
        "body_grid": i32, "body_lumped": i32, "grid_delta": wp.array(dtype=v), "grid_lo": wp.array(dtype=v),
        "grid_n": wp.array(dtype=wp.vec3i), "pad": wp.array(dtype=wp.int32), "dt": arr,
        "acc": wp.array3d(dtype=f), "g_cl": wp.array3d(dtype=f), "cell_y": wp.array2d(dtype=wp.int32),
        "g_cc": wp.array2d(dtype=f)})
    return cell_kernel(f"thermal_contact_{f.__name__}", call_type, dtype, _sample_contact), call_type


@wp.func
def _lumped_contact(call: Any, tables: Any, e: int, i: int, x: Any, sd: Any, shape: int, normal: Any, link: int,
                    link_rot: Any, link_pos: Any):
    """Sample i of lumped body o (env e) within the band of shape ``shape``: covered area; fixed-partner conductance
    U a and heat U a T_B for a fixed body with material, U = 1/(ℓ_o/k_o + ℓ_o/k_B + 1/h_c); area towards a lumped
    partner."""
    b = tables.shape_body[shape]
    o = call.sample_owner[i]
    a = call.area[i]
    category = call.body_category[b]
    wp.atomic_add(call.acc, e, o, 0, a)
    if category == _FIXED and call.body_mat[b] > type(sd)(0.0):
        g = a / (call.lumped_vs_k[o] + call.lumped_vs[o] * call.body_inv_k[b] + call.inv_hc[0])
        wp.atomic_add(call.acc, e, o, 1, g)
        wp.atomic_add(call.acc, e, o, 2, g * call.body_base[b])
    if category == _LUMPED:
        wp.atomic_add(call.area_ll, e, o, call.body_lumped[b], a)


def _lumped_kernel(dtype: torch.dtype):
    f = WP_TYPES[dtype][0]
    arr, i32 = wp.array(dtype=f), wp.array(dtype=wp.int32)
    call_type = probe_struct(f"ThermalLumpedCall_{f.__name__}", dtype, {
        "sample_owner": i32, "area": arr,
        "body_category": i32, "body_mat": arr, "body_inv_k": arr, "body_base": arr, "body_lumped": i32,
        "lumped_vs": arr, "lumped_vs_k": arr, "inv_hc": arr, "acc": wp.array3d(dtype=f),
        "area_ll": wp.array3d(dtype=f)})
    return cell_kernel(f"thermal_lumped_{f.__name__}", call_type, dtype, _lumped_contact), call_type


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
    call_type = warp_struct(f"ThermalExchangeCall_{f.__name__}", fields, __name__)

    def kernel(call, h, ambient, dt):
        """Body c of env e with acc[e, c] = (covered area, G_fixed, Q_fixed), cleared after use: exchange, then
        clamp to [low, high]."""
        e, c = wp.tid()
        t = exchange(call.t[e, c], call.ic[c], call.eps[c], call.area[c] - call.acc[e, c, 0], call.acc[e, c, 1],
                     call.acc[e, c, 2], call.power[c], h, ambient, dt)
        call.t[e, c] = wp.min(wp.max(t, call.low[c]), call.high[c])
        for k in range(3):
            call.acc[e, c, k] = h - h

    kernel.__name__ = f"thermal_exchange_{f.__name__}"
    kernel.__annotations__ = {"call": call_type, "h": f, "ambient": f, "dt": f}
    return unique_kernel(kernel), call_type


def _cell_kernel(dtype: torch.dtype):
    f = WP_TYPES[dtype][0]
    arr = wp.array(dtype=f)
    fields = {"t": wp.array2d(dtype=f), "ic": arr, "eps": arr, "area": arr, "power": arr, "low": arr, "high": arr,
              "acc": wp.array3d(dtype=f), "scratch": wp.array2d(dtype=f), "dense": wp.array3d(dtype=f)}
    call_type = warp_struct(f"ThermalCellCall_{f.__name__}", fields, __name__)

    def kernel(call, h, ambient, dt, n, exchange_step, conduct):
        """Grid g of env e over its n padded cells [g·n, (g+1)·n): step A when ``exchange_step`` != 0 (acc cleared
        after use), then C + E when ``conduct`` != 0: T ← clamp(M_g T) with the dense operator [G, n, n]."""
        e, g = wp.tid()
        first = g * n
        zero = h - h
        if exchange_step != 0:
            for c in range(first, first + n):
                call.t[e, c] = exchange(call.t[e, c], call.ic[c], call.eps[c], call.area[c] - call.acc[e, c, 0],
                                        call.acc[e, c, 1], call.acc[e, c, 2], call.power[c], h, ambient, dt)
                for k in range(3):
                    call.acc[e, c, k] = zero
        if conduct != 0:
            for c in range(first, first + n):
                call.scratch[e, c] = call.t[e, c]
            for r in range(n):
                s = zero
                for c in range(n):
                    s += call.dense[g, r, c] * call.scratch[e, first + c]
                call.t[e, first + r] = wp.min(wp.max(s, call.low[first + r]), call.high[first + r])

    kernel.__name__ = f"thermal_cells_{f.__name__}"
    kernel.__annotations__ = {"call": call_type, "h": f, "ambient": f, "dt": f, "n": int, "exchange_step": int,
                              "conduct": int}
    return unique_kernel(kernel), call_type


def _readout_kernel(dtype: torch.dtype):
    f = WP_TYPES[dtype][0]
    arr = wp.array(dtype=f)
    fields = {"t": wp.array2d(dtype=f), "cell": wp.array(dtype=wp.int32), "weight": arr,
              "lag": wp.array2d(dtype=f), "ground_truth": wp.array3d(dtype=f), "measured": wp.array3d(dtype=f)}
    call_type = warp_struct(f"ThermalReadoutCall_{f.__name__}", fields, __name__)

    def kernel(call):
        """Output p of env e: T = t[e, cell[p]] (ground truth) and the sensing element
        (docs/models/temperature_grid.md#sensing-element)
        T_m ← T_m + w (T − T_m), w = 1 − exp(−dt/τ_s) (the lag state, also the raw measured value)."""
        e, p = wp.tid()
        truth = call.t[e, call.cell[p]]
        lagged = call.lag[e, p] + (truth - call.lag[e, p]) * call.weight[p]
        call.lag[e, p] = lagged
        call.ground_truth[e, p, 0] = truth
        call.measured[e, p, 0] = lagged

    kernel.__name__ = f"thermal_readout_{f.__name__}"
    kernel.__annotations__ = {"call": call_type}
    return unique_kernel(kernel), call_type


CONTACT_KERNELS = {dt: _contact_kernel(dt) for dt in WP_TYPES}
"""(kernel, call struct type) of the contact kernel per working dtype."""
LUMPED_KERNELS = {dt: _lumped_kernel(dt) for dt in WP_TYPES}
"""(kernel, call struct type) of the lumped bodies' contact kernel per working dtype."""
EXCHANGE_KERNELS = {dt: _exchange_kernel(dt) for dt in WP_TYPES}
"""(kernel, call struct type) of the element-wise exchange (lumped bodies, step D) per working dtype."""
CELL_KERNELS = {dt: _cell_kernel(dt) for dt in WP_TYPES}
"""(kernel, call struct type) of the per-grid cell kernel (steps A and C + E) per working dtype."""
READOUT_KERNELS = {dt: _readout_kernel(dt) for dt in WP_TYPES}
"""(kernel, call struct type) of the TemperatureGrid readout (ground truth and sensing lag) per working dtype."""
