"""Per-sensor message encoders of the node: a sensor's suite reads → its messages and its rviz markers.

One encoder per configured sensor, built once after the suite (static layout data is validated and encoded into a
template message then); each evaluation replaces only the header and the values. Sensor type → encoder class is the
table :data:`ENCODERS`:

| sensor type | topic ``~/<name>`` (and ``~/<name>/ground_truth``) | markers |
|---|---|---|
| ContactProbe, ContactDepthProbe, KinematicTaxel, ElastomerTaxel, ProximityTaxel, SurfaceDistanceProbe | ``tactile_sim_msgs/TaxelArray`` (channels: :data:`TAXEL_CHANNELS_OF`) | SPHERE_LIST coloured by magnitude; force arrows |
| TemperatureGrid | ``tactile_sim_msgs/ThermalGrid`` | CUBE_LIST on the sensor's temperature range |
| JointTorque | ``sensor_msgs/JointState`` (names, effort) | none |
| ContactSensor | ``tactile_sim_msgs/LinkContact`` per body, and ``geometry_msgs/WrenchStamped`` on ``~/<name>/<body>/wrench`` | force arrow per body |

ContactSensor has no imperfection pipeline (its reading is its ground truth), so it has no ground_truth topic.
The taxel sensors of one batch are read together (:class:`BatchReads`: one device-to-host copy per batch and
update); SurfaceDistanceProbe, TemperatureGrid, JointTorque and ContactSensor read through the suite. Colour scales are fixed per sensor (:func:`taxel_colour_scale`); a sensor with ``history_length`` > 0 publishes the
newest entry of its history.
"""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from ..io.encode import (
    JOINT_STATE,
    LINK_CONTACT,
    TAXEL_ARRAY,
    THERMAL_GRID,
    WRENCH_STAMPED,
    decode_link_contact,
    decode_taxel_array,
    decode_thermal_grid,
    encode_joint_torque,
    encode_link_contact,
    encode_taxel_array,
    encode_thermal_grid,
    encode_wrench_stamped,
)
from ..io.markers import default_sphere_diameter, link_contact_markers, taxel_markers, thermal_markers
from ..io.msg_types import message_class
from ..io.readings import (
    TAXEL_CHANNELS,
    AirTimes,
    JointTorqueReading,
    LinkContactReading,
    TaxelReading,
    ThermalReading,
    host,
)
from ..io.stamps import time_msg_to_seconds

Output = tuple[str, Any]
"""(topic relative to the node, e.g. ``~/pad``; rosbags message object)."""

def _itself(value: Any) -> Any:
    return value


TAXEL_CHANNELS_OF: dict[str, dict[str, Callable[[Any], Any]]] = {
    "ContactProbe": {"contact": _itself},
    "ContactDepthProbe": {"depth": _itself},
    "KinematicTaxel": {"force": lambda v: v.force, "torque": lambda v: v.torque},
    "ProximityTaxel": {"force": lambda v: v.force, "torque": lambda v: v.torque},
    "ElastomerTaxel": {"displacement": _itself},
    "SurfaceDistanceProbe": {"distance": _itself},
}
"""Taxel sensor type → the TaxelArray channels of its ``read()`` value (SurfaceDistanceProbe adds nearest_points)."""


@dataclass(frozen=True)
class MarkerSettings:
    """Marker options of the node: force_arrows (per-taxel arrows), max_force N (taxel force colour scale),
    max_link_force N (ContactSensor arrows), max_displacement m (ElastomerTaxel colour scale)."""

    force_arrows: bool = True
    max_force: float = 1.0
    max_link_force: float = 10.0
    max_displacement: float = 5e-4


class MessageTemplate:
    """A message whose fields are kept; :meth:`make` builds a new message of its type with some fields changed
    (the constructor with keywords, about 3x faster than ``dataclasses.replace`` — this runs per sensor and step)."""

    def __init__(self, msg: Any):
        self.cls = type(msg)
        self.fields = {f.name: getattr(msg, f.name) for f in dataclasses.fields(msg)}

    def make(self, **changes: Any) -> Any:
        return self.cls(**{**self.fields, **changes})


def newest(value: Any, has_history: bool) -> Any:
    """Drop the history axis (newest first) of a read value (tensor or named tuple of tensors)."""
    if not has_history:
        return value
    if isinstance(value, tuple):
        return type(value)(*(v[0] for v in value))
    return value[0]


