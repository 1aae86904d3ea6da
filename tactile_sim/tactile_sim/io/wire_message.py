"""A message as it goes on the wire: its CDR bytes, with its field values at hand without deserialising them.

The node core returns :class:`WireMessage` s: publishers and bag writers send :attr:`WireMessage.cdr` as it is
(:func:`~.msg_types.serialize_cdr` returns it), while readers of the fields (markers, the run digest, tests) get
them as attributes, exactly as on the rosbags message object, which :attr:`WireMessage.message` builds on demand.
Fields can also be read from the bytes on access (``readers``), so taking a message needs no field values at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np


class WireMessage:
    """cls: the rosbags message class; cdr: its CDR bytes (4-byte encapsulation header included), equal to
    ``serialize_cdr`` of the message; fields: field values of the template the message was made from (shared
    between its messages, never modified); changes: this message's values of fields that differ from it;
    in_bytes: names of further fields whose values are only in ``cdr`` (the message is then deserialised on
    first use by ``deserialize(cdr)`` → message object); readers: field name → function of ``cdr`` giving its
    value (shared between messages; read on each access). byte_layout: a token (compare with ``is``) shared by
    messages whose bytes hold every field at the same place: those of one template whose changing fields are read
    from the bytes (the template fixes the layout); None for other messages."""

    __slots__ = ("__msgtype__", "cdr", "byte_layout", "_cls", "_fields", "_changes", "_in_bytes", "_deserialize",
                 "_readers", "_message")

    def __init__(self, cls: type, cdr: bytes, fields: Mapping[str, Any], changes: Mapping[str, Any],
                 in_bytes: frozenset[str] = frozenset(), deserialize: Callable[[bytes], Any] | None = None,
                 readers: Mapping[str, Callable[[bytes], Any]] = MappingProxyType({})):
        self.__msgtype__ = cls.__msgtype__
        self.cdr = cdr
        self._cls, self._fields, self._changes = cls, fields, changes
        self._in_bytes, self._deserialize, self._readers = in_bytes, deserialize, readers
        self._message = None
        self.byte_layout = readers if readers and not changes and not in_bytes else None

    def __getattr__(self, name: str) -> Any:
        if name[0] == "_":  # slots not yet set (copy, pickle) and dunder look-ups are not fields
            raise AttributeError(name)
        if name in self._changes:
            return self._changes[name]
        if name in self._readers:
            return self._readers[name](self.cdr)
        if name in self._in_bytes:
            return getattr(self.message, name)
        if name in self._fields:
            return self._fields[name]
        raise AttributeError(f"{self.__msgtype__} message has no field {name!r}")

    @property
    def message(self) -> Any:
        """The rosbags message object (built on first use)."""
        if self._message is None:
            if self._in_bytes:
                self._message = self._deserialize(self.cdr)
            else:
                read = {name: reader(self.cdr) for name, reader in self._readers.items()}
                self._message = self._cls(**{**self._fields, **read, **self._changes})
        return self._message

    def byte_span(self, name: str) -> tuple[int, np.dtype, int] | None:
        """(byte offset in :attr:`cdr`, dtype, count) of field ``name`` when its value is read from the bytes as a
        numpy array (a changing primitive sequence of the template), else None. Equal for messages of one
        :attr:`byte_layout`."""
        reader = self._readers.get(name)
        value = None if reader is None else reader(self.cdr)
        if not isinstance(value, np.ndarray) or value.base is not self.cdr:
            return None
        start = np.frombuffer(self.cdr, np.uint8).__array_interface__["data"][0]
        return value.__array_interface__["data"][0] - start, value.dtype, value.size

    def __repr__(self) -> str:
        return f"WireMessage({self.__msgtype__}, {len(self.cdr)} bytes)"
