"""The shared typestore made from definitions kept on disk, each message class made the first time it is looked up.

Building the typestore of every ROS 2 Jazzy type imports rosbags' store modules of every release up to Jazzy (about
190 message classes: a tenth of a second or more) and parses our ``.msg`` files, while a replay or a node uses a dozen
of the types. The definitions (rosbags' parse trees: full type name → (constants, fields), exactly as the built store
holds them) are kept in the derived-data cache (:mod:`..derived_cache`, kind ``typestore``) under a key made of every
source they come from (:func:`cached_definitions`); a store made from them (:func:`lazy_typestore`) holds every
definition, and its :attr:`~rosbags.typesys.store.Typestore.types` makes a type's class as
``Typestore.register`` makes it (same code generator, same fields and constants) on its first lookup by ``[]``.
Serialisation, definitions and hashes come from the definitions alone, so they are those of the built store.

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
from rosbags.typesys.store import Typestore

from ..derived_cache import cache_dir, key_name, read_payload, write_payload

Definitions = dict[str, tuple[list, list]]
"""Full type name → (constants, fields), rosbags' ``Typestore.fielddefs``."""


class LazyTypes(dict):
    """Message classes by full type name (a ``dict``): a class not made yet is made from its definition in
    ``definitions`` (:class:`~rosbags.typesys.store.Typestore`'s ``register`` of that one type) when looked up with
    ``[]``, once (a lock keeps threads from making two); KeyError for a name without definition. ``in``, ``get``
    and iteration see only the classes made so far."""

    def __init__(self, definitions: Definitions):
        super().__init__()
        self._definitions = definitions
        self._lock = threading.Lock()

    def __missing__(self, name: str) -> type:
        with self._lock:
            if dict.__contains__(self, name):
                return dict.__getitem__(self, name)
            maker = Typestore()
            maker.register({name: self._definitions[name]})
            cls = self[name] = maker.types[name]
            return cls


def lazy_typestore(definitions: Definitions) -> Typestore:
    """A typestore holding ``definitions`` (its own copy) whose classes are made on first use (:class:`LazyTypes`)."""
    store = Typestore()
    store.fielddefs.update(definitions)
    store.types = LazyTypes(store.fielddefs)
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
