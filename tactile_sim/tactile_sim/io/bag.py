"""rosbag2 bags without ROS (rosbags): write MCAP or sqlite3 bags with embedded message definitions, read any
rosbag2 bag back as message objects, one message at a time.

Written bags carry, per topic, the ``ros2msg`` definition and the RIHS01 hash of its type (ours included), so
Foxglove and ``ros2 bag play`` / ``ros2 bag info`` open them. Reading builds the types from the definitions
stored in the bag (falling back to the standard Jazzy + tactile_sim_msgs types where a bag stores none).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Iterator, Sequence
from functools import cache, lru_cache
from pathlib import Path
from types import TracebackType
from typing import Any

from rosbags.interfaces import (
    MessageDefinitionFormat,
    Qos,
    QosDurability,
    QosHistory,
    QosLiveliness,
    QosReliability,
    QosTime,
)
import yaml
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.rosbag2.metadata import dump_qos_v9
from rosbags.typesys import Stores, TypesysError, get_types_from_idl, get_types_from_msg, get_typestore
from rosbags.typesys.base import Nodetype
from rosbags.typesys.store import Typestore

from .input_cdr import JOINT_STATE, TF_MESSAGE, JointStateDecoder, TFMessageDecoder
from .mcap_bag import McapBag, open_mcap_bag
from .mcap_file import McapFile
from .msg_types import full_type_name, message_definition, serialize_cdr, type_hash, typestore

STORAGES = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
"""Storage names accepted by :class:`BagWriter` → rosbags plugin."""

_UNSPECIFIED = QosTime(0, 0)
LIBRARY = "tactile_sim"
"""Writer name recorded in MCAP files."""
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def qos_profile(*, reliable: bool = True, transient_local: bool = False, depth: int = 10) -> Qos:
    """An offered QoS profile to record with a topic (KEEP_LAST ``depth``; deadlines/lifespans unspecified).

    transient_local=True is the "latched" profile (``/robot_description``, ``/tf_static``) that ``ros2 bag play``
    re-offers to late subscribers.
    """
    return Qos(
        history=QosHistory.KEEP_LAST,
        depth=depth,
        reliability=QosReliability.RELIABLE if reliable else QosReliability.BEST_EFFORT,
        durability=QosDurability.TRANSIENT_LOCAL if transient_local else QosDurability.VOLATILE,
        deadline=_UNSPECIFIED,
        lifespan=_UNSPECIFIED,
        liveliness=QosLiveliness.AUTOMATIC,
        liveliness_lease_duration=_UNSPECIFIED,
        avoid_ros_namespace_conventions=False,
    )


class BagWriter:
    """Write one rosbag2 bag (a new directory at ``path``) in ``storage`` "mcap" (default) or "sqlite3".

    MCAP bags are written by :class:`~.mcap_file.McapFile` (a message costs a few µs), sqlite3 bags by rosbags.
    Use as a context manager, or call :meth:`close`; the bag is complete (metadata.yaml written) only after close.
    """

    def __init__(self, path: str | Path, storage: str = "mcap") -> None:
        if storage not in STORAGES:
            raise ValueError(f"BagWriter({str(path)!r}).storage: got {storage!r}; allowed: {sorted(STORAGES)}")
        self.path = Path(path)
        self.storage = storage
        self._topics: dict[str, tuple[str, Any]] = {}
        """topic → (message type, MCAP channel id or rosbags connection)"""
        self._schemas: dict[str, int] = {}
        self._qos: dict[str, Qos] = {}
        self._counts: dict[str, int] = {}
        if storage == "mcap":
            self.path.mkdir(parents=True)
            try:
                self._mcap: McapFile | None = McapFile(self.path / f"{self.path.name}.mcap", library=LIBRARY)
            except OSError:  # e.g. a file name one past the file system's limit: no empty bag folder left behind
                self.path.rmdir()
                raise
            self._writer = None
        else:
            self._mcap = None
            self._writer = Writer(self.path, version=Writer.VERSION_LATEST, storage_plugin=STORAGES[storage])
            self._writer.open()

    def add_topic(self, name: str, typename: str, qos: Qos | None = None) -> None:
        """Declare topic ``name`` of message type ``typename`` (``pkg/msg/Type`` or ``pkg/Type``), offered with
        ``qos`` (default: :func:`qos_profile` defaults). The type's definition and hash are stored in the bag."""
        if name in self._topics:
            raise ValueError(f"BagWriter({str(self.path)!r}).add_topic: topic {name!r} was already added")
        typename = full_type_name(typename)
        qos = qos or qos_profile()
        if self._mcap is not None:
            if typename not in self._schemas:
                self._schemas[typename] = self._mcap.add_schema(typename, "ros2msg", message_definition(typename))
            channel = self._mcap.add_channel(name, self._schemas[typename], "cdr",
                                             {"offered_qos_profiles": _qos_yaml(qos)})
        else:
            channel = self._writer.add_connection(name, typename, msgdef=message_definition(typename),
                                                  rihs01=type_hash(typename), offered_qos_profiles=[qos])
        self._topics[name] = (typename, channel)
        self._qos[name] = qos
        self._counts[name] = 0

    def write(self, topic: str, stamp_ns: int, msg: Any) -> None:
        """Append ``msg`` (a message object of the topic's type, or a
        :class:`~.wire_message.WireMessage`) to ``topic`` with receive time ``stamp_ns`` (ns)."""
        self.write_all(stamp_ns, ((topic, msg),))

    def write_all(self, stamp_ns: int, items: Sequence[tuple[str, Any]]) -> None:
        """Append (topic, message) items, in order, that share the receive time ``stamp_ns`` (ns): what a node
        publishes on one update. Raises ValueError (nothing of ``items`` written) for an undeclared topic or a
        message of another type than its topic's."""
        topics = self._topics
        records = []
        for topic, msg in items:
            entry = topics.get(topic)
            if entry is None:
                raise ValueError(
                    f"BagWriter({str(self.path)!r}).write: unknown topic {topic!r}; "
                    f"added topics: {sorted(self._topics)}"
                )
            msgtype, channel = entry
            if msg.__msgtype__ != msgtype:
                raise ValueError(
                    f"BagWriter({str(self.path)!r}).write: topic {topic!r} has type {msgtype}; got a "
                    f"{msg.__msgtype__}"
                )
            records.append((channel, serialize_cdr(msg, msgtype)))
        if not records:
            return
        stamp_ns = int(stamp_ns)
        if self._mcap is not None:
            self._mcap.write_all(stamp_ns, records)
        else:
            for channel, data in records:
                self._writer.write(channel, stamp_ns, data)
            for topic, _ in items:
                self._counts[topic] += 1

    def channel(self, topic: str, typename: str) -> int:
        """The MCAP channel id of ``topic`` (added, of message type ``typename``), for :meth:`write_records`;
        ValueError for a topic not added, of another type, or a bag of another storage."""
        entry = self._topics.get(topic)
        if self._mcap is None or entry is None or entry[0] != full_type_name(typename):
            raise ValueError(f"BagWriter({str(self.path)!r}).channel: {topic!r} ({typename}) is not an added topic of "
                             f"that type of an MCAP bag; added: {sorted(self._topics)}")
        return entry[1]

    def write_records(self, stamp_ns: int, records: Any, channels: Sequence[int], offsets: Sequence[int]) -> None:
        """Append MCAP message records laid out back to back in ``records`` (bytes, or a contiguous uint8 array) at
        receive time ``stamp_ns`` (ns), of the channels ``channels`` (:meth:`channel`) at ``offsets`` in it
        (:meth:`~.mcap_file.McapFile.write_records`): what :meth:`write_all` writes for their messages."""
        if not channels:
            return
        self._mcap.write_records(stamp_ns, records, channels, offsets)

    @property
    def mcap_file(self) -> McapFile | None:
        """The MCAP file being written (None for another storage or once closed)."""
        return self._mcap

    @property
    def counts(self) -> dict[str, int]:
        """Messages written per topic (every added topic)."""
        if self._mcap is None:
            return dict(self._counts)
        per_channel = self._mcap.counts
        return {topic: per_channel[channel] for topic, (_, channel) in self._topics.items()}

    def close(self) -> None:
        """Finish the bag (writes metadata.yaml). Further calls do nothing."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._mcap is not None:
            self._counts = self.counts
            info = self._metadata_text()
            self._mcap.close("rosbag2", {"serialized_metadata": info.strip()})
            self._mcap = None
            text = "rosbag2_bagfile_information:\n" + textwrap.indent(info, "  ")
            (self.path / "metadata.yaml").write_text(text, "utf8")

    def _metadata_text(self) -> str:
        """:func:`_yaml` of :meth:`_metadata`, each topic's ``offered_qos_profiles`` (most of the text; the same in
        every bag a node writes) taken from :func:`_qos_yaml` instead of emitted again: the metadata is emitted with
        a placeholder scalar there, replaced by that text indented as the placeholder's key (PyYAML writes a block
        sequence under a mapping key at the key's indentation; QoS values hold no space, so no line is folded)."""
        slots = {topic: f"qos_slot_{i}" for i, topic in enumerate(self._topics)}
        text = _yaml(self._metadata(slots))
        for topic, slot in slots.items():
            text = text.replace(f"    offered_qos_profiles: {slot}\n", _qos_block(self._qos[topic]), 1)
        return text

    def _metadata(self, qos_profiles: dict[str, str] | None = None) -> dict[str, Any]:
        """The ``rosbag2_bagfile_information`` of metadata.yaml (version 9) of an MCAP bag (``qos_profiles``: topic →
        the value to give its ``offered_qos_profiles`` instead of its profiles)."""
        counts = self.counts
        count = sum(counts.values())
        first, last = self._mcap.time_range
        start = first if count else 0
        duration = last - start if count else 0
        name = f"{self.path.name}.mcap"
        return {
            "version": Writer.VERSION_LATEST,
            "storage_identifier": "mcap",
            "relative_file_paths": [name],
            "duration": {"nanoseconds": duration},
            "starting_time": {"nanoseconds_since_epoch": start},
            "message_count": count,
            "topics_with_message_count": [
                {"topic_metadata": {"name": topic, "type": msgtype, "serialization_format": "cdr",
                                    "offered_qos_profiles": dump_qos_v9([self._qos[topic]]) if qos_profiles is None
                                    else qos_profiles[topic],
                                    "type_description_hash": type_hash(msgtype)},
                 "message_count": counts[topic]}
                for topic, (msgtype, _) in self._topics.items()
            ],
            "compression_format": "",
            "compression_mode": "",
            "files": [{"path": name, "starting_time": {"nanoseconds_since_epoch": start},
                       "duration": {"nanoseconds": duration}, "message_count": count}],
            "custom_data": None,
            "ros_distro": "jazzy",
        }

    def __enter__(self) -> BagWriter:
        return self

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


