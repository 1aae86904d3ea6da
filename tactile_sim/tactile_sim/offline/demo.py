"""The built-in demo without ROS: the gripper scene of ``ros2 launch tactile_sim demo.launch.py`` (same URDF, sensor
YAML and trajectory) run through the node core into a rosbag2 bag, then summarised and drawn.

The inputs are what the ROS demo's publishers send: ``/robot_description`` and, on ``/tf_static``, the world → base
transform and the fixed joints (once, at t = 0), then per tick the trajectory's ``/joint_states`` (positions and exact
velocities; they set the clock) and the movable joints' link transforms on ``/tf`` (``robot_state_publisher``'s part).
Everything goes through :class:`~.run_loop.RunLoop`, the loop that replays bags, so replaying the demo's bag with
the demo configuration at the same rate reproduces its sensor messages exactly.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..config.loader import load_config
from ..config.paths import file_in_the_way, in_the_way
from ..demo_trajectory import CYCLE, DEMO_CONFIG, JOINT_NAMES, gripper_trajectory
from ..io.stamps import NS_PER_S
from ..ros.inputs import TransformSample
from ..ros.node_core import NodeCore
from ..ros.node_params import NodeParams
from ..ros.throttled_log import LogSink
from ..world.urdf import RobotModel
from .digest import RunDigest
from .input_messages import joint_state_message, string_message, tf_message
from .output_bag import OutputBag
from .progress import ClockProgress
from .robot_tf import RobotTransforms
from .run_loop import InputEvent, RunLoop, RunStats
from .tick_clock import tick_time_ns

DEMO_BAG = "gripper_demo"
"""Name of the demo's bag folder inside the output folder (its data file is ``gripper_demo/gripper_demo.mcap``)."""
DEFAULT_DURATION = CYCLE
"""s: one trajectory cycle (open, close on the can, squeeze, slide, open, return)."""
DEFAULT_RATE = NodeParams().update_rate
"""Hz: the ROS demo's update rate (the node's default)."""
VIZ_RATE = 10.0
"""Hz of the markers, as the node's default ``viz_rate``."""
TITLE = "tactile_sim demo: a two-finger gripper closes on a warm can, squeezes, slides and opens"


def demo_events(robot: RobotModel, urdf_text: str, n_ticks: int, rate: float,
                world_frame: str) -> Iterator[InputEvent]:
    """The ROS demo's inputs for ``n_ticks`` ticks at ``rate`` Hz from t = 0 (see the module docstring)."""
    links = RobotTransforms(robot)
    order = [JOINT_NAMES.index(name) for name in robot.actuated_joint_names]
    base = TransformSample(world_frame, robot.root_link, 0.0, np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]))
    yield InputEvent("robot_description", "/robot_description", 0, None, string_message(urdf_text))
    yield InputEvent("tf_static", "/tf_static", 0, None, tf_message([base] + links.static_transforms(0.0), 0))
    for k in range(n_ticks):
        t_ns = tick_time_ns(0, k, rate)
        sample = gripper_trajectory(t_ns / NS_PER_S)
        yield InputEvent("joint_states", "/joint_states", t_ns, t_ns,
                         joint_state_message(t_ns, JOINT_NAMES, sample.position, sample.velocity))
        yield InputEvent("tf", "/tf", t_ns, None, tf_message(links.transforms(sample.position[order], 0.0), t_ns))


@dataclass(frozen=True)
class DemoResult:
    """What :func:`run_demo` produced: the bag folder and its data file, the pictures, the per-sensor digest, the
    loop's stats, the messages written per topic and the update rate (Hz)."""

    bag: Path
    data_file: Path
    pictures: list[Path]
    digest: RunDigest
    stats: RunStats
    counts: dict[str, int]
    rate: float


def run_demo(output: str | Path, *, duration: float = DEFAULT_DURATION, rate: float = DEFAULT_RATE,
             device: str = "", ground_truth: bool = False, pictures: bool = True, progress: bool = True,
             log: LogSink | None = None) -> DemoResult:
    """Run the demo for ``duration`` s of simulated time at ``rate`` Hz on ``device`` ("" = the configuration's)
    and write ``<output>/gripper_demo/`` (rosbag2, MCAP; replaced when it exists) and, with ``pictures``, the
    PNGs into ``<output>``. ground_truth: also write every sensor's ground-truth topic. Raises ValueError for a
    duration or rate out of range (the rate as the node's ``update_rate``: 1–10000 Hz)."""
    if not (math.isfinite(duration) and duration > 0):
        raise ValueError(f"demo duration: got {duration!r} s; allowed: a finite number > 0")
    n_ticks = max(1, round(duration * rate))
    params = NodeParams(update_rate=float(rate), device=device, publish_ground_truth=ground_truth,
                        viz_rate=VIZ_RATE)
    folder = Path(output)
    blocking = file_in_the_way(folder)
    if blocking is not None:
        raise ValueError(f"demo output {str(output)!r}: {str(blocking)!r} {in_the_way(blocking)}, not a folder; "
                         "allowed: a folder, created when missing")
    folder.mkdir(parents=True, exist_ok=True)  # an output the file system refuses fails here, before the build
    core = NodeCore(load_config(DEMO_CONFIG), params, log=log)
    suite = core.suite
    digest = RunDigest()
    with OutputBag(folder / DEMO_BAG, node_name=core.name, overwrite=True, on_write=digest.add) as bag, \
            ClockProgress(n_ticks / rate, description="demo", enabled=progress, start_ns=0) as bar:
        digest.expect_node(core, bag.resolve)
        loop = RunLoop(core, bag.write_all, copy_inputs=True, on_tick=bar.update if bar.active else None)
        stats = loop.run(demo_events(suite.robot, suite.urdf_text, n_ticks, rate, core.world_frame))
    written = []
    if pictures:
        from .plots import write_pictures  # matplotlib: imported only to draw

        written = write_pictures(digest, folder, title=TITLE)
    return DemoResult(bag.path, bag.data_file, written, digest, stats, dict(bag.counts), float(rate))
