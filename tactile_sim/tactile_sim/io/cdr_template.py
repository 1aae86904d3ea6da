"""Messages of a fixed layout serialised once; per step only the bytes of the changing fields are rewritten.

A :class:`CdrTemplate` holds the CDR bytes (:func:`~.msg_types.serialize_cdr`, little endian) of one message whose
sequences keep their lengths from step to step (a sensor's taxel count, grid size, joint names, filters) and the
byte range of each changing field. The ranges are found at build by serialising the message with that field set to
two patterns that differ in every byte, so they come from rosbags' serialiser itself rather than from a second
reading of the CDR alignment rules. Writing a field's new values into its range (:meth:`CdrTemplate.view`) and
taking :meth:`CdrTemplate.cdr` gives the bytes ``serialize_cdr`` gives for the message with those values.

A message taken with :meth:`CdrTemplate.wire` reads its changing fields back from its own bytes on access (a
primitive sequence as a read-only numpy view of them, a nested message rebuilt from its primitives), so taking a
message costs one copy of the bytes whatever it holds.

A changing field is named by a dotted path (``force``, ``valid``, ``header.stamp``, ``wrench``, ``force_matrix``;
``sensors[1].values`` for a field of one element of a message sequence): a primitive, a primitive sequence or
array, a nested message or a sequence of messages. Its view is a writable numpy array over the template's buffer,
one element per primitive in wire order, of the primitives' dtype (a message of mixed primitive types, e.g.
``builtin_interfaces/Time``, is a raw uint8 view of its bytes).
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
from rosbags.typesys.base import Nodetype

from .msg_types import NUMPY_DTYPES, deserialize_cdr, full_type_name, serialize_cdr, typestore
from .wire_message import WireMessage

_NO_CHANGES: Mapping[str, Any] = MappingProxyType({})
_NONE_IN_BYTES: frozenset[str] = frozenset()
"""``changes`` and ``in_bytes`` of a message whose changing fields are read back from its bytes (shared)."""

_PATTERNS = (0x11, 0x22)
"""Fill bytes of the two probe serialisations (bools: False and True); they differ in every bit pair used."""


def _scalar(base: str, fill: int) -> Any:
    """A primitive of type ``base`` whose every byte is ``fill`` (bool: ``fill`` is the first pattern → False)."""
    if base == "bool":
        return fill != _PATTERNS[0]
    if base == "string":
        raise ValueError("CdrTemplate: a string cannot change from step to step (its length fixes the layout)")
    dtype = np.dtype(NUMPY_DTYPES[base])
    return np.frombuffer(bytes([fill]) * dtype.itemsize, dtype=dtype.newbyteorder("<"))[0].item()


def _patterned(desc: tuple, value: Any, fill: int) -> tuple[Any, list[str]]:
    """``value`` (of field description ``desc``) with every primitive made of ``fill`` bytes, and the primitives'
    base types in wire order."""
    kind, arg = desc
    if kind == Nodetype.BASE:
        return _scalar(arg[0], fill), [arg[0]]
    if kind == Nodetype.NAME:
        fields, bases = {}, []
        for name, sub in typestore().fielddefs[arg][1]:
            fields[name], sub_bases = _patterned(sub, getattr(value, name), fill)
            bases += sub_bases
        return typestore().types[arg](**fields), bases
    (subkind, subarg), _ = arg
    if subkind == Nodetype.BASE:
        base = subarg[0]
        return np.full(len(value), _scalar(base, fill), dtype=NUMPY_DTYPES[base]), [base] * len(value)
    items = [_patterned((subkind, subarg), v, fill) for v in value]
    return [v for v, _ in items], [b for _, bases in items for b in bases]


Segment = str | int
"""One step of a changing field's path: a field name, or an element index of a message sequence."""


def _segments(path: str) -> list[Segment]:
    """``"sensors[1].values"`` → ``["sensors", 1, "values"]``."""
    out: list[Segment] = []
    for part in path.split("."):
        name, *indices = part.split("[")
        out.append(name)
        out += [int(index.rstrip("]")) for index in indices]
    return out


def _step(desc: tuple, value: Any, seg: Segment, msgtype: str) -> tuple[tuple, Any]:
    """(description, value) one segment below the value ``value`` of description ``desc``."""
    kind, arg = desc
    if isinstance(seg, int):
        if kind not in (Nodetype.ARRAY, Nodetype.SEQUENCE) or arg[0][0] != Nodetype.NAME \
                or not 0 <= seg < len(value):
            raise ValueError(f"CdrTemplate({msgtype}): [{seg}] is not an element of a message sequence here")
        return arg[0], value[seg]
    if kind != Nodetype.NAME:
        raise ValueError(f"CdrTemplate({msgtype}): {seg!r} is below a field that is not a message")
    fielddefs = dict(typestore().fielddefs[arg][1])
    if seg not in fielddefs:
        raise ValueError(f"CdrTemplate({arg}): no field {seg!r}; allowed: {list(fielddefs)}")
    return fielddefs[seg], getattr(value, seg)