@cache
def _qos_yaml(qos: Qos) -> str:
    """The ``offered_qos_profiles`` text of a topic offered with ``qos`` (rosbag2 metadata version 9)."""
    return _yaml(dump_qos_v9([qos])).strip()


@cache
def _qos_block(qos: Qos) -> str:
    """The lines of a topic's ``offered_qos_profiles`` key and its :func:`_qos_yaml` in metadata.yaml's topic entries
    (key indented by 4 spaces, as :meth:`BagWriter._metadata_text` emits them)."""
    return "    offered_qos_profiles:\n" + textwrap.indent(_qos_yaml(qos), "    ") + "\n"


def _yaml(data: Any) -> str:
    """Block-style YAML of plain data (libyaml's emitter when PyYAML has it): the text of ``yaml.dump(data,
    default_flow_style=False, sort_keys=False, allow_unicode=True)``, from nodes built directly (:func:`_node`)
    instead of by PyYAML's representer (the metadata of the 11-topic demo output: 1.33 -> 0.93 ms)."""
    return yaml.serialize(_node(data), Dumper=_DUMPER, allow_unicode=True)


def _node(data: Any) -> yaml.Node:
    """The node PyYAML's safe representer makes of ``data`` (dicts, lists, str, bool, int, None) in block style;
    TypeError for other values. No node is shared (a shared node would be written as an anchor and alias)."""
    if isinstance(data, dict):
        return yaml.MappingNode(_TAGS[dict], [(_node(k), _node(v)) for k, v in data.items()], flow_style=False)
    if isinstance(data, list):
        return yaml.SequenceNode(_TAGS[list], [_node(v) for v in data], flow_style=False)
    kind = type(data)
    if kind is str:
        return yaml.ScalarNode(_TAGS[str], data)
    if kind is bool:
        return yaml.ScalarNode(_TAGS[bool], "true" if data else "false")
    if kind is int:
        return yaml.ScalarNode(_TAGS[int], str(data))
    if data is None:
        return yaml.ScalarNode(_TAGS[None], "null")
    raise TypeError(f"metadata YAML: a {kind.__name__} value ({data!r}); allowed: dict, list, str, bool, int, None")


