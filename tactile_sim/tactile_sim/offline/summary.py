"""The terminal summary of a run: one row per sensor (messages, peak value, share of messages touching, evaluations
per wall-clock second) and a line on the run itself (steps, simulated and wall time, real-time factor)."""

from __future__ import annotations

import numpy as np

from ..io.stamps import NS_PER_S
from .digest import (
    IN_RANGE,
    TOUCH_LEVEL,
    ContactSeries,
    RunDigest,
    TaxelSeries,
    ThermalSeries,
    TorqueSeries,
    joint_units,
)
from .run_loop import RunStats

GAP_PERIODS = 2.0
"""A pause between clock inputs longer than this many update periods is reported."""

TOUCH_LEGEND = (f"touching: a taxel above {TOUCH_LEVEL['force']:g} N, {TOUCH_LEVEL['displacement'] * 1e6:g} µm "
                f"displacement or {TOUCH_LEVEL['depth'] * 1e6:g} µm depth, a contact flag on, a distance probe below "
                f"{IN_RANGE:.0%} of its range, a contact body with a non-zero net force")


def _peak_text(series, robot_description: str | None) -> str:
    if isinstance(series, TaxelSeries):
        if series.channel == "contact":
            return f"max {int(max(series.load))}/{len(series.peak_message.radii)} taxels on"
        if series.channel == "distance":
            return f"min distance {min(series.peak) * 1e3:.2f} mm"
        if series.channel == "force":
            return f"max |F| {max(series.peak):.3g} N"
        if series.channel == "displacement":
            return f"max |u| {max(series.peak) * 1e6:.3g} µm"
        return f"max depth {max(series.peak) * 1e3:.3g} mm"
    if isinstance(series, ThermalSeries):
        return f"{min(series.t_min):.1f} … {max(series.t_max):.1f} °C"
    if isinstance(series, TorqueSeries):
        efforts = np.abs(series.effort_array())
        if not efforts.size:
            return "-"
        k = int(np.argmax(efforts.max(axis=0)))
        unit = joint_units(robot_description, series.joints)[k]
        return f"max |τ| {efforts[:, k].max():.3g} {unit} ({series.joints[k]})"
    return f"max |F| {max(series.force):.3g} N"


def _type_name(series) -> str:
    if isinstance(series, TaxelSeries):
        return series.sensor_type
    return {ThermalSeries: "TemperatureGrid", TorqueSeries: "JointTorque", ContactSeries: "ContactSensor"}[
        type(series)]


def summary_rows(digest: RunDigest, wall_s: float | None = None) -> list[tuple[str, ...]]:
    """(sensor, type, messages, peak, touching, evaluations/s) per sensor; the last column is "-" without
    ``wall_s``; touching is "-" for sensors without a notion of touch."""
    rows = []
    for s in digest.series.values():
        name = f"{s.name}/{s.body}" if isinstance(s, ContactSeries) else s.name
        touch = getattr(s, "touch", None)
        share = f"{100.0 * float(np.mean(touch)):.0f} %" if touch else "-"
        rate = f"{len(s.times) / wall_s:.1f}" if wall_s else "-"
        rows.append((name, _type_name(s), str(len(s.times)), _peak_text(s, digest.robot_description), share, rate))
    return rows


def format_table(digest: RunDigest, wall_s: float | None = None) -> str:
    """The per-sensor table as aligned text (header, rule, rows, the touch legend)."""
    header = ("sensor", "type", "msgs", "peak", "touching", "eval/s")
    rows = summary_rows(digest, wall_s)
    if not rows:
        return "no sensor messages"
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    right = {2, 4, 5}

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule] + [line(r) for r in rows] + [f"({TOUCH_LEGEND})"])


def format_run(stats: RunStats, rate: float, dropped: dict[str, int] | None = None) -> str:
    """One line on the run (steps, simulated time, wall time, steps/s, real-time factor), then any restarts,
    reordered or dropped inputs."""
    simulated = stats.ticks / rate
    wall = stats.wall_s
    speed = f"{stats.ticks / wall:.1f} steps/s, {simulated / wall:.2f}x real time" if wall > 0 else "-"
    lines = [f"{stats.ticks} steps at {rate:g} Hz = {simulated:.2f} s simulated in {wall:.1f} s wall ({speed})"]
    if stats.longest_gap_ns > GAP_PERIODS * NS_PER_S / rate:
        lines.append(f"inputs paused for up to {stats.longest_gap_ns / NS_PER_S:.3f} s; the last ones were held")
    if stats.restarts - stats.skipped_gaps:
        lines.append(f"time jumped backwards {stats.restarts - stats.skipped_gaps} time(s): the sensors restarted "
                     "each time")
    if stats.skipped_gaps:
        lines.append(f"time jumped forward beyond the gap threshold {stats.skipped_gaps} time(s): the sensors "
                     "restarted each time")
    if stats.reordered:
        lines.append(f"{stats.reordered} clock input(s) slightly out of order were used without moving the clock")
    if dropped:
        lines.append("inputs dropped or partly ignored: " + ", ".join(f"{k} {v}" for k, v in sorted(dropped.items())))
    return "\n".join(lines)
