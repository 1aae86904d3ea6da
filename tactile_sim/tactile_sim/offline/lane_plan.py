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
forward kinematics), which is then the same static pose at every tick (:class:`_TFInputs`).

:func:`plan_lane` reads such a recording through up front into :class:`_Inputs`: decoded at once into arrays
(:meth:`~.bag_inputs.BagInputs.input_arrays`: its joint states, and its ``/tf`` messages where they have one size
and layout, as ``robot_state_publisher`` sends them, checked all at once: :meth:`_TFInputs.dynamic_block`), or,
where that refuses a recording with TF, as the rows of :meth:`~.bag_inputs.BagInputs.core_blocks`; takes its ticks
at once (:func:`~.tick_clock.line_ticks`: where :func:`fed_ticks` would take them, with the clock inputs fed before
each) and counts the joint states fed before each tick (:class:`LanePlan`); :class:`PlannedSteps` then stages the
joint samples and launch arguments of every planned lane of a suite step in one indexed copy each, as the lanes'
cores and world lanes would one by one (:func:`~..world.motion.next_joint_sample`: the stamps, sample argument and
Δt). Anything else is fed message by message.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..io.input_cdr import JointStateRow, TFArrays, TFRow
from ..io.stamps import NS_PER_S, ns_to_seconds
from ..ros.inputs import decode_tf_batch, tf_stamps_ns, tf_transform_count
from ..ros.node_core import MAX_TRANSFORMS_PER_MESSAGE, NodeCore
from ..world.lane_motion import LaneSample
from ..world.motion import WorldModel, next_joint_sample
from ..world.tf_buffer import TFBuffer, TFError, unit_norms
from .bag_inputs import BagInputError, BagInputs
from .tick_clock import Tick, TickClock, line_ticks

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


def _too_old(oldest: Any, newest: Any, cache_time: float) -> Any:
    """Whether a ``/tf`` message whose oldest stamp is ``oldest`` s is too old to be stored in a TF buffer of
    ``cache_time`` s whose newest stamp is ``newest`` s (as :class:`~..world.tf_buffer.TFBuffer` compares seconds;
    floats or arrays of them)."""
    return oldest < newest - cache_time


class _TFInputs:
    """The TF inputs of a recording that :func:`_fits`, taken in the order fed: the static TF messages and robot
    descriptions (:attr:`prefix`: (kind, message) in order; each before every ``/tf`` transform, and, which
    :func:`plan_lane` checks, before tick 0) and the ``/tf`` messages (:meth:`dynamic`), none older than the newest
    one before it by the TF buffer's ``cache_time`` (s), so that none is too old to be stored; else
    :class:`_Unplanned`."""

    def __init__(self, cache_time: float):
        self.prefix: list[tuple[str, Any]] = []
        self._cache_time = cache_time
        self._layouts: list[Any] = []
        """The /tf messages in order, but those of a run of block rows of one layout after its first."""
        self._newest = -math.inf

    def early(self, kind: str, message: Any) -> None:
        """Take a message of ``kind`` (``tf_static``, ``robot_description``) into :attr:`prefix`."""
        if self._layouts:
            raise _Unplanned
        self.prefix.append((kind, message))

    def dynamic(self, m: Any) -> None:
        """Take a ``/tf`` message (:func:`_fits`)."""
        stamps = tf_stamps_ns(m)
        if not stamps:
            return
        last = self._layouts[-1] if self._layouts else None
        if type(m) is not TFRow or type(last) is not TFRow or m.parents is not last.parents or \
                m.children is not last.children:
            self._layouts.append(m)
        if _too_old(min(stamps) / NS_PER_S, self._newest, self._cache_time):
            raise _Unplanned
        self._newest = max(self._newest, max(stamps) / NS_PER_S)

    def dynamic_block(self, block: TFArrays) -> None:
        """Take the m ``/tf`` messages of ``block`` (one layout of at least one transform, in the order fed; the last
        ``/tf`` inputs taken) as :func:`_fits` and :meth:`dynamic` take each: the first through :meth:`dynamic`, the
        others checked at once: every value finite and the quaternions unit (by the largest and the smallest norm;
        those of a message that is not finite are 0), none too old (by the same float seconds: ns / NS_PER_S of
        Python ints, exactly rounded)."""
        if not 0 < len(block.parents) <= MAX_TRANSFORMS_PER_MESSAGE or \
                not unit_norms([float(block.norms.max()), float(block.norms.min())]):
            raise _Unplanned
        oldest = [ns / NS_PER_S for ns in block.stamps_ns.min(axis=1).tolist()]
        newest = [ns / NS_PER_S for ns in block.stamps_ns.max(axis=1).tolist()]
        self.dynamic(TFRow(block.stamps_ns[0].tolist(), block.parents, block.children, block.values[0],
                           block.norms[0].tolist()))
        before = np.maximum.accumulate([self._newest, *newest[1:-1]])  # the newest before each later message
        if _too_old(np.array(oldest[1:]), before[:len(oldest) - 1], self._cache_time).any():
            raise _Unplanned

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


