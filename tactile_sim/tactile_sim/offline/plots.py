"""Pictures of a run (PNG, matplotlib without a display) from a :class:`~.digest.RunDigest`.

* ``<sensor>_heatmap.png`` per taxel sensor: the per-taxel magnitude at the moment of largest load, drawn over the
  taxels' positions in the sensor link frame (a grid as cells, other layouts as dots), next to the largest taxel
  value over time;
* ``<sensor>_temperature.png`` per TemperatureGrid: a slice through the hottest cell at the hottest moment (the
  slice across the axis along which the field varies least), next to min / mean / max over time;
* ``<sensor>_torque.png`` per JointTorque sensor: every joint's effort over time (N·m revolute, N prismatic, read
  from a recorded ``/robot_description`` when there is one);
* ``overview.png``: one taxel heat map, when each sensor touches, joint torque and temperature, on one page.

Times are seconds since the first digested message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from .digest import ContactSeries, RunDigest, TaxelSeries, ThermalSeries, TorqueSeries, joint_units

CHANNEL_STYLE = {
    "force": ("|F| per taxel", "N", 1.0, "viridis"),
    "displacement": ("|u| per marker", "µm", 1e6, "viridis"),
    "depth": ("overlap depth", "mm", 1e3, "viridis"),
    "contact": ("contact", "", 1.0, ListedColormap(["#d9d9d9", "#d62728"])),
    "distance": ("distance to the nearest surface", "mm", 1e3, "viridis_r"),
}
"""Taxel channel → (quantity, display unit, factor from SI to it, colour map)."""
AXIS_NAMES = "xyz"
AXIS_ALIGNED = 0.99
"""|cos| above which a layout plane counts as perpendicular to a link axis (its axes are then named x/y/z)."""
DPI = 110
LINE_STYLES = ("-", "--", ":", "-.")
MAX_TORQUE_LINES = 12
"""Most joints drawn in a joint-effort plot (:func:`plotted_joints`): more lines and legend entries are unreadable,
and take matplotlib minutes for thousands of joints."""


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _label(quantity: str, unit: str) -> str:
    return f"{quantity} ({unit})" if unit else quantity


# ------------------------------------------------------------------ taxel heat map
def plane_axes(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, str, str]:
    """Two in-plane unit axes (3,) of a taxel layout (n, 3) and their names: link axes when the layout's best-fit
    plane is perpendicular to one (z drawn upwards when it is in the plane), else the principal directions."""
    centred = positions - positions.mean(axis=0)
    _, _, vt = np.linalg.svd(centred)  # full_matrices: vt is (3, 3) for any number of taxels
    normal = vt[2]
    k = int(np.argmax(np.abs(normal)))
    if abs(normal[k]) > AXIS_ALIGNED:
        first, second = [i for i in range(3) if i != k]
        if first == 2:
            first, second = second, first
        eye = np.eye(3)
        return eye[first], eye[second], f"{AXIS_NAMES[first]}", f"{AXIS_NAMES[second]}"
    return vt[0], vt[1], "in-plane axis 1", "in-plane axis 2"


def draw_taxel_heatmap(fig: Figure, ax: Axes, series: TaxelSeries, t0: float) -> None:
    """The kept message of a taxel series on ``ax`` with a colour bar (link-frame axes in mm)."""
    msg = series.peak_message
    quantity, unit, factor, cmap = CHANNEL_STYLE[series.channel]
    n = len(msg.radii)
    positions = np.asarray(msg.positions, dtype=np.float64).reshape(n, 3)
    values = series.magnitudes(msg) * factor
    values[np.asarray(msg.radii) == 0] = np.nan  # fillers
    e1, e2, name1, name2 = plane_axes(positions)
    a, b = positions @ e1 * 1e3, positions @ e2 * 1e3
    if series.channel == "contact":
        vmin, vmax = 0.0, 1.0
    elif series.channel == "distance":  # the sensor's range: bright where something is near
        vmin, vmax = 0.0, float(np.max(msg.radii)) * factor
    else:
        finite = values[np.isfinite(values)]
        vmin = 0.0
        vmax = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    rows, cols = int(msg.rows), int(msg.cols)
    if rows > 1 and cols > 1 and rows * cols == n:
        image = ax.pcolormesh(a.reshape(rows, cols), b.reshape(rows, cols), values.reshape(rows, cols),
                              shading="nearest", cmap=cmap, vmin=vmin, vmax=vmax, edgecolors="white",
                              linewidth=0.5)
    else:
        image = ax.scatter(a, b, c=values, cmap=cmap, vmin=vmin, vmax=vmax, s=60, edgecolors="k", linewidths=0.3)
    ax.set_aspect("equal")
    ax.set_xlabel(f"{name1} in {msg.header.frame_id} (mm)")
    ax.set_ylabel(f"{name2} in {msg.header.frame_id} (mm)")
    moment = "closest approach" if series.channel == "distance" else "largest load"
    ax.set_title(f"{series.name} ({series.sensor_type})\nat t = {series.peak_time - t0:.2f} s, {moment}")
    bar = fig.colorbar(image, ax=ax, shrink=0.9)
    if series.channel == "contact":
        bar.set_ticks([0.25, 0.75], labels=["off", "on"])
    bar.set_label(_label(quantity, unit))


def draw_taxel_peak_over_time(ax: Axes, series: TaxelSeries, t0: float) -> None:
    """The largest taxel value (smallest distance; for contact flags the number on) per message over time, the
    heat map's moment marked."""
    quantity, unit, factor, _ = CHANNEL_STYLE[series.channel]
    times = np.asarray(series.times) - t0
    if series.channel == "contact":
        values, label, title = series.load, "taxels in contact", "taxels in contact over time"
    else:
        what = "smallest" if series.channel == "distance" else "largest"
        values, label, title = np.asarray(series.peak) * factor, _label(f"{what} {quantity}", unit), \
            f"{what} taxel value over time"
    ax.plot(times, values, color="tab:blue", lw=1.2)
    ax.axvline(series.peak_time - t0, color="tab:red", ls="--", lw=1, label="heat map")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(label)
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)


