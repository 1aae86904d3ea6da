"""Output profiles over real DDS: ``tactile-sim node --transport dds`` (a subprocess) with pointcloud, wrench and
tactile_state outputs on the demo pads; this process holds the gripper squeezed and subscribes to the profiles with
readers of the standard and vendor ROS 2 types (cyclonedds' own codec of the IDL that rosidl generates, the RIHS01
hash in USER_DATA, as a ROS 2 subscriber built with sensor_msgs / geometry_msgs / tactile_msgs would). Checked: the
messages arrive at the configured rate, decode to the same values as rosbags' decoding of the node's TaxelArrays of
the same stamp, and are rosbags' CDR byte for byte."""

import time

import numpy as np
import pytest
from cyclonedds.domain import DomainParticipant
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic

from helpers_config import write_yaml
from helpers_ros import demo_dict, sensors_only, tf_msg
from helpers_transport import isolated_domain_id, padded, start_dds_node
from tactile_sim.demo_trajectory import DEMO_URDF, JOINT_NAMES, SQUEEZE
from tactile_sim.io.msg_types import deserialize_cdr, new_message, serialize_cdr, type_hash
from tactile_sim.io.stamps import time_msg, time_msg_to_ns
from tactile_sim.ros.node_runtime import TF_STATIC_QOS
from tactile_sim.transport.base import DEFAULT
from tactile_sim.transport.dds import LOOPBACK_CONFIG, DdsTransport
from tactile_sim.transport.dds_qos import endpoint_qos
from tactile_sim.transport.dds_types import idl_struct
from tactile_sim.transport.names import dds_topic_name

DOMAIN = isolated_domain_id(offset=7)
RATE = 25.0
NODE = "/tactile_sim_node"
POINTS, WRENCH, STATES = f"{NODE}/pad_left/points", "/ft/pad_left", "/tactile_states"
TAXELS, RIGHT = f"{NODE}/pad_left", f"{NODE}/pad_right"
PROFILES = (POINTS, WRENCH, STATES)
TYPES = {POINTS: "sensor_msgs/msg/PointCloud2", WRENCH: "geometry_msgs/msg/WrenchStamped",
         STATES: "tactile_msgs/msg/TactileState", TAXELS: "tactile_sim_msgs/msg/TaxelArray",
         RIGHT: "tactile_sim_msgs/msg/TaxelArray"}
START_TIMEOUT = 90.0
LISTEN = 2.0
"""s of messages recorded once the node publishes."""


