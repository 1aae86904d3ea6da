"""Output profiles (``outputs:``): the node's PointCloud2 and WrenchStamped, decoded with the standard ROS 2
definitions, carry the sensor's TaxelArray of the same evaluation (layout order, link frame, signs, sums), in
rosbags' CDR, on the steps the TaxelArray is published; the pure topic listing equals what the node publishes."""

import copy
import re

import numpy as np
import pytest
import yaml
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from helpers_rihs import (CHANNEL_FLOAT32, HEADER, NESTED, POINT_CLOUD2, POINT_CLOUD2_RCL, POINT_FIELD, TIME,
                          UNBOUNDED, VECTOR3, WRENCH, WRENCH_STAMPED, description, field, rihs01)
from helpers_ros import (PACKAGE_ROOT, by_topic, config_of, demo_core, demo_dict, joint_state_msg, ns,
                         pad_contact_truth)
from tactile_sim.demo_trajectory import SQUEEZE
from tactile_sim.errors import ConfigError
from tactile_sim.io.msg_types import deserialize_cdr, serialize_cdr, type_hash
from tactile_sim.offline.output_bag import OutputBag
from tactile_sim.ros.inputs import decode_joint_state
from tactile_sim.ros.topic_plan import check_interface_packages, published_topics

POINT = (0.0, 0.0, 0.015)
"""m, link frame: the wrench's second reference point (the pad's centre height)."""
RAW = {"rest": 200.0, "gain": 300.0, "saturation": 255, "invert": True}
"""Counts of pad_left's tactile_state: 200 at rest, 300 counts/N fewer when pressed, 8 bits."""
PROFILE_OUTPUTS = {
    "pad_left": [{"profile": "pointcloud"}, {"profile": "wrench"},
                 {"profile": "wrench", "topic": "/ft/pad_left", "point": list(POINT)},
                 {"profile": "tactile_state", "raw": RAW}],
    "pad_right": [{"profile": "tactile_state", "channel_name": "right_pad", "value": "force_magnitude"}],
    "touch_right": [{"profile": "pointcloud"}, {"profile": "tactile_state"}],
    "depth_left": [{"profile": "pointcloud", "topic": "/depth_cloud"}],
    "gel_right": [{"profile": "pointcloud", "channels": ["displacement_z", "displacement_x"]}],
    "prox_left": [{"profile": "pointcloud", "channels": ["force_normal"]}, {"profile": "wrench"}],
    "range_right": [{"profile": "pointcloud"}, {"profile": "tactile_state", "topic": "/range_states"}],
}
TACTILE_STATE_DEFINITION = "std_msgs/Header header\nsensor_msgs/ChannelFloat32[] sensors\n"
"""The fields of tactile_toolbox's tactile_msgs/msg/TactileState.msg (its comments left out)."""
PROBE_RADIUS = 0.0005
"""m: the demo pads' sensing radius."""
DATATYPE = {7: "<f4"}
"""PointField datatype → numpy dtype (the only one the profile uses: FLOAT32)."""


def with_outputs(**sensor_values):
    data = demo_dict()
    for s in data["sensors"]:
        s.update(sensor_values.get(s["name"], {}))
        if s["name"] in PROFILE_OUTPUTS:
            s["outputs"] = copy.deepcopy(PROFILE_OUTPUTS[s["name"]])
    return data


@pytest.fixture(scope="module")
def run():
    """Updates open, closing and squeezed; per update the outputs by topic."""
    core = demo_core(with_outputs(range_right={"delay": 0.01}), update_rate=100.0)  # range_right: first read invalid
    runs = []
    for k, q in enumerate([0.03, 0.022, SQUEEZE, SQUEEZE]):
        core.on_joint_state(decode_joint_state(joint_state_msg([0.0, q, q], stamp=0.01 * k)))
        runs.append((np.array([0.0, q, q]), by_topic(core.update(ns(1.0 + 0.01 * k)))))
    return core, runs


