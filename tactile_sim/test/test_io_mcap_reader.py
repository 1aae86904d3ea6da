"""Our MCAP reader (io/mcap_reader.py, io/mcap_bag.py) against rosbags' reader, the independent truth: the same
connections, counts, duration and messages (order, log times, bytes) on MCAP files written here in every layout the
format allows (chunked or not, lz4 / zstd / uncompressed, with or without summary, chunk indexes, statistics, CRCs;
chunks overlapping in time, messages out of order inside a chunk), on the bags of BagWriter and of rosbags' writer;
files it cannot read fail where rosbags' do, with the file named.
"""

from __future__ import annotations

import struct
from binascii import crc32
from pathlib import Path

import lz4.frame
import pytest
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.rosbag2.enums import CompressionFormat, CompressionMode

try:
    from compression import zstd
except ImportError:
    from backports import zstd

from helpers_offline import write_bag
from test_io_bag import sample_stream, write_stream
from tactile_sim.io.bag import BagReader, _qos_yaml, qos_profile
from tactile_sim.io.mcap_bag import McapBag, open_mcap_bag
from tactile_sim.io.mcap_file import MAGIC
from tactile_sim.io.mcap_reader import McapError, McapReader
from tactile_sim.io.msg_types import message_definition, new_message, serialize_cdr, type_hash

TYPES = ("sensor_msgs/msg/JointState", "tf2_msgs/msg/TFMessage", "std_msgs/msg/String")
TOPICS = ("/joint_states", "/tf", "/chatter")


