"""Warp kernels of the body motion: link poses and exact link twists of a robot tree, and the whole per-step world
update (joint sample, robot links, declared objects), one thread per env.

Link motion (frames and conventions of :mod:`.kinematics`). Links are visited parents first; the root takes the
given root pose and twist. A link c below parent p through a joint with origin (R_j, p_j) in the parent frame, unit
axis a in the joint (= child) frame and position x, velocity ẋ:

    R_c = R_p R_j M(x),  o_c = o_p + R_p p_j (+ R_p R_j a x for a prismatic joint),
    M(x) = I + sin x K + (1 − cos x) K² (K the cross-product matrix of a; rotational joints; I otherwise),
    ω_c = ω_p (+ z ẋ, rotational),  v_c = v_p + ω_p × (o_c − o_p) (+ z ẋ, prismatic),  z = R_c a (world axis),

which is the geometric Jacobian J(q) q̇ plus the transport of the root twist, evaluated recursively. Mimic joints
take x = multiplier · q[source] + offset, ẋ = multiplier · q̇[source] unless the inputs are already movable-joint
vectors.

World update (:class:`.motion.WorldModel`): a joint sample is stored (the previous one kept when its stamp
differs), the actuated joint velocities are the caller's or the backward difference of the two samples (continuous
joints wrapped to (−π, π]; zero where an env has fewer than two samples), then the robot links move from the root
pose and root twist, and every object is either carried by its link (pose link ∘ offset,
v = v_l + ω_l × (o − o_l), ω = ω_l) or takes its held pose and its sampled twist. The outputs of a step go to
their own slot of a buffer (the caller's state tensors are fresh every step).

Launched through :class:`..geometry.struct_launch.StructLaunch`; generic over float32 / float64.
"""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from ..geometry.struct_launch import warp_struct
from ..geometry.warp_kernels import init_warp, typed_kernel

_WP_TYPES = {torch.float32: (wp.float32, wp.vec3f, wp.mat33f), torch.float64: (wp.float64, wp.vec3d, wp.mat33d)}




def _struct_types(scalar, vec, mat):
    """(robot tables, world tables, kinematics call, world-update call) struct types for one float type."""
    arr, arr2, i32 = (lambda t: wp.array(dtype=t)), (lambda t: wp.array2d(dtype=t)), wp.array(dtype=wp.int32)
    suffix = scalar.__name__
    robot = warp_struct(f"RobotTables_{suffix}", {
        "root_index": int, "step_link": i32, "step_parent": i32, "step_joint": i32, "step_rot": arr(mat),
        "step_pos": arr(vec), "axis": arr(vec), "axis_cross": arr(mat), "axis_cross2": arr(mat), "rotational": i32,
        "mimic_source": i32, "mimic_multiplier": arr(scalar), "mimic_offset": arr(scalar)}, __name__)
    world = warp_struct(f"WorldTables_{suffix}", {
        "n_links": int, "n_bodies": int, "pi": scalar, "continuous": i32, "attach_link": i32, "offset_rot": arr(mat),
        "offset_pos": arr(vec), "out_bytes": wp.array(dtype=wp.uint64), "slot_bytes": wp.uint64}, __name__)
    outputs = {"rot": arr2(mat), "pos": arr2(vec), "lin": arr2(vec), "ang": arr2(vec)}
    kin_call = warp_struct(f"KinematicsCall_{suffix}", {
        "q": arr2(scalar), "qd": arr2(scalar), "root_rot": arr(mat), "root_pos": arr(vec), "root_lin": arr(vec),
        "root_ang": arr(vec), **outputs}, __name__)
    world_call = warp_struct(f"WorldCall_{suffix}", {
        "q_in": arr2(scalar), "qd_in": arr2(scalar), "q": arr2(scalar), "qd": arr2(scalar), "q_prev": arr2(scalar),
        "sample_ok": arr2(wp.int32), "root_rot": arr(mat), "root_pos": arr(vec), "object_rot": arr2(mat),
        "object_pos": arr2(vec), "sampled_lin": arr2(vec), "sampled_ang": arr2(vec), "out": arr(scalar),
        "env_sample": i32, "env_velocity_given": i32, "env_dt": arr(scalar)}, __name__)
    return robot, world, kin_call, world_call


@wp.func
def movable_position(q: wp.array2d(dtype=Any), e: int, m: int, movable_input: int, robot: Any):
    """Position of movable joint m in env e: q[e, m] for movable inputs, else from its actuated source (mimic)."""
    if movable_input != 0:
        return q[e, m]
    return q[e, robot.mimic_source[m]] * robot.mimic_multiplier[m] + robot.mimic_offset[m]


