"""``tactile_sim_node``: :class:`~.node_core.NodeCore` on rclpy (parameters, and :class:`RclpyTransport`, the
rclpy implementation of :class:`~tactile_sim.transport.base.Transport`). Everything the node decides lives in the
core; the topics, QoS and timers are :class:`~.node_runtime.NodeRuntime`'s (shared with the DDS transport).

Publishes what the core returns, serialised by the rclpy-free io layer
(:func:`tactile_sim.io.msg_types.serialize_cdr`) and sent as raw CDR bytes on publishers of the registered ROS
types. Exit status 2 when the configuration or a parameter is invalid at start-up, or when an output profile's
message type belongs to an interface package that is not installed (the message names the package).

Executor (parameter ``executor``): the events executor where rclpy has it (one thread; callbacks dispatched from
the middleware's events instead of a wait set rebuilt per wake-up), else one thread when the markers are off
(``viz_rate: 0``, the high-rate setting: handing each callback to a worker thread costs more than the update
itself), else two threads. Threads there:
inputs, the update timer and diagnostics share the node's mutually exclusive callback group (they touch the core's
state); the markers (a ``concurrent`` timer) run in their own group on the second thread, reading only snapshots the
update replaces whole (the latest messages and world state), so a slow MarkerArray does not delay the update ticks.
At SIGINT rclpy's signal handler shuts the context down; the executor then stops (waiting for a markers callback
still running, whose publish on the closed context is part of the shutdown, not an error) and the node is destroyed.
"""

from __future__ import annotations

import sys
from typing import Any

import rclpy
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.exceptions import ParameterException, ParameterUninitializedException
from rclpy.executors import Executor, ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.logging import LoggingSeverity
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosidl_runtime_py.utilities import get_message

from ..config.loader import load_config
from ..errors import ConfigError, SceneError
from ..geometry.warp_kernels import set_verbose
from ..io.msg_types import serialize_cdr
from ..transport.base import Publisher, Transport
from ..transport.base import QosProfile as TransportQos
from .node_core import NodeCore
from .node_params import PARAMETERS, SPECS, NodeParams, check_value
from .node_runtime import NodeRuntime
from .process_end import ignore_further_interrupts
from .topic_plan import check_interface_packages

NODE_NAME = "tactile_sim_node"

SWITCH_INTERVAL = 1e-3
"""s: Python thread switch interval of the node process; the update loop waits at most about this long for the
marker thread (which may take several ms to build and serialise a MarkerArray)."""


def rclpy_qos(profile: TransportQos) -> QoSProfile:
    """The rclpy QoS profile of a transport QoS profile."""
    return QoSProfile(depth=profile.depth, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE if profile.reliable else ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL if profile.transient_local
                      else DurabilityPolicy.VOLATILE)


class CdrPublisher(Publisher):
    """An rclpy publisher that sends rosbags message objects as their CDR bytes."""

    def __init__(self, publisher: Any):
        self.publisher = publisher

    def publish(self, msg: Any) -> None:
        self.publisher.publish(serialize_cdr(msg))


class RclpyTransport(Transport):
    """:class:`~tactile_sim.transport.base.Transport` on an rclpy node: message classes looked up by type name,
    callbacks in the node's default (mutually exclusive) group, concurrent timers in a group of their own."""

    def __init__(self, node: Node):
        self.node = node
        self._concurrent_group = MutuallyExclusiveCallbackGroup()

    @property
    def name(self) -> str:
        return self.node.get_name()

    def create_publisher(self, topic, message_type, qos):
        return CdrPublisher(self.node.create_publisher(get_message(message_type), topic, rclpy_qos(qos)))

    def create_subscription(self, topic, message_type, callback, qos):
        return self.node.create_subscription(get_message(message_type), topic, callback, rclpy_qos(qos))

    def destroy_subscription(self, handle):
        self.node.destroy_subscription(handle)

    def create_timer(self, period, callback, concurrent=False):
        return self.node.create_timer(period, callback,
                                      callback_group=self._concurrent_group if concurrent else None)

    def destroy_timer(self, handle):
        self.node.destroy_timer(handle)

    def now_ns(self) -> int:
        return self.node.get_clock().now().nanoseconds

    @property
    def stopped(self) -> bool:
        return not self.node.context.ok()

    def log(self, level: str, text: str) -> None:
        # one call site per severity: rclpy raises "Logger severity cannot be changed between calls" when a
        # single source line logs at two severities
        logger = self.node.get_logger()
        if level == "error":
            logger.error(text)
        elif level == "warn":
            logger.warning(text)
        elif level == "info":
            logger.info(text)
        else:
            logger.debug(text)