def _s(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return struct.pack("<I", len(data)) + data


def _rec(opcode: int, body: bytes) -> bytes:
    return struct.pack("<BQ", opcode, len(body)) + body


def _map(items: dict[str, str]) -> bytes:
    body = b"".join(_s(k) + _s(v) for k, v in items.items())
    return struct.pack("<I", len(body)) + body


def write_mcap(path: Path, messages, *, chunk: int | None = 4, compression: str = "", summary: bool = True,
               indexes: bool = True, statistics: bool = True, summary_schemas: bool = True, crc: bool = False) -> Path:
    """An MCAP file of (channel id 1-3, log ns, data) ``messages`` in the given order: ``chunk`` messages per chunk
    (None: messages outside chunks), chunk data compressed with ``compression``; the summary section (its chunk
    indexes, statistics, schemas and channels) as asked."""
    schemas = [_rec(0x03, struct.pack("<H", i + 1) + _s(t) + _s("ros2msg") + _s(message_definition(t)))
               for i, t in enumerate(TYPES)]
    channels = [_rec(0x04, struct.pack("<HH", i + 1, i + 1) + _s(topic) + _s("cdr")
                     + _map({"offered_qos_profiles": _qos_yaml(qos_profile())})) for i, topic in enumerate(TOPICS)]
    out = bytearray(MAGIC + _rec(0x01, _s("ros2") + _s("test")))
    out += b"".join(schemas + channels)
    chunk_indexes = []
    groups = [messages[i:i + chunk] for i in range(0, len(messages), chunk)] if chunk else [messages]
    for group in groups:
        records, index = bytearray(), {}
        for channel, log_ns, data in group:
            index.setdefault(channel, []).append((log_ns, len(records)))
            records += _rec(0x05, struct.pack("<HIQQ", channel, 0, log_ns, log_ns) + data)
        if not chunk:
            out += records
            continue
        data = {"": bytes, "lz4": lz4.frame.compress, "zstd": zstd.compress}[compression](bytes(records))
        first, last = min(m[1] for m in group), max(m[1] for m in group)
        start = len(out)
        out += _rec(0x06, struct.pack("<QQQI", first, last, len(records), crc32(records) if crc else 0)
                    + _s(compression) + struct.pack("<Q", len(data)) + data)
        end, offsets = len(out), b""
        for channel, entries in index.items():
            offsets += struct.pack("<HQ", channel, len(out))
            body = b"".join(struct.pack("<QQ", *e) for e in entries)
            out += _rec(0x07, struct.pack("<HI", channel, len(body)) + body)
        chunk_indexes.append(_rec(0x08, struct.pack("<QQQQ", first, last, start, end - start)
                                  + struct.pack("<I", len(offsets)) + offsets + struct.pack("<Q", len(out) - end)
                                  + _s(compression) + struct.pack("<QQ", len(data), len(records))))
    out += _rec(0x0F, struct.pack("<I", 0))
    summary_start = 0
    if summary:
        summary_start = len(out)
        out += b"".join((schemas if summary_schemas else []) + channels + (chunk_indexes if indexes else []))
        if statistics:
            counts = {c: sum(1 for m in messages if m[0] == c) for c in (1, 2, 3)}
            body = b"".join(struct.pack("<HQ", c, n) for c, n in counts.items())
            out += _rec(0x0B, struct.pack("<QHIIIIQQ", len(messages), 3, 3, 0, 0, len(groups),
                                          min(m[1] for m in messages), max(m[1] for m in messages))
                        + struct.pack("<I", len(body)) + body)
    out += _rec(0x02, struct.pack("<QQI", summary_start, 0, 0)) + MAGIC
    path.write_bytes(bytes(out))
    return path


def stream(n: int = 23, shuffle: bool = False):
    """(channel, log ns, data) of n messages on the three channels; ``shuffle``: log times out of order, some
    equal."""
    times = [1000 + 10 * k for k in range(n)]
    if shuffle:
        times = [1000 + 10 * ((7 * k) % n) // 2 for k in range(n)]
    return [(1 + k % 3, t, bytes([k]) * (k % 5 + 1)) for k, t in enumerate(times)]


def ours(path: Path, topics=None, start=None, stop=None):
    bag = open_mcap_bag(path)
    assert isinstance(bag, McapBag)
    try:
        conns = [c for c in bag.connections if topics is None or c.topic in topics]
        return _summary(bag, conns, start, stop)
    finally:
        bag.close()


def theirs(path: Path, topics=None, start=None, stop=None):
    with Reader(path) as reader:
        conns = [c for c in reader.connections if topics is None or c.topic in topics]
        return _summary(reader, conns, start, stop)


def _summary(reader, conns, start, stop):
    connections = [(c.id, c.topic, c.msgtype, c.msgdef, c.digest, c.msgcount, c.ext) for c in reader.connections]
    messages = [(c.topic, t, bytes(d)) for c, t, d in reader.messages(conns, start=start, stop=stop)]
    return connections, reader.message_count, reader.duration, messages


LAYOUTS = [dict(), dict(compression="lz4"), dict(compression="zstd", crc=True), dict(chunk=1), dict(chunk=100),
           dict(chunk=None), dict(chunk=None, summary=False), dict(summary=False), dict(compression="lz4",
           summary=False), dict(indexes=False), dict(statistics=False), dict(summary_schemas=False),
           dict(indexes=False, statistics=False, compression="zstd")]


def _indexed(layout: dict) -> bool:
    return layout.get("chunk", 4) is not None and layout.get("indexes", True) and layout.get("summary", True)


CASES = [(layout, shuffle) for layout in LAYOUTS for shuffle in (False, True) if _indexed(layout) or not shuffle]
"""Without chunk indexes messages must be in time order (out of order: see the test after)."""


@pytest.mark.parametrize("layout, shuffle", CASES, ids=[(",".join(f"{k}={v}" for k, v in x.items()) or "default")
                                                        + (",shuffled" if s else "") for x, s in CASES])
def test_every_layout_reads_as_rosbags_reads_it(tmp_path, layout, shuffle):
    path = write_mcap(tmp_path / "f.mcap", stream(shuffle=shuffle), **layout)
    expected = theirs(path)
    assert ours(path) == expected and len(expected[3]) == 23
    for topics, start, stop in (({"/tf"}, None, None), ({"/chatter", "/tf"}, 1045, 1150), (None, 1030, None),
                                (None, None, 1100)):
        assert ours(path, topics, start, stop) == theirs(path, topics, start, stop)


def test_chunks_are_read_only_when_due_so_damage_surfaces_after_the_same_messages(tmp_path):
    path = write_mcap(tmp_path / "f.mcap", stream(40), chunk=8)
    with McapReader(path) as reader:
        second = reader.chunks[1].offset
    data = bytearray(path.read_bytes())
    data[second + 50:second + 58] = b"\xff" * 8  # the length of its first record
    path.write_bytes(bytes(data))

    def until_error(messages):
        got = []
        with pytest.raises(Exception) as info:
            for c, t, d in messages:
                got.append((c.topic, t, bytes(d)))
        return got, info.value

    bag = open_mcap_bag(path)
    got, error = until_error(bag.messages(bag.connections))
    bag.close()
    with Reader(path) as reader:
        expected, _ = until_error(reader.messages(reader.connections))
    assert got == expected and 0 < len(got) < 40
    assert isinstance(error, McapError) and str(path) in str(error) and "runs past" in str(error)


def test_unindexed_messages_out_of_order_fail_like_rosbags(tmp_path):
    path = write_mcap(tmp_path / "f.mcap", stream(9, shuffle=True), chunk=None, summary=False)
    with pytest.raises(McapError, match="log times go backwards"):
        ours(path)
    with pytest.raises(Exception, match="not in timestamp order"):
        theirs(path)


@pytest.mark.parametrize("storage, compression", [("mcap", CompressionMode.STORAGE), ("mcap", CompressionMode.MESSAGE),
                                                  ("sqlite3", None)])
def test_bags_of_both_writers_read_alike_and_the_rest_is_left_to_rosbags(tmp_path, storage, compression):
    write_stream(tmp_path / "ours", storage, sample_stream())
    writer = Writer(tmp_path / "theirs", version=9, storage_plugin=StoragePlugin[storage.upper()])
    if compression is not None:
        writer.set_compression(compression, CompressionFormat.ZSTD)
    with writer:
        conns = {}
        for topic, typename, stamp, msg in sample_stream():
            if topic not in conns:
                conns[topic] = writer.add_connection(topic, typename, msgdef=message_definition(typename),
                                                     rihs01=type_hash(typename),
                                                     offered_qos_profiles=[qos_profile()])
            writer.write(conns[topic], stamp, serialize_cdr(msg, typename))
    for name in ("ours", "theirs"):
        bag = tmp_path / name
        left = storage == "sqlite3" or (name == "theirs" and compression == CompressionMode.MESSAGE)
        if left:
            assert open_mcap_bag(bag) is None
            with BagReader(bag) as reader:
                assert not isinstance(reader._reader, McapBag) and len(list(reader)) == len(sample_stream())
            continue
        assert ours(bag) == theirs(bag)
        data_file = next(bag.glob("*.mcap"))
        assert ours(data_file) == theirs(data_file)
        assert ours(bag, {"/skin/pad"}, 1000_001_000_000, None) == theirs(bag, {"/skin/pad"}, 1000_001_000_000, None)


def test_bag_reader_uses_it_and_gives_what_rosbags_gives(tmp_path):
    write_stream(tmp_path / "bag", "mcap", sample_stream())
    with BagReader(tmp_path / "bag") as reader:
        assert isinstance(reader._reader, McapBag)
        read = [(topic, t, msg) for topic, t, msg in reader]
    with Reader(tmp_path / "bag") as reference:
        expected = [(c.topic, t, bytes(d)) for c, t, d in reference.messages()]
    assert [(topic, t) for topic, t, _ in read] == [(topic, t) for topic, t, _ in expected]
    for (_, _, msg), (_, _, data) in zip(read, expected, strict=True):
        assert reader.typestore.serialize_cdr(getattr(msg, "message", msg), msg.__msgtype__).tobytes() == data


@pytest.mark.parametrize("cut", [1, 37, 200, "half", "magic"])
def test_files_it_cannot_open_give_rosbags_errors(tmp_path, cut):
    bag = write_bag(tmp_path / "cut", [("/chatter", 1000 + k, new_message("std_msgs/msg/String", data=f"m{k}"))
                                         for k in range(30)])
    data_file = next(bag.glob("*.mcap"))
    data = data_file.read_bytes()
    data = b"NOTMCAP!" + data[8:] if cut == "magic" else data[:len(data) // 2 if cut == "half" else -cut]
    data_file.write_bytes(data)
    with pytest.raises(McapError, match=str(data_file)):
        McapReader(data_file)
    for path in (bag, data_file):
        with pytest.raises(Exception) as expected:
            Reader(path).open()
        with pytest.raises(type(expected.value)) as got:
            BagReader(path)
        assert str(got.value) == str(expected.value)


def test_a_bag_of_several_files_reads_them_one_after_the_other(tmp_path):
    bag, other = tmp_path / "split", tmp_path / "other"
    write_stream(bag, "mcap", sample_stream())
    write_stream(other, "mcap", [(topic, typename, stamp - 10**9, msg) for topic, typename, stamp, msg
                                 in sample_stream()[::2]])  # earlier, in a file of its own
    (bag / "split.mcap").rename(bag / "split_0.mcap")
    (other / "other.mcap").rename(bag / "split_1.mcap")
    metadata = (bag / "metadata.yaml").read_text()
    (bag / "metadata.yaml").write_text(metadata.replace("- split.mcap", "- split_0.mcap\n  - split_1.mcap"))
    read = ours(bag)
    assert read == theirs(bag) and len(read[3]) == len(sample_stream()) + len(sample_stream()[::2])
    assert read[3][-1][1] < read[3][0][1]  # file by file, not merged


@pytest.mark.parametrize("summary", [True, False])
def test_a_message_record_too_short_for_its_head_is_refused(tmp_path, summary):
    path = write_mcap(tmp_path / "f.mcap", stream(6), chunk=3, summary=summary)
    data = bytearray(path.read_bytes())
    with McapReader(path) as reader:
        chunk = reader.chunks[0].offset if summary else None
    if chunk is None:  # the first chunk record follows the header, schemas and channels
        chunk = data.index(bytes([0x06]) + struct.pack("<Q", 40 + 3 * 31 + 1 + 2 + 3))
    data[chunk + 50:chunk + 58] = struct.pack("<Q", 10)  # the first message record claims 10 bytes
    path.write_bytes(bytes(data))
    with pytest.raises(Exception):
        theirs(path)
    with pytest.raises(McapError, match=f"{path}.*(< 22|runs past)"):
        ours(path) if summary else McapReader(path)


@pytest.mark.parametrize("chunk", [4, 100])
def test_reads_of_one_open_file_each_read_as_rosbags_and_a_chunk_read_next_is_not_walked_again(tmp_path, monkeypatch,
                                                                                               chunk):
    path = write_mcap(tmp_path / "f.mcap", stream(shuffle=True), chunk=chunk)
    walked = []
    chunk_records = McapReader._chunk_records
    monkeypatch.setattr(McapReader, "_chunk_records", lambda self, offset, *a: walked.append(offset) or
                        chunk_records(self, offset, *a))
    bag = open_mcap_bag(path)
    try:
        for topics, start, stop, first in (({"/joint_states"}, None, None, 2), ({"/tf"}, None, None, None),
                                           ({"/tf", "/chatter"}, 1030, 1100, None), (None, None, None, None)):
            conns = [c for c in bag.connections if topics is None or c.topic in topics]
            _, _, _, expected = theirs(path, topics, start, stop)
            got = []
            for c, t, d in bag.messages(conns, start, stop):  # a read left after its first messages, as a check's
                got.append((c.topic, t, bytes(d)))
                if len(got) == first:
                    break
            assert got == expected[:first], topics
    finally:
        bag.close()
    if chunk == 100:  # one chunk: walked by the first read, kept for the second, walked again by the third
        assert len(walked) == 2
