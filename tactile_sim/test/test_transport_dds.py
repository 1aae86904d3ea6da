"""The DDS transport in one process, over real DDS on loopback: ROS 2 conventions seen through DDS discovery
(topic and type names, USER_DATA type hashes, QoS, the graph announcement), latched delivery to late joiners,
incompatible QoS reported, invalid and undecodable samples skipped, remapping, timers (wall and simulation time),
shutdown and clean departure."""

import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from cyclonedds.core import Policy
from cyclonedds.domain import DomainParticipant
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from helpers_transport import isolated_domain_id, padded
from tactile_sim.io.msg_types import deserialize_cdr, new_message, serialize_cdr
from tactile_sim.io.stamps import time_msg_from_ns
from tactile_sim.transport.base import DEFAULT, LATCHED, SENSOR_DATA, QosProfile
from tactile_sim.transport.dds import LOOPBACK_CONFIG, DdsTransport
from tactile_sim.transport.dds_qos import endpoint_qos
from tactile_sim.io.msg_types import type_hash
from tactile_sim.transport.dds_types import cdr_struct
from tactile_sim.transport.graph import DISCOVERY_QOS, DISCOVERY_TOPIC, DISCOVERY_TYPE

DOMAIN = isolated_domain_id()
STRING = "std_msgs/msg/String"
JOINT_STATE = "sensor_msgs/msg/JointState"
STRING_HASH = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"  # rosidl's, ROS 2 Jazzy


class Logs(list):
    """A log sink that keeps (level, text)."""

    def __call__(self, level, text):
        self.append((level, text))

    def matching(self, fragment):
        return [t for _, t in self if fragment in t]


LOGS: dict[str, Logs] = {}
"""Node name → what its transport logged."""


def transport(name, namespace="/", **kwargs):
    LOGS[name] = Logs()
    return DdsTransport(name, namespace, domain_id=DOMAIN, config=LOOPBACK_CONFIG, log=LOGS[name], **kwargs)


