"""Recursive Newton–Euler inverse dynamics (spec §11.1–11.2), batched over envs in torch.

    τ = M(q) q̈ + C(q, q̇) q̇ + g(q) − Σ_c J_c(q)ᵀ w_c

The root link is fixed in W at its given orientation (which sets the direction of g_W in the tree); base
accelerations are not modelled. Mimic joints follow their source joint (q, q̇, q̈ via multiplier and offset) and get
their own entry in τ. Inertials: mass, COM origin and inertia about the COM in the ``<inertial>`` frame.

The recursion of §11.2 (v_i = X_i v_λ + S_i q̇_i; a_i = X_i a_λ + S_i q̈_i + v_i ×ₘ S_i q̇_i with a_0 = −g;
f_i = I_i a_i + v_i ×_f I_i v_i − f_ext,i; τ_i = S_iᵀ f_i; f_λ += X_iᵀ f_i) is evaluated with every quantity
expressed in W about the root origin instead of in the link frames: the forward pass is the closed-form sum of
joint contributions over each link's ancestors, and the backward pass the sum of link wrenches over each joint's
subtree. Both are single batched products with the 0/1 ancestor matrix, so the cost does not grow with tree depth
in Python operations; the result is the same Newton–Euler solution.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..constants import DEFAULT_GRAVITY
from .kinematics import Kinematics


class InverseDynamics:
    """Inverse dynamics of the robot of ``kinematics`` (same device and dtype)."""

    def __init__(self, kinematics: Kinematics):
        self.kin = kinematics
        robot = kinematics.robot
        f = dict(device=kinematics.device, dtype=kinematics.dtype)
        self.mass = torch.tensor([link.inertial.mass for link in robot.links], **f)  # [L] kg
        self.com = torch.stack([torch.as_tensor(link.inertial.com, **f) for link in robot.links])  # [L, 3] m, link
        self.inertia = torch.stack([torch.as_tensor(link.inertial.inertia_link_axes, **f)
                                    for link in robot.links])  # [L, 3, 3] kg·m² about the COM, link axes

    def _gravity(self, gravity, E: int) -> torch.Tensor:
        g = torch.as_tensor(gravity, device=self.kin.device, dtype=self.kin.dtype)
        if g.shape not in ((3,), (E, 3)):
            raise ValueError(f"InverseDynamics.rnea: gravity must have shape [3] or [E, 3] m/s²; got {tuple(g.shape)}")
        return g.expand(E, 3)

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
        rot, p = k.fk_movable(qm, root_rot, None)  # root origin at 0: every position is relative to it
        qdm = k.as_joint_batch(qdm, k.n_movable, "movable joint velocities")
        qddm = k.as_joint_batch(qddm, k.n_movable, "movable joint accelerations")
        E = qm.shape[0]
        z, o = k.joint_frames(rot, p)  # [E, n, 3] joint axes and origins (= child origins) in W
        w, u = k.split_by_joint_type(z * qdm[..., None])  # angular / linear velocity contributed by each joint
        v, omega = k.sum_over_ancestors(p, o, w, u)  # [E, L, 3] velocity of each link origin, angular velocity
        omega_c = torch.index_select(omega, 1, k.joint_child)
        v_c = torch.index_select(v, 1, k.joint_child)
        # time derivatives: d(z q̇)/dt = z q̈ + (ω_c × z) q̇ (the axis turns with its child link); the origin
        # acceleration is the same ancestor sum with (ẇ, u̇ − w × v_c), plus ω × v
        w_dot, u_dot = k.split_by_joint_type(z * qddm[..., None] + torch.cross(omega_c, z, dim=-1) * qdm[..., None])
        a, alpha = k.sum_over_ancestors(p, o, w_dot, u_dot - torch.cross(w, v_c, dim=-1))
        a = a + torch.cross(omega, v, dim=-1)

        r = (rot @ self.com[..., None])[..., 0]  # [E, L, 3] COM offset from the link origin, W axes
        a_com = a + torch.cross(alpha, r, dim=-1) + torch.cross(omega, torch.cross(omega, r, dim=-1), dim=-1)
        g = self._gravity(gravity, E)
        force = self.mass[:, None] * (a_com - g[:, None, :])
        inertia_w = rot @ self.inertia @ rot.transpose(-1, -2)
        i_omega = (inertia_w @ omega[..., None])[..., 0]
        moment = (inertia_w @ alpha[..., None])[..., 0] + torch.cross(omega, i_omega, dim=-1)
        moment = moment + torch.cross(p + r, force, dim=-1)  # about the root origin
        if f_ext is not None:
            if f_ext.shape != (E, k.n_links, 6):
                raise ValueError(f"InverseDynamics.rnea: f_ext must have shape [E, L, 6] = [{E}, {k.n_links}, 6]; "
                                 f"got {tuple(f_ext.shape)}")
            fe = f_ext.to(k.device, k.dtype)
            force = force - fe[..., :3]
            moment = moment - fe[..., 3:] - torch.cross(p, fe[..., :3], dim=-1)
        sub = self._subtree_sum(torch.cat([force, moment], dim=-1))  # [E, n, 6] wrench on each joint's subtree
        f_sub, m_sub = sub[..., :3], sub[..., 3:] - torch.cross(o, sub[..., :3], dim=-1)  # moment about o_j
        return (z * torch.where(k.joint_rotational[:, None], m_sub, f_sub)).sum(-1)

    def _subtree_sum(self, x: torch.Tensor) -> torch.Tensor:
        """Per movable joint, the sum over the links of its subtree: x [E, L, C] → [E, n_mov, C]."""
        E, L, C = x.shape
        n = self.kin.n_movable
        return (self.kin.ancestor.T @ x.transpose(0, 1).reshape(L, E * C)).view(n, E, C).transpose(0, 1)

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
