"""What a run's messages hold, reduced per sensor while they stream by (bounded memory: a few numbers per message,
the one message worth drawing and at most :data:`CHUNK` messages per series waiting to be reduced together), for
the summary table and the pictures.

:meth:`RunDigest.add` takes (topic, receive time, message) of any bag this project writes (or of a live run):

* ``TaxelArray`` → :class:`TaxelSeries`: per message the per-taxel magnitude of the sensor's main channel (force |F|
  N, displacement |u| m, depth m, contact 0/1, distance m); its **load** (the sum of the magnitudes; for distances
  the sum of how far each probe sees inside its range, Σ max(0, R − d)), its **peak** (largest magnitude; for
  distances the smallest distance) and whether it **touches** (a taxel above :data:`TOUCH_LEVEL`; for distances a
  probe below :data:`IN_RANGE` × its range). The message of largest load is kept for the heat map.
* ``ThermalGrid`` → :class:`ThermalSeries`: min / mean / max temperature per message, and the hottest message.
* ``sensor_msgs/JointState`` with efforts and no positions (a JointTorque sensor) → :class:`TorqueSeries`.
* ``LinkContact`` → :class:`ContactSeries` (per sensor and body): |F| and contact (a non-zero net force).
* ``std_msgs/String`` on a ``…robot_description`` topic: kept, to give joint torques their units.

Messages of the other branch (measured by default; ``ground_truth=True`` takes only ground truth; LinkContact has
one branch) and every other type are ignored. Times are header stamps in s. ``peak_index`` is the position of the
kept message in the series.

Taking a message only sorts it into its series (by topic alone where the run declared what its topics carry,
:meth:`RunDigest.expect`); the series read the values they need when they reduce a chunk,
straight from the CDR bytes of a :class:`~tactile_sim.io.wire_message.WireMessage` (what the node core returns)
where the field sits at a fixed place (header stamp, LinkContact net force), else from the message's fields. A
chunk of WireMessages of one :attr:`~tactile_sim.io.wire_message.WireMessage.byte_layout` (one encoder template)
is read as rows of its joined bytes: stamps and array fields are columns, no per-message field read; such messages
are also sorted into their series by topic and template after the first one.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..io.encode import JOINT_STATE, LINK_CONTACT, TAXEL_ARRAY, THERMAL_GRID
from ..io.input_cdr import aligned
from ..io.markers import TAXEL_CHANNEL_PREFERENCE
from ..io.stamps import NS_PER_S, time_msg_to_seconds
from ..io.wire_message import WireMessage
from ..world.urdf import JointType, RobotModel

if TYPE_CHECKING:
    from ..ros.node_core import NodeCore

TOUCH_LEVEL = {"force": 0.05, "displacement": 1e-6, "depth": 1e-5, "contact": 0.5}
"""Per-taxel magnitude above which a taxel counts as touched: N, m, m, flag. Chosen above the demo's noise
(5 mN per force component); a sensor with more noise reads as touched more often."""
IN_RANGE = 0.95
"""A SurfaceDistanceProbe probe sees something when its distance is below this fraction of its range (the cap)."""
CHANNEL_UNITS = {"force": "N", "displacement": "m", "depth": "m", "contact": "", "distance": "m"}
"""Unit of each taxel channel's magnitude."""
CHANNEL_WIDTH = {"force": 3, "displacement": 3, "depth": 1, "contact": 1, "distance": 1}
"""Values per taxel of each channel in a TaxelArray (TaxelArray.msg: vectors n × 3, scalars n)."""
GROUND_TRUTH_SUFFIX = "/ground_truth"


def joint_units(robot_description: str | None, joints: Sequence[str]) -> list[str]:
    """Unit of each joint's effort: N·m (revolute, continuous), N (prismatic); "N·m or N" when unknown."""
    types = {}
    if robot_description:
        try:
            robot = RobotModel.from_urdf(robot_description, geometry=(), inertia_check="off")
            types = {j.name: j.type for j in robot.joints}
        except (ValueError, OSError):
            types = {}
    return ["N" if types.get(j) is JointType.PRISMATIC else "N·m" if j in types else "N·m or N" for j in joints]