_TAGS = {dict: "tag:yaml.org,2002:map", list: "tag:yaml.org,2002:seq", str: "tag:yaml.org,2002:str",
         bool: "tag:yaml.org,2002:bool", int: "tag:yaml.org,2002:int", None: "tag:yaml.org,2002:null"}


def _dependencies(store: Typestore, typename: str, found: dict[str, Any]) -> dict[str, Any]:
    """``typename`` and every type it nests, as a rosbags types dict (for registering in another store)."""
    if typename not in found:
        found[typename] = store.fielddefs[typename]
        for _, (kind, arg) in store.fielddefs[typename][1]:
            if kind in (Nodetype.ARRAY, Nodetype.SEQUENCE):
                kind, arg = arg[0]
            if kind == Nodetype.NAME:
                _dependencies(store, arg, found)
    return found


def _open_storage(path: Path) -> McapBag | Reader:
    """The bag at ``path`` open with :func:`~.mcap_bag.open_mcap_bag` where it takes it, else with rosbags."""
    try:
        bag = open_mcap_bag(path) if path.exists() else None
    except Exception:  # noqa: BLE001 - rosbags, the reference reader, decides what a bag it cannot open is
        bag = None
    if bag is None:
        reader = Reader(path)
        reader.open()
        return reader
    return bag


