"""A batch's messages of one suite step written to every lane's bag as MCAP records built in place (``--batch N``).

The env cores of a batch share one :class:`~..ros.sensor_encoders.TemplateMemory`: a row per env, each template
after room for its MCAP message head (:data:`~..io.mcap_file.MESSAGE_HEAD` bytes), the records back to back in
publishing order. On each step (:meth:`BatchRecords.write`):

* every stepped lane's stamp goes into all templates of its row with one indexed copy of 8-byte words for all rows,
  and the log and publish times of the due records' heads with another (of the 8-byte words from byte 4 on);
* each writer of the due sensors writes once (a batch's :class:`~..ros.sensor_encoders.BranchCopy` covers every
  env: one indexed copy out of the whole read, block copies into the templates);
* the due records of every row go to the lanes' bags: while the lanes step in lockstep (the same lanes as on the
  last step, their open chunks the same size), their open chunks are the rows of one array
  (:class:`~..io.mcap_file.ChunkRows`) and one copy per record writes every lane's (no Python per lane); otherwise
  they are joined with one copy per record (for all rows at once), and each lane's copied from there into its bag's
  open chunk (:meth:`~.output_bag.OutputBag.write_records`; no bytes objects in between). A lane's channel ids are
  written into the heads of its row the first time it publishes a step of that kind (:class:`StepKind`); the files
  declaring them take their chunks back first.

The bytes are those of :meth:`~..ros.node_core.NodeCore.publish` written by
:meth:`~.output_bag.OutputBag.write_all`, as a lone replay writes them. It applies when every message of a sensor
is one of its templates (no output profiles) and every bag is MCAP (:func:`applies`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..io.mcap_file import MESSAGE_HEAD, TIMES_AT, ChunkRows, message_head
from ..io.stamps import NS_PER_S, SEC_MAX, SEC_MIN, time_msg_from_ns
from ..ros.node_core import NodeCore
from ..ros.sensor_encoders import BatchReads, TemplateMemory, stamp_word
from .output_bag import OutputBag

ROW_SLACK = 1 << 18
"""Bytes past a full chunk in each lane's row of open chunks: the most one step may write there."""


def applies(cores: Sequence[NodeCore], bags: Sequence[OutputBag]) -> bool:
    """True when the cores' messages can be written as records in place: a shared memory with room for the heads,
    every encoder's messages its templates', every bag an MCAP bag."""
    memory = cores[0]._templates
    return memory.head == MESSAGE_HEAD and all(c._templates is memory for c in cores) \
        and all(s.encoder.templated for c in cores for s in c.schedule) and all(b.storage == "mcap" for b in bags)


def stamp_words(stamps_ns: Sequence[int]) -> np.ndarray:
    """The stamps (ns) as :func:`~..ros.sensor_encoders.stamp_word` s (int64 [N], one per stamp); raises what
    :func:`~..io.stamps.time_msg_from_ns` raises for the first one outside ``builtin_interfaces/Time``."""
    if min(stamps_ns) < SEC_MIN * NS_PER_S or max(stamps_ns) >= (SEC_MAX + 1) * NS_PER_S:
        for stamp_ns in stamps_ns:
            time_msg_from_ns(stamp_ns)
    return stamp_word(*np.divmod(np.array(stamps_ns, np.int64), NS_PER_S))


