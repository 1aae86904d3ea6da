"""Many recordings in one ``tactile-sim replay``: the inputs expanded to recordings, one output per recording in one
folder, run in this process or spread over worker processes, with progress and a table over the corpus.

Each recording is replayed by :func:`~.replay.replay_bag` exactly as it would be alone (its own inputs, TF, clock,
restarts; the node core of the process's previous recording, rewound to its state right after construction, instead
of building the sensors again: :mod:`.core_pool`), so its output is byte for byte the output of replaying it alone
into the same name: the bag
``OUT/<name>/<name>.mcap`` (with its ``metadata.yaml``) or the arrays ``OUT/<name>.npz``, ``<name>`` the
recording's folder name or file stem. Recordings are evaluated one after another in each process, or up to ``batch``
at a time as the envs of one suite (:mod:`.batch_replay`; same outputs); ``workers`` > 1 processes (forked where
possible, each loading the configuration once) take the next recording or batch as they finish one. Batches are
formed by the recordings' sizes (:func:`job_groups`): balanced over the workers, or of recordings of similar
lengths.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import glob
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.context import BaseContext
from pathlib import Path
from types import TracebackType
from typing import Any

from tqdm import tqdm

from ..constants import REPLAY_BATCH
from ..errors import ConfigError, os_error_text
from .array_output import NPZ_SUFFIX, array_location
from .output_bag import SUFFIX_STORAGE, bag_location, data_file_in

RECORDING_SUFFIXES = tuple(SUFFIX_STORAGE)
"""File suffixes of recordings (MCAP, sqlite3); a recording is also a rosbag2 folder (with metadata.yaml)."""


def is_recording(path: Path) -> bool:
    """True for a .mcap / .db3 file or a rosbag2 folder (one holding metadata.yaml)."""
    if path.is_file():
        return path.suffix.lower() in RECORDING_SUFFIXES
    return path.is_dir() and (path / "metadata.yaml").is_file()


def is_single(inputs: Sequence[str], list_file: str | None) -> bool:
    """True when the inputs name one recording as before (one IN, no list, no pattern, not a folder of
    recordings): ``-o`` is then that recording's output."""
    if len(inputs) != 1 or list_file is not None or glob.has_magic(inputs[0]):
        return False
    path = Path(inputs[0])
    return not path.is_dir() or (path / "metadata.yaml").is_file()


def read_list(list_file: str) -> list[str]:
    """The inputs of a list file: one per line, blank lines and ``#`` comments skipped, relative paths taken from the
    list file's folder. ConfigError when it cannot be read."""
    from ..text_files import read_text_file

    path = Path(list_file)
    try:
        text = read_text_file(path, "--input-list")
    except ValueError as exc:
        raise ConfigError(f"{exc} (one recording, folder or pattern per line)") from None
    except OSError as exc:
        raise ConfigError(f"--input-list {list_file!r}: cannot be read ({exc}); allowed: a text file with one "
                          "recording, folder or pattern per line") from None
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return [item if Path(item).is_absolute() else str(path.parent / item) for item in lines if item]


