"""``tactile-sim node --transport dds`` end to end, two processes over real DDS on loopback.

This test process plays robot_state_publisher and the controller through its own DDS transport: it publishes the
latched robot description and static TF *before* the node starts (the node joins late), then joint states of the
demo gripper held open, closing on the can and held squeezed. The node (a subprocess, configuration without
``robot.urdf``, so it must take the latched description) publishes taxel arrays, the thermal grid, joint torques,
markers and diagnostics, which this process records as raw CDR. Checked: contents against the closed-form pad
contact, the update rate as a property of the stamps, every written message byte-equal to rosbags' CDR (and
decodable by cyclonedds' own codec), the graph announcement, incompatible QoS reported, a writer that leaves and an
undecodable sample survived, and clean shutdown on SIGTERM and SIGINT. A second node in another namespace shows
the namespace and remapping across processes, and its ``realtime_priority`` on every thread of the running node."""

import os
import signal
import time

import numpy as np
import pytest
import yaml
from cyclonedds.domain import DomainParticipant
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from helpers_ros import DEMO_YAML, pad_contact_truth, tf_msg
from helpers_transport import isolated_domain_id, padded, start_dds_node, thread_policies
from tactile_sim.constants import EPS_D
from tactile_sim.demo_trajectory import DEMO_URDF, JOINT_NAMES, SQUEEZE, gripper_trajectory
from tactile_sim.io.msg_types import deserialize_cdr, message_class, new_message, serialize_cdr
from tactile_sim.io.stamps import time_msg, time_msg_to_ns
from tactile_sim.ros.node_runtime import TF_STATIC_QOS
from tactile_sim.transport.base import DEFAULT, LATCHED, SENSOR_DATA, QosProfile
from tactile_sim.transport.dds import LOOPBACK_CONFIG, DdsTransport
from tactile_sim.transport.dds_qos import endpoint_qos
from tactile_sim.io.msg_types import type_hash
from tactile_sim.transport.dds_types import cdr_struct, idl_struct
from tactile_sim.transport.graph import DISCOVERY_QOS, DISCOVERY_TOPIC, DISCOVERY_TYPE

DOMAIN = isolated_domain_id(offset=1)
RATE = 20.0
NODE = "/tactile_sim_node"
SECOND = "/spare/second"
PRIORITY = 15
"""realtime_priority of the second node."""
PROBE_RADIUS = 0.0005
MARGIN = 2e-5
START_TIMEOUT = 90.0
TOPICS = {  # topic → (type, QoS of the test's subscription)
    f"{NODE}/pad_left": ("tactile_sim_msgs/msg/TaxelArray", DEFAULT),
    f"{NODE}/pad_left/ground_truth": ("tactile_sim_msgs/msg/TaxelArray", DEFAULT),
    f"{NODE}/pad_right": ("tactile_sim_msgs/msg/TaxelArray", SENSOR_DATA),
    f"{NODE}/pad_right/ground_truth": ("tactile_sim_msgs/msg/TaxelArray", SENSOR_DATA),
    f"{NODE}/thermal_left": ("tactile_sim_msgs/msg/ThermalGrid", DEFAULT),
    f"{NODE}/joint_torque": ("sensor_msgs/msg/JointState", DEFAULT),
    f"{NODE}/palm_contact": ("tactile_sim_msgs/msg/LinkContact", DEFAULT),
    f"{NODE}/palm_contact/palm/wrench": ("geometry_msgs/msg/WrenchStamped", DEFAULT),
    f"{NODE}/markers": ("visualization_msgs/msg/MarkerArray", DEFAULT),
    "/diagnostics": ("diagnostic_msgs/msg/DiagnosticArray", QosProfile(depth=50)),
    f"{SECOND}/pad_left": ("tactile_sim_msgs/msg/TaxelArray", DEFAULT),
}
JOINT_STATE = "sensor_msgs/msg/JointState"
TRAJECTORY_END = 3.0
"""s: the demo trajectory's open (0.5 s), closing (1.5 s) and squeezing (1 s) phases end squeezed."""


