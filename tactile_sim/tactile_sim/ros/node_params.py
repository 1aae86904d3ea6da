"""Parameters of ``tactile_sim_node`` without rclpy: names, defaults, ranges, descriptions, and their validation.

The rclpy node declares every entry of :data:`PARAMETERS` with a descriptor built from it (type from the default,
range, read-only flag, description) and hands the values to :class:`NodeParams`; tests use the same table.
``use_sim_time`` is the standard parameter every rclpy node declares itself.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ..constants import RATE_RANGE

DEFAULT_CONFIG_FILE = "package://tactile_sim/config/demo_sensors.yaml"

TOPIC_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""One token of a ROS topic name: sensor names become topics ``~/<name>``, so they must match it."""

DEVICE = re.compile(r"|cpu|auto|cuda(:\d+)?")
"""Allowed ``device`` values ("" keeps the configuration's suite.device)."""

STEP_ON = ("timer", "joint_states")
"""Allowed ``step_on`` values: what triggers an update."""

EXECUTORS = ("auto", "events", "single_threaded", "multi_threaded")
"""Allowed ``executor`` values: the rclpy executor that runs the node's callbacks."""


@dataclass(frozen=True)
class ParamSpec:
    """One node parameter. ``default`` fixes the type (bool, int, float, str or tuple of str = string array);
    ``range``: inclusive (low, high) for numbers; ``read_only``: only settable at start-up."""

    name: str
    default: Any
    description: str
    read_only: bool = True
    range: tuple[float, float] | None = None


PARAMETERS: tuple[ParamSpec, ...] = (
    ParamSpec("config_file", DEFAULT_CONFIG_FILE,
              "Sensor configuration YAML (path or package://<pkg>/<path>): suite, robot, objects, sensors."),
    ParamSpec("robot_description", "",
              "URDF text of the robot. Empty: the configuration's robot.urdf when it names one, else the latched "
              "/robot_description topic (the node waits for it)."),
    ParamSpec("world_frame", "",
              "TF frame of the world in which objects are declared and the robot base is looked up. Empty: the "
              "configuration's suite.world_frame."),
    ParamSpec("update_rate", 100.0,
              "Hz. The suite is stepped on a timer at this rate (node clock), or with step_on joint_states the rate "
              "joint states are expected at; it replaces the configuration's suite rate, so sensor periods, delays "
              "and time constants count in steps of 1/update_rate. Changing it at run time rebuilds the sensors "
              "(their state starts afresh).",
              read_only=False, range=RATE_RANGE),
    ParamSpec("step_on", "timer",
              "What steps the suite: 'timer' (every 1/update_rate s of node time) or 'joint_states' (each accepted "
              "joint state, at the node time of its arrival; no update timer)."),
    ParamSpec("executor", "auto",
              "rclpy executor: 'events' (rclpy.experimental.EventsExecutor, one thread), 'single_threaded', "
              "'multi_threaded' (two threads: the markers run beside the updates) or 'auto' (events where this "
              "rclpy has it, else single_threaded when the node starts with viz_rate 0, else multi_threaded). The "
              "DDS transport has its own loop and ignores it."),
    ParamSpec("realtime_priority", 0,
              "Linux real-time priority (SCHED_FIFO, 1-99) of the node's threads, so that a loaded machine does not "
              "wake the update late; 0 keeps normal scheduling. Needs CAP_SYS_NICE or an rtprio limit (ulimit -r) of "
              "at least this value; when it is not granted the node runs with normal scheduling, logs a warning and "
              "reports it in /diagnostics.", range=(0, 99)),
    ParamSpec("device", "",
              "Torch device of the sensor models: cpu, cuda, cuda:<index> or auto. Empty: the configuration's "
              "suite.device."),
    ParamSpec("publish_ground_truth", False,
              "Also publish each sensor's ground truth (no imperfections, never delayed) on ~/<sensor>/ground_truth.",
              read_only=False),
    ParamSpec("viz_rate", 10.0,
              "Hz of ~/markers (visualization_msgs/MarkerArray); 0 turns the markers off.",
              read_only=False, range=(0.0, 100.0)),
    ParamSpec("marker_force_arrows", True,
              "Draw one arrow per taxel force in ~/markers (costly for large arrays).", read_only=False),
    ParamSpec("marker_max_force", 1.0,
              "N: taxel force magnitude at the red end of the fixed colour scale of ~/markers (KinematicTaxel, "
              "ProximityTaxel); an arrow of this force is 2 cm long.", read_only=False, range=(1e-9, 1e9)),
    ParamSpec("marker_max_link_force", 10.0,
              "N: ContactSensor net force at the red end of the colour scale; an arrow of this force is 10 cm long.",
              read_only=False, range=(1e-9, 1e9)),
    ParamSpec("marker_max_displacement", 5e-4,
              "m: ElastomerTaxel marker displacement at the red end of the colour scale.",
              read_only=False, range=(1e-12, 1e3)),
    ParamSpec("sensor_data_qos", (),
              "Names of sensors published with the sensor-data QoS profile (best effort, keep last 5); every "
              "other sensor topic is reliable, keep last 10."),
    ParamSpec("tf_stale_age", 0.5,
              "s: a TF frame the node uses (robot base, objects that follow frames) whose newest dynamic transform "
              "is older than this is reported as stale in /diagnostics.",
              read_only=False, range=(1e-3, 3600.0)),
)
"""Every parameter of tactile_sim_node, in declaration order."""


