"""Recursive Newton–Euler inverse dynamics (docs/models/joint_torque.md#model): one warp thread per row (env), links in
tree order.

    τ = M(q) q̈ + C(q, q̇) q̇ + g(q) − Σ_c J_c(q)ᵀ w_c

The root link is fixed in W at its given orientation (which sets the direction of g_W in the tree); base
accelerations are not modelled. Mimic joints follow their source joint (q, q̇, q̈ via multiplier and offset) and get
their own entry in τ. Inertials: mass, COM origin and inertia about the COM in the ``<inertial>`` frame.

The recursion of docs/models/joint_torque.md#recursion (v_i = X_i v_λ + S_i q̇_i; a_i = X_i a_λ + S_i q̈_i + v_i ×ₘ S_i
q̇_i with a_0 = −g;
f_i = I_i a_i + v_i ×_f I_i v_i − f_ext,i; τ_i = S_iᵀ f_i; f_λ += X_iᵀ f_i) is evaluated with every quantity in W
axes, positions relative to the root origin. Forward pass, parents first: link pose, angular velocity ω, angular
acceleration α and the acceleration a of the link origin (gravity enters as a_root = −g_W), then the link's own
wrench about its origin (m a_COM; I_W α + ω × I_W ω + r × m a_COM) minus the external wrench. Backward pass,
children first: every link's wrench is moved to its parent's origin and added there; τ_j = z_j · moment (revolute)
or z_j · force (prismatic) at the child of joint j. Link velocities are not needed: the acceleration of a link origin
follows from the parent's ω, α and a alone.

:func:`rnea_row` is the per-row warp function (fused sensor kernels call it with their own inputs);
:class:`InverseDynamics` runs it on torch tensors, float32 or float64, on the kinematics' device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import warp as wp

from ..constants import DEFAULT_GRAVITY
from ..geometry.struct_launch import StructLaunch, warp_struct
from ..geometry.warp_kernels import init_warp, typed_kernel
from .kinematics import Kinematics

WP_TYPES = {torch.float32: (wp.float32, wp.vec3f, wp.mat33f, wp.types.vector(6, wp.float32)),
            torch.float64: (wp.float64, wp.vec3d, wp.mat33d, wp.types.vector(6, wp.float64))}
"""Warp (scalar, vec3, mat33, vec6) types of a working dtype."""


def _struct_types(dtype: torch.dtype):
    """(tree tables, per-row workspace, per-call inputs of :class:`InverseDynamics`) struct types of one dtype."""
    f, v, m, v6 = WP_TYPES[dtype]
    i32, arr, arr2 = wp.array(dtype=wp.int32), (lambda t: wp.array(dtype=t)), (lambda t: wp.array2d(dtype=t))
    suffix = f.__name__
    tables = warp_struct(f"RneaTables_{suffix}", {
        "step_link": i32, "step_parent": i32, "step_joint": i32, "origin_rot": arr(m), "origin_pos": arr(v),
        "axis": arr(v), "rotational": i32, "mass": arr(f), "com": arr(v), "inertia": arr(m), "root": int}, __name__)
    work = warp_struct(f"RneaWork_{suffix}", {
        "rot": arr2(m), "pos": arr2(v), "omega": arr2(v), "alpha": arr2(v), "acc": arr2(v), "force": arr2(v),
        "moment": arr2(v)}, __name__)
    call = warp_struct(f"RneaCall_{suffix}", {
        "q": arr2(f), "qd": arr2(f), "qdd": arr2(f), "root_rot": arr(m), "gravity": arr(v), "fext": arr2(v6),
        "tau": arr2(f)}, __name__)
    return tables, work, call


_STRUCTS = {dt: _struct_types(dt) for dt in WP_TYPES}


def rnea_types(dtype: torch.dtype) -> tuple:
    """(tables, workspace) warp struct types of :attr:`InverseDynamics.tables` and :meth:`InverseDynamics.workspace`
    for a working dtype."""
    return _STRUCTS[dtype][:2]


@wp.func
def rnea_row(tables: Any, work: Any, r: int, q: Any, rq: int, qd: Any, qdd: Any, rv: int, root_rot: Any,
             gravity: Any, fext: Any, rf: int, tau: Any, rt: int):
    """Inverse dynamics of one row: τ → ``tau[rt, :]`` (all movable joints).

    work: a workspace with ≥ r + 1 rows (row r is overwritten); q[rq, :] movable positions; qd[rv, :], qdd[rv, :]
    movable velocities and accelerations; root_rot: root orientation in W; gravity: g_W; fext[rf, l] the external
    wrench on link l (force; torque about the link origin; W).
    """
    zero = gravity - gravity
    root = tables.root
    work.rot[r, root] = root_rot
    work.pos[r, root] = zero
    work.omega[r, root] = zero
    work.alpha[r, root] = zero
    work.acc[r, root] = -gravity
    work.force[r, root] = zero
    work.moment[r, root] = zero
    n_steps = tables.step_link.shape[0]
    for k in range(n_steps):
        link = tables.step_link[k]
        parent = tables.step_parent[k]
        joint = tables.step_joint[k]
        rot_p = work.rot[r, parent]
        w_p = work.omega[r, parent]
        alpha_p = work.alpha[r, parent]
        rot = rot_p @ tables.origin_rot[k]
        d = rot_p @ tables.origin_pos[k]  # parent origin → link origin
        w = w_p
        alpha = alpha_p
        extra = zero  # joint terms of the origin acceleration (prismatic)
        if joint >= 0:
            axis = tables.axis[joint]
            z = rot @ axis  # the axis in W (unchanged by the joint's own rotation)
            rate = qd[rv, joint]
            zr = z * rate
            if tables.rotational[joint] != 0:
                angle = q[rq, joint]
                s = wp.sin(angle)
                c = wp.cos(angle)
                kx = wp.skew(axis)
                rot = rot @ (wp.identity(3, dtype=type(s)) + s * kx + (type(s)(1.0) - c) * (kx @ kx))
                w = w_p + zr
                alpha = alpha_p + z * qdd[rv, joint] + wp.cross(w_p, zr)
            else:
                d = d + z * q[rq, joint]
                extra = z * qdd[rv, joint] + type(rate)(2.0) * wp.cross(w_p, zr)
        acc = work.acc[r, parent] + wp.cross(alpha_p, d) + wp.cross(w_p, wp.cross(w_p, d)) + extra
        pos = work.pos[r, parent] + d
        work.rot[r, link] = rot
        work.pos[r, link] = pos
        work.omega[r, link] = w
        work.alpha[r, link] = alpha
        work.acc[r, link] = acc
        # the link's own wrench about its origin, minus the external one
        rc = rot @ tables.com[link]
        force = tables.mass[link] * (acc + wp.cross(alpha, rc) + wp.cross(w, wp.cross(w, rc)))
        inertia = rot @ tables.inertia[link] @ wp.transpose(rot)
        moment = inertia @ alpha + wp.cross(w, inertia @ w) + wp.cross(rc, force)
        ext = fext[rf, link]
        work.force[r, link] = force - type(zero)(ext[0], ext[1], ext[2])
        work.moment[r, link] = moment - type(zero)(ext[3], ext[4], ext[5])
    for i in range(n_steps):
        k = n_steps - 1 - i
        link = tables.step_link[k]
        parent = tables.step_parent[k]
        joint = tables.step_joint[k]
        force = work.force[r, link]
        moment = work.moment[r, link]
        if joint >= 0:
            z = work.rot[r, link] @ tables.axis[joint]
            if tables.rotational[joint] != 0:
                tau[rt, joint] = wp.dot(z, moment)
            else:
                tau[rt, joint] = wp.dot(z, force)
        d = work.pos[r, link] - work.pos[r, parent]
        work.force[r, parent] = work.force[r, parent] + force
        work.moment[r, parent] = work.moment[r, parent] + moment + wp.cross(d, force)


def _rnea_kernel(call: Any, tables: Any, work: Any):
    r = wp.tid()
    rnea_row(tables, work, r, call.q, r, call.qd, call.qdd, r, call.root_rot[r], call.gravity[r], call.fext, r,
             call.tau, r)


_KERNELS = {dt: typed_kernel(_rnea_kernel, "inverse_dynamics", dt, {"call": s[2], "tables": s[0], "work": s[1]})
            for dt, s in _STRUCTS.items()}


class InverseDynamics:
    """Inverse dynamics of the robot of ``kinematics`` (same device and dtype).

    Public: ``mass`` [L] kg; ``tables`` (warp struct of :func:`rnea_types`) and :meth:`workspace` for kernels that
    call :func:`rnea_row`.
    """

    def __init__(self, kinematics: Kinematics):
        self.kin = kinematics
        robot = kinematics.robot
        dev, dt = kinematics.device, kinematics.dtype
        if dt not in WP_TYPES:
            raise ValueError(f"InverseDynamics: dtype must be torch.float32 or torch.float64; got {dt}")
        f = dict(device=dev, dtype=dt)
        self.device, self.dtype = dev, dt
        self.mass = torch.tensor([link.inertial.mass for link in robot.links], **f)  # [L] kg
        com = np.array([link.inertial.com for link in robot.links], dtype=np.float64).reshape(-1, 3)
        inertia = np.array([link.inertial.inertia_link_axes for link in robot.links]).reshape(-1, 3, 3)
        _, v, m, _ = WP_TYPES[dt]
        init_warp()

        def array(x, dtype, wtype=None):
            t = torch.as_tensor(x, device=dev, dtype=dtype).contiguous()
            if wtype is not None and t.shape[0] == 0:  # no joints or steps: one unread row (warp rejects empty vectors)
                t = torch.zeros((1,) + t.shape[1:], device=dev, dtype=dtype)
            self._keep.append(t)
            return wp.from_torch(t, dtype=wtype) if wtype is not None else wp.from_torch(t)

        self._keep: list[torch.Tensor] = []
        tree = kinematics.table_tensors  # the kinematic tree, as the motion kernel walks it
        tables = _STRUCTS[dt][0]()
        tables.step_link = array(tree["step_link"], torch.int32)
        tables.step_parent = array(tree["step_parent"], torch.int32)
        tables.step_joint = array(tree["step_joint"], torch.int32)
        tables.origin_rot = array(tree["step_rot"], dt, m)
        tables.origin_pos = array(tree["step_pos"], dt, v)
        tables.axis = array(tree["axis"], dt, v)
        tables.rotational = array(tree["rotational"], torch.int32)
        tables.mass = wp.from_torch(self.mass)
        tables.com = array(com, dt, v)
        tables.inertia = array(inertia, dt, m)
        tables.root = robot.link_index(robot.root_link)
        self.tables = tables
        self._launches: dict[int, tuple] = {}

    def workspace(self, rows: int):
        """A new workspace struct (type of :func:`rnea_types`) for ``rows`` rows, with the tensors it aliases."""
        L, f = self.kin.n_links, dict(device=self.device, dtype=self.dtype)
        _, v, m, _ = WP_TYPES[self.dtype]
        work = _STRUCTS[self.dtype][1]()
        tensors = {"rot": torch.zeros(rows, L, 3, 3, **f)}
        tensors.update({name: torch.zeros(rows, L, 3, **f)
                        for name in ("pos", "omega", "alpha", "acc", "force", "moment")})
        for name, t in tensors.items():
            setattr(work, name, wp.from_torch(t, dtype=m if name == "rot" else v))
        return work, tensors

    def _gravity(self, gravity, E: int) -> torch.Tensor:
        g = torch.as_tensor(gravity, device=self.device, dtype=self.dtype)
        if g.shape not in ((3,), (E, 3)):
            raise ValueError(f"InverseDynamics.rnea: gravity must have shape [3] or [E, 3] m/s²; got {tuple(g.shape)}")
        return g.expand(E, 3).contiguous()

    def rnea(self, q: torch.Tensor, qd: torch.Tensor, qdd: torch.Tensor,
             gravity: Sequence[float] | torch.Tensor = DEFAULT_GRAVITY, f_ext: torch.Tensor | None = None,
             root_rot: torch.Tensor | None = None) -> torch.Tensor:
        """Joint efforts τ [E, n_mov] (N·m or N, movable joints in URDF order, + along +q).

        q, qd, qdd: actuated positions, velocities, accelerations [E, n_act]; gravity g_W [3] or [E, 3] m/s²;
        f_ext [E, L, 6]: wrench (force N; torque N·m) applied TO each link BY the environment, in W, torque about the
        link ORIGIN; root_rot [E, 3, 3] root orientation in W (default identity).
        """
        k = self.kin
        return self.rnea_movable(k.movable_positions(q), k.movable_rates(qd), k.movable_rates(qdd),
                                 gravity, f_ext, root_rot)

    def rnea_movable(self, qm: torch.Tensor, qdm: torch.Tensor, qddm: torch.Tensor,
                     gravity: Sequence[float] | torch.Tensor = DEFAULT_GRAVITY, f_ext: torch.Tensor | None = None,
                     root_rot: torch.Tensor | None = None) -> torch.Tensor:
        """:meth:`rnea` from movable-joint vectors [E, n_mov] (mimic values taken as given)."""
        k = self.kin
        qm = k.as_joint_batch(qm, k.n_movable, "movable joint positions").contiguous()
        qdm = k.as_joint_batch(qdm, k.n_movable, "movable joint velocities").contiguous()
        qddm = k.as_joint_batch(qddm, k.n_movable, "movable joint accelerations").contiguous()
        E = qm.shape[0]
        if qdm.shape[0] != E or qddm.shape[0] != E:
            raise ValueError(f"InverseDynamics.rnea: q, q̇ and q̈ must have the same number of rows; got "
                             f"{E}, {qdm.shape[0]} and {qddm.shape[0]}")
        g = self._gravity(gravity, E)
        launch, zero_fext, eye, _ = self._launch(E)
        if f_ext is None:
            fe = zero_fext
        else:
            if f_ext.shape != (E, k.n_links, 6):
                raise ValueError(f"InverseDynamics.rnea: f_ext must have shape [E, L, 6] = [{E}, {k.n_links}, 6]; "
                                 f"got {tuple(f_ext.shape)}")
            fe = f_ext.to(self.device, self.dtype).contiguous()
        rr = eye if root_rot is None else root_rot.to(self.device, self.dtype).expand(E, 3, 3).contiguous()
        tau = torch.empty(E, k.n_movable, device=self.device, dtype=self.dtype)
        for name, t in (("q", qm), ("qd", qdm), ("qdd", qddm), ("root_rot", rr), ("gravity", g), ("fext", fe),
                        ("tau", tau)):
            launch.bind(name, t)
        launch()
        return tau

    def _launch(self, E: int) -> tuple:
        """(recorded launch over E rows, zero external wrenches [E, L, 6], identity root rotations [E, 3, 3], the
        workspace tensors the launch aliases)."""
        cached = self._launches.get(E)
        if cached is None:
            f = dict(device=self.device, dtype=self.dtype)
            n, L = self.kin.n_movable, self.kin.n_links
            zero_fext = torch.zeros(E, L, 6, **f)
            eye = torch.eye(3, **f).expand(E, 3, 3).contiguous()
            work, tensors = self.workspace(E)
            fields = {"q": torch.zeros(E, n, **f), "qd": torch.zeros(E, n, **f), "qdd": torch.zeros(E, n, **f),
                      "root_rot": eye, "gravity": torch.zeros(E, 3, **f), "fext": zero_fext,
                      "tau": torch.zeros(E, n, **f)}
            launch = StructLaunch(_KERNELS[self.dtype], (E,), _STRUCTS[self.dtype][2], fields,
                                  [self.tables, work], self.device)
            cached = self._launches[E] = (launch, zero_fext, eye, tensors)
        return cached

    def mass_matrix_movable(self, qm: torch.Tensor, root_rot: torch.Tensor | None = None) -> torch.Tensor:
        """Joint-space inertia M [E, n_mov, n_mov] with every movable joint as its own coordinate (kg·m², kg).

        Column k is the inverse dynamics of a unit acceleration of joint k without velocity, gravity or loads.
        """
        k = self.kin
        qm = k.as_joint_batch(qm, k.n_movable, "movable joint positions")
        E, n = qm.shape
        eye = torch.eye(n, device=k.device, dtype=k.dtype)
        qrep = qm.repeat_interleave(n, dim=0)
        rr = None if root_rot is None else root_rot.expand(E, 3, 3).repeat_interleave(n, dim=0)
        cols = self.rnea_movable(qrep, torch.zeros_like(qrep), eye.repeat(E, 1), (0.0, 0.0, 0.0), None, rr)
        return cols.view(E, n, n).transpose(1, 2)
