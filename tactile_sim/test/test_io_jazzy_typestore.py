"""The Jazzy typestore from a cached copy of rosbags' field definitions, with message classes made on first use:
the same definitions, classes, CDR bytes and message definitions as rosbags' own store; the cache's key."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore

from tactile_sim.derived_cache import read_payload
from tactile_sim.io import jazzy_typestore as jt

ROSBAGS_JAZZY = get_typestore(Stores.ROS2_JAZZY)
"""Independent truth: rosbags' own Jazzy store."""


def test_the_cached_field_definitions_equal_rosbags_own_exactly(tmp_path):
    first = jt.jazzy_fielddefs(tmp_path)  # built from rosbags' store, then written
    assert jt.cache_path(tmp_path).is_file()
    second = jt.jazzy_fielddefs(tmp_path)  # read back from the cache file
    # repr tells lists from tuples and Nodetype members from plain ints (rosbags compares them when registering)
    assert repr(first) == repr(second) == repr(ROSBAGS_JAZZY.fielddefs)


def test_lazy_classes_have_rosbags_fields_and_type_names(tmp_path):
    store = jt.jazzy_typestore(tmp_path)
    assert sorted(store.fielddefs) == sorted(ROSBAGS_JAZZY.types)
    assert not store.types, "no class is made before it is asked for"
    for name, theirs in ROSBAGS_JAZZY.types.items():
        ours = store.types[name]
        assert ours is store.types[name] and name in store.types, "a class is made once"
        assert ours.__msgtype__ == theirs.__msgtype__ == name
        assert [(f.name, f.type) for f in dataclasses.fields(ours)] == \
            [(f.name, f.type) for f in dataclasses.fields(theirs)]
    with pytest.raises(KeyError):
        store.types["std_msgs/msg/NoSuchType"]


def test_cdr_bytes_and_message_definitions_equal_rosbags(tmp_path):
    store = jt.jazzy_typestore(tmp_path)
    header = {"stamp": {"sec": 7, "nanosec": 9}, "frame_id": "pad"}

    def make(s, name, **fields):
        return s.types[name](**fields)

    for s in (store, ROSBAGS_JAZZY):
        stamp = make(s, "builtin_interfaces/msg/Time", **header["stamp"])
        head = make(s, "std_msgs/msg/Header", stamp=stamp, frame_id="pad")
        vec = make(s, "geometry_msgs/msg/Vector3", x=1.0, y=-2.5, z=3.0)
        msg = make(s, "geometry_msgs/msg/WrenchStamped", header=head,
                   wrench=make(s, "geometry_msgs/msg/Wrench", force=vec, torque=vec))
        cloud = make(s, "sensor_msgs/msg/PointCloud2", header=head, height=1, width=2, fields=[], is_bigendian=False,
                     point_step=4, row_step=8, data=np.arange(8, dtype=np.uint8), is_dense=True)
        s.result = [bytes(s.serialize_cdr(m, m.__msgtype__)) for m in (msg, cloud)]
    assert store.result == ROSBAGS_JAZZY.result
    back = store.deserialize_cdr(store.result[0], "geometry_msgs/msg/WrenchStamped")
    assert type(back) is store.types["geometry_msgs/msg/WrenchStamped"] and back.wrench.force.y == -2.5
    for name in ("sensor_msgs/msg/PointCloud2", "tf2_msgs/msg/TFMessage", "visualization_msgs/msg/MarkerArray"):
        assert store.generate_msgdef(name, ros_version=2) == ROSBAGS_JAZZY.generate_msgdef(name, ros_version=2)


def test_the_cache_key_follows_the_rosbags_sources(tmp_path, monkeypatch):
    copies = tmp_path / "stores"
    copies.mkdir()
    for path in jt.source_files():
        shutil.copy(path, copies / path.name)
    monkeypatch.setattr(jt, "source_files", lambda: sorted(copies.glob("*.py")))
    before = jt.cache_path(tmp_path / "cache")
    assert jt.cache_path(tmp_path / "cache") == before
    jazzy = copies / "ros2_jazzy.py"
    jazzy.write_text(jazzy.read_text() + "\n# another rosbags release\n")
    assert jt.cache_path(tmp_path / "cache") != before


@pytest.mark.parametrize("damage", ["empty", "garbage", "flipped", "cut"])
def test_a_damaged_cache_file_is_rebuilt(tmp_path, damage):
    path = jt.cache_path(tmp_path)
    jt.jazzy_fielddefs(tmp_path)
    good = bytearray(path.read_bytes())
    if damage == "flipped":  # still decodable marshal data, but not what was written
        index = good.index(b"sensor_msgs/msg/PointCloud2") + 12
        good[index] ^= 1
    content = {"empty": b"", "garbage": b"\xe9" * 40, "cut": bytes(good[:len(good) // 2])}.get(damage, bytes(good))
    path.write_bytes(content)
    assert repr(jt.jazzy_fielddefs(tmp_path)) == repr(ROSBAGS_JAZZY.fielddefs)
    assert repr(jt.decode_fielddefs(read_payload(path))) == repr(ROSBAGS_JAZZY.fielddefs), "the file is rewritten"


def test_an_unwritable_cache_folder_only_costs_the_rebuild(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would be")
    assert repr(jt.jazzy_fielddefs(blocker / "cache")) == repr(ROSBAGS_JAZZY.fielddefs)
    assert not Path(blocker / "cache").exists()
