"""A rosbag2 MCAP bag (a bag folder, or one .mcap file) read through :class:`~.mcap_reader.McapReader`, with the
part of rosbags' ``Reader`` interface that :class:`~.bag.BagReader` uses: ``connections``, ``message_count``,
``duration`` (ns), ``messages(connections, start, stop)``, ``is_open``, ``close()``.

A folder's metadata.yaml is parsed with PyYAML (libyaml's loader where PyYAML has it) and gives the connections,
counts and times as rosbags reads them; each storage file's channels are matched to its connections on topic, type,
encoding and QoS as rosbags matches them (a channel without a match is not read), and the files are read one after
the other. :func:`open_mcap_bag` returns None for what it leaves to rosbags: sqlite3 bags, compressed bags
(``compression_mode`` file or message), metadata of another version, non-CDR topics.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from functools import lru_cache
from pathlib import Path, PurePath
from typing import Any

import yaml
from rosbags.interfaces import Connection, ConnectionExtRosbag2, MessageDefinition, MessageDefinitionFormat
from rosbags.rosbag2.metadata import parse_qos

from .mcap_reader import McapReader

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FORMATS = {"ros2msg": MessageDefinitionFormat.MSG, "ros2idl": MessageDefinitionFormat.IDL,
            "omgidl": MessageDefinitionFormat.IDL, "": MessageDefinitionFormat.NONE}
"""Schema encoding → rosbags definition format (another encoding: the bag is left to rosbags)."""
_NO_DEFINITION = MessageDefinition(MessageDefinitionFormat.NONE, "")


def _qos(profiles: Any) -> list:
    """rosbags' QoS list of a stored ``offered_qos_profiles`` (YAML text or the list it holds)."""
    return _qos_of_text(profiles) if isinstance(profiles, str) else parse_qos(profiles or [])


@lru_cache(maxsize=64)
def _qos_of_text(text: str) -> list:
    """:func:`_qos` of YAML text (the few profiles a corpus uses are parsed once; the list is only read)."""
    return parse_qos(yaml.load(text, Loader=_LOADER))


def _channel_connections(reader: McapReader) -> list[Connection]:
    """One rosbags connection per channel of ``reader`` (in the order of their first records)."""
    counts = reader.statistics.channel_counts
    out = []
    for channel in reader.channels.values():
        schema = channel.schema
        definition = MessageDefinition(_FORMATS[schema.encoding], schema.data) if schema else _NO_DEFINITION
        ext = ConnectionExtRosbag2(channel.message_encoding, _qos(channel.metadata.get("offered_qos_profiles")))
        out.append(Connection(channel.id, channel.topic, schema.name if schema else "__schemaless__", definition,
                              "", counts.get(channel.id, 0), ext, reader))
    return out


class McapBag:
    """An open MCAP bag (see the module docstring); :func:`open_mcap_bag` opens one."""

    def __init__(self, readers: list[McapReader], connections: list[Connection] | None, duration: int,
                 message_count: int):
        self._readers = readers
        self._storage = [_channel_connections(r) for r in readers]
        self.connections = connections if connections is not None else self._storage[0]
        self.duration, self.message_count = duration, message_count
        self.is_open = True
        if connections is not None:
            for i, conn in enumerate(connections):
                definition = next((c.msgdef for storage in self._storage for c in storage
                                   if c.msgtype == conn.msgtype and c.msgdef.format != MessageDefinitionFormat.NONE),
                                  None)
                if definition is not None:
                    connections[i] = conn._replace(msgdef=definition)

    def messages(self, connections: Collection[Connection], start: int | None = None, stop: int | None = None) \
            -> Iterator[tuple[Connection, int, bytes]]:
        """(connection, log time ns, CDR bytes) of the messages of ``connections`` (of :attr:`connections`) logged
        in [start, stop), storage file by storage file."""
        for reader, storage in zip(self._readers, self._storage):
            chosen = {c.id: match for c in storage
                      if (match := next((y for y in connections if y.topic == c.topic and y.msgtype == c.msgtype
                                         and y.ext == c.ext and (not y.digest or not c.digest
                                                                 or y.digest == c.digest)), None)) is not None}
            if chosen:
                for channel, log_ns, data in reader.messages(chosen, start, stop):
                    yield chosen[channel], log_ns, data

    def close(self) -> None:
        for reader in self._readers:
            reader.close()
        self.is_open = False


def open_mcap_bag(path: Path) -> McapBag | None:
    """The bag at ``path`` (a folder with metadata.yaml, or a .mcap file) open for reading; None for a bag left to
    rosbags (see the module docstring). Raises for a bag it cannot read (McapError, OSError, YAML or metadata
    errors)."""
    if path.is_file():
        if path.suffix != ".mcap":
            return None
        reader = McapReader(path)
        stats = reader.statistics
        return _bag([reader], None, stats.end_ns - stats.start_ns + 1 if stats.message_count else 0,
                    stats.message_count)
    info = yaml.load((path / "metadata.yaml").read_text(), Loader=_LOADER)["rosbag2_bagfile_information"]
    if info["storage_identifier"] != "mcap" or info["version"] > 9 \
            or (info.get("compression_mode") or "none").lower() != "none":
        return None
    topics = [x["topic_metadata"] for x in info["topics_with_message_count"]]
    if any(t["serialization_format"] != "cdr" for t in topics):
        return None
    connections = [
        Connection(i + 1, t["name"], t["type"], _NO_DEFINITION, t.get("type_description_hash", ""), x["message_count"],
                   ConnectionExtRosbag2(t["serialization_format"], _qos(t.get("offered_qos_profiles", []))), None)
        for i, (t, x) in enumerate(zip(topics, info["topics_with_message_count"]))]
    count, duration = info["message_count"], info["duration"]["nanoseconds"]
    readers: list[McapReader] = []
    try:
        for name in info["relative_file_paths"]:
            readers.append(McapReader(path / PurePath(name).name))
    except BaseException:
        for reader in readers:
            reader.close()
        raise
    return _bag(readers, connections, duration + 1 if count else 0, count)


def _bag(readers: list[McapReader], connections: list[Connection] | None, duration: int, count: int) -> McapBag:
    """An :class:`McapBag` of open readers, closed again when it cannot be made."""
    try:
        return McapBag(readers, connections, duration, count)
    except BaseException:
        for reader in readers:
            reader.close()
        raise
