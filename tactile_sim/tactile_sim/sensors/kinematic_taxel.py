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

from ..config.sensor_options import MEASURED_CHANNELS
from ..constants import EPS_D
from ..world.state import WorldState
from .points.probe_sensor import FusedProbeBatch, per_probe
from .points.cell_kernel import cell_kernel, contact_list_buffers, contact_list_fields, listed_model
from .points.probe_set import WP_TYPES, probe_struct
from .warp_launch import contiguous_pair


class ForceTorque(NamedTuple):
    """Per-probe force (N) and torque (N·m about the link origin), link frame, ``[..., 3]`` each."""

    force: torch.Tensor
    torque: torch.Tensor


def _listed_taxels(dtype: torch.dtype) -> str:
    """C++ body of the model over the listed contacts in slots [first, stop) of env e (one block of link ``link``,
    pose ``link_rot``, ``link_pos``; :func:`.points.cell_kernel.cell_kernel` with ``listed``): per contact probe i
    with nearest shape s at signed distance sd, normal n and world point x, both branches' [F, T] in the link frame
    (module docstring), written where the overlap exceeds ε_d. The arithmetic is warp's own (``wp::`` functions, one
    operation per call, in the order of the model), so the values are those of the same model in warp code. When
    the branch shares the ground truth's buffer (R̃ = R, g = 1: the same values), only the ground truth is computed.
    Arrays are read through their strides."""
    return f"""
    using V3 = wp::vec_t<3, T>;
    using V6 = wp::vec_t<6, T>;
    const T zero = T(0.0);
    const T one = T(1.0);
    const T eps = T({EPS_D!r});
    char* lin = row(call.lin_vel);
    char* ang = row(call.ang_vel);
    char* body_pos = row(call.body_pos);
    char* radius_measured = row(call.radius_measured);
    char* gain = row(call.gain);
    char* point = row(call.contact_point);
    char* shape = row(call.contact_shape);
    char* sd_of = row(call.contact_sd);
    char* normal_of = row(call.contact_normal);
    char* x_of = row(call.contact_x);
    char* truth = row(call.ground_truth);
    char* measured = row(call.measured);
    const bool two_branches = call.measured.data != call.ground_truth.data;
    const V3 w_link = in_row(ang, call.ang_vel, link);
    const V3 v_link = in_row(lin, call.lin_vel, link);
    const wp::mat_t<3, 3, T> rot_t = wp::transpose(link_rot);
    for (int m = first; m < stop; ++m) {{
        const int i = in_row(point, call.contact_point, m);
        const T sd = in_row(sd_of, call.contact_sd, m);
        const V3 x = in_row(x_of, call.contact_x, m);
        const T depth_gt = wp::max(wp::sub(at(call.radius, i), sd), zero);
        const T depth_measured = wp::max(wp::sub(in_row(radius_measured, call.radius_measured, i), sd), zero);
        if (!(depth_gt > eps || depth_measured > eps)) {{
            continue;
        }}
        V3 n = in_row(normal_of, call.contact_normal, m);
        if (n[0] == zero && n[1] == zero && n[2] == zero) {{
            n = wp::neg(wp::mul(link_rot, at(call.local_normal, i)));  // the gradient vanished: −R_L a_i
        }}
        const int b = at(tables.shape_body, in_row(shape, call.contact_shape, m));
        const V3 w_obj = in_row(ang, call.ang_vel, b);
        const V3 v_obj = wp::add(in_row(lin, call.lin_vel, b),
                                 wp::cross(w_obj, wp::sub(x, in_row(body_pos, call.body_pos, b))));
        const V3 v = wp::sub(v_obj, wp::add(v_link, wp::cross(w_link, wp::sub(x, link_pos))));
        const T v_n = wp::dot(n, v);
        const T w_n = wp::dot(n, wp::sub(w_obj, w_link));
        const V3 n_link = wp::mul(rot_t, n);
        const V3 shear_link = wp::mul(rot_t, wp::mul(at(call.k_t, i), wp::sub(v, wp::mul(v_n, n))));
        const T p = at(call.exponent, i);
        const T k_n = at(call.k_n, i);
        const T c_n = at(call.c_n, i);
        const V3 arm = at(call.local_pos, i);
        const V3 twist = wp::mul(wp::mul(at(call.k_tw, i), w_n), n_link);
        auto wrench = [&](T s) {{  // [F, T] of the (gained) overlap s
            if (p != one) {{
                s = wp::pow(s, p);
            }}
            const T f_n = wp::max(wp::mul(s, wp::add(k_n, wp::mul(c_n, v_n))), wp::sub(s, s));
            const V3 force = wp::add(wp::mul(f_n, n_link), shear_link);
            const V3 torque = wp::add(wp::cross(arm, force), twist);
            return V6({{force[0], force[1], force[2], torque[0], torque[1], torque[2]}});
        }};
        if (depth_gt > eps) {{
            in_row(truth, call.ground_truth, i) = wrench(depth_gt);
        }}
        if (two_branches && depth_measured > eps) {{
            in_row(measured, call.measured, i) = wrench(wp::mul(depth_measured, in_row(gain, call.gain, i)));
        }}
    }}
"""


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
        "ground_truth": wp.array2d(dtype=wp.types.vector(6, f)), "measured": wp.array2d(dtype=wp.types.vector(6, f)),
        **contact_list_fields(dtype)})
    name = f"kinematic_taxel_{f.__name__}"

    listed = listed_model(name, call_type, dtype, _listed_taxels(dtype))
    return cell_kernel(name, call_type, dtype, listed, _no_wrench, listed=True), call_type


_TAXEL_KERNELS = {dt: _taxel_kernel(dt) for dt in WP_TYPES}


class KinematicTaxelBatch(FusedProbeBatch):
    """Spring–damper taxels. One fused kernel per evaluation writes both branches ([F, T], 6 channels) into the
    measured branch's staging buffers (zeros for probes out of contact)."""

    sensor_type = "KinematicTaxel"
    channels = MEASURED_CHANNELS[sensor_type]
    kernels = _TAXEL_KERNELS
    listed = clears_listed = True

    def model_tables(self) -> dict:
        coef = {k: per_probe(self.options, self.counts, k, self.ctx)
                for k in ("normal_stiffness", "normal_damping", "normal_exponent", "shear_scalar", "twist_scalar")}
        return {"local_normal": self.probes.local_normal, "k_n": coef["normal_stiffness"],
                "c_n": coef["normal_damping"], "k_t": coef["shear_scalar"], "k_tw": coef["twist_scalar"],
                "exponent": coef["normal_exponent"],
                **contact_list_buffers(self.ctx.n_envs, self.probes.n, self.ctx.device, self.ctx.dtype)}

    def step_inputs(self, state: WorldState) -> dict:
        lin, ang = contiguous_pair(state.lin_vel, state.ang_vel)
        return {"lin_vel": lin, "ang_vel": ang}

    def output(self, value: torch.Tensor) -> ForceTorque:
        return ForceTorque(value[..., :3], value[..., 3:])