def as_wire(value: Any, dtype: type) -> np.ndarray:
    """Host array of ``value`` flattened row-major and contiguous in the message dtype (no copy when it already is;
    a strided view, e.g. one channel of a reading, is copied: CDR serialisation needs contiguous arrays)."""
    return np.ascontiguousarray(np.asarray(host(value), dtype=dtype).reshape(-1))


class BatchReads:
    """One update's whole-batch reads (``MeasuredBranch.read_batch`` / ``read_ground_truth_batch`` of env 0) passed
    through the batch's own ``output`` and copied to the host once: one device-to-host copy and one ``output`` per
    batch and update instead of one suite read per sensor."""

    def __init__(self):
        self._cache: dict[tuple[int, bool], tuple[Any, np.ndarray]] = {}

    def get(self, batch: Any, ground_truth: bool) -> tuple[Any, np.ndarray]:
        """(the batch's output for all its probes — a host array, or a named tuple of them, probe axis first —,
        valid [S] per sensor). Copies: the branch buffers are overwritten by later evaluations."""
        key = (id(batch), ground_truth)
        if key not in self._cache:
            branch = batch.branch
            value, valid = branch.read_ground_truth_batch() if ground_truth else branch.read_batch()
            rows = value[0]
            out = batch.output(rows[:, 0] if rows.shape[1] == 1 else rows)
            copy = (lambda x: np.array(host(x), copy=True, order="C"))
            out = type(out)(*(copy(x) for x in out)) if isinstance(out, tuple) else copy(out)
            self._cache[key] = (out, np.array(host(valid[0]), copy=True))
        return self._cache[key]


class SensorEncoder:
    """Base of the encoders. suite: the built suite (one env, unbatched); batch / index: the sensor's batch and
    its position in it; world_frame: the node's world frame."""

    message_type: ClassVar[str] = ""
    has_ground_truth: ClassVar[bool] = True

    def __init__(self, suite, batch, index: int, world_frame: str):
        self.suite, self.batch, self.index = suite, batch, index
        self.name = batch.names[index]
        self.sensor_type = batch.sensor_type
        self.options = batch.options[index]
        self.world_frame = world_frame
        self.history = getattr(self.options, "history_length", 0) > 0
        self.topic = f"~/{self.name}"
        self.ground_truth_topic = f"{self.topic}/ground_truth"
        self.last: list[Any] = []

    def topics(self, ground_truth: bool) -> list[tuple[str, str]]:
        """(topic, message type) of every topic this sensor publishes on; ground_truth adds the GT topics."""
        out = [(self.topic, self.message_type)]
        if ground_truth and self.has_ground_truth:
            out.append((self.ground_truth_topic, self.message_type))
        return out

    def read(self, ground_truth: bool, reads: BatchReads) -> tuple[Any, bool]:
        """(value without env and history axes, valid) of the measured branch or the ground truth (through the
        suite's per-sensor reads; ``reads`` serves encoders that read whole batches)."""
        reader = self.suite.read_ground_truth if ground_truth else self.suite.read
        value, valid = reader(self.name, with_valid=True)
        valid = newest(valid, self.history)
        return newest(value, self.history), bool(valid)

    def encode(self, stamp: Any, ground_truth: bool, reads: BatchReads) -> list[Output]:
        """Messages of the latest evaluation (``stamp``: builtin_interfaces/Time) of one branch."""
        value, valid = self.read(ground_truth, reads)
        messages = self.messages(value, valid, stamp, ground_truth)
        if not ground_truth:
            self.last = [m for _, m in messages]
        return messages

    def messages(self, value: Any, valid: bool, stamp: Any, ground_truth: bool) -> list[Output]:
        raise NotImplementedError

    def markers(self, settings: MarkerSettings) -> list[Any]:
        """rviz markers of the last measured messages (empty before the first one)."""
        return []


def _header(frame_id: str, stamp: Any) -> Any:
    return message_class("std_msgs/msg/Header")(stamp=stamp, frame_id=frame_id)


def taxel_colour_scale(sensor_type: str, radius: np.ndarray, settings: MarkerSettings) -> tuple[str, float]:
    """(channel, value at the red end) of a taxel sensor's markers: contact 1; depth and distance the largest
    probe radius (m; the distance cap); forces ``settings.max_force`` N; displacement ``settings.max_displacement``
    m."""
    r_max = float(np.max(radius)) if np.max(radius) > 0 else 1.0
    if sensor_type == "ContactProbe":
        return "contact", 1.0
    if sensor_type == "ContactDepthProbe":
        return "depth", r_max
    if sensor_type == "SurfaceDistanceProbe":
        return "distance", r_max
    if sensor_type == "ElastomerTaxel":
        return "displacement", settings.max_displacement
    return "force", settings.max_force