class _Inputs(NamedTuple):
    """A recording's inputs as a plan takes them: the clock time and the receive time of each of its C clock inputs
    (those that set the clock, in the order fed; int64 [C] each, ns), the joint states fed before each of them and in
    all (int [C + 1]), the positions and velocities [J, n_act] float64 of its J joint states in the order fed
    (velocities zero where a message has none) and whether each carries velocities (bool [J]); the (input kind,
    message) of its static TF messages and robot descriptions in order (:attr:`LanePlan.prefix`) and the clock
    inputs fed up to the last of them (tick 0 comes after it: 0 where there is none)."""

    clock_ns: np.ndarray
    receive_ns: np.ndarray
    joints_before: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    has_velocity: np.ndarray
    prefix: list[tuple[str, Any]]
    prefix_clocks: int


def _array_inputs(inputs: BagInputs, core: NodeCore) -> _Inputs | None:
    """The :class:`_Inputs` of a recording read at once (:meth:`~.bag_inputs.BagInputs.input_arrays`, at most
    :data:`PLAN_MAX_MESSAGES`): its joint states and ``/tf`` messages as arrays, checked as :func:`_fits` and
    :class:`_TFInputs` check each (:meth:`_TFInputs.dynamic_block`); None where they cannot be read so or any check
    fails (a recording with TF is then read through as rows: :func:`_row_inputs` decides)."""
    read = inputs.input_arrays(PLAN_MAX_MESSAGES)
    if read is None:
        return None
    count = sum(len(at) for at, _ in read.joint_states)
    n = len(core.joint_positions()[0])
    positions, velocities = np.zeros((count, n)), np.zeros((count, n))
    has_velocity = np.zeros(count, dtype=bool)
    for at, block in read.joint_states:
        if not (block.finite.all() and block.position.shape[1] == n and block.velocity.shape[1] in (0, n)
                and core.sets_every_joint(block.names)):
            return None
        positions[at] = block.position
        if block.velocity.shape[1]:
            velocities[at], has_velocity[at] = block.velocity, True
    tf = _TFInputs(core.tf.cache_time)
    first_tf = read.tf_at[0] if len(read.tf_at) else len(read.is_joint)
    try:
        for i, kind, message in read.early:
            if i > first_tf:  # (_TFInputs.early refuses it)
                return None
            tf.early(kind, message)
        if read.tf is not None:
            tf.dynamic_block(read.tf)
    except _Unplanned:
        return None
    if set(inputs.kinds.values()) != {"joint_states"} and not tf.inert(core):  # (joint states only: no TF inputs)
        return None
    joints_before = np.append((np.cumsum(read.is_joint) - read.is_joint)[read.is_clock], count)
    prefix_clocks = int(np.count_nonzero(read.is_clock[:read.early[-1][0] + 1])) if read.early else 0
    return _Inputs(read.clock_ns, read.receive_ns[read.is_clock], joints_before, positions, velocities, has_velocity,
                   tf.prefix, prefix_clocks)


