"""The bag a demo or replay writes: topics declared on first use, node-relative names resolved like the live node's.

A topic ``~/<name>`` (what :class:`~tactile_sim.ros.node_core.NodeCore` returns) is written as ``/<node>/<name>``, the
name ``tactile_sim_node`` publishes it under, so a bag written here and a recording of the live node have the same
topics (and ``rviz/demo.rviz`` shows either). ``/tf_static`` and ``/robot_description`` are offered latched
(transient local), as their publishers do, so that ``ros2 bag play`` hands them to late subscribers.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from ..io.bag import BagWriter, qos_profile
from ..io.mcap_file import McapFile

LATCHED_TOPICS = ("/tf_static", "/robot_description")
"""Topics offered with the transient-local ("latched") QoS profile."""

SUFFIX_STORAGE = {".mcap": "mcap", ".db3": "sqlite3"}
"""Output name suffix → rosbag2 storage."""


def bag_location(path: str | Path) -> tuple[Path, str]:
    """(bag directory, storage) of an output name: ``out.mcap`` → (``out``, mcap), ``out.db3`` → (``out``,
    sqlite3), anything else → (itself, mcap). rosbag2 bags are directories (metadata.yaml plus the data file
    ``<dir>/<dir name>.mcap``)."""
    path = Path(path)
    storage = SUFFIX_STORAGE.get(path.suffix.lower())
    if storage is None:
        return path, "mcap"
    return path.with_suffix(""), storage


def data_file_in(directory: Path, storage: str) -> Path:
    """The storage file of the bag ``directory`` (``<dir>/<dir name>.mcap`` or ``.db3``)."""
    return directory / f"{directory.name}.{'db3' if storage == 'sqlite3' else 'mcap'}"


def clear_old_bag(directory: Path) -> None:
    """Remove a bag directory this project may overwrite: a rosbag2 bag (it has metadata.yaml), an empty folder, or
    the data file alone that a run stopped before its end left there (``<dir name>.mcap`` or ``.db3``, no
    metadata.yaml yet). Anything else raises FileExistsError naming it."""
    if not directory.exists():
        return
    left_by_a_run = {data_file_in(directory, storage).name for storage in ("mcap", "sqlite3")}
    if directory.is_dir() and ((directory / "metadata.yaml").is_file()
                               or {p.name for p in directory.iterdir()} <= left_by_a_run):
        shutil.rmtree(directory)
        return
    raise FileExistsError(f"output bag {str(directory)!r}: exists and is not a rosbag2 bag (no metadata.yaml); "
                          "choose another output name or remove it")


class OutputBag:
    """Write messages to a new rosbag2 bag at ``path`` (see :func:`bag_location`).

    node_name: the namespace of ``~/`` topics. overwrite: replace an existing bag at that place (see
    :func:`clear_old_bag`); otherwise an existing path raises FileExistsError. on_write(topic, log_ns, msg) is called
    after every write with the resolved topic, message by message. ``counts`` holds the messages written per topic.
    """

    def __init__(self, path: str | Path, *, node_name: str, overwrite: bool = False,
                 on_write: Callable[[str, int, Any], None] | None = None):
        self.path, self.storage = bag_location(path)
        if overwrite:
            clear_old_bag(self.path)
        elif self.path.exists():
            raise FileExistsError(f"output bag {str(self.path)!r}: already exists; choose another name or remove it")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.node_name = node_name
        self.on_write = on_write
        self._names: dict[str, str] = {}
        """topic as given → resolved name, for every topic declared in the bag"""
        self._writer = BagWriter(self.path, self.storage)

    @property
    def data_file(self) -> Path:
        """The storage file inside the bag directory (what Foxglove opens)."""
        return data_file_in(self.path, self.storage)

    @property
    def counts(self) -> dict[str, int]:
        """Messages written per (resolved) topic."""
        return self._writer.counts

    @property
    def mcap_file(self) -> McapFile | None:
        """The MCAP file being written (None for a bag of another storage or once closed)."""
        return self._writer.mcap_file

    def resolve(self, topic: str) -> str:
        """``~/x`` → ``/<node_name>/x``; absolute names unchanged."""
        return f"/{self.node_name}/{topic[2:]}" if topic.startswith("~/") else topic

    def write(self, topic: str, log_ns: int, msg: Any) -> None:
        """Append ``msg`` on ``topic`` (node-relative or absolute) with bag (receive) time ``log_ns``."""
        self.write_all(log_ns, ((topic, msg),))

    def write_all(self, log_ns: int, items: Sequence[tuple[str, Any]]) -> None:
        """Append (topic, message) items (topics node-relative or absolute) that share the bag (receive) time
        ``log_ns``, in order: one update's messages."""
        names = self._names
        resolved = []
        for topic, msg in items:
            name = names.get(topic)
            if name is None:
                name = self._declare(topic, msg.__msgtype__)
            resolved.append((name, msg))
        self._writer.write_all(log_ns, resolved)
        if self.on_write is not None:
            for name, msg in resolved:
                self.on_write(name, log_ns, msg)

    def channels(self, items: Sequence[tuple[str, str]]) -> list[int]:
        """The MCAP channel ids of (topic, message type) items, for :meth:`write_records`; topics declared where
        this is their first use, in order (as :meth:`write_all` declares them). ValueError for a bag of another
        storage or a topic of another type."""
        names = self._names
        return [self._writer.channel(names.get(topic) or self._declare(topic, msgtype), msgtype)
                for topic, msgtype in items]

    def write_records(self, log_ns: int, records: Any, channels: Sequence[int], offsets: Sequence[int]) -> None:
        """Append MCAP message records (heads included) laid out back to back in ``records`` (bytes, or a contiguous
        uint8 array), of the channels ``channels`` (:meth:`channels`) at ``offsets`` in it, sharing the bag
        (receive) time ``log_ns``: what :meth:`write_all` writes for one update's messages. The messages are bytes
        only: a bag with ``on_write`` raises ValueError."""
        if self.on_write is not None:
            raise ValueError(f"OutputBag({str(self.path)!r}).write_records: records are not messages for on_write")
        self._writer.write_records(log_ns, records, channels, offsets)

    def _declare(self, topic: str, msgtype: str) -> str:
        """Add the topic (of message type ``msgtype``) to the bag on its first message; returns its resolved name."""
        name = self.resolve(topic)
        if name not in self._writer.counts:
            self._writer.add_topic(name, msgtype, qos_profile(transient_local=name in LATCHED_TOPICS))
        self._names[topic] = name
        return name

    def close(self) -> None:
        """Finish the bag (metadata.yaml)."""
        self._writer.close()

    def __enter__(self) -> OutputBag:
        return self

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
