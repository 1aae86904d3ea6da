"""Replay output as arrays (``tactile-sim replay --format npz``): one ``.npz`` file per recording, the values of
every sensor message of the replay stacked along a first axis of ticks.

It takes the same (topic, message) items an :class:`~.output_bag.OutputBag` would write (the node core's
WireMessages) and reads their fields, so the arrays hold exactly what the bag of the same replay holds. Keys (``S``
a sensor name, T its evaluations, ``*L`` its layout shape, C a channel's width; a scalar channel has C = 1):

* every sensor: ``S/stamps`` [T] float64 s (header stamps), ``S/layout_shape`` (the ``*L``), ``S/frame_id`` and,
  with ``--ground-truth``, the value arrays again under ``S/ground_truth/…`` (same stamps);
* taxel sensors (TaxelArray): ``S/<channel>`` [T, *L, C] for each channel the sensor fills (``force``, ``torque``
  N, N·m; ``displacement``, ``depth``, ``distance``, ``nearest_points`` m; float32; ``contact`` bool), ``S/valid``
  [T] bool, ``S/positions`` and ``S/normals`` [*L, 3] float32 (m, unit; link frame), ``S/radii`` [*L] float32 m,
  ``S/sensor_type``; ``*L`` is (rows, cols) for a grid layout, else (n,);
* TemperatureGrid (ThermalGrid): ``S/temperatures`` [T, nx, ny, nz, 1] float32 °C, ``S/link_temperatures``
  [T, NL] °C with ``S/link_names`` [NL], ``S/valid`` [T], ``S/origin`` (x, y, z m, qx, qy, qz, qw) and
  ``S/cell_size`` [3] m;
* JointTorque (JointState): ``S/effort`` [T, J, 1] float64 N·m (N for prismatic joints), ``S/joint_names`` [J]
  (the message has no valid flag);
* ContactSensor (LinkContact, *L = (B,) bodies): ``S/wrench`` [T, B, 6] (force N, torque N·m), ``S/normal_force``,
  ``S/friction_force`` [T, B, 3] N, ``S/force_matrix``, ``S/normal_force_matrix``, ``S/friction_force_matrix``
  [T, B, F, 3] N, ``S/contact_positions`` [T, B, F, 3] m (when tracked), ``S/air_times`` [T, B, 4] s (current air,
  current contact, last air, last contact; when tracked), ``S/valid`` [T, B], ``S/body_names`` [B],
  ``S/filter_names`` [F]; float64; each vector in its body's frame;
* per recording: ``joints/names`` [J], ``joints/stamps`` [U] float64 s and ``joints/position`` [U, J] float64 rad
  or m: the held joint positions the suite was stepped with at each of its U updates (a sensor with a lower rate
  is evaluated on a subset of them), and ``rate`` (Hz).

Texts are numpy unicode arrays, so ``np.load(path)`` reads every key without pickle. Derived outputs (profiles
such as ``pointcloud``, the ContactSensor's WrenchStamped copies) are left out: they are functions of the arrays
above. Memory grows with the recording (the arrays are kept until :meth:`ArrayOutput.close` writes the file).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from ..io.encode import JOINT_STATE, LINK_CONTACT, TAXEL_ARRAY, THERMAL_GRID
from ..io.readings import TAXEL_CHANNELS, AirTimes
from ..io.stamps import NS_PER_S
from .digest import header_seconds

NPZ_SUFFIX = ".npz"


def array_location(path: str | Path) -> Path:
    """The ``.npz`` file of an output name (``out`` → ``out.npz``; ``out.npz`` unchanged)."""
    path = Path(path)
    return path if path.suffix.lower() == NPZ_SUFFIX else path.with_name(path.name + NPZ_SUFFIX)


def _xyz(v: Any) -> list[float]:
    return [v.x, v.y, v.z]


def _vectors(items: Sequence[Any]) -> np.ndarray:
    """(F, 3) float64 of a sequence of Vector3 / Point messages."""
    return np.array([_xyz(v) for v in items], dtype=np.float64).reshape(len(items), 3)


class SensorArrays:
    """The messages of one sensor (both branches) as growing lists of per-evaluation arrays. Subclasses read the
    static fields of the first message (:meth:`layout`) and the changing ones of each (:meth:`row`);
    ``per_tick``: messages per evaluation on the sensor's topic (a ContactSensor's bodies)."""

    per_tick = 1

    def __init__(self, name: str):
        self.name = name
        self.static: dict[str, np.ndarray] | None = None
        self.shape: tuple[int, ...] = ()
        self.stamps: list[float] = []
        self.rows: tuple[dict[str, list], dict[str, list]] = ({}, {})

    def take(self, msg: Any, ground_truth: bool) -> None:
        if self.static is None:
            self.static = {"frame_id": np.array(msg.header.frame_id), **self.layout(msg)}
            self.static["layout_shape"] = np.array(self.shape, dtype=np.int64)
        rows = self.rows[ground_truth]
        for key, value in self.row(msg).items():
            rows.setdefault(key, []).append(value)
        if not ground_truth:
            self.stamps.append(header_seconds(msg))

    def layout(self, msg: Any) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def row(self, msg: Any) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def value_shape(self, key: str) -> tuple[int, ...]:
        """Shape of one evaluation's ``key`` array (after the ticks axis)."""
        raise NotImplementedError

    def arrays(self) -> dict[str, np.ndarray]:
        """Every key of this sensor (module docstring), prefixed with its name."""
        out = {"stamps": np.array(self.stamps[::self.per_tick], dtype=np.float64), **(self.static or {})}
        for ground_truth, rows in enumerate(self.rows):
            prefix = "ground_truth/" if ground_truth else ""
            for key, values in rows.items():
                out[prefix + key] = np.stack(values).reshape(len(values) // self.per_tick, *self.value_shape(key))
        return {f"{self.name}/{key}": value for key, value in out.items()}


class TaxelArrays(SensorArrays):
    """TaxelArray messages: channels [T, *L, C], valid [T]."""

    def layout(self, msg):
        n = len(msg.radii)
        self.shape = (int(msg.rows), int(msg.cols)) if msg.rows else (n,)
        self.channels = {name: max(width, 1) for name, (_, width) in TAXEL_CHANNELS.items() if len(getattr(msg, name))}
        return {"positions": np.asarray(msg.positions).reshape(*self.shape, 3),
                "normals": np.asarray(msg.normals).reshape(*self.shape, 3),
                "radii": np.asarray(msg.radii).reshape(self.shape), "sensor_type": np.array(msg.sensor_type)}

    def row(self, msg):
        out = {name: np.array(getattr(msg, name)) for name in self.channels}
        out["valid"] = np.bool_(msg.valid)
        return out

    def value_shape(self, key):
        return () if key == "valid" else (*self.shape, self.channels[key])


class ThermalArrays(SensorArrays):
    """ThermalGrid messages: temperatures [T, nx, ny, nz, 1], link temperatures [T, NL], valid [T]."""

    def layout(self, msg):
        self.shape = (int(msg.nx), int(msg.ny), int(msg.nz))
        self.links = len(msg.link_names)
        origin = msg.origin
        return {"origin": np.array(_xyz(origin.position) + [*_xyz(origin.orientation), origin.orientation.w]),
                "cell_size": np.array(_xyz(msg.cell_size)), "link_names": np.array(list(msg.link_names), dtype=str)}

    def row(self, msg):
        return {"temperatures": np.array(msg.temperatures), "link_temperatures": np.array(msg.link_temperatures),
                "valid": np.bool_(msg.valid)}

    def value_shape(self, key):
        return {"temperatures": (*self.shape, 1), "link_temperatures": (self.links,), "valid": ()}[key]


class TorqueArrays(SensorArrays):
    """JointState messages of a JointTorque sensor: effort [T, J, 1]."""

    def layout(self, msg):
        self.shape = (len(msg.name),)
        return {"joint_names": np.array(list(msg.name), dtype=str)}

    def row(self, msg):
        return {"effort": np.array(msg.effort)}

    def value_shape(self, key):
        return (*self.shape, 1)


CONTACT_VECTORS = ("normal_force", "friction_force")
CONTACT_MATRICES = ("force_matrix", "normal_force_matrix", "friction_force_matrix", "contact_positions")


class ContactArrays(SensorArrays):
    """LinkContact messages of a ContactSensor, one per body and evaluation: [T, B, ...]."""

    def __init__(self, name: str, bodies: int):
        super().__init__(name)
        self.per_tick = bodies

    def layout(self, msg):
        self.shape = (self.per_tick,)
        self.filters = len(msg.filter_names)
        self.points = len(msg.contact_positions) > 0
        self.air = bool(msg.air_time_tracked)
        self.body_names: list[str] = []
        return {"filter_names": np.array(list(msg.filter_names), dtype=str)}

    def take(self, msg, ground_truth):
        super().take(msg, ground_truth)
        if len(self.body_names) < self.per_tick:
            self.body_names.append(msg.body_name)

    def row(self, msg):
        out = {"wrench": np.array(_xyz(msg.wrench.force) + _xyz(msg.wrench.torque))}
        out.update({key: np.array(_xyz(getattr(msg, key))) for key in CONTACT_VECTORS})
        out.update({key: _vectors(getattr(msg, key)) for key in CONTACT_MATRICES[:3 + self.points]})
        if self.air:
            out["air_times"] = np.array([getattr(msg, key) for key in AirTimes._fields])
        out["valid"] = np.bool_(msg.valid)
        return out

    def value_shape(self, key):
        inner = {"wrench": (6,), "air_times": (4,), "valid": ()}.get(key)
        if inner is None:
            inner = (3,) if key in CONTACT_VECTORS else (self.filters, 3)
        return (self.per_tick, *inner)

    def arrays(self):
        out = super().arrays()
        out[f"{self.name}/body_names"] = np.array(self.body_names, dtype=str)
        return out


def sensor_arrays(encoder: Any) -> SensorArrays | None:
    """The collector of a node-core encoder's messages by its message type (None: not written as arrays)."""
    kind = encoder.message_type
    if kind == TAXEL_ARRAY:
        return TaxelArrays(encoder.name)
    if kind == THERMAL_GRID:
        return ThermalArrays(encoder.name)
    if kind == JOINT_STATE:
        return TorqueArrays(encoder.name)
    if kind == LINK_CONTACT:
        return ContactArrays(encoder.name, len(encoder.bodies))
    return None


class ArrayOutput:
    """Write a replay's sensor messages as arrays to ``path`` (see :func:`array_location`) when closed; the
    interface of :class:`~.output_bag.OutputBag` (``write_all``, ``resolve``, ``counts``, ``on_write``).

    core: the :class:`~tactile_sim.ros.node_core.NodeCore` whose messages these are (its encoders name the
    sensors' topics; its joint positions are recorded by :meth:`on_tick`). rate: Hz, stored. overwrite: replace an
    existing file; otherwise an existing path raises FileExistsError (so does a folder, always).
    """

    storage = "npz"
    """The output's format (an :class:`~.output_bag.OutputBag`'s is its storage plugin: ``mcap`` or ``sqlite3``)."""

    def __init__(self, path: str | Path, core: Any, *, rate: float, overwrite: bool = False,
                 on_write: Callable[[str, int, Any], None] | None = None):
        self.path = array_location(path)
        if self.path.exists() and (not overwrite or not self.path.is_file()):
            raise FileExistsError(f"output {str(self.path)!r}: already exists; choose another name or remove it"
                                  + ("" if self.path.is_file() else " (it is not a file)"))
        self.core, self.rate, self.on_write = core, rate, on_write
        self.counts: dict[str, int] = {}
        self._topics: dict[str, tuple[SensorArrays, bool]] | None = None
        self._joint_names: list[str] | None = None
        self._joint_stamps: list[float] = []
        self._joint_positions: list[np.ndarray] = []

    @property
    def data_file(self) -> Path:
        return self.path

    def resolve(self, topic: str) -> str:
        """``~/x`` → ``/<node name>/x`` (the bag's name of the topic)."""
        return f"/{self.core.name}/{topic[2:]}" if topic.startswith("~/") else topic

    def _route(self) -> dict[str, tuple[SensorArrays, bool]]:
        """Node-relative topic → (collector, ground truth) for every sensor of the core (built on first use: the
        core is ready once it returns messages)."""
        topics = {}
        for scheduled in self.core.schedule:
            arrays = sensor_arrays(scheduled.encoder)
            if arrays is not None:
                topics[scheduled.encoder.topic] = (arrays, False)
                topics[scheduled.encoder.ground_truth_topic] = (arrays, True)
        return topics

    def write_all(self, log_ns: int, items: Sequence[tuple[str, Any]]) -> None:
        """Take one update's (topic, message) items (the loop's :data:`~.run_loop.Writer`)."""
        if self._topics is None:
            self._topics = self._route()
        for topic, msg in items:
            target = self._topics.get(topic)
            if target is None:
                continue
            target[0].take(msg, target[1])
            name = self.resolve(topic)
            self.counts[name] = self.counts.get(name, 0) + 1
            if self.on_write is not None:
                self.on_write(name, log_ns, msg)

    def on_tick(self, t_ns: int) -> None:
        """After the loop's tick at t_ns: record the joint positions when the suite was stepped at t_ns."""
        if self.core.last_step_ns != t_ns:
            return
        names, q = self.core.joint_positions()
        if self._joint_names is None:
            self._joint_names = names
        self._joint_stamps.append(t_ns / NS_PER_S)
        self._joint_positions.append(q)

    def arrays(self) -> dict[str, np.ndarray]:
        """Every key of the file (module docstring)."""
        names, positions = self._joint_names or [], self._joint_positions
        out = {"rate": np.float64(self.rate), "joints/names": np.array(names, dtype=str),
               "joints/stamps": np.array(self._joint_stamps, dtype=np.float64),
               "joints/position": np.array(positions, dtype=np.float64).reshape(len(positions), len(names))}
        for arrays in dict.fromkeys(a for a, _ in (self._topics or {}).values()):
            if arrays.static is not None:
                out.update(arrays.arrays())
        return out

    def close(self) -> None:
        """Write the file (through a temporary name beside it, so a reader never sees half of one)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        try:
            with open(partial, "wb") as f:
                np.savez(f, **self.arrays())
            os.replace(partial, self.path)
        finally:
            partial.unlink(missing_ok=True)

    def __enter__(self) -> ArrayOutput:
        return self

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
