"""The two warp kernels of one ContactSensor batch step (docs/models/contact_sensor.md#model): per-sample penalty
loads, then per-body buffers.

1. Sample kernel (:func:`..points.cell_kernel.cell_kernel` over the batch's surface samples,
   :class:`..points.body_samples.SampleCells`): every sample k whose deepest candidate body lies deeper than ε_d (query cutoff −ε_d) gets its penalty force
   fn_k + ft_k (module docstring of :mod:`.sensor`), accumulated into
   ``acc_net`` [E, S, 3] vec3 (Σ fn, Σ ft, Σ (x_k − o_s) × f_k; W) and, for every filter f of its sensor body whose
   body set holds B(k), ``acc_filter`` [E, S, F, 3] vec3 (Σ fn, Σ ft, Σ a_k x_k) and ``acc_area`` [E, S, F] (Σ a_k).
   Samples out of contact add nothing (their loads and areas are zero), so the broad phase skips them whole.
2. Body kernel over (E, S): net buffers in W and in the body frame (R_sᵀ v), force matrices, mean contact points
   (NaN without contact), Isaac Lab timers, pose, the history slot and the count of evaluations since the reset;
   it clears the accumulators for the next step.
"""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from ...geometry.struct_launch import warp_struct
from ...geometry.warp_kernels import unique_kernel
from ..points.probe_set import WP_TYPES, probe_struct
from ..points.cell_kernel import cell_kernel


@wp.func
def _sample_load(call: Any, tables: Any, e: int, i: int, x: Any, sd: Any, shape: int, normal: Any, link: int,
                 link_rot: Any, link_pos: Any):
    """Penalty load of sample i (env e) inside shape ``shape`` at signed distance sd < −ε_d."""
    zero = type(sd)(0.0)
    o = call.sample_owner[i]
    n = normal
    if n[0] == zero and n[1] == zero and n[2] == zero:  # vanished grid gradient: minus the sample's outward normal
        n = -(link_rot @ call.local_normal[i])
    b = tables.shape_body[shape]
    v_body = call.lin_vel[e, b] + wp.cross(call.ang_vel[e, b], x - call.body_pos[e, b])
    v = v_body - (call.lin_vel[e, link] + wp.cross(call.ang_vel[e, link], x - link_pos))
    d_dot = wp.dot(n, v)
    v_t = v - d_dot * n
    depth = -sd
    s = depth
    exponent = call.exponent[o]
    if exponent != type(sd)(1.0):
        s = wp.pow(depth, exponent)
    area = call.area[i]
    pressure = wp.max(s * (call.k_c[o] + call.c_c[o] * d_dot), zero)
    fn = (pressure * area) * n
    slip = wp.max(wp.length(v_t), call.v_s[o])
    ft = (call.mu[o] * wp.length(fn) / slip) * v_t
    wp.atomic_add(call.acc_net, e, o, 0, fn)
    wp.atomic_add(call.acc_net, e, o, 1, ft)
    wp.atomic_add(call.acc_net, e, o, 2, wp.cross(x - link_pos, fn + ft))
    for f in range(call.filter_mask.shape[1]):
        if call.filter_mask[o, f, b]:
            wp.atomic_add(call.acc_filter, e, o, f, 0, fn)
            wp.atomic_add(call.acc_filter, e, o, f, 1, ft)
            wp.atomic_add(call.acc_filter, e, o, f, 2, area * x)
            wp.atomic_add(call.acc_area, e, o, f, area)


def _sample_kernel(dtype: torch.dtype):
    f, v, _ = WP_TYPES[dtype]
    arr = wp.array(dtype=f)
    call_type = probe_struct(f"ContactSampleCall_{f.__name__}", dtype, {
        "sample_owner": wp.array(dtype=wp.int32), "local_normal": wp.array(dtype=v), "area": arr,
        "k_c": arr, "c_c": arr, "mu": arr, "v_s": arr, "exponent": arr, "filter_mask": wp.array3d(dtype=wp.bool),
        "lin_vel": wp.array2d(dtype=v), "ang_vel": wp.array2d(dtype=v),
        "acc_net": wp.array3d(dtype=v), "acc_filter": wp.array4d(dtype=v), "acc_area": wp.array3d(dtype=f)})
    return cell_kernel(f"contact_sensor_samples_{f.__name__}", call_type, dtype, _sample_load), call_type


