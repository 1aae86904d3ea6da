"""``tactile_sim_node``: the rclpy wiring of :class:`~.node_core.NodeCore` (parameters, QoS, timers, callbacks,
publishing). Everything the node decides lives in the core; this module only connects it to ROS 2.

Subscribes ``/joint_states`` (best effort, so that reliable and best-effort publishers both connect), ``/tf``
(reliable, keep last 100, as tf2), ``/tf_static`` (reliable, transient local) and, while no robot description is at
hand, the latched ``/robot_description``. Publishes what the core returns, serialised by the rclpy-free io layer
(:func:`tactile_sim.io.msg_types.serialize_cdr`) and sent as raw CDR bytes on publishers of the registered ROS
types. Exit status 2 when the configuration or a parameter is invalid at start-up.

Threads: inputs, the update timer and diagnostics share one mutually exclusive callback group (they touch the
core's state); the markers run in their own group on a second executor thread, reading only snapshots the update
replaces whole (the latest messages and world state), so a slow MarkerArray does not delay the update ticks.
"""

from __future__ import annotations

import sys
from typing import Any

import rclpy
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.exceptions import ParameterUninitializedException
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from rosidl_runtime_py.utilities import get_message
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from ..config.loader import load_config
from ..errors import ConfigError, SceneError
from ..io.msg_types import serialize_cdr
from .inputs import decode_joint_state, decode_robot_description, decode_tf_message
from .node_core import NodeCore
from .node_params import PARAMETERS, SPECS, NodeParams, check_value

NODE_NAME = "tactile_sim_node"
DIAGNOSTICS_PERIOD = 1.0
"""s of node time between /diagnostics messages (the usual 1 Hz)."""

SWITCH_INTERVAL = 1e-3
"""s: Python thread switch interval of the node process; the update loop waits at most about this long for the
marker thread (which may take several ms to build and serialise a MarkerArray)."""

RELIABLE_10 = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
LATCHED = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     history=HistoryPolicy.KEEP_LAST)
JOINT_STATES_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST)


def descriptor(spec) -> ParameterDescriptor:
    """The ROS parameter descriptor of one entry of :data:`~.node_params.PARAMETERS`."""
    d = ParameterDescriptor(description=spec.description, read_only=spec.read_only)
    if spec.range is not None:
        d.floating_point_range = [FloatingPointRange(from_value=spec.range[0], to_value=spec.range[1], step=0.0)]
        d.dynamic_typing = True  # `update_rate:=100` (an integer) is accepted too; the value is checked here
    return d