def expand_inputs(inputs: Sequence[str], list_file: str | None = None,
                  skipped: list[Path] | None = None) -> list[Path]:
    """The recordings named by ``inputs`` and the list file, in order, each once: a recording as it is, a folder's
    recordings (its entries that are recordings, by name), a glob pattern's matches (recordings, or folders of
    them). ConfigError naming an input that is not found, matches nothing or holds no recording. ``skipped``, when
    given, receives a folder's entries that look like bags but are none (a sub-folder holding a .mcap or .db3 file
    and no metadata.yaml: a recording cut short, or a copy without its metadata)."""
    items = list(inputs) + (read_list(list_file) if list_file is not None else [])
    if not items:
        raise ConfigError("replay: no input; allowed: recordings (.mcap / .db3 files, rosbag2 folders), folders of "
                          "them, glob patterns, or --input-list FILE")
    found: dict[Path, Path] = {}
    for item in items:
        if not item.strip():  # Path("") is the working folder
            raise ConfigError(f"replay input {item!r}: an empty name; allowed: .mcap / .db3 files, rosbag2 folders, "
                              "folders of them or glob patterns")
        paths = [Path(p) for p in sorted(glob.glob(item))] if glob.has_magic(item) else [Path(item)]
        recordings = []
        for path in paths:
            if is_recording(path):
                recordings.append(path)
            elif path.is_dir():
                for entry in sorted(path.iterdir()):
                    if is_recording(entry):
                        recordings.append(entry)
                    elif skipped is not None and entry.is_dir() and any(
                            f.suffix.lower() in RECORDING_SUFFIXES for f in entry.iterdir()):
                        skipped.append(entry)
        if not recordings:
            problem = "matches nothing" if not paths else "not found" if not paths[0].exists() else \
                "is not a recording and holds none"
            raise ConfigError(f"replay input {item!r}: {problem}; allowed: .mcap / .db3 files, rosbag2 folders, "
                              "folders of them or glob patterns")
        for path in recordings:
            found.setdefault(path.resolve(), path)
    return list(found.values())


def recording_name(path: Path) -> str:
    """The name of a recording's output: its folder name, or its file name without the suffix."""
    return path.name if path.is_dir() else path.stem


@dataclass(frozen=True)
class ReplayJob:
    """One recording of a corpus: its name, input and output (as given to :func:`~.replay.replay_bag`)."""

    name: str
    source: str
    output: str


def plan_jobs(recordings: Sequence[Path], folder: str | Path, output_format: str, overwrite: bool) -> list[ReplayJob]:
    """A job per recording with its output in ``folder`` (module docstring). ConfigError for a folder name with a
    file suffix, two recordings of one name, or (without ``overwrite``) outputs that exist already — before
    anything runs."""
    folder = Path(folder)
    if folder.suffix.lower() in (*RECORDING_SUFFIXES, NPZ_SUFFIX):
        shown = ", ".join(repr(str(p)) for p in recordings[:3]) + (", …" if len(recordings) > 3 else "")
        raise ConfigError(f"-o {str(folder)!r}: the inputs name {len(recordings)} recording(s) ({shown}; a folder "
                          "without metadata.yaml is read as a folder of recordings), and a corpus is written into a "
                          "folder; allowed: a folder name (each recording's output is named after it)")
    jobs, names = [], {}
    for path in recordings:
        name = recording_name(path)
        if name in names:
            raise ConfigError(f"replay inputs {str(names[name])!r} and {str(path)!r}: both would be written as "
                              f"{name!r} in {str(folder)!r}; allowed: recordings of different names (replay them "
                              "into separate folders)")
        names[name] = path
        output = folder / (f"{name}{NPZ_SUFFIX}" if output_format == "npz" else f"{name}.mcap")
        jobs.append(ReplayJob(name, str(path), str(output)))
    if not overwrite:
        existing = [str(place) for job in jobs
                    if (place := array_location(job.output) if output_format == "npz"
                        else bag_location(job.output)[0]).exists()]
        if existing:
            raise FileExistsError(f"replay outputs exist already: {', '.join(existing[:5])}"
                                  + (f" and {len(existing) - 5} more" if len(existing) > 5 else "")
                                  + "; allowed: --overwrite, or another -o folder")
    return jobs


def output_file(output: str | Path, output_format: str) -> Path:
    """The file a replay into ``output`` writes: the npz file, or the bag's data file."""
    if output_format == "npz":
        return array_location(output)
    return data_file_in(*bag_location(output))


