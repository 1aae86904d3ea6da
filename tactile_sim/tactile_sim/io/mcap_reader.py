"""One MCAP file of a rosbag2 bag read for replay: its schemas, channels, statistics, and its messages as
(channel id, log time ns, CDR bytes) in the order rosbags' reader yields them.

Record layouts are those of the MCAP specification (https://mcap.dev/spec). Opening reads the header, the footer and
the summary section (schemas, channels, chunk indexes, statistics); a file without a summary, or whose summary lacks
what is needed, is scanned once from the start instead. Messages come

* indexed (the summary has chunk indexes): chunk by chunk, a chunk decompressed (lz4, zstd or none) and walked
  when the first of its messages is due, its messages sorted by log time (stably) and merged with the other chunks'
  by (log time, chunk offset) (chunks that do not overlap in time are simply read one after the other);
* else in file order (messages outside and inside chunks), log times required not to go backwards.

As in rosbags, a chunk is read only when its message index lists a wanted channel, and only its messages inside the
time range its index declares are yielded. Memory holds about a chunk (1 MiB as rosbag2 writes them): its records
while they are walked, and the messages of all its channels, kept until the next read of the file (a read of that
chunk again, for other channels, takes them instead of walking it again). Anything the file does not hold as
described raises :class:`McapError` naming the file, the byte offset and what was wrong.
"""

from __future__ import annotations

import heapq
import struct
from binascii import crc32
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .mcap_file import CHANNEL, CHUNK, CHUNK_INDEX, FOOTER, HEADER, MAGIC, MESSAGE, SCHEMA, STATISTICS, SUMMARY_OFFSET

MAX_TIME = 2**63 - 1
"""Log time bound (ns) of a read without a stop time."""

_U16, _U32, _U64 = struct.Struct("<H"), struct.Struct("<I"), struct.Struct("<Q")
_RECORD_HEAD = struct.Struct("<BQ")
"""Opcode and body length of a record."""
_MESSAGE_HEAD = struct.Struct("<HIQQ")
"""Message record body up to its data: channel id, sequence, log time, publish time."""
_CHUNK_HEAD = struct.Struct("<QQQI")
"""Chunk record body up to its compression name: start time, end time, uncompressed size, uncompressed CRC."""
_STATISTICS_HEAD = struct.Struct("<QHIIIIQQ")
_FOOTER_RECORD = bytes([FOOTER]) + _U64.pack(20)
"""Opcode and length of the footer record (summary start, summary offset start, CRC)."""


def _zstd_decompress(data: bytes) -> bytes:
    try:
        from compression import zstd  # Python >= 3.14
    except ImportError:
        from backports import zstd
    return zstd.decompress(data)


def _lz4_decompress(data: bytes) -> bytes:
    from lz4.frame import decompress
    return decompress(data)


_DECOMPRESS = {"lz4": _lz4_decompress, "zstd": _zstd_decompress}
"""Chunk compression name → decompression of its data (imported on first use)."""


class McapError(ValueError):
    """An MCAP file that cannot be read as described (the message names the file, where and what)."""


@dataclass(frozen=True)
class Schema:
    """A schema record: ``encoding`` ``ros2msg``, ``ros2idl``, ...; ``data`` the definition text."""

    id: int
    name: str
    encoding: str
    data: str


@dataclass(frozen=True)
class Channel:
    """A channel record: ``metadata`` its string map (a key's first entry), ``schema`` the schema its id named
    when the record was read (None: schema id 0 or not yet declared)."""

    id: int
    topic: str
    message_encoding: str
    metadata: dict[str, str]
    schema: Schema | None


@dataclass(frozen=True)
class ChunkIndex:
    """What a chunk index record says of one chunk: declared log time range (ns), where its record is, its data's
    compression and sizes, and its message count per channel id (from its message index offsets)."""

    start_ns: int
    end_ns: int
    offset: int
    compression: str
    compressed_size: int
    uncompressed_size: int
    counts: dict[int, int]


