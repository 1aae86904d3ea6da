"""A ROS 2 node over DDS without a ROS install: :class:`DdsTransport` speaks ROS 2's wire conventions through the
PyPI ``cyclonedds`` package (which bundles its own Cyclone DDS library), so ROS 2 nodes using rmw_cyclonedds (the
Jazzy default and others) see it as one of theirs.

* Topics: ROS name → expanded, remapped (:mod:`.names`) → DDS topic ``rt/<name>`` of type
  ``<pkg>::msg::dds_::<Name>_`` (:mod:`.dds_types`). The bytes written are rosbags' CDR of the message (exactly what
  the rclpy node publishes); received samples are decoded by rosbags.
* QoS: :mod:`.dds_qos` (reliability, keep-last depth, durability; ``typehash=RIHS01_…;`` USER_DATA; XCDR1).
* Graph: the node is announced on ``ros_discovery_info`` (:mod:`.graph`), so ``ros2 node list`` shows it; the
  announcement is refreshed after endpoints are created or destroyed.
* Robustness: invalid samples (a writer that went away) are skipped; a sample that does not decode or a write that
  fails is dropped, counted in :attr:`DdsTransport.dropped` and logged (throttled); an incompatible QoS offered or
  requested by a peer is logged as rclpy does and counted in :attr:`DdsTransport.incompatible_qos`.
* Configuration: ``config`` None uses Cyclone's own (``CYCLONEDDS_URI`` when set); :data:`LOOPBACK_CONFIG` keeps all
  traffic on 127.0.0.1 (tests). The domain id is ``ROS_DOMAIN_ID`` (default 0) unless given.
* Clock and timers: system time, or the latest ``/clock`` under ``use_sim_time`` (0 until the first one arrives,
  timers wait for it; time going backwards restarts the timers), as rclpy does. Callbacks and timers run on the
  thread calling :meth:`DdsTransport.spin`, concurrent timers on their own threads; :meth:`DdsTransport.shutdown`
  may be called from a signal handler.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cyclonedds.core import DDSException, GuardCondition, InstanceState, ReadCondition, SampleState, ViewState, WaitSet
from cyclonedds.domain import Domain, DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from ..io.msg_types import deserialize_cdr, full_type_name, serialize_cdr
from ..io.stamps import time_msg_to_ns
from .base import MessageCallback, Publisher, QosProfile, Transport
from .dds_qos import endpoint_qos, participant_qos, policy_name
from ..io.msg_types import type_hash
from .dds_types import CdrSample, cdr_struct
from .graph import DISCOVERY_QOS, DISCOVERY_TOPIC, DISCOVERY_TYPE, NodeEntities, participant_entities_info
from .names import NodeNames, dds_topic_name

LOOPBACK_CONFIG = """<CycloneDDS xmlns="https://cdds.io/config">
  <Domain Id="any">
    <General>
      <Interfaces><NetworkInterface address="127.0.0.1"/></Interfaces>
      <AllowMulticast>false</AllowMulticast>
    </General>
    <Discovery>
      <ParticipantIndex>auto</ParticipantIndex>
      <MaxAutoParticipantIndex>64</MaxAutoParticipantIndex>
      <Peers><Peer address="127.0.0.1"/></Peers>
    </Discovery>
  </Domain>
