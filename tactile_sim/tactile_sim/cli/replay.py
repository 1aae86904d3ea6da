"""``tactile-sim replay``: recorded robot motion (a rosbag2 bag) through the sensors into a new bag
(:mod:`tactile_sim.offline.replay`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .check import preflight
from .common import RUN_ERROR, USAGE_ERROR, fail, number_arg, stderr_log
from ..constants import GAP_THRESHOLD, JUMP_THRESHOLD, MAX_RESTARTS, REPLAY_BATCH
from ..ros.node_params import SPECS

DESCRIPTION = """\
Read joint states and TF from a rosbag2 bag (a folder, or one .mcap / .db3 file), step the sensors of SENSORS.yaml
at the configured rate over the recording (sample and hold between inputs, time from the bag) and write the sensor
topics /tactile_sim_node/<sensor> to a new bag. -o out.mcap (or a folder name) writes MCAP, -o out.db3 sqlite3;
rosbag2 bags are folders: out.mcap gives out/out.mcap. The bag is read and written one message at a time.
--format npz (or -o out.npz) writes the sensor values as arrays instead: one out.npz, read with numpy.load.

Several recordings (several IN, a folder of recordings, a glob pattern, --input-list FILE) are each replayed as if
alone into the folder OUT, named after the recording (OUT/<name>/<name>.mcap, or OUT/<name>.npz), up to --batch of
them at a time as the envs of one suite (the same bytes as one after another), in each of --workers processes; a
table over the corpus follows.