@dataclass(frozen=True)
class Statistics:
    """Message count, first and last log time (ns), message count per channel id."""

    message_count: int
    start_ns: int
    end_ns: int
    channel_counts: dict[int, int]


def _string(data: bytes, pos: int) -> tuple[str, int]:
    """A length-prefixed UTF-8 string at ``pos`` and the position after it."""
    (size,) = _U32.unpack_from(data, pos)
    end = pos + 4 + size
    if end > len(data):
        raise struct.error(f"a string of {size} bytes at byte {pos} runs past its record")
    return bytes(data[pos + 4:end]).decode(), end


def _string_map(data: bytes, pos: int) -> dict[str, str]:
    (size,) = _U32.unpack_from(data, pos)
    pos, end, out = pos + 4, pos + 4 + size, {}
    while pos < end:
        key, pos = _string(data, pos)
        value, pos = _string(data, pos)
        out.setdefault(key, value)
    return out


def _decompress(data: bytes, compression: str, size: int, crc: int) -> bytes:
    """The records of a chunk: ``data`` decompressed, checked against its announced size and CRC (0: none)."""
    if compression not in ("", "lz4", "zstd"):
        raise ValueError(f"unsupported chunk compression {compression!r}; allowed: lz4, zstd or none")
    try:
        raw = _DECOMPRESS[compression](data) if compression else data
    except Exception as exc:  # noqa: BLE001 - lz4 and zstd raise their own kinds for damaged data
        raise ValueError(f"its {compression} data cannot be decompressed ({type(exc).__name__}: {exc})") from exc
    if len(raw) != size:
        raise ValueError(f"the chunk holds {len(raw)} bytes of records; its record announces {size}")
    if crc and crc32(raw) != crc:
        raise ValueError("the chunk's records do not match its CRC")
    return raw


