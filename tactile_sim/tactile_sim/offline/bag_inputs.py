"""The node inputs recorded in a rosbag2 bag (MCAP or sqlite3), streamed as :class:`~.run_loop.InputEvent` s.

Topics (names configurable, :class:`InputTopics`): joint states (``sensor_msgs/JointState``), ``/tf`` and
``/tf_static`` (``tf2_msgs/TFMessage``) and ``/robot_description`` (``std_msgs/String``); those absent from the bag
are left out, and a bag with neither joint states nor ``/tf`` cannot be replayed. The **clock** of a replay is

* ``header`` (default): the header stamps of the joint states (of the ``/tf`` messages, their newest transform,
  when the bag has no joint states): the recorded robot's own time, so simulation time and resets replay exactly;
* ``receive``: the bag's receive times of every input (for publishers that leave stamps at zero).

Messages are read one at a time (bounded memory), or, for a replay that only hands its inputs to a core
(:meth:`BagInputs.core_blocks`), :data:`INPUT_BLOCK` at a time, their joint states and TF messages decoded a block
at once into rows instead of message objects, and handed out a block at a time; or, for a batched replay that
plans a recording (:mod:`.lane_plan`), all at once, its joint states and ``/tf`` messages into arrays
(:meth:`BagInputs.input_arrays`). A bag that cannot be opened, lacks the needed topics, has them with other
types, has unstamped clock messages under the header clock, or cannot be read on (a damaged or cut-off file) raises
:class:`BagInputError` naming the bag, the topic and, mid-way, the last good time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from itertools import islice
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np

from ..io.bag import BagReader
from ..io.input_cdr import JointStateArrays, JointStateDecoder, JointStateRow, TFArrays, TFMessageDecoder, TFRow
from ..io.stamps import NS_PER_S
from ..ros.inputs import joint_state_stamp_ns, tf_stamps_ns
from .input_messages import JOINT_STATE, STRING, TF_MESSAGE
from .output_bag import SUFFIX_STORAGE
from .run_loop import InputEvent

Clock = Literal["header", "receive"]
CLOCKS: tuple[str, ...] = ("header", "receive")

EXPECTED_TYPES = {"joint_states": JOINT_STATE, "tf": TF_MESSAGE, "tf_static": TF_MESSAGE, "robot_description": STRING}
"""Input kind → the message type its topic must carry."""
KINDS = tuple(EXPECTED_TYPES)
"""The input kinds (:meth:`BagInputs.input_arrays` numbers them by their place here)."""


INPUT_BLOCK = 256
"""Messages :meth:`BagInputs.core_blocks` reads ahead and decodes at once."""

ClockReader = Callable[[int, Any], int | None]
"""(receive time ns, message) → the clock time ns an input sets (None: none, a TF message without transforms)."""


def _receive_time(log_ns: int, msg: Any) -> int:
    return log_ns


def _joint_state_time(log_ns: int, msg: Any) -> int:
    return joint_state_stamp_ns(msg)


def _newest_transform_time(log_ns: int, msg: Any) -> int | None:
    stamps = tf_stamps_ns(msg)
    return max(stamps) if stamps else None


class InputArrays(NamedTuple):
    """The M input messages of a bag read at once (:meth:`BagInputs.input_arrays`), in receive order: their receive
    times (int64 [M], ns), whether each sets the clock (bool [M]) and the clock time of each that does (int64 [C],
    ns, as :meth:`BagInputs.events` gives it); whether each is a joint state (bool [M]) and the J joint states decoded
    a group per message size: (where its messages are among the joint states, int [m]; their
    :class:`~..io.input_cdr.JointStateArrays`); where the ``/tf`` messages are (int [T]) and they, of one size and
    layout, decoded at once (:class:`~..io.input_cdr.TFArrays`; None: none); and (where among the M, kind, message)
    of each other input (static TF messages, robot descriptions) as :meth:`BagInputs.core_blocks` gives it."""

    receive_ns: np.ndarray
    is_clock: np.ndarray
    clock_ns: np.ndarray
    is_joint: np.ndarray
    joint_states: list[tuple[np.ndarray, JointStateArrays]]
    tf_at: np.ndarray
    tf: TFArrays | None
    early: list[tuple[int, str, Any]]


class BagInputError(ValueError):
    """A bag cannot be replayed (or read on); the message says which bag, what and how to fix it."""


@dataclass(frozen=True)
class InputTopics:
    """Topic name of each input kind."""

    joint_states: str = "/joint_states"
    tf: str = "/tf"
    tf_static: str = "/tf_static"
    robot_description: str = "/robot_description"


def open_bag(path: str | Path) -> BagReader:
    """A reader of the bag at ``path`` (a rosbag2 folder, or one .mcap / .db3 file); BagInputError when it cannot
    be opened."""
    path = Path(path)
    if not path.exists():
        raise BagInputError(f"bag {str(path)!r}: not found; allowed: a rosbag2 folder or a .mcap / .db3 file")
    special = _special_file(path)
    if special is not None:
        what = "not a regular file" if special == path else f"its {special.name!r} is not a regular file"
        raise BagInputError(f"bag {str(path)!r}: {what} (a pipe, a device or a socket, which would be read without "
                            "end); allowed: a rosbag2 folder or a .mcap / .db3 file")
    try:
        return BagReader(path)
    except Exception as exc:  # noqa: BLE001 - rosbags raises many kinds for unreadable files; all mean the same
        why = "a record claims more bytes than memory holds: the file is damaged" if isinstance(exc, MemoryError) \
            else f"{type(exc).__name__}: {exc}"
        raise BagInputError(f"bag {str(path)!r}: cannot be opened as a rosbag2 bag ({why}){_repair_hint(path)}") \
            from exc


def _special_file(path: Path) -> Path | None:
    """The first of the files a bag reader opens for ``path`` (the file itself, or a folder's metadata.yaml and
    storage files) that exists and is neither a regular file nor a folder; None when there is none."""
    opened = [path] if not path.is_dir() else [path / "metadata.yaml", *(
        entry for entry in sorted(path.iterdir()) if entry.suffix.lower() in SUFFIX_STORAGE)]
    return next((p for p in opened if p.exists() and not p.is_file() and not p.is_dir()), None)


def _repair_hint(path: Path) -> str:
    """What may make the unreadable bag at ``path`` readable, for its error message ('' when nothing applies)."""
    if path.is_dir():
        if not (path / "metadata.yaml").is_file():
            return "; a bag folder without metadata.yaml is indexed again with `ros2 bag reindex`"
        return ""
    if path.suffix == ".mcap":
        return "; an MCAP file cut short by a crash is repaired with `mcap recover`"
    if path.suffix == ".npz":
        return "; a .npz file is replay's array output (read it with numpy.load), not a bag"
    return ""


class BagInputs:
    """The inputs of an open bag (see the module docstring). ``kinds``: topic → input kind of the topics found."""

    def __init__(self, reader: BagReader, topics: InputTopics = InputTopics(), clock: Clock = "header"):
        if clock not in CLOCKS:
            raise ValueError(f"replay clock: got {clock!r}; allowed: {CLOCKS}")
        self.reader, self.clock = reader, clock
        where = f"bag {str(reader.path)!r}"
        present = reader.topics
        self.kinds: dict[str, str] = {}
        for f in fields(InputTopics):
            topic = getattr(topics, f.name)
            if topic not in present:
                continue
            expected, found = EXPECTED_TYPES[f.name], present[topic]
            if found != expected:
                raise BagInputError(f"{where}: topic {topic!r} has type {found}; the {f.name} input must be "
                                    f"{expected} (choose the topic with --{f.name.replace('_', '-')}-topic)")
            self.kinds[topic] = f.name
        if not {"joint_states", "tf"} & set(self.kinds.values()):
            listing = ", ".join(f"{t} ({m})" for t, m in sorted(present.items())) or "none"
            raise BagInputError(f"{where}: neither joint states {topics.joint_states!r} nor transforms "
                                f"{topics.tf!r} are in the bag; its topics: {listing}")
        kinds = set(self.kinds.values())
        self.clock_kind = "joint_states" if "joint_states" in kinds else "tf"
        if clock == "header":
            self._check_stamped()

    def _check_stamped(self) -> None:
        """Refuse header time when the first two clock messages both carry stamp 0 but were received apart (an
        unstamped publisher: the clock would never advance). A first stamp of 0 alone is a simulation start."""
        topic = next(t for t, k in self.kinds.items() if k == self.clock_kind)
        first = []
        try:
            for _, log_ns, msg in self.reader.messages([topic]):
                first.append((self._clock_reader(self.clock_kind)(log_ns, msg), log_ns))
                if len(first) == 2:
                    break
        except Exception:  # noqa: BLE001 - a damaged bag is reported where the replay reads it
            return
        if len(first) == 2 and first[0][0] == first[1][0] == 0 and first[0][1] != first[1][1]:
            raise BagInputError(f"bag {str(self.reader.path)!r}: the {self.clock_kind} on {topic!r} carry no header "
                                "stamp (0); replay them with --clock receive")

    def _clock_reader(self, kind: str) -> ClockReader | None:
        """How an input of ``kind`` sets the clock (None: it does not)."""
        if self.clock == "receive":
            return _receive_time
        if kind != self.clock_kind:
            return None
        return _joint_state_time if kind == "joint_states" else _newest_transform_time

    def events(self) -> Iterator[InputEvent]:
        """The input events in receive order; a read failure mid-way raises BagInputError naming the last good
        time."""
        count, last_ns = 0, None
        stream = self.reader.messages(self.kinds)
        topics = {topic: (kind, self._clock_reader(kind)) for topic, kind in self.kinds.items()}
        while True:
            try:
                item = next(stream)
            except StopIteration:
                return
            except Exception as exc:  # noqa: BLE001 - damaged data surfaces as many exception types
                raise self._stopped(count, last_ns, exc) from exc
            topic, log_ns, msg = item
            kind, clock = topics[topic]
            count, last_ns = count + 1, log_ns
            yield InputEvent(kind, topic, log_ns, None if clock is None else clock(log_ns, msg), msg)

    def core_blocks(self) -> Iterator[list[tuple[str, str, int, int | None, Any]]]:
        """:meth:`events` for a reader that hands every input to a core (:func:`~.run_loop.input_handlers`) and
        reads no message, a list of up to :data:`INPUT_BLOCK` events at a time, each a plain tuple of an
        :class:`~.run_loop.InputEvent`'s fields: the messages of a block are read ahead and their joint states and TF
        messages decoded at once, as :class:`~..io.input_cdr.JointStateRow` s and :class:`~..io.input_cdr.TFRow` s
        (the others as :meth:`events` yields them); the same kinds, topics, times and samples. A read failure raises
        BagInputError as :meth:`events` does, after a list of the events of the messages before it."""
        reader = self.reader
        count, last_ns = 0, None
        stream = reader.raw_messages(self.kinds)
        topics = {topic: (kind, self._clock_reader(kind)) for topic, kind in self.kinds.items()}
        while True:
            block, error = [], None
            try:
                for item in stream:
                    block.append(item)
                    if len(block) == INPUT_BLOCK:
                        break
            except Exception as exc:  # noqa: BLE001 - damaged data surfaces as many exception types
                error = exc
            events = []
            for (topic, msgtype, log_ns, data), msg in zip(block, block_rows(reader.decoders, block)):
                if msg is None:
                    try:
                        msg = reader.decode(msgtype, data)
                    except Exception as exc:  # noqa: BLE001 - as a message that does not decode in events()
                        error = exc
                        break
                kind, clock = topics[topic]
                events.append((kind, topic, log_ns, None if clock is None else clock(log_ns, msg), msg))
            count += len(events)
            if events:
                last_ns = events[-1][2]
                yield events
            if error is not None:
                raise self._stopped(count, last_ns, error) from error
            if len(block) < INPUT_BLOCK:
                return

    def input_arrays(self, limit: int) -> InputArrays | None:
        """The inputs read at once (:class:`InputArrays`), with decoders of their own (the reader's are left as they
        are for :meth:`core_blocks`). None where there are no joint states or more than ``limit`` messages; where
        reading or decoding fails; where :meth:`core_blocks` would not give every joint state as a
        :class:`~..io.input_cdr.JointStateRow` (one that does not agree with the layout of the first of its size, or
        whose bytes the library does not decode); where the ``/tf`` messages are not all of one size and of the first
        one's layout; and where a static TF message is of their size or one that :meth:`core_blocks` decodes
        alone."""
        if "joint_states" not in self.kinds.values() or JOINT_STATE not in self.reader.decoders:
            return None
        decoders = {name: type(decoder)() for name, decoder in self.reader.decoders.items()}
        joint_decoder = decoders[JOINT_STATE]
        try:
            items = list(islice(self.reader.raw_messages(self.kinds), limit + 1))
            if len(items) > limit:
                return None
            topics, _, receive, datas = zip(*items) if items else ((), (), (), ())
            receive = np.array(receive, dtype=np.int64)
        except Exception:  # noqa: BLE001 - damaged data (many exception types; core_blocks reports it) or a receive
            return None  # time past int64 (OverflowError: the MCAP field is uint64)
        kind_of = {topic: KINDS.index(kind) for topic, kind in self.kinds.items()}
        kinds = np.fromiter(map(kind_of.__getitem__, topics), np.int8, len(topics))
        is_joint, tf_at = kinds == KINDS.index("joint_states"), np.flatnonzero(kinds == KINDS.index("tf"))
        tf = [datas[i] for i in tf_at.tolist()]
        if tf and (TF_MESSAGE not in decoders or len(set(map(len, tf))) > 1):
            return None
        joints = list(datas) if is_joint.all() else [datas[i] for i in np.flatnonzero(is_joint).tolist()]
        sizes = np.fromiter(map(len, joints), np.int64, len(joints))
        groups = []
        try:
            tf_block = decoders[TF_MESSAGE].decode_arrays(tf) if tf else None
            if tf and (tf_block is None or not tf_block.agree.all()):
                return None
            for size in np.unique(sizes).tolist():
                at = np.flatnonzero(sizes == size)
                block = joint_decoder.decode_arrays([joints[i] for i in at.tolist()])
                if block is None or not block.agree.all():
                    return None
                groups.append((at, block))
        except ValueError:
            return None
        early = self._early_inputs(decoders, items, np.flatnonzero(~is_joint & (kinds != KINDS.index("tf"))),
                                   len(tf[0]) if tf else None)
        if early is None:
            return None
        if self.clock == "receive":
            is_clock, clock = np.ones(len(items), dtype=bool), receive
        else:  # the joint states' header stamps
            is_clock, clock = is_joint, np.zeros(len(joints), dtype=np.int64)
            for at, block in groups:
                clock[at] = block.stamps_ns
        return InputArrays(receive, is_clock, clock, is_joint, groups, tf_at, tf_block, early)

    def _early_inputs(self, decoders: dict[str, JointStateDecoder | TFMessageDecoder],
                      items: list[tuple[str, str, int, bytes]], where: np.ndarray,
                      tf_size: int | None) -> list[tuple[int, str, Any]] | None:
        """(where among ``items``, kind, message) of the static TF messages and robot descriptions of ``items``
        (:meth:`~..io.bag.BagReader.raw_messages` of the inputs; those at ``where``), decoded by ``decoders`` as
        :meth:`core_blocks` decodes them (a block of :data:`INPUT_BLOCK` at a time: :func:`block_rows`); None where
        it would not decode them so (a static TF message of ``tf_size``, the ``/tf`` messages' size, or one it would
        decode alone) or one does not decode."""
        early = []
        by_block: dict[int, list[int]] = {}
        for i in where.tolist():
            if items[i][1] in decoders and len(items[i][3]) == tf_size:
                return None
            by_block.setdefault(i // INPUT_BLOCK, []).append(i)
        for at in by_block.values():
            for i, row in zip(at, block_rows(decoders, [items[i] for i in at])):
                topic, msgtype, _, data = items[i]
                if row is None and msgtype in decoders:
                    return None
                try:
                    early.append((i, self.kinds[topic], self.reader.decode(msgtype, data) if row is None else row))
                except Exception:  # noqa: BLE001 - as a message that does not decode in core_blocks
                    return None
        return early

    def _stopped(self, count: int, last_ns: int | None, exc: Exception) -> BagInputError:
        """The error of reading that stopped at ``exc`` after ``count`` input messages (the last received at
        last_ns)."""
        after = f"after {count} input messages (last at {last_ns / NS_PER_S:.6f} s)" if count else \
            "before the first input message"
        return BagInputError(f"bag {str(self.reader.path)!r}: reading stopped {after}: {type(exc).__name__}: {exc}")


def block_rows(decoders: dict[str, JointStateDecoder | TFMessageDecoder],
               block: list[tuple[str, str, int, bytes]]) -> list[JointStateRow | TFRow | None]:
    """The row of each (topic, message type, log_ns, CDR bytes) of ``block`` that ``decoders`` (message type →
    decoder) decode a block at once: the messages of one type and size agreeing with the first one's layout
    (``decode_block``); None for every other message (decoded one by one, where one that does not decode raises in
    its place)."""
    rows: list[JointStateRow | TFRow | None] = [None] * len(block)
    groups: dict[tuple[str, int], list[int]] = {}
    for i, (_, msgtype, _, data) in enumerate(block):
        if msgtype in decoders:
            groups.setdefault((msgtype, len(data)), []).append(i)
    for (msgtype, _), where in groups.items():
        try:
            decoded = decoders[msgtype].decode_block([block[i][3] for i in where])
        except ValueError:
            continue
        for i, row in zip(where, decoded):
            rows[i] = row
    return rows
