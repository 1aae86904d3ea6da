"""KinematicTaxel (docs/models/kinematic_taxel.md#model): per-taxel spring–damper force and torque from overlap and
relative motion.

Per active probe (ground truth: R, g = 1; measured: R̃, g):
    d = max(0, R − sd*); no contact when d ≤ ε_d;  s = (g·d)^e
    v = v_O(x) − v_L(x);  v_n = n·v;  v_t = v − v_n n                   (n: object normal, W)
    f_n = max(0, k_n s + c_n s v_n);  F_W = f_n n + k_t v_t;  ω_n = n·(ω_O − ω_L)
    F = R_Lᵀ F_W;  T = p × F + k_tw ω_n R_Lᵀ n                           (link frame, N and N·m about o_L)
Zero-length normal fallback: n = −R_L a_i. Output ``(force, torque)``, each ``[E, (H,) *layout, 3]``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
import warp as wp

from ..constants import EPS_D
from ..world.state import WorldState
from .points.probe_sensor import FusedProbeBatch, per_probe
from .points.cell_kernel import cell_kernel
from .points.probe_set import WP_TYPES, probe_struct
from .warp_launch import contiguous_pair


class ForceTorque(NamedTuple):
    """Per-probe force (N) and torque (N·m about the link origin), link frame, ``[..., 3]`` each."""

    force: torch.Tensor
    torque: torch.Tensor


@wp.func
def _wrench(s: Any, i: int, call: Any, v_n: Any, w_n: Any, n_link: Any, shear_link: Any):
    """[F, T] in the link frame of probe i for the (gained, exponentiated) overlap s: F = f_n R_Lᵀn + R_Lᵀ k_t v_t
    (``shear_link``), T = p × F + k_tw ω_n R_Lᵀn."""
    zero = s - s
    f_n = wp.max(s * (call.k_n[i] + call.c_n[i] * v_n), zero)
    force = f_n * n_link + shear_link
    torque = wp.cross(call.local_pos[i], force) + (call.k_tw[i] * w_n) * n_link
    return type(call.measured[0, 0])(force[0], force[1], force[2], torque[0], torque[1], torque[2])


@wp.func
def _taxel(call: Any, tables: Any, e: int, i: int, x: Any, sd: Any, shape: int, normal: Any, link: int,
           link_rot: Any, link_pos: Any):
    """Both branches' force and torque of probe i (env e) whose nearest shape is at signed distance sd."""
    zero = type(sd)(0.0)
    eps = type(sd)(EPS_D)
    depth_gt = wp.max(call.radius[i] - sd, zero)
    depth_measured = wp.max(call.radius_measured[e, i] - sd, zero)
    if depth_gt > eps or depth_measured > eps:
        n = normal
        if n[0] == zero and n[1] == zero and n[2] == zero:
            n = -(link_rot @ call.local_normal[i])  # the gradient vanished: −R_L a_i
        b = tables.shape_body[shape]
        w_obj = call.ang_vel[e, b]
        w_link = call.ang_vel[e, link]
        v = (call.lin_vel[e, b] + wp.cross(w_obj, x - call.body_pos[e, b])) - (
            call.lin_vel[e, link] + wp.cross(w_link, x - link_pos))
        v_n = wp.dot(n, v)
        w_n = wp.dot(n, w_obj - w_link)
        rot_t = wp.transpose(link_rot)
        n_link = rot_t @ n
        shear_link = rot_t @ (call.k_t[i] * (v - v_n * n))
        p = call.exponent[i]
        if depth_gt > eps:
            s = depth_gt
            if p != type(sd)(1.0):
                s = wp.pow(s, p)
            call.ground_truth[e, i] = _wrench(s, i, call, v_n, w_n, n_link, shear_link)
        if depth_measured > eps:
            s = depth_measured * call.gain[e, i]
            if p != type(sd)(1.0):
                s = wp.pow(s, p)
            call.measured[e, i] = _wrench(s, i, call, v_n, w_n, n_link, shear_link)


@wp.func
def _no_wrench(call: Any, e: int, first: int, stop: int):
    """Both branches' [F, T] of the probes in slots [first, stop) (env e) out of contact: 0."""
    zero = type(call.measured[0, 0])()
    for j in range(first, stop):
        i = call.probe_order[j]
        call.ground_truth[e, i] = zero
        call.measured[e, i] = zero


def _taxel_kernel(dtype: torch.dtype):
    f, v, _ = WP_TYPES[dtype]
    per_probe_f = wp.array(dtype=f)
    call_type = probe_struct(f"KinematicTaxelCall_{f.__name__}", dtype, {
        "radius": per_probe_f, "radius_measured": wp.array2d(dtype=f), "gain": wp.array2d(dtype=f),
        "local_normal": wp.array(dtype=v), "k_n": per_probe_f, "c_n": per_probe_f, "k_t": per_probe_f,
        "k_tw": per_probe_f, "exponent": per_probe_f, "lin_vel": wp.array2d(dtype=v), "ang_vel": wp.array2d(dtype=v),
        "ground_truth": wp.array2d(dtype=wp.types.vector(6, f)), "measured": wp.array2d(dtype=wp.types.vector(6, f))})
    return cell_kernel(f"kinematic_taxel_{f.__name__}", call_type, dtype, _taxel, _no_wrench), call_type


_TAXEL_KERNELS = {dt: _taxel_kernel(dt) for dt in WP_TYPES}


class KinematicTaxelBatch(FusedProbeBatch):
    """Spring–damper taxels. One fused kernel per evaluation writes both branches ([F, T], 6 channels) into the
    measured branch's staging buffers (zeros for probes out of contact)."""

    sensor_type = "KinematicTaxel"
    channels = 6
    kernels = _TAXEL_KERNELS

    def model_tables(self) -> dict:
        coef = {k: per_probe(self.options, self.counts, k, self.ctx)
                for k in ("normal_stiffness", "normal_damping", "normal_exponent", "shear_scalar", "twist_scalar")}
        return {"local_normal": self.probes.local_normal, "k_n": coef["normal_stiffness"],
                "c_n": coef["normal_damping"], "k_t": coef["shear_scalar"], "k_tw": coef["twist_scalar"],
                "exponent": coef["normal_exponent"]}

    def step_inputs(self, state: WorldState) -> dict:
        lin, ang = contiguous_pair(state.lin_vel, state.ang_vel)
        return {"lin_vel": lin, "ang_vel": ang}

    def output(self, value: torch.Tensor) -> ForceTorque:
        return ForceTorque(value[..., :3], value[..., 3:])
