"""``tactile-sim check CONFIG.yaml [--robot URDF]``: validate a sensor configuration and print what it would build —
per sensor its type, link, taxel count, evaluation rate, the imperfections that are on and the topics the node
would publish — without importing torch or Warp, so that a configuration error arrives in well under a second. The
layouts the configuration declares (arrays, grids, layout files) and every per-probe and per-channel option are
checked against each other with the build's own functions.

With a robot (``--robot``, else the configuration's ``robot.urdf``) the links, joints and ContactSensor patterns that
sensors name are checked against the URDF's too. ``replay``, ``node`` and ``demo`` validate the same way
(:func:`early_config`) before they import the library.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..constants import RATE_RANGE
from .common import check_device, fail

if TYPE_CHECKING:  # imported where used: the command line imports this module for every command
    from ..config.joint_selection import RobotJoints

DESCRIPTION = """\
Validate SENSORS.yaml (every option, every cross-section rule) and print the sensors it resolves to: type, link,
taxel count, evaluation rate, which imperfections are on and the topics tactile_sim_node would publish. Exit status
0 when valid, 2 with the file, option, value and what is allowed when not. Torch and Warp are not imported."""

TAXEL_TYPES = ("ContactProbe", "ContactDepthProbe", "KinematicTaxel", "ElastomerTaxel", "ProximityTaxel",
               "SurfaceDistanceProbe")
PIPELINE_OPTIONS = ("noise", "bias", "random_walk", "resolution", "delay", "jitter", "probe_gain",
                    "probe_gain_resample_range", "probe_radius_noise", "dead_taxel_probability", "hysteresis_strength",
                    "crosstalk_strength", "crosstalk_kernel", "history_length")
"""Options of the measured branch; one is *on* when it differs from its default."""


def add_check_command(commands: argparse._SubParsersAction) -> None:
    """Register ``check`` on the ``tactile-sim`` sub-command parsers."""
    p = commands.add_parser("check", help="validate a sensor configuration and list what it builds (no torch)",
                            description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", metavar="SENSORS.yaml", help="sensor configuration (path or package://<pkg>/<path>)")
    p.add_argument("--robot", metavar="URDF", help="robot URDF file (default: the configuration's robot.urdf)")
    p.add_argument("--ground-truth", action="store_true", help="list the ground-truth topics too")
    p.set_defaults(func=run_check_command)


@dataclass(frozen=True)
class SensorSummary:
    """What one sensor of a configuration builds: count is its taxels, cells, joints or bodies (None: known only
    once the scene is built); rate in Hz; imperfections: the measured-branch options that are on."""

    name: str
    type: str
    link: str
    count: int | None
    unit: str
    rate: float
    imperfections: tuple[str, ...]
    topics: tuple[tuple[str, str], ...]


def early_config(command: str, source, robot: str | Path | None = None, device: str = "",
                 steps_at_its_rate: bool = False) -> int | None:
    """None for a valid configuration (:func:`validated`; without a ``device`` override, its ``suite.device`` usable
    here; with ``steps_at_its_rate`` (a replay without ``--rate``), its engine rate within
    :data:`~..constants.RATE_RANGE`), else the exit status after printing the error: the check of every command that
    builds sensors, done before it imports the library."""
    from ..errors import ConfigError

    try:
        config, _ = validated(source, robot)
    except ConfigError as exc:
        return fail(command, str(exc))
    where = f"{config.source or source}:suite"
    problem = None if device else check_device(config.suite.device, f"{where}.device")
    if problem is None and steps_at_its_rate:
        problem = check_rate(config.suite, where)
    return fail(command, problem) if problem else None


def validated(source, robot: str | Path | None, ground_truth: bool = False):
    """(the configuration at ``source``, its :func:`summarize` rows) once every rule decidable without building
    the scene passes: the options (:func:`~..config.loader.load_config`), the names the sensors give the robot
    (:func:`robot_names`), the sensors' names and topics (:func:`~..ros.topic_plan.published_topics`, as the node
    refuses them) and the bodies of ContactSensor patterns; ConfigError otherwise."""
    from ..config.loader import load_config, with_robot_file

    config = load_config(source)
    if robot:
        config = with_robot_file(config, robot)
    names = robot_names(config)
    from ..ros.topic_plan import published_topics  # here: a configuration that does not load needs none of it

    published_topics(config, ground_truth=True)
    return config, summarize(config, ground_truth, *(names or (None, None)))


def check_rate(suite, where: str) -> str | None:
    """None when the engine rate of ``suite`` (its ``rate``, or 1/``dt``) is one the node and a replay step at, else
    why not (``where``: ``<file>:suite``)."""
    low, high = RATE_RANGE
    rate = 1.0 / suite.step_dt
    if low <= rate <= high:
        return None
    option, got = ("rate", suite.rate) if suite.rate is not None else ("dt", suite.dt)
    return (f"{where}.{option}: a replay steps at {rate:g} Hz, outside what the node steps at; got {got!r}; allowed: "
            f"{low:g} to {high:g} Hz (dt {1 / high:g} to {1 / low:g} s), or --rate HZ to step at another rate")


def preflight(command: str, device: str, source, robot: str | Path | None, verbose: bool,
              steps_at_its_rate: bool = False) -> int | None:
    """What a command that builds sensors checks before it imports the library: ``--device`` usable here
    (:func:`.common.check_device`) and the configuration valid (:func:`early_config`). None when both pass (Warp's
    own output then follows ``verbose``), else the exit status after printing the error."""
    problem = check_device(device)
    if problem:
        return fail(command, problem)
    status = early_config(command, source, robot, device, steps_at_its_rate)
    if status is None:
        from ..geometry.warp_kernels import set_verbose  # imports warp: the command is about to need it

        set_verbose(verbose)
    return status


def robot_names(config) -> tuple[set[str], RobotJoints] | None:
    """(link names, its name and joint names in URDF order) of the configuration's robot (its ``robot.urdf``; None
    without one), after checking that every link and body the sensors name exists; ConfigError otherwise.
    (JointTorque's joints are checked by :func:`checked_size`, as the build selects them.)"""
    from ..config.errors import config_error, suggest
    from ..config.joint_selection import RobotJoints
    from ..text_files import read_file_bytes

    if config.robot is None:
        return None
    path = config.robot.urdf
    try:
        root = ET.fromstring(read_file_bytes(path, "URDF file"))
    except (OSError, ValueError, ET.ParseError) as exc:
        raise config_error(str(path), "", f"cannot read the robot URDF ({exc})", str(path),
                           "a readable URDF (XML) file") from None
    links = {e.get("name") for e in root.iter("link")}
    joints = [e.get("name") for e in root.iter("joint")]
    movable = [e.get("name") for e in root.iter("joint") if e.get("type") != "fixed"]
    bodies = links | {o.name for o in config.objects}
    for opt in config.sensors:
        named = {"link": [opt.link] if isinstance(getattr(opt, "link", None), str) else [],
                 "track": getattr(opt, "track", None) or [], "ignore": getattr(opt, "ignore", None) or []}
        for key, names in named.items():
            for name in names:
                if name not in bodies:
                    where = "link" if key == "link" else "body"
                    raise config_error(opt.where, key, f"no {where} of that name in {path}", name,
                                       f"one of the {len(bodies)} names there (links and objects)",
                                       suggest(name, sorted(bodies)))
    return links, RobotJoints(root.get("name", ""), joints, movable)


def summarize(config, ground_truth: bool = False, links: set[str] | None = None,
              joints: RobotJoints | None = None) -> list[SensorSummary]:
    """One :class:`SensorSummary` per sensor of a validated configuration, in its order, after the checks the build
    makes of what the configuration declares (:func:`checked_size`), of the bodies of ContactSensor patterns and
    the materials of TemperatureGrid links (``links``: the robot's) and of the joints of JointTorque sensors
    (``joints``: the robot's name and joint names, as :func:`robot_names` gives them); ConfigError
    otherwise."""
    from ..config.body_patterns import filter_bodies, prim_path_bodies
    from ..config.budget import check_budget
    from ..config.suite_checks import evaluation_steps
    from ..ros.topic_plan import sensor_entries
    from ..sensors.thermal.materials import link_material, resolve_materials

    dt = config.suite.step_dt
    out, probes = [], {}
    names = None if links is None else [*links, *(o.name for o in config.objects)]
    materials = None
    for opt in config.sensors:
        bodies = None
        steps = evaluation_steps(opt.update_period, dt)
        link, unit, count = getattr(opt, "link", ""), "taxels", checked_size(opt, steps * dt, joints)
        if opt.type in TAXEL_TYPES and count is not None:
            probes[opt.name] = count
        elif opt.type == "TemperatureGrid":
            unit = "cells"
            if names is not None:
                if materials is None:
                    materials = resolve_materials([s for s in config.sensors if s.type == "TemperatureGrid"], config,
                                                  names, {})
                link_material(materials, names.index(opt.link), opt.link, opt.where)
        elif opt.type == "JointTorque":
            unit, link = "joints", opt.robot or "robot"
        elif opt.type == "ContactSensor":
            link, unit = opt.prim_path, "bodies"
            if names is not None:
                matched = prim_path_bodies(opt.prim_path, names, opt.where)
                filter_bodies(opt.filter_prim_paths_expr, names, matched, opt.where)
                bodies = sorted(names[i] for i in matched)
                count = len(bodies)
        topics = tuple((e.topic, e.message_type)
                       for e in sensor_entries(opt, opt.where, ground_truth=ground_truth, bodies=bodies))
        defaults = type(opt).model_fields
        on = tuple(k for k in PIPELINE_OPTIONS if k in defaults and getattr(opt, k) != defaults[k].default)
        out.append(SensorSummary(opt.name, opt.type, link, count, unit, 1.0 / (steps * dt), on, topics))
    check_budget(config, probe_counts=probes)  # with the probes of layout files
    return out


def checked_size(opt, period: float, joints: RobotJoints | None = None) -> int | None:
    """The taxels, cells or joints of one sensor (None: known only once the scene is built) after the checks the
    build makes of its declared layout (an array, a grid or a layout file, read here:
    :func:`~..sensors.layout.declared.declared_layout`) or its joint selection (``joints``: the robot's name and
    joint names, when known), and of its imperfection options against them and its evaluation
    ``period`` (s); ConfigError otherwise."""
    from ..config.joint_selection import selected_joints
    from ..config.sensor_options import MEASURED_CHANNELS
    from ..imperfections.spec import imperfections_from_options
    from ..sensors.layout.declared import declared_layout

    layout, validity = None, False
    if opt.type in TAXEL_TYPES:
        layout = declared_layout(opt)
        if layout is None:
            return None
        n, shape = layout.n, layout.shape
    elif opt.type == "TemperatureGrid":
        shape = tuple(opt.grid_size)
        n = shape[0] * shape[1] * shape[2]
    elif opt.type == "JointTorque" and joints is not None:
        n = len(selected_joints(opt, opt.where, joints))
        shape, validity = (n,), True
    elif opt.type == "JointTorque" and (opt.joints is not None or opt.dofs_idx_local is not None):
        n = len(opt.joints if opt.joints is not None else opt.dofs_idx_local)
        shape, validity = (n,), True
    else:
        return None
    imperfections_from_options(opt, seed=0, dt=period, where=opt.where, n=n,
                               channels=MEASURED_CHANNELS.get(opt.type, 1), layout_shape=shape,
                               active=None if layout is None else layout.active,
                               grid=None if layout is None else layout.grid, sample_validity=validity)
    if opt.type == "ElastomerTaxel":
        layout.epsilon0()  # coincident probes, after the imperfections as in the build
    return n


def format_summary(rows: list[SensorSummary]) -> str:
    """The table ``check`` prints: one line per sensor, then its topics indented."""
    head = ("sensor", "type", "link", "size", "rate", "imperfections")
    unknown = {"joints": "all"}  # JointTorque without a joint list: every actuated joint of its robot
    cells = [(r.name, r.type, r.link, f"{r.count if r.count is not None else unknown.get(r.unit, '?')} {r.unit}",
              f"{r.rate:g} Hz",
              ", ".join(r.imperfections) or "-") for r in rows]
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(head, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for row, c in zip(rows, cells):
        lines.append("  ".join(x.ljust(w) for x, w in zip(c, widths)).rstrip())
        lines += [f"    {topic}  ({kind})" for topic, kind in row.topics]
    return "\n".join(lines)


def run_check_command(args: argparse.Namespace) -> int:
    from ..errors import ConfigError

    try:
        config, rows = validated(args.config, args.robot, args.ground_truth)
    except ConfigError as exc:
        return fail("check", str(exc))
    print(f"{args.config}: valid; {len(rows)} sensors, suite at {1.0 / config.suite.step_dt:g} Hz on "
          f"{config.suite.device} ({config.suite.dtype})")
    print(format_summary(rows))
    print("and ~/markers (visualization_msgs/msg/MarkerArray, when viz_rate > 0), /diagnostics "
          "(diagnostic_msgs/msg/DiagnosticArray)")
    return 0