class Recorder:
    """The test side: publishers of the node's inputs, raw subscriptions of its outputs (arrival time, bytes)."""

    def __init__(self):
        self.t = DdsTransport("e2e_probe", domain_id=DOMAIN, config=LOOPBACK_CONFIG, log=lambda *a: None)
        self.received = {topic: [] for topic in TOPICS}
        self.subs = {topic: self.t.create_subscription(topic, typ, lambda raw, k=topic: self.record(k, raw), qos,
                                                       raw=True) for topic, (typ, qos) in TOPICS.items()}
        self.incompatible = self.t.create_subscription(f"{NODE}/pad_right", "tactile_sim_msgs/msg/TaxelArray",
                                                       lambda m: None, DEFAULT)  # reliable vs best effort
        self.q = np.array(gripper_trajectory(0.0).position)
        self.joints = self.t.create_publisher("/joint_states", JOINT_STATE, DEFAULT)
        self.t.create_timer(0.02, self.publish_joints)

    def record(self, topic, raw):
        self.received[topic].append((time.monotonic(), bytes(raw)))

    def messages(self, topic, since=0.0, until=np.inf):
        """Decoded messages of ``topic`` that arrived between ``since`` and ``until`` (monotonic s)."""
        typ = TOPICS[topic][0]
        return [deserialize_cdr(raw, typ) for t, raw in self.received[topic] if since <= t <= until]

    def writers(self, topic):
        """GUIDs of the writers matched with this process's reader of ``topic``."""
        reader = self.subs[topic].reader
        return {reader.get_matched_publication_data(h).key.bytes for h in reader.get_matched_publications()}

    def publish_world(self):
        self.t.create_publisher("/robot_description", "std_msgs/msg/String", LATCHED).publish(
            new_message("std_msgs/msg/String", data=DEMO_URDF.read_text()))
        self.t.create_publisher("/tf_static", "tf2_msgs/msg/TFMessage", TF_STATIC_QOS).publish(
            tf_msg(("world", "base_link", (0, 0, 0), (0, 0, 0, 1), time.time())))

    def publish_joints(self):
        self.joints.publish(new_message(JOINT_STATE, header=new_message("std_msgs/msg/Header",
                                                                        stamp=time_msg(time.time())),
                                        name=list(JOINT_NAMES), position=self.q, velocity=np.zeros(3)))

    def spin(self, seconds):
        self.t.spin(timeout=seconds)

    def wait_for(self, topic, timeout):
        assert self.t.spin(until=lambda: self.received[topic], timeout=timeout), \
            f"no message on {topic} within {timeout} s"


def config_without_robot(tmp_path):
    data = yaml.safe_load(DEMO_YAML.read_text())
    del data["robot"]
    path = tmp_path / "demo_without_robot.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The whole scenario, once: returns (recorder, phase start times, node logs, exit codes, leave delays)."""
    tmp = tmp_path_factory.mktemp("e2e")
    rec = Recorder()
    rec.publish_world()  # latched, before the nodes exist
    rec.spin(0.2)
    node = start_dds_node(DOMAIN, tmp / "node.log", "--config", str(config_without_robot(tmp)),
                          "-p", f"update_rate:={RATE}", "-p", "publish_ground_truth:=true", "-p", "viz_rate:=4",
                          "-p", "sensor_data_qos:=[pad_right]")
    second = start_dds_node(DOMAIN, tmp / "second.log", "--name", "second", "--namespace", "/spare",
                            "-r", "/joint_states:=/spare/joint_states", "-p", "update_rate:=5", "-p", "viz_rate:=0",
                            "-p", f"realtime_priority:={PRIORITY}")
    try:
        rec.wait_for(f"{NODE}/pad_left", START_TIMEOUT)
        rec.wait_for(f"{SECOND}/pad_left", START_TIMEOUT)
        policies = thread_policies(second.pid)
        phases = {"open": time.monotonic()}
        rec.spin(1.0)
        # the controller restarts: its writer leaves (the node's reader gets an invalid sample), a new one comes
        rec.t.destroy_publisher(rec.joints)
        rec.spin(0.3)
        rec.joints = rec.t.create_publisher("/joint_states", JOINT_STATE, DEFAULT)
        assert rec.t.spin(until=lambda: rec.joints.subscription_count == 1, timeout=5)
        valid = serialize_cdr(new_message(JOINT_STATE, name=["slide"], position=np.zeros(1)))
        for _ in range(5):  # best effort on the node's side, so a few times (the first may precede its match)
            rec.joints.publish_cdr(valid.replace(b"slide\x00", b"\xffslid\x00"))  # not UTF-8: undecodable
            rec.spin(0.06)
        phases["closing"] = start = time.monotonic()
        while (elapsed := time.monotonic() - start) < TRAJECTORY_END:
            rec.q = np.array(gripper_trajectory(elapsed).position)
            rec.spin(0.01)
        rec.q = np.array([0.0, SQUEEZE, SQUEEZE])
        rec.spin(0.5)
        phases["squeezed"] = time.monotonic()
        rec.spin(2.0)
        phases["end"] = time.monotonic()
        graph = read_graph(rec)
        writers = {topic: rec.writers(topic) for topic in TOPICS if topic != "/diagnostics"}
        left = {}
        codes = {}
        for proc, sig, topic in ((node, signal.SIGTERM, f"{NODE}/pad_left"), (second, signal.SIGINT,
                                                                                 f"{SECOND}/pad_left")):
            sent = time.monotonic()
            proc.send_signal(sig)
            codes[sig] = proc.wait(timeout=20)
            reader = rec.subs[topic].reader
            rec.t.spin(until=lambda r=reader: not r.get_matched_publications(), timeout=5)
            left[sig] = (time.monotonic() - sent, len(reader.get_matched_publications()))
    finally:
        for proc in (node, second):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    logs = {"node": (tmp / "node.log").read_text(), "second": (tmp / "second.log").read_text()}
    yield rec, phases, logs, codes, left, (graph, writers, policies)
    rec.t.close()