def _replaced(desc: tuple, value: Any, path: Sequence[Segment], fill: int, msgtype: str) -> tuple[Any, list[str]]:
    """A copy of ``value`` (description ``desc``) with the field at ``path`` patterned (see :func:`_patterned`),
    and its base types."""
    if not path:
        return _patterned(desc, value, fill)
    sub_desc, sub = _step(desc, value, path[0], msgtype)
    new, bases = _replaced(sub_desc, sub, path[1:], fill, msgtype)
    return _with_leaf(value, path[:1], new), bases


_STRUCT_CODES = {"bool": "?", "byte": "B", "char": "B", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H",
                 "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q", "float32": "f", "float64": "d"}
"""ROS primitive type → its :mod:`struct` code (little endian, no padding: a changing field's bytes are packed)."""


def _rebuilt(desc: tuple, value: Any, primitives: Any) -> Any:
    """A value shaped like ``value`` (field description ``desc``: a primitive, a message or a sequence of them)
    made of the next primitives of the iterator ``primitives`` (wire order)."""
    kind, arg = desc
    if kind == Nodetype.BASE:
        return next(primitives)
    if kind == Nodetype.NAME:
        return typestore().types[arg](**{name: _rebuilt(sub, getattr(value, name), primitives)
                                         for name, sub in typestore().fielddefs[arg][1]})
    (subkind, subarg), _ = arg
    return [_rebuilt((subkind, subarg), v, primitives) for v in value]


def _leaf(msg: Any, path: Sequence[Segment]) -> tuple[tuple, Any]:
    """(field description, value) of the field at ``path`` of ``msg``."""
    desc, value = (Nodetype.NAME, msg.__msgtype__), msg
    for seg in path:
        desc, value = _step(desc, value, seg, msg.__msgtype__)
    return desc, value


def _with_leaf(value: Any, path: Sequence[Segment], leaf: Any) -> Any:
    """A copy of ``value`` (a message, or a list of messages when ``path`` starts with an index) with the field at
    ``path`` (non-empty) set to ``leaf``."""
    seg, rest = path[0], path[1:]
    if isinstance(seg, int):
        items = list(value)
        items[seg] = _with_leaf(items[seg], rest, leaf) if rest else leaf
        return items
    return dataclasses.replace(value, **{seg: _with_leaf(getattr(value, seg), rest, leaf) if rest else leaf})