@lru_cache(maxsize=16)
def _typestore_of(definitions: tuple[tuple[str, str, MessageDefinitionFormat, str], ...]) -> Typestore:
    """A fresh typestore (shared by the bags that store the same definitions: it is only read) with the types of
    (topic, type, definition format, definition text) connections, from those definitions (a definition identical
    to the library's text is taken from the library's store, without parsing it again). ValueError naming the topic
    for a type without definition or definitions that conflict."""
    store = get_typestore(Stores.EMPTY)
    for topic, msgtype, form, data in definitions:
        known = msgtype in typestore().fielddefs
        try:
            if known and form == MessageDefinitionFormat.MSG and data == message_definition(msgtype):
                types = _dependencies(typestore(), msgtype, {})
            elif form == MessageDefinitionFormat.MSG and data:
                types = get_types_from_msg(data, msgtype)
            elif form == MessageDefinitionFormat.IDL and data:
                types = get_types_from_idl(data)
            elif known:
                types = _dependencies(typestore(), msgtype, {})
            else:
                raise ValueError(f"topic {topic!r} of type {msgtype} has no stored message definition and the type "
                                 "is neither a ROS 2 Jazzy nor a tactile_sim_msgs type")
            store.register(types)
        except TypesysError as err:
            raise ValueError(f"the definitions stored for topic {topic!r} ({msgtype}) conflict with another "
                             f"topic's: {err}") from err
    return store


