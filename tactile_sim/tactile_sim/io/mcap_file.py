"""An MCAP file written directly (format: https://mcap.dev/spec, laid out as rosbag2 writes it), for bags that take
thousands of messages per second from Python.

The open chunk is one buffer, reused for every chunk of the file: a message costs one ``struct`` pack into it and a
copy of its data, records laid out by the caller (:meth:`McapFile.write_records`) one copy (no bytes objects
joined) and, for their message indexes, where they start (the entries are made per layout when the chunk closes,
not per message); a closed chunk, its record head written into the room left for it at the buffer's start, goes to
the file in one write. :meth:`McapFile.write_all` takes the messages of one receive time in one call. Chunks hold about
1 MiB of records, uncompressed, each followed by its message indexes. Schemas and channels are written into the
chunk that is open when they are added (so that a streaming reader meets them before their messages) and again in
the summary. :meth:`McapFile.close` writes the rosbag2 metadata record, the summary (schemas, channels, chunk
indexes, metadata index, statistics, summary offsets) and the footer. CRCs are left at 0 ("not computed"). Files
written in lockstep (a batch's lanes) can have their open chunks as the rows of one array (:class:`ChunkRows`): one
copy per step for all of them.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

MAGIC = b"\x89MCAP0\r\n"
CHUNK_BYTES = 1 << 20
"""Records per chunk before it is closed (bytes)."""

HEADER, FOOTER, SCHEMA, CHANNEL, MESSAGE, CHUNK = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06
MESSAGE_INDEX, CHUNK_INDEX, STATISTICS, METADATA, METADATA_INDEX, SUMMARY_OFFSET, DATA_END = \
    0x07, 0x08, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F

_MESSAGE = struct.Struct("<BQHIQQ")
"""Message record up to its data: opcode, length, channel id, sequence, log time, publish time."""
MESSAGE_HEAD = _MESSAGE.size
"""Bytes of a message record before its data (31)."""
TIMES_AT = 15
"""Where a message record's log time starts (its publish time follows: 16 bytes, two little-endian uint64)."""
_U16, _U32, _U64 = struct.Struct("<H"), struct.Struct("<I"), struct.Struct("<Q")
_CHUNK = struct.Struct("<BQQQQIIQ")
"""Chunk record up to its records: opcode, length, message start and end times, uncompressed size, uncompressed CRC,
compression (the empty string: its length), records length."""


def message_head(channel_id: int, data_size: int, log_ns: int) -> bytes:
    """The head of a message record of ``data_size`` bytes of data on a channel at log time ``log_ns`` (publish
    time = log time, sequence 0), as :meth:`McapFile.write_all` writes it."""
    return _MESSAGE.pack(MESSAGE, 22 + data_size, channel_id, 0, log_ns, log_ns)


def _string(text: str) -> bytes:
    data = text.encode()
    return _U32.pack(len(data)) + data


def _record(opcode: int, body: bytes) -> bytes:
    return bytes([opcode]) + _U64.pack(len(body)) + body


def _string_map(items: dict[str, str]) -> bytes:
    body = b"".join(_string(k) + _string(v) for k, v in items.items())
    return _U32.pack(len(body)) + body