@dataclass(frozen=True)
class RecordingOutcome:
    """What replaying one recording of a corpus did: its job, the data file written (None when nothing was),
    ticks, simulated seconds (ticks / rate), wall seconds, messages written, the error (None when it ran through)
    and its exit status (0, 1 a read failure, 2 an unusable input). A replay stopped by an error (too many restarts)
    keeps the data file of what came before, without counts."""

    job: ReplayJob
    data_file: str | None
    ticks: int
    simulated_s: float
    wall_s: float
    messages: int
    error: str | None
    status: int


def prefixed_log(name: str, verbose: bool) -> Callable[[str, str], None]:
    """A node-core log sink printing warnings and errors (and info when verbose) to stderr, prefixed with the
    recording's name."""

    def sink(level: str, text: str) -> None:
        if verbose or level in ("warn", "error"):
            print(f"[{level}] {name}: {text}", file=sys.stderr)

    return sink


@functools.cache
def _config(source: str) -> Any:
    from ..config.loader import load_config

    return load_config(source)


@functools.cache
def _cores() -> Any:
    from .core_pool import CorePool

    return CorePool()


def run_job(config_source: str, options: dict[str, Any], verbose: bool, job: ReplayJob) -> RecordingOutcome:
    """Replay one recording with the configuration at ``config_source`` (loaded once per process), the node core
    pool of this process and the other :func:`~.replay.replay_bag` keywords ``options``; errors of the input become
    the outcome's error."""
    from .bag_inputs import BagInputError
    from .replay import replay_bag

    start = time.perf_counter()
    try:
        result = replay_bag(job.source, _config(config_source), job.output, progress=False,
                            log=prefixed_log(job.name, verbose), cores=_cores(), **options)
    except (BagInputError, ConfigError, ValueError, OSError) as exc:  # OSError: a path the file system refuses
        written = output_file(job.output, options.get("output_format", "bag"))
        try:
            kept = str(written) if written.exists() else None
        except OSError:
            kept = None
        error = os_error_text(exc) if isinstance(exc, OSError) else str(exc)
        return RecordingOutcome(job, kept, 0, 0.0, time.perf_counter() - start, 0, error, 2)
    status = 0 if result.error is None else 1 if result.read_failed else 2
    kept = None if result.discarded else str(result.data_file)
    return RecordingOutcome(job, kept, result.stats.ticks, result.stats.ticks / result.rate,
                            time.perf_counter() - start, sum(result.counts.values()), result.error, status)


class CorpusProgress:
    """A bar over the corpus's recordings (tqdm on stderr, only on a terminal and when ``enabled``) showing the
    ticks done and the aggregate real-time factor (simulated seconds done ÷ wall seconds since the start)."""

    def __init__(self, total: int, *, enabled: bool = True):
        self.start = time.perf_counter()
        self.ticks, self.simulated_s = 0, 0.0
        self._bar = tqdm(total=total, desc="replay", unit="rec", disable=None if enabled else True, leave=False,
                         dynamic_ncols=True)

    def done(self, outcome: RecordingOutcome) -> None:
        self.ticks += outcome.ticks
        self.simulated_s += outcome.simulated_s
        wall = time.perf_counter() - self.start
        self._bar.set_postfix_str(f"{self.ticks} ticks, {self.simulated_s / wall:.1f}x real time", refresh=False)
        self._bar.update(1)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> CorpusProgress:
        return self

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def worker_context() -> BaseContext:
    """How worker processes start: forked from this one where the platform can (they begin with the modules this
    process has loaded, instead of paying the imports of torch and Warp again, seconds each), else spawned."""
    return get_context("fork" if "fork" in get_all_start_methods() else "spawn")


def worker_setup() -> None:
    """Worker set-up: one torch thread per worker (the workers share the cores), and the young generation collected
    as seldom as in the process that started it (:func:`fewer_collections`; a spawned worker starts with Python's
    default)."""
    import torch

    torch.set_num_threads(1)
    gc.set_threshold(YOUNG_COLLECTION_EVERY, *gc.get_threshold()[1:])


