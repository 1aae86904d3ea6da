"""rosbag2 write/read in MCAP and sqlite3 with our types; reading uses the definitions stored in the bag."""

from __future__ import annotations

import textwrap
import tracemalloc

import numpy as np
import yaml
import pytest
from helpers_io import (
    assert_messages_equal,
    assert_readings_equal,
    sample_link_contact_reading,
    sample_taxel_reading,
    sample_thermal_reading,
)
from rosbags.interfaces import QosDurability
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from tactile_sim.io import bag, encode, markers
from tactile_sim.io.bag import BagReader, BagWriter, qos_profile
from tactile_sim.io.msg_types import type_hash, typestore
from tactile_sim.io.readings import JointTorqueReading
from tactile_sim.io.stamps import seconds_to_ns

STORAGES = ("mcap", "sqlite3")


def sample_stream():
    """(topic, typename, stamp_ns, message) of a short mixed recording, in time order."""
    stream = []
    for step in range(3):
        t = 0.01 * step
        taxels = sample_taxel_reading("KinematicTaxel", seed=step, stamp=t)
        stream.append(("/skin/pad", encode.TAXEL_ARRAY, encode.encode_taxel_array(taxels)))
        thermal = sample_thermal_reading(stamp=t)
        stream.append(("/skin/palm_thermal", encode.THERMAL_GRID, encode.encode_thermal_grid(thermal)))
        contact = sample_link_contact_reading(2, stamp=t)
        stream.append(("/contact/left_foot", encode.LINK_CONTACT, encode.encode_link_contact(contact)))
        wrench = encode.encode_wrench_stamped(contact.wrench())
        stream.append(("/contact/left_foot/wrench", encode.WRENCH_STAMPED, wrench))
        torque = JointTorqueReading(t, ["j1", "j2"], [0.5 * step, -1.0])
        stream.append(("/joint_torques", encode.JOINT_STATE, encode.encode_joint_torque(torque)))
        stream.append(("/skin/markers", markers.MARKER_ARRAY,
                       markers.marker_array(markers.taxel_markers(taxels, max_value=5.0, sphere_diameter=0.01))))
    return [(topic, typename, seconds_to_ns(1000.0 + i * 1e-3), msg) for i, (topic, typename, msg) in enumerate(stream)]


def write_stream(path, storage, stream):
    with BagWriter(path, storage) as writer:
        for topic, typename in dict.fromkeys((topic, typename) for topic, typename, _, _ in stream):
            writer.add_topic(topic, typename, qos=qos_profile(transient_local=topic == "/joint_torques"))
        for topic, _, stamp_ns, msg in stream:
            writer.write(topic, stamp_ns, msg)


@pytest.mark.parametrize("storage", STORAGES)
def test_bag_round_trip_with_a_fresh_reader_and_typestore(tmp_path, storage):
    stream = sample_stream()
    write_stream(tmp_path / "bag", storage, stream)
    with BagReader(tmp_path / "bag") as reader:
        assert reader.typestore is not typestore()
        assert reader.message_count == len(stream)
        assert reader.topics == {topic: typename for topic, typename, _, _ in stream}
        read = list(reader)
    assert [(topic, stamp) for topic, stamp, _ in read] == [(topic, stamp) for topic, _, stamp, _ in stream]
    for (_, _, msg), (_, typename, _, original) in zip(read, stream, strict=True):
        assert msg.__msgtype__ == typename
        assert_messages_equal(msg, original)
    taxels = [msg for topic, _, msg in read if topic == "/skin/pad"]
    assert_readings_equal(encode.decode_taxel_array(taxels[2]), sample_taxel_reading("KinematicTaxel", seed=2,
                                                                                    stamp=0.02))