@wp.func
def movable_rate(qd: wp.array2d(dtype=Any), e: int, m: int, movable_input: int, robot: Any):
    """Velocity (or acceleration) of movable joint m in env e (mimic joints: multiplier only)."""
    if movable_input != 0:
        return qd[e, m]
    return qd[e, robot.mimic_source[m]] * robot.mimic_multiplier[m]


@wp.func
def link_motion(e: int, q: wp.array2d(dtype=Any), qd: wp.array2d(dtype=Any), movable_input: int, root_rot: Any,
                root_pos: Any, root_lin: Any, root_ang: Any, robot: Any, rot: wp.array2d(dtype=Any),
                pos: wp.array2d(dtype=Any), lin: wp.array2d(dtype=Any), ang: wp.array2d(dtype=Any)):
    """Poses and twists of every link of env e (module docstring) into rot / pos / lin / ang [e, link]."""
    if robot.root_index < 0:
        return
    r0 = robot.root_index
    rot[e, r0] = root_rot
    pos[e, r0] = root_pos
    lin[e, r0] = root_lin
    ang[e, r0] = root_ang
    one = type(root_pos[0])(1.0)
    zero = type(root_pos[0])(0.0)
    for s in range(robot.step_link.shape[0]):
        c = robot.step_link[s]
        p = robot.step_parent[s]
        m = robot.step_joint[s]
        rp = rot[e, p]
        op = pos[e, p]
        wpar = ang[e, p]
        r = rp @ robot.step_rot[s]
        o = rp @ robot.step_pos[s] + op
        w = wpar
        u = type(op)(zero, zero, zero)
        if m >= 0:
            x = movable_position(q, e, m, movable_input, robot)
            xd = movable_rate(qd, e, m, movable_input, robot)
            a = robot.axis[m]
            z = r @ a
            if robot.rotational[m] != 0:
                r = r + wp.sin(x) * (r @ robot.axis_cross[m]) + (one - wp.cos(x)) * (r @ robot.axis_cross2[m])
                w = w + z * xd
            else:
                o = o + z * x
                u = z * xd
        rot[e, c] = r
        pos[e, c] = o
        ang[e, c] = w
        lin[e, c] = lin[e, p] + wp.cross(wpar, o - op) + u


def _kinematics_kernel(call: Any, robot: Any, movable_input: int):
    e = wp.tid()
    link_motion(e, call.q, call.qd, movable_input, call.root_rot[e], call.root_pos[e], call.root_lin[e],
                call.root_ang[e], robot, call.rot, call.pos, call.lin, call.ang)


def _world_kernel(call: Any, robot: Any, world: Any, sample: int, velocity_given: int, dt: Any, slot: int):
    """sample: 0 none (the stored joints are held), 1 a sample with a new stamp, 2 a sample with the stamp of the
    stored one (it replaces it), −1 per env: env e's sample, velocity_given and dt are ``call.env_sample[e]``,
    ``call.env_velocity_given[e]``, ``call.env_dt[e]`` (envs on clocks of their own); velocity_given: qd_in holds
    the caller's joint velocities; dt: stamp difference of the two stored samples, s (any value where there is no
    previous sample); slot: where in ``call.out`` the outputs go.

    The outputs of a step share slot ``slot`` of the buffer ``call.out`` (``world.slot_bytes`` bytes each): rot
    [E, B] (3×3), pos, lin, ang [E, B] (3), qm, qdm [E, n_mov], each contiguous, starting at the byte offsets
    ``world.out_bytes`` within the slot."""
    e = wp.tid()
    n_act = call.q.shape[1]
    n_envs = call.q.shape[0]
    n_bodies = world.n_bodies
    n_mov = robot.axis.shape[0]
    base = call.out.ptr + wp.uint64(slot) * world.slot_bytes
    rot = wp.array(ptr=base + world.out_bytes[0], shape=(n_envs, n_bodies), dtype=type(call.root_rot[0]))
    pos = wp.array(ptr=base + world.out_bytes[1], shape=(n_envs, n_bodies), dtype=type(call.root_pos[0]))
    lin = wp.array(ptr=base + world.out_bytes[2], shape=(n_envs, n_bodies), dtype=type(call.root_pos[0]))
    ang = wp.array(ptr=base + world.out_bytes[3], shape=(n_envs, n_bodies), dtype=type(call.root_pos[0]))
    qm = wp.array(ptr=base + world.out_bytes[4], shape=(n_envs, n_mov), dtype=type(dt))
    qdm = wp.array(ptr=base + world.out_bytes[5], shape=(n_envs, n_mov), dtype=type(dt))
    env_sample = sample
    env_velocity_given = velocity_given
    env_dt = dt
    if sample < 0:
        env_sample = call.env_sample[e]
        env_velocity_given = call.env_velocity_given[e]
        env_dt = call.env_dt[e]
    if env_sample != 0:
        if env_sample == 1:
            call.sample_ok[e, 0] = call.sample_ok[e, 1]
            for j in range(n_act):
                call.q_prev[e, j] = call.q[e, j]
        call.sample_ok[e, 1] = 1
        both = call.sample_ok[e, 0] != 0
        two_pi = type(dt)(2.0) * world.pi
        for j in range(n_act):
            x = call.q_in[e, j]
            call.q[e, j] = x
            if env_velocity_given != 0:
                call.qd[e, j] = call.qd_in[e, j]
            else:
                d = x - call.q_prev[e, j]
                if world.continuous[j] != 0:
                    d = d - two_pi * wp.ceil((d - world.pi) / two_pi)
                v = type(dt)(0.0)
                if both:
                    v = d / env_dt
                call.qd[e, j] = v
    link_motion(e, call.q, call.qd, 0, call.root_rot[e], call.root_pos[e], call.sampled_lin[e, 0],
                call.sampled_ang[e, 0], robot, rot, pos, lin, ang)
    for m in range(n_mov):
        qm[e, m] = movable_position(call.q, e, m, 0, robot)
        qdm[e, m] = movable_rate(call.qd, e, m, 0, robot)
    for k in range(world.attach_link.shape[0]):
        b = world.n_links + k
        link = world.attach_link[k]
        if link >= 0:
            rl = rot[e, link]
            ol = pos[e, link]
            wl = ang[e, link]
            o = rl @ world.offset_pos[k] + ol
            rot[e, b] = rl @ world.offset_rot[k]
            pos[e, b] = o
            ang[e, b] = wl
            lin[e, b] = lin[e, link] + wp.cross(wl, o - ol)
        else:
            rot[e, b] = call.object_rot[e, k]
            pos[e, b] = call.object_pos[e, k]
            lin[e, b] = call.sampled_lin[e, 1 + k]
            ang[e, b] = call.sampled_ang[e, 1 + k]


