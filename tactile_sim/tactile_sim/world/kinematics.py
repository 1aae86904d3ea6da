"""Batched forward kinematics, exact link twists and geometric Jacobians of a :class:`RobotModel` (torch).

Shapes: E envs, L links (URDF document order), n_act actuated joints, n_mov movable joints (both in URDF order).
Poses map link to world: ``x_W = R_l x_l + o_l``. Twists are (linear velocity of the link ORIGIN, angular velocity),
both in W. All constant data is precomputed at construction on the requested device and dtype; the per-call work is
one batched joint-motion evaluation, one 4×4 product per link (parents first) and a constant number of batched
products for twists and Jacobians (sums over ancestor joints via a 0/1 ancestor matrix).
"""

from __future__ import annotations

import torch

from ..geometry.transforms import skew
from .urdf import RobotModel


def homogeneous(rot: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """(rot [..., 3, 3], pos [..., 3]) → 4×4 homogeneous transforms [..., 4, 4]."""
    top = torch.cat([rot, pos[..., None]], dim=-1)
    bottom = torch.zeros(top.shape[:-2] + (1, 4), dtype=rot.dtype, device=rot.device)
    bottom[..., 0, 3] = 1.0
    return torch.cat([top, bottom], dim=-2)


class Kinematics:
    """Forward kinematics of one robot on a fixed device/dtype.

    Public constant tensors (for :mod:`.dynamics` and callers):
    ancestor [L, n_mov]: 1 where movable joint j lies on the path from the root to link l (its child is l or an
    ancestor of l); joint_child [n_mov] long: child link of each movable joint; joint_axis [n_mov, 3]: unit axis in
    the joint (= child link) frame; joint_rotational [n_mov] bool, rotational_mask / prismatic_mask [n_mov] the same
    as 1/0 in the working dtype; mimic_matrix [n_mov, n_act]: ∂q_mov/∂q_act; mimic_source [n_mov] long,
    mimic_multiplier / mimic_offset [n_mov].
    """

    def __init__(self, robot: RobotModel, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32):
        self.robot = robot
        self.device = torch.device(device)
        self.dtype = dtype
        f = dict(device=self.device, dtype=dtype)
        movable_index = {n: i for i, n in enumerate(robot.movable_joint_names)}
        L, n_mov, n_act = robot.n_links, robot.n_movable, robot.n_actuated
        self.n_links, self.n_movable, self.n_actuated = L, n_mov, n_act
        self.root_index = robot.link_index(robot.root_link)

        # per link (topological order): parent link index and local transform source
        self._steps: list[tuple[int, int, int, torch.Tensor | None]] = []  # (link, parent, movable idx or -1, const T)
        origins = torch.zeros(n_mov, 4, 4, **f)
        axis = torch.zeros(n_mov, 3, **f)
        rotational = torch.zeros(n_mov, dtype=torch.bool, device=self.device)
        child = torch.zeros(n_mov, dtype=torch.long, device=self.device)
        ancestor = torch.zeros(L, n_mov, **f)
        path: dict[int, list[int]] = {self.root_index: []}  # movable joints from root to each link
        for li in robot.topological_order:
            name = robot.link_names[li]
            j = robot.parent_joint(name)
            if j is None:
                continue
            pi = robot.link_index(j.parent)
            t_origin = homogeneous(torch.as_tensor(j.rot, **f), torch.as_tensor(j.pos, **f))
            if j.type.movable:
                m = movable_index[j.name]
                origins[m] = t_origin
                axis[m] = torch.as_tensor(j.axis, **f)
                rotational[m] = j.type.rotational
                child[m] = li
                path[li] = path[pi] + [m]
                self._steps.append((li, pi, m, None))
            else:
                path[li] = path[pi]
                self._steps.append((li, pi, -1, t_origin))
        for li, joints in path.items():
            ancestor[li, joints] = 1.0

        self.ancestor = ancestor
        self.joint_child = child
        self.joint_axis = axis
        self.joint_rotational = rotational
        self.mimic_source = torch.as_tensor(robot.movable_source, device=self.device)
        self.mimic_multiplier = torch.as_tensor(robot.movable_multiplier, **f)
        self.mimic_offset = torch.as_tensor(robot.movable_offset, **f)
        mm = torch.zeros(n_mov, n_act, **f)
        mm[torch.arange(n_mov, device=self.device), self.mimic_source] = self.mimic_multiplier
        self.mimic_matrix = mm
        # local transform of movable joint j: origin_j · (I + sin q K_j + (1 − cos q) K_j² + q A_j), with K_j the
        # axis cross-product matrix (rotational joints only) and A_j the axis as a translation (prismatic only);
        # stored flattened as origin_j (16,) + coef (sin q, 1 − cos q, q) @ basis_j (3, 16)
        k4 = torch.zeros(n_mov, 4, 4, **f)
        k4[:, :3, :3] = skew(axis) * rotational.to(dtype)[:, None, None]
        a4 = torch.zeros(n_mov, 4, 4, **f)
        a4[:, :3, 3] = axis * (~rotational).to(dtype)[:, None]
        basis = torch.stack([origins @ k4, origins @ k4 @ k4, origins @ a4], dim=1)
        self._basis = basis.reshape(n_mov, 3, 16)
        self._origins_flat = origins.reshape(n_mov, 1, 16)
        self.rotational_mask = rotational.to(dtype)
        self.prismatic_mask = 1.0 - self.rotational_mask
        self._eye4 = torch.eye(4, **f)

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

    # ------------------------------------------------------------------ forward kinematics
    def fk(self, q: torch.Tensor, root_rot: torch.Tensor | None = None,
           root_pos: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Link poses in W. q [E, n_act] (rad / m); root pose [E, 3, 3], [E, 3] (default identity, origin).

        Returns rot [E, L, 3, 3], pos [E, L, 3] (m), links in URDF document order.
        """
        qm = self.movable_positions(q)
        return self.fk_movable(qm, root_rot, root_pos)

    def fk_movable(self, qm: torch.Tensor, root_rot: torch.Tensor | None = None,
                   root_pos: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`fk` from movable positions qm [E, n_mov] (mimic values taken as given)."""
        qm = self.as_joint_batch(qm, self.n_movable, "movable joint positions")
        E = qm.shape[0]
        coef = torch.stack([torch.sin(qm), 1.0 - torch.cos(qm), qm], dim=-1).transpose(0, 1)  # [n_mov, E, 3]
        local = torch.baddbmm(self._origins_flat, coef, self._basis).view(self.n_movable, E, 4, 4).unbind(0)
        world: list[torch.Tensor | None] = [None] * self.n_links
        if root_rot is None and root_pos is None:
            world[self.root_index] = self._eye4.expand(E, 4, 4)
        else:
            rr = torch.eye(3, device=self.device, dtype=self.dtype).expand(E, 3, 3) if root_rot is None else root_rot
            rp = torch.zeros(E, 3, device=self.device, dtype=self.dtype) if root_pos is None else root_pos
            world[self.root_index] = homogeneous(rr.to(self.device, self.dtype).expand(E, 3, 3),
                                                 rp.to(self.device, self.dtype).expand(E, 3))
        for li, pi, m, const in self._steps:
            world[li] = torch.bmm(world[pi], local[m] if const is None else const.expand(E, 4, 4))
        t = torch.stack(world, dim=1)
        return t[..., :3, :3].contiguous(), t[..., :3, 3].contiguous()

    # ------------------------------------------------------------------ twists
    def twists(self, rot: torch.Tensor, pos: torch.Tensor, qd: torch.Tensor,
               root_lin_vel: torch.Tensor | None = None,
               root_ang_vel: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Exact link twists from an :meth:`fk` result and actuated velocities qd [E, n_act] (rad/s, m/s).

        root twist: linear velocity of the root origin [E, 3] m/s and angular velocity [E, 3] rad/s in W (default 0).
        Returns lin_vel [E, L, 3] (velocity of each link origin) and ang_vel [E, L, 3], both in W.
        """
        return self.twists_movable(rot, pos, self.movable_rates(qd), root_lin_vel, root_ang_vel)

    def twists_movable(self, rot: torch.Tensor, pos: torch.Tensor, qdm: torch.Tensor,
                       root_lin_vel: torch.Tensor | None = None,
                       root_ang_vel: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`twists` from movable velocities qdm [E, n_mov]."""
        qdm = self.as_joint_batch(qdm, self.n_movable, "movable joint velocities")
        origin = pos[:, self.root_index: self.root_index + 1]
        p = pos - origin  # relative to the root origin (round-off far from the world origin)
        z, o = self.joint_frames(rot, p)
        w, u = self.split_by_joint_type(z * qdm[..., None])
        lin, ang = self.sum_over_ancestors(p, o, w, u)
        if root_ang_vel is not None:
            wr = root_ang_vel.to(self.device, self.dtype)[:, None, :]
            ang = ang + wr
            lin = lin + torch.cross(wr.expand_as(p), p, dim=-1)
        if root_lin_vel is not None:
            lin = lin + root_lin_vel.to(self.device, self.dtype)[:, None, :]
        return lin, ang

    def split_by_joint_type(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-joint vectors x [E, n_mov, 3] → (x at rotational joints, x at prismatic joints), zeros elsewhere.

        With x = z q̇ (z the world joint axes) this gives the angular velocity w and the linear velocity u that
        each joint contributes to its subtree.
        """
        return x * self.rotational_mask[:, None], x * self.prismatic_mask[:, None]

    def sum_over_ancestors(self, p: torch.Tensor, o: torch.Tensor, w: torch.Tensor,
                           u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per link, Σ over its ancestor joints j of (w_j × (p_l − o_j) + u_j) and of w_j: [E, L, 3] each.

        With (w, u) the joint velocity contributions this is the link twist (origin velocity, angular velocity);
        p: link origins [E, L, 3] and o: joint origins [E, n_mov, 3], both relative to the same point.
        """
        sums = self.ancestor_sum(torch.cat([w, u - torch.cross(w, o, dim=-1)], dim=-1))
        ang = sums[..., :3]
        return torch.cross(ang, p, dim=-1) + sums[..., 3:], ang

    def joint_frames(self, rot: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """World axes z [E, n_mov, 3] and origins o [E, n_mov, 3] of the movable joints from an :meth:`fk` result."""
        rc = torch.index_select(rot, 1, self.joint_child)
        return (rc * self.joint_axis[:, None, :]).sum(-1), torch.index_select(pos, 1, self.joint_child)

    def ancestor_sum(self, x: torch.Tensor) -> torch.Tensor:
        """Per link, the sum over its ancestor joints: x [E, n_mov, C] → [E, L, C] (one 2-D product)."""
        E, n, C = x.shape
        return (self.ancestor @ x.transpose(0, 1).reshape(n, E * C)).view(self.n_links, E, C).transpose(0, 1)

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