def run_group(config_source: str, options: dict[str, Any], verbose: bool,
              jobs: Sequence[ReplayJob]) -> list[RecordingOutcome]:
    """The outcomes of ``jobs``: one replayed alone (:func:`run_job`), several as one batch
    (:func:`~.batch_replay.run_batch`)."""
    if len(jobs) == 1:
        return [run_job(config_source, options, verbose, jobs[0])]
    from .batch_replay import run_batch

    return run_batch(config_source, options, verbose, jobs)


def groups_of(jobs: Sequence[ReplayJob], config_source: str, options: dict[str, Any], batch: int,
              workers: int = 1) -> list[list[ReplayJob]]:
    """The jobs as batches of at most ``batch`` recordings, and small enough that each of ``workers`` processes gets
    one where there are that many jobs (:func:`job_groups`); one by one when batch = 1 or the configuration and
    options cannot be batched (:func:`~.batch_replay.batch_problem`)."""
    if batch > 1 and len(jobs) > 1:
        from .batch_replay import batch_problem

        try:
            if batch_problem(_config(config_source), options) is None:
                return job_groups(jobs, min(batch, -(-len(jobs) // max(1, workers))), workers)
        except ConfigError:
            pass  # each job reports it
    return job_groups(jobs, 1, workers)


def recording_bytes(source: str | Path) -> int:
    """Bytes of a recording (a file, or the files of a rosbag2 folder): the measure of its replay's work by which
    :func:`job_groups` balances (0 where it cannot be read; its replay then reports why)."""
    path = Path(source)
    try:
        if path.is_dir():
            return sum(entry.stat().st_size for entry in path.iterdir() if entry.is_file())
        return path.stat().st_size
    except OSError:
        return 0


def job_groups(jobs: Sequence[ReplayJob], size: int, workers: int) -> list[list[ReplayJob]]:
    """``jobs`` as the fewest groups of at most ``size`` jobs, their sizes differing by at most one, by the jobs'
    work (:func:`recording_bytes`):

    * no more groups than ``workers``: each job, largest first, joins the group of least work that has room, so that
      the workers end at about the same time;
    * more groups: the jobs by decreasing work cut into consecutive groups, so that a batch holds recordings of about
      the same length (it steps as long as its longest), and the longest groups start first (the processes take
      the groups in order).

    Each group keeps its jobs in the order given; one process running one job at a time takes them in that order."""
    count = -(-len(jobs) // size) if jobs else 0
    if count == 0 or (workers <= 1 and size == 1):
        return [[job] for job in jobs]
    base, extra = divmod(len(jobs), count)
    room = [base + (g < extra) for g in range(count)]
    work = [recording_bytes(job.source) for job in jobs]
    order = sorted(range(len(jobs)), key=lambda i: -work[i])  # stable: equal work in the order given
    members: list[list[int]] = [[] for _ in range(count)]
    if count <= workers:
        load = [0] * count
        for i in order:
            group = min((g for g in range(count) if len(members[g]) < room[g]), key=lambda g: load[g])
            members[group].append(i)
            load[group] += work[i]
    else:
        start = 0
        for group in range(count):
            members[group] = order[start:start + room[group]]
            start += room[group]
    return [[jobs[i] for i in sorted(group)] for group in members]


@functools.cache
def freeze_imports() -> None:
    """Move every object alive now into the collector's permanent generation (``gc.freeze``), once per process: the
    imported libraries' objects (torch, Warp, SciPy, rosbags: hundreds of thousands) are then not walked by the full
    collection a corpus triggers (16 recordings of 2 s: 0.23 -> 0.05 s of collection). No collection first, unlike
    the live node's ``settle_heap``: it would cost about what it saves."""
    gc.freeze()


YOUNG_COLLECTION_EVERY = 20_000
"""Net allocations of container objects between two collections of the youngest generation while a corpus replays
(Python's default: 700). A replay holds many small objects for a while (input blocks and their rows, TF samples,
pending messages); at the default the collector walks each of them several times, promotes them and so triggers
collections of the older generations too, which walk the built sensors and every lane. Reference counting frees
what a replay drops as before, so memory does not grow: only objects in reference cycles wait longer. 16 demo
recordings of 10 s in one process: 315 collections taking ~0.10 s of CPU -> 6 taking ~0.03 s."""


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """The collector's first threshold at :data:`YOUNG_COLLECTION_EVERY` while the block runs (forked workers inherit
    it), the previous thresholds restored after."""
    saved = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, *saved[1:])
    try:
        yield
    finally:
        gc.set_threshold(*saved)


def replay_corpus(jobs: Sequence[ReplayJob], config_source: str, options: dict[str, Any], *, workers: int = 1,
                  batch: int = REPLAY_BATCH, verbose: bool = False,
                  progress: bool = True) -> tuple[list[RecordingOutcome], float]:
    """Run every job in this process (workers = 1) or in ``workers`` processes (:func:`worker_context`, one torch
    thread each), up to ``batch`` of them as the envs of one suite (:func:`groups_of`, :func:`run_group`); returns
    the outcomes in job order and the wall seconds of the whole corpus."""
    freeze_imports()
    outcomes: dict[ReplayJob, RecordingOutcome] = {}
    groups = groups_of(jobs, config_source, options, batch, workers)
    with CorpusProgress(len(jobs), enabled=progress) as bar, fewer_collections():
        if workers <= 1 or len(groups) <= 1:
            for group in groups:
                for outcome in run_group(config_source, options, verbose, group):
                    outcomes[outcome.job] = outcome
                    bar.done(outcome)
        else:
            from . import replay  # noqa: F401 - imported once here, so that forked workers start with it loaded

            with ProcessPoolExecutor(min(workers, len(groups)), mp_context=worker_context(),
                                     initializer=worker_setup) as pool:
                futures = [pool.submit(run_group, config_source, options, verbose, group) for group in groups]
                for future in as_completed(futures):
                    for outcome in future.result():
                        outcomes[outcome.job] = outcome
                        bar.done(outcome)
        wall = time.perf_counter() - bar.start
    return [outcomes[job] for job in jobs], wall


def format_corpus(outcomes: Sequence[RecordingOutcome], wall_s: float) -> str:
    """A row per recording (ticks, simulated and wall seconds, real-time factor, what it wrote or its error) and a
    line over the corpus (aggregate real-time factor: simulated seconds ÷ wall seconds of the whole run)."""
    width = max([9] + [len(o.job.name) for o in outcomes])
    lines = [f"{'recording':<{width}}  {'ticks':>7}  {'sim s':>8}  {'wall s':>7}  {'x real':>7}  output",
             f"{'-' * width}  {'-' * 7}  {'-' * 8}  {'-' * 7}  {'-' * 7}  {'-' * 6}"]
    for o in outcomes:
        speed = f"{o.simulated_s / o.wall_s:.1f}" if o.wall_s > 0 and o.ticks else "-"
        wrote = "nothing written" if not o.data_file else f"{o.data_file} (up to the error)" if not o.ticks \
            else f"{o.data_file} ({o.messages} messages)"
        lines.append(f"{o.job.name:<{width}}  {o.ticks:>7}  {o.simulated_s:>8.2f}  {o.wall_s:>7.2f}  {speed:>7}  "
                     f"{wrote}" + (f"; error: {o.error}" if o.error else ""))
    simulated = sum(o.simulated_s for o in outcomes)
    failed = sum(o.status != 0 for o in outcomes)
    speed = f"{simulated / wall_s:.1f}x real time" if wall_s > 0 else "-"
    lines.append(f"{len(outcomes)} recordings, {sum(o.ticks for o in outcomes)} ticks: {simulated:.2f} s simulated in "
                 f"{wall_s:.1f} s wall ({speed}, aggregate)" + (f"; {failed} failed" if failed else ""))
    return "\n".join(lines)