def cloud_points(msg):
    """(height, width) array of the points of a decoded PointCloud2, read through its own field descriptions."""
    dtype = np.dtype({"names": [f.name for f in msg.fields], "formats": [DATATYPE[f.datatype] for f in msg.fields],
                      "offsets": [f.offset for f in msg.fields], "itemsize": msg.point_step})
    assert not msg.is_bigendian and msg.row_step == msg.point_step * msg.width and msg.is_dense
    assert all(f.count == 1 for f in msg.fields) and len(msg.data) == msg.row_step * msg.height
    return np.frombuffer(bytes(msg.data), dtype).reshape(msg.height, msg.width)


def expected_channel(name, taxels):
    """A channel's values straight from the TaxelArray's fields (n,)."""
    n = len(taxels.radii)
    force = np.asarray(taxels.force, np.float64).reshape(n, 3) if len(taxels.force) else None
    if name.startswith(("force_", "displacement_")) and name[-2] == "_" and name[-1] in "xyz":
        field = np.asarray(getattr(taxels, name.rsplit("_", 1)[0]), np.float64).reshape(n, 3)
        return field[:, "xyz".index(name[-1])]
    normals = np.asarray(taxels.normals, np.float64).reshape(n, 3)
    if name == "force_normal":
        return -(force * normals).sum(axis=1)
    if name == "indentation":
        return -(np.asarray(taxels.displacement, np.float64).reshape(n, 3) * normals).sum(axis=1)
    if name == "proximity":  # how far inside the range cap the nearest surface is; nothing before a valid read
        return (np.asarray(taxels.radii, np.float64) - np.asarray(taxels.distance, np.float64)) * taxels.valid
    if name == "force_magnitude":
        return np.sqrt((force ** 2).sum(axis=1))
    return np.asarray(getattr(taxels, name), np.float64)


def test_every_point_cloud_is_its_taxel_array_in_layout_order(run):
    _, runs = run
    checked = 0
    for _, out in runs:
        for sensor, outputs in PROFILE_OUTPUTS.items():
            taxels = out[f"~/{sensor}"][0]
            for o in outputs:
                if o["profile"] != "pointcloud":
                    continue
                wire = out[o.get("topic", f"~/{sensor}/points")][0]
                msg = deserialize_cdr(wire.cdr, "sensor_msgs/msg/PointCloud2")
                assert msg.header == taxels.header  # same stamp, link frame
                assert (msg.height, msg.width) == (taxels.rows, taxels.cols)  # the demo layouts are grids
                points = cloud_points(msg).reshape(-1)  # row-major: point [r, c] is taxel r * cols + c
                names = o.get("channels") or [f.name for f in msg.fields][3:]
                assert [f.name for f in msg.fields] == ["x", "y", "z", *names]
                xyz = np.stack([points[a] for a in "xyz"], axis=1)
                np.testing.assert_array_equal(xyz, np.asarray(taxels.positions).reshape(-1, 3))
                for name in names:
                    np.testing.assert_allclose(points[name], expected_channel(name, taxels), rtol=1e-6,
                                               atol=1e-9, err_msg=f"{sensor}.{name}")
                checked += 1
    assert checked == 4 * 6


def test_pressing_reads_positive_normal_force_where_the_can_overlaps_the_pad(run):
    """Independent of the TaxelArray: the closed-form overlap of the squeezed pad with the can."""
    _, runs = run
    q, out = runs[-1]
    taxels = out["~/pad_left"][0]
    sd, _ = pad_contact_truth(taxels, q)
    points = cloud_points(deserialize_cdr(out["~/pad_left/points"][0].cdr, "sensor_msgs/msg/PointCloud2"))
    pressing = points["force_normal"].reshape(-1)
    inside, outside = sd < PROBE_RADIUS - 2e-4, sd > PROBE_RADIUS + 2e-5
    assert inside.sum() >= 3 and outside.sum() >= 10
    assert (pressing[inside] > 0.05).all()  # 500 N/m x >= 0.1 mm of overlap
    assert (np.abs(pressing[outside]) < 0.03).all()  # noise 0.005 N
    assert (points["force_magnitude"].reshape(-1) >= np.abs(pressing) - 1e-6).all()


