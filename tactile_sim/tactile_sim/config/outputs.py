"""Output profiles of a taxel sensor (the YAML ``outputs:`` list): further messages the node publishes from the same
evaluation as the sensor's TaxelArray, shaped like what other drivers and tools publish, so that a stack written
for them runs on the simulator unchanged.

Each entry is a mapping selected by its ``profile:``; the sensor type decides which profiles and channels it can
have (:data:`POINTCLOUD_CHANNELS`, :data:`WRENCH_SENSORS`)::

    outputs:
      - {profile: pointcloud, topic: ~/pad/points, channels: [force_normal, force_z]}
      - {profile: wrench, topic: /ft_sensor/wrench, point: [0.0, 0.0, 0.01]}
      - {profile: tactile_state, value: force_normal, raw: {rest: 255, gain: 100, saturation: 255, invert: true}}

Topics are ROS names: ``~/x`` (under the node) or ``/abs/x``; every one is remappable like the node's own topics.
No torch or warp here (the configuration is importable without them).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, Field

from .base import ConfigModel
from .errors import OptionProblem
from .fields import Name, PosInt, Vec3

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
                       "displacement_z": "marker displacement z, link frame",
                       "indentation": "-(d . n): the displacement into the gel along the taxel normal"},
    "SurfaceDistanceProbe": {"distance": "distance to the nearest tracked surface, m",
                             "proximity": "range cap - distance, m (0: nothing within the cap)"},
}
"""Taxel sensor type → the per-taxel values (float32) its outputs can carry: the fields of a ``pointcloud`` after
x, y, z, the ``value`` of a ``tactile_state`` (name → meaning)."""
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


TACTILE_STATE_DEFAULT = {"ContactProbe": "contact", "ContactDepthProbe": "depth", "KinematicTaxel": "force_normal",
                         "ProximityTaxel": "force_normal", "ElastomerTaxel": "indentation",
                         "SurfaceDistanceProbe": "proximity"}
"""Sensor type → the default ``value`` of its ``tactile_state`` output."""

TACTILE_STATE_TOPIC = "/tactile_states"
"""Default topic of ``tactile_state`` (the topic tactile_toolbox's state publisher merges its sources into)."""


class RawCounts(ConfigModel):
    """Counts as a real skin's ADC reports them, from a value v: rest + gain·v (``invert``: rest − gain·v), rounded
    to the nearest integer and clamped to [0, saturation]. rest: counts at v = 0; gain: counts per unit of v."""

    rest: float = 0.0
    gain: float = 1.0
    saturation: PosInt = 255
    invert: bool = False


class TactileStateOutput(ConfigModel):
    """``tactile_msgs/TactileState``: one ``sensor_msgs/ChannelFloat32`` (``channel_name``, default the sensor
    name; one value per taxel in layout order) per sensor on the topic; sensors with ``tactile_state`` outputs on
    one topic share one message. ``value``: a name of :data:`POINTCLOUD_CHANNELS` (default
    :data:`TACTILE_STATE_DEFAULT`); ``raw``: optional count encoding (:class:`RawCounts`)."""

    profile: Literal["tactile_state"]
    topic: TopicName | None = None
    value: str | None = None
    channel_name: Name | None = None
    raw: RawCounts | None = None


OUTPUT_MODELS = (PointCloudOutput, WrenchOutput, TactileStateOutput)
OutputProfile = Annotated[Union[OUTPUT_MODELS], Field(discriminator="profile")]
"""One entry of a sensor's ``outputs:``, selected by its ``profile:``."""

DEFAULT_SUFFIX = {"pointcloud": "points", "wrench": "wrench"}
"""Profile → default topic ``~/<sensor>/<suffix>``."""


def output_topic(sensor: str, output: Any) -> str:
    """The topic of ``output`` (one of a sensor's ``outputs``): its ``topic`` or the profile's default."""
    if output.topic:
        return output.topic
    return TACTILE_STATE_TOPIC if output.profile == "tactile_state" else f"~/{sensor}/{DEFAULT_SUFFIX[output.profile]}"


def check_outputs(sensor_type: str, outputs: list[Any]) -> None:
    """Raise OptionProblem (at ``outputs[j].<option>``) for a profile or value the sensor type cannot have."""
    allowed = list(POINTCLOUD_CHANNELS[sensor_type])
    for j, out in enumerate(outputs):
        if out.profile == "wrench" and sensor_type not in WRENCH_SENSORS:
            raise OptionProblem(f"{sensor_type} has no force channel to sum", out.profile,
                                f"pointcloud or tactile_state (wrench needs one of {', '.join(WRENCH_SENSORS)})",
                                f"outputs[{j}].profile")
        if out.profile == "tactile_state" and out.value is not None and out.value not in allowed:
            raise OptionProblem(f"not a value of {sensor_type}", out.value, ", ".join(allowed), f"outputs[{j}].value")
        if out.profile == "pointcloud" and out.channels is not None:
            bad = [c for c in out.channels if c not in allowed]
            if bad or not out.channels or len(set(out.channels)) != len(out.channels):
                raise OptionProblem(f"not channels of {sensor_type}" if bad else "empty or repeated channels",
                                    out.channels, f"distinct names among {', '.join(allowed)}",
                                    f"outputs[{j}].channels")


def tactile_state_value(sensor_type: str, output: Any) -> str:
    """The value a ``tactile_state`` output carries: its ``value`` or the sensor type's default."""
    return output.value or TACTILE_STATE_DEFAULT[sensor_type]
