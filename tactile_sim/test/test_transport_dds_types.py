"""DDS types built at run time from the message definitions: for every type rosbags knows (ROS 2 Jazzy + ours),
cyclonedds' own XCDR1 encoding of a random message equals rosbags' CDR byte for byte (two independent codecs), the
type names follow ROS 2's ``pkg::msg::dds_::Name_``, the CDR-sample types have the same XTypes identity, and the
RIHS01 hashes equal the ones a ROS 2 build generates."""

import glob
import json
import os
import string
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rosbags.typesys.base import Nodetype

from helpers_transport import to_idl
from tactile_sim.io.msg_types import new_message, serialize_cdr, typestore
from tactile_sim.io.msg_types import type_hash
from tactile_sim.transport.dds_types import cdr_struct, dds_type_name, idl_struct

ALL_TYPES = sorted(typestore().fielddefs)
NODE_TYPES = ["tactile_sim_msgs/msg/TaxelArray", "tactile_sim_msgs/msg/ThermalGrid", "tactile_sim_msgs/msg/LinkContact",
              "sensor_msgs/msg/JointState", "tf2_msgs/msg/TFMessage", "std_msgs/msg/String",
              "geometry_msgs/msg/WrenchStamped", "visualization_msgs/msg/MarkerArray",
              "diagnostic_msgs/msg/DiagnosticArray", "rmw_dds_common/msg/ParticipantEntitiesInfo",
              "rosgraph_msgs/msg/Clock", "sensor_msgs/msg/PointCloud2", "tactile_msgs/msg/TactileState"]
