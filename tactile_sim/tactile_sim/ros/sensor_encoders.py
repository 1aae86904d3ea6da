"""Per-sensor message encoders of the node: a sensor's suite reads → its messages and its rviz markers.

One encoder per configured sensor, built once after the suite (static layout data is validated, encoded and
serialised into a :class:`~tactile_sim.io.cdr_template.CdrTemplate` then); each evaluation rewrites only the stamp,
the values and the flags in the template's bytes and returns them as a
:class:`~tactile_sim.io.wire_message.WireMessage`. Sensor type → encoder class is the table :data:`ENCODERS`:

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
import struct
from dataclasses import dataclass
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
from ..io.cdr_template import CdrTemplate
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

Output = tuple[str, Any]
"""(topic relative to the node, e.g. ``~/pad``; :class:`~tactile_sim.io.wire_message.WireMessage`: the CDR bytes
publishers and bags send as they are, with the fields readable as on the rosbags message object)."""

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
    batch and update instead of one suite read per sensor. Also keeps the update's stamp bytes and headers (one
    per frame), which its messages share."""

    def __init__(self):
        self._cache: dict[tuple[int, bool], tuple[Any, np.ndarray]] = {}
        self._stamp: Any = None
        self._stamp_bytes = b""
        self._headers: dict[str, Any] = {}

    def stamp_bytes(self, stamp: Any) -> bytes:
        """:func:`stamp_bytes` of ``stamp`` (packed once per update)."""
        if stamp is not self._stamp:
            self._stamp, self._stamp_bytes, self._headers = stamp, stamp_bytes(stamp), {}
        return self._stamp_bytes

    def header(self, frame_id: str, stamp: Any) -> Any:
        """The ``std_msgs/Header`` of ``frame_id`` at ``stamp`` (one object per frame and update)."""
        self.stamp_bytes(stamp)
        head = self._headers.get(frame_id)
        if head is None:
            head = self._headers[frame_id] = _header(frame_id, stamp)
        return head

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


_HEADER = message_class("std_msgs/msg/Header")
_VECTOR3 = message_class("geometry_msgs/msg/Vector3")
_WRENCH = message_class("geometry_msgs/msg/Wrench")
_STAMP = struct.Struct("<iI")
"""``builtin_interfaces/Time`` on the wire: int32 sec, uint32 nanosec (little endian)."""


def _header(frame_id: str, stamp: Any) -> Any:
    return _HEADER(stamp=stamp, frame_id=frame_id)


def stamp_bytes(stamp: Any) -> bytes:
    """The CDR bytes of a ``builtin_interfaces/Time``."""
    return _STAMP.pack(stamp.sec, stamp.nanosec)


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
        self.template = CdrTemplate(encode_taxel_array(reading),
                                    ("header.stamp", *channels, "valid", "ground_truth"))
        self.stamp_span = self.template.span("header.stamp")
        self.views = [(name, TAXEL_CHANNELS[name][0], self.template.view(name)) for name in channels]
        self.flags = self.template.view("valid"), self.template.view("ground_truth")
        self.sphere_diameter = default_sphere_diameter(layout.flat_positions, layout.flat_radius)

    def channel_names(self) -> tuple[str, ...]:
        """The TaxelArray channels this sensor fills."""
        return tuple(TAXEL_CHANNELS_OF[self.sensor_type])


    def channels(self, value: Any, ground_truth: bool) -> dict[str, Any]:
        """Channel name → values (tensor, any device) of one read."""
        return {name: get(value) for name, get in TAXEL_CHANNELS_OF[self.sensor_type].items()}

    def messages(self, value, valid, stamp, ground_truth):
        t = self.template
        t.buffer[self.stamp_span] = stamp_bytes(stamp)
        self.flags[0][0], self.flags[1][0] = valid, ground_truth
        changes = {"header": _header(self.options.link, stamp), "valid": valid, "ground_truth": ground_truth}
        values = self.channels(value, ground_truth)
        for name, dtype, view in self.views:
            changes[name] = view[:] = as_wire(values[name], dtype)
        return [(self.ground_truth_topic if ground_truth else self.topic, t.wire(changes))]

    def markers(self, settings):
        if not self.last:
            return []
        channel, scale = taxel_colour_scale(self.sensor_type, self.layout.flat_radius, settings)
        return taxel_markers(decode_taxel_array(self.last[0]), max_value=scale, sphere_diameter=self.sphere_diameter,
                             channel=channel, force_arrows=settings.force_arrows)