class McapFile:
    """A new MCAP file at ``path`` (must not exist) with profile ``ros2``; ``library`` names the writer."""

    def __init__(self, path: str | Path, library: str):
        self.path = Path(path)
        self._file = self.path.open("xb")
        self._file.write(MAGIC + _record(HEADER, _string("ros2") + _string(library)))
        self._buffer = bytearray(_CHUNK.size + CHUNK_BYTES + (1 << 16))
        """The open chunk: room for its record head, then its records (:attr:`_chunk_size` bytes); grown where a
        chunk needs more."""
        self._view = memoryview(self._buffer)
        """The buffer, written through (a copy straight from any buffer, without a bytearray in between)."""
        self._schemas: list[bytes] = []
        self._channels: list[bytes] = []
        self._chunk_indexes: list[bytes] = []
        self._counts: dict[int, int] = {}
        self._start, self._end = 2**64 - 1, 0
        self._rows: ChunkRows | None = None
        """The lockstep rows that hold the open chunk, while they do (:class:`ChunkRows`)."""
        self._new_chunk()

    def _new_chunk(self) -> None:
        self._chunk_size = 0
        self._index: dict[int, list[int]] = defaultdict(list)
        """Channel id → its message index entries in the open chunk of :meth:`write_all`, flat: log time, offset,
        log time, ..."""
        self._laid_out: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[list[int], list[int]]] = {}
        """(channel ids, offsets) of :meth:`write_records`' records → where each call's records start in the open
        chunk, and their log times."""
        self._chunk_start, self._chunk_end = 2**64 - 1, 0

    def add_schema(self, name: str, encoding: str, data: str) -> int:
        """Declare a schema (e.g. a message type, ``ros2msg``, its definition text); returns its id (1, 2, ...)."""
        schema_id = len(self._schemas) + 1
        record = _record(SCHEMA, _U16.pack(schema_id) + _string(name) + _string(encoding) + _string(data))
        self._schemas.append(record)
        self._append(record)
        return schema_id

    def add_channel(self, topic: str, schema_id: int, encoding: str, metadata: dict[str, str]) -> int:
        """Declare a channel (topic) of a schema, message ``encoding`` (``cdr``); returns its id (1, 2, ...)."""
        channel_id = len(self._channels) + 1
        record = _record(CHANNEL, _U16.pack(channel_id) + _U16.pack(schema_id) + _string(topic) + _string(encoding)
                         + _string_map(metadata))
        self._channels.append(record)
        self._counts[channel_id] = 0
        self._append(record)
        return channel_id

    def _append(self, record: Any) -> None:
        """Copy ``record`` (bytes-like) to the end of the open chunk."""
        if self._rows is not None:
            self._rows.release()
        at = _CHUNK.size + self._chunk_size
        n = len(record)
        self._room(at + n)
        self._view[at:at + n] = record
        self._chunk_size += n

    def _room(self, end: int) -> None:
        """Grow the buffer to ``end`` bytes at least (by half its size at least)."""
        buffer = self._buffer
        if end > len(buffer):
            self._view.release()
            buffer.extend(bytes(max(end - len(buffer), len(buffer) // 2)))
            self._view = memoryview(buffer)

    def write(self, channel_id: int, log_ns: int, data: bytes) -> None:
        """Append a message (publish time = log time, sequence 0) to the open chunk."""
        self.write_all(log_ns, ((channel_id, data),))

    def write_all(self, log_ns: int, messages: Iterable[tuple[int, bytes]]) -> None:
        """Append (channel id, data) messages that share the log time ``log_ns`` (publish time = log time,
        sequence 0) to the open chunk, in order; the chunk is closed after them once it holds more than
        :data:`CHUNK_BYTES`."""
        if self._rows is not None:
            self._rows.release()
        size = self._chunk_size
        start = size
        index, pack_into = self._index, _MESSAGE.pack_into
        for channel_id, data in messages:
            index[channel_id] += (log_ns, size)
            n = len(data)
            at = _CHUNK.size + size + MESSAGE_HEAD
            if at + n > len(self._buffer):
                self._room(at + n)
            pack_into(self._buffer, at - MESSAGE_HEAD, MESSAGE, 22 + n, channel_id, 0, log_ns, log_ns)
            self._view[at:at + n] = data
            size += MESSAGE_HEAD + n
        self._appended(log_ns, start, size)

    def write_records(self, log_ns: int, records: Any, channels: Sequence[int], offsets: Sequence[int]) -> None:
        """Append message records laid out back to back in ``records`` (bytes, or a contiguous uint8 array: each a
        :func:`message_head` at log time ``log_ns`` and its data; ``channels`` and ``offsets``: each record's
        channel id and where it starts in ``records``, in order) to the open chunk with one copy: what
        :meth:`write_all` writes for their messages."""
        start = self._chunk_size
        key = (tuple(channels), tuple(offsets))
        calls = self._laid_out.get(key)
        if calls is None:
            calls = self._laid_out[key] = ([], [])
        calls[0].append(start)
        calls[1].append(log_ns)
        self._append(records)
        self._appended(log_ns, start, self._chunk_size)

    def _appended(self, log_ns: int, start: int, size: int) -> None:
        """The open chunk grew from ``start`` to ``size`` bytes with messages at ``log_ns``: its time range, and
        closed once it holds more than :data:`CHUNK_BYTES`."""
        if size == start:
            return
        self._chunk_size = size
        if log_ns < self._chunk_start:
            self._chunk_start = log_ns
        if log_ns > self._chunk_end:
            self._chunk_end = log_ns
        if size > CHUNK_BYTES:
            self._close_chunk()

    @property
    def time_range(self) -> tuple[int, int]:
        """(first, last) log time (ns) of the messages written so far, (2**64 - 1, 0) before any."""
        if self._rows is not None:
            self._rows.release()
        if self._index or self._laid_out:
            return min(self._start, self._chunk_start), max(self._end, self._chunk_end)
        return self._start, self._end

    @property
    def counts(self) -> dict[int, int]:
        """Messages written per channel id (every declared channel)."""
        if self._rows is not None:
            self._rows.release()
        counts = dict(self._counts)
        for channel_id, entries in self._index.items():
            counts[channel_id] += len(entries) // 2
        for (channels, _), (starts, _) in self._laid_out.items():
            for channel_id in channels:
                counts[channel_id] += len(starts)
        return counts

    def _message_indexes(self) -> list[tuple[int, int, bytes]]:
        """(channel id, its messages in the open chunk, their message index entries: log time and offset of each, in
        chunk order, as little-endian uint64) of every channel with messages there, in the order of their first
        message."""
        parts: dict[int, list[list[int] | np.ndarray]] = {channel_id: [flat] for channel_id, flat in self._index.items()}
        for (channels, offsets), (starts, log_times) in self._laid_out.items():
            entries = np.empty((len(channels), len(starts), 2), "<u8")  # per record of the layout
            entries[:, :, 0] = log_times
            entries[:, :, 1] = np.add.outer(np.array(offsets, "<u8"), np.array(starts, "<u8"))
            for channel_id, channel_entries in zip(channels, entries):
                parts.setdefault(channel_id, []).append(channel_entries)
        indexes = []
        for channel_id, found in parts.items():
            entries = found[0]
            if len(found) > 1:
                entries = np.concatenate([np.reshape(np.asarray(p, "<u8"), (-1, 2)) for p in found])
                entries = entries[np.argsort(entries[:, 1], kind="stable")]
            elif isinstance(entries, list):  # write_all's alone, flat
                indexes.append((entries[1], channel_id, len(entries) // 2, struct.pack(f"<{len(entries)}Q", *entries)))
                continue
            indexes.append((int(entries[0, 1]), channel_id, len(entries), entries.tobytes()))
        indexes.sort(key=lambda index: index[0])  # by first offset
        return [(channel_id, count, body) for _, channel_id, count, body in indexes]

    def _close_chunk(self, view: memoryview | None = None) -> None:
        """Write the open chunk (held in ``view``, :attr:`_view` by default) and its message indexes."""
        view = self._view if view is None else view
        size = self._chunk_size
        start, end = 0, 0
        if self._index or self._laid_out:
            start, end = self._chunk_start, self._chunk_end
            self._start, self._end = min(self._start, start), max(self._end, end)
        f = self._file
        chunk_offset = f.tell()
        chunk_length = _CHUNK.size + size
        _CHUNK.pack_into(view, 0, CHUNK, chunk_length - 9, start, end, size, 0, 0, size)  # 9: opcode, length
        f.write(view[:chunk_length])
        offsets, indexes, at = [], [], chunk_offset + chunk_length
        for channel_id, count, body in self._message_indexes():
            self._counts[channel_id] += count
            offsets.append(_U16.pack(channel_id) + _U64.pack(at))
            indexes.append(_record(MESSAGE_INDEX, _U16.pack(channel_id) + _U32.pack(len(body)) + body))
            at += len(indexes[-1])
        f.write(b"".join(indexes))  # the message indexes, in one write (their places counted, not asked of the file)
        index_length = at - chunk_offset - chunk_length
        offset_map = b"".join(offsets)
        self._chunk_indexes.append(_record(CHUNK_INDEX, struct.pack("<QQQQ", start, end, chunk_offset, chunk_length)
                                           + _U32.pack(len(offset_map)) + offset_map + _U64.pack(index_length)
                                           + _string("") + struct.pack("<QQ", size, size)))
        self._new_chunk()

    def close(self, metadata_name: str, metadata: dict[str, str]) -> None:
        """Finish the file with one metadata record (rosbag2: ``rosbag2`` → ``serialized_metadata``)."""
        if self._rows is not None:
            self._rows.release()
        if self._chunk_size:
            self._close_chunk()
        f = self._file
        metadata_offset = f.tell()
        f.write(_record(METADATA, _string(metadata_name) + _string_map(metadata)))
        metadata_length = f.tell() - metadata_offset
        f.write(_record(DATA_END, _U32.pack(0)))
        groups = []
        for opcode, records in ((SCHEMA, self._schemas), (CHANNEL, self._channels),
                                (CHUNK_INDEX, self._chunk_indexes)):
            start = f.tell()
            f.write(b"".join(records))
            if records:
                groups.append((opcode, start, f.tell() - start))
        summary_start = groups[0][1] if groups else f.tell()
        start = f.tell()
        f.write(_record(METADATA_INDEX, _U64.pack(metadata_offset) + _U64.pack(metadata_length)
                        + _string(metadata_name)))
        groups.append((METADATA_INDEX, start, f.tell() - start))
        start = f.tell()
        counts = b"".join(_U16.pack(c) + _U64.pack(n) for c, n in sorted(self._counts.items()))
        first = self._start if sum(self._counts.values()) else 0
        f.write(_record(STATISTICS, _U64.pack(sum(self._counts.values())) + _U16.pack(len(self._schemas))
                        + struct.pack("<IIII", len(self._channels), 0, 1, len(self._chunk_indexes))
                        + struct.pack("<QQ", first, self._end) + _U32.pack(len(counts)) + counts))
        groups.append((STATISTICS, start, f.tell() - start))
        summary_offset_start = f.tell()
        for opcode, start, length in groups:
            f.write(_record(SUMMARY_OFFSET, bytes([opcode]) + struct.pack("<QQ", start, length)))
        f.write(_record(FOOTER, struct.pack("<QQI", summary_start, summary_offset_start, 0)) + MAGIC)
        f.close()


class ChunkRows:
    """The open chunks of files written in lockstep (the same records at each step, so every open chunk has the same
    size) as the rows of one array of ``rows`` × (chunk head, :data:`CHUNK_BYTES` and ``slack`` bytes): a step's
    records of every file are written with one copy (:meth:`write`), their message index entries and time ranges
    kept once for all files, per step. Each file takes them (and its bytes, :meth:`release`) when it is used alone
    again; chunks are closed for all files at once, from their rows."""

    def __init__(self, rows: int, slack: int):
        self.array = np.zeros((rows, _CHUNK.size + CHUNK_BYTES + slack), np.uint8)
        self.slack = slack
        """The most bytes one step may write."""
        self.files: list[McapFile] = []
        """The files whose open chunk is in the rows (none when released)."""
        self.rows = np.zeros(0, np.intp)
        """Each file's row."""
        self._every_row = False
        """Whether the files hold every row, in order."""
        self._size = 0
        self._calls: dict[int, tuple[Sequence[tuple[tuple[int, ...], tuple[int, ...]]], list[int], list[Any]]] = {}
        """id of a step's layouts → (the layouts: each file's (channel ids, offsets) as
        :meth:`McapFile.write_records` takes them, where each such step's records start in the chunks, each step's
        log times of the files)."""

    def hold(self, files: Sequence[McapFile], rows: Sequence[int]) -> bool:
        """Take the open chunks of ``files`` (none in other rows, their chunks the same size) into ``rows``; False
        (nothing taken) where their chunks differ in size."""
        size = files[0]._chunk_size
        if any(f._chunk_size != size for f in files):
            return False
        for f, row in zip(files, rows):
            self.array[row, _CHUNK.size:_CHUNK.size + size] = f._view[_CHUNK.size:_CHUNK.size + size]
            f._rows = self
        self.files, self.rows, self._size = list(files), np.array(rows, np.intp), size
        self.keep(rows)
        return True

    def write(self, layouts: Sequence[tuple[tuple[int, ...], tuple[int, ...]]], log_ns: Any, parts: Sequence[Any]) \
            -> None:
        """Append to every held chunk its row of the 2-D uint8 arrays ``parts`` (a row per row of the array, joined
        left to right: message records laid out back to back, each a :func:`message_head` at its file's log time of
        ``log_ns`` (uint64, one per file) and its data; ``layouts``: each file's (channel ids, offsets), the same
        object on every step of the same layouts): what :meth:`McapFile.write_records` writes."""
        at = _CHUNK.size + self._size
        n = sum(part.shape[1] for part in parts)
        if self._every_row:
            np.concatenate(parts, axis=1, out=self.array[:, at:at + n])
        else:
            self.array[self.rows, at:at + n] = np.concatenate([part[self.rows] for part in parts], axis=1)
        calls = self._calls.get(id(layouts))
        if calls is None:
            calls = self._calls[id(layouts)] = (layouts, [], [])
        calls[1].append(self._size)
        calls[2].append(log_ns)
        self._size += n
        if self._size > CHUNK_BYTES:
            self._settle()
            for f, row in zip(self.files, self.rows.tolist()):
                f._close_chunk(memoryview(self.array[row]))
            self._size = 0

    def _settle(self) -> None:
        """Give each held file the message index entries and time range of the steps written since its chunk was
        taken or last closed, and its chunk's size."""
        for layouts, starts, log_ns in self._calls.values():
            times = np.array(log_ns, np.uint64).T.tolist()
            for f, layout, column in zip(self.files, layouts, times):
                calls = f._laid_out.get(layout)
                if calls is None:
                    calls = f._laid_out[layout] = ([], [])
                calls[0].extend(starts)
                calls[1].extend(column)
                f._chunk_start, f._chunk_end = min(f._chunk_start, *column), max(f._chunk_end, *column)
        for f in self.files:
            f._chunk_size = self._size
        self._calls = {}

    def release(self) -> None:
        """Hand every held file its open chunk back (bookkeeping and bytes), to be written alone."""
        self.keep([])

    def keep(self, rows: Sequence[int]) -> None:
        """Hold on only to the chunks in ``rows`` (held ones; written in that order from here on), handing the others
        back to their files (bookkeeping and bytes), to be written alone."""
        self._settle()
        held = dict(zip(self.rows.tolist(), self.files))
        for row, f in held.items():
            if row not in rows:
                f._rows = None
                f._room(_CHUNK.size + self._size)
                f._view[_CHUNK.size:_CHUNK.size + self._size] = self.array[row, _CHUNK.size:_CHUNK.size + self._size]
        self.files, self.rows = [held[row] for row in rows], np.array(rows, np.intp)
        self._every_row = len(rows) == len(self.array) and list(rows) == list(range(len(rows)))
