"""The logic of ``tactile_sim_node`` without rclpy: inputs → world update → suite step → encoded messages.

:class:`NodeCore` owns the sensor suite (one env, unbatched), a TF buffer and the latest joint positions. The rclpy
node (:mod:`.node`) only forwards callbacks to it and publishes what it returns; tests and benchmarks drive it
directly with rosbags messages or plain samples (:mod:`.inputs`).

* Inputs never raise: a bad joint state or transform is dropped (counted in ``stats.dropped`` by reason and logged
  throttled). Joint states may cover a subset of the joints (the others hold); names of joints the robot does not
  have are ignored (counted, logged); mimic joints are derived from their source and ignored silently.
* :meth:`NodeCore.update` is called on a timer at ``update_rate``, or per accepted joint state (``step_on``), with the
  node clock (integer nanoseconds): it poses the robot by forward kinematics of the latest joint positions (the joint
  velocities of the message when every joint has one, else finite differences), the root link by TF (world frame →
  root link, unless the world frame is the root link itself) and objects by TF or their fixed pose, steps the suite
  once and returns the messages of every sensor evaluated on this step, stamped with the update time. While a TF frame
  it needs is missing the update is skipped (reported in diagnostics as waiting for TF). Time going backwards (a
  simulation reset under ``use_sim_time``) rewinds the suite to its state right after build (as a rebuild would, in
  milliseconds) and forgets dynamic transforms (static ones are kept).
* The suite's engine step is ``1/update_rate``: the configuration's ``suite.rate``/``dt`` is replaced, so a change
  of ``update_rate`` at run time rebuilds the sensors.
* Without a robot description (no ``robot_description`` parameter and no ``robot.urdf`` in the configuration) the
  core waits for :meth:`set_robot_description` (the latched ``/robot_description`` topic).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from types import EllipsisType
from typing import Any

import numpy as np

from ..config.errors import suggest
from ..config.schema import SuiteConfig
from ..config.suite_checks import check_suite
from ..errors import ConfigError, SceneError
from ..io.encode import DIAGNOSTIC_ARRAY, encode_diagnostics
from ..io.input_cdr import TF_MESSAGE, TFMessageDecoder, scan_within_float32, sequence_count, within_float32
from ..io.markers import MARKER_ARRAY, marker_array
from ..io.msg_types import deserialize_cdr
from ..io.readings import DiagnosticStatusReading
from ..io.stamps import ns_to_seconds, time_msg_from_ns
from ..suite import SensorSuite
from ..world.state import WorldState
from ..world.tf_buffer import TFBuffer, TFError, TFFull
from ..world.urdf import RobotModel
from .inputs import JointStateSample, TransformSample, decode_tf_batch, tf_transform_count
from .name_tally import NAMES_SHOWN, NameTally, listed
from .node_params import SPECS, NodeParams
from .realtime import Scheduling
from .scene_markers import ObjectMarkers
from .sensor_encoders import (BatchReads, MarkerSettings, Output, SensorEncoder, TemplateMemory, node_encoders,
                              run_index)
from .throttled_log import LogSink, ThrottledLog
from .topic_plan import DIAGNOSTICS_TOPIC, MARKERS_TOPIC, published_topics
from .update_stats import UpdateStats

OK, WARN, ERROR = 0, 1, 2

MAX_TRANSFORMS_PER_MESSAGE = 1000
"""A TF message with more transforms is dropped whole and counted (bounded work per input message)."""

PLAN_CACHE_NAMES = 1024
"""Joint states with more names are planned per message instead of cached (their names are not kept)."""


@dataclass(frozen=True)
class TopicSpec:
    """A topic the node publishes: name (``~/...`` relative to the node, or absolute), message type, and
    ``sensor_data`` True for the sensor-data QoS profile (else reliable, keep last 10)."""

    name: str
    message_type: str
    sensor_data: bool = False


@dataclass(frozen=True, eq=False)
class JointPlan:
    """Where the entries of a joint state with these ``names`` go: duplicates (a name appears twice), the indices
    ``target`` into the actuated joints of the ``source`` entries of the message (``count`` of each; numpy
    indices: a slice where they are one increasing run, ``...`` for both when the message names every actuated
    joint, in order, and nothing else) and the unknown names (neither actuated nor derived joints)."""

    names: tuple[str, ...]
    duplicates: bool
    target: np.ndarray | slice | EllipsisType
    source: np.ndarray | slice | EllipsisType
    count: int
    unknown: list[str]


@dataclass(frozen=True)
class ScheduledEncoder:
    """An encoder and its evaluation period in engine steps (the sensor publishes on the steps it is evaluated)."""

    encoder: SensorEncoder
    every: int


class StepPlan:
    """What a core publishes on a step on which the encoders of ``due`` (of its schedule, in order) are evaluated,
    with ground truth or not: ``branches``, (encoder, ground truth) in publishing order, and their ``writers``
    (each once: one shared by several encoders writes once)."""

    def __init__(self, due: list[SensorEncoder], ground_truth: bool):
        self.branches = [(e, gt) for e in due for gt in (False, True)[:1 + ground_truth]]
        self.writers = list({id(w): w for e, gt in self.branches for w in e.parts[gt][0]}.values())


class NodeCore:
    """See the module docstring. config: a validated configuration (:func:`~tactile_sim.config.load_config`);
    params: the node parameters; log: (level, text) sink, throttled here; name: node name for diagnostics;
    clock: monotonic wall clock of the log throttle (tests inject one).

    Raises ConfigError / SceneError at construction when a sensor name cannot be a topic, ``sensor_data_qos``
    names an unknown sensor, or a robot description is at hand and the suite cannot be built from it.
    """

    env: int = 0
    """The row of the template memory this core publishes (its env, for cores of envs of one suite)."""

    def __init__(self, config: SuiteConfig, params: NodeParams = NodeParams(), *, log: LogSink | None = None,
                 name: str = "tactile_sim_node", clock: Callable[[], float] = time.monotonic):
        self.config = config
        self.params = params
        self.name = name
        self.log = ThrottledLog(log, clock=clock)
        self.stats = UpdateStats()
        self.tf = TFBuffer()
        self._static: dict[str, TransformSample] = {}
        self.suite: SensorSuite | None = None
        self.schedule: list[ScheduledEncoder] = []
        self._templates: TemplateMemory | None = None
        self.object_markers: ObjectMarkers | None = None
        self.build_error: str | None = None
        self.waiting_for_tf: str | None = None
        self._description = params.robot_description or None
        self._check_names()
        self._joint_index: dict[str, int] = {}
        self._derived_joints: set[str] = set()
        self._plan: JointPlan | None = None
        self._q = self._qd = np.zeros(0)
        self._qd_known = np.zeros(0, dtype=bool)
        self._all_qd_known = True  # self._qd_known.all()
        self._any_qd_known = False  # self._qd_known.any()
        self._q_set = np.zeros(0, dtype=bool)  # per actuated joint: set by an accepted joint state since the build
        self._all_q_set = True  # self._q_set.all()
        self._have_joints = False
        self._pending_joints = False
        self._last_t: float | None = None
        self.last_step_ns: int | None = None
        """Node time (ns) of the latest update that stepped the suite (None before one, and after a restart)."""
        self._ignored_joint_names = NameTally()
        self._tf_decoder = TFMessageDecoder()
        if self._description is not None or config.robot is not None:
            self._build()
        else:
            self.log.always("info", f"{name}: waiting for the robot description on /robot_description "
                                    "(no robot_description parameter and no robot.urdf in the configuration)")

    # ------------------------------------------------------------------ set-up
    def _check_names(self) -> None:
        published_topics(self.config, ground_truth=True)  # names as topic tokens, two outputs on one topic
        names = [s.name for s in self.config.sensors]
        for name in self.params.sensor_data_qos:
            if name not in names:
                raise ConfigError(f"parameter 'sensor_data_qos': unknown sensor; got {name!r}; allowed: sensor "
                                  f"names of {self.config.source or 'the configuration'} ({', '.join(names)})"
                                  + (f"; {suggest(name, names)}" if suggest(name, names) else ""))

    @property
    def world_frame(self) -> str:
        return self.params.world_frame or self.config.suite.world_frame

    @property
    def ready(self) -> bool:
        """True once the suite is built (a robot description was at hand and valid)."""
        return self.suite is not None

    def _build(self) -> None:
        """Build the suite for the current parameters and description (raises ConfigError / SceneError)."""
        suite_settings = self.config.suite.model_copy(
            update={"rate": self.params.update_rate, "dt": None, "world_frame": self.world_frame})
        config = self.config.model_copy(update={"suite": suite_settings})
        check_suite(config)  # jitter < dt with the new engine step
        root = self._root_link(config)
        suite = self._new_suite(config, root is not None and root != self.world_frame)
        encoders, self._templates = self._new_encoders(suite)
        schedule = [ScheduledEncoder(e, every) for e, every in encoders]
        published_topics(config, ground_truth=True,  # an output on a ContactSensor body's topic, now known
                         contact_bodies={e.name: e.bodies for e, _ in encoders if hasattr(e, "bodies")})
        order = {name: k for k, name in enumerate(suite.sensor_names)}
        schedule.sort(key=lambda s: order[s.encoder.name])
        self.suite, self.schedule, self.build_error = suite, schedule, None
        self._periods = sorted({s.every for s in schedule})
        self._plans: dict[tuple[bool, ...], StepPlan] = {}
        self.object_markers = None  # built by the first markers() call: most runs draw none
        robot = suite.robot
        actuated = robot.actuated_joint_names if robot is not None else ()
        q_old = {n: (self._q[i], self._qd[i], self._qd_known[i], self._q_set[i])
                 for n, i in self._joint_index.items()}
        self._joint_index = {n: i for i, n in enumerate(actuated)}
        self._plan = None
        self._derived_joints = set(robot.joint_names) - set(actuated) if robot is not None else set()
        self._q, self._qd = np.zeros(len(actuated)), np.zeros(len(actuated))
        self._qd_known, self._q_set = np.zeros(len(actuated), dtype=bool), np.zeros(len(actuated), dtype=bool)
        for n, (q, qd, known, set_) in q_old.items():
            if n in self._joint_index:
                i = self._joint_index[n]
                self._q[i], self._qd[i], self._qd_known[i], self._q_set[i] = q, qd, known, set_
        self._all_qd_known, self._any_qd_known = bool(self._qd_known.all()), bool(self._qd_known.any())
        self._all_q_set = bool(self._q_set.all())
        self._pending_joints = self._have_joints
        self.stats.restart_timing()

    def _new_encoders(self, suite: SensorSuite) -> tuple[list[tuple[SensorEncoder, int]], TemplateMemory]:
        """The encoders of the readings this core publishes and the memory of their templates, whose row
        :attr:`env` is theirs (:func:`~.sensor_encoders.node_encoders`)."""
        (encoders,), memory = node_encoders(suite, self.world_frame, ground_truth=self.params.publish_ground_truth)
        return encoders, memory

    def _new_suite(self, config: SuiteConfig, root_from_tf: bool) -> SensorSuite:
        """The sensors of ``config`` (its engine step and world frame those of the parameters), posed by this core's
        TF buffer; root_from_tf: the root link is posed by TF."""
        return SensorSuite(config, robot_description=self._description, device=self.params.device or None, n_envs=0,
                           tf=self.tf, root_from_tf=root_from_tf)

    def _root_link(self, config: SuiteConfig) -> str | None:
        """The robot's root link name (None without a robot)."""
        if self._description is not None:
            return RobotModel.from_urdf(self._description, geometry=(), inertia_check="off").root_link
        if config.robot is not None:
            return RobotModel.from_urdf(config.robot.urdf, geometry=(), inertia_check="off").root_link
        return None

    def set_robot_description(self, text: str) -> bool:
        """Use a robot description (URDF text) from ``/robot_description``: builds the suite when waiting for one.
        A description that fails to build is logged and reported; the core keeps waiting. True when built."""
        if self.ready or self.params.robot_description or self.config.robot is not None:
            return False
        self._description = text
        try:
            self._build()
        except (ConfigError, SceneError, ValueError) as exc:
            self._description = None
            self.build_error = f"the robot description from /robot_description does not fit the configuration: {exc}"
            self.log.always("error", f"{self.name}: {self.build_error}")
            return False
        self.log.always("info", f"{self.name}: robot description received; {len(self.schedule)} sensors ready")
        return True

    def update_params(self, **values: Any) -> None:
        """Change run-time parameters (validated as :class:`NodeParams`); a new ``update_rate`` rebuilds the suite.
        Read-only parameters raise ValueError."""
        fixed = [k for k in values if SPECS[k].read_only and values[k] != getattr(self.params, k)]
        if fixed:
            raise ValueError(f"parameters {fixed} are read-only (set them at start-up)")
        old = self.params
        self.params = replace(self.params, **values)
        if self.ready and self.params.update_rate != old.update_rate:
            try:
                self._build()
            except ConfigError:
                self.params = old
                raise
            self.log.always("info", f"{self.name}: update_rate {old.update_rate:g} -> {self.params.update_rate:g} "
                                    "Hz; sensors rebuilt")

    # ------------------------------------------------------------------ topics
    def topics(self) -> list[TopicSpec]:
        """Every topic published now (sensor topics, their ground truth when enabled, markers, diagnostics)."""
        out = []
        for s in self.schedule:
            fast = s.encoder.name in self.params.sensor_data_qos
            out += [TopicSpec(t, m, fast) for t, m in s.encoder.topics(self.params.publish_ground_truth)
                    if all(t != o.name for o in out)]  # sensors share a tactile_state topic
        if self.params.viz_rate > 0:
            out.append(TopicSpec(MARKERS_TOPIC, MARKER_ARRAY))
        out.append(TopicSpec(DIAGNOSTICS_TOPIC, DIAGNOSTIC_ARRAY))
        return out

    # ------------------------------------------------------------------ inputs
    def _drop(self, reason: str, text: str) -> bool:
        self.stats.drop(reason)
        self.log("warn", reason, f"{self.name}: {text}")
        return False

    def on_joint_state(self, sample: JointStateSample) -> bool:
        """Take the positions (and velocities) of a joint state; False when the message was dropped."""
        n = len(sample.names)
        if sample.position.shape != (n,):
            return self._drop("joint_states.length_mismatch",
                              f"dropped a joint state with {sample.position.size} positions for {n} names "
                              f"({listed(sample.names)}); every name needs one position")
        if sample.velocity is not None and sample.velocity.shape != (n,):
            return self._drop("joint_states.length_mismatch",
                              f"dropped a joint state with {sample.velocity.size} velocities for {n} names; "
                              "velocity must be empty or have one value per name")
        plan = self._joint_plan(sample.names)
        if plan.duplicates:
            return self._drop("joint_states.duplicate_names",
                              f"dropped a joint state that names a joint twice ({listed(sample.names)})")
        if not (sample.finite or scan_within_float32(sample.position) and (sample.velocity is None
                                                                            or scan_within_float32(sample.velocity))):
            bad = ~within_float32(sample.position)
            if sample.velocity is not None:
                bad |= ~within_float32(sample.velocity)
            bad = np.flatnonzero(bad)
            return self._drop("joint_states.non_finite", f"dropped a joint state with NaN/inf values (or beyond "
                              f"float32's range) for {listed([sample.names[i] for i in bad[:NAMES_SHOWN]], bad.size)}")
        if self.suite is None:  # not ready (the property's test, without its call on this per-message path)
            return False
        if plan.unknown:
            self.stats.drop("joint_states.unknown_names")
            self._ignored_joint_names.add(plan.unknown)
            self.log("warn", "joint_states.unknown_names",
                     f"{self.name}: ignoring joint names the robot does not have: {listed(plan.unknown)}; robot "
                     f"joints: {listed(list(self._joint_index))}")
        if not plan.count:
            return True
        self._q[plan.target] = sample.position[plan.source]
        if not self._all_q_set:  # else nothing to mark
            self._q_set[plan.target] = True
            self._all_q_set = bool(self._q_set.all())
        if sample.velocity is None:
            if self._any_qd_known:  # else nothing to unmark
                self._qd_known[plan.target] = False
                self._any_qd_known = bool(self._qd_known.any())
            self._all_qd_known = False
        else:
            self._qd[plan.target] = sample.velocity[plan.source]
            if not self._all_qd_known:  # else nothing to mark
                self._qd_known[plan.target] = True
                self._all_qd_known, self._any_qd_known = bool(self._qd_known.all()), True
        self._have_joints = self._pending_joints = True
        return True

    def sets_every_joint(self, names: tuple[str, ...]) -> bool:
        """Whether a joint state naming ``names`` sets every actuated joint, in order, and nothing else (its finite
        positions become the held joints as they are; the suite is built)."""
        return self.suite is not None and bool(self._joint_index) and self._joint_plan(names).target is ...

    def joint_positions(self) -> tuple[list[str], np.ndarray]:
        """(actuated joint names, a copy of their held positions rad or m): what the next update poses the robot
        with (zeros for joints no joint state has set yet); empty before the suite is built."""
        return list(self._joint_index), self._q.copy()

    def unset_joints(self) -> list[str]:
        """The actuated joints no accepted joint state has set since the build (or :meth:`rewind`): held at 0 (the
        zero configuration) on every update so far; empty before the suite is built."""
        return [] if self._all_q_set else [n for n, i in self._joint_index.items() if not self._q_set[i]]

    def _joint_plan(self, names: tuple[str, ...]) -> JointPlan:
        """The :class:`JointPlan` of a joint state's names (the latest one is kept: a publisher repeats its names)."""
        plan = self._plan
        if plan is not None and plan.names == names:
            return plan
        target, source = [], []
        for k, name in enumerate(names):
            i = self._joint_index.get(name)
            if i is not None:
                target.append(i)
                source.append(k)
        unknown = [name for name in names if name not in self._joint_index and name not in self._derived_joints]
        count = len(target)
        target, source = (run_index(np.array(indices, dtype=np.intp)) for indices in (target, source))
        if count == len(names) == len(self._joint_index) and type(target) is slice and target == slice(0, count):
            target = source = ...  # the whole message (source: every entry) onto every joint: the cheapest index
        plan = JointPlan(tuple(names), len(set(names)) != len(names), target, source, count, unknown)
        if len(names) <= PLAN_CACHE_NAMES:  # a flood of names is not kept after its message
            self._plan = plan
        return plan

    def _too_many_transforms(self, n: int) -> bool:
        """Drop and count a TF message of ``n`` transforms when n > :data:`MAX_TRANSFORMS_PER_MESSAGE`."""
        if n <= MAX_TRANSFORMS_PER_MESSAGE:
            return False
        self._drop("tf.too_many_transforms", f"dropped a TF message with {n} transforms; allowed: at most "
                                             f"{MAX_TRANSFORMS_PER_MESSAGE} per message")
        return True

    def on_tf_message(self, msg: Any, static: bool = False) -> int:
        """Store the transforms of a ``tf2_msgs/TFMessage`` object (see :meth:`on_tf`), checked at once
        (:meth:`~..world.tf_buffer.TFBuffer.set_transforms`); one with more than :data:`MAX_TRANSFORMS_PER_MESSAGE`
        transforms is dropped whole (``tf.too_many_transforms``)."""
        if self._too_many_transforms(tf_transform_count(msg)):
            return 0
        batch = decode_tf_batch(msg)
        outcomes = self.tf.set_transforms(batch.parents, batch.children, batch.stamps, batch.values, static,
                                          batch.norms)
        stored = self._stored(outcomes, batch.parents, batch.children, batch.stamps)
        if static:
            for k in stored:
                self._static[batch.children[k]] = batch.sample(k)
        return len(stored)

    def on_tf_cdr(self, data: bytes, static: bool = False) -> int:
        """:meth:`on_tf_message` of TFMessage CDR bytes: the transform count is read first, so that an oversized
        message costs no decoding; bytes that do not decode are dropped (``tf.invalid_cdr``)."""
        n = sequence_count(data)
        if n is not None and self._too_many_transforms(n):
            return 0
        try:
            msg = self._tf_decoder.decode(data) or deserialize_cdr(data, TF_MESSAGE)
        except Exception as exc:  # noqa: BLE001 - foreign bytes that fail to decode are a drop, not a crash
            self._drop("tf.invalid_cdr", f"dropped TF bytes that are not a valid {TF_MESSAGE} ({exc!r})")
            return 0
        return self.on_tf_message(msg, static)

    def on_tf(self, transforms: list[TransformSample], static: bool = False) -> int:
        """Store transforms (``/tf`` or ``/tf_static``); returns how many were stored. Invalid ones (NaN,
        non-unit quaternion, a second parent, a loop) are dropped."""
        outcomes = []
        for tr in transforms:
            try:
                outcomes.append(self.tf.set_transform(tr.parent, tr.child, tr.translation, tr.stamp, quat=tr.rotation,
                                                      static=static))
            except TFError as exc:
                outcomes.append(exc)
        stored = self._stored(outcomes, [tr.parent for tr in transforms], [tr.child for tr in transforms],
                              [tr.stamp for tr in transforms])
        if static:
            for k in stored:
                self._static[transforms[k].child] = transforms[k]
        return len(stored)

    def _stored(self, outcomes: list[bool | TFError], parents: Sequence[str], children: Sequence[str],
                stamps: list[float]) -> list[int]:
        """The indices of the transforms (parents, children, stamps s) that the TF buffer stored, given its outcome of
        each (True, False: older than the buffer, or the TFError raised); the others are dropped (counted, logged)."""
        if outcomes.count(True) == len(outcomes):  # the usual case: every one stored
            return list(range(len(outcomes)))
        stored = []
        for k, ok in enumerate(outcomes):
            if ok is True:
                stored.append(k)
            elif ok is False:
                self._drop("tf.too_old", f"dropped a transform {parents[k]!r} -> {children[k]!r} at t = "
                                         f"{stamps[k]:.6f} s, older than the {self.tf.cache_time:g} s buffer")
            elif isinstance(ok, TFFull):
                self._drop("tf.too_many_frames", f"dropped a transform: {ok}")
            else:
                self._drop("tf.invalid", f"dropped a transform: {ok}")
        return stored

    # ------------------------------------------------------------------ update
    def update(self, now_ns: int) -> list[Output]:
        """One update at node time ``now_ns`` (integer nanoseconds): step the suite and return the messages of the
        sensors evaluated on this step (and their ground truth when enabled). Empty while waiting, or when the
        time did not advance."""
        wall = time.perf_counter()
        state = self.pose(now_ns)
        if state is None:
            return []
        world_done = time.perf_counter()
        self.suite.step(state)
        step_done = time.perf_counter()
        out = self.publish(now_ns)
        end = time.perf_counter()
        self.stats.record_phase("world", world_done - wall)
        self.stats.record_phase("suite_step", step_done - world_done)
        self.stats.record_phase("encode", end - step_done)
        self.stats.record_update(self._last_t, end - wall, self.params.period, ticked=self.params.step_on == "timer")
        return out

    def pose(self, now_ns: int) -> WorldState | None:
        """The first half of :meth:`update`: the world state at ``now_ns`` (ns) from the held inputs, counted as this
        core's latest update; None when the suite is not to be stepped (not ready, time did not advance, waiting for
        TF, or the world update failed and the core restarted)."""
        if self.suite is None:  # not ready (the property's test, without its call on this per-tick path)
            return None
        t = ns_to_seconds(now_ns)
        if self._last_t is not None and t < self._last_t:
            self.restart(f"time went backwards from {self._last_t:.6f} s to {t:.6f} s (simulation reset?)")
        elif self._last_t is not None and t == self._last_t:
            return None
        pending = self._pending_joints
        try:  # positional (t, joint_pos, joint_vel): the held joints when a joint state came since the last update
            state = self.suite.world.update(t, self._q if pending else None,
                                            self._qd if pending and self._all_qd_known else None)
        except TFError as exc:
            needed = ", ".join(f"{self.world_frame} -> {f}" for f in self.tf_frames())
            self.waiting_for_tf = f"{exc} (needed: {needed}{self._world_frame_note()})"
            self.log("warn", "tf.waiting", f"{self.name}: not stepping, waiting for TF: {self.waiting_for_tf}")
            return None
        except ValueError as exc:  # e.g. TF stamps of a body went backwards while the node clock did not
            self.restart(f"the world update failed ({exc})")
            return None
        self.waiting_for_tf = None
        self._pending_joints = False
        self._last_t, self.last_step_ns = t, now_ns
        return state

    def publish(self, now_ns: int, reads: BatchReads | None = None) -> list[Output]:
        """The second half of :meth:`update`, once the suite has stepped: the messages of the sensors evaluated on
        that step, stamped ``now_ns`` (ns). reads: the update, where cores that share encoders' writers publish it
        (each writer writes once; default: a new one)."""
        return self._encode(time_msg_from_ns(now_ns), self.suite.steps - 1, reads or BatchReads())

    def _encode(self, stamp: Any, step: int, reads: BatchReads) -> list[Output]:
        out = []
        self._templates.write_stamp(stamp, self.env)
        plan = self.step_plan(step)
        for w in plan.writers:
            w.write(reads)
        for encoder, gt in plan.branches:
            out += encoder.messages(gt)
        return out

    def step_plan(self, step: int) -> StepPlan:
        """The :class:`StepPlan` of engine step ``step`` (0-based; a sensor is due where its period divides it), for
        the current ``publish_ground_truth``."""
        key = (self.params.publish_ground_truth, *(step % every == 0 for every in self._periods))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = StepPlan([s.encoder for s in self.schedule if step % s.every == 0], key[0])
        return plan

    def restart(self, reason: str) -> None:
        """Forget dynamic TF and every sensor state: rewind the sensors (:meth:`SensorSuite.rewind`, bit for bit a
        new build; static transforms and the latest joint positions are kept); ``reason`` is logged. :meth:`update`
        calls it when time goes backwards; a driver that sees its clock jump back before it
        hands over the inputs of the new time line (a bag replay) calls it first, so those inputs are kept."""
        self.tf.clear()
        for tr in self._static.values():
            self.tf.set_transform(tr.parent, tr.child, tr.translation, tr.stamp, quat=tr.rotation, static=True)
        self._rewind_sensors()
        self._pending_joints = self._have_joints
        self.stats.restart_timing()
        self._last_t = self.last_step_ns = None
        self.stats.resets += 1
        self.log.always("warn", f"{self.name}: {reason}; sensors reset, dynamic TF cleared")

    def rewind(self, log: LogSink | None = None) -> None:
        """Back to the state right after construction, for another run with the same configuration and parameters
        (the replay of the next recording) without building the sensors again: transforms (static ones too), joint
        positions, statistics and log throttling forgotten, the suite rewound (:meth:`SensorSuite.rewind`); log:
        the next run's sink. Only for a core whose robot description came with the parameters or the configuration
        (:attr:`rewindable`; ValueError otherwise): one from ``/robot_description`` belongs to the run that sent it."""
        if not self.rewindable:
            raise ValueError(f"{self.name}: rewind needs a core built at construction (robot description from the "
                             "parameters or robot.urdf in the configuration); build a new NodeCore instead")
        self.log = ThrottledLog(log, clock=self.log.clock)
        self.stats = UpdateStats()
        self.tf.clear()
        self._static.clear()
        self.waiting_for_tf = None
        self._plan = None
        self._ignored_joint_names = NameTally()
        for values in (self._q, self._qd, self._qd_known, self._q_set):
            values.fill(0)
        self._all_qd_known, self._any_qd_known = bool(self._qd_known.all()), False
        self._all_q_set = bool(self._q_set.all())
        self._have_joints = self._pending_joints = False
        self._last_t = self.last_step_ns = None
        self._rewind_sensors()

    def _rewind_sensors(self) -> None:
        """The suite rewound and the encoders' kept messages forgotten, as a new build leaves them."""
        self.suite.rewind()
        for s in self.schedule:
            s.encoder.forget()

    @property
    def rewindable(self) -> bool:
        """True when :meth:`rewind` applies: the suite is built from a robot description of the parameters or the
        configuration (not one that arrived on ``/robot_description``)."""
        return self.ready and (bool(self.params.robot_description) or self.config.robot is not None)

    # ------------------------------------------------------------------ visualisation and diagnostics
    def markers(self) -> Any | None:
        """MarkerArray of the latest measured readings (None before the first update or with viz_rate 0)."""
        if not self.ready or self.params.viz_rate <= 0:
            return None
        settings = MarkerSettings(self.params.marker_force_arrows, self.params.marker_max_force,
                                  self.params.marker_max_link_force, self.params.marker_max_displacement)
        markers = [m for s in self.schedule for m in s.encoder.markers(settings)]
        state = self.suite.world.state
        if state is not None:
            rot, pos = (x[0].detach().cpu().double().numpy() for x in (state.rot, state.pos))
            if self.object_markers is None:
                self.object_markers = ObjectMarkers(self.suite.scene, self.world_frame)
            markers += self.object_markers.markers(rot, pos, state.t)
        return marker_array(markers) if markers else None

    def _world_frame_note(self) -> str:
        """Where the world frame comes from, when it is not a link of the robot (so TF must give the robot's pose):
        for a message about missing TF, which may be a mistyped ``suite.world_frame``."""
        robot = self.suite.robot
        if robot is None or self.world_frame in robot.link_names:
            return ""
        return (f"; the world frame {self.world_frame!r} is {self.config.source or 'the configuration'}:"
                f"suite.world_frame, not a link of the robot, so TF poses its root {robot.root_link!r}")

    def tf_frames(self) -> list[str]:
        """The TF frames the world model looks up in the world frame: the robot's root link (when posed by TF) and
        the frames objects are fixed in or follow (other than robot links)."""
        if not self.ready:
            return []
        frames = []
        robot = self.suite.robot
        if robot is not None and self.suite.world.root_from_tf:
            frames.append(robot.root_link)
        links = set(robot.link_names) if robot is not None else set()
        frames += [o.parent_frame for o in self.suite.scene.objects
                   if o.parent_frame not in (None, self.world_frame) and o.parent_frame not in links]
        return list(dict.fromkeys(frames))

    def stale_frames(self, t: float) -> list[str]:
        """Frames of :meth:`tf_frames` whose newest dynamic transform is older than ``tf_stale_age`` at t (s)."""
        return [f for f in self.tf_frames()
                if self.tf.has_frame(f) and self.tf.is_stale(f, t, self.params.tf_stale_age)]

    def diagnostics(self, now_ns: int, scheduling: Scheduling | None = None) -> Any:
        """DiagnosticArray of the window since the previous call (one status, name ``<node>: update loop``);
        ``scheduling``: the live node's thread scheduling (a ``scheduling`` value, and a warning when the asked
        real-time priority is not in force)."""
        t = ns_to_seconds(now_ns)
        w = self.stats.close_window(t)
        stale = self.stale_frames(t)
        problems, level = [], OK
        if self.build_error:
            problems.append(self.build_error)
            level = ERROR
        elif not self.ready:
            problems.append("waiting for the robot description on /robot_description")
            level = WARN
        if self.ready and self._joint_index and not self._have_joints:
            problems.append("no joint state received yet (robot at the zero configuration)")
        elif self.ready and not self._all_q_set:
            problems.append(f"joints no joint state has set (held at 0): {listed(self.unset_joints())}")
        if self.waiting_for_tf:
            problems.append(f"waiting for TF: {self.waiting_for_tf}")
        if stale:
            problems.append(f"stale TF: {stale}")
        if w.deadline_misses:
            problems.append(f"{w.deadline_misses} deadline misses")
        if scheduling is not None and scheduling.problem:
            problems.append(scheduling.problem)
        if w.dropped:
            problems.append(f"{w.dropped} dropped inputs")
        if self.ready and w.updates > 1 and w.rate < 0.9 * self.params.update_rate:
            problems.append(f"rate {w.rate:.1f} Hz below the target {self.params.update_rate:g} Hz")
        if problems and level == OK:
            level = WARN
        values = {
            "update_rate_target_hz": f"{self.params.update_rate:g}",
            "update_rate_achieved_hz": f"{w.rate:.2f}",
            "step_time_mean_ms": f"{w.step_mean_ms:.3f}",
            "step_time_max_ms": f"{w.step_max_ms:.3f}",
            **{f"{k}_time_mean_ms": f"{v:.3f}" for k, v in w.phase_mean_ms.items()},
            "updates": str(self.stats.updates),
            "deadline_misses": str(self.stats.deadline_misses),
            "deadline_misses_window": str(w.deadline_misses),
            "dropped_inputs": str(sum(self.stats.dropped.values())),
            "stale_tf": ", ".join(stale),
            "resets": str(self.stats.resets),
            "sensors": str(len(self.schedule)),
        }
        if scheduling is not None:
            values["scheduling"] = scheduling.text
        values.update({f"dropped.{k}": str(v) for k, v in sorted(self.stats.dropped.items())})
        if len(self._ignored_joint_names):
            values["ignored_joint_names_count"] = self._ignored_joint_names.count_text()
            values["ignored_joint_names"] = self._ignored_joint_names.sample_text()
        status = DiagnosticStatusReading(f"{self.name}: update loop", level, "; ".join(problems) or "OK",
                                         "tactile_sim", values)
        return encode_diagnostics(t, [status])
