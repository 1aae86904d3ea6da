"""The shared typestore made from definitions kept on disk, each message class made the first time it is looked up.

Building the typestore of every ROS 2 Jazzy type imports rosbags' store modules of every release up to Jazzy (about
190 message classes: a tenth of a second or more) and parses our ``.msg`` files, while a replay or a node uses a dozen
of the types. The definitions (rosbags' parse trees: full type name → (constants, fields), exactly as the built store
holds them) are kept in the derived-data cache (:mod:`..derived_cache`, kind ``typestore``) under a key made of every
source they come from (:func:`cached_definitions`); a store made from them (:func:`lazy_typestore`) holds every
definition, and its :attr:`~rosbags.typesys.store.Typestore.types` makes a type's class as
``Typestore.register`` makes it (same code generator, same fields and constants) on its first lookup by ``[]``.
Serialisation, definitions and hashes come from the definitions alone, so they are those of the built store. Of
the thirteen functions rosbags generates for a type on its first (de)serialisation (CDR both byte orders, ROS 1,
conversions), the store generates each when it is first called (:class:`LazyMsgdef`): a CDR writer uses two.

Cache files are read with an unpickler that builds nothing but containers, strings, numbers and rosbags'
``Nodetype``; anything else reads as absent, and the store is built again.
"""

from __future__ import annotations

import io
import pickle
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rosbags.interfaces import Nodetype
from rosbags.serde.cdr import generate_deserialize_cdr, generate_getsize_cdr, generate_serialize_cdr
from rosbags.serde.ros1 import (
    generate_cdr_to_ros1,
    generate_deserialize_ros1,
    generate_getsize_ros1,
    generate_ros1_to_cdr,
    generate_serialize_ros1,
)
from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.base import normalize_fieldname
from rosbags.typesys.store import Typestore

from ..derived_cache import cache_dir, key_name, read_payload, write_payload

Definitions = dict[str, tuple[list, list]]
"""Full type name → (constants, fields), rosbags' ``Typestore.fielddefs``."""


class LazyTypes(dict):
    """Message classes by full type name (a ``dict``): a class not made yet is made from its definition in
    ``definitions`` (:class:`~rosbags.typesys.store.Typestore`'s ``register`` of that one type) when looked up with
    ``[]``, once (a lock keeps threads from making two); KeyError for a name without definition. ``in``, ``get``
    and iteration see only the classes made so far. The builtin types (``builtin_interfaces`` Time and Duration) are
    rosbags' own classes, which every rosbags store shares (so stamps compare equal to those of messages read with
    another store), where their definitions are rosbags'. ``module``: the module the made classes name as theirs
    (one whose attribute ``pkg__msg__Type`` is this store's class of ``pkg/msg/Type``, so that their messages pickle),
    or None (rosbags' ``rosbags.usertypes``)."""

    def __init__(self, definitions: Definitions, module: str | None = None):
        super().__init__()
        self._module = module
        builtin = get_typestore(Stores.EMPTY)
        self.update({name: cls for name, cls in builtin.types.items()
                     if definitions.get(name) == builtin.fielddefs[name]})
        self._definitions = definitions
        self._lock = threading.Lock()

    def __missing__(self, name: str) -> type:
        with self._lock:
            if dict.__contains__(self, name):
                return dict.__getitem__(self, name)
            maker = Typestore()
            maker.register({name: self._definitions[name]})
            cls = self[name] = maker.types[name]
            if self._module is not None:
                cls.__module__ = self._module
            return cls


Generator = Callable[[list, str, Typestore], tuple]
"""A generator call of ``Typestore.get_msgdef``: (e: a type's field entries, n: its name, s: the store) → what it
gives."""


