"""Every topic the node would publish for a validated configuration, and its message type, without building
anything (no torch, no warp, no robot description): for listings such as ``tactile-sim check CONFIG`` and to refuse
two outputs on one topic before the suite is built; and the check that the ROS interface packages of those types
are installed (under rclpy).

Per sensor ``~/<name>`` (its message type by sensor type, :data:`SENSOR_MESSAGE`), ``~/<name>/ground_truth`` when
ground truth is published (not for ContactSensor), a ContactSensor's ``~/<name>/<body>/wrench`` per sensed body,
then the sensor's output profiles (``outputs:``, :mod:`tactile_sim.config.outputs`), then the node's markers and
diagnostics.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config.errors import config_error
from ..config.outputs import output_topic
from ..errors import ConfigError
from ..io.encode import DIAGNOSTIC_ARRAY, JOINT_STATE, LINK_CONTACT, TAXEL_ARRAY, THERMAL_GRID, WRENCH_STAMPED
from ..io.markers import MARKER_ARRAY
from .node_params import TOPIC_TOKEN

SENSOR_MESSAGE = {
    **dict.fromkeys(("ContactProbe", "ContactDepthProbe", "KinematicTaxel", "ElastomerTaxel", "ProximityTaxel",
                     "SurfaceDistanceProbe"), TAXEL_ARRAY),
    "TemperatureGrid": THERMAL_GRID,
    "JointTorque": JOINT_STATE,
    "ContactSensor": LINK_CONTACT,
}
"""Sensor type → message type of its ``~/<name>`` topic."""

PROFILE_MESSAGE = {"pointcloud": "sensor_msgs/msg/PointCloud2", "wrench": WRENCH_STAMPED,
                   "tactile_state": "tactile_msgs/msg/TactileState"}
"""Output profile → its message type."""

MARKERS_TOPIC = "~/markers"
RESERVED_NAMES = ("markers",)
"""Sensor names that would clash with the node's own topics."""
DIAGNOSTICS_TOPIC = "/diagnostics"
BODY = "<body>"
"""Stands for a ContactSensor's body names where they are not given (they come from the robot description)."""


@dataclass(frozen=True)
class Entry:
    """One topic a sensor or the node publishes: ``where`` locates an output entry (None: the node's own topics);
    ``shared``: (update period s, channel name) of a ``tactile_state`` output, which may share its topic with the
    ``tactile_state`` outputs of other sensors of the same period."""

    topic: str
    message_type: str
    where: str | None = None
    shared: tuple[float, str] | None = None


def published_topics(config: Any, *, ground_truth: bool = False, markers: bool = True,
                     contact_bodies: Mapping[str, Sequence[str]] | None = None) -> list[tuple[str, str]]:
    """(topic, message type) of every topic the node publishes for ``config`` (a validated
    :class:`~tactile_sim.config.schema.SuiteConfig`), once each, in publishing order; topics under the node start
    with ``~/``. ground_truth / markers: the node parameters ``publish_ground_truth`` and ``viz_rate > 0``;
    contact_bodies: ContactSensor name → its body names (else one ``~/<name>/<body>/wrench`` entry stands for them).

    Raises ConfigError (``file:sensors[i].name``) for a sensor name that is not a topic token (or is one of
    :data:`RESERVED_NAMES`), and (``file:sensors[i].outputs[j].<option>``) when an output's topic is already
    published (other than ``tactile_state`` outputs of one period sharing a topic with distinct channel names)."""
    entries: list[Entry] = []
    for i, s in enumerate(config.sensors):
        where = s.where or f"{config.source}:sensors[{i}]"
        if not TOPIC_TOKEN.fullmatch(s.name) or s.name in RESERVED_NAMES:
            raise ConfigError(f"{where}.name: the node publishes each sensor on ~/<name>; got {s.name!r}; allowed: "
                              f"letters, digits and '_', not starting with a digit, other than "
                              f"{', '.join(RESERVED_NAMES)}")
        entries += sensor_entries(s, where, ground_truth=ground_truth, bodies=(contact_bodies or {}).get(s.name))
    if markers:
        entries.append(Entry(MARKERS_TOPIC, MARKER_ARRAY))
    entries.append(Entry(DIAGNOSTICS_TOPIC, DIAGNOSTIC_ARRAY))
    _check_unique(entries)
    return list(dict.fromkeys((e.topic, e.message_type) for e in entries))


def sensor_entries(sensor: Any, where: str, *, ground_truth: bool = False,
                   bodies: Sequence[str] | None = None) -> list[Entry]:
    """The topics one sensor publishes, in publishing order: ``~/<name>``, its ground truth when published (not for
    ContactSensor), a ContactSensor's ``~/<name>/<body>/wrench`` per body (``bodies``; else one ``<body>`` entry
    stands for them), then its output profiles (located at ``where``.outputs[j])."""
    s = sensor
    entries = [Entry(f"~/{s.name}", SENSOR_MESSAGE[s.type])]
    if ground_truth and s.type != "ContactSensor":
        entries.append(Entry(f"~/{s.name}/ground_truth", SENSOR_MESSAGE[s.type]))
    if s.type == "ContactSensor":
        entries += [Entry(f"~/{s.name}/{body}/wrench", WRENCH_STAMPED) for body in (bodies or [BODY])]
    for j, o in enumerate(getattr(s, "outputs", ())):
        shared = (s.update_period, o.channel_name or s.name) if o.profile == "tactile_state" else None
        entries.append(Entry(output_topic(s.name, o), PROFILE_MESSAGE[o.profile], f"{where}.outputs[{j}]", shared))
    return entries


def _check_unique(entries: list[Entry]) -> None:
    """Raise at the first output entry whose topic the node's own topics or an earlier output already use, unless
    both share it (sensor names are unique tokens, so only outputs can collide)."""
    taken = {e.topic: e for e in entries if e.where is None}
    for e in entries:
        if e.where is None:
            continue
        first = taken.setdefault(e.topic, e)
        if first is e:
            continue
        if first.shared is None or e.shared is None:
            raise config_error(e.where, "topic", "topic already published", e.topic,
                               "a topic the node does not publish otherwise (used by "
                               f"{first.where or 'the node itself'}); only tactile_state outputs share a topic")
        if first.shared[0] != e.shared[0]:
            raise config_error(e.where, "topic", "tactile_state outputs on one topic need one update_period",
                               e.topic, f"a sensor with update_period {first.shared[0]!r} s (as {first.where}), or "
                               "another topic")
        names = [x.shared[1] for x in entries[:entries.index(e)] if x.topic == e.topic and x.shared]
        if e.shared[1] in names:
            raise config_error(e.where, "channel_name", "channel name used twice on one tactile_state topic",
                               e.shared[1], f"a name other than {', '.join(repr(n) for n in names)}")


def check_interface_packages(topics: Sequence[tuple[str, str]],
                             find: Callable[[str], Any] = importlib.util.find_spec) -> None:
    """Raise ConfigError naming every ROS interface package that the (topic, message type) pairs need and that
    cannot be imported (``find(package)`` is None): under rclpy a vendor's messages are published with the
    vendor's own package (the one a stack written for the real skin is built with)."""
    missing: dict[str, list[str]] = {}
    for topic, message_type in topics:
        package = message_type.split("/")[0]
        if find(package) is None:
            missing.setdefault(package, []).append(f"{topic} ({message_type})")
    if missing:
        raise ConfigError("; ".join(
            f"the ROS 2 interface package {package!r} is not installed; it is needed for {', '.join(uses)}; "
            f"allowed: install {package} (as for the real driver) and source its workspace, or remove these outputs"
            for package, uses in missing.items()))