def test_wrench_is_the_sum_of_the_taxel_loads_about_its_point(run):
    _, runs = run
    for _, out in runs:
        taxels = out["~/pad_left"][0]
        force = np.asarray(taxels.force, np.float64).reshape(-1, 3).sum(axis=0)
        torque = np.asarray(taxels.torque, np.float64).reshape(-1, 3).sum(axis=0)
        origin = deserialize_cdr(out["~/pad_left/wrench"][0].cdr, "geometry_msgs/msg/WrenchStamped")
        moved = deserialize_cdr(out["/ft/pad_left"][0].cdr, "geometry_msgs/msg/WrenchStamped")
        for msg, point in ((origin, np.zeros(3)), (moved, np.asarray(POINT))):
            assert msg.header == taxels.header
            w = msg.wrench
            np.testing.assert_allclose([w.force.x, w.force.y, w.force.z], force, rtol=1e-9, atol=1e-12)
            # moment about p of loads whose moment about the origin is `torque`: torque - p x F
            np.testing.assert_allclose([w.torque.x, w.torque.y, w.torque.z], torque - np.cross(point, force),
                                       rtol=1e-9, atol=1e-12)
    squeezed = deserialize_cdr(runs[-1][1]["~/pad_left/wrench"][0].cdr, "geometry_msgs/msg/WrenchStamped")
    assert squeezed.wrench.force.y > 1.0  # the can pushes the left pad outwards (+y of fingertip_left)


def test_profile_messages_are_rosbags_cdr_of_their_fields(run):
    _, runs = run
    kinds = set()
    for _, out in runs:
        for topic, msgs in out.items():
            for msg in msgs:
                if msg.__msgtype__ in ("sensor_msgs/msg/PointCloud2", "geometry_msgs/msg/WrenchStamped"):
                    assert serialize_cdr(deserialize_cdr(msg.cdr, msg.__msgtype__)) == msg.cdr, topic
                    assert serialize_cdr(msg.message) == msg.cdr, topic  # the fields read back from the bytes
                    kinds.add(msg.__msgtype__)
    assert len(kinds) == 2


def test_type_hashes_are_the_ones_rosidl_generates():
    """PointCloud2: the hash rcl's type-hash test pins (copied from generated code); WrenchStamped: the second
    RIHS01 implementation of helpers_rihs, itself checked on that PointCloud2 hash."""
    assert type_hash("sensor_msgs/msg/PointCloud2") == POINT_CLOUD2_RCL
    expected = "RIHS01_8dc3deaf06b2ab281f9f9a742a8961c328ca7cec16e3fd6586d3a5c83fa78f77"
    assert rihs01(WRENCH_STAMPED, TIME, HEADER, WRENCH, VECTOR3) == expected
    assert type_hash("geometry_msgs/msg/WrenchStamped") == expected


def test_profiles_publish_on_the_steps_their_sensor_is_evaluated():
    data = with_outputs(pad_left={"update_period": 0.02})
    data["sensors"][0]["outputs"][3]["topic"] = "/ft/left_states"  # alone: not in step with the other skins
    core = demo_core(data, update_rate=100.0)
    core.on_joint_state(decode_joint_state(joint_state_msg([0.0, SQUEEZE, SQUEEZE])))
    seen = []
    for k in range(6):
        out = by_topic(core.update(ns(1.0 + 0.01 * k)))
        seen.append(tuple(sorted(t for t in out if t.startswith(("~/pad_left", "/ft/")))))
    assert seen[0::2] == [("/ft/left_states", "/ft/pad_left", "~/pad_left", "~/pad_left/points",
                           "~/pad_left/wrench")] * 3
    assert seen[1::2] == [()] * 3


@pytest.mark.parametrize("ground_truth, viz_rate", [(False, 10.0), (True, 0.0)])
def test_the_topic_listing_is_what_the_node_publishes(ground_truth, viz_rate):
    core = demo_core(with_outputs(), publish_ground_truth=ground_truth, viz_rate=viz_rate)
    bodies = {"palm_contact": ["palm"]}
    listed = published_topics(core.config, ground_truth=ground_truth, markers=viz_rate > 0, contact_bodies=bodies)
    assert listed == [(t.name, t.message_type) for t in core.topics()]
    assert ("~/palm_contact/<body>/wrench", "geometry_msgs/msg/WrenchStamped") in published_topics(core.config)


@pytest.mark.parametrize("topic, taken", [("~/pad_right", "the node itself"), ("/diagnostics", "the node itself"),
                                          ("/ft/pad_left", "outputs[2]")])
