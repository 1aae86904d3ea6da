"""Replay recorded robot motion through the sensors: a rosbag2 bag in (joint states, TF), a bag of sensor messages out.

The suite is stepped at ``rate`` (default: the configuration's ``suite.rate`` / ``dt``) on the bag's clock (see
:mod:`.bag_inputs`) by :class:`~.run_loop.RunLoop`, the loop of the demo: sample and hold between inputs, a restart
at a backwards time jump. The robot description comes from ``robot`` (a URDF file), else the configuration's
``robot.urdf``, else the bag's ``/robot_description``. Inputs the node core rejects (NaN, mismatched lengths,
unknown joint names, bad transforms) are skipped and counted by reason; a bag that stops being readable ends the
replay early with the output bag complete up to that point and the reason in :attr:`ReplayResult.error`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..config.loader import with_robot_file
from ..config.paths import file_in_the_way, in_the_way
from ..config.schema import SuiteConfig
from ..constants import GAP_THRESHOLD, JUMP_THRESHOLD, MAX_RESTARTS
from ..errors import ConfigError
from ..ros.node_core import NodeCore
from ..ros.name_tally import listed
from ..ros.node_params import NodeParams
from ..ros.throttled_log import LogSink
from .array_output import ArrayOutput, array_location
from .bag_inputs import BagInputError, BagInputs, Clock, InputTopics, open_bag
from .core_pool import CorePool
from .digest import RunDigest
from .output_bag import SUFFIX_STORAGE, OutputBag, bag_location, clear_old_bag
from .progress import ClockProgress
from .run_loop import RunLoop, RunStats, check_count, check_threshold

VIZ_RATE = 10.0
"""Hz of the markers when they are asked for."""

OutputFormat = Literal["bag", "npz"]
OUTPUT_FORMATS: tuple[str, ...] = ("bag", "npz")


def check_output_format(output_format: str, output: str | Path, *, copy_inputs: bool, markers: bool) -> None:
    """ValueError naming the option when ``output_format`` is unknown, a bag is asked for with an array name
    (``.npz``), or npz with bag-only options or a bag name (``.mcap`` / ``.db3``)."""
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"output_format: unknown; got {output_format!r}; allowed: {', '.join(OUTPUT_FORMATS)}")
    if output_format != "npz":
        if Path(output).suffix.lower() == ".npz":
            raise ValueError(f"-o {str(output)!r}: an array name (.npz) with --format bag; allowed: OUT, OUT.mcap or "
                             "OUT.db3, or --format npz")
        return
    for option, asked in (("--copy-inputs", copy_inputs), ("--markers", markers)):
        if asked:
            raise ValueError(f"{option}: written to bags only; got it with --format npz; allowed: --format bag")
    if Path(output).suffix.lower() in SUFFIX_STORAGE:
        raise ValueError(f"-o {str(output)!r}: a bag name with --format npz; allowed: OUT or OUT.npz")


@dataclass(frozen=True)
class ReplayResult:
    """What :func:`replay_bag` did: output bag folder and data file, the loop's stats, the per-sensor digest,
    messages written per topic, the rate (Hz), inputs the core dropped or partly ignored (reason → count), and
    ``error``: why reading stopped early (None when the whole bag was replayed) or why nothing was produced;
    ``read_failed``: True when the error is a bag that stopped being readable (False: the inputs produced nothing);
    ``discarded``: True when the output was removed, since it held the robot at its zero configuration only
    (:func:`unset_joints_problem`)."""

    bag: Path
    data_file: Path
    stats: RunStats
    digest: RunDigest
    counts: dict[str, int]
    rate: float
    dropped: dict[str, int]
    error: str | None
    read_failed: bool = False
    discarded: bool = False


def each_tick(*calls: Callable[[int], None] | None) -> Callable[[int], None] | None:
    """One ``on_tick`` callback that makes each of ``calls`` (None entries left out); None when there is none."""
    calls = tuple(c for c in calls if c is not None)
    if len(calls) <= 1:
        return calls[0] if calls else None

    def both(t_ns: int) -> None:
        for call in calls:
            call(t_ns)

    return both


def check_output_place(source: str | Path, output: str | Path, output_format: OutputFormat) -> None:
    """ConfigError when the output of replaying ``source`` into ``output`` would replace the input bag or a folder
    holding it, or write into it, when a file stands where one of its folders would be, or when it or one of its
    folders is a symbolic link that leads nowhere (checked before the sensors are built)."""
    source_folder = _resolved(Path(source), "replay input")
    bag_folder = not source_folder.is_file()  # a rosbag2 folder (a lone .mcap or .db3 file's folder is not the bag's)
    source_folder = source_folder if bag_folder else source_folder.parent
    location = array_location(output) if output_format == "npz" else bag_location(output)[0]
    place = _resolved(location, "replay output")
    if place in (source_folder, *source_folder.parents) or (bag_folder and source_folder in place.parents):
        raise ConfigError(f"replay output {str(output)!r}: it would replace or write into the input bag "
                          f"{str(source)!r} (or a folder holding it); choose another output name")
    blocking = file_in_the_way(location, itself=False)
    if blocking is None and location.is_symlink() and not location.exists():
        blocking = location  # (an existing output itself may be replaced, with overwrite)
    if blocking is not None:
        folder = ", not a folder" if blocking != location else ""
        raise ConfigError(f"replay output {str(output)!r}: {str(blocking)!r} {in_the_way(blocking)}{folder}; "
                          "allowed: an output whose folders are folders or do not exist yet, and no link that leads "
                          "nowhere")


def _resolved(path: Path, what: str) -> Path:
    """``path`` made absolute with its symbolic links followed; ConfigError (naming ``what``) for a link loop."""
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symbolic link loop, before Python 3.13
        raise ConfigError(f"{what} {str(path)!r}: cannot be followed ({exc}); allowed: a path without a loop of "
                          "symbolic links") from None


def unset_joints_problem(core: NodeCore, has_joint_states: bool, topic: str, source: str | Path) -> str | None:
    """The error of a replay of ``source`` whose recording has joint states on ``topic`` of which none set any
    actuated joint (each dropped, or naming other joints): every tick posed the robot at its zero configuration.
    Joints that stayed unset otherwise (no joint state in the recording, or some joints never named) are a warning
    in ``core``'s log; None then, and when every joint was set."""
    unset = core.unset_joints()
    if not unset:
        return None
    joints, _ = core.joint_positions()
    if len(unset) == len(joints) and has_joint_states:
        dropped = {k: n for k, n in core.stats.dropped.items() if k.startswith("joint_states.")}
        why = ", ".join(f"{n} dropped ({k})" for k, n in sorted(dropped.items())) or "none named them"
        return (f"replay of {str(source)!r}: no joint state on {topic!r} set any of the robot's {len(joints)} "
                f"joints ({why}), so every tick posed it at its zero configuration; allowed: joint states naming "
                f"its joints ({listed(joints)}), or --joint-states-topic naming another topic")
    core.log.always("warn", f"{core.name}: no joint state on {topic!r} set {listed(unset)}: held at 0 (the zero "
                            "configuration) for the whole replay")
    return None


