"""The inputs of a batch's lanes as a tick plan: where a lane's ticks fall, and, for a recording whose every tick
only needs the latest whole joint state, what each tick holds, as arrays for all such lanes of a batch.

A lane of a batched replay (:mod:`.batch_replay`) hands its inputs to its core and pauses whenever a tick is due
(:func:`fed_ticks`: the clock rules of :class:`~.tick_clock.TickClock`, as :class:`~.run_loop.RunLoop` applies
them). A recording whose joint states are each finite and name every actuated joint in order
(:meth:`~..ros.node_core.NodeCore.sets_every_joint`) leaves its core nothing to decide per joint state: each tick
holds the latest joint state fed before it, and takes it as a new joint sample when one came since the previous
tick. Its TF messages leave the core nothing to decide either when they are what ``robot_state_publisher`` sends:
static transforms (and robot descriptions) before tick 0 and before any ``/tf`` transform, which the core takes up
front, and on ``/tf`` transforms that the TF buffer stores every one of (finite, unit quaternions, not too old, no
frame refused) and that are not on the chain of the root link's pose (link transforms: a world lane poses links by
forward kinematics), which is then the same static pose at every tick (:class:`_TFInputs`). :func:`plan_lane` runs
:func:`fed_ticks` over such a recording up front, counting the joint states fed before each tick
(:class:`LanePlan`), and :class:`PlannedSteps` then stages the joint samples and launch arguments of every planned
lane of a suite step in one indexed copy each, as the lanes' cores and world lanes would one by one
(:func:`~..world.motion.next_joint_sample`: the stamps, sample argument and Δt). Anything else is fed message by
message.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..io.input_cdr import JointStateRow, TFRow
from ..io.stamps import NS_PER_S, ns_to_seconds
from ..ros.inputs import decode_tf_batch, tf_stamps_ns, tf_transform_count
from ..ros.node_core import MAX_TRANSFORMS_PER_MESSAGE, NodeCore
from ..world.lane_motion import LaneSample
from ..world.motion import WorldModel, next_joint_sample
from ..world.tf_buffer import TFBuffer, TFError, unit_norms
from .bag_inputs import BagInputError
from .tick_clock import Tick, TickClock

PLAN_MAX_MESSAGES = 1 << 17
"""A recording with more input messages is fed message by message (a plan holds every joint state in memory)."""


class GoAlone(Exception):
    """A lane's recording must be replayed alone; the message says why."""


def fed_ticks(clock: TickClock, blocks: Iterable[Sequence[tuple]], handlers: Mapping[str, Callable[[Any], Any]],
              copy: Callable[[int, list[tuple[str, Any]]], None] | None = None) -> Iterator[None]:
    """Hand the input events of ``blocks`` (lists of :class:`~.run_loop.InputEvent` s or plain tuples of their
    fields) to ``handlers`` (input kind → what takes a message of that kind) as :class:`~.run_loop.RunLoop` does,
    pausing whenever ``clock`` has a tick due (the caller takes it); copy: also called with (log_ns, [(topic,
    message)]) of every input. A time line that restarts raises GoAlone."""
    for block in blocks:
        for kind, topic, log_ns, c, message in block:
            if c is not None:
                change = clock.change(c)
                if change in ("back", "gap"):
                    raise GoAlone(f"its time line restarts at {c / NS_PER_S:.6f} s")
                if change == "start":
                    clock.start_line(c)
                elif change == "reordered":
                    c = clock.clock
                else:
                    while clock.due(c):
                        yield
                clock.set(c, log_ns)
            handlers[kind](message)
            if copy is not None:
                copy(log_ns, [(topic, message)])
    while clock.due():
        yield