def sensor_of_topic(topic: str) -> str:
    """The sensor name of a node topic ``/<node>/<sensor>[/ground_truth]``."""
    if topic.endswith(GROUND_TRUTH_SUFFIX):
        topic = topic[: -len(GROUND_TRUTH_SUFFIX)]
    return topic.rsplit("/", 1)[-1]


CHUNK = 256
"""Messages a series holds before reducing them together (one numpy pass per chunk instead of per message)."""
CHUNK_BYTES = 16 * 2**20
"""Bytes of messages a series holds at most before reducing them (fewer than :data:`CHUNK` messages of a large
sensor: 256 messages of 160 000 taxels would hold 2 GB)."""


def held_bytes(msg: Any) -> int:
    """About the bytes a message holds: its CDR bytes (a WireMessage), else its array fields' bytes."""
    cdr = getattr(msg, "cdr", None)
    if isinstance(cdr, (bytes, bytearray, memoryview)):
        return len(cdr)
    return sum(getattr(getattr(msg, name, None), "nbytes", 0) for name in getattr(msg, "__dataclass_fields__", ()))

_STAMP = struct.Struct("<iI")
_U32 = struct.Struct("<I")
_VECTOR3 = struct.Struct("<3d")


def _little_endian_cdr(msg: Any) -> bytes | None:
    """The CDR bytes a message carries (a WireMessage's ``cdr``) when they are little endian, else None."""
    cdr = getattr(msg, "cdr", None)
    return cdr if cdr is not None and cdr[1] == 1 else None


def header_seconds(msg: Any) -> float:
    """Header stamp (s) of a message whose first field is a ``std_msgs/Header`` (every digested type): read at
    bytes 4–12 of its CDR (after the encapsulation header) when it carries them, else from ``header.stamp``."""
    cdr = _little_endian_cdr(msg)
    if cdr is None:
        return time_msg_to_seconds(msg.header.stamp)
    sec, nanosec = _STAMP.unpack_from(cdr, 4)
    return (sec * NS_PER_S + nanosec) / NS_PER_S


def link_contact_force(msg: Any) -> tuple[float, float, float]:
    """Net force (x, y, z) N of a ``LinkContact`` (``wrench.force``): from its CDR, where it follows the header's
    stamp and the three strings frame_id, sensor_name, body_name (8-byte aligned), when it carries them."""
    cdr = _little_endian_cdr(msg)
    if cdr is None:
        f = msg.wrench.force
        return f.x, f.y, f.z
    pos = 12
    for _ in range(3):
        pos = aligned(pos, 4)
        pos += 4 + _U32.unpack_from(cdr, pos)[0]
    return _VECTOR3.unpack_from(cdr, aligned(pos, 8))


def template_rows(items: list[Any]) -> np.ndarray | None:
    """The CDR bytes of ``items`` as rows (K, L) uint8 when they are little-endian WireMessages of one layout (one
    template: every field at the same place), else None."""
    first = items[0]
    layout = first.byte_layout if isinstance(first, WireMessage) else None
    if layout is None or first.cdr[1] != 1:
        return None
    for msg in items:
        if not (isinstance(msg, WireMessage) and msg.byte_layout is layout):
            return None
    joined = b"".join([msg.cdr for msg in items])
    if len(joined) != len(items) * len(first.cdr):
        return None
    return np.frombuffer(joined, np.uint8).reshape(len(items), len(first.cdr))


def row_times(rows: np.ndarray) -> list[float]:
    """Header stamps (s) of CDR rows (K, L) (bytes 4–12: sec int32, nanosec uint32), as :func:`header_seconds`."""
    sec = rows[:, 4:8].view("<i4")[:, 0].tolist()
    nanosec = rows[:, 8:12].view("<u4")[:, 0].tolist()
    return [(s * NS_PER_S + n) / NS_PER_S for s, n in zip(sec, nanosec)]


def stacked_field(items: list[Any], rows: np.ndarray | None, name: str) -> list[np.ndarray] | np.ndarray:
    """Values of array field ``name`` of every message: an array (K, count) taken from ``rows``
    (:func:`template_rows`) when the field lies in the bytes, else a list of per-message arrays."""
    span = None if rows is None else items[0].byte_span(name)
    if span is None:
        return [np.asarray(getattr(msg, name)) for msg in items]
    start, dtype, count = span
    return rows[:, start:start + dtype.itemsize * count].view(dtype)