def spin_both(a, b, until, timeout=5.0):
    """Spin two transports alternately until ``until()`` or the timeout; returns ``until()``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if until():
            return True
        a.spin_once(0.01)
        b.spin_once(0.01)
    return until()


@pytest.fixture(scope="module")
def pair():
    a, b = transport("talker"), transport("listener", "/ns")
    yield a, b
    a.close()
    b.close()


def string(text):
    return new_message(STRING, data=text)


def test_latched_samples_reach_late_joiners_and_volatile_ones_do_not(pair):
    a, b = pair
    latched = a.create_publisher("/latched", STRING, LATCHED)
    volatile = a.create_publisher("/volatile", STRING, DEFAULT)
    latched.publish(string("first"))
    latched.publish(string("last"))
    volatile.publish(string("gone"))
    got_latched, got_volatile = [], []
    b.create_subscription("/latched", STRING, got_latched.append, LATCHED)
    b.create_subscription("/volatile", STRING, got_volatile.append, DEFAULT)
    assert spin_both(a, b, lambda: got_latched)
    spin_both(a, b, lambda: False, timeout=0.3)
    assert [m.data for m in got_latched] == ["last"]  # keep last 1
    assert got_volatile == []


def test_relative_names_resolve_in_the_namespace_and_remaps_apply():
    a = transport("remapper", remaps=("/chatter:=/ns/renamed", "__ns:=/ns"))
    b = transport("renamed_listener", "/ns")
    try:
        pub = a.create_publisher("/chatter", STRING, DEFAULT)
        got = []
        b.create_subscription("renamed", STRING, got.append, DEFAULT)
        assert pub.topic == "/ns/renamed" and a.names.fqn == "/ns/remapper"
        assert spin_both(a, b, lambda: pub.subscription_count == 1)
        pub.publish(string("hello"))
        assert spin_both(a, b, lambda: got)
        assert got[0].data == "hello"
    finally:
        a.close()
        b.close()


def test_incompatible_qos_is_reported_on_both_sides_and_nothing_crashes(pair):
    a, b = pair
    a.create_publisher("/best_effort", STRING, SENSOR_DATA)
    b.create_subscription("/best_effort", STRING, lambda m: None, DEFAULT)  # reliable reader: incompatible
    a.create_publisher("/not_latched", STRING, DEFAULT)
    b.create_subscription("/not_latched", STRING, lambda m: None, LATCHED)  # transient local reader: incompatible
    assert spin_both(a, b, lambda: a.incompatible_qos["/not_latched"] and b.incompatible_qos["/best_effort"]
                     and a.incompatible_qos["/best_effort"] and b.incompatible_qos["/not_latched"])
    assert LOGS['listener'].matching("New publisher discovered on topic '/best_effort', offering incompatible QoS")
    assert LOGS['listener'].matching("Last incompatible policy: RELIABILITY")
    assert LOGS['talker'].matching("New subscription discovered on topic '/not_latched', requesting incompatible QoS")
    assert LOGS['talker'].matching("Last incompatible policy: DURABILITY")


def test_invalid_samples_of_a_writer_that_left_are_skipped(pair):
    a, b = pair
    got = []
    sub = b.create_subscription("/leaving", STRING, got.append, DEFAULT)
    first = a.create_publisher("/leaving", STRING, DEFAULT)
    assert spin_both(a, b, lambda: first.subscription_count == 1)
    first.publish(string("one"))
    assert spin_both(a, b, lambda: got)
    a.destroy_publisher(first)
    assert spin_both(a, b, lambda: len(sub.reader.get_matched_publications()) == 0)
    spin_both(a, b, lambda: False, timeout=0.2)  # the reader now holds an invalid sample (no writers)
    second = a.create_publisher("/leaving", STRING, DEFAULT)
    assert spin_both(a, b, lambda: second.subscription_count == 1)
    second.publish(string("two"))
    assert spin_both(a, b, lambda: len(got) == 2)
    assert [m.data for m in got] == ["one", "two"]


def test_samples_that_do_not_decode_are_dropped_and_counted(pair):
    a, b = pair
    got = []
    b.create_subscription("/garbled", JOINT_STATE, got.append, DEFAULT)
    pub = a.create_publisher("/garbled", JOINT_STATE, DEFAULT)
    assert spin_both(a, b, lambda: pub.subscription_count == 1)
    pub.publish_cdr(b"\x00\x01\x00\x00\xff\xff\xff\x7f")  # truncated: Cyclone refuses to write it
    assert a.dropped[("/garbled", "write_failed")] == 1
    valid = serialize_cdr(new_message(JOINT_STATE, name=["ab"], position=np.array([0.5])))
    pub.publish_cdr(valid.replace(b"ab\x00", b"\xff\xfe\x00"))  # well-formed CDR, but the name is not UTF-8
    pub.publish(new_message(JOINT_STATE, name=["j"], position=np.array([1.5])))
    assert spin_both(a, b, lambda: got)
    assert [list(m.name) for m in got] == [["j"]]
    assert b.dropped[("/garbled", "invalid_cdr")] == 1
    assert LOGS["listener"].matching("dropped a sample on /garbled that is not a valid sensor_msgs/msg/JointState")


def test_raw_subscriptions_get_rosbags_cdr_padded_as_ros_sends_it(pair):
    a, b = pair
    raw = []
    b.create_subscription("/raw", STRING, raw.append, DEFAULT, raw=True)
    pub = a.create_publisher("/raw", STRING, DEFAULT)
    assert spin_both(a, b, lambda: pub.subscription_count == 1)
    msgs = [string(t) for t in ("", "a", "ab", "abc", "abcd")]  # every length modulo 4
    for msg in msgs:
        pub.publish(msg)
    assert spin_both(a, b, lambda: len(raw) == len(msgs))
    for msg, data in zip(msgs, raw):
        assert bytes(data) == padded(serialize_cdr(msg))
        assert deserialize_cdr(data, STRING).data == msg.data


def test_publishers_refuse_messages_of_another_type(pair):
    a, _ = pair
    pub = a.create_publisher("/typed", STRING, DEFAULT)
    with pytest.raises(ValueError, match="sensor_msgs/msg/JointState"):
        pub.publish(new_message(JOINT_STATE))
    with pytest.raises(ValueError, match="one message type per topic"):
        a.create_publisher("/typed", JOINT_STATE, DEFAULT)


def test_discovery_shows_ros2_names_type_hashes_and_qos(pair):
    a, b = pair
    pub = a.create_publisher("/discovered", STRING, QosProfile(reliable=True, depth=7, transient_local=True))
    sub = b.create_subscription("/discovered", STRING, lambda m: None, SENSOR_DATA)
    assert spin_both(a, b, lambda: pub.subscription_count == 1)
    # what each side learnt about the other through DDS discovery (the builtin-topic readers of cyclonedds 11.0.1's
    # Python binding crash on take, so the matched-endpoint data is read instead)
    (seen_reader,) = [pub.writer.get_matched_subscription_data(h) for h in pub.writer.get_matched_subscriptions()]
    (seen_writer,) = [sub.reader.get_matched_publication_data(h) for h in sub.reader.get_matched_publications()]
    for endpoint in (seen_reader, seen_writer):
        assert endpoint.topic_name == "rt/discovered"
        assert endpoint.type_name == "std_msgs::msg::dds_::String_"
        assert endpoint.qos[Policy.Userdata].data == f"typehash={STRING_HASH};".encode()
        rep = endpoint.qos[Policy.DataRepresentation]
        assert rep.use_cdrv0_representation and not rep.use_xcdrv2_representation
    assert seen_writer.participant_key.bytes == a.guid and seen_reader.participant_key.bytes == b.guid
    assert seen_writer.qos[Policy.History] == Policy.History.KeepLast(7)
    assert seen_writer.qos[Policy.Durability] == Policy.Durability.TransientLocal
    assert isinstance(seen_writer.qos[Policy.Reliability], Policy.Reliability.Reliable)
    assert seen_reader.qos[Policy.History] == Policy.History.KeepLast(5)
    assert seen_reader.qos[Policy.Reliability] == Policy.Reliability.BestEffort
    assert seen_reader.qos[Policy.Durability] == Policy.Durability.Volatile
    assert a.participant.get_qos()[Policy.Userdata].data == b"enclave=/;"


def test_the_node_is_announced_on_ros_discovery_info(pair):
    a, b = pair
    pub = a.create_publisher("/announced", STRING, DEFAULT)
    sub = a.create_subscription("/heard", STRING, lambda m: None, DEFAULT)
    observer = DomainParticipant(DOMAIN)
    try:
        # keyless topic: a reader keeping only the last sample would lose one participant's announcement to another's
        reader = DataReader(observer, Topic(observer, DISCOVERY_TOPIC, cdr_struct(DISCOVERY_TYPE)),
                            endpoint_qos(replace(DISCOVERY_QOS, depth=100), type_hash(DISCOVERY_TYPE)))
        latest = {}

        def announced():
            for sample in reader.take(64):
                if isinstance(sample, bytes):
                    info = deserialize_cdr(sample, DISCOVERY_TYPE)
                    latest[bytes(info.gid.data)] = info
            info = latest.get(a.guid)
            return info is not None and bytes(info.node_entities_info_seq[0].writer_gid_seq[-1].data) == \
                pub.writer.guid.bytes

        assert spin_both(a, b, announced)
    finally:
        del observer
    (node,) = latest[a.guid].node_entities_info_seq
    assert (node.node_name, node.node_namespace) == ("talker", "/")
    assert sub.reader.guid.bytes in [bytes(g.data) for g in node.reader_gid_seq]
    assert pub.writer.guid.bytes in [bytes(g.data) for g in node.writer_gid_seq]
    assert latest[b.guid].node_entities_info_seq[0].node_namespace == "/ns"


def test_timers_keep_their_period_and_concurrent_ones_run_on_their_own_thread(pair):
    _, b = pair
    ticks, concurrent = [], []
    timer = b.create_timer(0.01, lambda: ticks.append(time.monotonic()))
    other = b.create_timer(0.02, lambda: concurrent.append(threading.current_thread()), concurrent=True)
    b.spin(timeout=0.6)
    b.destroy_timer(timer)
    b.destroy_timer(other)
    n = len(concurrent)
    b.spin(timeout=0.1)
    assert np.median(np.diff(ticks)) == pytest.approx(0.01, rel=0.2)
    assert len(ticks) >= 25  # ≥ 40 % of the 60 periods even on a loaded machine
    assert concurrent and all(t is not threading.main_thread() for t in concurrent)
    assert len(concurrent) == n  # stopped


def test_simulation_time_follows_clock_and_drives_the_timers():
    a = transport("clock_publisher")
    b = transport("sim", use_sim_time=True)
    try:
        clock = a.create_publisher("/clock", "rosgraph_msgs/msg/Clock", SENSOR_DATA)
        fired = []
        b.create_timer(0.05, lambda: fired.append(b.now_ns()))
        assert b.now_ns() == 0
        assert spin_both(a, b, lambda: clock.subscription_count == 1)

        def tick(t_ns):
            clock.publish(new_message("rosgraph_msgs/msg/Clock", clock=time_msg_from_ns(t_ns)))
            assert spin_both(a, b, lambda: b.now_ns() == t_ns)

        for k in range(1, 31):  # 10 ms steps from 10 to 300 ms
            tick(10_000_000 * k)
        assert fired == [50_000_000 * k for k in range(1, 7)]
        tick(20_000_000)  # back in time (a simulation reset): the timers restart from there
        fired.clear()
        for k in range(3, 10):
            tick(10_000_000 * k)
        assert fired == [70_000_000]
    finally:
        a.close()
        b.close()


def test_shutdown_from_another_thread_ends_spin_promptly():
    t = transport("stoppable")
    try:
        threading.Timer(0.2, t.shutdown).start()
        start = time.monotonic()
        t.spin()
        assert time.monotonic() - start < 1.0 and t.stopped
    finally:
        t.close()


def test_closing_a_transport_makes_its_writers_leave_at_once(pair):
    _, b = pair
    leaving = transport("short_lived")
    pub = leaving.create_publisher("/short", STRING, DEFAULT)
    sub = b.create_subscription("/short", STRING, lambda m: None, DEFAULT)
    assert spin_both(leaving, b, lambda: pub.subscription_count == 1)
    start = time.monotonic()
    leaving.close()
    b.spin(until=lambda: len(sub.reader.get_matched_publications()) == 0, timeout=5)
    assert len(sub.reader.get_matched_publications()) == 0
    assert time.monotonic() - start < 2.0  # not the 10 s lease expiry


PEER = """
import sys
from tactile_sim.io.msg_types import new_message
from tactile_sim.transport.base import LATCHED
from tactile_sim.transport.dds import DdsTransport
t = DdsTransport("env_configured")  # no domain id, no configuration: ROS_DOMAIN_ID and CYCLONEDDS_URI
t.create_publisher("/from_env", "std_msgs/msg/String", LATCHED).publish(new_message("std_msgs/msg/String", data="env"))
t.spin(timeout=float(sys.argv[1]))
t.close()
"""


def test_ros_domain_id_and_cyclonedds_uri_are_respected(pair, tmp_path):
    _, b = pair
    config = tmp_path / "loopback.xml"
    config.write_text(LOOPBACK_CONFIG)
    env = {**os.environ, "ROS_DOMAIN_ID": str(DOMAIN), "CYCLONEDDS_URI": f"file://{config}",
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    peer = subprocess.Popen([sys.executable, "-c", PEER, "30"], env=env)
    try:
        got = []
        b.create_subscription("/from_env", STRING, got.append, LATCHED)
        assert b.spin(until=lambda: got, timeout=25)
        assert got[0].data == "env"
    finally:
        peer.kill()
        peer.wait()


def test_invalid_domain_ids_are_rejected(monkeypatch):
    monkeypatch.setenv("ROS_DOMAIN_ID", "300")
    with pytest.raises(ValueError, match="ROS_DOMAIN_ID"):
        DdsTransport("bad")
    with pytest.raises(ValueError, match="DDS domain id: got 233"):
        DdsTransport("bad", domain_id=233)
    with pytest.raises(ValueError, match="another configuration"):
        DdsTransport("other", domain_id=DOMAIN, config=LOOPBACK_CONFIG.replace("64", "32"))