class CdrTemplate:
    """The CDR bytes of ``msg`` (a rosbags message object) with writable views of the fields in ``changing``
    (dotted paths, see the module docstring); ``fields``: the field values of ``msg``. Raises ValueError for a path that is not a field, a string, or a
    field whose bytes are not one contiguous range."""

    def __init__(self, msg: Any, changing: Sequence[str]):
        self.message_class = type(msg)
        self.msgtype = full_type_name(msg.__msgtype__)
        self.fields = {f.name: getattr(msg, f.name) for f in dataclasses.fields(msg)}
        self.buffer = memoryview(bytearray(serialize_cdr(msg)))
        """The bytes (a writable memoryview: of the template's own bytearray, or of the memory of :meth:`move_to`)."""
        if self.buffer[:2] != b"\x00\x01":
            raise ValueError(f"CdrTemplate({self.msgtype}): expected little-endian CDR, got header "
                             f"{bytes(self.buffer[:4])!r}")
        self._views: dict[str, np.ndarray] = {}
        self._spans: dict[str, slice] = {}
        leaves: dict[str, list[tuple[list[Segment], Callable[[bytes], Any]]]] = {}
        for path in changing:
            bases = self._locate(msg, path)
            names = _segments(path)
            leaves.setdefault(names[0], []).append((names[1:], self._leaf_reader(msg, path, bases)))
        self._readers = {name: self._field_reader(name, paths) for name, paths in leaves.items()}

    def _locate(self, msg: Any, path: str) -> list[str]:
        """Find the byte range of ``path`` (:meth:`span`, :meth:`view`); returns its primitives' base types."""
        top = (Nodetype.NAME, msg.__msgtype__)
        first, bases = _replaced(top, msg, _segments(path), _PATTERNS[0], self.msgtype)
        second, _ = _replaced(top, msg, _segments(path), _PATTERNS[1], self.msgtype)
        a = np.frombuffer(serialize_cdr(first), np.uint8)
        b = np.frombuffer(serialize_cdr(second), np.uint8)
        where = f"CdrTemplate({self.msgtype}).{path}"
        if a.size != len(self.buffer) or b.size != a.size:
            raise ValueError(f"{where}: changing the values changed the message size")
        dtypes = {np.dtype(NUMPY_DTYPES[base]) for base in bases}
        size = sum(np.dtype(NUMPY_DTYPES[base]).itemsize for base in bases)
        diff = np.flatnonzero(a != b)
        start = int(diff[0]) if diff.size else 0
        if diff.size != size or (size and int(diff[-1]) - start + 1 != size):
            raise ValueError(f"{where}: its {len(bases)} values are not one contiguous byte range of {size} bytes "
                             f"(found {diff.size} changed bytes)")
        self._spans[path] = slice(start, start + size)
        dtype, count = (dtypes.pop().newbyteorder("<"), len(bases)) if len(dtypes) == 1 else (np.dtype(np.uint8), size)
        self._views[path] = np.frombuffer(self.buffer, dtype, count=count, offset=start)
        return bases

    def move_to(self, memory: memoryview) -> None:
        """Keep the bytes in ``memory`` (writable, exactly the template's size; e.g. a slice of one buffer shared
        by several templates) from now on: :attr:`buffer` and the views refer to it."""
        if memory.nbytes != len(self.buffer) or memory.readonly:
            raise ValueError(f"CdrTemplate({self.msgtype}).move_to: need {len(self.buffer)} writable bytes, got "
                             f"{memory.nbytes} (readonly={memory.readonly})")
        memory[:] = self.buffer
        self.buffer = memory
        self._views = {path: np.frombuffer(memory, v.dtype, count=v.size, offset=self._spans[path].start)
                       for path, v in self._views.items()}

    def _leaf_reader(self, msg: Any, path: str, bases: list[str]) -> Callable[[bytes], Any]:
        """cdr bytes → the value of the changing field at ``path`` in them (a primitive sequence or array: a
        read-only numpy view; a primitive: its Python value; a message or a message sequence: rebuilt)."""
        desc, value = _leaf(msg, _segments(path))
        start = self._spans[path].start
        kind, arg = desc
        if kind not in (Nodetype.BASE, Nodetype.NAME) and arg[0][0] == Nodetype.BASE:
            dtype, count = np.dtype(NUMPY_DTYPES[arg[0][1][0]]).newbyteorder("<"), len(bases)
            return lambda cdr: np.frombuffer(cdr, dtype, count=count, offset=start)
        unpack = struct.Struct("<" + "".join(_STRUCT_CODES[b] for b in bases)).unpack_from
        if kind == Nodetype.BASE:
            return lambda cdr: unpack(cdr, start)[0]
        return lambda cdr: _rebuilt(desc, value, iter(unpack(cdr, start)))

    def _field_reader(self, name: str, leaves: list[tuple[list[Segment], Callable[[bytes], Any]]]) \
            -> Callable[[bytes], Any]:
        """cdr bytes → the top-level field ``name`` (the template's value with its changing leaves read back)."""
        if len(leaves) == 1 and not leaves[0][0]:
            return leaves[0][1]
        base = self.fields[name]

        def read(cdr: bytes) -> Any:
            value = base
            for path, leaf in leaves:
                value = _with_leaf(value, path, leaf(cdr)) if path else leaf(cdr)
            return value
        return read

    def view(self, path: str) -> np.ndarray:
        """Writable view of a changing field's values in the buffer (see the module docstring)."""
        return self._views[path]

    def changes(self, path: str) -> bool:
        """Whether ``path`` is one of the template's changing fields."""
        return path in self._spans

    def span(self, path: str) -> slice:
        """Byte range of a changing field in :attr:`buffer` (for assigning packed bytes directly)."""
        return self._spans[path]

    def cdr(self) -> bytes:
        """A copy of the current bytes."""
        return self.buffer.tobytes()

    def wire(self, changes: dict[str, Any] | None = None, in_bytes: frozenset[str] = frozenset()) -> WireMessage:
        """A :class:`WireMessage` of the current bytes. Without ``changes`` its changing fields are read back from
        its bytes on access (see the module docstring); else the template message's fields updated by
        ``changes`` (the values just written), ``in_bytes`` naming changed fields whose values are left in the
        bytes only (the message is deserialised for them)."""
        if changes is None:  # positional arguments: this is taken once per message and update
            return WireMessage(self.message_class, self.buffer.tobytes(), self.fields, _NO_CHANGES, _NONE_IN_BYTES,
                               None, self._readers)
        return WireMessage(self.message_class, self.buffer.tobytes(), self.fields, changes, in_bytes,
                           self._deserialize)

    def _deserialize(self, data: bytes) -> Any:
        return deserialize_cdr(data, self.msgtype)