class LanePlan(NamedTuple):
    """A planned lane (module docstring), per tick k: the tick, its time t (s), the stamp of the joint sample it
    holds (s; None: none yet) and whether that sample's velocities were measured (what its world lane's update
    returns: :meth:`sample`), the kernel's sample argument (``sample_args``; 0: no joint state came since tick k − 1,
    the joints are held; else that of :func:`~..world.motion.next_joint_sample`), the row of ``positions`` /
    ``velocities`` that the tick holds (−1: none yet), whether a new sample carries velocities (``measured``) and
    the Δt (s) of a new sample; positions, velocities: [M, n_act] float64 of the M joint states in the order fed
    (velocities zero where a message has none); prefix: the (input kind, message) of the static TF messages and robot
    descriptions, in order, that the core takes before tick 0 (:meth:`~.batch_replay.Lane.follow_plan`)."""

    ticks: list[Tick]
    times: list[float]
    stamps: list[float | None]
    velocity_measured: list[bool]
    sample_args: np.ndarray
    rows: np.ndarray
    measured: np.ndarray
    dt: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    prefix: list[tuple[str, Any]]

    def sample(self, k: int) -> LaneSample:
        """What tick k's world lane takes (the :class:`~..world.lane_motion.LaneSample` of its update)."""
        return LaneSample(self.times[k], self.stamps[k], self.velocity_measured[k])


def _read(blocks: Iterable[list[tuple]], core: NodeCore) -> tuple[list[list[tuple]] | None, Iterator[list[tuple]]]:
    """The blocks of a recording whose every message may be planned (:func:`_fits`), read through, or None once one
    may not (or there are more than :data:`PLAN_MAX_MESSAGES` messages, or reading fails); with the blocks to feed
    the recording from message by message instead (those read so far, then the rest, or the read error raised
    again)."""
    blocks = iter(blocks)
    read, count = [], 0
    fits = _fits(core)
    whole = True
    try:
        for block in blocks:
            read.append(block)
            count += len(block)
            if count > PLAN_MAX_MESSAGES or not all(fits(kind, m) for kind, _, _, _, m in block):
                whole = False
                break
    except BagInputError as exc:
        return None, _then_raise(read, exc)
    return (read if whole else None), _chained(read, blocks)


def _fits(core: NodeCore) -> Callable[[str, Any], bool]:
    """(input kind, message) → whether a plan of ``core``'s lane may hold it: a whole joint state (module
    docstring); a ``/tf`` message of at most :data:`~..ros.node_core.MAX_TRANSFORMS_PER_MESSAGE` transforms, finite
    with unit quaternions (:func:`~..world.tf_buffer.unit_norms`) when decoded as a row of its block (one decoded
    alone goes through a TF buffer: :meth:`_TFInputs.inert`); any static TF message or robot description (where
    they come: :class:`_TFInputs`)."""
    n = len(core.joint_positions()[0])

    def fits(kind: str, m: Any) -> bool:
        if kind == "joint_states":
            return type(m) is JointStateRow and m.finite and m.position.shape == (n,) and \
                m.velocity.size in (0, n) and core.sets_every_joint(m.names)
        if kind != "tf":
            return True
        if tf_transform_count(m) > MAX_TRANSFORMS_PER_MESSAGE:
            return False
        return type(m) is not TFRow or not m.parents or m.norms is not None and unit_norms(m.norms)

    return fits


def _chained(read: list[list[tuple]], rest: Iterator[list[tuple]]) -> Iterator[list[tuple]]:
    yield from read
    yield from rest


def _then_raise(read: list[list[tuple]], exc: Exception) -> Iterator[list[tuple]]:
    yield from read
    raise exc


class _Unplanned(Exception):
    """A recording's TF inputs are not what a plan holds (:class:`_TFInputs`)."""


