"""The joints a JointTorque sensor reads (``joints`` names, ``dofs_idx_local`` indices, or every movable joint),
selected from a robot's joints by name and type only, with its ``robot`` and ``armature`` options checked against
them: the build selects them so from its robot model, and ``tactile-sim check`` from the URDF's elements, without
building the robot."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..errors import option_error


class RobotJoints(NamedTuple):
    """A robot's name and its joints' names: all (``joint_names``) and the movable ones (URDF order)."""

    name: str
    joint_names: Sequence[str]
    movable: Sequence[str]


def selected_joints(options, where: str, robot: RobotJoints) -> list[int]:
    """Indices into ``robot.movable`` of the joints a JointTorque's ``options`` select, or the ConfigError (``where``:
    the sensor's location) of a ``robot`` option naming another robot, an ``armature`` entry naming no movable joint,
    a selection that names a fixed or unknown joint, an index out of range, or a robot without movable joints."""
    if options.robot is not None and options.robot != robot.name:
        raise option_error(where, "robot", "unknown robot", options.robot, f"{robot.name!r} (the only robot)")
    movable, joint_names = list(robot.movable), robot.joint_names
    for name in options.armature:
        if name not in movable:
            raise option_error(where, f"armature.{name}", "not a movable joint", name,
                               f"names of movable joints: {movable}")
    if not movable:
        raise option_error(where, "joints", "empty joint selection: the robot has no movable joints", [],
                           "a robot with revolute, continuous or prismatic joints")
    if options.joints is not None:
        sel = []
        for name in options.joints:
            if name in movable:
                sel.append(movable.index(name))
            elif name in joint_names:
                raise option_error(where, "joints", f"joint {name!r} is fixed", name, f"movable joints: {movable}")
            else:
                raise option_error(where, "joints", "unknown joint", name, f"movable joints: {movable}")
        return sel
    if options.dofs_idx_local is not None:
        for i in options.dofs_idx_local:
            if i >= len(movable):
                raise option_error(where, "dofs_idx_local", "index out of range", i,
                                   f"0 <= index < {len(movable)} (movable joints {movable})")
        return list(options.dofs_idx_local)
    return list(range(len(movable)))
