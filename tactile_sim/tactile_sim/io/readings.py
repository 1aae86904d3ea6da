"""Plain readings: what the suite hands to the io layer for one sensor and one evaluation (no ROS, no torch).

Each class validates and normalises its arrays at construction (torch tensors are copied to the host, values cast
to the message's dtype, grid-shaped taxel arrays flattened), so that encoding to a message and decoding back gives
an equal reading. Shapes use n = number of taxels, F = number of ContactSensor filters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, NamedTuple

import numpy as np

from .msg_types import MSG_PACKAGE, message_class

TAXEL_CHANNELS: dict[str, tuple[type, int]] = {
    "contact": (np.bool_, 0),
    "depth": (np.float32, 0),
    "force": (np.float32, 3),
    "torque": (np.float32, 3),
    "displacement": (np.float32, 3),
    "distance": (np.float32, 0),
    "nearest_points": (np.float32, 3),
}
"""Taxel channel name → (dtype, width): width 0 is one value per taxel (n,), width 3 a vector (n, 3)."""


@cache
def taxel_sensor_types() -> tuple[str, ...]:
    """Values allowed for ``sensor_type``: the ``TYPE_*`` constants of ``TaxelArray.msg``."""
    cls = message_class(f"{MSG_PACKAGE}/msg/TaxelArray")
    return tuple(value for name, value in vars(cls).items() if name.startswith("TYPE_"))


def host(value: Any) -> Any:
    """``value`` with a torch tensor (any device) replaced by a numpy array on the host; anything else unchanged."""
    return value.detach().cpu().numpy() if hasattr(value, "detach") else value


def as_array(value: Any, dtype: type, shape: tuple[int, ...], where: str) -> np.ndarray:
    """A C-contiguous host copy of ``value`` (numpy array, sequence or torch tensor) with dtype and exact shape."""
    array = np.array(host(value), dtype=dtype, copy=True, order="C")
    if array.shape != shape:
        raise ValueError(f"{where}: shape {array.shape}; expected {shape}")
    return array


def _vec3(value: Any, where: str) -> np.ndarray:
    return as_array(value, np.float64, (3,), where)


@dataclass(frozen=True, eq=False)
class TaxelReading:
    """One reading of a taxel-array sensor (TaxelArray.msg documents every field).

    stamp: s. positions, normals: (n, 3) float32 in the link frame ``frame_id``; radii: (n,) float32, m.
    channels: name → (n,) or (n, 3) array (names and dtypes in ``TAXEL_CHANNELS``); absent = not produced.
    A grid (rows, cols > 0) may give (rows, cols[, 3]) arrays; they are stored flattened row-major.
    nearest_points are in ``world_frame_id``, which must be set exactly when that channel is present.
    """

    sensor_name: str
    sensor_type: str
    frame_id: str
    stamp: float
    rows: int
    cols: int
    positions: np.ndarray
    normals: np.ndarray
    radii: np.ndarray
    channels: Mapping[str, np.ndarray]
    valid: bool = True
    ground_truth: bool = False
    world_frame_id: str = ""

    def __post_init__(self) -> None:
        where = f"TaxelReading(sensor_name={self.sensor_name!r})"
        allowed_types = taxel_sensor_types()
        if self.sensor_type not in allowed_types:
            raise ValueError(f"{where}.sensor_type: unknown; got {self.sensor_type!r}; allowed: {allowed_types}")
        rows, cols = int(self.rows), int(self.cols)
        if rows < 0 or cols < 0 or (rows == 0) != (cols == 0):
            raise ValueError(f"{where}.rows/cols: got ({rows}, {cols}); allowed: both >= 1 (grid) or both 0 (flat)")
        n = rows * cols if rows else int(np.size(host(self.radii)))
        if n < 1:
            raise ValueError(f"{where}: no taxels; allowed: at least one taxel")
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "cols", cols)
        object.__setattr__(self, "stamp", float(self.stamp))
        object.__setattr__(self, "valid", bool(self.valid))
        object.__setattr__(self, "ground_truth", bool(self.ground_truth))
        object.__setattr__(self, "positions", self._flat(self.positions, np.float32, 3, n, f"{where}.positions"))
        object.__setattr__(self, "normals", self._flat(self.normals, np.float32, 3, n, f"{where}.normals"))
        object.__setattr__(self, "radii", self._flat(self.radii, np.float32, 0, n, f"{where}.radii"))
        unknown = set(self.channels) - set(TAXEL_CHANNELS)
        if unknown:
            raise ValueError(f"{where}.channels: unknown names {sorted(unknown)}; allowed: {list(TAXEL_CHANNELS)}")
        channels = {
            name: self._flat(self.channels[name], dtype, width, n, f"{where}.channels[{name!r}]")
            for name, (dtype, width) in TAXEL_CHANNELS.items()
            if name in self.channels
        }
        object.__setattr__(self, "channels", channels)
        if ("nearest_points" in channels) != bool(self.world_frame_id):
            raise ValueError(
                f"{where}.world_frame_id: got {self.world_frame_id!r} with nearest_points "
                f"{'present' if 'nearest_points' in channels else 'absent'}; allowed: the world frame name "
                "exactly when nearest_points is present, else ''"
            )

    def _flat(self, value: Any, dtype: type, width: int, n: int, where: str) -> np.ndarray:
        flat_shape = (n, width) if width else (n,)
        value = host(value)
        if self.rows:
            grid_shape = (self.rows, self.cols, width) if width else (self.rows, self.cols)
            if np.shape(value) == grid_shape:
                return as_array(value, dtype, grid_shape, where).reshape(flat_shape)
        return as_array(value, dtype, flat_shape, where)

    @property
    def n_taxels(self) -> int:
        return int(self.radii.shape[0])


@dataclass(frozen=True, eq=False)
class ThermalReading:
    """One reading of a TemperatureGrid sensor (ThermalGrid.msg documents every field).

    stamp: s. origin: (3,) m, position in the link frame ``frame_id`` of the grid's lowest corner;
    origin_orientation: (x, y, z, w) of the grid axes in the link frame. cell_size: (3,) m.
    temperatures: (nx, ny, nz) float32, °C, index [ix, iy, iz]. link_names / link_temperatures: lumped bodies
    (°C, float32), empty unless simulate_all_link_temperatures.
    """

    sensor_name: str
    frame_id: str
    stamp: float
    origin: np.ndarray
    cell_size: np.ndarray
    temperatures: np.ndarray
    valid: bool = True
    ground_truth: bool = False
    origin_orientation: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 0.0, 1.0]))
    link_names: Sequence[str] = ()
    link_temperatures: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))

    def __post_init__(self) -> None:
        where = f"ThermalReading(sensor_name={self.sensor_name!r})"
        temperatures = host(self.temperatures)
        shape = np.shape(temperatures)
        if len(shape) != 3 or min(shape) < 1:
            raise ValueError(f"{where}.temperatures: shape {shape}; expected (nx, ny, nz) with every size >= 1")
        object.__setattr__(self, "stamp", float(self.stamp))
        object.__setattr__(self, "valid", bool(self.valid))
        object.__setattr__(self, "ground_truth", bool(self.ground_truth))
        object.__setattr__(self, "temperatures", as_array(temperatures, np.float32, shape, f"{where}.temperatures"))
        object.__setattr__(self, "origin", _vec3(self.origin, f"{where}.origin"))
        object.__setattr__(self, "cell_size", _vec3(self.cell_size, f"{where}.cell_size"))
        quat = as_array(self.origin_orientation, np.float64, (4,), f"{where}.origin_orientation")
        object.__setattr__(self, "origin_orientation", quat)
        names = tuple(self.link_names)
        object.__setattr__(self, "link_names", names)
        object.__setattr__(
            self,
            "link_temperatures",
            as_array(self.link_temperatures, np.float32, (len(names),), f"{where}.link_temperatures"),
        )

    @property
    def grid_size(self) -> tuple[int, int, int]:
        """(nx, ny, nz)."""
        nx, ny, nz = self.temperatures.shape
        return nx, ny, nz


@dataclass(frozen=True, eq=False)
class JointTorqueReading:
    """One JointTorque reading: stamp s, joint names and effort (N·m revolute / N prismatic), float64."""

    stamp: float
    names: Sequence[str]
    effort: np.ndarray

    def __post_init__(self) -> None:
        names = tuple(self.names)
        object.__setattr__(self, "stamp", float(self.stamp))
        object.__setattr__(self, "names", names)
        effort = as_array(self.effort, np.float64, (len(names),), "JointTorqueReading.effort")
        object.__setattr__(self, "effort", effort)


@dataclass(frozen=True, eq=False)
class WrenchReading:
    """A wrench in frame ``frame_id`` at time ``stamp`` (s): force (3,) N and torque (3,) N·m about the origin."""

    frame_id: str
    stamp: float
    force: np.ndarray
    torque: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "stamp", float(self.stamp))
        object.__setattr__(self, "force", _vec3(self.force, "WrenchReading.force"))
        object.__setattr__(self, "torque", _vec3(self.torque, "WrenchReading.torque"))


class AirTimes(NamedTuple):
    """ContactSensor timers of one body, s."""

    current_air_time: float
    current_contact_time: float
    last_air_time: float
    last_contact_time: float


@dataclass(frozen=True, eq=False)
class LinkContactReading:
    """Contact load on one ContactSensor body (LinkContact.msg documents every field); body frame ``frame_id``.

    force, torque, normal_force, friction_force: (3,) float64, N / N·m. The matrices: (F, 3) N, one row per
    entry of filter_names. contact_positions: (F, 3) m (NaN rows without contact) or None when not tracked.
    air_times: None when not tracked.
    """

    sensor_name: str
    body_name: str
    frame_id: str
    stamp: float
    force: np.ndarray
    torque: np.ndarray
    normal_force: np.ndarray
    friction_force: np.ndarray
    filter_names: Sequence[str] = ()
    force_matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    normal_force_matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    friction_force_matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    contact_positions: np.ndarray | None = None
    air_times: AirTimes | None = None
    valid: bool = True

    def __post_init__(self) -> None:
        where = f"LinkContactReading(sensor_name={self.sensor_name!r}, body_name={self.body_name!r})"
        names = tuple(self.filter_names)
        matrix = (len(names), 3)
        object.__setattr__(self, "stamp", float(self.stamp))
        object.__setattr__(self, "valid", bool(self.valid))
        object.__setattr__(self, "filter_names", names)
        for name in ("force", "torque", "normal_force", "friction_force"):
            object.__setattr__(self, name, _vec3(getattr(self, name), f"{where}.{name}"))
        for name in ("force_matrix", "normal_force_matrix", "friction_force_matrix"):
            object.__setattr__(self, name, as_array(getattr(self, name), np.float64, matrix, f"{where}.{name}"))
        if self.contact_positions is not None:
            if not names:
                raise ValueError(f"{where}.contact_positions: given without filters; allowed: None when F = 0")
            positions = as_array(self.contact_positions, np.float64, matrix, f"{where}.contact_positions")
            object.__setattr__(self, "contact_positions", positions)
        if self.air_times is not None:
            object.__setattr__(self, "air_times", AirTimes(*(float(v) for v in self.air_times)))

    def wrench(self) -> WrenchReading:
        """The net wrench (force, torque about the body origin) in the body frame."""
        return WrenchReading(self.frame_id, self.stamp, self.force, self.torque)


@dataclass(frozen=True, eq=False)
class DiagnosticStatusReading:
    """One ``diagnostic_msgs/DiagnosticStatus``: level OK 0 / WARN 1 / ERROR 2 / STALE 3, texts, key → value."""

    name: str
    level: int
    message: str
    hardware_id: str = ""
    values: Mapping[str, str] = field(default_factory=dict)

    LEVELS = (0, 1, 2, 3)

    def __post_init__(self) -> None:
        if int(self.level) not in self.LEVELS:
            raise ValueError(
                f"DiagnosticStatusReading(name={self.name!r}).level: got {self.level!r}; "
                "allowed: 0 (OK), 1 (WARN), 2 (ERROR), 3 (STALE)"
            )
        object.__setattr__(self, "level", int(self.level))
        object.__setattr__(self, "values", {str(k): str(v) for k, v in self.values.items()})