def default_rate(config: SuiteConfig) -> float:
    """The configuration's engine rate, Hz (1 / ``suite.dt`` or ``suite.rate``)."""
    return 1.0 / config.suite.step_dt


def replay_bag(source: str | Path, config: SuiteConfig, output: str | Path, *, robot: str | Path | None = None,
               rate: float | None = None, device: str = "", topics: InputTopics = InputTopics(),
               clock: Clock = "header", copy_inputs: bool = False, ground_truth: bool = False,
               markers: bool = False, jump_threshold: float = JUMP_THRESHOLD,
               gap_threshold: float = GAP_THRESHOLD, max_restarts: int = MAX_RESTARTS, overwrite: bool = False,
               progress: bool = True, log: LogSink | None = None, output_format: OutputFormat = "bag",
               cores: CorePool | None = None) -> ReplayResult:
    """Replay ``source`` (rosbag2 folder or .mcap / .db3 file) with ``config`` into a new bag ``output`` (see
    :func:`~.output_bag.bag_location`). copy_inputs: also write the inputs; ground_truth: also the ground-truth
    topics; markers: also ``~/markers`` at 10 Hz. jump_threshold, gap_threshold: s; max_restarts: see
    :mod:`.run_loop`. output_format: ``bag``, or ``npz`` for arrays in ``output`` (+ ``.npz``;
    :mod:`.array_output`), which copy_inputs and markers do not apply to (ValueError). cores: a pool that
    supplies the node core (the previous replay's, rewound, when the configuration and parameters are the same) and
    takes it back afterwards; None: a new core.

    Raises BagInputError (bag unusable), ConfigError (no robot description, configuration does not fit the
    robot), FileExistsError (output exists and not ``overwrite``), ValueError (rate or a threshold out of range;
    ``run_loop.TooManyRestarts``).
    """
    check_threshold("jump_threshold", jump_threshold)
    check_threshold("gap_threshold", gap_threshold)
    check_count("max_restarts", max_restarts)
    check_output_format(output_format, output, copy_inputs=copy_inputs, markers=markers)
    rate = float(rate) if rate is not None else default_rate(config)
    check_output_place(source, output, output_format)
    if robot is not None:
        config = with_robot_file(config, robot)
    with open_bag(source) as reader:
        inputs = BagInputs(reader, topics, clock)
        if config.robot is None and "robot_description" not in inputs.kinds.values():
            raise ConfigError(f"replay of {str(source)!r}: no robot description; allowed: --robot URDF, robot.urdf in "
                              f"{config.source or 'the configuration'}, or a {topics.robot_description!r} topic in "
                              "the bag")
        params = NodeParams(update_rate=rate, device=device,
                            publish_ground_truth=ground_truth, viz_rate=VIZ_RATE if markers else 0.0)
        core = cores.take(config, params, log) if cores is not None else NodeCore(config, params, log=log)
        try:
            digest = RunDigest()
            error = None
            sink = ArrayOutput(output, core, rate=rate, overwrite=overwrite, on_write=digest.add) \
                if output_format == "npz" else OutputBag(output, node_name=core.name, overwrite=overwrite,
                                                         on_write=digest.add)
            with sink as bag, ClockProgress(reader.duration_ns / 1e9, description="replay", enabled=progress) as bar:
                if core.ready:
                    digest.expect_node(core, bag.resolve)
                loop = RunLoop(core, bag.write_all, copy_inputs=copy_inputs, jump_threshold=jump_threshold,
                               gap_threshold=gap_threshold, max_restarts=max_restarts,
                               on_tick=each_tick(bar.update if bar.active else None, getattr(bag, "on_tick", None)))
                try:
                    for event in inputs.events():
                        loop.feed(event)
                except BagInputError as exc:
                    error = f"{exc}; the output holds everything before that"
                stats = loop.finish()
            read_failed, discarded = error is not None, False
            if error is None and stats.productive_ticks == 0:
                waiting = f"waiting for TF: {core.waiting_for_tf}" if core.waiting_for_tf else None
                reason = core.build_error or waiting or ("no robot description arrived" if not core.ready
                                                         else "no tick produced a message")
                error = f"replay of {str(source)!r} produced no sensor messages ({stats.ticks} ticks): {reason}"
            elif error is None:
                error = unset_joints_problem(core, "joint_states" in inputs.kinds.values(), topics.joint_states,
                                             source)
                discarded = error is not None
            if discarded:  # sensor data of the robot at its zero configuration: not to be mistaken for a result
                if output_format == "npz":
                    bag.data_file.unlink()
                else:
                    clear_old_bag(bag.path)
                error += "; its output was removed"
            return ReplayResult(bag.path, bag.data_file, stats, digest, dict(bag.counts), rate,
                                dict(core.stats.dropped), error, read_failed, discarded)
        finally:
            if cores is not None:
                cores.give_back(core)
