"""Every topic the node would publish for a validated configuration, and its message type, without building
anything (no torch, no warp, no robot description): for listings such as ``tactile-sim check CONFIG`` and to refuse
two outputs on one topic before the suite is built.

Per sensor ``~/<name>`` (its message type by sensor type, :data:`SENSOR_MESSAGE`), ``~/<name>/ground_truth`` when
ground truth is published (not for ContactSensor), a ContactSensor's ``~/<name>/<body>/wrench`` per sensed body,
then the sensor's output profiles (``outputs:``, :mod:`tactile_sim.config.outputs`), then the node's markers and
diagnostics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..config.errors import config_error
from ..config.outputs import output_topic
from ..io.encode import DIAGNOSTIC_ARRAY, JOINT_STATE, LINK_CONTACT, TAXEL_ARRAY, THERMAL_GRID, WRENCH_STAMPED
from ..io.markers import MARKER_ARRAY

SENSOR_MESSAGE = {
    **dict.fromkeys(("ContactProbe", "ContactDepthProbe", "KinematicTaxel", "ElastomerTaxel", "ProximityTaxel",
                     "SurfaceDistanceProbe"), TAXEL_ARRAY),
    "TemperatureGrid": THERMAL_GRID,
    "JointTorque": JOINT_STATE,
    "ContactSensor": LINK_CONTACT,
}
"""Sensor type → message type of its ``~/<name>`` topic."""

PROFILE_MESSAGE = {"pointcloud": "sensor_msgs/msg/PointCloud2", "wrench": WRENCH_STAMPED}
"""Output profile → its message type."""

MARKERS_TOPIC = "~/markers"
DIAGNOSTICS_TOPIC = "/diagnostics"
BODY = "<body>"
"""Stands for a ContactSensor's body names where they are not given (they come from the robot description)."""


def published_topics(config: Any, *, ground_truth: bool = False, markers: bool = True,
                     contact_bodies: Mapping[str, Sequence[str]] | None = None) -> list[tuple[str, str]]:
    """(topic, message type) of every topic the node publishes for ``config`` (a validated
    :class:`~tactile_sim.config.schema.SuiteConfig`), in publishing order; topics under the node start with
    ``~/``. ground_truth / markers: the node parameters ``publish_ground_truth`` and ``viz_rate > 0``;
    contact_bodies: ContactSensor name → its body names (else one ``~/<name>/<body>/wrench`` entry stands for them).

    Raises ConfigError (``file:sensors[i].outputs[j].topic``) when an output's topic is already published."""
    entries: list[tuple[str, str, str | None]] = []  # (topic, type, location of the output entry or None)
    for i, s in enumerate(config.sensors):
        where = s.where or f"{config.source}:sensors[{i}]"
        entries.append((f"~/{s.name}", SENSOR_MESSAGE[s.type], None))
        if ground_truth and s.type != "ContactSensor":
            entries.append((f"~/{s.name}/ground_truth", SENSOR_MESSAGE[s.type], None))
        if s.type == "ContactSensor":
            entries += [(f"~/{s.name}/{body}/wrench", WRENCH_STAMPED, None)
                        for body in (contact_bodies or {}).get(s.name, [BODY])]
        entries += [(output_topic(s.name, o), PROFILE_MESSAGE[o.profile], f"{where}.outputs[{j}]")
                    for j, o in enumerate(getattr(s, "outputs", ()))]
    if markers:
        entries.append((MARKERS_TOPIC, MARKER_ARRAY, None))
    entries.append((DIAGNOSTICS_TOPIC, DIAGNOSTIC_ARRAY, None))
    _check_unique(entries)
    return [(topic, message_type) for topic, message_type, _ in entries]


def _check_unique(entries: list[tuple[str, str, str | None]]) -> None:
    """Raise at the first output entry whose topic the node's own topics or an earlier output already use (sensor
    names are unique tokens, so only outputs can collide)."""
    taken = {topic: "the node's own topics" for topic, _, where in entries if where is None}
    for topic, _, where in entries:
        if where is None:
            continue
        if topic in taken:
            raise config_error(where, "topic", "topic already published", topic,
                               f"a topic the node does not publish otherwise (used by {taken[topic]})")
        taken[topic] = where
