"""Env e of a world model of N envs, taking its inputs on a clock of its own: a :class:`LaneWorldModel`.

Batched replay (:mod:`..offline.batch_replay`) poses N recordings, each at its own time, as the N envs of one
:class:`~.motion.WorldModel` (the batch). Each recording's inputs go to a lane: a one-env world model whose buffers
(held joints, the joint samples the kernel keeps, root and object poses, the staged joint inputs, the kernel's
per-env sample arguments and sampled twists) are env e of the batch's, and whose :meth:`LaneWorldModel.update` does
everything a lone model's update does but the launch. Once every lane has taken its inputs, one launch of the batch
(:meth:`~.motion.WorldModel.update_envs`) steps all envs, each with its own sample, Δt and twists: env e's state is
bit for bit the state the lone one-env model would return.

A lane has its own TF buffer, time, joint stamps and pose history (the host side of a lone model, unchanged).
Caller object poses and twists and joint accelerations are not taken (the batch's launch does not see them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

import torch

from .motion import Pose, WorldModel
from .tf_buffer import TFBuffer

_ENV_BUFFERS = ("_q", "_qd", "_q_prev", "_sample_ok", "_root_rot", "_root_pos", "_obj_rot", "_obj_pos")
"""The world model buffers a lane shares with its batch (env e of each)."""


class LaneSample(NamedTuple):
    """What a lane's update took: time t (s), the stamp of its joint sample (s; None: no sample yet) and whether its
    joint velocities were measured (:class:`~.state.WorldState`'s fields of the same names)."""

    t: float
    joint_stamp: float | None
    joint_vel_measured: bool


class LaneWorldModel(WorldModel):
    """Env ``env`` of ``batch`` (see the module docstring), posed by the TF buffer ``tf`` (the root link by TF when
    the batch's is). root_pose, check_finite: as :class:`~.motion.WorldModel`'s. A new lane starts its env afresh
    (zero joints, no samples, the root and object poses of a new model)."""

    def __init__(self, batch: WorldModel, env: int, *, tf: TFBuffer | None = None, root_pose: Pose | None = None,
                 check_finite: bool = True):
        if not 0 <= env < batch.n_envs:
            raise ValueError(f"LaneWorldModel: env must be in [0, {batch.n_envs}); got {env}")
        self.batch, self.env = batch, env
        super().__init__(batch.scene, device=batch.device, dtype=batch.dtype, world_frame=batch.world_frame, tf=tf,
                         root_pose=root_pose, root_from_tf=batch.root_from_tf, check_finite=check_finite)
        rows = slice(env, env + 1)
        for name in _ENV_BUFFERS:
            setattr(self, name, getattr(batch, name)[rows].copy_(getattr(self, name)))
        self._staging = tuple(b[rows].copy_(s) for b, s in zip(batch._staging, self._staging))
        if self._staging_np is not None:
            self._staging_np = tuple(x.numpy() for x in self._staging)
            self._staging_flat = tuple(x.reshape(-1) for x in self._staging_np)
        self._twist_rows = tuple(x[rows].zero_() for x in batch._env_twists)
        self._twists_zero = True
        args = tuple(a[rows] for a in batch._env_args)
        self._arg_rows = tuple(a.numpy() for a in args) if self.device.type == "cpu" else args
        for i, value in enumerate(self._args):
            self._set_arg(i, value)

    def _robot_models(self, robot) -> tuple:
        """The batch's (the same robot, device and dtype; read only)."""
        return self.batch.kinematics, self.batch.dynamics

    def _record_launch(self) -> tuple[None, dict]:
        """No launch of its own: the batch launches."""
        return None, {}

    def update(self, t: float, joint_pos=None, joint_vel=None, joint_acc=None, root_pose: Pose | None = None,
               object_poses: Mapping[str, Pose] | None = None,
               object_twists: Mapping[str, Pose] | None = None) -> LaneSample:
        """Take the inputs of a step at time t (s) as :meth:`WorldModel.update` does, for the batch's next
        :meth:`~.motion.WorldModel.update_envs`; returns what was taken. joint_acc, object_poses and object_twists
        raise ValueError."""
        if joint_acc is not None or object_poses or object_twists:
            raise ValueError("LaneWorldModel.update: joint_acc, object_poses and object_twists are not taken by a lane "
                             "(the batch's launch does not see them); use a WorldModel of its own")
        self._take_inputs(t, joint_pos, joint_vel, None, root_pose, None, None)
        return LaneSample(self._t_last, None if math.isnan(self._j1) else self._j1, self._qd_measured)

    def _bind_twists(self, lin: torch.Tensor, ang: torch.Tensor) -> None:
        zero = lin is self._zero_twists and ang is self._zero_twists
        if not (zero and self._twists_zero):  # zero rows stay zero
            self._twist_rows[0].copy_(lin)
            self._twist_rows[1].copy_(ang)
            self._twists_zero = zero

    def _bind_joints(self, q: torch.Tensor, qd: torch.Tensor | None) -> None:
        for staged, x in ((self._staging[0], q), (self._staging[1], qd)):
            if x is not None and x is not staged:  # host inputs are staged in env e already
                staged.copy_(x)

    def _set_args(self, sample: int, velocity_given: int, dt: float):
        self._arg_rows[0][0] = sample  # always: the batch zeroes the sample of an env it holds
        super()._set_args(sample, velocity_given, dt)

    def _set_arg(self, i: int, value) -> None:
        """Env e's value of argument i of the batch's launch."""
        self._arg_rows[i][0] = value