def test_an_output_on_a_published_topic_is_refused_before_the_suite_is_built(topic, taken):
    data = with_outputs()
    data["sensors"][-1]["outputs"] = [{"profile": "pointcloud", "topic": topic}]
    with pytest.raises(ConfigError) as err:
        demo_core(data)
    message = str(err.value)
    assert message.startswith(f"<dict>:sensors[{len(data['sensors']) - 1}].outputs[0].topic: topic already "
                              f"published; got '{topic}'; allowed: ")
    assert taken in message
    with pytest.raises(ConfigError):
        published_topics(config_of(data))


def test_the_output_bag_carries_the_profiles_with_their_definitions(run, tmp_path):
    _, runs = run
    with OutputBag(tmp_path / "profiles.mcap", node_name="tactile_sim_node") as bag:
        for k, (_, out) in enumerate(runs):
            bag.write_all(ns(1.0 + 0.01 * k), [(topic, m) for topic, msgs in out.items() for m in msgs])
    with Reader(tmp_path / "profiles") as reader:  # rosbags directly, types from the bag's own definitions
        connections = {c.topic: c for c in reader.connections}
        store = get_typestore(Stores.EMPTY)
        for c in reader.connections:
            store.register(get_types_from_msg(c.msgdef.data, c.msgtype))
        for topic, msgtype in (("/tactile_sim_node/pad_left/points", "sensor_msgs/msg/PointCloud2"),
                               ("/ft/pad_left", "geometry_msgs/msg/WrenchStamped"),
                               ("/tactile_states", "tactile_msgs/msg/TactileState")):
            assert connections[topic].msgtype == msgtype
            assert connections[topic].digest == type_hash(msgtype) == store.hash_rihs01(msgtype)
        read = [(c.topic, raw) for c, _, raw in reader.messages() if c.topic == "/ft/pad_left"]
    assert [raw for _, raw in read] == [out["/ft/pad_left"][0].cdr for _, out in runs]


def vendor_store():
    """A fresh typestore with TactileState built from the vendor's field list (not from tactile_sim's copy)."""
    store = get_typestore(Stores.ROS2_JAZZY)
    store.register(get_types_from_msg(TACTILE_STATE_DEFINITION, "tactile_msgs/msg/TactileState"))
    return store


def counts(values, rest, gain, saturation, invert):
    """Raw counts of an 8-bit inverted skin, element by element."""
    return np.array([min(max(round(rest - gain * v if invert else rest + gain * v), 0), saturation)
                     for v in values.tolist()], dtype=np.float64)


def test_tactile_states_carry_every_sensor_of_the_topic_in_one_message(run):
    _, runs = run
    store = vendor_store()
    expected = {  # channel name → (sensor, value from its TaxelArray)
        "pad_left": ("pad_left", lambda t: counts(expected_channel("force_normal", t), **RAW)),
        "right_pad": ("pad_right", lambda t: expected_channel("force_magnitude", t)),
        "touch_right": ("touch_right", lambda t: expected_channel("contact", t)),
    }
    for _, out in runs:
        (wire,) = out["/tactile_states"]
        msg = store.deserialize_cdr(wire.cdr, "tactile_msgs/msg/TactileState")
        assert bytes(store.serialize_cdr(msg, "tactile_msgs/msg/TactileState")) == wire.cdr
        assert msg.header.stamp == out["~/pad_left"][0].header.stamp and msg.header.frame_id == ""
        assert [c.name for c in msg.sensors] == list(expected)  # the configuration's sensor order
        for channel in msg.sensors:
            sensor, value = expected[channel.name]
            taxels = out[f"~/{sensor}"][0]
            np.testing.assert_allclose(channel.values, value(taxels), rtol=1e-6, atol=1e-6, err_msg=channel.name)
        (ranges,) = out["/range_states"]
        ranges = store.deserialize_cdr(ranges.cdr, "tactile_msgs/msg/TactileState")
        assert [c.name for c in ranges.sensors] == ["range_right"]
        np.testing.assert_allclose(ranges.sensors[0].values, expected_channel("proximity", out["~/range_right"][0]),
                                   rtol=1e-6, atol=1e-9)
    assert [out["~/range_right"][0].valid for _, out in runs] == [False, True, True, True]
    squeezed = store.deserialize_cdr(runs[-1][1]["/tactile_states"][0].cdr, "tactile_msgs/msg/TactileState")
    left = np.asarray(squeezed.sensors[0].values)
    assert left.min() < RAW["rest"] - 50 and left.max() <= RAW["rest"] + 3  # pressed taxels read fewer counts