</CycloneDDS>"""
"""Cyclone DDS configuration that keeps every packet on the loopback interface: unicast discovery of the
participants on 127.0.0.1 (indices 0–64 per domain), no multicast. ROS 2 processes on the same host discover a
node using it when they use the same (e.g. ``CYCLONEDDS_URI`` of a file with this content)."""

CLOCK_TOPIC = "/clock"
CLOCK_QOS = QosProfile(reliable=False, depth=1)
"""``/clock`` as rclpy subscribes it under ``use_sim_time`` (best effort accepts every publisher)."""

MAX_WAIT = 0.05
"""s: longest single wait of :meth:`DdsTransport.spin_once`, which bounds the reaction to :meth:`shutdown`."""

STATUS_PERIOD = 0.5
"""s of wall time between polls of the incompatible-QoS statuses."""

LOG_PERIOD = 5.0
"""s: a drop of the same kind on the same topic is logged at most this often."""

TAKE_BATCH = 64

LEVELS = ("debug", "info", "warn", "error")

_domains: dict[int, str | None] = {}
_domains_lock = threading.Lock()
_domain_entities: list[Domain] = []


def _open_domain(domain_id: int, config: str | None) -> None:
    """Create the process's Cyclone domain ``domain_id`` with ``config`` once (None: Cyclone's own configuration,
    created with the first participant). One process cannot use one domain with two configurations."""
    with _domains_lock:
        if domain_id in _domains:
            if _domains[domain_id] != config:
                raise ValueError(f"DDS domain {domain_id} is already open in this process with another "
                                 "configuration; allowed: one configuration per domain and process")
            return
        if config is not None:
            _domain_entities.append(Domain(domain_id, config))
        _domains[domain_id] = config


MAX_DOMAIN_ID = 232
"""Largest DDS domain id whose RTPS ports fit in 16 bits (ROS 2's limit)."""


def default_domain_id() -> int:
    """``ROS_DOMAIN_ID`` (0 when unset); ValueError when it is not an integer in 0–232."""
    text = os.environ.get("ROS_DOMAIN_ID", "").strip()
    if not text:
        return 0
    if not text.isdigit() or int(text) > MAX_DOMAIN_ID:
        raise ValueError(f"ROS_DOMAIN_ID: got {text!r}; allowed: an integer from 0 to {MAX_DOMAIN_ID}")
    return int(text)


def stderr_log(name: str, min_level: str = "info") -> Callable[[str, str], None]:
    """A log sink that prints ``[LEVEL] [seconds] [name]: text`` to stderr, as ROS 2's console output does."""
    floor = LEVELS.index(min_level)

    def sink(level: str, text: str) -> None:
        if LEVELS.index(level) >= floor:
            print(f"[{level.upper()}] [{time.time():.9f}] [{name}]: {text}", file=sys.stderr, flush=True)

    return sink


@dataclass
class DdsSubscription:
    """A subscription (made by :meth:`DdsTransport.create_subscription`): fully qualified topic, message type,
    callback, raw (callback gets :class:`CdrSample` bytes), and its cyclonedds reader and read condition."""

    topic: str
    message_type: str
    callback: MessageCallback
    raw: bool
    reader: DataReader
    condition: ReadCondition


@dataclass
class _Timer:
    """A timer of the node clock: period and next due time in ns."""

    period_ns: int
    callback: Callable[[], None]
    next_ns: int

    def due(self, now_ns: int) -> bool:
        """True when the timer should fire at ``now_ns``; then schedules the next period after now (missed periods
        are skipped, as rcl timers do)."""
        if now_ns < self.next_ns:
            return False
        self.next_ns += ((now_ns - self.next_ns) // self.period_ns + 1) * self.period_ns
        return True


class _ThreadTimer(_Timer):
    """A concurrent timer: fires on its own daemon thread until cancelled."""

    def __init__(self, period_ns: int, callback: Callable[[], None], next_ns: int, clock: Callable[[], int]):
        super().__init__(period_ns, callback, next_ns)
        self.clock = clock
        self.cancelled = threading.Event()
        self.thread = threading.Thread(target=self._run, name="dds-timer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.cancelled.wait(max(0.0, min(MAX_WAIT, (self.next_ns - self.clock()) * 1e-9))):
            if self.due(self.clock()):
                self.callback()


class DdsPublisher(Publisher):
    """A ROS 2 publisher over DDS (made by :meth:`DdsTransport.create_publisher`). ``topic``: fully qualified."""

    def __init__(self, transport: DdsTransport, topic: str, message_type: str, writer: DataWriter):
        self.transport, self.topic, self.message_type, self.writer = transport, topic, message_type, writer
        self._sample = cdr_struct(message_type)

    def publish(self, msg: Any) -> None:
        """Send ``msg`` (a rosbags message object of this publisher's type)."""
        if full_type_name(msg.__msgtype__) != self.message_type:
            raise ValueError(f"publisher of {self.topic}: got a {msg.__msgtype__} message; allowed: "
                             f"{self.message_type}")
        self.publish_cdr(serialize_cdr(msg, self.message_type))

    def publish_cdr(self, data: bytes) -> None:
        """Send CDR bytes (with the 4-byte encapsulation header) of this publisher's type as they are."""
        try:
            self.writer.write(self._sample(data))
        except DDSException as exc:
            self.transport.drop(self.topic, "write_failed", f"a write on {self.topic} failed: {exc}")

    @property
    def subscription_count(self) -> int:
        """Number of matched readers."""
        return len(self.writer.get_matched_subscriptions())


class DdsTransport(Transport):
    """A ROS 2 node on DDS (see the module docstring).

    name, namespace: the node's (validated as ROS does); remaps: ``[node:]from:=to`` rules (``__node``/``__ns``
    too); domain_id: None for ``ROS_DOMAIN_ID``; config: Cyclone XML (:data:`LOOPBACK_CONFIG`) or None for Cyclone's
    own; use_sim_time: node clock from ``/clock``; log: (level, text) sink, default :func:`stderr_log`; enclave: the
    ROS security enclave announced in the participant's USER_DATA. Raises ValueError for invalid names, rules or
    domain ids.
    """

    raw_samples = True

    def __init__(self, name: str = "tactile_sim_node", namespace: str = "/", *, remaps: tuple[str, ...] = (),
                 domain_id: int | None = None, config: str | None = None, use_sim_time: bool = False,
                 log: Callable[[str, str], None] | None = None, enclave: str = "/"):
        self.names = NodeNames.create(name, namespace, remaps)
        self.domain_id = default_domain_id() if domain_id is None else int(domain_id)
        if not 0 <= self.domain_id <= MAX_DOMAIN_ID:
            raise ValueError(f"DDS domain id: got {domain_id!r}; allowed: 0 to {MAX_DOMAIN_ID}")
        _open_domain(self.domain_id, config)
        self._log = log if log is not None else stderr_log(self.names.name)
        self.participant = DomainParticipant(self.domain_id, qos=participant_qos(enclave))
        self.guid = self.participant.guid.bytes
        self._topics: dict[str, Topic] = {}
        self._subs: list[DdsSubscription] = []
        self._pubs: list[DdsPublisher] = []
        self._timers: list[_Timer] = []
        self._thread_timers: list[_ThreadTimer] = []
        self._drop_lock = threading.Lock()
        self._waitset = WaitSet(self.participant)
        self._guard = GuardCondition(self.participant)
        self._waitset.attach(self._guard)
        self._stop = False
        self._graph_dirty = True
        self._next_status = 0.0
        self._logged: dict[tuple[str, str], float] = {}
        self.dropped: Counter[tuple[str, str]] = Counter()
        """(fully qualified topic, reason) → samples dropped: ``invalid_cdr`` (did not decode), ``write_failed``."""
        self.incompatible_qos: Counter[str] = Counter()
        """Fully qualified topic → peers whose QoS was incompatible with this node's endpoint."""
        self._use_sim_time = use_sim_time
        self._sim_ns = 0
        self._graph_writer = DataWriter(self.participant, self._topic(DISCOVERY_TOPIC, DISCOVERY_TYPE),
                                        endpoint_qos(DISCOVERY_QOS, type_hash(DISCOVERY_TYPE)))
        if use_sim_time:
            self.create_subscription(CLOCK_TOPIC, "rosgraph_msgs/msg/Clock", self._on_clock, CLOCK_QOS)

    # ------------------------------------------------------------------ Transport
    @property
    def name(self) -> str:
        return self.names.name

    def log(self, level: str, text: str) -> None:
        self._log(level, text)

    def now_ns(self) -> int:
        return self._sim_ns if self._use_sim_time else time.time_ns()

    def _topic(self, dds_name: str, message_type: str) -> Topic:
        topic = self._topics.get(dds_name)
        if topic is None:
            topic = self._topics[dds_name] = Topic(self.participant, dds_name, cdr_struct(message_type))
        elif topic.data_type is not cdr_struct(message_type):
            raise ValueError(f"topic {dds_name}: already used with {topic.data_type.__idl_typename__}; got "
                             f"{message_type}; allowed: one message type per topic")
        return topic

    def create_publisher(self, topic: str, message_type: str, qos: QosProfile) -> DdsPublisher:
        message_type = full_type_name(message_type)
        fqn = self.names.resolve(topic)
        writer = DataWriter(self.participant, self._topic(dds_topic_name(fqn), message_type),
                            endpoint_qos(qos, type_hash(message_type)))
        pub = DdsPublisher(self, fqn, message_type, writer)
        self._pubs.append(pub)
        self._graph_dirty = True
        return pub

    def destroy_publisher(self, publisher: DdsPublisher) -> None:
        """Delete a publisher's writer now (its readers see it leave)."""
        if publisher in self._pubs:
            self._pubs.remove(publisher)
            publisher.writer.__del__()  # cyclonedds deletes entities in __del__; do it now, not at collection
            self._graph_dirty = True

    def create_subscription(self, topic: str, message_type: str, callback: MessageCallback, qos: QosProfile,
                            raw: bool = False) -> DdsSubscription:
        """See :meth:`Transport.create_subscription`; ``raw`` hands the callback the received :class:`CdrSample`
        bytes instead of a message object."""
        message_type = full_type_name(message_type)
        fqn = self.names.resolve(topic)
        reader = DataReader(self.participant, self._topic(dds_topic_name(fqn), message_type),
                            endpoint_qos(qos, type_hash(message_type)))
        condition = ReadCondition(reader, SampleState.Any | ViewState.Any | InstanceState.Any)
        self._waitset.attach(condition)
        sub = DdsSubscription(fqn, message_type, callback, raw, reader, condition)
        self._subs.append(sub)
        self._graph_dirty = True
        return sub

    def destroy_subscription(self, handle: DdsSubscription) -> None:
        if handle in self._subs:
            self._subs.remove(handle)
            self._waitset.detach(handle.condition)
            handle.condition.__del__()  # cyclonedds deletes entities in __del__; do it now, not at collection
            handle.reader.__del__()
            self._graph_dirty = True

    def create_timer(self, period: float, callback: Callable[[], None], concurrent: bool = False) -> _Timer:
        """See :meth:`Transport.create_timer`; a ``concurrent`` timer runs on its own thread."""
        if not period > 0:
            raise ValueError(f"timer period: got {period!r} s; allowed: > 0")
        period_ns = max(1, round(period * 1e9))
        if concurrent:
            timer = _ThreadTimer(period_ns, callback, self.now_ns() + period_ns, self.now_ns)
            self._thread_timers.append(timer)
            return timer
        timer = _Timer(period_ns, callback, self.now_ns() + period_ns)
        self._timers.append(timer)
        return timer

    def destroy_timer(self, handle: _Timer) -> None:
        if handle in self._timers:
            self._timers.remove(handle)
        if handle in self._thread_timers:
            self._thread_timers.remove(handle)
            handle.cancelled.set()
            if handle.thread is not threading.current_thread():
                handle.thread.join()

    # ------------------------------------------------------------------ graph and status
    def graph_entry(self) -> NodeEntities:
        """This node's entry of the ROS graph (readers and writers other than the graph's own)."""
        return NodeEntities(self.names.name, self.names.namespace, [s.reader.guid.bytes for s in self._subs],
                            [p.writer.guid.bytes for p in self._pubs])

    def _announce(self) -> None:
        msg = participant_entities_info(self.guid, [self.graph_entry()])
        self._graph_writer.write(cdr_struct(DISCOVERY_TYPE)(serialize_cdr(msg)))
        self._graph_dirty = False

    def drop(self, topic: str, reason: str, text: str) -> None:
        """Count a dropped sample and log it (at most once per :data:`LOG_PERIOD` per topic and reason)."""
        key = (topic, reason)
        with self._drop_lock:
            self.dropped[key] += 1
            now = time.monotonic()
            if now - self._logged.get(key, -LOG_PERIOD) < LOG_PERIOD:
                return
            self._logged[key] = now
            count = self.dropped[key]
        self.log("warn", f"{text} ({count} dropped on {topic} for this reason so far)")

    def _poll_status(self) -> None:
        for sub in self._subs:
            status = sub.reader.get_requested_incompatible_qos_status()
            if status.total_count_change > 0:
                self.incompatible_qos[sub.topic] += status.total_count_change
                self.log("warn", f"New publisher discovered on topic '{sub.topic}', offering incompatible QoS. No "
                                 f"messages will be received from it. Last incompatible policy: "
                                 f"{policy_name(status.last_policy_id)}")
        for pub in self._pubs:
            status = pub.writer.get_offered_incompatible_qos_status()
            if status.total_count_change > 0:
                self.incompatible_qos[pub.topic] += status.total_count_change
                self.log("warn", f"New subscription discovered on topic '{pub.topic}', requesting incompatible QoS. No "
                                 f"messages will be sent to it. Last incompatible policy: "
                                 f"{policy_name(status.last_policy_id)}")

    # ------------------------------------------------------------------ spinning
    def _on_clock(self, msg: Any) -> None:
        t = time_msg_to_ns(msg.clock)
        if t < self._sim_ns:
            for timer in self._timers + self._thread_timers:
                timer.next_ns = t + timer.period_ns
        self._sim_ns = t

    def _take(self, sub: DdsSubscription) -> int:
        """Deliver every queued sample of one subscription; returns how many were taken."""
        samples = sub.reader.take(TAKE_BATCH)
        for sample in samples:
            if sub not in self._subs:
                break  # destroyed by an earlier callback of this batch
            if not isinstance(sample, CdrSample):
                continue  # invalid sample: instance state change only (e.g. the writer went away)
            if sub.raw:
                sub.callback(sample)
                continue
            try:
                msg = deserialize_cdr(sample, sub.message_type)
            except Exception as exc:  # noqa: BLE001 - any decoding failure of foreign bytes is a drop, not a crash
                self.drop(sub.topic, "invalid_cdr", f"dropped a sample on {sub.topic} that is not a valid "
                                                    f"{sub.message_type} ({exc!r})")
                continue
            sub.callback(msg)
        return len(samples)

    def _fire_timers(self) -> None:
        for timer in list(self._timers):
            if timer in self._timers and timer.due(self.now_ns()):
                timer.callback()

    def _wait_s(self, timeout: float) -> float:
        if self._use_sim_time or not self._timers:
            return timeout
        due = min(t.next_ns for t in self._timers) - self.now_ns()
        return max(0.0, min(timeout, due * 1e-9))

    def spin_once(self, timeout: float = MAX_WAIT) -> None:
        """Wait up to ``timeout`` s (less when a timer is due) for data, then run every callback and due timer."""
        wait = self._wait_s(min(timeout, MAX_WAIT))
        if wait > 0:
            self._waitset.wait(round(wait * 1e9))
        for sub in list(self._subs):
            while sub in self._subs and self._take(sub) == TAKE_BATCH:
                pass
        self._fire_timers()
        if self._graph_dirty:
            self._announce()
        now = time.monotonic()
        if now >= self._next_status:
            self._next_status = now + STATUS_PERIOD
            self._poll_status()

    def spin(self, until: Callable[[], bool] | None = None, timeout: float | None = None) -> bool:
        """Spin until :meth:`shutdown`, ``until()`` is true or ``timeout`` s of wall time passed; returns
        ``until()`` (False without one)."""
        end = None if timeout is None else time.monotonic() + timeout
        while not self._stop:
            if until is not None and until():
                return True
            if end is not None and time.monotonic() >= end:
                break
            self.spin_once(MAX_WAIT if end is None else max(0.0, min(MAX_WAIT, end - time.monotonic())))
        return until is not None and until()

    def shutdown(self) -> None:
        """Make :meth:`spin` return (safe from a signal handler or another thread)."""
        self._stop = True
        self._guard.set(True)

    @property
    def stopped(self) -> bool:
        """True after :meth:`shutdown` or :meth:`close`."""
        return self._stop

    def close(self) -> None:
        """Delete the participant and everything in it: peers see the node and its endpoints leave at once."""
        self._stop = True
        for timer in list(self._thread_timers):
            self.destroy_timer(timer)
        self._subs.clear()
        self._pubs.clear()
        self._timers.clear()
        self._topics.clear()
        self.participant.__del__()  # cyclonedds deletes entities in __del__; the participant takes its children