class BagReader:
    """Read a rosbag2 bag (directory, or a single .mcap/.db3 file) as (topic, stamp_ns, message) tuples.

    Joint states and TF messages (of the standard definitions) come from :mod:`.input_cdr` as
    :class:`~.wire_message.WireMessage` s, every other message from rosbags' deserialiser. :meth:`raw_messages`
    gives the CDR bytes instead, for a reader that decodes blocks of them (:attr:`decoders`, :meth:`decode`).
    Messages are deserialised one at a time while iterating (memory stays bounded by one message and the storage
    plugin's chunk), in receive-time order. MCAP bags are read by :mod:`.mcap_bag`; sqlite3 bags, and any bag it
    leaves or fails to open, by rosbags (which then reads it, or raises the error it always gave).
    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._reader = _open_storage(self.path)
        try:
            self.typestore = self._types_from_bag()
        except BaseException:
            self._reader.close()
            raise
        self.decoders: dict[str, JointStateDecoder | TFMessageDecoder] = {
            name: decoder() for name, decoder in ((JOINT_STATE, JointStateDecoder), (TF_MESSAGE, TFMessageDecoder))
            if self._standard(name)}
        """Message type → the :mod:`.input_cdr` decoder of its bytes (types the bag defines as the library does)."""

    def _standard(self, typename: str) -> bool:
        """True when the bag defines ``typename`` and the types it nests exactly as the library does."""
        if typename not in self.typestore.fielddefs:
            return False
        ours = _dependencies(typestore(), typename, {})
        return all(self.typestore.fielddefs.get(name) == definition for name, definition in ours.items())

    def _types_from_bag(self) -> Typestore:
        """The typestore of the definitions the bag's connections store (see :func:`_typestore_of`)."""
        try:
            return _typestore_of(tuple((c.topic, c.msgtype, c.msgdef.format, c.msgdef.data)
                                       for c in self._reader.connections))
        except ValueError as err:
            raise ValueError(f"BagReader({str(self.path)!r}): {err}") from err.__cause__

    @property
    def topics(self) -> dict[str, str]:
        """Topic name → message type (``pkg/msg/Type``)."""
        return {c.topic: c.msgtype for c in self._reader.connections}

    @property
    def message_count(self) -> int:
        return self._reader.message_count

    @property
    def duration_ns(self) -> int:
        """Receive time from the earliest to the latest message, ns (0 for an empty bag)."""
        return self._reader.duration if self._reader.message_count else 0

    def messages(
        self, topics: Iterable[str] | None = None, start_ns: int | None = None, stop_ns: int | None = None
    ) -> Iterator[tuple[str, int, Any]]:
        """Yield (topic, stamp_ns, message) in time order, only for ``topics`` (default all), with
        start_ns ≤ stamp_ns < stop_ns where given."""
        decode = self.decode
        for connection, stamp_ns, data in self._stored(topics, start_ns, stop_ns):
            yield connection.topic, stamp_ns, decode(connection.msgtype, data)

    def raw_messages(
        self, topics: Iterable[str] | None = None, start_ns: int | None = None, stop_ns: int | None = None
    ) -> Iterator[tuple[str, str, int, bytes]]:
        """(topic, message type, stamp_ns, CDR bytes) of the messages :meth:`messages` yields, in its order."""
        for connection, stamp_ns, data in self._stored(topics, start_ns, stop_ns):
            yield connection.topic, connection.msgtype, stamp_ns, data

    def decode(self, msgtype: str, data: bytes) -> Any:
        """The message of type ``msgtype`` in CDR bytes ``data``, as :meth:`messages` yields it."""
        decoder = self.decoders.get(msgtype)
        msg = None if decoder is None else decoder.decode(data)
        return self.typestore.deserialize_cdr(data, msgtype) if msg is None else msg

    def _stored(self, topics: Iterable[str] | None, start_ns: int | None,
                stop_ns: int | None) -> Iterator[tuple[Any, int, bytes]]:
        """(connection, stamp_ns, CDR bytes) of the storage's messages of ``topics`` (all: None) in
        [start_ns, stop_ns); ValueError naming topics the bag does not have."""
        connections = self._reader.connections
        if topics is not None:
            wanted = set(topics)
            missing = wanted - set(self.topics)
            if missing:
                raise ValueError(
                    f"BagReader({str(self.path)!r}).messages: topics {sorted(missing)} are not in the bag; "
                    f"allowed: {sorted(self.topics)}"
                )
            connections = [c for c in connections if c.topic in wanted]
            if not connections:
                return iter(())
        return self._reader.messages(connections, start=start_ns, stop=stop_ns)

    def __iter__(self) -> Iterator[tuple[str, int, Any]]:
        return self.messages()

    def close(self) -> None:
        if self._reader.is_open:
            self._reader.close()

    def __enter__(self) -> BagReader:
        return self

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