def taxel_figure(series: TaxelSeries, t0: float) -> Figure:
    fig = Figure(figsize=(10.5, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[1.0, 1.2])
    draw_taxel_heatmap(fig, left, series, t0)
    draw_taxel_peak_over_time(right, series, t0)
    return fig


# ------------------------------------------------------------------ temperature
def slice_axis(temperatures: np.ndarray) -> int:
    """The grid axis to slice across: the one along which the mean profile varies least (ties: fewer cells)."""
    spread = [np.ptp(temperatures.mean(axis=tuple(j for j in range(3) if j != i))) for i in range(3)]
    return min(range(3), key=lambda i: (round(spread[i], 9), temperatures.shape[i]))


def draw_temperature_slice(fig: Figure, ax: Axes, series: ThermalSeries, t0: float) -> None:
    """A slice of the hottest grid through its hottest cell, in the grid's frame (mm)."""
    msg = series.peak_message
    shape = (int(msg.nx), int(msg.ny), int(msg.nz))
    temps = np.asarray(msg.temperatures, dtype=np.float64).reshape(shape)
    axis = slice_axis(temps)
    index = int(np.unravel_index(np.argmax(temps), shape)[axis])
    image = np.take(temps, index, axis=axis)
    first, second = [i for i in range(3) if i != axis]
    origin = np.array([msg.origin.position.x, msg.origin.position.y, msg.origin.position.z]) * 1e3
    cell = np.array([msg.cell_size.x, msg.cell_size.y, msg.cell_size.z]) * 1e3
    q = msg.origin.orientation
    rotated = not np.allclose([q.x, q.y, q.z], 0.0)
    edges = [origin[i] + cell[i] * np.arange(shape[i] + 1) for i in range(3)]
    mesh = ax.pcolormesh(edges[first], edges[second], image.T, cmap="inferno", shading="flat")
    ax.set_aspect("equal")
    prefix = "grid " if rotated else ""
    ax.set_xlabel(f"{prefix}{AXIS_NAMES[first]} in {msg.header.frame_id} (mm)")
    ax.set_ylabel(f"{prefix}{AXIS_NAMES[second]} in {msg.header.frame_id} (mm)")
    centre = origin[axis] + cell[axis] * (index + 0.5)
    ax.set_title(f"{series.name}: slice {prefix}{AXIS_NAMES[axis]} = {centre:.1f} mm\n"
                 f"at t = {series.peak_time - t0:.2f} s, hottest")
    fig.colorbar(mesh, ax=ax, shrink=0.9).set_label("temperature (°C)")


def draw_temperature_over_time(ax: Axes, series: ThermalSeries, t0: float) -> None:
    times = np.asarray(series.times) - t0
    ax.fill_between(times, series.t_min, series.t_max, color="tab:orange", alpha=0.25, label="min–max")
    ax.plot(times, series.t_mean, color="tab:red", lw=1.2, label="mean")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("temperature (°C)")
    ax.set_title(f"{series.name}: grid temperature over time")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)