def equal_size_runs(arrays: Sequence[np.ndarray]) -> list[tuple[int, int]]:
    """(start, stop) of the runs of consecutive ``arrays`` with equal sizes (the runs that stack), in order."""
    runs: list[tuple[int, int]] = []
    for i, a in enumerate(arrays):
        if runs and a.size == arrays[runs[-1][0]].size:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


@dataclass(eq=False, kw_only=True)
class _ChunkedSeries:
    """What every series shares: message times and the messages not yet reduced, held back until a chunk is full;
    :meth:`flush` reduces them (with their header times)."""

    times: list[float] = field(default_factory=list)
    pending: list[Any] = field(default_factory=list, repr=False)
    """messages not yet reduced (:meth:`RunDigest.add` appends and flushes once there are :data:`CHUNK`, or
    :data:`CHUNK_BYTES` of them)"""
    pending_bytes: int = field(default=0, repr=False)
    """:func:`held_bytes` of the pending messages"""

    def flush(self) -> None:
        """Reduce the pending messages."""
        pending, self.pending, self.pending_bytes = self.pending, [], 0
        if pending:
            rows = template_rows(pending)
            times = row_times(rows) if rows is not None else [header_seconds(msg) for msg in pending]
            self._reduce_all(pending, times, rows)

    def _reduce_all(self, items: list[Any], times: list[float], rows: np.ndarray | None) -> None:
        """Reduce messages ``items`` with header times ``times``; rows: their bytes (:func:`template_rows`) or
        None."""
        raise NotImplementedError


@dataclass(eq=False, kw_only=True)
class _PeakSeries(_ChunkedSeries):
    """A chunked series that keeps one message worth drawing: the peak message, its time and its index into the
    per-message lists."""

    peak_message: Any = None
    peak_time: float = float("nan")
    peak_index: int = 0