def _row_inputs(read: list[list[tuple]], core: NodeCore) -> _Inputs | None:
    """The :class:`_Inputs` of the blocks ``read`` of a recording whose every message :func:`_fits`; None where its
    TF inputs are not what a plan holds (:class:`_TFInputs`) or a time leaves int64."""
    tf = _TFInputs(core.tf.cache_time)
    clock, receive, joints_before, messages = [], [], [], []
    prefix_clocks = 0
    try:
        for block in read:
            for kind, _, log_ns, c, m in block:
                if c is not None:
                    clock.append(c)
                    receive.append(log_ns)
                    joints_before.append(len(messages))
                if kind == "joint_states":
                    messages.append(m)
                elif kind == "tf":
                    tf.dynamic(m)
                else:
                    tf.early(kind, m)
                    prefix_clocks = len(clock)
        clock, receive = np.array(clock, dtype=np.int64), np.array(receive, dtype=np.int64)
    except (_Unplanned, OverflowError):  # OverflowError: a receive time past int64 (the MCAP field is uint64)
        return None
    if not tf.inert(core):
        return None
    n = len(core.joint_positions()[0])
    has_velocity = np.array([bool(m.velocity.size) for m in messages], dtype=bool)
    positions = np.stack([m.position for m in messages]) if messages else np.zeros((0, n))
    velocities = np.zeros_like(positions)
    if has_velocity.any():
        velocities[has_velocity] = [m.velocity for m in messages if m.velocity.size]
    joints_before.append(len(messages))
    return _Inputs(clock, receive, np.array(joints_before, dtype=np.intp), positions, velocities, has_velocity,
                   tf.prefix, prefix_clocks)


def plan_lane(inputs: BagInputs, blocks: Iterable[list[tuple]], core: NodeCore, rate: float, jump_threshold_ns: int,
              gap_threshold_ns: int) -> tuple[LanePlan | None, Iterable[list[tuple]]]:
    """The :class:`LanePlan` of a recording's ``inputs`` (``blocks``: their :meth:`~.bag_inputs.BagInputs.core_blocks`,
    not yet read) for ``core`` on a clock of ``rate`` Hz and those thresholds (ns), or None when they are not what a
    plan holds (module docstring) or their time line restarts; with the blocks to feed them message by message (a
    recording read at once as arrays is read apart from them: ``blocks`` itself; one with TF that is not, through
    them)."""
    taken, feed = _array_inputs(inputs, core), blocks
    if taken is None and set(inputs.kinds.values()) != {"joint_states"}:
        read, feed = _read(blocks, core)
        taken = None if read is None else _row_inputs(read, core)
    if taken is None:
        return None, feed
    line = line_ticks(taken.clock_ns, taken.receive_ns, rate, jump_threshold_ns, gap_threshold_ns)
    if line is None:
        return None, feed
    ticks, fed = line
    if ticks and fed[0] < taken.prefix_clocks:  # a static TF message or robot description after tick 0
        return None, feed
    joints = taken.joints_before[fed]  # the joint states fed before each tick
    times = [ns_to_seconds(tick.t_ns) for tick in ticks]  # as the core's pose takes them
    came = np.diff(joints, prepend=0) > 0  # a joint state came since the previous tick
    new = np.flatnonzero(came)
    kinds, dts = np.zeros(len(ticks), dtype=np.int32), np.ones(len(ticks))
    j0 = j1 = math.nan
    sampled = []  # (sample argument, Δt, stamps after it) of each new sample
    for k in new.tolist():
        j0, j1, kind, dt = next_joint_sample(times[k], j0, j1)
        sampled.append((kind, dt, j1))
    kinds[new], dts[new] = [s[0] for s in sampled], [s[1] for s in sampled]
    held = np.cumsum(came) - 1  # per tick, the latest new sample (its number among them; −1: none yet)
    stamps = [sampled[i][2] if i >= 0 else None for i in held.tolist()]
    rows = joints - 1
    measured = np.append(taken.has_velocity, False)[rows]  # row −1 (none yet): False
    return LanePlan(ticks, times, stamps, measured.tolist(), kinds, rows, came & measured, dts, taken.positions,
                    taken.velocities, taken.prefix), feed


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
        as each lane's world lane would set them (held inputs: sample 0, the other arguments kept). Nothing past
        the last planned tick (a lane fed message by message may step on after every planned lane ended)."""
        if step >= self._sample.shape[1]:
            return
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
