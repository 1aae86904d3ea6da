"""Rules across sections of one configuration, decidable without the scene: material references, shared thermal
settings (docs/models/temperature_grid.md#temperature-grid), JointTorque contact sources
(docs/models/joint_torque.md#contact-loads) and ``jitter < dt`` with each sensor's evaluation period
(docs/models/imperfections.md#evaluation-period, docs/models/imperfections.md#validity). Body, joint and link names are
checked later against the scene.

Every check names the sensor by its ``where`` (``<file>:sensors[i]`` from YAML, ``Class(name='…')`` from Python).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..constants import steps_from_period
from .errors import combined_error, format_problem, suggest
from .materials import TemperatureProperties
from .schema import SuiteConfig
from .sensor_options import ContactSensor, JointTorque, KinematicTaxel, PipelineOptions, SensorOptions, TemperatureGrid


def evaluation_steps(update_period: float, engine_dt: float) -> int:
    """k = max(1, round(P / dt_engine)), halves rounded up (docs/models/imperfections.md#evaluation-period): the sensor
    runs every k engine steps."""
    return max(1, steps_from_period(update_period, engine_dt)[0])


def evaluation_period(update_period: float, engine_dt: float) -> float:
    """The sensor's dt in s: k·dt_engine with k from :func:`evaluation_steps`."""
    return evaluation_steps(update_period, engine_dt) * engine_dt


def jitter_problems(sensors: Sequence[SensorOptions], engine_dt: float) -> list[str]:
    """``jitter < dt`` for every sensor with a pipeline (dt = its evaluation period)."""
    lines = []
    for s in sensors:
        if isinstance(s, PipelineOptions) and s.jitter > 0:
            dt = evaluation_period(s.update_period, engine_dt)
            if s.jitter >= dt:
                lines.append(format_problem(s.where, "jitter", "jitter must be < the sensor's evaluation period dt",
                                            s.jitter, f"0 <= jitter < dt = {dt!r} s (and <= delay)"))
    return lines


def _unknown_material(where: str, option: str, name: str, materials: Mapping[str, TemperatureProperties]) -> str:
    return format_problem(where, option, "unknown material", name,
                          "a name defined under materials: (" + (", ".join(sorted(materials)) or "none defined")
                          + ") or inline properties", suggest(name, materials, cutoff=0.6))


def material_problems(config: SuiteConfig) -> list[str]:
    """Material names used by objects and TemperatureGrid.properties_dict must exist under ``materials:``."""
    lines = []
    for obj in config.objects:
        if isinstance(obj.material, str) and obj.material not in config.materials:
            lines.append(_unknown_material(obj.where, "material", obj.material, config.materials))
    for grid in config.sensors_of(TemperatureGrid):
        for body, ref in grid.properties_dict.items():
            if isinstance(ref, str) and ref not in config.materials:
                lines.append(_unknown_material(grid.where, f"properties_dict.{body}", ref, config.materials))
    return lines


def thermal_problems(grids: Sequence[TemperatureGrid], materials: Mapping[str, TemperatureProperties]) -> list[str]:
    """Shared TemperatureGrid settings (docs/models/temperature_grid.md#temperature-grid): one grid per link; merged
    ``properties_dict`` without
    contradictions; equal non-None ``ambient_temperature`` / ``convection_coefficient``; with
    ``simulate_all_link_temperatures`` one common ``update_period``."""
    lines = []
    by_link: dict[str, TemperatureGrid] = {}
    for g in grids:
        if g.link in by_link:
            lines.append(format_problem(g.where, "link", "a second TemperatureGrid on the same link", g.link,
                                        f"one TemperatureGrid per link (already: {by_link[g.link].where})"))
        by_link.setdefault(g.link, g)
    merged: dict[str, tuple[TemperatureProperties, TemperatureGrid]] = {}
    for g in grids:
        for body, ref in g.properties_dict.items():
            props = materials.get(ref) if isinstance(ref, str) else ref
            if props is None:
                continue
            if body in merged and merged[body][0] != props:
                lines.append(format_problem(g.where, f"properties_dict.{body}", "conflicting material for one body",
                                            props.model_dump(), f"the same material as {merged[body][1].where}: "
                                            f"{merged[body][0].model_dump()}"))
            merged.setdefault(body, (props, g))
    for option in ("ambient_temperature", "convection_coefficient"):
        given = [(g, getattr(g, option)) for g in grids if getattr(g, option) is not None]
        if len({v for _, v in given}) > 1:
            listing = ", ".join(f"{g.where}={v!r}" for g, v in given)
            lines.append(format_problem(given[-1][0].where, option, f"conflicting shared {option}", given[-1][1],
                                        f"one value for every TemperatureGrid (given: {listing})"))
    if any(g.simulate_all_link_temperatures for g in grids) and len({g.update_period for g in grids}) > 1:
        listing = ", ".join(f"{g.where}={g.update_period!r}" for g in grids)
        lines.append(format_problem(grids[-1].where, "update_period",
                                    "with simulate_all_link_temperatures every TemperatureGrid needs the same "
                                    "update_period", grids[-1].update_period, f"one value (given: {listing})"))
    return lines


def contact_source_problems(sensors: Sequence[SensorOptions]) -> list[str]:
    """A JointTorque's listed ``contact_sources`` must be KinematicTaxel or ContactSensor names of this config."""
    lines = []
    by_name = {s.name: s for s in sensors}
    contact = sorted(n for n, s in by_name.items() if isinstance(s, (KinematicTaxel, ContactSensor)))
    for s in sensors:
        if isinstance(s, JointTorque) and isinstance(s.contact_sources, list):
            for name in s.contact_sources:
                if not isinstance(by_name.get(name), (KinematicTaxel, ContactSensor)):
                    problem = "not a contact sensor" if name in by_name else "unknown sensor"
                    lines.append(format_problem(s.where, "contact_sources", problem, name,
                                                "'auto', [] or names of KinematicTaxel / ContactSensor sensors ("
                                                + (", ".join(contact) or "none configured") + ")",
                                                suggest(name, contact, cutoff=0.6)))
    return lines


def check_suite(config: SuiteConfig) -> None:
    """Run every cross-section check; one ConfigError listing all problems."""
    lines = (material_problems(config)
             + thermal_problems(config.sensors_of(TemperatureGrid), config.materials)
             + contact_source_problems(config.sensors)
             + jitter_problems(config.sensors, config.suite.step_dt))
    if lines:
        raise combined_error(lines)
