"""The per-step snapshot of the world that every sensor reads."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class WorldState:
    """Poses and twists of every body (robot links, then declared objects, in scene order) for one step.

    All tensors live on the suite's device and dtype; E = number of envs (1 for an unbatched scene), B = bodies.

    t: sample time of the poses, s (float64 host scalar).
    rot: [E, B, 3, 3] body → world rotation R_B; pos: [E, B, 3] body origin o_B in W, m.
    lin_vel: [E, B, 3] velocity of the body origin in W, m/s; ang_vel: [E, B, 3] angular velocity in W, rad/s.
    joint_pos / joint_vel / joint_acc: [E, n_dof] movable joints of the robot in URDF order (rad or m, /s, /s²),
        or None where unknown (joint_acc is only set when a caller supplies accelerations).
    joint_vel_measured: True when joint_vel came with the joint sample (message / caller), False when it is the
        world model's backward-difference estimate (JointTorque docs/models/joint_torque.md#velocity tells the two
        apart).
    joint_stamp: stamp of the joint sample the joint tensors belong to, s (None: no joint sample yet, or the state
        was built without one; then ``t``). A held sample keeps its stamp.
    """

    t: float
    rot: torch.Tensor
    pos: torch.Tensor
    lin_vel: torch.Tensor
    ang_vel: torch.Tensor
    joint_pos: torch.Tensor | None = None
    joint_vel: torch.Tensor | None = None
    joint_acc: torch.Tensor | None = None
    joint_vel_measured: bool = True
    joint_stamp: float | None = None

    @property
    def n_envs(self) -> int:
        return self.pos.shape[0]

    @property
    def n_bodies(self) -> int:
        return self.pos.shape[1]

    def point_velocity(self, body: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Velocity of the material point of body ``body`` at world point ``x``: v_B + ω_B × (x − o_B).

        body: [E, P] long body indices (values ≥ 0); x: [E, P, 3] m → [E, P, 3] m/s.
        """
        idx = body[..., None].expand(body.shape + (3,))
        v = torch.gather(self.lin_vel, 1, idx)
        w = torch.gather(self.ang_vel, 1, idx)
        o = torch.gather(self.pos, 1, idx)
        return v + torch.cross(w, x - o, dim=-1)