def descriptor(spec) -> ParameterDescriptor:
    """The ROS parameter descriptor of one entry of :data:`~.node_params.PARAMETERS`."""
    d = ParameterDescriptor(description=spec.description, read_only=spec.read_only)
    if isinstance(spec.default, int) and not isinstance(spec.default, bool):
        d.integer_range = [IntegerRange(from_value=spec.range[0], to_value=spec.range[1], step=1)]
    elif spec.range is not None:
        d.floating_point_range = [FloatingPointRange(from_value=spec.range[0], to_value=spec.range[1], step=0.0)]
        d.dynamic_typing = True  # `update_rate:=100` (an integer) is accepted too; the value is checked here
    return d


class TactileSimNode(Node):
    """The node (see the module docstring); raises ConfigError / SceneError / ValueError at construction."""

    def __init__(self, **kwargs: Any):
        super().__init__(NODE_NAME, **kwargs)
        if self.get_logger().get_effective_level() <= LoggingSeverity.DEBUG:
            set_verbose(True)  # Warp's own lines (banner, one per loaded kernel module) at log level debug
        for spec in PARAMETERS:
            default = Parameter.Type.STRING_ARRAY if isinstance(spec.default, tuple) else spec.default
            self.declare_parameter(spec.name, default, descriptor(spec))
        params = NodeParams(**{spec.name: self._parameter(spec.name) for spec in PARAMETERS})
        config = load_config(params.config_file)
        self.transport = RclpyTransport(self)
        self.core = NodeCore(config, params, log=self.transport.log, name=self.get_name())
        check_interface_packages([(t.name, t.message_type) for t in self.core.topics()])  # exit 2 names them
        self.runtime = NodeRuntime(self.core, self.transport)
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
        self.runtime.parameters_changed({p.name for p in parameters})


def make_executor(kind: str, markers: bool) -> Executor:
    """The rclpy executor of the ``executor`` parameter (see :data:`~.node_params.PARAMETERS`); ``markers``: the
    node starts with markers on (``viz_rate`` > 0), which makes 'auto' take two threads where rclpy has no events
    executor. ValueError when 'events' is asked of an rclpy without one (Jazzy has it from rclpy 7.1.4)."""
    if kind in ("auto", "events"):
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:
            if kind == "events":
                raise ValueError("parameter 'executor': got 'events', but this rclpy has no "
                                 "rclpy.experimental.EventsExecutor; allowed here: 'auto', 'single_threaded', "
                                 "'multi_threaded'") from None
            kind = "multi_threaded" if markers else "single_threaded"
        else:
            return EventsExecutor()
    if kind == "single_threaded":
        return SingleThreadedExecutor()
    return MultiThreadedExecutor(num_threads=2)


def main(args: list[str] | None = None) -> int:
    """Console entry point ``tactile_sim_node``; returns the exit status."""
    rclpy.init(args=args)
    try:
        node = TactileSimNode()
    except (ConfigError, SceneError, ValueError, OSError, ParameterException) as exc:
        # ParameterException: rclpy refused a -p value against its descriptor (type, range) before our checks
        rclpy.logging.get_logger(NODE_NAME).fatal(f"cannot start: {exc}")
        rclpy.try_shutdown()
        return 2
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        executor = make_executor(node.core.params.executor, node.core.params.viz_rate > 0)
    except ValueError as exc:
        node.get_logger().fatal(f"cannot start: {exc}")
        node.destroy_node()
        rclpy.try_shutdown()
        return 2
    node.get_logger().info(f"executor: {type(executor).__name__}")
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        ignore_further_interrupts()
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