class StepKind:
    """What engine step ``step`` publishes, the same for every lane (the cores' :meth:`NodeCore.step_plan`): the
    writers of all cores' due encoders (each once), and the records of a row (topic, message type, where its head
    starts and its length in bytes) in the order :meth:`NodeCore.publish` returns the messages."""

    def __init__(self, cores: Sequence[NodeCore], step: int):
        plans = [c.step_plan(step) for c in cores]
        self.writers = list({id(w): w for plan in plans for w in plan.writers}.values())
        memory = cores[0]._templates
        records = [(topic, t.message_class.__msgtype__, memory.head_start(t), MESSAGE_HEAD + len(t.buffer))
                   for e, gt in plans[0].branches for topic, t in e.parts[gt][1]]
        self.topics = [(topic, msgtype) for topic, msgtype, _, _ in records]
        self.sizes = [size for _, _, _, size in records]
        self.starts = np.array([start for _, _, start, _ in records], dtype=np.intp)
        self.offsets = tuple(np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(int).tolist())
        """Where each record starts in the step's bytes."""
        runs: list[list[int]] = []
        for start, size in zip(self.starts.tolist(), self.sizes):
            if runs and runs[-1][1] == start:
                runs[-1][1] = start + size
            else:
                runs.append([start, start + size])
        self.runs = [slice(a, b) for a, b in runs]
        """The records' bytes of a row: slices of it, in order."""
        self.parts = [memory.rows[:, r] for r in self.runs]
        """The records' bytes of every row: :attr:`runs` of the rows (views)."""
        self.size = sum(self.sizes)
        """Bytes of a row's records."""
        self.joined = np.empty((len(memory.rows), self.size), np.uint8) if len(self.runs) > 1 else None
        """The records of every row, back to back (where they are not one slice of the rows)."""
        words = (self.starts + TIMES_AT - 4) // 8
        self.per_row = 2 * len(self.sizes)
        self.times = (np.arange(len(memory.rows))[:, None] * (memory.row_bytes // 8)
                      + (words[:, None] + np.arange(2)).reshape(-1)).reshape(-1)
        """Where the records' log and publish times (each 16 bytes just before its template, so 4 past a multiple of
        8: :class:`TemplateMemory`) are among the 8-byte words of the memory from its byte 4 on: :attr:`per_row` of
        them per row (the publish time is the log time), every row in order."""


class BatchRecords:
    """The records of ``cores`` (the env cores of a batch, :func:`applies`) written per suite step."""

    def __init__(self, cores: Sequence[NodeCore]):
        self.cores = cores
        self.memory: TemplateMemory = cores[0]._templates
        self._kinds: dict[int, StepKind] = {}
        """id of the first core's step plan → the step kind."""
        self._channels: dict[tuple[int, int], tuple[int, ...]] = {}
        """(id of a lane's bag, id of a step kind) → its records' channel ids in that bag (heads written)."""
        n = len(self.memory.rows)
        self._stamps = np.zeros(n, "<u8")
        """Each row's stamp (:func:`~..ros.sensor_encoders.stamp_word`)."""
        self._log = np.zeros(n, "<u8")
        """Each row's log time (ns)."""
        self._times = self.memory.view("<u8", 4)
        """The memory as little-endian uint64 words from its byte 4 on (where the records' times are aligned)."""
        self._rows = ChunkRows(n, ROW_SLACK)
        """The open chunks of the lanes' bags while the lanes step in lockstep (:meth:`_lockstep`)."""
        self._held: tuple[int, ...] = ()
        """The envs of the lanes whose chunks were last taken into :attr:`_rows` (or tried: not again for the same
        lanes until :meth:`_release`)."""
        self._layouts: dict[tuple[int, tuple[int, ...]], list[tuple[tuple[int, ...], tuple[int, ...]]]] = {}
        """(id of a step kind, envs of lanes) → its records' (channel ids, offsets) in each lane's bag."""

    def kind(self, step: int) -> StepKind:
        """The step kind of engine step ``step`` (0-based)."""
        key = id(self.cores[0].step_plan(step))
        kind = self._kinds.get(key)
        if kind is None:
            kind = self._kinds[key] = StepKind(self.cores, step)
        return kind

    def write(self, step: int, lanes: Sequence[tuple[int, int, int, OutputBag]]) -> bool:
        """Write the messages of suite step ``step`` (0-based, just taken) of each (env, stamp ns, log ns, bag) of
        ``lanes`` into its bag (each env's bag the same on every step); False when no sensor publishes on this step."""
        kind = self.kind(step)
        if not kind.topics:
            return False
        rows = self.memory.rows
        envs, stamps, logs, _ = zip(*lanes)
        log = np.array(logs, np.uint64)
        at = list(envs)
        self._stamps[at] = stamp_words(stamps)
        self._log[at] = log
        self.memory.write_stamps(self._stamps)
        self._times[kind.times] = np.repeat(self._log, kind.per_row)
        reads = BatchReads()
        for w in kind.writers:
            w.write(reads)
        layouts = self._layouts.get((id(kind), envs))
        if layouts is None:
            for env, _, _, bag in lanes:
                if (id(bag), id(kind)) not in self._channels:
                    self._release()  # the heads declare topics: written into the chunks by their files
                    self._channels[(id(bag), id(kind))] = self._heads(kind, rows[env], bag)
            layouts = self._layouts[(id(kind), envs)] = [(self._channels[(id(bag), id(kind))], kind.offsets)
                                                         for _, _, _, bag in lanes]
        if self._lockstep(kind, lanes, envs):
            self._rows.write(layouts, log, kind.parts)
            return True
        if kind.joined is None:
            joined = kind.parts[0]
        else:
            joined = np.concatenate(kind.parts, axis=1, out=kind.joined)
        for (env, _, log_ns, bag), (channels, offsets) in zip(lanes, layouts):
            bag.write_records(log_ns, joined[env], channels, offsets)
        return True

    def _lockstep(self, kind: StepKind, lanes: Sequence[tuple[int, int, int, OutputBag]], envs: tuple[int, ...]) \
            -> bool:
        """Whether the records of ``kind`` go to the open chunks of ``lanes``' bags as rows of :attr:`_rows` (those
        chunks taken there, where they are the same size and those of the lanes of the last step); the chunks of
        other lanes are handed back to their files first (``envs``: the lanes' envs)."""
        if envs != self._held:
            if self._rows.files and set(envs) <= set(self._held):  # lanes ended or went alone
                self._rows.keep(envs)
            else:
                self._release()
                files = [bag.mcap_file for _, _, _, bag in lanes]
                if all(f is not None and bag.on_write is None for f, (_, _, _, bag) in zip(files, lanes)):
                    self._rows.hold(files, envs)
            self._held = envs
        if self._rows.files and kind.size > self._rows.slack:
            self._release()
        return bool(self._rows.files)

    def _release(self) -> None:
        """Hand the open chunks in :attr:`_rows` back to their files (to be written lane by lane from here on), and
        try to take them again on the next step."""
        self._rows.release()
        self._held = ()

    @staticmethod
    def _heads(kind: StepKind, row: np.ndarray, bag: OutputBag) -> tuple[int, ...]:
        """The channel ids of ``kind``'s records in ``bag`` (topics declared on first use), written with the rest of
        each head but its times into ``row``."""
        channels = bag.channels(kind.topics)
        for channel, start, size in zip(channels, kind.starts.tolist(), kind.sizes):
            row[start:start + TIMES_AT] = np.frombuffer(message_head(channel, size - MESSAGE_HEAD, 0)[:TIMES_AT],
                                                        np.uint8)
        return tuple(channels)