_STRUCTS = {dt: _struct_types(*types) for dt, types in _WP_TYPES.items()}
KINEMATICS_KERNELS = {dt: typed_kernel(_kinematics_kernel, "link_motion", dt,
                                        {"call": _STRUCTS[dt][2], "robot": _STRUCTS[dt][0]})
                      for dt in _STRUCTS}
"""The link-motion kernel ``(call, robot, movable_input)`` over (E,) by working dtype."""
WORLD_KERNELS = {dt: typed_kernel(_world_kernel, "world_update", dt,
                                  {"call": _STRUCTS[dt][3], "robot": _STRUCTS[dt][0], "world": _STRUCTS[dt][1],
                                   "dt": _WP_TYPES[dt][0]})
                 for dt in _STRUCTS}
"""The world-update kernel ``(call, robot, world, sample, velocity_given, dt, slot)`` over (E,) by working dtype."""


def struct_types(dtype: torch.dtype) -> tuple:
    """(robot tables, world tables, kinematics call, world-update call) warp struct types of a working dtype."""
    return _STRUCTS[dtype]


def empty_robot_tables(dtype: torch.dtype, device: torch.device):
    """Robot tables of a scene without a robot (no links; root_index −1) and the tensors they alias."""
    i32 = dict(device=device, dtype=torch.int32)
    f = dict(device=device, dtype=dtype)
    tensors = {name: torch.zeros(0, **i32) for name in ("step_link", "step_parent", "step_joint", "rotational",
                                                        "mimic_source")}
    tensors.update({"step_rot": torch.zeros(0, 3, 3, **f), "step_pos": torch.zeros(0, 3, **f),
                    "axis": torch.zeros(0, 3, **f), "axis_cross": torch.zeros(0, 3, 3, **f),
                    "axis_cross2": torch.zeros(0, 3, 3, **f), "mimic_multiplier": torch.zeros(0, **f),
                    "mimic_offset": torch.zeros(0, **f)})
    tables = fill_struct(struct_types(dtype)[0], tensors)
    tables.root_index = -1
    return tables, tensors


def fill_struct(struct_type, tensors: dict[str, torch.Tensor]):
    """A new instance of a warp struct type whose array fields point at contiguous torch tensors (the caller keeps
    them alive as long as the struct is used)."""
    init_warp()
    struct = struct_type()
    for name, t in tensors.items():
        if t.numel() == 0:  # no data to alias; fresh strides that warp accepts
            t = torch.empty(t.shape, dtype=t.dtype, device=t.device)
        if not t.is_contiguous():
            raise ValueError(f"fill_struct: {name} must be contiguous; got strides {t.stride()}")
        setattr(struct, name, wp.from_torch(t, dtype=struct_type.vars[name].type.dtype))
    return struct
