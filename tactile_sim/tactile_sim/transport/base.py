"""What tactile_sim_node needs from a middleware: publish and subscribe with ROS 2 QoS, a clock, timers and a log.

Two implementations: the rclpy one (:class:`tactile_sim.ros.node.RclpyTransport`, the default under ROS) and a DDS
one that needs no ROS install (:class:`tactile_sim.transport.dds.DdsTransport`). The node's wiring
(:class:`tactile_sim.ros.node_runtime.NodeRuntime`) only sees this interface.

Messages: publishers take message objects of :mod:`tactile_sim.io.msg_types` (rosbags classes) and send their CDR;
subscription callbacks receive objects with the ROS field names (rclpy messages under rclpy, rosbags messages over
DDS), which the decoders of :mod:`tactile_sim.ros.inputs` read alike. Callbacks and timers run one at a time on the
thread that spins the transport, except timers created ``concurrent``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class QosProfile:
    """The QoS of one publisher or subscription, as ROS 2 profiles set it: reliable (else best effort), keep-last
    ``depth`` (samples), transient_local (late joiners get the last ``depth`` samples; else volatile)."""

    reliable: bool = True
    depth: int = 10
    transient_local: bool = False

    def __post_init__(self):
        if not isinstance(self.depth, int) or self.depth < 1:
            raise ValueError(f"QosProfile.depth: got {self.depth!r}; allowed: an integer >= 1")


DEFAULT = QosProfile()
"""ROS 2's default profile: reliable, keep last 10, volatile."""

SENSOR_DATA = QosProfile(reliable=False, depth=5)
"""ROS 2's sensor-data profile: best effort, keep last 5, volatile."""

LATCHED = QosProfile(depth=1, transient_local=True)
"""Reliable, keep last 1, transient local: the last sample reaches late joiners (``/robot_description``)."""

MessageCallback = Callable[[Any], None]
"""Receives one message object (see the module docstring)."""


class Publisher(ABC):
    """A publisher of one topic."""

    @abstractmethod
    def publish(self, msg: Any) -> None:
        """Send ``msg`` (a message object of :mod:`tactile_sim.io.msg_types`) as CDR."""


class Transport(ABC):
    """A node on a middleware (see the module docstring). Topic names are ROS names (absolute, relative to the
    node's namespace, or ``~/`` private), resolved and remapped as ROS does; ``message_type`` is ``pkg/msg/Name``.
    ``raw_samples``: :meth:`create_subscription` also takes ``raw=True`` (the callback gets the CDR bytes)."""

    raw_samples = False

    @property
    def stopped(self) -> bool:
        """True once the node is shutting down: a callback that fails then (a publish on a closed context) is
        part of the shutdown, not an error."""
        return False

    @property
    @abstractmethod
    def name(self) -> str:
        """The node's name (after remapping)."""

    @abstractmethod
    def create_publisher(self, topic: str, message_type: str, qos: QosProfile) -> Publisher:
        """A publisher of ``message_type`` on ``topic``."""

    @abstractmethod
    def create_subscription(self, topic: str, message_type: str, callback: MessageCallback, qos: QosProfile) -> Any:
        """Subscribe: ``callback`` receives each message; returns a handle for :meth:`destroy_subscription`."""

    @abstractmethod
    def destroy_subscription(self, handle: Any) -> None:
        """Stop a subscription."""

    @abstractmethod
    def create_timer(self, period: float, callback: Callable[[], None], concurrent: bool = False) -> Any:
        """Call ``callback`` every ``period`` s of the node clock; returns a handle for :meth:`destroy_timer`.
        ``concurrent``: the callback may run on another thread, concurrently with the other callbacks (it must only
        read state that they replace whole); otherwise callbacks run one at a time."""

    @abstractmethod
    def destroy_timer(self, handle: Any) -> None:
        """Stop a timer."""

    @abstractmethod
    def now_ns(self) -> int:
        """The node clock, integer ns (system time, or simulation time under ``use_sim_time``)."""

    @abstractmethod
    def log(self, level: str, text: str) -> None:
        """Log ``text`` at ``level`` ("debug", "info", "warn", "error")."""
