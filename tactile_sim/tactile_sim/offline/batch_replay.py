"""Many recordings replayed as the envs of one sensor suite (``tactile-sim replay --batch N``).

A batch of N recordings shares one :class:`~..suite.SensorSuite` of N envs, each drawing noise stream 0 (what the
one-env suite of a lone replay draws). Each recording is a :class:`Lane`: env e of that suite behind a node core of its
own (:class:`EnvCore`: inputs, TF buffer, held joints, env e of the suite's world model as a lane on the recording's own
clock (:mod:`~..world.lane_motion`), the encoders of env e), its clock (:class:`~.tick_clock.TickClock`) and its output
(a bag, or arrays: :mod:`.array_output`). Every lane's time line starts at suite step 0 and each suite step is tick k of
every lane, so the step count and the per-evaluation counters of the shared sensors are each lane's own tick count, as
in a lone replay: each output is byte for byte that of replaying its recording alone. Per suite step every lane takes
its inputs and one launch of the world model poses all envs. A lane that has ended writes nothing more; its env is
stepped on holding its last joints and poses, read by nobody.

What one shared suite cannot reproduce is replayed alone (:func:`~.corpus.run_job`, the lane's output replaced): a
recording whose time line restarts (a backwards jump or a forward gap: the suite would have to be rewound for one
env), one whose update does not step the suite (waiting for TF, a failed world update), one that cannot be opened or
read through, one that ticks nothing or leaves joints unset (:func:`~.replay.unset_joints_problem`), and, with a
JointTorque sensor, one whose joint samples the sensor would not see as in its lone replay (:func:`torque_agrees`).
Options that cannot be batched at all (:func:`batch_problem`) replay every recording alone.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ..config.schema import SuiteConfig
from ..constants import GAP_THRESHOLD, JUMP_THRESHOLD
from ..errors import ConfigError
from ..io.stamps import NS_PER_S
from ..ros.node_core import NodeCore
from ..ros.node_params import NodeParams
from ..io.mcap_file import MESSAGE_HEAD
from ..ros.sensor_encoders import BatchReads, SensorEncoder, TemplateMemory, node_encoders
from ..ros.throttled_log import LogSink
from ..sensors.joint_torque.sensor import joint_sample
from ..suite import SensorSuite
from ..world.lane_motion import LaneSample, LaneWorldModel
from ..world.state import WorldState
from ..world.tf_buffer import TFBuffer
from .array_output import ArrayOutput
from .bag_inputs import BagInputError, BagInputs, InputTopics, open_bag
from .batch_records import BatchRecords, applies
from .corpus import RecordingOutcome, ReplayJob, prefixed_log, run_job
from .lane_plan import GoAlone, LanePlan, PlannedSteps, fed_ticks, plan_lane
from .output_bag import OutputBag
from .replay import check_output_place, default_rate
from .run_loop import check_threshold, input_handlers
from .tick_clock import Tick, TickClock


def batch_problem(config: SuiteConfig, options: dict[str, Any]) -> str | None:
    """Why recordings replayed with ``config`` and the :func:`~.replay.replay_bag` keywords ``options`` cannot share
    a suite (None when they can): markers, or a robot description that comes from each recording."""
    if options.get("markers"):
        return "--markers"
    if options.get("robot") is None and config.robot is None:
        return "the robot description comes from each recording"
    return None


class EnvSuite:
    """Env ``env`` of a shared suite as a node core uses it: the suite's scene, robot, layouts, sensors and step count,
    and env ``env`` of the suite's world model as a lane of its own (:class:`~..world.lane_motion.LaneWorldModel`,
    posed by the core's TF buffer ``tf``; the root link too when the suite's world model takes it from TF). The lane
    does not check its joint inputs finite again: a node core holds only joints it checked (others are dropped)."""

    def __init__(self, suite: SensorSuite, env: int, tf: TFBuffer):
        self.shared, self.env, self._tf = suite, env, tf
        self.scene, self.robot, self.layouts, self.batches = suite.scene, suite.robot, suite.layouts, suite.batches
        self.sensor_names = suite.sensor_names
        self.world = LaneWorldModel(suite.world, env, tf=tf, check_finite=False)

    @property
    def steps(self) -> int:
        """Steps of the shared suite."""
        return self.shared.steps

    def rewind(self) -> None:
        """A new lane of the shared suite's world model (the shared suite is rewound by the batch's owner, once for all
        envs)."""
        self.world = LaneWorldModel(self.shared.world, self.env, tf=self._tf, check_finite=False)


class SharedSuite:
    """The suite of ``n_envs`` envs of a batch and the encoders of every env, built for the first :class:`EnvCore`
    that asks (:meth:`view`, :meth:`encoders`); every env draws noise stream 0."""

    def __init__(self, n_envs: int):
        self.n_envs = n_envs
        self.suite: SensorSuite | None = None
        self._encoders: tuple[list[list[tuple[SensorEncoder, int]]], TemplateMemory] | None = None

    def view(self, env: int, config: SuiteConfig, description: str | None, device: str, tf: TFBuffer,
             root_from_tf: bool) -> EnvSuite:
        """Env ``env`` of the suite of ``config`` (built on the first call; raises what its construction raises)."""
        if self.suite is None:
            self.suite = SensorSuite(config, robot_description=description, device=device or None,
                                     n_envs=self.n_envs, tf=tf, root_from_tf=root_from_tf,
                                     noise_streams=[0] * self.n_envs)
        return EnvSuite(self.suite, env, tf)

    def encoders(self, suite: EnvSuite, world_frame: str, env: int,
                 ground_truth: bool) -> tuple[list[tuple[SensorEncoder, int]], TemplateMemory]:
        """The encoders of env ``env`` and the memory of every env's templates (a row per env, with room for MCAP
        message heads: :mod:`.batch_records`); built on the first call (``suite``: any env's view; ``world_frame``,
        ``ground_truth``: those of every core of the batch)."""
        if self._encoders is None:
            self._encoders = node_encoders(suite, world_frame, range(self.n_envs), ground_truth, MESSAGE_HEAD)
        encoders, memory = self._encoders
        return encoders[env], memory


class EnvCore(NodeCore):
    """A node core that publishes env ``env`` of ``shared``'s suite; config, params and log as :class:`NodeCore`'s.
    Its :meth:`update` is not used: every env's core takes its inputs (:meth:`pose`, which returns its lane's
    :class:`~..world.lane_motion.LaneSample` instead of a state), the suite's world model steps all envs at once,
    the shared suite steps once, then each core publishes (:meth:`publish`)."""

    def __init__(self, shared: SharedSuite, env: int, config: SuiteConfig, params: NodeParams,
                 log: LogSink | None = None):
        self._shared, self.env = shared, env
        super().__init__(config, params, log=log)

    def _new_suite(self, config: SuiteConfig, root_from_tf: bool) -> EnvSuite:
        return self._shared.view(self.env, config, self._description, self.params.device, self.tf, root_from_tf)

    def _new_encoders(self, suite: EnvSuite) -> tuple[list[tuple[SensorEncoder, int]], TemplateMemory]:
        return self._shared.encoders(suite, self.world_frame, self.env, self.params.publish_ground_truth)

    def _root_link(self, config: SuiteConfig) -> str | None:
        robot = self._shared.suite.robot if self._shared.suite is not None else None
        return robot.root_link if robot is not None else super()._root_link(config)


class BatchCores:
    """The env cores of this process's latest batch, kept for the next batch of the same configuration object,
    parameters and size (the shared suite and every core rewound instead of built again)."""

    def __init__(self) -> None:
        self._kept: tuple[SuiteConfig, NodeParams, list[EnvCore]] | None = None

    def take(self, config: SuiteConfig, params: NodeParams, logs: Sequence[LogSink]) -> list[EnvCore]:
        """An env core per log sink of ``logs``, of one shared suite, rewound or new (raises what building raises)."""
        kept, self._kept = self._kept, None
        if kept is not None and kept[0] is config and kept[1] == params and len(kept[2]) == len(logs):
            cores = kept[2]
            cores[0]._shared.suite.rewind()
            for core, log in zip(cores, logs):
                core.rewind(log)
        else:
            shared = SharedSuite(len(logs))
            cores = [EnvCore(shared, e, config, params, log) for e, log in enumerate(logs)]
        self._kept = (config, params, cores)
        return cores


class Lane:
    """One recording of a batch: its job, env core, inputs (``blocks``: lists of input events, each an
    :class:`~.run_loop.InputEvent` or a plain tuple of its fields: :meth:`~.bag_inputs.BagInputs.core_blocks`), clock
    and output (module docstring; ``bag``: an :class:`~.output_bag.OutputBag` or an
    :class:`~.array_output.ArrayOutput`). rate: Hz; jump_threshold_ns, gap_threshold_ns: the clock's; copy_inputs:
    also write every input to the bag; plan_inputs: the bag's inputs (those of ``blocks``, not yet read) where they
    may have a :class:`~.lane_plan.LanePlan` (:meth:`follow_plan`), else None."""

    def __init__(self, job: ReplayJob, core: EnvCore, blocks: Iterable[Sequence[tuple]], bag: OutputBag | ArrayOutput,
                 rate: float, jump_threshold_ns: int, gap_threshold_ns: int, copy_inputs: bool,
                 plan_inputs: BagInputs | None = None):
        self.job, self.core, self.bag = job, core, bag
        self.plannable = plan_inputs is not None
        self.plan: LanePlan | None = None
        self._plan_inputs, self._blocks = plan_inputs, blocks
        self.clock = TickClock(rate, jump_threshold_ns, gap_threshold_ns)
        self.copy_inputs = copy_inputs
        self.ticks = self.productive_ticks = 0
        self.torque_stamps: dict[int, float] = {}
        """Stamp (s) of the latest joint sample each JointTorque batch (by id) accepted from this recording."""
        self.alone: str | None = None
        """Why this recording is to be replayed alone (None while it runs in the batch)."""
        self._due = fed_ticks(self.clock, blocks, input_handlers(core), bag.write_all if copy_inputs else None)

    def leaves_joints_unset(self) -> bool:
        """Whether actuated joints stayed unset by the joint states taken so far (a lone replay warns or fails:
        :func:`~.replay.unset_joints_problem`). A plan followed (:meth:`follow_plan`) sets every joint from its first
        joint state on, without its core taking them."""
        if self.plan is not None and self.plan.ticks:
            return not len(self.plan.positions) and bool(self.core.joint_positions()[0])
        return bool(self.core.unset_joints())

    def follow_plan(self) -> bool:
        """Read the inputs through for their :class:`~.lane_plan.LanePlan` (:attr:`plan`), which the caller follows
        instead of :meth:`next_tick` when it has ticks (True: the core has taken the plan's prefix, and its world lane
        the root pose, as at tick 0); else (False; None: no plan) :meth:`next_tick` feeds the messages one by one from
        the start. Once, before the first :meth:`next_tick`, for a plannable lane."""
        if self._plan_inputs is None:
            raise ValueError("Lane.follow_plan: once, for a plannable lane")
        self.plan, blocks = plan_lane(self._plan_inputs, self._blocks, self.core, self.clock.rate,
                                      self.clock.jump_threshold_ns, self.clock.gap_threshold_ns)
        self._plan_inputs = self._blocks = None
        if self.plan is not None and self.plan.ticks:
            handlers = input_handlers(self.core)
            for kind, message in self.plan.prefix:
                handlers[kind](message)
            # the root pose of every tick (static: the plan's /tf transforms are not on its chain) in the lane's
            # buffers, as the core's first update takes it (it finds the frames the plan found)
            self.core.pose(self.plan.ticks[0].t_ns)
            return True
        self._due = fed_ticks(self.clock, blocks, input_handlers(self.core))
        return False

    def next_tick(self) -> Tick | None:
        """Feed inputs until the next tick is due and take it; None when the recording has ended or goes alone."""
        try:
            next(self._due)
        except StopIteration:
            return None
        except (GoAlone, BagInputError) as exc:
            self.alone = str(exc)
            return None
        return self.clock.take()


def torque_agrees(suite: SensorSuite, state: WorldState,
                  stepped: list[tuple[Lane, Tick, LaneSample]]) -> list[tuple[Lane, Tick]]:
    """The lanes of ``stepped`` (lane, tick, what its world lane took) whose joint sample every JointTorque batch due
    on this step sees as in the lane's lone replay (accepted or not, Δt: :func:`joint_sample`; measured velocities or
    not), one value per batch for all envs, taken from the step's ``state``, which carries the first lane's; the
    others go alone."""
    torque = [b for k, b in suite.batches if b.sensor_type == "JointTorque" and suite.steps % k == 0]
    if not torque:
        return [(lane, tick) for lane, tick, _ in stepped]
    seen = [joint_sample(state.t, state.joint_stamp, b.t_prev)[1:] for b in torque]  # what each batch sees this step
    keys = [id(b) for b in torque]
    velocities = state.joint_vel is not None
    kept = []
    for lane, tick, taken in stepped:
        stamps = lane.torque_stamps
        samples = [joint_sample(taken.t, taken.joint_stamp, stamps.get(key)) for key in keys]
        if (not velocities or taken.joint_vel_measured == state.joint_vel_measured) and \
                [sample[1:] for sample in samples] == seen:
            for key, (stamp, accepted, _) in zip(keys, samples):
                if accepted:
                    stamps[key] = stamp
            kept.append((lane, tick))
        else:
            lane.alone = "its joint samples differ from the batch's in what JointTorque sees (stamp steps)"
    return kept


def follows_plans(suite: SensorSuite, records: BatchRecords | None) -> bool:
    """Whether :func:`step_lanes` follows the lanes' plans (:mod:`.lane_plan`): written as records, a CPU world model
    and no object posed by TF."""
    return records is not None and suite.world.host_env_inputs() is not None and not suite.world.objects_from_tf


def step_lanes(suite: SensorSuite, lanes: Sequence[Lane]) -> None:
    """Run every lane to its end: per suite step, each live lane's next tick taken by its core's world lane (the
    planned lanes' all at once, :class:`~.lane_plan.PlannedSteps`, where :func:`follows_plans`), the world model
    stepped once for all envs (the others hold: their lanes have ended), the suite stepped once, and each lane's
    messages written to its bag (as records built in place, :mod:`.batch_records`, where that applies; else published
    by each core). A lane whose core does not step goes alone."""
    live = list(lanes)
    records = BatchRecords([lane.core for lane in lanes]) \
        if lanes and applies([lane.core for lane in lanes], [lane.bag for lane in lanes]) else None
    planned = [lane for lane in lanes if lane.plannable and lane.follow_plan()] if follows_plans(suite, records) \
        else []
    plans = PlannedSteps(suite.world, [(lane.core.env, lane.plan) for lane in planned]) if planned else None
    planned_ids = {id(lane) for lane in planned}
    step = 0
    while live:
        stepped = []
        for lane in live:
            if id(lane) in planned_ids:
                if step < len(lane.plan.ticks):
                    stepped.append((lane, lane.plan.ticks[step], lane.plan.sample(step)))
                continue
            tick = lane.next_tick()
            if tick is None:
                continue
            sample = lane.core.pose(tick.t_ns)
            if sample is None:
                lane.alone = (lane.core.waiting_for_tf and f"waiting for TF: {lane.core.waiting_for_tf}") or \
                    "its world update failed"
                continue
            stepped.append((lane, tick, sample))
        if not stepped:
            return
        if plans is not None:
            plans.stage(step)
        step += 1
        first = stepped[0][2]
        state = suite.world.update_envs([lane.core.env for lane, _, _ in stepped], first.t, first.joint_vel_measured,
                                        first.joint_stamp)
        stepped = torque_agrees(suite, state, stepped)
        if not stepped:  # every lane left goes alone (none can be written from this batch's step)
            return
        suite.step(state)
        if records is not None:
            wrote = records.write(suite.steps - 1, [(lane.core.env, tick.t_ns, tick.log_ns, lane.bag)
                                                    for lane, tick in stepped])
            for lane, _ in stepped:
                lane.ticks += 1
                lane.productive_ticks += wrote
        else:
            reads = BatchReads()
            for lane, tick in stepped:
                out = lane.core.publish(tick.t_ns, reads)
                lane.ticks += 1
                if out:
                    lane.productive_ticks += 1
                    lane.bag.write_all(tick.log_ns, out)
                if isinstance(lane.bag, ArrayOutput):
                    lane.bag.on_tick(tick.t_ns)   # the joint positions of the step, as a lone replay records them
        live = [lane for lane, _ in stepped]


def kept_log(lines: list[tuple[str, str]]) -> LogSink:
    """A log sink that keeps the (level, text) of each line in ``lines`` (printed once the lane is known not to go
    alone, whose replay logs them again)."""
    return lambda level, text: lines.append((level, text))


@functools.cache
def _batch_cores() -> BatchCores:
    return BatchCores()


def run_batch(config_source: str, options: dict[str, Any], verbose: bool,
              jobs: Sequence[ReplayJob]) -> list[RecordingOutcome]:
    """Replay ``jobs`` as one batch (module docstring) with the configuration at ``config_source`` and the
    :func:`~.replay.replay_bag` keywords ``options`` (:func:`batch_problem` None for them); the outcomes in job
    order, those of the recordings that went alone from :func:`~.corpus.run_job`."""
    from .corpus import _config

    start = time.perf_counter()
    config = _config(config_source)
    rate = float(options["rate"]) if options.get("rate") is not None else default_rate(config)
    try:
        robot = options.get("robot")
        description = Path(robot).read_text() if robot is not None else ""
        params = NodeParams(update_rate=rate, device=options.get("device", ""), robot_description=description,
                            publish_ground_truth=options.get("ground_truth", False), viz_rate=0.0)
        logs = {job.name: [] for job in jobs}
        cores = _batch_cores().take(config, params, [kept_log(lines) for lines in logs.values()])
        jump = round(check_threshold("jump_threshold", options.get("jump_threshold", JUMP_THRESHOLD)) * NS_PER_S)
        gap = round(check_threshold("gap_threshold", options.get("gap_threshold", GAP_THRESHOLD)) * NS_PER_S)
    except (OSError, ConfigError, ValueError):
        return [run_job(config_source, options, verbose, job) for job in jobs]  # each says why, as alone
    lanes: list[Lane | ReplayJob] = []
    with ExitStack() as stack:
        output_format, overwrite = options.get("output_format", "bag"), options.get("overwrite", False)
        for job, core in zip(jobs, cores):
            try:
                check_output_place(job.source, job.output, output_format)
                reader = stack.enter_context(open_bag(job.source))
                inputs = BagInputs(reader, options.get("topics", InputTopics()), options.get("clock", "header"))
                bag = stack.enter_context(ArrayOutput(job.output, core, rate=rate, overwrite=overwrite)
                                          if output_format == "npz" else
                                          OutputBag(job.output, node_name=core.name, overwrite=overwrite))
            except (BagInputError, ConfigError, OSError, ValueError):  # it goes alone, whose replay says why
                lanes.append(job)
                continue
            copy_inputs = options.get("copy_inputs", False)  # the copies need the messages, a core only their rows
            plannable = output_format == "bag" and not copy_inputs
            lanes.append(Lane(job, core, ([event] for event in inputs.events()) if copy_inputs else
                              inputs.core_blocks(), bag, rate, jump, gap, copy_inputs, inputs if plannable else None))
        step_lanes(cores[0]._shared.suite, [lane for lane in lanes if isinstance(lane, Lane)])
    wall = (time.perf_counter() - start) / len(jobs)
    outcomes = []
    for lane in lanes:
        if isinstance(lane, ReplayJob):
            outcomes.append(run_job(config_source, options, verbose, lane))
        elif lane.alone is not None or lane.productive_ticks == 0 or lane.leaves_joints_unset():  # alone says why
            outcomes.append(run_job(config_source, {**options, "overwrite": True}, verbose, lane.job))
        else:
            log = prefixed_log(lane.job.name, verbose)
            for level, text in logs[lane.job.name]:
                log(level, text)
            outcomes.append(RecordingOutcome(lane.job, str(lane.bag.data_file), lane.ticks, lane.ticks / rate, wall,
                                             sum(lane.bag.counts.values()), None, 0))
    return outcomes