class _TFInputs:
    """The TF inputs of a recording that :func:`_fits`, taken as :func:`plan_lane` feeds it through: the static TF
    messages and robot descriptions (:attr:`prefix`: (kind, message) in order), each before tick 0 and before every
    ``/tf`` transform, and the ``/tf`` messages (:meth:`dynamic`), none older than the newest one before it by the TF
    buffer's ``cache_time`` (s), so that none is too old to be stored; else :class:`_Unplanned`. ticks: the ticks
    taken so far (the caller's list)."""

    def __init__(self, cache_time: float, ticks: list[Tick]):
        self.prefix: list[tuple[str, Any]] = []
        self._cache_time, self._ticks = cache_time, ticks
        self._layouts: list[Any] = []
        """The /tf messages in order, but those of a run of block rows of one layout after its first."""
        self._newest = -math.inf

    def early(self, kind: str) -> Callable[[Any], None]:
        """What takes a message of ``kind`` (``tf_static``, ``robot_description``) into :attr:`prefix`."""
        def take(message: Any) -> None:
            if self._ticks or self._layouts:
                raise _Unplanned
            self.prefix.append((kind, message))
        return take

    def dynamic(self, m: Any) -> None:
        """Take a ``/tf`` message (:func:`_fits`)."""
        stamps = tf_stamps_ns(m)
        if not stamps:
            return
        last = self._layouts[-1] if self._layouts else None
        if type(m) is not TFRow or type(last) is not TFRow or m.parents is not last.parents or \
                m.children is not last.children:
            self._layouts.append(m)
        if min(stamps) / NS_PER_S < self._newest - self._cache_time:  # as TFBuffer compares seconds
            raise _Unplanned
        self._newest = max(self._newest, max(stamps) / NS_PER_S)

    def inert(self, core: NodeCore) -> bool:
        """Whether the ``/tf`` transforms change nothing that ``core``'s world lane reads (it poses links by forward
        kinematics; objects posed by TF are not planned: :func:`~.batch_replay.follows_plans`): a TF buffer of the
        core's limits holding the static transforms of :attr:`prefix` stores every one (a bad value, a new frame, a
        second parent, a loop or a full buffer would be dropped and logged; later rows of a layout's run are checked
        by :func:`_fits` and :meth:`dynamic`) and, where TF poses the robot's root link, its pose in the world frame
        is static: its chain holds none of them, as ``robot_state_publisher``'s link transforms."""
        buffer = TFBuffer(core.tf.cache_time, core.tf.max_samples, core.tf.max_frames)
        for kind, m in self.prefix:
            if kind == "tf_static":
                if tf_transform_count(m) > MAX_TRANSFORMS_PER_MESSAGE:
                    return False
                b = decode_tf_batch(m)
                buffer.set_transforms(b.parents, b.children, b.stamps, b.values, True, b.norms)
        for m in self._layouts:
            b = decode_tf_batch(m)
            if not all(ok is True for ok in buffer.set_transforms(b.parents, b.children, b.stamps, b.values, False,
                                                                  b.norms)):
                return False
        world = core.suite.world
        if not world.root_from_tf:
            return True
        try:
            return buffer.lookup(core.world_frame, core.suite.robot.root_link).static
        except TFError:
            return False


