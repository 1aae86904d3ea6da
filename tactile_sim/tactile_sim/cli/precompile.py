"""``tactile-sim compile CONFIG.yaml [--robot URDF]``: compile, once, the Warp kernels a configuration launches, so
that a node, a replay or a demo started afterwards finds them in Warp's kernel cache (a fresh install, or after a
Warp upgrade, otherwise compiles them at its own start)."""

from __future__ import annotations

import argparse
import time

from .check import preflight
from .common import USAGE_ERROR, fail

DESCRIPTION = """\
Build the sensors of SENSORS.yaml once (on --device, default the configuration's) and take one step, which compiles
every Warp kernel they launch into Warp's kernel cache (WARP_CACHE_PATH, else the user cache folder). Run it after
installing or upgrading, before `ros2 launch` or `tactile-sim node`, so that they start without compiling."""


def add_compile_command(commands: argparse._SubParsersAction) -> None:
    """Register ``compile`` on the ``tactile-sim`` sub-command parsers."""
    p = commands.add_parser("compile", help="compile the kernels of a sensor configuration ahead of its first run",
                            description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", metavar="SENSORS.yaml", help="sensor configuration (path or package://<pkg>/<path>)")
    p.add_argument("--robot", metavar="URDF", help="robot URDF file (default: the configuration's robot.urdf)")
    p.add_argument("--device", default="", metavar="DEVICE",
                   help="cpu, cuda, cuda:<i> or auto (default: the configuration's)")
    p.add_argument("-v", "--verbose", action="store_true", help="also print Warp's own output")
    p.set_defaults(func=run_compile_command)


def run_compile_command(args: argparse.Namespace) -> int:
    status = preflight("compile", args.device, args.config, args.robot, args.verbose)
    if status is not None:
        return status
    import warp as wp

    from ..config.loader import load_config, with_robot_file
    from ..errors import ConfigError
    from ..suite import SensorSuite

    start = time.perf_counter()
    try:
        config = load_config(args.config)
        suite = SensorSuite(with_robot_file(config, args.robot) if args.robot else config,
                            device=args.device or None)
        suite.update(0.0)  # the launches a batch records at its first evaluation
    except (ConfigError, ValueError, OSError) as exc:
        return fail("compile", str(exc), USAGE_ERROR)
    print(f"kernels of {len(suite.sensor_names)} sensors ready on {suite.device} "
          f"({str(suite.dtype).removeprefix('torch.')}) in {time.perf_counter() - start:.1f} s; "
          f"kernel cache: {wp.config.kernel_cache_dir}")
    return 0