@dataclass(frozen=True)
class NodeParams:
    """Validated parameter values (see :data:`PARAMETERS` for meanings and units)."""

    config_file: str = DEFAULT_CONFIG_FILE
    robot_description: str = ""
    world_frame: str = ""
    update_rate: float = 100.0
    step_on: str = "timer"
    executor: str = "auto"
    realtime_priority: int = 0
    device: str = ""
    publish_ground_truth: bool = False
    viz_rate: float = 10.0
    marker_force_arrows: bool = True
    marker_max_force: float = 1.0
    marker_max_link_force: float = 10.0
    marker_max_displacement: float = 5e-4
    sensor_data_qos: tuple[str, ...] = ()
    tf_stale_age: float = 0.5

    def __post_init__(self):
        for spec in PARAMETERS:
            value = getattr(self, spec.name)
            object.__setattr__(self, spec.name, check_value(spec, value))

    @property
    def period(self) -> float:
        """Update period 1/update_rate, s."""
        return 1.0 / self.update_rate


SPECS: dict[str, ParamSpec] = {s.name: s for s in PARAMETERS}


def check_value(spec: ParamSpec, value: Any) -> Any:
    """``value`` converted to the parameter's type; ValueError naming the parameter, the value and what is allowed."""
    where = f"parameter {spec.name!r}"
    default = spec.default
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ValueError(f"{where}: got {value!r}; allowed: true or false")
        return value
    if isinstance(default, int):
        low, high = spec.range
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"{where}: got {value!r}; allowed: an integer {low} <= value <= {high}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{where}: got {value!r}; allowed: a finite number")
        value = float(value)
        low, high = spec.range
        if not low <= value <= high:
            raise ValueError(f"{where}: got {value!r}; allowed: {low!r} <= value <= {high!r}")
        return value
    if isinstance(default, tuple):
        if isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{where}: got {value!r}; allowed: a list of strings")
        return tuple(value)
    if not isinstance(value, str):
        raise ValueError(f"{where}: got {value!r}; allowed: a string")
    if spec.name == "device" and not DEVICE.fullmatch(value):
        raise ValueError(f"{where}: got {value!r}; allowed: '' (the configuration's), 'cpu', 'cuda', "
                         "'cuda:<index>' or 'auto'")
    if spec.name == "step_on" and value not in STEP_ON:
        raise ValueError(f"{where}: got {value!r}; allowed: {' or '.join(map(repr, STEP_ON))}")
    if spec.name == "executor" and value not in EXECUTORS:
        raise ValueError(f"{where}: got {value!r}; allowed: {', '.join(map(repr, EXECUTORS))}")
    if spec.name == "world_frame" and value.startswith("/"):
        raise ValueError(f"{where}: got {value!r}; allowed: a TF frame name without a leading '/'")
    return value