class TactileSimNode(Node):
    """The node (see the module docstring); raises ConfigError / SceneError / ValueError at construction."""

    def __init__(self, **kwargs: Any):
        super().__init__(NODE_NAME, **kwargs)
        for spec in PARAMETERS:
            default = Parameter.Type.STRING_ARRAY if isinstance(spec.default, tuple) else spec.default
            self.declare_parameter(spec.name, default, descriptor(spec))
        params = NodeParams(**{spec.name: self._parameter(spec.name) for spec in PARAMETERS})
        config = load_config(params.config_file)
        self.core = NodeCore(config, params, log=self._log, name=self.get_name())
        self._pubs: dict[str, Any] = {}
        self.create_subscription(JointState, "/joint_states", self._guard("joint_states", self._on_joint_state),
                                 JOINT_STATES_QOS)
        self.create_subscription(TFMessage, "/tf", self._guard("tf", self._on_tf), TF_QOS)
        self.create_subscription(TFMessage, "/tf_static", self._guard("tf_static", self._on_tf_static), LATCHED)
        self._description_sub = None
        if not self.core.ready:
            self._description_sub = self.create_subscription(
                String, "/robot_description", self._guard("robot_description", self._on_description),
                QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                           durability=DurabilityPolicy.TRANSIENT_LOCAL))
        else:
            self._create_publishers()
        self._update_timer = self.create_timer(params.period, self._guard("update", self._on_update))
        self._viz_group = MutuallyExclusiveCallbackGroup()
        self._viz_timer = None
        self._start_viz_timer()
        self.create_timer(DIAGNOSTICS_PERIOD, self._guard("diagnostics", self._on_diagnostics))
        self.add_on_set_parameters_callback(self._set_parameters)
        self.add_post_set_parameters_callback(self._restart_timers)
        self.get_logger().info(
            f"{len(self.core.schedule)} sensors from {params.config_file} at {params.update_rate:g} Hz"
            if self.core.ready else f"config {params.config_file} loaded; waiting for /robot_description")

    # ------------------------------------------------------------------ plumbing
    def _parameter(self, name: str) -> Any:
        try:
            value = self.get_parameter(name).value
        except ParameterUninitializedException:
            return SPECS[name].default
        return tuple(value) if isinstance(SPECS[name].default, tuple) else value

    def _log(self, level: str, text: str) -> None:
        logger = self.get_logger()
        {"debug": logger.debug, "info": logger.info, "warn": logger.warning, "error": logger.error}[level](text)

    def _guard(self, what: str, callback):
        """A callback that logs (throttled) and counts an unexpected exception instead of ending the node."""

        def guarded(*args):
            try:
                callback(*args)
            except Exception as exc:  # noqa: BLE001 - the node must survive any single bad callback
                self.core.stats.drop(f"{what}.error")
                self.core.log("error", f"{what}.error", f"{self.get_name()}: {what} callback failed: {exc!r}")

        return guarded

    def _publisher(self, topic: str, message_type: str) -> Any:
        pub = self._pubs.get(topic)
        if pub is None:
            fast = any(t.name == topic and t.sensor_data for t in self.core.topics())
            qos = qos_profile_sensor_data if fast else RELIABLE_10
            pub = self._pubs[topic] = self.create_publisher(get_message(message_type), topic, qos)
        return pub

    def _create_publishers(self) -> None:
        for spec in self.core.topics():
            self._publisher(spec.name, spec.message_type)

    def _publish(self, outputs) -> None:
        for topic, msg in outputs:
            self._publisher(topic, msg.__msgtype__).publish(serialize_cdr(msg))

    def _now_ns(self) -> int:
        return self.get_clock().now().nanoseconds

    def _start_viz_timer(self) -> None:
        if self._viz_timer is not None:
            self.destroy_timer(self._viz_timer)
            self._viz_timer = None
        rate = self.core.params.viz_rate
        if rate > 0:
            self._viz_timer = self.create_timer(1.0 / rate, self._guard("markers", self._on_markers),
                                                callback_group=self._viz_group)

    # ------------------------------------------------------------------ callbacks
    def _on_joint_state(self, msg: JointState) -> None:
        self.core.on_joint_state(decode_joint_state(msg))

    def _on_tf(self, msg: TFMessage) -> None:
        self.core.on_tf(decode_tf_message(msg), static=False)

    def _on_tf_static(self, msg: TFMessage) -> None:
        self.core.on_tf(decode_tf_message(msg), static=True)

    def _on_description(self, msg: String) -> None:
        if self.core.set_robot_description(decode_robot_description(msg)):
            self.destroy_subscription(self._description_sub)
            self._description_sub = None
            self._create_publishers()

    def _on_update(self) -> None:
        self._publish(self.core.update(self._now_ns()))

    def _on_markers(self) -> None:
        markers = self.core.markers()
        if markers is not None:
            self._publish([("~/markers", markers)])

    def _on_diagnostics(self) -> None:
        self._publish([("/diagnostics", self.core.diagnostics(self._now_ns()))])

    # ------------------------------------------------------------------ parameters
    def _set_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        """Validate and apply run-time changes to the core atomically (a rejected change leaves everything)."""
        values = {}
        for p in parameters:
            if p.name in SPECS:
                value = tuple(p.value) if isinstance(SPECS[p.name].default, tuple) else p.value
                try:
                    values[p.name] = check_value(SPECS[p.name], value)
                except ValueError as exc:
                    return SetParametersResult(successful=False, reason=str(exc))
        try:
            self.core.update_params(**values)
        except (ConfigError, SceneError, ValueError) as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _restart_timers(self, parameters: list[Parameter]) -> None:
        """After a change: timers at the new rates, publishers for newly enabled topics."""
        names = {p.name for p in parameters}
        if "update_rate" in names:
            self.destroy_timer(self._update_timer)
            self._update_timer = self.create_timer(self.core.params.period, self._guard("update", self._on_update))
        if "viz_rate" in names:
            self._start_viz_timer()
        if self.core.ready:
            self._create_publishers()


def main(args: list[str] | None = None) -> int:
    """Console entry point ``tactile_sim_node``; returns the exit status."""
    rclpy.init(args=args)
    try:
        node = TactileSimNode()
    except (ConfigError, SceneError, ValueError, OSError) as exc:
        rclpy.logging.get_logger(NODE_NAME).fatal(f"cannot start: {exc}")
        rclpy.try_shutdown()
        return 2
    sys.setswitchinterval(SWITCH_INTERVAL)
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
