"""Messages of the node's inputs (rosbags objects): the inverse of :mod:`tactile_sim.ros.inputs`' decoders.

The demo writes its trajectory with these (``sensor_msgs/JointState``, ``tf2_msgs/TFMessage``, ``std_msgs/String``
for ``/robot_description``); stamps are integer nanoseconds so that they survive the bag exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..io.msg_types import new_message
from ..io.stamps import time_msg_from_ns
from ..ros.inputs import TransformSample

JOINT_STATE = "sensor_msgs/msg/JointState"
TF_MESSAGE = "tf2_msgs/msg/TFMessage"
STRING = "std_msgs/msg/String"


def joint_state_message(stamp_ns: int, names: Sequence[str], position: np.ndarray,
                        velocity: np.ndarray | None = None) -> Any:
    """``sensor_msgs/JointState``: positions (n,) rad or m, velocities (n,) rad/s or m/s or None (left empty)."""
    head = new_message("std_msgs/msg/Header", stamp=time_msg_from_ns(stamp_ns))
    return new_message(JOINT_STATE, header=head, name=list(names), position=np.asarray(position, np.float64),
                       velocity=np.zeros(0) if velocity is None else np.asarray(velocity, np.float64))


def tf_message(transforms: Sequence[TransformSample], stamp_ns: int) -> Any:
    """``tf2_msgs/TFMessage`` of the transforms, every one stamped ``stamp_ns`` (their own stamps are not used)."""
    stamp = time_msg_from_ns(stamp_ns)
    items = []
    for tr in transforms:
        x, y, z = (float(v) for v in tr.translation)
        qx, qy, qz, qw = (float(v) for v in tr.rotation)
        items.append(new_message(
            "geometry_msgs/msg/TransformStamped",
            header=new_message("std_msgs/msg/Header", stamp=stamp, frame_id=tr.parent),
            child_frame_id=tr.child,
            transform=new_message(
                "geometry_msgs/msg/Transform",
                translation=new_message("geometry_msgs/msg/Vector3", x=x, y=y, z=z),
                rotation=new_message("geometry_msgs/msg/Quaternion", x=qx, y=qy, z=qz, w=qw))))
    return new_message(TF_MESSAGE, transforms=items)


def string_message(text: str) -> Any:
    """``std_msgs/String`` (the latched ``/robot_description``)."""
    return new_message(STRING, data=text)