class BatchTaxelEncoder(TaxelEncoder):
    """A taxel sensor read from its batch's whole read (:class:`BatchReads`): its probes' rows of the batch's
    output; the newest entry of a history is the batch's latest delayed read."""

    def __init__(self, suite, batch, index, world_frame):
        super().__init__(suite, batch, index, world_frame)
        self.rows = batch.branch.slices[index]
        getters = TAXEL_CHANNELS_OF[self.sensor_type]
        n = self.layout.n
        self.columns = [(name, getters[name], dtype, view.reshape(n, -1) if TAXEL_CHANNELS[name][1] else view)
                        for name, dtype, view in self.views]
        self.flag_bytes = self.template.span("valid").start, self.template.span("ground_truth").start

    def read(self, ground_truth, reads):
        out, valid = reads.get(self.batch, ground_truth)
        value = type(out)(*(x[self.rows] for x in out)) if isinstance(out, tuple) else out[self.rows]
        return value, bool(valid[self.index])

    def encode(self, stamp, ground_truth, reads):
        """:meth:`SensorEncoder.encode` straight from the batch's read: each channel's rows are written into the
        template and kept as the message's field."""
        out, valid = reads.get(self.batch, ground_truth)
        valid = bool(valid[self.index])
        buffer = self.template.buffer
        buffer[self.stamp_span] = reads.stamp_bytes(stamp)
        buffer[self.flag_bytes[0]], buffer[self.flag_bytes[1]] = valid, ground_truth
        changes = {"header": reads.header(self.options.link, stamp), "valid": valid, "ground_truth": ground_truth}
        for name, get, dtype, view in self.columns:
            rows = get(out)[self.rows].astype(dtype, copy=False)
            view[...] = rows
            changes[name] = rows.reshape(-1)
        msg = self.template.wire(changes)
        if ground_truth:
            return [(self.ground_truth_topic, msg)]
        self.last = [msg]
        return [(self.topic, msg)]


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
        self.template = CdrTemplate(encode_thermal_grid(reading), ("header.stamp", "temperatures",
                                                                   "link_temperatures", "valid", "ground_truth"))

    def messages(self, value, valid, stamp, ground_truth):
        lumped = self.batch.link_temperatures(self.index)
        link_t = np.array([float(t[0]) for t in lumped.values()], dtype=np.float32)
        temperatures = as_wire(value, np.float32)
        t = self.template
        t.buffer[t.span("header.stamp")] = stamp_bytes(stamp)
        t.view("temperatures")[:] = temperatures
        t.view("link_temperatures")[:] = link_t
        t.view("valid")[0], t.view("ground_truth")[0] = valid, ground_truth
        msg = t.wire({"header": _header(self.frame, stamp), "temperatures": temperatures, "link_temperatures": link_t,
                      "valid": valid, "ground_truth": ground_truth})
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
        self.template = CdrTemplate(encode_joint_torque(JointTorqueReading(0.0, names, np.zeros(len(names)))),
                                    ("header.stamp", "effort"))

    def messages(self, value, valid, stamp, ground_truth):
        effort = as_wire(value, np.float64)
        t = self.template
        t.buffer[t.span("header.stamp")] = stamp_bytes(stamp)
        t.view("effort")[:] = effort
        msg = t.wire({"header": _header("", stamp), "effort": effort})
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
        o, f = self.options, len(self.filters)
        points = f > 0 and o.track_contact_points
        changing = ["wrench", "normal_force", "friction_force", "force_matrix", "normal_force_matrix",
                    "friction_force_matrix"] + ["contact_positions"] * points + list(AirTimes._fields) * o.track_air_time
        self.link_in_bytes = frozenset(changing) - {"wrench"}  # the net wrench is also a message field
        self.templates = []
        zeros = np.zeros(3)
        for body in self.bodies:
            reading = LinkContactReading(self.name, body, body, 0.0, zeros, zeros, zeros, zeros, self.filters,
                                         np.zeros((f, 3)), np.zeros((f, 3)), np.zeros((f, 3)),
                                         np.zeros((f, 3)) if points else None,
                                         AirTimes(0.0, 0.0, 0.0, 0.0) if o.track_air_time else None, False)
            self.templates.append((CdrTemplate(encode_link_contact(reading), ["header.stamp", "valid", *changing]),
                                   CdrTemplate(encode_wrench_stamped(reading.wrench()), ("header.stamp", "wrench"))))

    def wrench_topic(self, body: str) -> str:
        return f"{self.topic}/{body}/wrench"

    def topics(self, ground_truth):
        return [(self.topic, LINK_CONTACT)] + [(self.wrench_topic(b), WRENCH_STAMPED) for b in self.bodies]

    def encode(self, stamp, ground_truth, reads):
        return [] if ground_truth else super().encode(stamp, ground_truth, reads)

    def messages(self, value, valid, stamp, ground_truth):
        packed = stamp_bytes(stamp)
        loads = [None if v is None else host(v) for v in (value.net_forces_b, value.net_torques_b,
                                                           value.net_normal_forces_b, value.net_friction_forces_b)]
        matrices = [(name, host(v)) for name, v in (("force_matrix", value.force_matrix_b),
                                                     ("normal_force_matrix", value.normal_force_matrix_b),
                                                     ("friction_force_matrix", value.friction_force_matrix_b),
                                                     ("contact_positions", value.contact_pos_b)) if v is not None]
        timers = None if value.current_air_time is None else \
            [host(getattr(value, name)) for name in AirTimes._fields]
        out = []
        for k, body in enumerate(self.bodies):
            link, wrench = self.templates[k]
            force, torque, normal, friction = (None if v is None else v[k] for v in loads)
            for t in (link, wrench):
                t.buffer[t.span("header.stamp")] = packed
                w = t.view("wrench")
                w[:3], w[3:] = force, torque
            link.view("normal_force")[:] = normal
            if friction is not None:  # else the template's zeros
                link.view("friction_force")[:] = friction
            for name, v in matrices:
                link.view(name)[:] = v[k].reshape(-1)
            if timers is not None:
                for name, v in zip(AirTimes._fields, timers):
                    link.view(name)[0] = v[k]
            link.view("valid")[0] = valid
            w = w.tolist()
            changes = {"header": _header(body, stamp), "wrench": _WRENCH(force=_VECTOR3(*w[:3]), torque=_VECTOR3(*w[3:]))}
            out.append((self.topic, link.wire({**changes, "valid": valid}, self.link_in_bytes)))
            out.append((self.wrench_topic(body), wrench.wire(changes)))
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
