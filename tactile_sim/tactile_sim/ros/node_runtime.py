"""The live loop of ``tactile_sim_node`` on any transport: subscribe → step → publish.

:class:`NodeRuntime` connects a :class:`~.node_core.NodeCore` to a :class:`~tactile_sim.transport.base.Transport`
(rclpy under ROS, DDS without ROS), so both run the same node:

* subscribes ``/joint_states`` (best effort, so that reliable and best-effort publishers both connect), ``/tf``
  (reliable, keep last 100, as tf2), ``/tf_static`` (reliable, keep last 100, transient local; both as CDR bytes
  where the transport offers them, so that an oversized TF message is dropped before decoding) and, while no robot
  description is at hand, the latched ``/robot_description`` (dropped once a description is taken);
* publishes what the core returns on the update timer (``update_rate``), or, with ``step_on: joint_states``, after
  each joint state the core accepts (updated at the node time of its arrival; no update timer), the markers on their
  own timer
  (``viz_rate``; a transport may run it concurrently, see :meth:`Transport.create_timer`) and ``/diagnostics`` at
  1 Hz; sensor topics use the sensor-data profile when named in ``sensor_data_qos``, else reliable, keep last 10;
* times the decoding of each joint state and the publishing of each update's messages into the core's statistics
  (the update's other phases are the core's; all in ``/diagnostics``);
* once the sensors are built (at start, after a robot description arrives, after an ``update_rate`` change) the heap is
  settled (:func:`settle_heap`), so that Python's full collections do not stall updates;
* with ``realtime_priority`` > 0 every thread of the node runs under ``SCHED_FIFO`` (:mod:`.realtime`), set once
  the subscriptions and timers exist; when that is refused the node warns and runs on (``scheduling`` in
  ``/diagnostics``);
* every callback is guarded: an unexpected exception is counted in the core's drop statistics (``<what>.error``)
  and logged (throttled) instead of ending the node; once the transport is stopping, a failing callback is part of
  the shutdown and neither counted nor logged.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

from ..io.encode import JOINT_STATE
from ..transport.base import DEFAULT, LATCHED, SENSOR_DATA, Publisher, QosProfile, Transport
from .inputs import decode_joint_state, decode_robot_description
from .node_core import MARKERS_TOPIC, NodeCore
from .realtime import set_realtime_priority

TF_MESSAGE = "tf2_msgs/msg/TFMessage"
STRING = "std_msgs/msg/String"

JOINT_STATES_QOS = QosProfile(reliable=False, depth=10)
TF_QOS = QosProfile(depth=100)
TF_STATIC_QOS = QosProfile(depth=100, transient_local=True)
DESCRIPTION_QOS = LATCHED

DIAGNOSTICS_PERIOD = 1.0
"""s of node time between /diagnostics messages (the usual 1 Hz)."""


def settle_heap() -> None:
    """Collect once, then move every object alive now into the collector's permanent generation (``gc.freeze``):
    the libraries' and the suite's objects (torch, Warp, trimesh, the scene: hundreds of thousands) are then never
    scanned again. Without it a full collection every few seconds walks them all: a 160 ms update in 20 000 of the
    demo configuration at 1 kHz, a burst of missed deadlines. Costs one collection (~0.1 s) when called."""
    gc.collect()
    gc.freeze()


class NodeRuntime:
    """The node's subscriptions, publishers and timers on ``transport`` (see the module docstring)."""

    def __init__(self, core: NodeCore, transport: Transport):
        self.core, self.transport = core, transport
        self._pubs: dict[str, Publisher] = {}
        transport.create_subscription("/joint_states", JOINT_STATE, self.guard("joint_states", self._on_joint_state),
                                      JOINT_STATES_QOS)
        raw = {"raw": True} if transport.raw_samples else {}  # TF bytes: the count is checked before decoding
        for topic, static, qos in (("/tf", False, TF_QOS), ("/tf_static", True, TF_STATIC_QOS)):
            callback = self.guard(topic[1:], self._tf_callback(static, bool(raw)))
            transport.create_subscription(topic, TF_MESSAGE, callback, qos, **raw)
        self._description_sub = None
        if not core.ready:
            self._description_sub = transport.create_subscription(
                "/robot_description", STRING, self.guard("robot_description", self._on_description), DESCRIPTION_QOS)
        else:
            self.create_publishers()
            settle_heap()
        self._update_timer = None
        self._start_update_timer()
        self._viz_timer = None
        self._start_viz_timer()
        transport.create_timer(DIAGNOSTICS_PERIOD, self.guard("diagnostics", self._on_diagnostics))
        self.scheduling = set_realtime_priority(core.params.realtime_priority)
        if self.scheduling.problem:
            transport.log("warn", self.scheduling.problem)

    # ------------------------------------------------------------------ plumbing
    def guard(self, what: str, callback: Callable[..., None]) -> Callable[..., None]:
        """``callback`` that counts and logs (throttled) an unexpected exception instead of raising it."""

        def guarded(*args):
            try:
                callback(*args)
            except Exception as exc:  # noqa: BLE001 - the node must survive any single bad callback
                if self.transport.stopped:
                    return  # e.g. the markers thread publishing while SIGINT closes the context: not an error
                self.core.stats.drop(f"{what}.error")
                self.core.log("error", f"{what}.error", f"{self.transport.name}: {what} callback failed: {exc!r}")

        return guarded

    def publisher(self, topic: str, message_type: str) -> Publisher:
        """The publisher of a topic of the core (created on first use with the topic's QoS)."""
        pub = self._pubs.get(topic)
        if pub is None:
            fast = any(t.name == topic and t.sensor_data for t in self.core.topics())
            pub = self._pubs[topic] = self.transport.create_publisher(topic, message_type,
                                                                      SENSOR_DATA if fast else DEFAULT)
        return pub

    def create_publishers(self) -> None:
        """Publishers of every topic the core publishes now (so that subscribers can connect before data flows)."""
        for spec in self.core.topics():
            self.publisher(spec.name, spec.message_type)

    def publish(self, outputs: list[tuple[str, Any]]) -> None:
        """Publish (topic, message) pairs of the core."""
        for topic, msg in outputs:
            self.publisher(topic, msg.__msgtype__).publish(msg)

    def _start_update_timer(self) -> None:
        """The update timer at ``update_rate`` (replacing the previous one); none when joint states step the core."""
        if self._update_timer is not None:
            self.transport.destroy_timer(self._update_timer)
            self._update_timer = None
        if self.core.params.step_on == "timer":
            self._update_timer = self.transport.create_timer(self.core.params.period,
                                                             self.guard("update", self._on_update))

    def _start_viz_timer(self) -> None:
        if self._viz_timer is not None:
            self.transport.destroy_timer(self._viz_timer)
            self._viz_timer = None
        rate = self.core.params.viz_rate
        if rate > 0:
            self._viz_timer = self.transport.create_timer(1.0 / rate, self.guard("markers", self._on_markers),
                                                          concurrent=True)

    def parameters_changed(self, names: set[str]) -> None:
        """After the core's parameters changed: timers at the new rates, publishers of newly enabled topics."""
        if "update_rate" in names:
            self._start_update_timer()
        if "viz_rate" in names:
            self._start_viz_timer()
        if self.core.ready:
            self.create_publishers()
            if "update_rate" in names:  # the sensors were built again
                settle_heap()

    # ------------------------------------------------------------------ callbacks
    def _on_joint_state(self, msg: Any) -> None:
        start = time.perf_counter()
        taken = self.core.on_joint_state(decode_joint_state(msg))
        self.core.stats.record_phase("decode", time.perf_counter() - start)
        if taken and self.core.params.step_on == "joint_states":
            self._on_update()

    def _tf_callback(self, static: bool, raw: bool) -> Callable[[Any], None]:
        """The callback of ``/tf`` or ``/tf_static``: CDR bytes (``raw``) or a decoded TFMessage to the core."""
        take = self.core.on_tf_cdr if raw else self.core.on_tf_message
        return lambda msg: take(msg, static)

    def _on_description(self, msg: Any) -> None:
        if self.core.set_robot_description(decode_robot_description(msg)):
            self.transport.destroy_subscription(self._description_sub)
            self._description_sub = None
            self.create_publishers()
            settle_heap()

    def _on_update(self) -> None:
        outputs = self.core.update(self.transport.now_ns())
        if outputs:
            start = time.perf_counter()
            self.publish(outputs)
            self.core.stats.record_phase("publish", time.perf_counter() - start)

    def _on_markers(self) -> None:
        markers = self.core.markers()
        if markers is not None:
            self.publish([(MARKERS_TOPIC, markers)])

    def _on_diagnostics(self) -> None:
        self.publish([("/diagnostics", self.core.diagnostics(self.transport.now_ns(), self.scheduling))])