def read_graph(rec):
    """The latest ROS graph announcement of every participant, read from ros_discovery_info by a fresh reader."""
    observer = DomainParticipant(DOMAIN)
    reader = DataReader(observer, Topic(observer, DISCOVERY_TOPIC, cdr_struct(DISCOVERY_TYPE)),
                        endpoint_qos(QosProfile(depth=100, transient_local=DISCOVERY_QOS.transient_local),
                                     type_hash(DISCOVERY_TYPE)))
    latest = {}
    end = time.monotonic() + 3
    while time.monotonic() < end and len(latest) < 3:
        for sample in reader.take(64):
            if isinstance(sample, bytes):
                info = deserialize_cdr(sample, DISCOVERY_TYPE)
                latest[bytes(info.gid.data)] = info
        rec.spin(0.05)
    return {(n.node_namespace, n.node_name): n for info in latest.values() for n in info.node_entities_info_seq}


def stamp_s(msg):
    return time_msg_to_ns(msg.header.stamp) * 1e-9


def test_the_node_took_the_latched_description_and_static_tf_as_a_late_joiner(run):
    rec, _, logs = run[:3]
    assert rec.received[f"{NODE}/pad_left"]
    assert "waiting for /robot_description" in logs["node"]
    assert "robot description received" in logs["node"]


def test_pads_read_nothing_while_open_and_the_closed_form_contact_when_squeezed(run):
    rec, phases, _, _, _, _ = run
    for pad in ("pad_left", "pad_right"):
        gt = rec.messages(f"{NODE}/{pad}/ground_truth")
        # after the node took the first joint states (before, the fingers sit at zero, inside the can) and before
        # they start closing
        opened = rec.messages(f"{NODE}/{pad}/ground_truth", since=phases["open"] + 0.3, until=phases["closing"])
        assert opened and all(np.all(np.asarray(m.force) == 0) for m in opened)
        assert gt[-1].header.stamp != opened[-1].header.stamp
        squeezed = rec.messages(f"{NODE}/{pad}/ground_truth", since=phases["squeezed"])
        assert len(squeezed) >= 10
        for msg in squeezed:
            sd, _ = pad_contact_truth(msg, (0.0, SQUEEZE, SQUEEZE))
            overlap = PROBE_RADIUS - sd
            force = np.linalg.norm(np.asarray(msg.force).reshape(-1, 3), axis=1)
            inside, outside = overlap > EPS_D + MARGIN, overlap < EPS_D - MARGIN
            assert inside.any() and np.all(force[inside] > 0) and np.all(force[outside] == 0)
            assert msg.valid and msg.ground_truth and msg.header.frame_id == f"fingertip_{pad.split('_')[1]}"
        measured = rec.messages(f"{NODE}/{pad}", since=phases["squeezed"])
        if pad == "pad_left":  # best-effort pad_right may drop some; both carry the same sensor
            assert len(measured) >= 10 and not measured[-1].ground_truth
            assert np.linalg.norm(np.asarray(measured[-1].force)) > 0


def test_the_other_outputs_carry_the_demo_contents(run):
    rec, phases, _, _, _, _ = run
    (thermal, *_) = rec.messages(f"{NODE}/thermal_left", since=phases["squeezed"])
    assert len(np.asarray(thermal.temperatures)) == 2 * 2 * 3 and thermal.header.frame_id == "fingertip_left"
    torque = rec.messages(f"{NODE}/joint_torque", since=phases["squeezed"])[-1]
    assert list(torque.name) == list(JOINT_NAMES) and len(torque.effort) == 3
    assert rec.messages(f"{NODE}/palm_contact") and rec.messages(f"{NODE}/palm_contact/palm/wrench")
    markers = rec.messages(f"{NODE}/markers", since=phases["squeezed"])
    assert markers
    spheres = [m for m in markers[-1].markers if m.type == message_class("visualization_msgs/msg/Marker").SPHERE_LIST]
    assert {m.header.frame_id for m in spheres} >= {"fingertip_left", "fingertip_right"}
    (status, *_) = [m.status[0] for m in rec.messages("/diagnostics")
                    if m.status[0].name == "tactile_sim_node: update loop"]
    assert {kv.key for kv in status.values} >= {"update_rate_achieved_hz", "dropped_inputs"}