def test_tactile_state_hash_is_rosidls_hash_of_the_vendor_definition():
    """A second RIHS01 implementation, first checked on rcl's pinned PointCloud2 hash, then on TactileState."""
    assert rihs01(POINT_CLOUD2, TIME, HEADER, POINT_FIELD) == POINT_CLOUD2_RCL
    state = description("tactile_msgs/msg/TactileState", field("header", NESTED, HEADER["type_name"]),
                        field("sensors", NESTED + UNBOUNDED, CHANNEL_FLOAT32["type_name"]))
    expected = "RIHS01_aa4e427c112eb4d54e0b5d6b941953667103adac4dfde243b564b2a5035a9da1"
    assert rihs01(state, TIME, HEADER, CHANNEL_FLOAT32) == expected
    assert type_hash("tactile_msgs/msg/TactileState") == expected == vendor_store().hash_rihs01(
        "tactile_msgs/msg/TactileState")


@pytest.mark.parametrize("edit, option, allowed", [
    ({"update_period": 0.02}, "topic", "a sensor with update_period 0.0 s"),
    ({"outputs": [{"profile": "tactile_state", "channel_name": "pad_left"}]}, "channel_name", "other than 'pad_left'"),
])
def test_tactile_state_topics_are_shared_only_in_step_and_with_distinct_channels(edit, option, allowed):
    data = with_outputs()
    data["sensors"][1].update(edit)  # pad_right
    with pytest.raises(ConfigError) as err:
        published_topics(config_of(data))
    assert str(err.value).startswith(f"<dict>:sensors[1].outputs[0].{option}: ")
    assert allowed in str(err.value)


def test_a_missing_vendor_interface_package_is_named():
    """Under rclpy the vendor's own package is needed; without ROS here, find_spec finds none of tactile_msgs."""
    topics = published_topics(config_of(with_outputs()))
    with pytest.raises(ConfigError) as err:
        check_interface_packages(topics, find=lambda package: None if package == "tactile_msgs" else object())
    assert str(err.value).startswith("the ROS 2 interface package 'tactile_msgs' is not installed; it is needed "
                                     "for /tactile_states (tactile_msgs/msg/TactileState), /range_states (")
    check_interface_packages(topics, find=lambda package: object())  # all installed: nothing to say


def test_the_readme_example_is_a_valid_sensor_entry():
    """The YAML of the README's "Replace a real skin" section, completed with the demo pad's layout, validates and
    publishes the topics the section says."""
    readme = PACKAGE_ROOT.parent / "README.md"
    if not readme.is_file():
        pytest.skip(f"README.md not found at {readme}")
    section = readme.read_text().split("## Replace a real skin", 1)[1]
    (example,) = re.findall(r"```yaml\n(.*?)```", section.split("\n## ", 1)[0], flags=re.S)
    (sensor,) = yaml.safe_load(example)["sensors"]
    data = demo_dict()
    data["sensors"] = [{**data["sensors"][0], **sensor}]
    topics = published_topics(config_of(data), markers=False)
    assert topics == [("~/pad_left", "tactile_sim_msgs/msg/TaxelArray"),
                      ("/tactile_states", "tactile_msgs/msg/TactileState"),
                      ("~/pad_left/points", "sensor_msgs/msg/PointCloud2"),
                      ("/ft/pad_left", "geometry_msgs/msg/WrenchStamped"),
                      ("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray")]


@pytest.mark.parametrize("topic", ["~/pad_left/ground_truth", "~/palm_contact/palm/wrench"])
def test_outputs_may_not_take_ground_truth_or_contact_body_topics(topic):
    """Ground truth may be switched on at run time; a ContactSensor's bodies are known once the robot is."""
    data = with_outputs()
    data["sensors"][-1]["outputs"] = [{"profile": "pointcloud", "topic": topic}]
    with pytest.raises(ConfigError, match=r"outputs\[0\]\.topic: topic already published"):
        demo_core(data)