def _generators() -> dict[str, tuple[tuple[str, ...], Generator]]:
    """Attribute of rosbags' ``Msgdef`` → (the attributes one generator call gives, that call), as
    ``Typestore.get_msgdef`` calls them."""
    calls: list[tuple[tuple[str, ...], Generator]] = [
        (("getsize_cdr", "size_cdr"), lambda e, n, s: generate_getsize_cdr(e, s)),
        (("serialize_cdr_le",), lambda e, n, s: (generate_serialize_cdr(e, s, "le"),)),
        (("serialize_cdr_be",), lambda e, n, s: (generate_serialize_cdr(e, s, "be"),)),
        (("deserialize_cdr_le",), lambda e, n, s: (generate_deserialize_cdr(e, s, "le"),)),
        (("deserialize_cdr_be",), lambda e, n, s: (generate_deserialize_cdr(e, s, "be"),)),
        (("getsize_ros1", "size_ros1"), lambda e, n, s: generate_getsize_ros1(e, s)),
        (("serialize_ros1",), lambda e, n, s: (generate_serialize_ros1(e, s),)),
        (("deserialize_ros1",), lambda e, n, s: (generate_deserialize_ros1(e, s),)),
        (("getsize_ros1_to_cdr",), lambda e, n, s: (generate_ros1_to_cdr(e, n, s, copy=False),)),
        (("ros1_to_cdr",), lambda e, n, s: (generate_ros1_to_cdr(e, n, s, copy=True),)),
        (("getsize_cdr_to_ros1",), lambda e, n, s: (generate_cdr_to_ros1(e, n, s, copy=False),)),
        (("cdr_to_ros1",), lambda e, n, s: (generate_cdr_to_ros1(e, n, s, copy=True),)),
    ]
    return {attr: (names, make) for names, make in calls for attr in names}


_GENERATED = _generators()


class LazyMsgdef:
    """What rosbags' ``Msgdef`` holds for message type ``name`` of ``store`` (name, fields, cls and the generated
    (de)serialisation functions and sizes), each function generated by rosbags' generator the first time it is read
    (two threads may both generate one: the same function)."""

    def __init__(self, store: Typestore, name: str):
        self.name = name
        self.fields = [(normalize_fieldname(field), desc) for field, desc in store.fielddefs[name][1]]
        self.cls = store.types[name]
        self._store = store

    def __getattr__(self, attr: str) -> Any:
        if attr not in _GENERATED:
            raise AttributeError(attr)
        names, make = _GENERATED[attr]
        for name, value in zip(names, make(self.fields, self.name, self._store)):
            setattr(self, name, value)
        return getattr(self, attr)


class LazyTypestore(Typestore):
    """A typestore whose message definitions (``get_msgdef``) generate their functions on first use
    (:class:`LazyMsgdef`)."""

    def get_msgdef(self, typename: str) -> Any:
        msgdef = self.cache.get(typename)
        if msgdef is None:
            msgdef = self.cache[typename] = LazyMsgdef(self, typename)
        return msgdef


def lazy_typestore(definitions: Definitions, module: str | None = None) -> Typestore:
    """A typestore holding ``definitions`` (its own copy) whose classes are made on first use (:class:`LazyTypes`, of
    ``module``), and their (de)serialisation functions on theirs (:class:`LazyTypestore`)."""
    store = LazyTypestore()
    store.fielddefs.update(definitions)
    store.types = LazyTypes(store.fielddefs, module)
    return store


class _DefinitionUnpickler(pickle.Unpickler):
    """Unpickles definitions: builtin containers and scalars, and ``Nodetype`` as the one class."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == (Nodetype.__module__, Nodetype.__name__):
            return Nodetype
        raise pickle.UnpicklingError(f"typestore cache: {module}.{name} is not part of a definition")


def cached_definitions(build: Callable[[], Definitions], sources: list[bytes | str]) -> Definitions:
    """The definitions ``build()`` returns, read from the ``typestore`` cache file of ``sources`` (everything they are
    derived from, with this module's source) when there is a sound one; else built and written there."""
    path = cache_dir("typestore") / key_name(Path(__file__).read_bytes(), *sources)
    payload = read_payload(path)
    if payload is not None:
        try:
            definitions = _DefinitionUnpickler(io.BytesIO(payload)).load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError):
            definitions = None  # built again below
        if isinstance(definitions, dict):
            return definitions
    definitions = build()
    write_payload(path, pickle.dumps(definitions, protocol=pickle.HIGHEST_PROTOCOL))
    return definitions