def thermal_figure(series: ThermalSeries, t0: float) -> Figure:
    fig = Figure(figsize=(10.5, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[1.0, 1.2])
    draw_temperature_slice(fig, left, series, t0)
    draw_temperature_over_time(right, series, t0)
    return fig


# ------------------------------------------------------------------ joint torque
def plotted_joints(efforts: np.ndarray) -> np.ndarray:
    """Indexes of the joints (columns of ``efforts``, messages × joints) drawn as lines: all of them up to
    :data:`MAX_TORQUE_LINES`, else that many with the largest peak |effort| (NaN counts as 0), in joint order."""
    n = efforts.shape[1]
    if n <= MAX_TORQUE_LINES:
        return np.arange(n)
    peak = np.nan_to_num(np.abs(efforts), nan=0.0).max(axis=0, initial=0.0)
    return np.sort(np.argsort(-peak, kind="stable")[:MAX_TORQUE_LINES])


def draw_torque(ax: Axes, series: TorqueSeries, t0: float, robot_description: str | None) -> None:
    times = np.asarray(series.times) - t0
    efforts = series.effort_array()
    drawn = plotted_joints(efforts)
    joints = [series.joints[k] for k in drawn]
    units = joint_units(robot_description, joints)
    for line, (k, joint) in enumerate(zip(drawn.tolist(), joints)):  # line styles keep coinciding efforts visible
        ax.plot(times, efforts[:, k], lw=1.4, ls=LINE_STYLES[line % len(LINE_STYLES)],
                label=f"{joint} ({units[line]})")
    unit = units[0] if len(set(units)) == 1 else "N·m or N"
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"effort ({unit})")
    shown = "" if len(drawn) == len(series.joints) else \
        f" ({len(drawn)} of {len(series.joints)} joints: the largest |effort|)"
    ax.set_title(f"{series.name}: joint effort over time{shown}")
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)


def torque_figure(series: TorqueSeries, t0: float, robot_description: str | None) -> Figure:
    fig = Figure(figsize=(8.0, 4.2), layout="constrained")
    draw_torque(fig.subplots(), series, t0, robot_description)
    return fig


# ------------------------------------------------------------------ overview
def draw_touch_timeline(ax: Axes, digest: RunDigest, t0: float) -> None:
    """One row per taxel sensor and contact body, filled where it touches (digest definitions)."""
    rows = [s for s in digest.series.values() if isinstance(s, (TaxelSeries, ContactSeries))]
    for k, s in enumerate(rows):
        times = np.asarray(s.times) - t0
        ax.fill_between(times, k - 0.35, k + 0.35, where=np.asarray(s.touch), step="mid", color="tab:red",
                        alpha=0.8, linewidth=0)
    ax.set_yticks(range(len(rows)),
                  labels=[f"{s.name}/{s.body}" if isinstance(s, ContactSeries) else s.name for s in rows])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel("time (s)")
    ax.set_title("when each sensor touches (or sees) something")
    ax.grid(axis="x", alpha=0.3)


def overview_figure(digest: RunDigest, title: str) -> Figure:
    t0 = digest.first_time or 0.0
    taxels = digest.of_type(TaxelSeries)
    heat = next((s for s in taxels if s.channel == "force"), taxels[0] if taxels else None)
    torque = digest.of_type(TorqueSeries)
    thermal = digest.of_type(ThermalSeries)
    fig = Figure(figsize=(12.0, 8.0), layout="constrained")
    (a, b), (c, d) = fig.subplots(2, 2)
    for ax, have in ((a, heat), (c, torque), (d, thermal)):
        if not have:
            ax.set_axis_off()
    if heat is not None:
        draw_taxel_heatmap(fig, a, heat, t0)
    draw_touch_timeline(b, digest, t0)
    if torque:
        draw_torque(c, torque[0], t0, digest.robot_description)
    if thermal:
        draw_temperature_over_time(d, thermal[0], t0)
    fig.suptitle(title, fontsize=14)
    return fig


# ------------------------------------------------------------------ files
def write_pictures(digest: RunDigest, folder: str | Path, sensors: Sequence[str] | None = None,
                   title: str = "tactile_sim run") -> list[Path]:
    """Write the pictures of the module docstring into ``folder`` (created); only those of ``sensors`` when given
    (the overview only without). Returns the files written. Raises ValueError for a sensor name the digest lacks."""
    folder = Path(folder)
    names = {s.name for s in digest.series.values()}
    unknown = [n for n in sensors or () if n not in names]
    if unknown:
        raise ValueError(f"pictures: no messages of sensors {unknown}; sensors with messages: {sorted(names)}")
    folder.mkdir(parents=True, exist_ok=True)  # (after the names: a refused call leaves no folder behind)
    t0 = digest.first_time or 0.0
    figures: list[tuple[str, Figure]] = []
    for s in digest.series.values():
        if sensors is not None and s.name not in sensors:
            continue
        if isinstance(s, TaxelSeries):
            figures.append((f"{_safe(s.name)}_heatmap.png", taxel_figure(s, t0)))
        elif isinstance(s, ThermalSeries):
            figures.append((f"{_safe(s.name)}_temperature.png", thermal_figure(s, t0)))
        elif isinstance(s, TorqueSeries):
            figures.append((f"{_safe(s.name)}_torque.png", torque_figure(s, t0, digest.robot_description)))
    if sensors is None and digest.series:
        figures.append(("overview.png", overview_figure(digest, title)))
    written = []
    for name, fig in figures:
        path = folder / name
        fig.savefig(path, dpi=DPI)
        written.append(path)
    return written
