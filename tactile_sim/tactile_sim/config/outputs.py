"""Output profiles of a taxel sensor (the YAML ``outputs:`` list): further messages the node publishes from the same
evaluation as the sensor's TaxelArray, shaped like what other drivers and tools publish, so that a stack written
for them runs on the simulator unchanged.

Each entry is a mapping selected by its ``profile:``; the sensor type decides which profiles and channels it can
have (:data:`POINTCLOUD_CHANNELS`, :data:`WRENCH_SENSORS`)::

    outputs:
      - {profile: pointcloud, topic: ~/pad/points, channels: [force_normal, force_z]}
      - {profile: wrench, topic: /ft_sensor/wrench, point: [0.0, 0.0, 0.01]}

Topics are ROS names: ``~/x`` (under the node) or ``/abs/x``; every one is remappable like the node's own topics. No torch or warp here (the configuration is importable without them).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, Field

from .base import ConfigModel
from .errors import OptionProblem
from .fields import Vec3

TOPIC_ALLOWED = ("a ROS topic name '~/a/b' (under the node) or '/a/b' (absolute); tokens of letters, digits and '_', "
                 "not starting with a digit")
_TOPIC = re.compile(r"(~/|/)[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*")


def _topic(value: str) -> str:
    if not _TOPIC.fullmatch(value):
        raise OptionProblem("not a topic name", value, TOPIC_ALLOWED)
    return value


TopicName = Annotated[str, AfterValidator(_topic)]

POINTCLOUD_CHANNELS: dict[str, dict[str, str]] = {
    "ContactProbe": {"contact": "contact flag, 0 or 1"},
    "ContactDepthProbe": {"depth": "overlap depth, m"},
    "KinematicTaxel": {"force_x": "force x, N, link frame", "force_y": "force y, N, link frame",
                       "force_z": "force z, N, link frame",
                       "force_normal": "pressing force -(f . n), N (positive when the body presses on the taxel)",
                       "force_magnitude": "|f|, N"},
    "ElastomerTaxel": {"displacement_x": "marker displacement x, link frame",
                       "displacement_y": "marker displacement y, link frame",
                       "displacement_z": "marker displacement z, link frame"},
    "SurfaceDistanceProbe": {"distance": "distance to the nearest tracked surface, m"},
}
"""Taxel sensor type → the float32 fields a ``pointcloud`` output may carry after x, y, z (name → meaning)."""
POINTCLOUD_CHANNELS["ProximityTaxel"] = POINTCLOUD_CHANNELS["KinematicTaxel"]

WRENCH_SENSORS = ("KinematicTaxel", "ProximityTaxel")
"""Sensor types with a force channel: the ones a ``wrench`` output can sum."""


class PointCloudOutput(ConfigModel):
    """``sensor_msgs/PointCloud2`` of the taxels: x, y, z (m, link frame) then one float32 field per channel.
    ``topic`` default ``~/<sensor>/points``; ``channels`` default: every channel of the sensor type."""

    profile: Literal["pointcloud"]
    topic: TopicName | None = None
    channels: list[str] | None = None


class WrenchOutput(ConfigModel):
    """``geometry_msgs/WrenchStamped`` of the sum of the taxel forces (N) and their torque about ``point`` (m,
    link frame; N·m), in the link frame. ``topic`` default ``~/<sensor>/wrench``."""

    profile: Literal["wrench"]
    topic: TopicName | None = None
    point: Vec3 = (0.0, 0.0, 0.0)


OUTPUT_MODELS = (PointCloudOutput, WrenchOutput)
OutputProfile = Annotated[Union[OUTPUT_MODELS], Field(discriminator="profile")]
"""One entry of a sensor's ``outputs:``, selected by its ``profile:``."""

DEFAULT_SUFFIX = {"pointcloud": "points", "wrench": "wrench"}
"""Profile → default topic ``~/<sensor>/<suffix>``."""


def output_topic(sensor: str, output: Any) -> str:
    """The topic of ``output`` (one of a sensor's ``outputs``): its ``topic`` or the profile's default."""
    return output.topic or f"~/{sensor}/{DEFAULT_SUFFIX[output.profile]}"


def check_outputs(sensor_type: str, outputs: list[Any]) -> None:
    """Raise OptionProblem (at ``outputs[j].<option>``) for a profile or channel the sensor type cannot have."""
    for j, out in enumerate(outputs):
        if out.profile == "wrench" and sensor_type not in WRENCH_SENSORS:
            raise OptionProblem(f"{sensor_type} has no force channel to sum", out.profile,
                                f"pointcloud (wrench needs one of {', '.join(WRENCH_SENSORS)})",
                                f"outputs[{j}].profile")
        if out.profile == "pointcloud":
            allowed = list(POINTCLOUD_CHANNELS[sensor_type])
            if out.channels is not None:
                bad = [c for c in out.channels if c not in allowed]
                if bad or not out.channels or len(set(out.channels)) != len(out.channels):
                    raise OptionProblem(f"not channels of {sensor_type}" if bad else "empty or repeated channels",
                                        out.channels, f"distinct names among {', '.join(allowed)}",
                                        f"outputs[{j}].channels")
