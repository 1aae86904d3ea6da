"""The shared typestore made from cached definitions with classes made on first use, against the store built by
rosbags (its classes): definitions, classes, bytes, message definitions and hashes; and the cache file's life."""

from __future__ import annotations

import dataclasses
import pickle
import threading

import numpy as np
import pytest
from helpers_io import random_message
from rosbags.typesys import Stores, get_typestore

from tactile_sim import derived_cache
from tactile_sim.io import msg_types, typestore_cache
from tactile_sim.io.encode import TAXEL_ARRAY


def outcome(call, store):
    """The bytes ``call(store)`` returns, or the type of what it raises."""
    try:
        return bytes(call(store))
    except Exception as exc:  # noqa: BLE001 - the two stores must fail alike
        return type(exc)


@pytest.fixture(scope="module")
def built():
    """The store as rosbags builds it (every Jazzy class imported, ours registered)."""
    return msg_types.full_typestore()


def test_the_shared_store_holds_the_built_definitions_in_their_order(built):
    store = msg_types.typestore()
    jazzy = len(get_typestore(Stores.ROS2_JAZZY).fielddefs)  # in module order; rosbags registers ours in set order
    assert list(store.fielddefs)[:jazzy] == list(built.fielddefs)[:jazzy]
    assert set(list(store.fielddefs)[jazzy:]) == set(list(built.fielddefs)[jazzy:])
    assert store.fielddefs == built.fielddefs
    for name, (consts, fields) in built.fielddefs.items():  # lists and tuples as built (bags compare them)
        assert type(store.fielddefs[name]) is type(built.fielddefs[name])
        assert [type(x) for x in store.fielddefs[name]] == [type(consts), type(fields)]
        assert [tuple(map(type, f)) for f in store.fielddefs[name][1]] == [tuple(map(type, f)) for f in fields]


def test_every_class_made_on_first_use_is_the_built_ones_in_fields_constants_and_bytes(built):
    store = typestore_cache.lazy_typestore(dict(built.fielddefs))
    builtin = ["builtin_interfaces/msg/Duration", "builtin_interfaces/msg/Time"]
    assert sorted(dict(store.types)) == builtin  # rosbags' shared classes; nothing made before a lookup
    assert all(store.types[name] is built.types[name] for name in builtin)
    rng = np.random.default_rng(7)
    for name in built.fielddefs:
        made, theirs = store.types[name], built.types[name]
        assert store.types[name] is made
        assert [(f.name, f.type) for f in dataclasses.fields(made)] == \
            [(f.name, f.type) for f in dataclasses.fields(theirs)]
        assert made.__msgtype__ == theirs.__msgtype__ == name
        for const, _, value in built.fielddefs[name][0]:
            assert getattr(made, const) == getattr(theirs, const) == value
        msg = random_message(built, name, rng)
        data = bytes(built.serialize_cdr(msg, name))
        assert bytes(store.serialize_cdr(msg, name)) == data
        back = store.deserialize_cdr(data, name)
        assert type(back) is made and bytes(store.serialize_cdr(back, name)) == data
        assert store.generate_msgdef(name, ros_version=2) == built.generate_msgdef(name, ros_version=2)
        big = bytes(built.serialize_cdr(msg, name, little_endian=False))  # every other generated function
        assert bytes(store.serialize_cdr(msg, name, little_endian=False)) == big
        assert bytes(store.serialize_cdr(store.deserialize_cdr(big, name), name)) == data
        ros1 = bytes(built.serialize_ros1(msg, name))
        assert bytes(store.serialize_ros1(msg, name)) == ros1
        for convert in (lambda s: s.cdr_to_ros1(data, name), lambda s: s.ros1_to_cdr(ros1, name),
                        lambda s: s.serialize_cdr(s.deserialize_ros1(ros1, name), name)):
            assert outcome(convert, store) == outcome(convert, built)
        assert store.get_msgdef(name).size_cdr == built.get_msgdef(name).size_cdr
        assert store.get_msgdef(name).size_ros1 == built.get_msgdef(name).size_ros1
    assert store.hash_rihs01(TAXEL_ARRAY) == built.hash_rihs01(TAXEL_ARRAY)