def profile_config(tmp_path):
    """The demo's two pads (robot URDF by absolute path), with outputs."""
    data = sensors_only(demo_dict(), {"pad_left", "pad_right"})
    data["robot"]["urdf"] = str(DEMO_URDF)
    data["sensors"][0]["outputs"] = [{"profile": "pointcloud", "channels": ["force_normal"]},
                                     {"profile": "wrench", "topic": WRENCH}, {"profile": "tactile_state"}]
    data["sensors"][1]["outputs"] = [{"profile": "tactile_state"}]
    return write_yaml(tmp_path, data, "profiles.yaml")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(raw CDR per topic, samples decoded by cyclonedds per topic, node log)."""
    tmp = tmp_path_factory.mktemp("profiles_e2e")
    t = DdsTransport("profiles_probe", domain_id=DOMAIN, config=LOOPBACK_CONFIG, log=lambda *a: None)
    raw = {topic: [] for topic in TYPES}
    for topic, typ in TYPES.items():
        t.create_subscription(topic, typ, lambda data, k=topic: raw[k].append(bytes(data)), DEFAULT, raw=True)
    vendor = DomainParticipant(DOMAIN)  # readers of the standard types, decoded by cyclonedds itself
    readers = {topic: DataReader(vendor, Topic(vendor, dds_topic_name(topic), idl_struct(TYPES[topic])),
                                 endpoint_qos(DEFAULT, type_hash(TYPES[topic]))) for topic in PROFILES}
    decoded = {topic: [] for topic in readers}
    t.create_publisher("/tf_static", "tf2_msgs/msg/TFMessage", TF_STATIC_QOS).publish(
        tf_msg(("world", "base_link", (0, 0, 0), (0, 0, 0, 1), time.time())))
    joints = t.create_publisher("/joint_states", "sensor_msgs/msg/JointState", DEFAULT)
    t.create_timer(0.02, lambda: joints.publish(new_message(
        "sensor_msgs/msg/JointState", header=new_message("std_msgs/msg/Header", stamp=time_msg(time.time())),
        name=list(JOINT_NAMES), position=np.array([0.0, SQUEEZE, SQUEEZE]), velocity=np.zeros(3))))
    node = start_dds_node(DOMAIN, tmp / "node.log", "--config", str(profile_config(tmp)),
                          "-p", f"update_rate:={RATE}", "-p", "viz_rate:=0")
    try:
        assert t.spin(until=lambda: raw[POINTS], timeout=START_TIMEOUT), (tmp / "node.log").read_text()
        for topic in raw:
            raw[topic].clear()
        end = time.monotonic() + LISTEN
        while time.monotonic() < end:
            t.spin(timeout=0.05)
            for topic, reader in readers.items():
                decoded[topic] += [s for s in reader.take(64) if isinstance(s, idl_struct(TYPES[topic]))]
        t.spin(timeout=0.3)
    finally:
        node.terminate()
        node.wait(timeout=20)
        t.close()
    yield raw, decoded, (tmp / "node.log").read_text()


def stamp_ns(msg):
    return time_msg_to_ns(msg.header.stamp)


def test_standard_type_readers_receive_the_profiles_at_the_update_rate(run):
    raw, decoded, _ = run
    for topic in PROFILES:
        stamps = np.array([stamp_ns(m) for m in decoded[topic]]) * 1e-9
        assert len(stamps) >= 0.5 * RATE * LISTEN, topic
        assert np.all(np.diff(stamps) > 0)
        assert np.median(np.diff(stamps)) == pytest.approx(1.0 / RATE, rel=0.1)
        assert len(raw[topic]) >= len(decoded[topic]) - 2


def test_profiles_decoded_by_cyclonedds_match_the_taxel_array_of_their_stamp(run):
    raw, decoded, _ = run
    taxels, right = ({stamp_ns(m): m for m in (deserialize_cdr(r, TYPES[k]) for r in raw[k])} for k in (TAXELS, RIGHT))
    matched = 0
    for cloud, wrench, states in zip(decoded[POINTS], decoded[WRENCH], decoded[STATES]):
        assert stamp_ns(cloud) == stamp_ns(wrench) == stamp_ns(states)
        ref = taxels.get(stamp_ns(cloud))
        if ref is None or stamp_ns(cloud) not in right:
            continue
        matched += 1
        n = len(ref.radii)
        assert cloud.header.frame_id == wrench.header.frame_id == "fingertip_left"
        assert [f.name for f in cloud.fields] == ["x", "y", "z", "force_normal"]
        points = np.frombuffer(bytes(cloud.data), "<f4").reshape(n, 4)
        np.testing.assert_array_equal(points[:, :3], np.asarray(ref.positions).reshape(n, 3))
        force = np.asarray(ref.force, np.float64).reshape(n, 3)
        pressing = -(force * np.asarray(ref.normals).reshape(n, 3)).sum(axis=1)
        np.testing.assert_allclose(points[:, 3], pressing, rtol=1e-6, atol=1e-9)
        w = wrench.wrench
        np.testing.assert_allclose([w.force.x, w.force.y, w.force.z], force.sum(axis=0), rtol=1e-9, atol=1e-12)
        assert [c.name for c in states.sensors] == ["pad_left", "pad_right"]
        np.testing.assert_array_equal(states.sensors[0].values, points[:, 3])  # the default value: force_normal
        other = right[stamp_ns(cloud)]
        pressing = -(np.asarray(other.force).reshape(n, 3) * np.asarray(other.normals).reshape(n, 3)).sum(axis=1)
        np.testing.assert_allclose(states.sensors[1].values, pressing, rtol=1e-6, atol=1e-9)
    assert matched >= 0.5 * RATE * LISTEN
    assert max(decoded[WRENCH], key=stamp_ns).wrench.force.y > 1.0  # squeezed: the can pushes the pad outwards


def test_profile_samples_are_rosbags_cdr(run):
    raw, _, _ = run
    for topic in PROFILES:
        assert raw[topic]
        for data in raw[topic]:
            assert data == padded(serialize_cdr(deserialize_cdr(data, TYPES[topic])))
