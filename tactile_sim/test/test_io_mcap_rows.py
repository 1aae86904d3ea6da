"""mcap_file.ChunkRows: open chunks of files written in lockstep as rows of one array write what each file writes
alone (McapFile.write_records), byte for byte."""

from __future__ import annotations

import numpy as np
from tactile_sim.io import mcap_file
from tactile_sim.io.mcap_file import ChunkRows, McapFile, message_head

TOPICS = ("/a", "/b", "/c")
LAYOUTS = (((0, 1, 0), (300, 9000, 40)), ((2,), (70000,)))
"""(topics (indexes of TOPICS), data sizes) of the two kinds of step."""


def _channels(file: int, layout: int) -> tuple[int, ...]:
    """The channel ids of a layout's records in a file: file k declares the topics rotated by k."""
    return tuple((topic - file) % len(TOPICS) + 1 for topic in LAYOUTS[layout][0])


def _step_records(rng: np.random.Generator, file: int, layout: int, log_ns: int) -> tuple[bytes, tuple[int, ...]]:
    """One step's records of a file (heads at ``log_ns``, random data) and where each starts."""
    records = [message_head(c, n, log_ns) + rng.bytes(n) for c, n in zip(_channels(file, layout), LAYOUTS[layout][1])]
    return b"".join(records), tuple(np.cumsum([0] + [len(r) for r in records[:-1]]).tolist())


def _log_ns(file: int, step: int) -> int:
    """Each file's log times: its own start and rate; file 1 runs backwards (chunk time ranges are min and max)."""
    return 10**9 * (file + 1) + (-1 if file == 1 else 1) * 7919 * step + 10**8


def _write(directory, rows: bool) -> list[bytes]:
    """Four files: topics declared, then 60 steps of alternating layouts (several chunks), written alone or, with
    ``rows``, through ChunkRows: all four in order, then (file 2 ends at step 20: kept out) files 3, 1, 0 in that order,
    then a write_all to file 0 of its own (step 40: the rows hand the chunks back), then ChunkRows refusing chunks
    of different sizes; returns each file's bytes."""
    rngs = [np.random.default_rng(k) for k in range(4)]  # each file its topics' channel ids (their order)
    files = [McapFile(directory / f"{k}.mcap", "test") for k in range(4)]
    for f in files:
        schema = f.add_schema("std_msgs/msg/String", "ros2msg", "string data")
        for j in range(len(TOPICS)):
            f.add_channel(TOPICS[(j + files.index(f)) % len(TOPICS)], schema, "cdr", {})
    chunk_rows = ChunkRows(4, 1 << 17)
    layouts: dict[int, list] = {}
    held: list[int] = []
    for step in range(60):
        live = [0, 1, 2, 3] if step < 20 else [3, 1, 0]
        if step == 40:
            files[0].write_all(_log_ns(0, step), [(2, b"alone")])
        kind = step % 2
        records = {k: _step_records(rngs[k], k, kind, _log_ns(k, step)) for k in live}
        if rows and held != live and step < 40:
            if held:
                chunk_rows.keep(live)  # file 2 ended: the others stay, in another order
            else:
                assert chunk_rows.hold([files[k] for k in live], live)
            held, layouts = live, {}
        if rows and step == 30:  # handed back and taken again (as after topics declared by the files)
            chunk_rows.release()
            assert chunk_rows.hold([files[k] for k in live], live)
            layouts = {}
        if rows and step == 41:
            assert not chunk_rows.hold([files[k] for k in live], live)  # file 0's chunk has one message more
        if rows and chunk_rows.files:
            array = np.zeros((4, len(records[live[0]][0])), np.uint8)
            for k in live:
                array[k] = np.frombuffer(records[k][0], np.uint8)
            layout = layouts.setdefault(kind, [(_channels(k, kind), records[k][1]) for k in live])
            chunk_rows.write(layout, np.array([_log_ns(k, step) for k in live], np.uint64),
                             [array[:, :100], array[:, 100:]])  # two parts, joined
            array[:] = 0xFF  # copied
        else:
            for k in live:
                files[k].write_records(_log_ns(k, step), records[k][0], _channels(k, kind), records[k][1])
    for f in files:
        assert f.time_range[0] <= f.time_range[1]
        f.close("rosbag2", {"serialized_metadata": "x"})
    return [(directory / f"{k}.mcap").read_bytes() for k in range(4)]


def test_chunk_rows_write_what_each_file_writes_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(mcap_file, "CHUNK_BYTES", 200_000)  # a chunk every few steps
    (tmp_path / "alone").mkdir()
    (tmp_path / "rows").mkdir()
    alone = _write(tmp_path / "alone", rows=False)
    assert all(len(data) > 3 * 200_000 for data in alone)  # several chunks each
    assert _write(tmp_path / "rows", rows=True) == alone


def test_time_range_of_a_file_covers_its_messages_open_chunk_included(tmp_path, monkeypatch):
    monkeypatch.setattr(mcap_file, "CHUNK_BYTES", 100)
    f = McapFile(tmp_path / "t.mcap", "test")
    assert f.time_range == (2**64 - 1, 0)
    f.add_channel("/a", f.add_schema("s", "ros2msg", ""), "cdr", {})
    f.write_all(50, [(1, b"x" * 200)])  # closes its chunk
    f.write_all(20, [(1, b"y")])  # stays open
    assert f.time_range == (20, 50)
    f.close("rosbag2", {})

