"""Message types without ROS: a rosbags typestore of ROS 2 Jazzy plus the types of ``tactile_sim_msgs/msg/*.msg``
and the vendor message definitions the output profiles publish (``data/vendor_msg/<package>/msg/*.msg``).

The ``.msg`` files are the single source of truth for our message layouts; they are parsed at run time. They are
found in the source tree (``<repo>/tactile_sim_msgs/msg``) and, for a pip installation, as package data
(``tactile_sim/data/msg``, byte-identical copies guarded by a test).

Type names are accepted in the full form ``pkg/msg/Type`` and in the short form ``pkg/Type``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import rosbags.typesys.msg
import rosbags.typesys.stores
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.base import Nodetype
from rosbags.typesys.store import Typestore

from ..errors import closest_names
from .typestore_cache import Definitions, cached_definitions, lazy_typestore
from .wire_message import WireMessage

MSG_PACKAGE = "tactile_sim_msgs"
"""ROS package that owns our message definitions."""

SOURCE_MSG_DIR = Path(__file__).resolve().parents[3] / MSG_PACKAGE / "msg"
"""The ``.msg`` files in a source checkout (absent in a pip installation)."""

SHIPPED_MSG_DIR = Path(__file__).resolve().parents[1] / "data" / "msg"
"""Copies of the ``.msg`` files shipped as package data."""

VENDOR_MSG_DIR = Path(__file__).resolve().parents[1] / "data" / "vendor_msg"
"""Our copies of vendor message definitions, ``<package>/msg/<Type>.msg`` (sources: ``SOURCES.md`` there)."""

NUMPY_DTYPES = {
    "bool": np.bool_,
    "byte": np.uint8,
    "char": np.uint8,
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "uint16": np.uint16,
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint64": np.uint64,
    "float32": np.float32,
    "float64": np.float64,
}
"""ROS primitive type → numpy dtype of its values."""


def msg_dir() -> Path:
    """Folder of our ``.msg`` files: the source tree when present, else the shipped package data."""
    for folder in (SOURCE_MSG_DIR, SHIPPED_MSG_DIR):
        if folder.is_dir() and any(folder.glob("*.msg")):
            return folder
    raise FileNotFoundError(
        f"tactile_sim.io.msg_types: no .msg files found; looked in {SOURCE_MSG_DIR} (source tree) and "
        f"{SHIPPED_MSG_DIR} (package data); reinstall tactile_sim or run from a checkout"
    )


def own_type_names() -> tuple[str, ...]:
    """Full names (``tactile_sim_msgs/msg/X``) of our message types, sorted."""
    return tuple(sorted(f"{MSG_PACKAGE}/msg/{path.stem}" for path in msg_dir().glob("*.msg")))


def register_own_types(store: Typestore) -> None:
    """Parse our ``.msg`` files and register the types in ``store`` (which must know std_msgs/geometry_msgs)."""
    types: dict[str, Any] = {}
    for path in sorted(msg_dir().glob("*.msg")):
        types.update(get_types_from_msg(path.read_text(encoding="utf-8"), f"{MSG_PACKAGE}/msg/{path.stem}"))
    store.register(types)


def vendor_type_names() -> tuple[str, ...]:
    """Full names (``pkg/msg/X``) of the vendor types in :data:`VENDOR_MSG_DIR`, sorted."""
    return tuple(sorted(f"{path.parents[1].name}/msg/{path.stem}" for path in VENDOR_MSG_DIR.glob("*/msg/*.msg")))


def register_vendor_types(store: Typestore) -> None:
    """Parse the vendor ``.msg`` files and register their types in ``store`` (which must know the standard
    types)."""
    types: dict[str, Any] = {}
    for name in vendor_type_names():
        pkg, _, stem = name.split("/")
        path = VENDOR_MSG_DIR / pkg / "msg" / f"{stem}.msg"
        types.update(get_types_from_msg(path.read_text(encoding="utf-8"), name))
    store.register(types)


def full_typestore() -> Typestore:
    """A typestore built with every ROS 2 Jazzy standard type (rosbags' classes) plus ours and the vendor types."""
    store = get_typestore(Stores.ROS2_JAZZY)
    register_own_types(store)
    register_vendor_types(store)
    return store


def definition_sources() -> list[bytes | str]:
    """What the definitions of :func:`full_typestore` come from: rosbags' store modules and ``.msg`` parser, this
    module, and our and the vendor ``.msg`` files (each name and its bytes)."""
    code = sorted(Path(rosbags.typesys.stores.__file__).parent.glob("*.py")) + \
        [Path(rosbags.typesys.msg.__file__), Path(__file__)]
    messages = sorted(msg_dir().glob("*.msg")) + sorted(VENDOR_MSG_DIR.glob("*/msg/*.msg"))
    return [path.read_bytes() for path in code] + \
        [part for path in messages for part in (f"{path.parents[1].name}/{path.name}", path.read_bytes())]


def _full_definitions() -> Definitions:
    return dict(full_typestore().fielddefs)


@cache
def typestore() -> Typestore:
    """The shared typestore: the definitions of :func:`full_typestore` (cached on disk) with each class made on its
    first lookup in ``types[...]`` (:mod:`.typestore_cache`; the same bytes, definitions and hashes). Do not register
    more types in it."""
    return lazy_typestore(cached_definitions(_full_definitions, definition_sources()), __name__)


def __getattr__(name: str) -> type:
    """``pkg__msg__Type`` → the shared typestore's class of ``pkg/msg/Type`` (its ``__module__`` is this module: how
    pickle finds it)."""
    typename = name.replace("__", "/")
    if "__msg__" not in name or name.startswith("_") or typename not in typestore().fielddefs:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return typestore().types[typename]


def full_type_name(typename: str) -> str:
    """``pkg/Type`` → ``pkg/msg/Type``; a full name is returned unchanged."""
    parts = typename.split("/")
    if len(parts) == 2:
        return f"{parts[0]}/msg/{parts[1]}"
    return typename


def _known(typename: str) -> str:
    name = full_type_name(typename)
    if name not in typestore().fielddefs:
        close = closest_names(name, typestore().fielddefs, cutoff=0.6)
        raise ValueError(f"message type {typename!r} is unknown; closest known types: {close}")
    return name


def message_class(typename: str) -> type:
    """The message class (a dataclass) of ``typename``."""
    return typestore().types[_known(typename)]


def _default_value(desc: tuple) -> Any:
    """Default of one field description (rosbags parse tree): zeros, empty strings/sequences, nested defaults."""
    kind, arg = desc
    if kind == Nodetype.BASE:
        base = arg[0]
        return "" if base == "string" else False if base == "bool" else 0.0 if base.startswith("float") else 0
    if kind == Nodetype.NAME:
        return new_message(arg)
    (subkind, subarg), length = arg
    count = length if kind == Nodetype.ARRAY else 0
    if subkind == Nodetype.BASE and subarg[0] != "string":
        return np.zeros(count, dtype=NUMPY_DTYPES[subarg[0]])
    return [_default_value((subkind, subarg)) for _ in range(count)]


@cache
def _field_descriptions(name: str) -> tuple[tuple[str, tuple], ...]:
    """(field, description) pairs of a known full type name, in message order."""
    return tuple(typestore().fielddefs[name][1])


def new_message(typename: str, **fields: Any) -> Any:
    """A message of ``typename`` with the given fields; every other field gets its default (0, "", empty, nested).

    Primitive sequences are numpy arrays of the field's dtype, string sequences and message sequences lists.
    Given values are coerced: primitive sequences (arrays or lists) to arrays of the field's dtype, float32
    scalars rounded to float32, so that the object holds exactly what goes on the wire.
    """
    name = _known(typename)
    fielddefs = _field_descriptions(name)
    if not fields.keys() <= dict(fielddefs).keys():
        unknown = sorted(set(fields) - dict(fielddefs).keys())
        allowed = [field for field, _ in fielddefs]
        raise ValueError(f"new_message({typename!r}): unknown fields {unknown}; allowed: {allowed}")
    for field, desc in fielddefs:
        if field not in fields:
            fields[field] = _default_value(desc)
        else:
            fields[field] = _coerce(desc, fields[field])
    return typestore().types[name](**fields)


def _coerce(desc: tuple, value: Any) -> Any:
    """``value`` in the representation rosbags serialises for the field ``desc`` (see :func:`new_message`)."""
    kind, arg = desc
    if kind == Nodetype.BASE:
        return float(np.float32(value)) if arg[0] == "float32" else value
    if kind in (Nodetype.ARRAY, Nodetype.SEQUENCE) and arg[0][0] == Nodetype.BASE and arg[0][1][0] != "string":
        return np.asarray(value, dtype=NUMPY_DTYPES[arg[0][1][0]])
    return value


def serialize_cdr(msg: Any, typename: str | None = None) -> bytes:
    """CDR bytes (little endian, with the 4-byte encapsulation header) of ``msg`` (a message object, or a
    :class:`~.wire_message.WireMessage`, whose bytes are returned as they are); typename defaults to its own."""
    if isinstance(msg, WireMessage):
        if typename is not None and typename != msg.__msgtype__ and full_type_name(typename) != msg.__msgtype__:
            raise ValueError(f"serialize_cdr: a {msg.__msgtype__} message cannot be serialised as {typename}")
        return msg.cdr
    name = _known(typename or msg.__msgtype__)
    return bytes(typestore().serialize_cdr(msg, name))


def deserialize_cdr(data: bytes | memoryview, typename: str) -> Any:
    """Message object of ``typename`` from CDR bytes (as produced by :func:`serialize_cdr` or rclpy)."""
    return typestore().deserialize_cdr(data, _known(typename))


@cache
def message_definition(typename: str) -> str:
    """ROS 2 ``.msg`` definition text of ``typename`` with its dependencies appended (rosbag2/MCAP ``ros2msg``)."""
    return typestore().generate_msgdef(_known(typename), ros_version=2)[0]


@cache
def type_hash(typename: str) -> str:
    """RIHS01 type-description hash of ``typename`` (``RIHS01_`` + 64 hex digits), as rosidl computes it: the value
    ROS 2 peers expect in an endpoint's USER_DATA and bag metadata records.

    rosbags' own :meth:`hash_rihs01` describes a ``char`` field as FIELD_TYPE_CHAR, but rosidl turns ``.msg`` ``char``
    into IDL ``uint8`` before hashing, so the two differ for types with ``char`` fields (``rmw_dds_common/msg/Gid``,
    hence ``ParticipantEntitiesInfo``; ``std_msgs/Char``). The definitions are hashed with ``char`` as ``uint8``
    (checked against the hashes a ROS 2 build generates)."""
    return _ros_type_hash(full_type_name(typename))


def _char_as_uint8(desc: tuple) -> tuple:
    kind, arg = desc
    if kind == Nodetype.BASE:
        return (kind, ("uint8", 0)) if arg[0] == "char" else desc
    if kind in (Nodetype.ARRAY, Nodetype.SEQUENCE):
        return (kind, (_char_as_uint8(arg[0]), arg[1]))
    return desc


def _closure(name: str, seen: dict[str, tuple]) -> dict[str, tuple]:
    """``name`` and every type it nests, with their rosbags definitions, ``char`` fields made ``uint8``."""
    consts, fields = typestore().fielddefs[name]
    seen[name] = (consts, [(f, _char_as_uint8(d)) for f, d in fields])
    for _, (kind, arg) in fields:
        nested = arg if kind == Nodetype.NAME else arg[0][1] if kind != Nodetype.BASE and arg[0][0] == Nodetype.NAME \
            else None
        if nested is not None and nested not in seen:
            _closure(nested, seen)
    return seen


@cache
def _ros_type_hash(name: str) -> str:
    message_class(name)  # ValueError naming close matches for an unknown type
    store = get_typestore(Stores.EMPTY)
    store.register(_closure(name, {}))
    return store.hash_rihs01(name)