@dataclass(eq=False)
class TaxelSeries(_PeakSeries):
    """One taxel sensor over a run (see the module docstring); lists hold one entry per message once
    :meth:`flush` ran (:class:`RunDigest` flushes before handing its series out)."""

    name: str
    sensor_type: str
    topic: str
    channel: str
    load: list[float] = field(default_factory=list)
    peak: list[float] = field(default_factory=list)
    touch: list[bool] = field(default_factory=list)

    @property
    def unit(self) -> str:
        return CHANNEL_UNITS[self.channel]

    def magnitudes(self, msg: Any) -> np.ndarray:
        """Per-taxel magnitude (n,) of the channel in one message (float64)."""
        return self._magnitudes(np.asarray(getattr(msg, self.channel))[None], len(msg.radii))[0]

    @staticmethod
    def _magnitudes(values: np.ndarray, n: int) -> np.ndarray:
        """Per-taxel magnitudes (K, n) of the channel values (K, n) or (K, 3n) of K messages (float64)."""
        values = np.asarray(values, dtype=np.float64)
        if values.shape[1] == 3 * n:
            return np.linalg.norm(values.reshape(len(values), n, 3), axis=2)
        return values.reshape(len(values), n)

    def _reduce_all(self, items: list[Any], times: list[float], rows: np.ndarray | None) -> None:
        """Reduce runs of equal taxel count together (the count from the size of the channel's values)."""
        values = stacked_field(items, rows, self.channel)
        if isinstance(values, np.ndarray):  # one template: one taxel count
            self._reduce(items, values, times, values.shape[1] // CHANNEL_WIDTH[self.channel], rows)
            return
        for start, stop in equal_size_runs(values):
            n = values[start].size // CHANNEL_WIDTH[self.channel]
            self._reduce(items[start:stop], np.stack(values[start:stop]), times[start:stop], n, None)

    def _reduce(self, items: list[Any], values: np.ndarray, times: list[float], n: int,
                rows: np.ndarray | None) -> None:
        """Reduce messages ``items`` of n taxels whose channel values are ``values`` (K, n) or (K, 3n); rows: their
        bytes (:func:`template_rows`) or None."""
        m = self._magnitudes(values, n)
        if self.channel == "distance":
            radii = np.asarray(np.stack(stacked_field(items, rows, "radii")), dtype=np.float64)
            load, peak = np.clip(radii - m, 0.0, None).sum(axis=1), m.min(axis=1)
            touch = (m < IN_RANGE * radii).any(axis=1)
        else:
            load, peak, touch = m.sum(axis=1), m.max(axis=1), (m > TOUCH_LEVEL[self.channel]).any(axis=1)
        best = int(np.argmax(load))
        if self.peak_message is None or load[best] > self.load[self.peak_index]:
            self.peak_time, self.peak_message = times[best], items[best]
            self.peak_index = len(self.load) + best
        self.times += times
        self.load += load.tolist()
        self.peak += peak.tolist()
        self.touch += touch.tolist()


@dataclass(eq=False)
class ThermalSeries(_PeakSeries):
    """One TemperatureGrid over a run: min / mean / max grid temperature per message (°C) and the hottest message
    (lists complete once :meth:`flush` ran)."""

    name: str
    topic: str
    t_min: list[float] = field(default_factory=list)
    t_mean: list[float] = field(default_factory=list)
    t_max: list[float] = field(default_factory=list)

    def _reduce_all(self, items: list[Any], times: list[float], rows: np.ndarray | None) -> None:
        """Runs of equal grid size together (grids of a series may differ in size)."""
        values = stacked_field(items, rows, "temperatures")
        temps = np.asarray(values, dtype=np.float64) if isinstance(values, np.ndarray) else \
            [np.asarray(v, dtype=np.float64) for v in values]
        for start, stop in equal_size_runs(temps):
            grid = np.stack(temps[start:stop])
            hottest = grid.max(axis=1)
            best = int(np.argmax(hottest))
            if self.peak_message is None or hottest[best] > self.t_max[self.peak_index]:
                self.peak_message, self.peak_time, self.peak_index = items[start + best], times[start + best], \
                    len(self.t_max) + best
            self.times += times[start:stop]
            self.t_min += grid.min(axis=1).tolist()
            self.t_mean += grid.mean(axis=1).tolist()
            self.t_max += hottest.tolist()


@dataclass(eq=False)
class TorqueSeries(_ChunkedSeries):
    """One JointTorque sensor over a run: joint names and efforts (messages × joints; N·m or N); the joints are
    those of its first message (a message for other joints on the same topic does not belong to it)."""

    name: str
    topic: str
    joints: tuple[str, ...] = ()
    efforts: list[np.ndarray] = field(default_factory=list)

    def _reduce_all(self, items: list[Any], times: list[float], rows: np.ndarray | None) -> None:
        for t, msg in zip(times, items):
            names = tuple(msg.name)
            if self.joints and names != self.joints:
                continue
            self.joints = names
            self.times.append(t)
            self.efforts.append(np.asarray(msg.effort, dtype=np.float64).copy())

    def effort_array(self) -> np.ndarray:
        """Efforts (messages, joints)."""
        return np.stack(self.efforts) if self.efforts else np.zeros((0, len(self.joints)))


@dataclass(eq=False)
class ContactSeries(_ChunkedSeries):
    """One body of a ContactSensor over a run: |F| (N) of the net force and contact (|F| > 0) per message."""

    name: str
    body: str
    topic: str
    force: list[float] = field(default_factory=list)

    def _reduce_all(self, items: list[Any], times: list[float], rows: np.ndarray | None) -> None:
        self.times += times
        self.force += np.linalg.norm(np.array([link_contact_force(msg) for msg in items]), axis=1).tolist()

    @property
    def touch(self) -> list[bool]:
        return [f > 0.0 for f in self.force]


Series = TaxelSeries | ThermalSeries | TorqueSeries | ContactSeries


class RunDigest:
    """Per-sensor reductions of a message stream (see the module docstring). ground_truth: digest the
    ground-truth branch instead of the measured one."""

    def __init__(self, ground_truth: bool = False):
        self.ground_truth = ground_truth
        self._by_name: dict[str, Series] = {}
        self._routes: dict[str, tuple[str, bool]] = {}
        self._by_layout: dict[tuple[str, int], tuple[Any, Series | None]] = {}
        """(topic, id of a WireMessage layout) → (the layout, its messages' series or None)"""
        self.robot_description: str | None = None

    def expect(self, topic: str, sensor_name: str, ground_truth: bool) -> None:
        """Declare the TaxelArray and ThermalGrid messages on ``topic`` to be those of the ground-truth (or
        measured) branch of sensor ``sensor_name``: they are then taken without reading their sensor name and branch
        flag."""
        self._routes[topic] = (sensor_name, bool(ground_truth))

    def expect_node(self, core: NodeCore, resolve: Callable[[str], str]) -> None:
        """:meth:`expect` the taxel and thermal topics of every sensor of a built node core (both branches, as
        its encoders publish them); ``resolve``: its topic names (``~/…``) → the names the messages are added with
        (:meth:`~.output_bag.OutputBag.resolve`)."""
        for scheduled in core.schedule:
            encoder = scheduled.encoder
            if encoder.message_type in (TAXEL_ARRAY, THERMAL_GRID):
                self.expect(resolve(encoder.topic), encoder.name, False)
                self.expect(resolve(encoder.ground_truth_topic), encoder.name, True)

    def add(self, topic: str, log_ns: int, msg: Any) -> None:
        """Take one message (any type; the ones named in the module docstring are digested)."""
        layout = msg.byte_layout if isinstance(msg, WireMessage) else None
        held = None if layout is None else self._by_layout.get((topic, id(layout)))
        if held is not None:
            series = held[1]
        else:
            series, fixed = self._route(topic, msg)
            if fixed and layout is not None:  # keeping the layout keeps its id taken
                self._by_layout[topic, id(layout)] = (layout, series)
        if series is None:
            return
        pending = series.pending
        pending.append(msg)
        series.pending_bytes += held_bytes(msg)
        if len(pending) >= CHUNK or series.pending_bytes >= CHUNK_BYTES:
            series.flush()

    def _route(self, topic: str, msg: Any) -> tuple[Series | None, bool]:
        """(the series of a message, created on first use, or None for a message not digested; whether that holds
        for every message of its template on this topic: True unless a field a template may change was read, the
        branch flag of an undeclared topic — strings and array sizes never change)."""
        kind = getattr(msg, "__msgtype__", "")
        if kind == TAXEL_ARRAY or kind == THERMAL_GRID:
            route = self._routes.get(topic)
            if route is None:
                if bool(msg.ground_truth) != self.ground_truth:
                    return None, False
                name = msg.sensor_name
            elif route[1] != self.ground_truth:
                return None, True
            else:
                name = route[0]
            series = self._by_name.get(name)
            return (self._series(kind, topic, msg) if series is None else series), route is not None
        if kind == JOINT_STATE or kind == LINK_CONTACT:
            if kind == JOINT_STATE:
                if len(msg.position) or not len(msg.effort):
                    return None, True  # joint positions (an input), not a JointTorque sensor
                if topic.endswith(GROUND_TRUTH_SUFFIX) != self.ground_truth:
                    return None, True
            return self._series(kind, topic, msg), True  # a ContactSensor's reading is its ground truth
        if kind == "std_msgs/msg/String" and topic.endswith("robot_description"):
            self.robot_description = str(msg.data)
            return None, False
        return None, True

    def _series(self, kind: str, topic: str, msg: Any) -> Series:
        series = self._by_name
        if kind == LINK_CONTACT:
            key = f"{msg.sensor_name}/{msg.body_name}"
            if key not in series:
                series[key] = ContactSeries(msg.sensor_name, msg.body_name, topic)
            return series[key]
        name = msg.sensor_name if kind in (TAXEL_ARRAY, THERMAL_GRID) else sensor_of_topic(topic)
        if name not in series:
            if kind == TAXEL_ARRAY:
                channel = next((c for c in TAXEL_CHANNEL_PREFERENCE if len(getattr(msg, c))), "distance")
                series[name] = TaxelSeries(name, msg.sensor_type, topic, channel)
            elif kind == THERMAL_GRID:
                series[name] = ThermalSeries(name, topic)
            else:
                series[name] = TorqueSeries(name, topic)
        return series[name]

    @property
    def series(self) -> dict[str, Series]:
        """Sensor (or sensor/body) → its series, every pending message reduced."""
        for s in self._by_name.values():
            s.flush()
        return self._by_name

    @property
    def first_time(self) -> float | None:
        """Earliest header time of the digested messages, s (None before any)."""
        return min((min(s.times) for s in self.series.values() if s.times), default=None)

    def of_type(self, cls: type) -> list:
        """The series of one class, in the order their sensors first appeared."""
        return [s for s in self.series.values() if isinstance(s, cls)]
