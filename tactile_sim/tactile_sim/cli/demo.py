"""``tactile-sim demo``: the built-in gripper demo without ROS (:mod:`tactile_sim.offline.demo`)."""

from __future__ import annotations

import argparse

from .check import preflight
from .common import USAGE_ERROR, describe_files, fail, number_arg, stderr_log
from ..constants import MAX_DEMO_DURATION
from ..demo_trajectory import CYCLE, DEMO_CONFIG
from ..ros.node_params import SPECS, NodeParams

DEFAULT_OUTPUT = "tactile_sim_demo"

DESCRIPTION = """\
Run the ROS demo's scene without ROS: the two-finger gripper of `ros2 launch tactile_sim demo.launch.py` (same URDF,
config/demo_sensors.yaml with every sensor type, same trajectory) closes on a warm can, squeezes, slides and opens.
Writes OUTPUT/gripper_demo/ (rosbag2, MCAP: /joint_states, /tf, /tf_static, /robot_description, every sensor topic
/tactile_sim_node/<sensor> and /tactile_sim_node/markers; open the .mcap in Foxglove or `ros2 bag play` the folder),
prints a per-sensor summary and writes PNG pictures into OUTPUT."""


def add_demo_command(commands: argparse._SubParsersAction) -> None:
    """Register ``demo`` on the ``tactile-sim`` sub-command parsers."""
    p = commands.add_parser("demo", help="run the built-in gripper demo: a bag, a summary and pictures",
                            description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", default=DEFAULT_OUTPUT, metavar="DIR",
                   help=f"output folder (default: ./{DEFAULT_OUTPUT}); its gripper_demo/ bag is replaced")
    p.add_argument("--duration", type=number_arg(0.0, MAX_DEMO_DURATION, "s"), default=CYCLE, metavar="S",
                   help=f"simulated seconds (default: {CYCLE:g}, one trajectory cycle)")
    p.add_argument("--rate", type=number_arg(*SPECS["update_rate"].range, "Hz", low_inclusive=True),
                   default=NodeParams().update_rate, metavar="HZ",
                   help=f"update rate (default: {NodeParams().update_rate:g}, the ROS demo's)")
    p.add_argument("--device", default="", metavar="DEVICE",
                   help="cpu, cuda, cuda:<i> or auto (default: the configuration's, cpu)")
    p.add_argument("--ground-truth", action="store_true", help="also write each sensor's ground-truth topic")
    p.add_argument("--no-pictures", action="store_true", help="write the bag and the summary only")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also print the node core's info messages and Warp's own output")
    p.set_defaults(func=run_demo_command)


def run_demo_command(args: argparse.Namespace) -> int:
    status = preflight("demo", args.device, DEMO_CONFIG, None, args.verbose)
    if status is not None:
        return status
    from ..errors import ConfigError
    from ..offline.demo import run_demo
    from ..offline.summary import format_run, format_table

    print(f"tactile_sim demo: gripper closing on a warm can, {args.duration:g} s at {args.rate:g} Hz")
    try:
        result = run_demo(args.output, duration=args.duration, rate=args.rate, device=args.device,
                          ground_truth=args.ground_truth, pictures=not args.no_pictures,
                          progress=not args.no_progress, log=stderr_log(args.verbose))
    except (ConfigError, ValueError, FileExistsError) as exc:
        return fail("demo", str(exc), USAGE_ERROR)
    print(format_table(result.digest, result.stats.wall_s))
    print(format_run(result.stats, result.rate))
    print(f"wrote {result.data_file} (rosbag2 MCAP in {result.bag}/: {sum(result.counts.values())} messages on "
          f"{len(result.counts)} topics; open the .mcap in Foxglove, or `ros2 bag play {result.bag}`)")
    if result.pictures:
        print("pictures:\n" + describe_files(result.pictures))
    return 0