class TaxelEncoder(SensorEncoder):
    """TaxelArray of a probe sensor; the layout (positions, normals, radii, grid rows/cols) lives in a template.
    Reads through the suite (see :class:`BatchTaxelEncoder` for the batch path)."""

    message_type = TAXEL_ARRAY

    def __init__(self, suite, batch, index, world_frame):
        super().__init__(suite, batch, index, world_frame)
        layout = suite.layouts[self.name]
        self.layout = layout
        rows, cols = layout.shape if layout.is_grid else (0, 0)
        channels = {name: np.zeros((layout.n, TAXEL_CHANNELS[name][1]) if TAXEL_CHANNELS[name][1] else layout.n,
                                   dtype=TAXEL_CHANNELS[name][0]) for name in self.channel_names()}
        reading = TaxelReading(self.name, self.sensor_type, self.options.link, 0.0, rows, cols, layout.positions,
                               layout.normals, layout.radius, channels,
                               world_frame_id=world_frame if "nearest_points" in channels else "")
        self.template = MessageTemplate(encode_taxel_array(reading))
        self.sphere_diameter = default_sphere_diameter(layout.flat_positions, layout.flat_radius)

    def channel_names(self) -> tuple[str, ...]:
        """The TaxelArray channels this sensor fills."""
        return tuple(TAXEL_CHANNELS_OF[self.sensor_type])


    def channels(self, value: Any, ground_truth: bool) -> dict[str, Any]:
        """Channel name → values (tensor, any device) of one read."""
        return {name: get(value) for name, get in TAXEL_CHANNELS_OF[self.sensor_type].items()}

    def messages(self, value, valid, stamp, ground_truth):
        arrays = {name: as_wire(v, TAXEL_CHANNELS[name][0]) for name, v in self.channels(value, ground_truth).items()}
        msg = self.template.make(header=_header(self.options.link, stamp), valid=valid, ground_truth=ground_truth,
                                 **arrays)
        return [(self.ground_truth_topic if ground_truth else self.topic, msg)]

    def markers(self, settings):
        if not self.last:
            return []
        channel, scale = taxel_colour_scale(self.sensor_type, self.layout.flat_radius, settings)
        return taxel_markers(decode_taxel_array(self.last[0]), max_value=scale, sphere_diameter=self.sphere_diameter,
                             channel=channel, force_arrows=settings.force_arrows)


class BatchTaxelEncoder(TaxelEncoder):
    """A taxel sensor read from its batch's whole read (:class:`BatchReads`): its probes' rows of the batch's
    output; the newest entry of a history is the batch's latest delayed read."""

    def read(self, ground_truth, reads):
        out, valid = reads.get(self.batch, ground_truth)
        rows = self.batch.branch.slices[self.index]
        value = type(out)(*(x[rows] for x in out)) if isinstance(out, tuple) else out[rows]
        return value, bool(valid[self.index])


class SurfaceDistanceEncoder(TaxelEncoder):
    """SurfaceDistanceProbe: distance plus the nearest points (world frame) of the same evaluation."""

    def channel_names(self):
        return super().channel_names() + ("nearest_points",)


    def channels(self, value, ground_truth):
        read = self.suite.nearest_points_ground_truth if ground_truth else self.suite.nearest_points
        return {**super().channels(value, ground_truth), "nearest_points": newest(read(self.name), self.history)}


class ThermalEncoder(SensorEncoder):
    """ThermalGrid of a TemperatureGrid: grid geometry in a template; temperatures and lumped bodies per step."""

    message_type = THERMAL_GRID

    def __init__(self, suite, batch, index, world_frame):
        super().__init__(suite, batch, index, world_frame)
        self.frame = batch.frame(index)
        names = list(batch.link_temperatures(index))
        reading = ThermalReading(self.name, self.frame, 0.0, batch.grid_origin(index), batch.cell_size(index),
                                 np.zeros(tuple(self.options.grid_size), np.float32), link_names=names,
                                 link_temperatures=np.zeros(len(names), np.float32))
        self.template = MessageTemplate(encode_thermal_grid(reading))

    def messages(self, value, valid, stamp, ground_truth):
        lumped = self.batch.link_temperatures(self.index)
        link_t = np.array([float(t[0]) for t in lumped.values()], dtype=np.float32)
        msg = self.template.make(header=_header(self.frame, stamp), temperatures=as_wire(value, np.float32),
                                 link_temperatures=link_t, valid=valid, ground_truth=ground_truth)
        return [(self.ground_truth_topic if ground_truth else self.topic, msg)]

    def markers(self, settings):
        if not self.last:
            return []
        return thermal_markers(decode_thermal_grid(self.last[0]),
                               temperature_range=tuple(self.options.debug_temperature_range))