@pytest.mark.parametrize("storage", STORAGES)
def test_bag_stores_definitions_hashes_and_qos(tmp_path, storage):
    write_stream(tmp_path / "bag", storage, sample_stream())
    with Reader(tmp_path / "bag") as reader:  # rosbags directly: what other tools see
        connections = {c.topic: c for c in reader.connections}
        taxel = connections["/skin/pad"]
        assert taxel.msgtype == encode.TAXEL_ARRAY and taxel.digest == type_hash(encode.TAXEL_ARRAY)
        assert taxel.msgdef.data.startswith("string TYPE_CONTACT_PROBE=ContactProbe\n")
        assert "MSG: std_msgs/Header" in taxel.msgdef.data
        (qos,) = connections["/joint_torques"].ext.offered_qos_profiles
        assert qos.durability == QosDurability.TRANSIENT_LOCAL
        for connection in reader.connections:  # every stored definition rebuilds the type with the same hash
            store = get_typestore(Stores.EMPTY)
            store.register(get_types_from_msg(connection.msgdef.data, connection.msgtype))
            assert store.hash_rihs01(connection.msgtype) == connection.digest


def test_reader_builds_types_from_the_bag_not_from_the_library(tmp_path):
    """A type unknown to tactile_sim (written by rosbags with its definition) is still read."""
    definition = "float32[] samples\nstring label\ngeometry_msgs/Point where\n"
    store = get_typestore(Stores.ROS2_JAZZY)
    store.register(get_types_from_msg(definition, "probe_msgs/msg/Sample"))
    cls, point = store.types["probe_msgs/msg/Sample"], store.types["geometry_msgs/msg/Point"]
    msg = cls(samples=np.array([1.5, -2.0], np.float32), label="x", where=point(1.0, 2.0, 3.0))
    with Writer(tmp_path / "bag", version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connection = writer.add_connection("/probe", "probe_msgs/msg/Sample", typestore=store)
        writer.write(connection, 5, store.serialize_cdr(msg, "probe_msgs/msg/Sample"))
    with BagReader(tmp_path / "bag") as reader:
        ((topic, stamp, back),) = list(reader)
    assert (topic, stamp, back.label, back.where.z) == ("/probe", 5, "x", 3.0)
    assert back.samples.tolist() == [1.5, -2.0]


@pytest.mark.parametrize("storage", STORAGES)
def test_topic_and_time_filtering(tmp_path, storage):
    stream = sample_stream()
    write_stream(tmp_path / "bag", storage, stream)
    with BagReader(tmp_path / "bag") as reader:
        only = list(reader.messages(topics=["/skin/pad", "/joint_torques"]))
        assert [t for t, _, _ in only] == [t for t, _, _, _ in stream if t in ("/skin/pad", "/joint_torques")]
        stamps = [s for _, _, s, _ in stream]
        window = list(reader.messages(start_ns=stamps[3], stop_ns=stamps[7]))
        assert [s for _, s, _ in window] == stamps[3:7]
        assert list(reader.messages(topics=[])) == []
        with pytest.raises(ValueError, match=r"topics \['/nope'\] are not in the bag; allowed: \['/contact"):
            list(reader.messages(topics=["/nope"]))


def test_single_mcap_file_can_be_read_directly(tmp_path):
    write_stream(tmp_path / "bag", "mcap", sample_stream())
    (mcap,) = (tmp_path / "bag").glob("*.mcap")
    with BagReader(mcap) as reader:
        assert reader.message_count == len(sample_stream())


def test_reading_streams_with_bounded_memory(tmp_path):
    n = 2000  # ~100 kB per message, 100 messages: ~10 MB of bag
    reading = sample_taxel_reading("KinematicTaxel", rows=40, cols=50)
    msg = encode.encode_taxel_array(reading)
    assert n == reading.n_taxels
    with BagWriter(tmp_path / "bag") as writer:
        writer.add_topic("/pad", encode.TAXEL_ARRAY)
        for i in range(100):
            writer.write("/pad", i, msg)
    size = sum(p.stat().st_size for p in (tmp_path / "bag").iterdir())
    with BagReader(tmp_path / "bag") as reader:
        tracemalloc.start()
        try:
            count = sum(1 for _ in reader)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert count == 100
    assert peak < size / 3, (peak, size)


def test_writer_errors(tmp_path):
    with pytest.raises(ValueError, match=r"storage: got 'rosbag1'; allowed: \['mcap', 'sqlite3'\]"):
        BagWriter(tmp_path / "a", "rosbag1")
    with BagWriter(tmp_path / "b") as writer:
        writer.add_topic("/pad", "tactile_sim_msgs/TaxelArray")
        with pytest.raises(ValueError, match="topic '/pad' was already added"):
            writer.add_topic("/pad", encode.TAXEL_ARRAY)
        with pytest.raises(ValueError, match=r"unknown topic '/other'; added topics: \['/pad'\]"):
            writer.write("/other", 0, encode.encode_taxel_array(sample_taxel_reading()))
        wrench = encode.encode_wrench_stamped(sample_link_contact_reading().wrench())
        with pytest.raises(ValueError, match="has type tactile_sim_msgs/msg/TaxelArray; got a geometry_msgs"):
            writer.write("/pad", 0, wrench)
        with pytest.raises(ValueError, match="is unknown"):
            writer.add_topic("/x", "tactile_sim_msgs/Nothing")


def test_mcap_bags_hold_what_rosbags_writes_for_the_same_stream(tmp_path, monkeypatch):
    """The direct MCAP writer against rosbags' own writer (the independent truth): the same metadata.yaml (but for
    the distro name), connections and raw messages in order, also across several chunks."""
    import yaml

    from tactile_sim.io import mcap_file
    from tactile_sim.io.msg_types import message_definition, serialize_cdr

    monkeypatch.setattr(mcap_file, "CHUNK_BYTES", 4096)  # several chunks
    stream = sample_stream() * 4
    stream = [(topic, typename, 1000 + 7 * i, msg) for i, (topic, typename, _, msg) in enumerate(stream)]
    write_stream(tmp_path / "ours", "mcap", stream)
    with Writer(tmp_path / "theirs", version=9, storage_plugin=StoragePlugin.MCAP) as writer:
        connections = {}
        for topic, typename in dict.fromkeys((topic, typename) for topic, typename, _, _ in stream):
            connections[topic] = writer.add_connection(
                topic, typename, msgdef=message_definition(typename), rihs01=type_hash(typename),
                offered_qos_profiles=[qos_profile(transient_local=topic == "/joint_torques")])
        for topic, _, stamp_ns, msg in stream:
            writer.write(connections[topic], stamp_ns, serialize_cdr(msg))
    ours, theirs = (yaml.safe_load((tmp_path / name / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
                    for name in ("ours", "theirs"))
    assert ours.pop("ros_distro") == "jazzy" and theirs.pop("ros_distro") == "rosbags"
    assert ours == {**theirs, "relative_file_paths": ["ours.mcap"],
                    "files": [{**theirs["files"][0], "path": "ours.mcap"}]}
    contents = []
    for name in ("ours", "theirs"):
        with Reader(tmp_path / name) as reader:
            described = [(c.topic, c.msgtype, c.msgdef, c.digest, c.ext) for c in reader.connections]
            contents.append((described, [(c.topic, t, bytes(d)) for c, t, d in reader.messages()]))
    assert contents[0] == contents[1]
    assert len(contents[0][1]) == len(stream)


def test_batches_write_what_single_messages_write(tmp_path, monkeypatch):
    """write_all of the messages sharing a receive time gives the bag that message-by-message writes give (read
    back by rosbags, across several chunks); a batch with an unknown topic or a wrong type writes nothing."""
    from tactile_sim.io import mcap_file

    monkeypatch.setattr(mcap_file, "CHUNK_BYTES", 4096)
    stream = sample_stream() * 3
    stream = [(topic, typename, 1000 + 7 * (i // 4), msg) for i, (topic, typename, _, msg) in enumerate(stream)]
    write_stream(tmp_path / "single", "mcap", stream)
    with BagWriter(tmp_path / "batched") as writer:
        for topic, typename in dict.fromkeys((topic, typename) for topic, typename, _, _ in stream):
            writer.add_topic(topic, typename, qos=qos_profile(transient_local=topic == "/joint_torques"))
        for start in range(0, len(stream), 4):
            writer.write_all(stream[start][2], [(topic, msg) for topic, _, _, msg in stream[start:start + 4]])
        counts = writer.counts
        pad = stream[0][3]
        with pytest.raises(ValueError, match="unknown topic '/other'"):
            writer.write_all(5000, [("/skin/pad", pad), ("/other", pad)])
        with pytest.raises(ValueError, match="has type tactile_sim_msgs/msg/ThermalGrid; got a tactile_sim_msgs"):
            writer.write_all(5000, [("/skin/pad", pad), ("/skin/palm_thermal", pad)])
        assert writer.counts == counts == {t: sum(s[0] == t for s in stream) for t in counts}
    contents = []
    for name in ("single", "batched"):
        with Reader(tmp_path / name) as reader:
            info = (reader.message_count, reader.start_time, reader.end_time,
                    {c.topic: c.msgcount for c in reader.connections})
            contents.append((info, [(c.topic, t, bytes(d)) for c, t, d in reader.messages()]))
    assert contents[0] == contents[1] and len(contents[0][1]) == len(stream)


def test_records_laid_out_by_the_caller_write_the_bag_that_write_all_writes(tmp_path, monkeypatch):
    """MCAP message records joined by the caller (mcap_file.message_head and the CDR bytes, written with
    BagWriter.write_records) give byte for byte the bag write_all gives for the same updates, across several
    chunks; only an added topic of its own type has a channel."""
    from tactile_sim.io import mcap_file
    from tactile_sim.io.msg_types import serialize_cdr

    monkeypatch.setattr(mcap_file, "CHUNK_BYTES", 4096)
    stream = [(topic, typename, 1000 + 7 * (i // 4), msg)
              for i, (topic, typename, _, msg) in enumerate(sample_stream())]
    for way in ("all", "records"):
        with BagWriter(tmp_path / way / "bag") as writer:
            for topic, typename in dict.fromkeys((topic, typename) for topic, typename, _, _ in stream):
                writer.add_topic(topic, typename, qos=qos_profile(transient_local=topic == "/joint_torques"))
            for start in range(0, len(stream), 4):
                group, log_ns = stream[start:start + 4], stream[start][2]
                if way == "all":
                    writer.write_all(log_ns, [(topic, msg) for topic, _, _, msg in group])
                    continue
                channels = [writer.channel(topic, typename) for topic, typename, _, _ in group]
                records = [mcap_file.message_head(c, len(data), log_ns) + data
                           for c, data in zip(channels, (serialize_cdr(msg, t) for _, t, _, msg in group))]
                writer.write_records(log_ns, b"".join(records), channels,
                                     np.cumsum([0] + [len(r) for r in records[:-1]]).tolist())
            with pytest.raises(ValueError, match="not an added topic of that type"):
                writer.channel("/skin/pad", encode.THERMAL_GRID)
            with pytest.raises(ValueError, match="not an added topic of that type"):
                writer.channel("/other", encode.TAXEL_ARRAY)
    assert (tmp_path / "all" / "bag" / "bag.mcap").stat().st_size > 3 * 4096  # several chunks
    for part in ("bag.mcap", "metadata.yaml"):
        assert (tmp_path / "records" / "bag" / part).read_bytes() == (tmp_path / "all" / "bag" / part).read_bytes()


def test_records_of_repeated_layouts_index_their_messages_as_write_all_does(tmp_path, monkeypatch):
    """A batch writes the same layout of records (channels and offsets; a channel twice in it) on every update: the
    message indexes, made per layout when a chunk closes, are byte for byte write_all's, with another layout and
    write_all updates between them in the same chunks, and rosbags' reader reads every message back in order."""
    from tactile_sim.io import mcap_file
    from tactile_sim.io.msg_types import message_class, serialize_cdr

    monkeypatch.setattr(mcap_file, "CHUNK_BYTES", 2048)
    string = message_class("std_msgs/msg/String")
    layouts = (("/a", "/b", "/a"), ("/b",), ("/b", "/a"))  # records, records, write_all
    updates = [(5000 + 3 * k, [(topic, string(data=f"{topic}{k:06d}" + "x" * (40 * j)))
                               for j, topic in enumerate(layouts[k % 3])]) for k in range(90)]
    for way in ("all", "records"):
        with BagWriter(tmp_path / way / "bag") as writer:
            for topic in ("/a", "/b"):
                writer.add_topic(topic, "std_msgs/msg/String", qos=qos_profile())
            for k, (log_ns, messages) in enumerate(updates):
                if way == "all" or k % 3 == 2:
                    writer.write_all(log_ns, messages)
                    continue
                channels = [writer.channel(topic, "std_msgs/msg/String") for topic, _ in messages]
                records = [mcap_file.message_head(c, len(data), log_ns) + data
                           for c, data in zip(channels, (serialize_cdr(m, "std_msgs/msg/String") for _, m in messages))]
                writer.write_records(log_ns, b"".join(records), channels,
                                     np.cumsum([0] + [len(r) for r in records[:-1]]).tolist())
    assert (tmp_path / "all" / "bag" / "bag.mcap").stat().st_size > 4 * 2048  # several chunks
    for part in ("bag.mcap", "metadata.yaml"):
        assert (tmp_path / "records" / "bag" / part).read_bytes() == (tmp_path / "all" / "bag" / part).read_bytes()
    with Reader(tmp_path / "records" / "bag") as reader:
        read = [(c.topic, t, bytes(d)) for c, t, d in reader.messages()]
    assert read == [(topic, log_ns, serialize_cdr(m, "std_msgs/msg/String")) for log_ns, messages in updates
                    for topic, m in messages]


def test_records_from_array_rows_and_messages_larger_than_the_chunk_buffer_write_what_rosbags_reads(tmp_path,
                                                                                                     monkeypatch):
    """The open chunk is one reused buffer: records handed as rows of a uint8 array (not bytes; the array is
    overwritten right after, as a batch's template rows are), mixed with write_all in one chunk, and a message larger
    than the buffer (it grows) give byte for byte the bag write_all alone gives, and rosbags' reader (the
    independent truth) reads back every message at its time."""
    from tactile_sim.io import mcap_file
    from tactile_sim.io.msg_types import message_class, serialize_cdr

    monkeypatch.setattr(mcap_file, "CHUNK_BYTES", 1 << 16)  # several updates a chunk
    big = message_class("std_msgs/msg/String")(data="x" * (3 << 16))  # more than the buffer (chunk + 64 KiB)
    stream = sample_stream()
    stream.insert(7, ("/big", "std_msgs/msg/String", 0, big))
    stream = [(topic, typename, 1000 + 7 * (i // 3), msg) for i, (topic, typename, _, msg) in enumerate(stream)]
    groups = [stream[start:start + 3] for start in range(0, len(stream), 3)]
    for way in ("all", "rows"):
        with BagWriter(tmp_path / way / "bag") as writer:
            for topic, typename in dict.fromkeys((topic, typename) for topic, typename, _, _ in stream):
                writer.add_topic(topic, typename, qos=qos_profile(transient_local=topic == "/joint_torques"))
            for k, group in enumerate(groups):
                log_ns = group[0][2]
                if way == "all" or k % 3 == 1 or any(topic == "/big" for topic, _, _, _ in group):
                    writer.write_all(log_ns, [(topic, msg) for topic, _, _, msg in group])
                    continue
                channels = [writer.channel(topic, typename) for topic, typename, _, _ in group]
                records = [mcap_file.message_head(c, len(data), log_ns) + data
                           for c, data in zip(channels, (serialize_cdr(msg, t) for _, t, _, msg in group))]
                row = np.frombuffer(b"".join(records), np.uint8).copy()
                writer.write_records(log_ns, row, channels, np.cumsum([0] + [len(r) for r in records[:-1]]).tolist())
                row[:] = 0xFF  # what the chunk holds was copied
    assert (tmp_path / "all" / "bag" / "bag.mcap").stat().st_size > 3 << 16  # the big one and more
    for part in ("bag.mcap", "metadata.yaml"):
        assert (tmp_path / "rows" / "bag" / part).read_bytes() == (tmp_path / "all" / "bag" / part).read_bytes()
    with Reader(tmp_path / "rows" / "bag") as reader:
        read = [(c.topic, t, bytes(d)) for c, t, d in reader.messages()]
    assert read == [(topic, stamp, serialize_cdr(msg, typename)) for topic, typename, stamp, msg in stream]


def test_output_bag_refuses_records_where_they_cannot_stand_for_messages(tmp_path):
    """OutputBag.write_records: a bag that reports every message to on_write refuses bytes-only records, and a
    sqlite3 bag has no MCAP channels to write them to; both raise ValueError and write nothing."""
    from tactile_sim.offline.output_bag import OutputBag

    seen = []
    with OutputBag(tmp_path / "watched", node_name="n", on_write=lambda *item: seen.append(item)) as watched:
        channels = watched.channels([("~/pad", encode.TAXEL_ARRAY)])
        with pytest.raises(ValueError, match="records are not messages for on_write"):
            watched.write_records(0, b"", channels, [0])
        assert watched.counts == {"/n/pad": 0}
    with OutputBag(tmp_path / "old.db3", node_name="n") as sqlite:
        with pytest.raises(ValueError, match="not an added topic of that type of an MCAP bag"):
            sqlite.channels([("~/pad", encode.TAXEL_ARRAY)])
    assert seen == []


def test_metadata_yaml_is_what_pyyaml_dumps(tmp_path):
    """The nodes written directly give PyYAML's text of the same data, quoting and unicode included."""
    write_stream(tmp_path / "bag", "mcap", sample_stream())
    with BagWriter(tmp_path / "other", "mcap") as writer:
        metadata = writer._metadata()
    odd = {"strings": ["", "true", "123", "1.5", "a: b", "- x", "#c", "ü π", "null", "x" * 200, "two words " * 20],
           "nested": [{"k": [1, -2, True, False, None]}, []], "empty": {}, "n": 2**63 - 1, "metadata": metadata}
    with tmp_path.joinpath("bag", "metadata.yaml").open() as f:
        written = yaml.safe_load(f)["rosbag2_bagfile_information"]
    for data in (odd, written, metadata):
        assert bag._yaml(data) == yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
                                            default_flow_style=False, sort_keys=False, allow_unicode=True)
    with pytest.raises(TypeError, match="float"):
        bag._yaml({"x": 1.5})


def test_metadata_yaml_with_the_qos_profiles_put_in_is_pyyamls_text_of_the_whole(tmp_path):
    """metadata.yaml and the MCAP's serialized metadata (QoS profile text put in at its placeholders) are byte for byte
    PyYAML's dump of the whole metadata, for topics of several QoS profiles and names like the placeholders'."""
    with BagWriter(tmp_path / "bag", "mcap") as writer:
        for i, topic in enumerate(("/a", "qos_slot_1", "/c/d", "/e", "/qos_slot_0")):
            writer.add_topic(topic, encode.WRENCH_STAMPED if i % 2 else "std_msgs/msg/String",
                             qos=qos_profile(reliable=i % 2 == 0, transient_local=i % 3 == 0, depth=1 + 7 * i))
        metadata = writer._metadata()
    expected = yaml.dump(metadata, Dumper=yaml.SafeDumper, default_flow_style=False, sort_keys=False,
                         allow_unicode=True)
    written = tmp_path.joinpath("bag", "metadata.yaml").read_text()
    assert written == "rosbag2_bagfile_information:\n" + textwrap.indent(expected, "  ")
    assert written.count("offered_qos_profiles:\n      - history: keep_last\n") == 5
    assert expected.strip().encode() in tmp_path.joinpath("bag", "bag.mcap").read_bytes()
