"""The joints a JointTorque sensor reads (``joints`` names, ``dofs_idx_local`` indices, or every movable joint),
selected from a robot's joints by name and type only: the build selects them so from its robot model, and
``tactile-sim check`` from the URDF's joint elements, without building the robot."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import option_error


def selected_joints(options, where: str, joint_names: Sequence[str], movable: Sequence[str]) -> list[int]:
    """Indices into ``movable`` (the robot's movable joints, in URDF order) of the joints a JointTorque's
    ``options`` select, or the ConfigError (``where``: the sensor's location) of a selection that names a fixed or
    unknown joint, an index out of range, or a robot without movable joints (``joint_names``: all its joints)."""
    movable = list(movable)
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