class JointTorqueEncoder(SensorEncoder):
    """sensor_msgs/JointState with the selected joints' torques in ``effort``."""

    message_type = JOINT_STATE

    def __init__(self, suite, batch, index, world_frame):
        super().__init__(suite, batch, index, world_frame)
        names = batch.joint_names(index)
        self.template = MessageTemplate(encode_joint_torque(JointTorqueReading(0.0, names, np.zeros(len(names)))))

    def messages(self, value, valid, stamp, ground_truth):
        msg = self.template.make(header=_header("", stamp), effort=as_wire(value, np.float64))
        return [(self.ground_truth_topic if ground_truth else self.topic, msg)]


class ContactSensorEncoder(SensorEncoder):
    """LinkContact per sensor body on ``~/<name>`` and its WrenchStamped on ``~/<name>/<body>/wrench``."""

    message_type = LINK_CONTACT
    has_ground_truth = False

    def __init__(self, suite, batch, index, world_frame):
        super().__init__(suite, batch, index, world_frame)
        names = suite.scene.body_names
        self.bodies = [names[b] for b in batch.sensor_bodies[index]]
        self.filters = list(batch.filter_names[index])

    def wrench_topic(self, body: str) -> str:
        return f"{self.topic}/{body}/wrench"

    def topics(self, ground_truth):
        return [(self.topic, LINK_CONTACT)] + [(self.wrench_topic(b), WRENCH_STAMPED) for b in self.bodies]

    def encode(self, stamp, ground_truth, reads):
        return [] if ground_truth else super().encode(stamp, ground_truth, reads)

    def reading(self, value: Any, k: int, valid: bool, t: float) -> LinkContactReading:
        """The LinkContact reading of sensor body k (body frame) from the sensor's ContactSensorData."""
        n_filters = len(self.filters)

        def row(tensor, width_shape):
            return np.zeros(width_shape) if tensor is None else host(tensor[k])

        timers = None
        if value.current_air_time is not None:
            timers = AirTimes(*(float(getattr(value, f)[k]) for f in AirTimes._fields))
        body = self.bodies[k]
        return LinkContactReading(
            self.name, body, body, t, host(value.net_forces_b[k]), host(value.net_torques_b[k]),
            host(value.net_normal_forces_b[k]), row(value.net_friction_forces_b, 3), self.filters,
            row(value.force_matrix_b, (n_filters, 3)), row(value.normal_force_matrix_b, (n_filters, 3)),
            row(value.friction_force_matrix_b, (n_filters, 3)),
            None if value.contact_pos_b is None else host(value.contact_pos_b[k]), timers, valid)

    def messages(self, value, valid, stamp, ground_truth):
        t = time_msg_to_seconds(stamp)
        out = []
        for k, body in enumerate(self.bodies):
            reading = self.reading(value, k, valid, t)
            head = _header(body, stamp)  # the exact node-clock stamp (t may round at epoch-scale times)
            out.append((self.topic, replace(encode_link_contact(reading), header=head)))
            out.append((self.wrench_topic(body), replace(encode_wrench_stamped(reading.wrench()), header=head)))
        return out

    def markers(self, settings):
        return [m for msg in self.last if msg.__msgtype__ == LINK_CONTACT
                for m in link_contact_markers(decode_link_contact(msg), max_force=settings.max_link_force)]


ENCODERS: dict[str, type[SensorEncoder]] = {
    "ContactProbe": BatchTaxelEncoder,
    "ContactDepthProbe": BatchTaxelEncoder,
    "KinematicTaxel": BatchTaxelEncoder,
    "ElastomerTaxel": BatchTaxelEncoder,
    "ProximityTaxel": BatchTaxelEncoder,
    "SurfaceDistanceProbe": SurfaceDistanceEncoder,
    "TemperatureGrid": ThermalEncoder,
    "JointTorque": JointTorqueEncoder,
    "ContactSensor": ContactSensorEncoder,
}
"""Sensor type (the YAML ``type:``) → encoder class."""