def test_the_update_rate_is_a_property_of_the_stamps(run):
    rec, phases, _, _, _, _ = run
    stamps = np.array([stamp_s(m) for m in rec.messages(f"{NODE}/pad_left/ground_truth", since=phases["closing"])])
    dt = np.diff(stamps)
    assert np.all(dt > 0)
    assert np.median(dt) == pytest.approx(1.0 / RATE, rel=0.1)
    assert (len(stamps) - 1) / (stamps[-1] - stamps[0]) == pytest.approx(RATE, rel=0.3)
    second = [stamp_s(m) for m in rec.messages(f"{SECOND}/pad_left")]
    assert np.median(np.diff(second)) == pytest.approx(1.0 / 5.0, rel=0.1)


def test_every_written_message_is_rosbags_cdr_byte_for_byte(run):
    rec = run[0]
    checked = 0
    for topic, (typ, _) in TOPICS.items():
        for _, raw in rec.received[topic]:
            assert raw == padded(serialize_cdr(deserialize_cdr(raw, typ))), topic
            checked += 1
    assert checked > 100
    for topic in (f"{NODE}/pad_left", f"{NODE}/thermal_left", f"{NODE}/markers"):  # cyclonedds' own codec agrees
        typ = TOPICS[topic][0]
        raw = rec.received[topic][-1][1]
        assert padded(idl_struct(typ).deserialize(raw).serialize(use_version_2=False)) == raw


def test_both_nodes_are_announced_in_the_ros_graph_with_their_writers(run):
    _, _, _, _, _, (graph, writers, _) = run
    node, second = graph[("/", "tactile_sim_node")], graph[("/spare", "second")]
    for entry, prefix in ((node, NODE), (second, SECOND)):
        announced = {bytes(g.data) for g in entry.writer_gid_seq}
        for topic in (t for t in writers if t.startswith(prefix + "/")):
            assert len(writers[topic]) == 1 and writers[topic] <= announced, topic
        assert len(entry.reader_gid_seq) == 3  # joint states, tf, tf_static (the description reader is gone)
    assert not {bytes(g.data) for g in node.writer_gid_seq} & {bytes(g.data) for g in second.writer_gid_seq}


def test_incompatible_qos_is_reported_by_the_node_and_it_keeps_publishing(run):
    rec, phases, logs, _, _, _ = run
    assert "New subscription discovered on topic '/tactile_sim_node/pad_right', requesting incompatible QoS" \
        in logs["node"]
    assert rec.t.incompatible_qos[f"{NODE}/pad_right"] >= 1
    assert rec.messages(f"{NODE}/pad_right", since=phases["squeezed"])


def test_a_leaving_writer_and_an_undecodable_sample_are_survived(run):
    rec, phases, logs, _, _, _ = run
    assert "dropped a sample on /joint_states that is not a valid sensor_msgs/msg/JointState" in logs["node"]
    assert "Traceback" not in logs["node"]
    assert rec.messages(f"{NODE}/pad_left", since=phases["squeezed"])  # joint states of the new writer took effect


def test_sigterm_and_sigint_end_the_nodes_cleanly(run):
    _, _, logs, codes, left, _ = run
    assert codes == {signal.SIGTERM: 0, signal.SIGINT: 0}
    for name in ("node", "second"):
        assert "shut down" in logs[name] and "Traceback" not in logs[name]
    for delay, remaining in left.values():
        assert remaining == 0 and delay < 10.0  # the writers left with the process, not by lease expiry (10 s)


def test_realtime_priority_puts_every_thread_of_the_dds_node_under_fifo(run):
    """The second node asked for realtime_priority: where this process may grant it (root here, or an rtprio limit)
    every thread of the running node, DDS's own included, is SCHED_FIFO at that priority and /diagnostics says so;
    elsewhere none is, and the node warned once and says so in /diagnostics."""
    rec, _, logs, _, _, (_, _, policies) = run
    statuses = [s for m in rec.messages("/diagnostics") for s in m.status if s.name.startswith("second")]
    assert statuses and len(policies) >= 3  # main, DDS's receive and timed-event threads, ...
    scheduling = {kv.value for s in statuses for kv in s.values if kv.key == "scheduling"}
    if os.geteuid() == 0:
        assert set(policies.values()) == {(os.SCHED_FIFO, PRIORITY)}, policies
        assert scheduling == {f"SCHED_FIFO {PRIORITY}"} and "realtime_priority" not in logs["second"]
    else:
        assert {p for p, _ in policies.values()} == {os.SCHED_OTHER}
        assert scheduling == {"normal"} and logs["second"].count(f"realtime_priority {PRIORITY}: SCHED_FIFO") == 1