def plan_lane(blocks: Iterable[list[tuple]], core: NodeCore, rate: float, jump_threshold_ns: int,
              gap_threshold_ns: int) -> tuple[LanePlan | None, Iterator[list[tuple]]]:
    """The :class:`LanePlan` of the inputs ``blocks`` (:meth:`~.bag_inputs.BagInputs.core_blocks`) for ``core`` on
    a clock of ``rate`` Hz and those thresholds (ns), or None when they are not what a plan holds (module docstring)
    or their time line restarts; with the blocks to feed them message by message (the plan reads them through)."""
    read, feed = _read(blocks, core)
    if read is None:
        return None, feed
    clock, messages = TickClock(rate, jump_threshold_ns, gap_threshold_ns), []
    ticks, fed = [], []
    tf = _TFInputs(core.tf.cache_time, ticks)
    handlers = {"joint_states": messages.append, "tf": tf.dynamic, "tf_static": tf.early("tf_static"),
                "robot_description": tf.early("robot_description")}
    try:
        for _ in fed_ticks(clock, read, handlers):
            ticks.append(clock.take())
            fed.append(len(messages))
    except (GoAlone, _Unplanned):
        return None, feed
    if not tf.inert(core):
        return None, feed
    n = len(core.joint_positions()[0])
    has_velocity = [bool(m.velocity.size) for m in messages]
    positions = np.stack([m.position for m in messages]) if messages else np.zeros((0, n))
    velocities = np.zeros_like(positions)
    if any(has_velocity):
        velocities[has_velocity] = [m.velocity for m in messages if m.velocity.size]
    times, stamps, vel, kinds, rows, measured, dts = [], [], [], [], [], [], []
    j0 = j1 = math.nan
    held, vel_measured = 0, False
    for tick, count in zip(ticks, fed):
        t = ns_to_seconds(tick.t_ns)  # as the core's pose takes it
        came = count > held
        held, kind, dt = count, 0, 1.0
        if came:
            j0, j1, kind, dt = next_joint_sample(t, j0, j1)
            vel_measured = has_velocity[count - 1]
        times.append(t)
        stamps.append(None if math.isnan(j1) else j1)
        vel.append(vel_measured)
        kinds.append(kind)
        rows.append(count - 1)
        measured.append(came and has_velocity[count - 1])
        dts.append(dt)
    return LanePlan(ticks, times, stamps, vel, np.array(kinds, dtype=np.int32), np.array(rows, dtype=np.intp),
                    np.array(measured, dtype=bool), np.array(dts, dtype=np.float64), positions, velocities,
                    tf.prefix), feed


class PlannedSteps:
    """The planned lanes of a batch, each (env, :class:`LanePlan`) of ``lanes``, staged step by step into the
    inputs of ``world``'s :meth:`~..world.motion.WorldModel.update_envs` (a CPU model: ``host_env_inputs``) with one
    indexed copy per input for all of them (:meth:`stage`)."""

    def __init__(self, world: WorldModel, lanes: Sequence[tuple[int, LanePlan]]):
        self._inputs = world.host_env_inputs()
        count = max(len(plan.ticks) for _, plan in lanes)
        self._envs = np.array([env for env, _ in lanes], dtype=np.intp)
        shape = (len(lanes), count)
        self._sample, self._measured = np.zeros(shape, dtype=np.int32), np.zeros(shape, dtype=bool)
        self._live = np.zeros(shape, dtype=bool)
        self._rows, self._dt = np.zeros(shape, dtype=np.intp), np.ones(shape)
        start = 0
        for i, (_, plan) in enumerate(lanes):
            k = len(plan.ticks)
            self._live[i, :k] = True
            self._sample[i, :k], self._measured[i, :k], self._dt[i, :k] = plan.sample_args, plan.measured, plan.dt
            self._rows[i, :k] = plan.rows + start
            start += len(plan.positions)
        self._positions = np.concatenate([plan.positions for _, plan in lanes])
        self._velocities = np.concatenate([plan.velocities for _, plan in lanes])
        self._any_measured = bool(self._measured.any())

    def stage(self, step: int) -> None:
        """The inputs of suite step ``step`` (tick ``step`` of every planned lane that has it): the new joint samples'
        positions (and measured velocities) in their envs' staging rows, and every stepped env's launch arguments,
        as each lane's world lane would set them (held inputs: sample 0, the other arguments kept)."""
        q, qd, sample, velocity_given, dt = self._inputs
        kinds = self._sample[:, step]
        new = kinds != 0
        envs = self._envs[new]
        rows = self._rows[new, step]
        q[envs] = self._positions[rows]
        if self._any_measured:
            measured = self._measured[:, step]
            qd[self._envs[measured]] = self._velocities[self._rows[measured, step]]
        live = self._live[:, step]
        sample[self._envs[live]] = kinds[live]
        velocity_given[envs] = self._measured[new, step]
        dt[envs] = self._dt[new, step]
