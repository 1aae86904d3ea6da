"""Message types built from tactile_sim_msgs/msg/*.msg: shipped copies, CDR round trips, definitions and hashes."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pytest
from helpers_io import assert_messages_equal, random_message
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from tactile_sim.io import msg_types
from tactile_sim.io.encode import DIAGNOSTIC_ARRAY, JOINT_STATE, LINK_CONTACT, TAXEL_ARRAY, THERMAL_GRID, WRENCH_STAMPED
from tactile_sim.io.markers import MARKER_ARRAY
from tactile_sim.io.readings import TAXEL_CHANNELS

REPO_MSG_DIR = Path(__file__).resolve().parents[2] / "tactile_sim_msgs" / "msg"

FILLED_TYPES = (TAXEL_ARRAY, THERMAL_GRID, LINK_CONTACT, JOINT_STATE, WRENCH_STAMPED, MARKER_ARRAY, DIAGNOSTIC_ARRAY)
"""Every message type the io layer fills: ours and the standard ones."""


def test_shipped_msg_copies_equal_the_sources_byte_for_byte():
    sources = {p.name: p.read_bytes() for p in REPO_MSG_DIR.glob("*.msg")}
    shipped = {p.name: p.read_bytes() for p in msg_types.SHIPPED_MSG_DIR.glob("*.msg")}
    assert sources, f"no .msg files in {REPO_MSG_DIR}"
    assert sorted(shipped) == sorted(sources), "copy tactile_sim_msgs/msg/*.msg to tactile_sim/tactile_sim/data/msg/"
    for name, data in sources.items():
        assert shipped[name] == data, f"{name} differs: copy tactile_sim_msgs/msg/{name} to the package data"


def test_own_types_are_every_msg_file_and_registered():
    names = msg_types.own_type_names()
    assert names == tuple(sorted(f"tactile_sim_msgs/msg/{p.stem}" for p in REPO_MSG_DIR.glob("*.msg")))
    assert {TAXEL_ARRAY, THERMAL_GRID, LINK_CONTACT} <= set(names)
    for name in names:
        assert name in msg_types.typestore().fielddefs


def test_taxel_array_channel_fields_match_the_reading_channels():
    fields = dict(msg_types.typestore().fielddefs[TAXEL_ARRAY][1])
    for name, (dtype, _) in TAXEL_CHANNELS.items():
        kind, ((_, (base, _)), _) = fields[name]
        assert base == {np.bool_: "bool", np.float32: "float32"}[dtype], name


def test_type_names_short_and_full_forms_and_unknown():
    assert msg_types.message_class("tactile_sim_msgs/TaxelArray") is msg_types.message_class(TAXEL_ARRAY)
    with pytest.raises(ValueError, match=r"'tactile_sim_msgs/msg/TaxelAray' is unknown.*TaxelArray"):
        msg_types.message_class("tactile_sim_msgs/msg/TaxelAray")
    with pytest.raises(ValueError, match=r"unknown fields \['bogus'\].*allowed: \['x', 'y', 'z'\]"):
        msg_types.new_message("geometry_msgs/Vector3", bogus=1.0)


@pytest.mark.parametrize("typename", FILLED_TYPES)
def test_random_messages_round_trip_through_cdr(typename):
    rng = np.random.default_rng(abs(hash(typename)) % 2**32)
    for _ in range(5):
        msg = random_message(msg_types.typestore(), typename, rng)
        data = msg_types.serialize_cdr(msg, typename)
        assert isinstance(data, bytes) and data[:2] == b"\x00\x01"  # CDR little-endian encapsulation
        assert_messages_equal(msg_types.deserialize_cdr(data, typename), msg)


@pytest.mark.parametrize("typename", FILLED_TYPES)
def test_new_message_defaults_serialise_and_are_zero(typename):
    msg = msg_types.new_message(typename)
    back = msg_types.deserialize_cdr(msg_types.serialize_cdr(msg), typename)
    assert_messages_equal(back, msg)


def test_taxel_array_wire_layout_follows_the_msg_file():
    """Decode the CDR bytes by hand (XCDR1: 4-byte encapsulation, natural alignment from its end)."""
    msg = msg_types.new_message(
        TAXEL_ARRAY,
        header=msg_types.new_message(
            "std_msgs/Header", stamp=msg_types.new_message("builtin_interfaces/Time", sec=-2, nanosec=7), frame_id="L"
        ),
        sensor_name="pad",
        sensor_type="ContactProbe",
        rows=1,
        cols=2,
        positions=np.array([1, 2, 3, 4, 5, 6], np.float32),
        contact=np.array([True, False]),
        valid=True,
    )
    body = msg_types.serialize_cdr(msg)[4:]
    pos = 0

    def take(fmt, align):
        nonlocal pos
        pos += -pos % align
        values = struct.unpack_from("<" + fmt, body, pos)
        pos += struct.calcsize("<" + fmt)
        return values

    def string():
        (length,) = take("I", 4)
        return bytes(take(f"{length}s", 1)[0][:-1]).decode()

    assert take("iI", 4) == (-2, 7)
    assert string() == "L"
    assert (string(), string()) == ("pad", "ContactProbe")
    assert take("II", 4) == (1, 2)
    (count,) = take("I", 4)
    assert take(f"{count}f", 4) == (1, 2, 3, 4, 5, 6)
    assert take("I", 4) == (0,)  # normals: empty
    assert take("I", 4) == (0,)  # radii: empty
    (count,) = take("I", 4)
    assert take(f"{count}?", 1) == (True, False)


def test_definitions_parse_back_into_the_same_types_in_a_fresh_store():
    for typename in FILLED_TYPES:
        store = get_typestore(Stores.EMPTY)
        store.register(get_types_from_msg(msg_types.message_definition(typename), typename))
        assert store.fielddefs[typename] == msg_types.typestore().fielddefs[typename]
        assert store.hash_rihs01(typename) == msg_types.type_hash(typename)


def test_rihs01_hashes_are_well_formed_and_stable():
    for typename in FILLED_TYPES + msg_types.own_type_names():
        value = msg_types.type_hash(typename)
        assert re.fullmatch(r"RIHS01_[0-9a-f]{64}", value), value
        assert msg_types.typestore().hash_rihs01(typename) == value


def test_rihs01_hashes_of_standard_types_match_published_ros2_jazzy_values():
    """Hashes recorded by ROS 2 Jazzy in public rosbag2 metadata (type_description_hash)."""
    assert msg_types.type_hash("std_msgs/msg/String") == (
        "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
    )
    assert msg_types.type_hash("sensor_msgs/msg/PointCloud") == (
        "RIHS01_614593df71d3c2b9bd4604a71b750fd218f0d65c045ea988b713719455a65b3b"
    )


def test_own_type_hash_depends_on_the_layout_only():
    """Comments and constants do not enter RIHS01; a changed field does."""
    text = (REPO_MSG_DIR / "ThermalGrid.msg").read_text()
    bare = "\n".join(line.split("#")[0] for line in text.splitlines())
    store = get_typestore(Stores.ROS2_JAZZY)
    store.register(get_types_from_msg(bare, "other_msgs/msg/ThermalGrid"))
    ours = msg_types.type_hash(THERMAL_GRID)
    assert store.hash_rihs01("other_msgs/msg/ThermalGrid") != ours  # the type name is part of the description
    store.register(get_types_from_msg(bare, THERMAL_GRID))
    assert store.hash_rihs01(THERMAL_GRID) == ours
    changed = get_typestore(Stores.ROS2_JAZZY)
    changed.register(get_types_from_msg(bare.replace("float32[] temperatures", "float64[] temperatures"), THERMAL_GRID))
    assert changed.hash_rihs01(THERMAL_GRID) != ours


def test_sensor_type_constants_are_the_six_taxel_models():
    cls = msg_types.message_class(TAXEL_ARRAY)
    assert {cls.TYPE_CONTACT_PROBE, cls.TYPE_CONTACT_DEPTH_PROBE, cls.TYPE_KINEMATIC_TAXEL, cls.TYPE_ELASTOMER_TAXEL,
            cls.TYPE_PROXIMITY_TAXEL, cls.TYPE_SURFACE_DISTANCE_PROBE} == {
        "ContactProbe", "ContactDepthProbe", "KinematicTaxel", "ElastomerTaxel", "ProximityTaxel",
        "SurfaceDistanceProbe"}


def test_new_message_coerces_given_values_to_the_wire_representation():
    msg = msg_types.new_message(THERMAL_GRID, temperatures=[1.0, 1.0 / 3.0], nx=2, link_names=["a"])
    assert msg.temperatures.dtype == np.float32 and msg.temperatures.tolist() == [1.0, np.float32(1.0 / 3.0)]
    colour = msg_types.new_message("std_msgs/ColorRGBA", r=0.1)
    assert colour.r == float(np.float32(0.1)) and colour.r != 0.1
    back = msg_types.deserialize_cdr(msg_types.serialize_cdr(msg), THERMAL_GRID)
    assert_messages_equal(back, msg)
    assert msg_types.new_message("sensor_msgs/JointState", effort=np.array([1, 2], np.int64)).effort.dtype == np.float64


def test_type_hash_treats_char_as_rosidl_does():
    """Regression: rosbags hashes ``char`` as FIELD_TYPE_CHAR, rosidl as uint8; bags and DDS endpoints need rosidl's
    value (recorded from a ROS 2 Jazzy build: share/std_msgs/msg/Char.json, share/rmw_dds_common/msg/Gid.json)."""
    assert msg_types.type_hash("std_msgs/msg/Char") == (
        "RIHS01_3ad2d04dd29ba19d04b16659afa3ccaedd691914b02a64e82e252f2fa6a586a9")
    assert msg_types.type_hash("rmw_dds_common/msg/Gid") == (
        "RIHS01_ab6f21cfbb0a6dbb837161e1110c2051a2850ed9f9c53944d7115d9bcebedf71")