class McapReader:
    """An MCAP file (profile ``ros2``) opened for reading; see the module docstring. ``schemas`` and ``channels``
    by id, ``statistics`` of the whole file. Use as a context manager, or call :meth:`close`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.schemas: dict[int, Schema] = {}
        self.channels: dict[int, Channel] = {}
        self.chunks: list[ChunkIndex] = []
        self._walked: tuple[int, list[tuple[int, int, bytes]]] | None = None
        """Offset of the chunk last walked and its messages (:meth:`_chunk_walked`), until they are read again."""
        self._file: BinaryIO = self.path.open("rb")
        try:
            self.statistics = self._open()
        except (struct.error, UnicodeDecodeError, ValueError) as exc:
            self._file.close()
            raise McapError(f"MCAP file {str(self.path)!r}: {exc}") from exc
        except BaseException:
            self._file.close()
            raise

    def _read(self, offset: int, size: int) -> bytes:
        """``size`` bytes at ``offset``; ValueError when the file ends before."""
        self._file.seek(offset)
        data = self._file.read(size)
        if len(data) != size:
            raise ValueError(f"the file ends at byte {offset + len(data)}, inside a record that needs "
                             f"{size} bytes from byte {offset}")
        return data

    def _open(self) -> Statistics:
        """Check the header and footer, read the summary (or scan the data section); returns the statistics."""
        head = self._file.read(9 + 8)
        if head[:8] != MAGIC:
            raise ValueError("not an MCAP file (no MCAP magic at its start)" if head else "the file is empty")
        opcode, size = _RECORD_HEAD.unpack_from(self._read(8, 9))
        if opcode != HEADER:
            raise ValueError(f"the first record has opcode {opcode:#04x}; expected a header (0x01)")
        profile, _ = _string(self._read(17, size), 0)
        if profile != "ros2":
            raise ValueError(f"profile {profile!r}; expected 'ros2'")
        self._data_start = 17 + size
        footer_start = self._file.seek(0, 2) - 37
        footer = self._read(footer_start, 37) if footer_start >= self._data_start else b""
        if footer[-8:] != MAGIC or footer[:9] != _FOOTER_RECORD:
            raise ValueError("no MCAP footer at its end (a file cut short: `mcap recover` repairs it)")
        (summary_start,) = _U64.unpack_from(footer, 9)
        if summary_start and not self._data_start <= summary_start <= footer_start:
            raise ValueError(f"the footer's summary offset {summary_start} lies outside the file")
        self._data_end = summary_start or footer_start
        statistics = self._read_summary(summary_start, footer_start) if summary_start else None
        if statistics is not None and self.schemas:
            return statistics
        if statistics is None and self.chunks:
            return self._statistics_of_chunks()
        return self._scan()

    def _read_summary(self, start: int, end: int) -> Statistics | None:
        """Schemas, channels and chunk indexes of the summary section; its statistics (None when it has none)."""
        data = self._read(start, end + 9 - start)  # up to the footer's opcode
        statistics, pos = None, 0
        while True:
            opcode, size = _RECORD_HEAD.unpack_from(data, pos)
            if opcode in (FOOTER, SUMMARY_OFFSET):
                return statistics
            body = data[pos + 9:pos + 9 + size]
            if len(body) != size:
                raise ValueError(f"a summary record at byte {start + pos} runs past the footer")
            pos += 9 + size
            if opcode in (SCHEMA, CHANNEL):
                self._add_definition(opcode, body)
            elif opcode == CHUNK_INDEX:
                self.chunks.append(self._chunk_index(body))
            elif opcode == STATISTICS:
                count, _, _, _, _, _, first, last = _STATISTICS_HEAD.unpack_from(body)
                (size,) = _U32.unpack_from(body, 42)
                counts = dict(struct.iter_unpack("<HQ", body[46:46 + size - size % 10]))
                statistics = Statistics(count, first, last, counts)

    def _add_definition(self, opcode: int, body: bytes) -> None:
        """Keep a schema record, or a channel record with its schema as known now (a channel id's first record is
        the one kept)."""
        (key,) = _U16.unpack_from(body)
        if opcode == SCHEMA:
            name, pos = _string(body, 2)
            encoding, pos = _string(body, pos)
            data, _ = _string(body, pos)
            self.schemas[key] = Schema(key, name, encoding, data)
            return
        (schema_id,) = _U16.unpack_from(body, 2)
        topic, pos = _string(body, 4)
        encoding, pos = _string(body, pos)
        metadata = _string_map(body, pos)
        self.channels.setdefault(key, Channel(key, topic, encoding, metadata, self.schemas.get(schema_id)))

    @staticmethod
    def _chunk_index(body: bytes) -> ChunkIndex:
        start_ns, end_ns, offset, length = struct.unpack_from("<QQQQ", body)
        (size,) = _U32.unpack_from(body, 32)
        offsets = sorted((v, k) for k, v in struct.iter_unpack("<HQ", body[36:36 + size]))
        (index_length,) = _U64.unpack_from(body, 36 + size)
        compression, pos = _string(body, 44 + size)
        compressed, uncompressed = struct.unpack_from("<QQ", body, pos)
        ends = [o for o, _ in offsets[1:]] + [offset + length + index_length]
        counts = {channel: (end - o - 15) // 16 for (o, channel), end in zip(offsets, ends) if end - o - 15}
        return ChunkIndex(start_ns, end_ns, offset, compression, compressed, uncompressed, counts)

    def _statistics_of_chunks(self) -> Statistics:
        counts: dict[int, int] = {}
        for chunk in self.chunks:
            for channel, n in chunk.counts.items():
                counts[channel] = counts.get(channel, 0) + n
        return Statistics(sum(counts.values()), min(c.start_ns for c in self.chunks),
                          max(c.end_ns for c in self.chunks), counts)

    def _scan(self) -> Statistics:
        """Schemas, channels and statistics from the records of the data section (every chunk opened)."""
        count, first, last, counts = 0, MAX_TIME, 0, {}
        for opcode, data, pos, end in self._records(0, MAX_TIME, False):
            if opcode == MESSAGE:
                channel, _, log_ns, _ = _MESSAGE_HEAD.unpack_from(data, pos)
                count, first, last = count + 1, min(first, log_ns), max(last, log_ns)
                counts[channel] = counts.get(channel, 0) + 1
            elif opcode in (SCHEMA, CHANNEL):
                self._add_definition(opcode, data[pos:end])
        return Statistics(count, first, last, counts)

    def _records(self, start: int, stop: int, skip_chunks: bool) -> Iterator[tuple[int, bytes, int, int]]:
        """(opcode, buffer, body start, body end) of the schema, channel and message records of the data section in
        file order, those inside a chunk in its place (with ``skip_chunks``, chunks wholly outside [start, stop) are
        left unread)."""
        pos, end = self._data_start, self._data_end
        while pos < end:
            opcode, size = _RECORD_HEAD.unpack(self._read(pos, 9))
            offset, pos = pos, pos + 9 + size
            if opcode == MESSAGE and size < 22:
                raise ValueError(f"the message record at byte {offset} is {size} bytes long (< 22)")
            if opcode in (MESSAGE, SCHEMA, CHANNEL):
                yield opcode, self._read(offset + 9, size), 0, size
            elif opcode == CHUNK:
                first, last, _, _ = _CHUNK_HEAD.unpack(self._read(offset + 9, 28))
                if skip_chunks and not (start <= last and first < stop):
                    continue
                records = self._chunk_records(offset, size)
                for opcode, body, body_end in _chunk_walk(records, offset):
                    if opcode == CHUNK:
                        raise ValueError(f"the chunk at byte {offset} holds a chunk")
                    if opcode in (MESSAGE, SCHEMA, CHANNEL):
                        yield opcode, records, body, body_end

    def _chunk_records(self, offset: int, size: int, index: ChunkIndex | None = None) -> bytes:
        """The records of the chunk record at ``offset`` whose body is ``size`` bytes (decompressed; compression
        and sizes as ``index`` says when given, as the record says otherwise)."""
        uncompressed, crc, name_size = struct.unpack("<QII", self._read(offset + 25, 16))
        compression = self._read(offset + 41, name_size).decode()
        (compressed,) = _U64.unpack(self._read(offset + 41 + name_size, 8))
        data_start = offset + 49 + name_size
        if index is not None:
            compression, compressed, uncompressed = index.compression, index.compressed_size, index.uncompressed_size
        elif data_start + compressed > offset + 9 + size:
            raise ValueError(f"the compressed data of the chunk at byte {offset} runs past its record")
        return _decompress(self._read(data_start, compressed), compression, uncompressed, crc)

    def _chunk_messages(self, chunk: ChunkIndex, wanted: Collection[int], start: int, stop: int) \
            -> list[tuple[int, int, bytes]]:
        """(log time ns, channel id, data) of the chunk's messages of ``wanted`` channels logged in [start, stop),
        sorted by log time (stable). The messages of a chunk walked are kept for the next read of that chunk only (a
        bag's first chunk: read for the check of its first clock messages, then for its replay): walked once."""
        walked, self._walked = self._walked, None
        if walked is None or walked[0] != chunk.offset:
            walked = None  # the previous chunk's messages go before this chunk is read: one chunk in memory
            walked = self._walked = chunk.offset, self._chunk_walked(chunk)
        return [m for m in walked[1] if start <= m[0] < stop and m[1] in wanted]

    def _chunk_walked(self, chunk: ChunkIndex) -> list[tuple[int, int, bytes]]:
        """(log time ns, channel id, data) of every message of the chunk, sorted by log time (stable)."""
        records = self._chunk_records(chunk.offset, 0, chunk)
        out = []
        unpack = _MESSAGE_HEAD.unpack_from
        for opcode, body, end in _chunk_walk(records, chunk.offset):
            if opcode == MESSAGE:
                channel, _, log_ns, _ = unpack(records, body)
                out.append((log_ns, channel, records[body + 22:end]))
        out.sort(key=_log_time)
        return out

    def messages(self, channel_ids: Collection[int], start_ns: int | None = None, stop_ns: int | None = None) \
            -> Iterator[tuple[int, int, bytes]]:
        """(channel id, log time ns, data) of the messages of ``channel_ids`` logged in [start_ns, stop_ns) (default:
        all), in the order of the module docstring; McapError where the file stops being readable."""
        wanted = frozenset(channel_ids)
        try:
            if self.chunks:
                yield from self._indexed(wanted, start_ns, stop_ns)
            else:
                yield from self._in_file_order(wanted, 0 if start_ns is None else start_ns,
                                               MAX_TIME if stop_ns is None else stop_ns)
        except (struct.error, UnicodeDecodeError, ValueError) as exc:
            raise McapError(f"MCAP file {str(self.path)!r}: {exc}") from exc

    def _indexed(self, wanted: frozenset[int], start_ns: int | None, stop_ns: int | None) \
            -> Iterator[tuple[int, int, bytes]]:
        chunks = sorted((c for c in self.chunks if (start_ns is None or start_ns <= c.end_ns)
                         and (stop_ns is None or c.start_ns < stop_ns) and any(c.counts.get(i) for i in wanted)),
                        key=lambda c: (c.start_ns, c.offset))

        def read(chunk: ChunkIndex) -> list[tuple[int, int, bytes]]:
            return self._chunk_messages(chunk, wanted, chunk.start_ns if start_ns is None else start_ns,
                                        chunk.end_ns + 1 if stop_ns is None else stop_ns)

        if start_ns is None and stop_ns is None and all(a.end_ns < b.start_ns for a, b in zip(chunks, chunks[1:])):
            for chunk in chunks:  # disjoint in time: the merge would read them one after the other
                for log_ns, channel, data in read(chunk):
                    yield channel, log_ns, data
            return

        def source(chunk: ChunkIndex) -> Iterator[tuple[int, int, int, int, bytes]]:
            yield chunk.start_ns, -1, chunk.offset, 0, b""  # read the chunk only once its first message is due
            for i, (log_ns, channel, data) in enumerate(read(chunk)):
                yield log_ns, chunk.offset, i, channel, data

        for log_ns, offset, _, channel, data in heapq.merge(*map(source, chunks)):
            if offset >= 0:
                yield channel, log_ns, data

    def _in_file_order(self, wanted: frozenset[int], start: int, stop: int) -> Iterator[tuple[int, int, bytes]]:
        previous = -1
        for opcode, data, pos, end in self._records(start, stop, True):
            if opcode != MESSAGE:
                continue
            channel, _, log_ns, _ = _MESSAGE_HEAD.unpack_from(data, pos)
            if start <= log_ns < stop and channel in wanted:
                if log_ns < previous:
                    raise ValueError(f"log times go backwards ({log_ns} ns after {previous} ns) in a file without "
                                     "chunk indexes; `mcap recover` writes an indexed copy")
                previous = log_ns
                yield channel, log_ns, data[pos + 22:end]

    def close(self) -> None:
        self._walked = None
        self._file.close()

    def __enter__(self) -> McapReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _log_time(item: tuple[int, int, bytes]) -> int:
    return item[0]


def _chunk_walk(records: bytes, offset: int) -> Iterator[tuple[int, int, int]]:
    """(opcode, body start, body end) of each record of a chunk's records (the chunk record at ``offset``); a
    message record too short for its head (< 22 bytes) is refused."""
    pos, size = 0, len(records)
    unpack = _RECORD_HEAD.unpack_from
    while pos < size:
        opcode, length = unpack(records, pos)
        body = pos + 9
        pos = body + length
        if pos > size:
            raise ValueError(f"a record of the chunk at byte {offset} runs past the chunk's records")
        if opcode == MESSAGE and length < 22:
            raise ValueError(f"a message record of the chunk at byte {offset} is {length} bytes long (< 22)")
        yield opcode, body, pos