INT_DTYPES = {"byte": np.uint8, "char": np.uint8, "int8": np.int8, "uint8": np.uint8, "int16": np.int16,
              "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64}

ROS_HASHES = {  # from the .json type descriptions a ROS 2 Jazzy build (rosidl) generates
    "std_msgs/msg/String": "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18",
    "std_msgs/msg/Char": "RIHS01_3ad2d04dd29ba19d04b16659afa3ccaedd691914b02a64e82e252f2fa6a586a9",
    "std_msgs/msg/Header": "RIHS01_f49fb3ae2cf070f793645ff749683ac6b06203e41c891e17701b1cb597ce6a01",
    "rmw_dds_common/msg/Gid": "RIHS01_ab6f21cfbb0a6dbb837161e1110c2051a2850ed9f9c53944d7115d9bcebedf71",
    "rmw_dds_common/msg/ParticipantEntitiesInfo":
        "RIHS01_91a0593bacdcc50ea9bdcf849a938b128412cc1ea821245c663bcd26f83c295e",
}


def random_value(desc, rng: np.random.Generator):
    """A random value of one rosbags field description (sequences of 0–4 elements within their bound)."""
    kind, arg = desc
    if kind == Nodetype.BASE:
        base, bound = arg
        if base == "string":
            n = int(rng.integers(0, (bound or 8) + 1))
            return "".join(rng.choice(list(string.ascii_letters + " _/"), n))
        if base == "bool":
            return bool(rng.integers(2))
        if base == "byte":
            return int(rng.integers(0, 128))  # rosbags packs a scalar byte signed, ROS as octet: agree on 0–127
        if base in INT_DTYPES:
            info = np.iinfo(INT_DTYPES[base])
            return int(rng.integers(info.min, info.max, endpoint=True, dtype=INT_DTYPES[base]))
        return float(np.float32(rng.normal() * 100)) if base == "float32" else float(rng.normal() * 1e3)
    if kind == Nodetype.NAME:
        return random_message(arg, rng)
    sub, length = arg
    n = length if kind == Nodetype.ARRAY else int(rng.integers(0, min(length or 4, 4) + 1))
    values = [random_value(sub, rng) for _ in range(n)]
    if sub[0] == Nodetype.BASE and sub[1][0] != "string":
        dtype = INT_DTYPES.get(sub[1][0], np.bool_ if sub[1][0] == "bool" else
                               np.float32 if sub[1][0] == "float32" else np.float64)
        return np.array(values, dtype=dtype)
    return values


def random_message(typename: str, rng: np.random.Generator):
    """A rosbags message of ``typename`` with random field values."""
    return new_message(typename, **{f: random_value(d, rng) for f, d in typestore().fielddefs[typename][1]})


def native_cdr(msg) -> bytes:
    """cyclonedds' XCDR1 encoding (little endian, with the encapsulation header) of a rosbags message."""
    return to_idl(msg).serialize(use_version_2=False)


@pytest.mark.parametrize("typename", ALL_TYPES)
def test_every_known_type_encodes_like_rosbags(typename):
    rng = np.random.default_rng(zlib.crc32(typename.encode()))
    for _ in range(2):
        msg = random_message(typename, rng)
        assert native_cdr(msg) == serialize_cdr(msg), typename


@given(seed=st.integers(0, 2**32 - 1), typename=st.sampled_from(NODE_TYPES))
def test_the_node_types_encode_like_rosbags_for_random_content(seed, typename):
    msg = random_message(typename, np.random.default_rng(seed))
    data = serialize_cdr(msg)
    assert native_cdr(msg) == data
    assert data[:4] == b"\x00\x01\x00\x00"  # plain CDR, little endian: final structs, no XCDR2 headers
    assert idl_struct(typename).deserialize(data).serialize(use_version_2=False) == data  # decodes what it encodes


def test_dds_type_names_follow_ros2():
    assert dds_type_name("sensor_msgs/msg/JointState") == "sensor_msgs::msg::dds_::JointState_"
    assert dds_type_name("tactile_sim_msgs/TaxelArray") == "tactile_sim_msgs::msg::dds_::TaxelArray_"
    assert idl_struct("tf2_msgs/msg/TFMessage").__idl__.idl_transformed_typename == "tf2_msgs::msg::dds_::TFMessage_"
    assert idl_struct("tf2_msgs/TFMessage") is idl_struct("tf2_msgs/msg/TFMessage")


@pytest.mark.parametrize("typename", NODE_TYPES)
def test_cdr_sample_types_are_the_same_dds_type(typename):
    native, raw = idl_struct(typename).__idl__, cdr_struct(typename).__idl__
    assert raw.idl_transformed_typename == native.idl_transformed_typename
    assert raw.get_type_id() == native.get_type_id()
    data = serialize_cdr(random_message(typename, np.random.default_rng(1)))
    assert cdr_struct(typename)(data).serialize() == data
    assert cdr_struct(typename).deserialize(data) == data


def test_unknown_types_name_close_matches():
    with pytest.raises(ValueError, match="JointState"):
        idl_struct("sensor_msgs/msg/JointStat")


@pytest.mark.parametrize("typename,expected", sorted(ROS_HASHES.items()))
def test_type_hashes_equal_the_ones_rosidl_generates(typename, expected):
    assert type_hash(typename) == expected


ROS_PREFIXES = list(dict.fromkeys([p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p] +
                                   ["/opt/ros2_jazzy_ws/install", "/opt/ros/jazzy"]))
"""Install prefixes of ROS 2 that may hold rosidl's type descriptions: the sourced environment's, then the usual
places."""
ROS_DESCRIPTIONS = [path for prefix in ROS_PREFIXES for path in sorted(glob.glob(f"{prefix}/share/*/msg/*.json"))]


@pytest.mark.skipif(not ROS_DESCRIPTIONS, reason="no ROS 2 Jazzy installation with type descriptions (a sourced "
                                                 "one, /opt/ros2_jazzy_ws/install or /opt/ros/jazzy) on this machine")
def test_type_hashes_equal_every_hash_of_an_installed_ros2():
    known = set(typestore().fielddefs)
    checked = 0
    for path in ROS_DESCRIPTIONS:
        for entry in json.loads(open(path).read())["type_hashes"]:
            if entry["type_name"] in known:
                assert type_hash(entry["type_name"]) == entry["hash_string"], (path, entry["type_name"])
                checked += 1
    assert checked > 0