def _body_kernel(dtype: torch.dtype):
    f, v, m = WP_TYPES[dtype]
    fields = {"body_index": wp.array(dtype=wp.int32), "threshold": wp.array(dtype=f),
              "body_rot": wp.array2d(dtype=m), "body_pos": wp.array2d(dtype=v),
              "acc_net": wp.array3d(dtype=v), "acc_filter": wp.array4d(dtype=v), "acc_area": wp.array3d(dtype=f),
              "net": wp.array3d(dtype=v), "net_b": wp.array3d(dtype=v), "matrix": wp.array4d(dtype=v),
              "matrix_b": wp.array4d(dtype=v), "contact_pos": wp.array3d(dtype=v), "contact_pos_b": wp.array3d(dtype=v),
              "timers": wp.array3d(dtype=f), "pose_rot": wp.array2d(dtype=m), "pose_pos": wp.array2d(dtype=v),
              "history": wp.array3d(dtype=v), "n_since": wp.array(dtype=wp.int64)}
    call_type = warp_struct(f"ContactBodyCall_{f.__name__}", fields, __name__)

    def kernel(call, dt, slot):
        e, s = wp.tid()
        zero = dt - dt
        b = call.body_index[s]
        rot = call.body_rot[e, b]
        origin = call.body_pos[e, b]
        rot_t = wp.transpose(rot)
        normal = call.acc_net[e, s, 0]
        friction = call.acc_net[e, s, 1]
        total = normal + friction
        vz = type(normal)(zero, zero, zero)
        call.net[e, s, 0] = normal
        call.net[e, s, 1] = friction
        call.net[e, s, 2] = total
        call.net[e, s, 3] = call.acc_net[e, s, 2]
        for k in range(4):
            call.net_b[e, s, k] = rot_t @ call.net[e, s, k]
        for k in range(3):
            call.acc_net[e, s, k] = vz
        for j in range(call.acc_filter.shape[2]):
            m_n = call.acc_filter[e, s, j, 0]
            m_f = call.acc_filter[e, s, j, 1]
            call.matrix[e, s, j, 0] = m_n
            call.matrix[e, s, j, 1] = m_f
            call.matrix[e, s, j, 2] = m_n + m_f
            for k in range(3):
                call.matrix_b[e, s, j, k] = rot_t @ call.matrix[e, s, j, k]
            area = call.acc_area[e, s, j]
            nan = type(normal)(wp.nan, wp.nan, wp.nan)
            pos = nan
            if area > zero:
                pos = call.acc_filter[e, s, j, 2] / area
            call.contact_pos[e, s, j] = pos
            call.contact_pos_b[e, s, j] = rot_t @ (pos - origin)
            for k in range(3):
                call.acc_filter[e, s, j, k] = vz
            call.acc_area[e, s, j] = zero
        # timers: current air, current contact, last air, last contact (Isaac Lab order of updates)
        on = wp.length(total) > call.threshold[s]
        air = call.timers[e, s, 0]
        touch = call.timers[e, s, 1]
        if on and air > zero:
            call.timers[e, s, 2] = air + dt
        if (not on) and touch > zero:
            call.timers[e, s, 3] = touch + dt
        if on:
            call.timers[e, s, 0] = zero
            call.timers[e, s, 1] = touch + dt
        else:
            call.timers[e, s, 0] = air + dt
            call.timers[e, s, 1] = zero
        call.pose_rot[e, s] = rot
        call.pose_pos[e, s] = origin
        if slot >= 0:
            for k in range(3):
                call.history[e, slot, s * 6 + k] = call.net[e, s, k]
                call.history[e, slot, s * 6 + 3 + k] = call.net_b[e, s, k]
        if s == 0:
            call.n_since[e] = call.n_since[e] + wp.int64(1)

    kernel.__name__ = f"contact_sensor_bodies_{f.__name__}"
    kernel.__annotations__ = {"call": call_type, "dt": f, "slot": int}
    return unique_kernel(kernel), call_type


SAMPLE_KERNELS = {dt: _sample_kernel(dt) for dt in WP_TYPES}
"""(kernel, call struct type) of the sample kernel per working dtype."""
BODY_KERNELS = {dt: _body_kernel(dt) for dt in WP_TYPES}
"""(kernel, call struct type) of the body kernel per working dtype."""
