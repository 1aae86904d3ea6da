"""Batched forward kinematics, exact link twists and geometric Jacobians of a :class:`RobotModel`.

Shapes: E envs, L links (URDF document order), n_act actuated joints, n_mov movable joints (both in URDF order).
Poses map link to world: ``x_W = R_l x_l + o_l``. Twists are (linear velocity of the link ORIGIN, angular velocity),
both in W. All constant data is precomputed at construction on the requested device and dtype. Link poses and
twists come from one warp launch (one thread per env, links parents first; :mod:`.motion_kernel`); Jacobians are
batched torch products with a 0/1 ancestor matrix.
"""

from __future__ import annotations

import numpy as np
import torch

from ..geometry.struct_launch import StructLaunch
from ..geometry.transforms import skew
from .motion_kernel import KINEMATICS_KERNELS, fill_struct, struct_types
from .urdf import RobotModel


class Kinematics:
    """Forward kinematics of one robot on a fixed device/dtype.

    Public constant tensors (for :mod:`.dynamics` and callers):
    ancestor [L, n_mov]: 1 where movable joint j lies on the path from the root to link l (its child is l or an
    ancestor of l); joint_child [n_mov] long: child link of each movable joint; joint_axis [n_mov, 3]: unit axis in
    the joint (= child link) frame; joint_rotational [n_mov] bool, rotational_mask [n_mov] the same as 1/0 in the
    working dtype; mimic_matrix [n_mov, n_act]: ∂q_mov/∂q_act; mimic_source [n_mov] long,
    mimic_multiplier / mimic_offset [n_mov]. ``tables``: the robot tables struct of :mod:`.motion_kernel` (links in
    topological order with their joint origins, axes and mimic maps), shared with the world update;
    ``table_tensors``: the tensors it aliases by field name (step_link, step_parent, step_joint [K] int32, step_rot
    [K, 3, 3], step_pos [K, 3] m: links below the root parents first, their parent, movable joint or −1 and joint
    origin; axis [n_mov, 3], rotational [n_mov] int32, ...), also read by :mod:`.dynamics`.
    """

    def __init__(self, robot: RobotModel, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32):
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"Kinematics: dtype must be torch.float32 or torch.float64; got {dtype}")
        self.robot = robot
        self.device = torch.device(device)
        self.dtype = dtype
        f = dict(device=self.device, dtype=dtype)
        movable_index = {n: i for i, n in enumerate(robot.movable_joint_names)}
        L, n_mov, n_act = robot.n_links, robot.n_movable, robot.n_actuated
        self.n_links, self.n_movable, self.n_actuated = L, n_mov, n_act
        self.root_index = robot.link_index(robot.root_link)

        # per link below the root, parents first: (link, parent, movable joint or -1, joint origin rot, pos)
        steps = []
        axis = np.zeros((n_mov, 3))
        rotational = np.zeros(n_mov, dtype=bool)
        child = np.zeros(n_mov, dtype=np.int64)
        ancestor = np.zeros((L, n_mov))
        path: dict[int, list[int]] = {self.root_index: []}  # movable joints from root to each link
        for li in robot.topological_order:
            j = robot.parent_joint(robot.link_names[li])
            if j is None:
                continue
            pi = robot.link_index(j.parent)
            m = movable_index[j.name] if j.type.movable else -1
            if m >= 0:
                axis[m], rotational[m], child[m] = j.axis, j.type.rotational, li
            path[li] = path[pi] + ([m] if m >= 0 else [])
            steps.append((li, pi, m, np.asarray(j.rot, dtype=np.float64), np.asarray(j.pos, dtype=np.float64)))
        for li, joints in path.items():
            ancestor[li, joints] = 1.0

        self.ancestor = torch.as_tensor(ancestor, **f)
        self.joint_child = torch.as_tensor(child, device=self.device)
        self.joint_axis = torch.as_tensor(axis, **f)
        self.joint_rotational = torch.as_tensor(rotational, device=self.device)
        self.mimic_source = torch.as_tensor(robot.movable_source, device=self.device)
        self.mimic_multiplier = torch.as_tensor(robot.movable_multiplier, **f)
        self.mimic_offset = torch.as_tensor(robot.movable_offset, **f)
        mm = torch.zeros(n_mov, n_act, **f)
        mm[torch.arange(n_mov, device=self.device), self.mimic_source] = self.mimic_multiplier
        self.mimic_matrix = mm
        self.rotational_mask = self.joint_rotational.to(dtype)

        # the warp tables: K, K² the cross-product matrix of each rotational axis and its square (zero otherwise)
        cross = skew(self.joint_axis) * self.rotational_mask[:, None, None]
        i32 = dict(device=self.device, dtype=torch.int32)
        self.table_tensors = {
            "step_link": torch.tensor([s[0] for s in steps], **i32),
            "step_parent": torch.tensor([s[1] for s in steps], **i32),
            "step_joint": torch.tensor([s[2] for s in steps], **i32),
            "step_rot": torch.as_tensor(np.array([s[3] for s in steps]).reshape(-1, 3, 3), **f),
            "step_pos": torch.as_tensor(np.array([s[4] for s in steps]).reshape(-1, 3), **f),
            "axis": self.joint_axis, "axis_cross": cross.contiguous(), "axis_cross2": (cross @ cross).contiguous(),
            "rotational": self.joint_rotational.to(torch.int32),
            "mimic_source": self.mimic_source.to(torch.int32),
            "mimic_multiplier": self.mimic_multiplier, "mimic_offset": self.mimic_offset}
        self.tables = fill_struct(struct_types(dtype)[0], self.table_tensors)
        self.tables.root_index = self.root_index
        self._launches: dict[tuple[int, bool], tuple[StructLaunch, dict[str, torch.Tensor]]] = {}

    # ------------------------------------------------------------------ joint vectors
    def as_joint_batch(self, x: torch.Tensor, n: int, what: str) -> torch.Tensor:
        """x checked to be [E, n] (ValueError naming ``what`` otherwise), on this device and dtype."""
        if x.dim() != 2 or x.shape[1] != n:
            raise ValueError(f"Kinematics({self.robot.name!r}): {what} must have shape [E, {n}]; "
                             f"got {tuple(x.shape)}")
        return x.to(device=self.device, dtype=self.dtype)

    def movable_positions(self, q: torch.Tensor) -> torch.Tensor:
        """Actuated positions [E, n_act] → movable positions [E, n_mov] (mimic joints follow their source)."""
        q = self.as_joint_batch(q, self.n_actuated, "joint positions")
        return q[:, self.mimic_source] * self.mimic_multiplier + self.mimic_offset

    def movable_rates(self, qd: torch.Tensor) -> torch.Tensor:
        """Actuated velocities or accelerations [E, n_act] → movable ones [E, n_mov] (multiplier only)."""
        qd = self.as_joint_batch(qd, self.n_actuated, "joint rates")
        return qd[:, self.mimic_source] * self.mimic_multiplier

    # ------------------------------------------------------------------ forward kinematics and twists
    def fk(self, q: torch.Tensor, root_rot: torch.Tensor | None = None,
           root_pos: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Link poses in W. q [E, n_act] (rad / m); root pose [E, 3, 3], [E, 3] (default identity, origin).

        Returns rot [E, L, 3, 3], pos [E, L, 3] (m), links in URDF document order.
        """
        q = self.as_joint_batch(q, self.n_actuated, "joint positions")
        return self._motion(q, None, False, root_rot, root_pos, None, None)[:2]

    def motion(self, q: torch.Tensor, qd: torch.Tensor, root_rot: torch.Tensor | None = None,
               root_pos: torch.Tensor | None = None, root_lin_vel: torch.Tensor | None = None,
               root_ang_vel: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        """Link poses and exact link twists: q, qd [E, n_act] (rad or m, /s); root pose as :meth:`fk`; root twist:
        velocity of the root origin [E, 3] m/s and angular velocity [E, 3] rad/s in W (default 0).

        Returns rot [E, L, 3, 3], pos [E, L, 3] m, lin_vel [E, L, 3] (velocity of each link origin) m/s and ang_vel
        [E, L, 3] rad/s, all in W: J(q) q̇ plus the transport of the root twist.
        """
        q = self.as_joint_batch(q, self.n_actuated, "joint positions")
        qd = self.as_joint_batch(qd, self.n_actuated, "joint rates")
        return self._motion(q, qd, False, root_rot, root_pos, root_lin_vel, root_ang_vel)

    def motion_movable(self, qm: torch.Tensor, qdm: torch.Tensor, root_rot: torch.Tensor | None = None,
                       root_pos: torch.Tensor | None = None, root_lin_vel: torch.Tensor | None = None,
                       root_ang_vel: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        """:meth:`motion` from movable positions and velocities qm, qdm [E, n_mov] (mimic values taken as given)."""
        qm = self.as_joint_batch(qm, self.n_movable, "movable joint positions")
        qdm = self.as_joint_batch(qdm, self.n_movable, "movable joint velocities")
        return self._motion(qm, qdm, True, root_rot, root_pos, root_lin_vel, root_ang_vel)

    def _motion(self, q, qd, movable: bool, root_rot, root_pos, root_lin, root_ang) -> tuple[torch.Tensor, ...]:
        """One launch of the link-motion kernel on checked joint vectors (qd None: at rest); fresh outputs."""
        E = q.shape[0]
        if qd is not None and qd.shape[0] != E:
            raise ValueError(f"Kinematics({self.robot.name!r}): joint positions and rates must have the same number "
                             f"of envs; got {E} and {qd.shape[0]}")
        launch, defaults = self._launch(E, movable)
        f = dict(device=self.device, dtype=self.dtype)
        L = self.n_links
        out = {"rot": torch.empty(E, L, 3, 3, **f), "pos": torch.empty(E, L, 3, **f),
               "lin": torch.empty(E, L, 3, **f), "ang": torch.empty(E, L, 3, **f)}
        given = {"q": q, "qd": qd, "root_rot": root_rot, "root_pos": root_pos, "root_lin": root_lin,
                 "root_ang": root_ang}
        for name, t in given.items():
            if t is None:
                t = defaults[name]
            elif name.startswith("root"):
                t = t.to(**f).expand(defaults[name].shape)
            launch.bind(name, t.contiguous())
        for name, t in out.items():
            launch.bind(name, t)
        launch()
        return out["rot"], out["pos"], out["lin"], out["ang"]

    def _launch(self, E: int, movable: bool) -> tuple[StructLaunch, dict[str, torch.Tensor]]:
        """The recorded launch over E envs and its default inputs (zero velocities, identity root at rest)."""
        cached = self._launches.get((E, movable))
        if cached is None:
            f = dict(device=self.device, dtype=self.dtype)
            n = self.n_movable if movable else self.n_actuated
            defaults = {"q": torch.zeros(E, n, **f), "qd": torch.zeros(E, n, **f),
                        "root_rot": torch.eye(3, **f).expand(E, 3, 3).contiguous(),
                        "root_pos": torch.zeros(E, 3, **f), "root_lin": torch.zeros(E, 3, **f),
                        "root_ang": torch.zeros(E, 3, **f)}
            L = self.n_links
            fields = {**defaults, "rot": torch.empty(E, L, 3, 3, **f), "pos": torch.empty(E, L, 3, **f),
                      "lin": torch.empty(E, L, 3, **f), "ang": torch.empty(E, L, 3, **f)}
            launch = StructLaunch(KINEMATICS_KERNELS[self.dtype], (E,), struct_types(self.dtype)[2], fields,
                                  [self.tables, int(movable)], self.device)
            cached = self._launches[(E, movable)] = (launch, defaults)
        return cached

    def joint_frames(self, rot: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """World axes z [E, n_mov, 3] and origins o [E, n_mov, 3] of the movable joints from an :meth:`fk` result."""
        rc = torch.index_select(rot, 1, self.joint_child)
        return (rc * self.joint_axis[:, None, :]).sum(-1), torch.index_select(pos, 1, self.joint_child)

    # ------------------------------------------------------------------ Jacobians
    def jacobian(self, q: torch.Tensor, link: str | int, point: torch.Tensor | None = None,
                 root_rot: torch.Tensor | None = None, root_pos: torch.Tensor | None = None) -> torch.Tensor:
        """Geometric Jacobian [E, 6, n_act] of a point fixed on ``link`` (linear rows first, then angular; W).

        point: [3] or [E, 3] in the link frame, m (default the link origin). ẋ = J[:, :3] q̇, ω = J[:, 3:] q̇
        (plus the root twist, which J excludes).
        """
        rot, pos = self.fk(q, root_rot, root_pos)
        return self.jacobian_from_fk(rot, pos, link, point)

    def jacobian_from_fk(self, rot: torch.Tensor, pos: torch.Tensor, link: str | int,
                         point: torch.Tensor | None = None) -> torch.Tensor:
        """:meth:`jacobian` reusing an :meth:`fk` result."""
        return self.jacobian_movable_from_fk(rot, pos, link, point) @ self.mimic_matrix

    def jacobian_movable_from_fk(self, rot: torch.Tensor, pos: torch.Tensor, link: str | int,
                                 point: torch.Tensor | None = None) -> torch.Tensor:
        """Jacobian with one column per movable joint [E, 6, n_mov] (mimic joints as their own columns)."""
        li = self.robot.link_index(link) if isinstance(link, str) else int(link)
        x = pos[:, li]
        if point is not None:
            pt = torch.as_tensor(point, device=self.device, dtype=self.dtype).expand(x.shape)
            x = x + (rot[:, li] @ pt[..., None])[..., 0]
        z, o = self.joint_frames(rot, pos)
        mask = self.ancestor[li][:, None]
        lin = torch.where(self.joint_rotational[:, None], torch.cross(z, x[:, None] - o, dim=-1), z) * mask
        ang = z * (self.rotational_mask[:, None] * mask)
        return torch.cat([lin, ang], dim=-1).transpose(1, 2)
