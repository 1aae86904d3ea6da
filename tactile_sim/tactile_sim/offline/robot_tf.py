"""Link transforms of a URDF robot from joint positions, as ``robot_state_publisher`` publishes them.

One transform per joint: the child link's pose in the parent link's frame (``x_parent = R x_child + t``). Fixed
joints give the static set (``/tf_static``), movable joints the per-sample set (``/tf``); mimic joints follow their
source joint. The demo writes them so that a viewer (Foxglove, rviz) can place the sensor frames of its bag.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..geometry.transforms import matrix_to_quat
from ..world.urdf import JointType, RobotModel
from ..ros.inputs import TransformSample


def quaternion_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a ⊗ b of quaternions (x, y, z, w): the rotation b, then a."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz])


def axis_quaternion(axis: np.ndarray, angle: float) -> np.ndarray:
    """Quaternion (x, y, z, w) of a rotation by ``angle`` rad about the unit ``axis`` (3,)."""
    return np.append(np.asarray(axis, dtype=np.float64) * math.sin(0.5 * angle), math.cos(0.5 * angle))


def _quaternion(rot: np.ndarray) -> np.ndarray:
    return matrix_to_quat(torch.as_tensor(rot, dtype=torch.float64)).numpy()


class RobotTransforms:
    """The joints of ``robot`` as TF edges (parent link → child link); ``actuated`` joint positions (rad or m) are in
    ``robot.actuated_joint_names`` order."""

    def __init__(self, robot: RobotModel):
        self.robot = robot
        self._movable = [robot.joint(name) for name in robot.movable_joint_names]
        self._movable_quat = [_quaternion(j.rot) for j in self._movable]
        self._fixed = [j for j in robot.joints if j.type is JointType.FIXED]

    def static_transforms(self, stamp: float) -> list[TransformSample]:
        """The fixed joints' transforms, stamped ``stamp`` s."""
        return [TransformSample(j.parent, j.child, stamp, j.pos.copy(), _quaternion(j.rot)) for j in self._fixed]

    def transforms(self, actuated: np.ndarray, stamp: float) -> list[TransformSample]:
        """The movable joints' transforms at the actuated joint positions ``actuated`` (n_act,), stamped ``stamp``."""
        robot = self.robot
        q_movable = robot.movable_multiplier * np.asarray(actuated, dtype=np.float64)[robot.movable_source] \
            + robot.movable_offset
        out = []
        for joint, quat, q in zip(self._movable, self._movable_quat, q_movable):
            if joint.type is JointType.PRISMATIC:
                trans = joint.pos + joint.rot @ (joint.axis * q)
            else:
                quat, trans = quaternion_product(quat, axis_quaternion(joint.axis, float(q))), joint.pos.copy()
            out.append(TransformSample(joint.parent, joint.child, stamp, np.asarray(trans, dtype=np.float64), quat))
        return out
