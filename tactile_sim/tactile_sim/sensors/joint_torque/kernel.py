"""The fused per-step kernel of JointTorque (docs/models/joint_torque.md#joint-torque): estimator, contact loads,
inverse dynamics, motor terms, output.

One warp thread per (env e, sensor lane s), row r = e·S + s of the lane state:

1. docs/models/joint_torque.md#velocity estimator (only when the joint sample is accepted): q̇ from the message (lanes
with
   ``velocity_source="auto"`` when the sample carries measured velocities) or the wrapped finite difference, the
   first-order filtered q̈ (β = 1 − exp(−2π f_c Δt)), warm-up flags; the lane state is updated in place.
2. The q̇, q̈ the inverse dynamics uses (caller-given q̈ / q̇ replace the estimates) and the validity of the reading.
3. External wrenches of the lane's contact sources, read straight from the source batches' latest ground truth
   through the per-step source table (data pointers and element strides, see :data:`SOURCE_COLUMNS`): a
   KinematicTaxel row is the sum of one sensor's probe wrenches (link frame, rotated into W by the link's pose), a
   ContactSensor row one body's world wrench; each is added onto its link.
4. :func:`~..world.dynamics.rnea_row`, then τ + armature·q̈ + motor·(damping·q̇ + friction·tanh(q̇/v_f)).
5. The selected joints of the lane into the staging buffers of the measured branch: raw τ (measured, before the
   hardware stages), τ or 0 where invalid (ground truth) and the lane validity [E, S] (the branch's commit zeroes
   the measured values of invalid lanes, see ``MeasuredBranch.push_staged``).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import warp as wp

from ...geometry.struct_launch import warp_struct
from ...geometry.warp_kernels import typed_kernel
from ...world.dynamics import WP_TYPES, rnea_row, rnea_types

_PI = wp.constant(math.pi)
_TWO_PI = wp.constant(2.0 * math.pi)

SOURCE_COLUMNS = ("force_ptr", "torque_ptr", "stride_env", "stride_row", "stride_channel", "extent")
"""Columns of the source table [K, 6] int64, one row per source batch k: the data pointers of its force and torque
values (a taxel batch: its [E, P, 6] ground truth, force at channel 0 and torque at channel 3 from the same pointer),
the element strides of env, row (probe or body) and channel, and the number of elements the pointers span."""

ACC_ESTIMATED, ACC_GIVEN_WITH_VELOCITY, ACC_GIVEN = 0, 1, 2
"""``acc_mode`` of a launch: q̈ (and q̇) from the estimator; q̈ and measured q̇ given by the caller; q̈ given, q̇
estimated."""


def _struct_types(dtype: torch.dtype):
    """(per-step call struct, batch struct: lane state, workspace and tables) of one dtype."""
    f, v, m, v6 = WP_TYPES[dtype]
    i32, fa, fa2 = wp.array(dtype=wp.int32), wp.array(dtype=f), wp.array2d(dtype=f)
    b2 = wp.array2d(dtype=wp.bool)
    suffix = f.__name__
    call = warp_struct(f"JointTorqueCall_{suffix}", {
        "joint_pos": fa2, "joint_vel": fa2, "joint_acc": fa2, "body_rot": wp.array2d(dtype=m),
        "sources": wp.array2d(dtype=wp.int64), "measured": wp.array3d(dtype=f), "ground_truth": wp.array3d(dtype=f)},
        __name__)
    batch = warp_struct(f"JointTorqueBatch_{suffix}", {
        # lane state [E·S, n] / [E, S] and outputs
        "q_prev": fa2, "qd": fa2, "qdd": fa2, "qd_known": b2, "qdd_known": b2, "has_sample": b2,
        "valid": b2,
        # workspace [E·S, n] / [E·S, L]
        "qd_use": fa2, "qdd_use": fa2, "tau": fa2, "fext": wp.array2d(dtype=v6),
        # per lane [S] / [S, n], per joint [n]
        "use_messages": i32, "cutoff": fa, "v_f": fa, "motor": fa, "armature": fa2, "damping": fa, "friction": fa,
        "continuous": i32,
        # outputs p of lane s: out_start[s] ≤ p < out_start[s + 1], joint out_joint[p]
        "out_start": i32, "out_joint": i32,
        # contact pairs k of lane s: pair_start[s] ≤ k < pair_start[s + 1], source row pair_row[k] onto link
        # pair_link[k]. Source row: rows row_start ≤ i < row_stop (summed) of source batch row_source;
        # row_link ≥ 0: a link-frame row (taxel), rotated by that link's pose
        "pair_start": i32, "pair_link": i32, "pair_row": i32, "row_source": i32, "row_start": i32, "row_stop": i32,
        "row_link": i32,
        "root": int, "gravity": v}, __name__)
    return call, batch


@wp.func
def _expm1(x: Any):
    """eˣ − 1 without cancellation near 0 (Kahan's form, a few ulps)."""
    one = type(x)(1.0)
    u = wp.exp(x)
    if u == one:
        return x
    um1 = u - one
    if um1 == -one:
        return -one
    return um1 * x / wp.log(u)


@wp.func
def _estimate(call: Any, b: Any, e: int, s: int, r: int, vel_mode: int, dt: Any, neg_two_pi_dt: Any):
    """docs/models/joint_torque.md#velocity update of lane row r from the accepted joint sample (see the module
    docstring)."""
    zero = dt - dt
    have_prev = b.has_sample[e, s]
    use_msg = vel_mode != 0 and b.use_messages[s] != 0
    qd_known = have_prev or use_msg
    raw_ok = qd_known and b.qd_known[e, s]
    qdd_known = b.qdd_known[e, s]
    beta = -_expm1(b.cutoff[s] * neg_two_pi_dt)
    two_pi = type(dt)(_TWO_PI)
    for j in range(b.qd.shape[1]):
        q = call.joint_pos[e, j]
        d = q - b.q_prev[r, j]
        if b.continuous[j] != 0:
            d = d - two_pi * wp.ceil((d - type(dt)(_PI)) / two_pi)
        v = d / dt
        if use_msg:
            v = call.joint_vel[e, j]
        if raw_ok:
            raw = (v - b.qd[r, j]) / dt
            if qdd_known:
                b.qdd[r, j] = b.qdd[r, j] + beta * (raw - b.qdd[r, j])
            else:
                b.qdd[r, j] = raw
        if qd_known:
            b.qd[r, j] = v
        else:
            b.qd[r, j] = zero
        b.q_prev[r, j] = q
    b.qdd_known[e, s] = qdd_known or raw_ok
    b.qd_known[e, s] = qd_known
    b.has_sample[e, s] = True


@wp.func
def _source_row(call: Any, b: Any, e: int, row: int, zero: Any):
    """Wrench (force; torque about the link origin; W) of source row ``row`` in env e (see :data:`SOURCE_COLUMNS`)."""
    k = b.row_source[row]
    extent = int(call.sources[k, 5])
    forces = wp.array(ptr=wp.uint64(call.sources[k, 0]), shape=(extent,), dtype=type(zero))
    torques = wp.array(ptr=wp.uint64(call.sources[k, 1]), shape=(extent,), dtype=type(zero))
    s_env = int(call.sources[k, 2])
    s_row = int(call.sources[k, 3])
    s_ch = int(call.sources[k, 4])
    frame = b.row_link[row]
    t0 = 0
    if frame >= 0:
        t0 = 3 * s_ch  # the torque follows the force in a taxel's 6 channels
    f = type(b.gravity)()
    t = type(b.gravity)()
    for i in range(b.row_start[row], b.row_stop[row]):
        o = e * s_env + i * s_row
        f = f + type(b.gravity)(forces[o], forces[o + s_ch], forces[o + 2 * s_ch])
        t = t + type(b.gravity)(torques[o + t0], torques[o + t0 + s_ch], torques[o + t0 + 2 * s_ch])
    if frame >= 0:
        rot = call.body_rot[e, frame]
        f = rot @ f
        t = rot @ t
    return type(b.fext[0, 0])(f[0], f[1], f[2], t[0], t[1], t[2])


def _joint_torque_kernel(call: Any, b: Any, rnea_tables: Any, work: Any, accept: int, vel_mode: int, acc_mode: int,
                         dt: Any, neg_two_pi_dt: Any):
    e, s = wp.tid()
    r = e * b.valid.shape[1] + s
    zero = dt - dt
    if accept != 0:
        _estimate(call, b, e, s, r, vel_mode, dt, neg_two_pi_dt)
    qdd_known = b.qdd_known[e, s]
    valid = qdd_known and b.qd_known[e, s]
    if acc_mode == ACC_GIVEN_WITH_VELOCITY:
        valid = True
    elif acc_mode == ACC_GIVEN:
        valid = b.qd_known[e, s]
    for j in range(b.qd.shape[1]):
        v = b.qd[r, j]
        a = zero
        if qdd_known:
            a = b.qdd[r, j]
        if acc_mode != ACC_ESTIMATED:
            a = call.joint_acc[e, j]
            if acc_mode == ACC_GIVEN_WITH_VELOCITY:
                v = call.joint_vel[e, j]
        b.qd_use[r, j] = v
        b.qdd_use[r, j] = a
    # external wrenches of the lane's sources (force; torque about the link origin; W)
    for link in range(b.fext.shape[1]):
        b.fext[r, link] = type(b.fext[r, link])()
    for k in range(b.pair_start[s], b.pair_start[s + 1]):
        link = b.pair_link[k]
        b.fext[r, link] = b.fext[r, link] + _source_row(call, b, e, b.pair_row[k], zero)
    rnea_row(rnea_tables, work, r, call.joint_pos, e, b.qd_use, b.qdd_use, r, call.body_rot[e, b.root], b.gravity,
             b.fext, r, b.tau, r)
    for p in range(b.out_start[s], b.out_start[s + 1]):
        j = b.out_joint[p]
        tau = b.tau[r, j]
        if b.motor[s] != zero:  # without motor terms the armature is 0 too: τ is link-side only
            v = b.qd_use[r, j]
            tau = tau + b.armature[s, j] * b.qdd_use[r, j] + b.motor[s] * (
                b.damping[j] * v + b.friction[j] * wp.tanh(v / b.v_f[s]))
        call.measured[e, p, 0] = tau
        gt = zero
        if valid:
            gt = tau
        call.ground_truth[e, p, 0] = gt
    b.valid[e, s] = valid


_STRUCTS = {dt: _struct_types(dt) for dt in WP_TYPES}
JOINT_TORQUE_KERNELS = {dt: typed_kernel(_joint_torque_kernel, "joint_torque", dt, {
    "call": _STRUCTS[dt][0], "b": _STRUCTS[dt][1], "rnea_tables": rnea_types(dt)[0], "work": rnea_types(dt)[1],
    "dt": WP_TYPES[dt][0], "neg_two_pi_dt": WP_TYPES[dt][0]}) for dt in WP_TYPES}
"""The joint-torque kernel by working dtype (parameters: see :func:`joint_torque_kernel`)."""


def joint_torque_kernel(dtype: torch.dtype) -> tuple:
    """(kernel, call struct type, batch struct type) for a working dtype. Kernel parameters: (call, batch, RNEA
    tables, RNEA workspace, accept, vel_mode, acc_mode, dt, −2π·dt); launch over (E, S)."""
    return JOINT_TORQUE_KERNELS[dtype], _STRUCTS[dtype][0], _STRUCTS[dtype][1]