Clock: `header` (default) uses the joint states' header stamps (simulation time and resets replay exactly; a step
back of more than --jump-threshold restarts the sensors, and so does a step forward of more than --gap-threshold,
which is not ticked through; more than --max-restarts restarts stop the replay); `receive` uses the bag's receive
times (for unstamped publishers). Inputs the node rejects (NaN, bad lengths, unknown joint names, invalid
transforms) are skipped and counted."""


def add_replay_command(commands: argparse._SubParsersAction) -> None:
    """Register ``replay`` on the ``tactile-sim`` sub-command parsers."""
    p = commands.add_parser("replay", help="turn recorded joint states / TF in a bag into a bag of sensor data",
                            description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", metavar="IN", nargs="*",
                   help="input bag: rosbag2 folder, .mcap or .db3 file; several, a folder of them or a glob pattern "
                        "replay each into the folder OUT")
    p.add_argument("--input-list", metavar="FILE",
                   help="also replay the recordings listed in FILE (one path, folder or pattern per line)")
    p.add_argument("--workers", type=number_arg(1, 1024, "processes", low_inclusive=True, kind=int), default=1,
                   metavar="N", help="replay several recordings in N processes (default: 1)")
    p.add_argument("--batch", type=number_arg(1, 4096, "recordings", low_inclusive=True, kind=int),
                   default=REPLAY_BATCH, metavar="N",
                   help="replay up to N recordings at a time as the envs of one suite, each output as if replayed "
                        f"alone (default: {REPLAY_BATCH}; 1: one after another)")
    p.add_argument("--config", required=True, metavar="SENSORS.yaml",
                   help="sensor configuration (path or package://<pkg>/<path>)")
    p.add_argument("--robot", metavar="URDF",
                   help="robot URDF file (default: the configuration's robot.urdf, else the bag's "
                        "/robot_description)")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output bag (OUT.mcap, OUT.db3 or a folder), or with --format npz the file OUT[.npz]")
    p.add_argument("--format", choices=("bag", "npz"), default=None, dest="output_format",
                   help="bag (rosbag2) or npz (arrays per sensor, see the README); default: npz when OUT ends in "
                        ".npz, else bag")
    p.add_argument("--rate", type=number_arg(*SPECS["update_rate"].range, "Hz", low_inclusive=True), metavar="HZ",
                   help="update rate (default: the configuration's suite rate)")
    p.add_argument("--device", default="", metavar="DEVICE",
                   help="cpu, cuda, cuda:<i> or auto (default: the configuration's)")
    p.add_argument("--clock", choices=("header", "receive"), default="header",
                   help="time source (default: header)")
    p.add_argument("--jump-threshold", type=number_arg(0.0, 1e9, "s"), default=JUMP_THRESHOLD, metavar="S",
                   help=f"a clock step back larger than this restarts the sensors (default: {JUMP_THRESHOLD:g} s)")
    p.add_argument("--gap-threshold", type=number_arg(0.0, 1e9, "s"), default=GAP_THRESHOLD, metavar="S",
                   help="a clock step forward larger than this restarts the sensors instead of running every step "
                        f"of the gap (default: {GAP_THRESHOLD:g} s)")
    p.add_argument("--max-restarts", type=number_arg(0, 10**9, "restarts", low_inclusive=True, kind=int),
                   default=MAX_RESTARTS, metavar="N",
                   help=f"stop with an error after this many restarts of the sensors (default: {MAX_RESTARTS})")
    for kind, default in (("joint-states", "/joint_states"), ("tf", "/tf"), ("tf-static", "/tf_static"),
                          ("robot-description", "/robot_description")):
        p.add_argument(f"--{kind}-topic", default=default, metavar="TOPIC", help=f"default: {default}")
    p.add_argument("--copy-inputs", action="store_true", help="also write the input topics to the output")
    p.add_argument("--ground-truth", action="store_true", help="also write each sensor's ground-truth topic")
    p.add_argument("--markers", action="store_true", help="also write /tactile_sim_node/markers at 10 Hz")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output bag")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also print the node core's info messages and Warp's own output")
    p.set_defaults(func=run_replay_command)


def output_format(args: argparse.Namespace) -> str:
    """--format, or npz for an OUT that ends in .npz and bag otherwise."""
    if args.output_format is not None:
        return args.output_format
    return "npz" if args.output.lower().endswith(".npz") else "bag"


def run_replay_command(args: argparse.Namespace) -> int:
    status = preflight("replay", args.device, args.config, args.robot, args.verbose, args.rate is None)
    if status is not None:
        return status
    from ..config.loader import load_config
    from ..errors import ConfigError
    from ..offline.bag_inputs import BagInputError, InputTopics
    from ..offline.corpus import is_single
    from ..offline.replay import replay_bag
    from ..offline.summary import format_run, format_table

    topics = InputTopics(args.joint_states_topic, args.tf_topic, args.tf_static_topic, args.robot_description_topic)
    options = dict(robot=args.robot, rate=args.rate, device=args.device, topics=topics, clock=args.clock,
                   copy_inputs=args.copy_inputs, ground_truth=args.ground_truth, markers=args.markers,
                   jump_threshold=args.jump_threshold, gap_threshold=args.gap_threshold,
                   max_restarts=args.max_restarts, overwrite=args.overwrite, output_format=output_format(args))
    if not is_single(args.input, args.input_list):
        return run_corpus(args, options)
    try:
        config = load_config(args.config)
        result = replay_bag(args.input[0], config, args.output, progress=not args.no_progress,
                            log=stderr_log(args.verbose), **options)
    except (BagInputError, ConfigError, ValueError, FileExistsError) as exc:
        return fail("replay", str(exc), USAGE_ERROR)
    print(format_table(result.digest, result.stats.wall_s))
    print(format_run(result.stats, result.rate, result.dropped))
    if not result.discarded:
        print(f"wrote {result.data_file} ({sum(result.counts.values())} messages on {len(result.counts)} topics)")
    if result.error:
        return fail("replay", result.error, RUN_ERROR if result.read_failed else USAGE_ERROR)
    return 0


def run_corpus(args: argparse.Namespace, options: dict) -> int:
    """Several recordings: each replayed into the folder ``-o`` (:mod:`tactile_sim.offline.corpus`); the exit
    status is the worst of theirs."""
    from ..config.loader import load_config
    from ..errors import ConfigError
    from ..offline.corpus import expand_inputs, format_corpus, plan_jobs, replay_corpus
    from ..offline.replay import check_output_format

    skipped: list[Path] = []
    try:
        check_output_format(options["output_format"], "", copy_inputs=args.copy_inputs, markers=args.markers)
        load_config(args.config)  # a bad configuration stops the corpus before it starts
        jobs = plan_jobs(expand_inputs(args.input, args.input_list, skipped), args.output, options["output_format"],
                         args.overwrite)
    except (ConfigError, ValueError, FileExistsError) as exc:
        return fail("replay", str(exc), USAGE_ERROR)
    for folder in skipped:
        print(f"[warn] replay: {str(folder)!r} holds a .mcap / .db3 file but no metadata.yaml: not replayed "
              f"(`ros2 bag reindex {folder}` writes one)", file=sys.stderr)
    outcomes, wall = replay_corpus(jobs, args.config, options, workers=args.workers, batch=args.batch,
                                   verbose=args.verbose, progress=not args.no_progress)
    print(format_corpus(outcomes, wall))
    status = max(o.status for o in outcomes)
    if status:
        failed = [o.job.name for o in outcomes if o.status]
        return fail("replay", f"{len(failed)} of {len(outcomes)} recordings failed ({', '.join(failed[:10])}); "
                              "see the table", status)
    return 0
