"""Shared helpers of the node tests: the demo configuration, input messages (rosbags classes, as rclpy delivers the
same fields) and the closed-form contact geometry of the demo gripper's pads on the can."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import yaml

from tactile_sim.config import load_config
from tactile_sim.demo_trajectory import JOINT_NAMES
from tactile_sim.io.msg_types import new_message
from tactile_sim.io.stamps import time_msg
from tactile_sim.ros.inputs import TransformSample
from tactile_sim.ros.node_core import NodeCore
from tactile_sim.ros.node_params import NodeParams

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
DEMO_YAML = PACKAGE_ROOT / "config" / "demo_sensors.yaml"

CAN_RADIUS = 0.02
"""The demo can: a vertical cylinder of this radius about the world z axis, m."""
FINGERTIP_HEIGHT = 0.05
"""Height of the fingertip frames above the palm frame (URDF), m."""


def demo_dict() -> dict:
    """The demo configuration as a mapping (edit it, then :func:`config_of`)."""
    return yaml.safe_load(DEMO_YAML.read_text())


def config_of(data: dict):
    """Validated configuration of a mapping; relative paths resolve against the demo's folder."""
    return load_config(data, base_dir=DEMO_YAML.parent)


def sensors_only(data: dict, names: set[str]) -> dict:
    """The mapping with only the named sensors."""
    return {**data, "sensors": [s for s in data["sensors"] if s["name"] in names]}


class LogRecorder:
    """A log sink that keeps (level, text) pairs."""

    def __init__(self):
        self.lines: list[tuple[str, str]] = []

    def __call__(self, level: str, text: str) -> None:
        self.lines.append((level, text))

    def matching(self, fragment: str) -> list[tuple[str, str]]:
        return [(lv, t) for lv, t in self.lines if fragment in t]


def world_to_base(stamp: float = 0.0) -> list[TransformSample]:
    """The identity transform world → base_link (the demo's static TF)."""
    return [TransformSample("world", "base_link", stamp, np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]))]


def demo_core(data: dict | None = None, log=None, clock=None, **params) -> NodeCore:
    """A core on the demo (or an edited) configuration with the static world → base_link transform stored."""
    kwargs = {"log": log} if clock is None else {"log": log, "clock": clock}
    core = NodeCore(config_of(data or demo_dict()), NodeParams(**params), **kwargs)
    core.on_tf(world_to_base(), static=True)
    return core


def joint_state_msg(position, velocity=None, names=JOINT_NAMES, stamp: float = 0.0):
    """A ``sensor_msgs/JointState`` (rosbags object)."""
    head = new_message("std_msgs/msg/Header", stamp=time_msg(stamp))
    return new_message("sensor_msgs/msg/JointState", header=head, name=list(names), position=np.asarray(position),
                       velocity=np.zeros(0) if velocity is None else np.asarray(velocity))


def tf_msg(*transforms):
    """A ``tf2_msgs/TFMessage`` of (parent, child, xyz, quat (x, y, z, w), stamp) tuples (rosbags object)."""
    items = []
    for parent, child, xyz, quat, stamp in transforms:
        head = new_message("std_msgs/msg/Header", stamp=time_msg(stamp), frame_id=parent)
        tr = new_message("geometry_msgs/msg/Transform",
                         translation=new_message("geometry_msgs/msg/Vector3", x=xyz[0], y=xyz[1], z=xyz[2]),
                         rotation=new_message("geometry_msgs/msg/Quaternion", x=quat[0], y=quat[1], z=quat[2],
                                              w=quat[3]))
        items.append(new_message("geometry_msgs/msg/TransformStamped", header=head, child_frame_id=child,
                                 transform=tr))
    return new_message("tf2_msgs/msg/TFMessage", transforms=items)


def by_topic(outputs) -> dict[str, list]:
    """Outputs of one update grouped by topic."""
    grouped = defaultdict(list)
    for topic, msg in outputs:
        grouped[topic].append(msg)
    return dict(grouped)


def ns(t: float) -> int:
    """Nanoseconds of t seconds (test times are exact multiples of 1 ms)."""
    return int(round(t * 1e9))


def pad_contact_truth(msg, joint_pos) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form overlap geometry of a demo pad's taxels with the can, from the TaxelArray's own layout.

    The fingertip frames are translations of the world frame (all demo joints are prismatic, the base sits at the
    world origin): fingertip_left at (slide, q_left, 0.05), fingertip_right at (slide, −q_right, 0.05). The can's
    signed distance at a taxel centre p_w is ‖(p_w.x, p_w.y)‖ − r (its height covers the pads). Returns
    (sd (n,) m, outward can normal at the nearest point (n, 3)), both in the link frame (= world orientation).
    """
    slide, q_left, q_right = joint_pos
    origin = {"fingertip_left": (slide, q_left, FINGERTIP_HEIGHT),
              "fingertip_right": (slide, -q_right, FINGERTIP_HEIGHT)}[msg.header.frame_id]
    p = np.asarray(msg.positions, dtype=np.float64).reshape(-1, 3) + np.asarray(origin)
    rho = np.hypot(p[:, 0], p[:, 1])
    normal = np.stack([p[:, 0] / rho, p[:, 1] / rho, np.zeros_like(rho)], axis=1)
    return rho - CAN_RADIUS, normal
