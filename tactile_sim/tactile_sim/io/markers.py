"""rviz markers of readings (``visualization_msgs/msg/Marker``), pure functions, no ROS.

Colours use one FIXED scale per sensor, given by the caller (never rescaled per message, so colours are
comparable over time): u = clip(value / max_value, 0, 1) is mapped by :func:`colour_ramp`
(blue 0 → cyan 0.25 → green 0.5 → yellow 0.75 → red 1). Every marker is in the reading's frame (the sensor link,
or the contact body) and has a stable namespace and id, so each update replaces the previous one:

| markers | type | namespace | id |
|---|---|---|---|
| taxels of a taxel sensor | SPHERE_LIST | ``<sensor>/taxels`` | 0 |
| per-taxel force (force channel) | ARROW, DELETE when the force is 0 | ``<sensor>/forces`` | taxel index |
| thermal grid cells | CUBE_LIST | ``<sensor>/thermal`` | 0 |
| net force of a ContactSensor body | ARROW, DELETE when 0 | ``<sensor>/<body>/force`` | 0 |
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .encode import header, pose, vector3
from .msg_types import message_class, new_message
from .readings import LinkContactReading, TaxelReading, ThermalReading

MARKER = "visualization_msgs/msg/Marker"
MARKER_ARRAY = "visualization_msgs/msg/MarkerArray"

RAMP_STOPS = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 1.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
"""RGB of the colour ramp at u = 0, 0.25, 0.5, 0.75, 1 (linear in between)."""

FILLER_RGBA = (0.6, 0.6, 0.6, 0.25)
"""Filler taxels (radius 0): translucent grey."""

INVALID_RGBA = (0.6, 0.6, 0.6, 1.0)
"""Every element of an invalid reading: opaque grey."""

WHITE = (1.0, 1.0, 1.0, 1.0)
"""Marker-wide colour of the list markers (their per-point colours apply)."""

TAXEL_CHANNEL_PREFERENCE = ("force", "displacement", "depth", "distance", "contact")
"""The channel that colours the taxels when the caller names none: the first one the reading has."""


def colour_ramp(u: np.ndarray) -> np.ndarray:
    """RGB (k, 3) of values u (k,) on the fixed ramp; u is clipped to [0, 1]."""
    u = np.clip(np.asarray(u, dtype=np.float64), 0.0, 1.0)
    stops = np.linspace(0.0, 1.0, len(RAMP_STOPS))
    return np.stack([np.interp(u, stops, RAMP_STOPS[:, c]) for c in range(3)], axis=-1)


def _rgba(rgba: np.ndarray) -> list[Any]:
    """``std_msgs/msg/ColorRGBA`` of each row of (k, 4), rounded to float32 (the message's type)."""
    cls = message_class("std_msgs/msg/ColorRGBA")
    return [cls(r=r, g=g, b=b, a=a) for r, g, b, a in np.asarray(rgba, np.float32).reshape(-1, 4).tolist()]


def _points(xyz: np.ndarray) -> list[Any]:
    """``geometry_msgs/msg/Point`` of each row of (k, 3)."""
    cls = message_class("geometry_msgs/msg/Point")
    return [cls(x=x, y=y, z=z) for x, y, z in np.asarray(xyz, np.float64).reshape(-1, 3).tolist()]


def _colours(values: np.ndarray, max_value: float, alpha: float) -> np.ndarray:
    """RGBA (k, 4) of magnitudes on the fixed scale [0, max_value]."""
    rgb = colour_ramp(values / max_value)
    return np.concatenate([rgb, np.full((len(rgb), 1), alpha)], axis=1)


def _check_positive(value: float, name: str) -> None:
    if not value > 0:
        raise ValueError(f"markers: {name} must be > 0; got {value!r}")


def _marker(head: Any, ns: str, marker_id: int, marker_type: int, **fields: Any) -> Any:
    """A marker with header ``head`` (shared by the markers of one reading), locked to its frame; its pose is the
    identity unless ``fields`` sets one."""
    fields.setdefault("pose", pose((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)))
    return new_message(MARKER, header=head, ns=ns, id=marker_id, type=marker_type, frame_locked=True, **fields)


def _arrows(head: Any, ns: str, tips: np.ndarray, vectors: np.ndarray, max_value: float, arrow_length: float
            ) -> list[Any]:
    """One ARROW per row (id = row index) from tip − vector/max_value·arrow_length to tip, coloured by |vector|
    on [0, max_value]; a DELETE for a zero vector. tips, vectors: (k, 3)."""
    cls = message_class(MARKER)
    magnitudes = np.linalg.norm(vectors, axis=1)
    ends = _points(np.stack([tips - vectors / max_value * arrow_length, tips], axis=1))
    colours = _rgba(_colours(magnitudes, max_value, 1.0))
    scale = vector3((0.1 * arrow_length, 0.2 * arrow_length, 0.0))
    template = _marker(head, ns, 0, cls.ARROW, action=cls.ADD, scale=scale)  # nested defaults shared
    return [
        replace(template, id=k, action=cls.DELETE)
        if magnitudes[k] == 0.0
        else replace(template, id=k, points=ends[2 * k : 2 * k + 2], color=colours[k])
        for k in range(len(tips))
    ]


def default_sphere_diameter(positions: np.ndarray, radii: np.ndarray) -> float:
    """A sphere size for a layout, m: 0.8 × the median distance from a taxel to its nearest distinct neighbour;
    for a single taxel 2 × its radius (0.01 m when that is 0). Compute once per sensor, not per message."""
    positions = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    unique = np.unique(positions, axis=0)
    if len(unique) < 2:
        radius = float(np.max(radii))
        return 2.0 * radius if radius > 0 else 0.01
    from scipy.spatial import cKDTree  # scipy only where a layout is sized (tactile-sim check lists topics without it)

    distances, _ = cKDTree(unique).query(unique, k=2)
    return 0.8 * float(np.median(distances[:, 1]))


def taxel_magnitude(reading: TaxelReading, channel: str) -> np.ndarray:
    """Per-taxel magnitude (n,) of a channel: the value (contact: 0/1), or the Euclidean norm of a vector."""
    if channel not in reading.channels:
        raise ValueError(
            f"taxel_markers(sensor_name={reading.sensor_name!r}): channel {channel!r} is not in the reading; "
            f"allowed: {sorted(reading.channels)}"
        )
    values = reading.channels[channel].astype(np.float64)
    return np.linalg.norm(values, axis=1) if values.ndim == 2 else values


def taxel_markers(
    reading: TaxelReading,
    *,
    max_value: float,
    sphere_diameter: float,
    channel: str | None = None,
    force_arrows: bool = True,
    arrow_length: float = 0.02,
) -> list[Any]:
    """SPHERE_LIST of the taxels coloured by the magnitude of ``channel`` on [0, max_value], plus one ARROW per
    taxel for the force channel (a force of max_value draws arrow_length metres, ending at the taxel).

    channel: default the first of ``TAXEL_CHANNEL_PREFERENCE`` present. max_value: in the channel's unit (contact:
    1). sphere_diameter: m (see :func:`default_sphere_diameter`). Fillers are translucent grey; an invalid reading
    is all grey and deletes its arrows. force_arrows=False leaves the arrows out: with rosbags a marker costs about
    0.1 ms to build and serialise, so per-taxel arrows of a large array limit the visualisation rate.
    """
    _check_positive(max_value, "max_value")
    _check_positive(sphere_diameter, "sphere_diameter")
    _check_positive(arrow_length, "arrow_length")
    cls = message_class(MARKER)
    name = channel or next((c for c in TAXEL_CHANNEL_PREFERENCE if c in reading.channels), None)
    if name is None:
        raise ValueError(
            f"taxel_markers(sensor_name={reading.sensor_name!r}): the reading has no channel to colour by; "
            f"allowed: one of {TAXEL_CHANNEL_PREFERENCE}"
        )
    magnitude = taxel_magnitude(reading, name)
    colours = _colours(magnitude, max_value, 1.0)
    colours[reading.radii == 0] = FILLER_RGBA
    if not reading.valid:
        colours[:] = INVALID_RGBA
    head = header(reading.frame_id, reading.stamp)
    spheres = _marker(
        head,
        f"{reading.sensor_name}/taxels",
        0,
        cls.SPHERE_LIST,
        action=cls.ADD,
        scale=vector3((sphere_diameter,) * 3),
        color=_rgba(WHITE)[0],
        points=_points(reading.positions),
        colors=_rgba(colours),
    )
    markers = [spheres]
    if force_arrows and "force" in reading.channels:
        forces = reading.channels["force"].astype(np.float64)
        if not reading.valid:
            forces = np.zeros_like(forces)
        tips = reading.positions.astype(np.float64)
        markers += _arrows(head, f"{reading.sensor_name}/forces", tips, forces, max_value, arrow_length)
    return markers


def thermal_markers(
    reading: ThermalReading, *, temperature_range: tuple[float, float] = (0.0, 100.0), alpha: float = 0.8
) -> list[Any]:
    """CUBE_LIST of the grid cells (pose = the grid origin, cube size = cell size) coloured by temperature on the
    fixed range (°C, low → blue, high → red; the sensor's ``debug_temperature_range``). Invalid: all grey."""
    low, high = (float(v) for v in temperature_range)
    _check_positive(high - low, "temperature_range[1] - temperature_range[0]")
    cls = message_class(MARKER)
    nx, ny, nz = reading.grid_size
    index = np.stack(np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij"), axis=-1)
    centres = ((index.reshape(-1, 3) + 0.5) * reading.cell_size).astype(np.float64)
    colours = _colours(reading.temperatures.reshape(-1).astype(np.float64) - low, high - low, alpha)
    if not reading.valid:
        colours[:] = INVALID_RGBA
    cubes = _marker(
        header(reading.frame_id, reading.stamp),
        f"{reading.sensor_name}/thermal",
        0,
        cls.CUBE_LIST,
        action=cls.ADD,
        pose=pose(reading.origin, reading.origin_orientation),
        scale=vector3(reading.cell_size),
        color=_rgba(WHITE)[0],
        points=_points(centres),
        colors=_rgba(colours),
    )
    return [cubes]


def link_contact_markers(reading: LinkContactReading, *, max_force: float, arrow_length: float = 0.1) -> list[Any]:
    """ARROW of the net force on a ContactSensor body, ending at the body origin (a force of max_force N draws
    arrow_length metres), coloured by |F| on [0, max_force]; DELETE when the force is 0 or the reading invalid."""
    _check_positive(max_force, "max_force")
    _check_positive(arrow_length, "arrow_length")
    force = reading.force if reading.valid else np.zeros(3)
    head = header(reading.frame_id, reading.stamp)
    ns = f"{reading.sensor_name}/{reading.body_name}/force"
    return _arrows(head, ns, np.zeros((1, 3)), force[None, :], max_force, arrow_length)


def marker_array(markers: Sequence[Any]) -> Any:
    """``visualization_msgs/msg/MarkerArray`` of markers."""
    return new_message(MARKER_ARRAY, markers=list(markers))