def test_a_cdr_writer_generates_only_the_functions_it_calls(built):
    store = typestore_cache.lazy_typestore(dict(built.fielddefs))
    msg = random_message(built, TAXEL_ARRAY, np.random.default_rng(3))
    assert bytes(store.serialize_cdr(msg, TAXEL_ARRAY)) == bytes(built.serialize_cdr(msg, TAXEL_ARRAY))
    made = vars(store.get_msgdef(TAXEL_ARRAY))
    assert {"getsize_cdr", "size_cdr", "serialize_cdr_le"} <= made.keys()
    assert not made.keys() & {"serialize_cdr_be", "deserialize_cdr_le", "serialize_ros1", "cdr_to_ros1"}
    with pytest.raises(AttributeError):
        store.get_msgdef(TAXEL_ARRAY).no_such_function
    with pytest.raises(KeyError):
        store.get_msgdef("no_msgs/msg/Such")


def test_messages_of_the_shared_store_pickle_as_their_own_class():
    for name in ("sensor_msgs/msg/JointState", TAXEL_ARRAY, "tf2_msgs/msg/TFMessage", "builtin_interfaces/msg/Time"):
        msg = msg_types.new_message(name)
        back = pickle.loads(pickle.dumps(msg))
        assert type(back) is type(msg) and msg_types.serialize_cdr(back) == msg_types.serialize_cdr(msg)
    assert getattr(msg_types, "sensor_msgs__msg__JointState") is msg_types.message_class("sensor_msgs/msg/JointState")
    for missing in ("no_msgs__msg__Such", "__path__", "not_a_type"):
        assert not hasattr(msg_types, missing)


def test_a_type_without_definition_is_a_key_error_and_threads_get_one_class(built):
    store = typestore_cache.lazy_typestore(dict(built.fielddefs))
    with pytest.raises(KeyError):
        store.types["no_msgs/msg/Such"]
    got = []
    threads = [threading.Thread(target=lambda: got.append(store.types["sensor_msgs/msg/JointState"]))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(c) for c in got}) == 1 and got[0] is store.types["sensor_msgs/msg/JointState"]


def test_the_cache_file_is_written_once_read_after_and_rebuilt_when_unsound(monkeypatch, tmp_path, built):
    monkeypatch.setenv(derived_cache.ENV_VAR, str(tmp_path))
    calls = []

    def build():
        calls.append(1)
        return dict(built.fielddefs)

    sources = [b"one source", "another"]
    first = typestore_cache.cached_definitions(build, sources)
    files = list((tmp_path / "typestore").iterdir())
    assert len(calls) == 1 and len(files) == 1 and first == built.fielddefs
    again = typestore_cache.cached_definitions(build, sources)
    assert len(calls) == 1 and again == built.fielddefs and list(again) == list(first)
    typestore_cache.cached_definitions(build, [*sources, b"changed"])  # another source: another file
    assert len(calls) == 2 and len(list((tmp_path / "typestore").iterdir())) == 2
    derived_cache.write_payload(files[0], pickle.dumps({"x": dataclasses.field}))  # a class not of a definition
    assert typestore_cache.cached_definitions(build, sources) == built.fielddefs and len(calls) == 3
    derived_cache.write_payload(files[0], pickle.dumps([1, 2]))  # not definitions
    assert typestore_cache.cached_definitions(build, sources) == built.fielddefs and len(calls) == 4
    assert typestore_cache.cached_definitions(build, sources) == built.fielddefs and len(calls) == 4


def test_the_sources_cover_the_msg_files_and_the_rosbags_stores():
    sources = msg_types.definition_sources()
    for path in [*msg_types.msg_dir().glob("*.msg"), *msg_types.VENDOR_MSG_DIR.glob("*/msg/*.msg")]:
        assert path.read_bytes() in sources and f"{path.parents[1].name}/{path.name}" in sources
    import rosbags.typesys.stores.ros2_jazzy as jazzy

    assert open(jazzy.__file__, "rb").read() in sources
