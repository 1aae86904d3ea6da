"""Messages of a fixed layout serialised once; per step only the bytes of the changing fields are rewritten.

A :class:`CdrTemplate` holds the CDR bytes (:func:`~.msg_types.serialize_cdr`, little endian) of one message whose
sequences keep their lengths from step to step (a sensor's taxel count, grid size, joint names, filters) and the
byte range of each changing field. The ranges are found at build by serialising the message with that field set to
two patterns that differ in every byte, so they come from rosbags' serialiser itself rather than from a second
reading of the CDR alignment rules. Writing a field's new values into its range (:meth:`CdrTemplate.view`) and
taking :meth:`CdrTemplate.cdr` gives the bytes ``serialize_cdr`` gives for the message with those values.

A changing field is named by a dotted path (``force``, ``valid``, ``header.stamp``, ``wrench``, ``force_matrix``):
a primitive, a primitive sequence or array, a nested message or a sequence of messages. Its view is a writable
numpy array over the template's buffer, one element per primitive in wire order, of the primitives' dtype (a
message of mixed primitive types, e.g. ``builtin_interfaces/Time``, is a raw uint8 view of its bytes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from rosbags.typesys.base import Nodetype

from .msg_types import NUMPY_DTYPES, deserialize_cdr, full_type_name, serialize_cdr, typestore
from .wire_message import WireMessage

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


def _replaced(msg: Any, path: Sequence[str], fill: int) -> tuple[Any, list[str]]:
    """A copy of ``msg`` with the field at ``path`` patterned (see :func:`_patterned`), and its base types."""
    name, rest = path[0], path[1:]
    fielddefs = dict(typestore().fielddefs[msg.__msgtype__][1])
    if name not in fielddefs:
        raise ValueError(f"CdrTemplate({msg.__msgtype__}): no field {name!r}; allowed: {list(fielddefs)}")
    if rest:
        if fielddefs[name][0] != Nodetype.NAME:
            raise ValueError(f"CdrTemplate({msg.__msgtype__}): field {name!r} is not a message; cannot reach {rest}")
        value, bases = _replaced(getattr(msg, name), rest, fill)
    else:
        value, bases = _patterned(fielddefs[name], getattr(msg, name), fill)
    return dataclasses.replace(msg, **{name: value}), bases


class CdrTemplate:
    """The CDR bytes of ``msg`` (a rosbags message object) with writable views of the fields in ``changing``
    (dotted paths, see the module docstring); ``fields``: the field values of ``msg``. Raises ValueError for a path that is not a field, a string, or a
    field whose bytes are not one contiguous range."""

    def __init__(self, msg: Any, changing: Sequence[str]):
        self.message_class = type(msg)
        self.msgtype = full_type_name(msg.__msgtype__)
        self.fields = {f.name: getattr(msg, f.name) for f in dataclasses.fields(msg)}
        self.buffer = bytearray(serialize_cdr(msg))
        if self.buffer[:2] != b"\x00\x01":
            raise ValueError(f"CdrTemplate({self.msgtype}): expected little-endian CDR, got header {self.buffer[:4]!r}")
        self._views: dict[str, np.ndarray] = {}
        self._spans: dict[str, slice] = {}
        for path in changing:
            self._locate(msg, path)

    def _locate(self, msg: Any, path: str) -> None:
        first, bases = _replaced(msg, path.split("."), _PATTERNS[0])
        second, _ = _replaced(msg, path.split("."), _PATTERNS[1])
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
        if len(dtypes) == 1:
            dtype = dtypes.pop().newbyteorder("<")
            self._views[path] = np.frombuffer(self.buffer, dtype, count=len(bases), offset=start)
        else:
            self._views[path] = np.frombuffer(self.buffer, np.uint8, count=size, offset=start)

    def view(self, path: str) -> np.ndarray:
        """Writable view of a changing field's values in the buffer (see the module docstring)."""
        return self._views[path]

    def span(self, path: str) -> slice:
        """Byte range of a changing field in :attr:`buffer` (for assigning packed bytes directly)."""
        return self._spans[path]

    def cdr(self) -> bytes:
        """A copy of the current bytes."""
        return bytes(self.buffer)

    def wire(self, changes: dict[str, Any], in_bytes: frozenset[str] = frozenset()) -> WireMessage:
        """A :class:`WireMessage` of the current bytes: the template message's fields updated by ``changes`` (the
        values just written); ``in_bytes``: changed fields whose values are left in the bytes only."""
        return WireMessage(self.message_class, bytes(self.buffer), self.fields, changes, in_bytes, self._deserialize)

    def _deserialize(self, data: bytes) -> Any:
        return deserialize_cdr(data, self.msgtype)
