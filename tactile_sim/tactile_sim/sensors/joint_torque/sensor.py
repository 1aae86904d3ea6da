"""JointTorque (docs/models/joint_torque.md#joint-torque): link-side joint torques by inverse dynamics of the observed
motion plus modelled contacts.

    τ = M(q) q̈ + C(q, q̇) q̇ + g(q) − Σ_c J_c(q)ᵀ w_c   (+ armature·q̈ + damping·q̇ + friction·tanh(q̇/v_f))

evaluated by the world layer's recursive Newton–Euler (:func:`~..world.dynamics.rnea_row`) with the root fixed at its
current pose. w_c are the latest ground-truth contact loads of the suite's KinematicTaxel and
ContactSensor batches on the robot's links (docs/models/joint_torque.md#contact-loads; evaluated earlier in the same
engine step, held otherwise).
q̇ and q̈ come from the docs/models/joint_torque.md#velocity estimator (message velocities or wrapped finite
differences, first-order filtered
acceleration, warm-up flagged invalid). Output ``[E, (H,) n_selected]`` in N·m (revolute) or N (prismatic).

The sensors of one batch are estimator "lanes" [E, S, n_mov] (each has its own velocity source, filter and contact
sources). A step is one fused warp kernel over (E, S) (:mod:`.kernel`: estimator, loads, inverse
dynamics, motor terms, output into the measured branch's staging buffers) that reads the contact sources' latest
ground truth in place; there is no Python loop over sensors or joints in the step path (only over the few source
batches, to point the kernel at their buffers).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch
import warp as wp

from ...config.body_patterns import match_bodies
from ...config.joint_selection import RobotJoints, selected_joints
from ...errors import option_error
from ...imperfections.pipeline import MeasuredBranch
from ...world.dynamics import WP_TYPES
from ...world.state import WorldState
from ...world.urdf import JointType
from ..base import BuildContext, SensorBatch, imperfections_of
from .kernel import (ACC_ESTIMATED, ACC_GIVEN, ACC_GIVEN_WITH_VELOCITY, JOINT_TORQUE_KERNELS, SOURCE_COLUMNS,
                     joint_torque_kernel)
from ..warp_launch import SlotLaunches


def joint_sample(t: float, joint_stamp: float | None, t_prev: float | None) -> tuple[float, bool, float]:
    """docs/models/joint_torque.md#velocity: (stamp s, accepted, Δt s) of the joint sample stamped ``joint_stamp`` s
    (None: ``t``, the state's time s) after the accepted one stamped ``t_prev`` (None: none yet): accepted when its
    stamp increased; Δt 1 when not accepted or the first."""
    stamp = joint_stamp if joint_stamp is not None else t
    accept = t_prev is None or stamp > t_prev
    dt = stamp - t_prev if t_prev is not None and accept else 1.0
    return stamp, accept, dt


class JointTorqueBatch(SensorBatch):
    """JointTorque sensors of one evaluation period (see the module docstring).

    Public: ``joint_names(i)`` the selected joints of sensor i; ``dropped_samples`` joint samples ignored because
    their stamp did not increase (diagnostics).
    """

    sensor_type = "JointTorque"
    evaluation_order = 1
    kernel_tables = (JOINT_TORQUE_KERNELS,)

    def __init__(self, options, ctx: BuildContext):
        super().__init__(options, ctx)
        suite = ctx.extras["suite"]
        self.suite = suite
        robot = suite.robot
        dev, dt = ctx.device, ctx.dtype
        wheres = [ctx.where.get(o.name, f"JointTorque(name={o.name!r})") for o in self.options]
        for o, where in zip(self.options, wheres):
            if robot is None:
                raise option_error(where, "robot", "the scene has no robot", o.robot, "a configuration with robot.urdf")
        self.robot = robot
        self.dynamics = suite.world.dynamics
        movable = list(robot.movable_joint_names)
        n = len(movable)
        self.n_mov = n
        robot_joints = RobotJoints(robot.name, robot.joint_names, movable)
        selections = [selected_joints(o, where, robot_joints) for o, where in zip(self.options, wheres)]
        self._joint_names = [[movable[j] for j in sel] for sel in selections]
        self._warn_massless(movable)
        s, e = len(self.options), ctx.n_envs
        joints = [robot.joint(name) for name in movable]
        motor = np.array([o.include_motor_terms for o in self.options], dtype=float)
        armature = np.zeros((s, n))
        for k, o in enumerate(self.options):
            for name, value in o.armature.items():  # movable joints (selected_joints checked them)
                armature[k, movable.index(name)] = value
        self.sources = [self._sources(o, where, suite.config.sensors, robot, ctx.scene)
                        for o, where in zip(self.options, wheres)]
        self._moving: list[tuple[int, SensorBatch]] | None = None  # (table row, taxel batch): set on first use
        specs = [imperfections_of(o, ctx, n=len(sel), channels=1, layout_shape=(len(sel),), sample_validity=True)
                 for o, sel in zip(self.options, selections)]
        self.branch = MeasuredBranch(specs, ctx.n_envs, dev, dt, streams=ctx.noise_streams)
        z = dict(device=dev, dtype=dt)
        flags = dict(device=dev, dtype=torch.bool)
        i32 = dict(device=dev, dtype=torch.int32)
        rows = e * s
        # the kernel's batch struct (see joint_torque_kernel): lane state, outputs, workspace, tables
        self.lanes = {
            "q_prev": torch.zeros(rows, n, **z), "qd": torch.zeros(rows, n, **z), "qdd": torch.zeros(rows, n, **z),
            "qd_known": torch.zeros(e, s, **flags), "qdd_known": torch.zeros(e, s, **flags),
            "has_sample": torch.zeros(e, s, **flags), "valid": torch.zeros(e, s, **flags),
            "qd_use": torch.zeros(rows, n, **z), "qdd_use": torch.zeros(rows, n, **z), "tau": torch.zeros(rows, n, **z),
            "fext": torch.zeros(rows, robot.n_links, 6, **z),
            "use_messages": torch.as_tensor([o.velocity_source == "auto" for o in self.options], **i32),
            "cutoff": ctx.tensor([math.inf if o.acceleration_cutoff_hz is None else o.acceleration_cutoff_hz
                                  for o in self.options]),  # inf: no filter (β = 1)
            "v_f": ctx.tensor([o.friction_velocity_scale for o in self.options]),
            "motor": ctx.tensor(motor), "armature": ctx.tensor(armature * motor[:, None]),
            "damping": ctx.tensor([j.damping for j in joints]), "friction": ctx.tensor([j.friction for j in joints]),
            "continuous": torch.as_tensor([j.type is JointType.CONTINUOUS for j in joints], **i32),
            "out_start": torch.as_tensor(np.cumsum([0] + [len(sel) for sel in selections]), **i32),
            "out_joint": torch.as_tensor(np.concatenate(selections), **i32)}
        self._no_joint_values = torch.zeros(e, n, **z)  # bound where a sample has no velocities / accelerations
        self._launches: SlotLaunches | None = None
        self._recorded_scalars = ((0, 0, ACC_ESTIMATED), 1.0)  # (flags, Δt) a launch is recorded with
        self._scalars: dict[int, tuple[tuple[int, int, int], float]] = {}  # id(launch) → the (flags, Δt) it holds
        self.t_prev: float | None = None
        self.dropped_samples = 0

    # ------------------------------------------------------------------ build helpers
    def _warn_massless(self, movable: list[str]) -> None:
        mass = self.dynamics.mass  # [L]
        subtree = (self.dynamics.kin.ancestor * mass[:, None]).sum(0)  # [n_mov]
        for j in torch.nonzero(subtree == 0).flatten().tolist():
            warnings.warn(f"JointTorque: the subtree of joint {movable[j]!r} has no mass; its torque reads only "
                          "contact loads", stacklevel=3)

    @staticmethod
    def _sources(o, where: str, sensors, robot, scene) -> list[tuple[str, list[int]]]:
        """(source sensor name, robot links it loads) per contact source of one JointTorque
        (docs/models/joint_torque.md#contact-loads)."""
        links = set(range(robot.n_links))
        contact_links: dict[str, list[int]] = {}
        taxel_link: dict[str, int] = {}
        for s in sensors:
            if s.type == "ContactSensor":
                contact_links[s.name] = match_bodies(s.prim_path, scene.body_names)
            elif s.type == "KinematicTaxel":
                taxel_link[s.name] = scene.body_index(s.link)
        if o.contact_sources == "auto":
            covered = {b for bodies in contact_links.values() for b in bodies if b in links}
            chosen = [(n, [b for b in bodies if b in links]) for n, bodies in contact_links.items()]
            chosen += [(n, [b]) for n, b in taxel_link.items() if b in links and b not in covered]
            return [(n, bodies) for n, bodies in chosen if bodies]
        chosen = []
        for name in o.contact_sources:
            bodies = contact_links.get(name, [taxel_link[name]] if name in taxel_link else None)
            if bodies is None:
                raise option_error(where, "contact_sources", "not a KinematicTaxel or ContactSensor", name,
                                   f"names of contact sensors: {sorted(list(contact_links) + list(taxel_link))}")
            outside = [scene.body_names[b] for b in bodies if b not in links]
            if outside:
                raise option_error(where, "contact_sources", f"sensor {name!r} is not on robot {robot.name!r} (body "
                                   f"{outside[0]!r})", name, "contact sensors on this robot's links")
            chosen.append((name, bodies))
        return chosen

    def _resolve_loads(self) -> None:
        """The source batches and the kernel's contact-pair and source-row tables; built on first use, when every
        batch of the suite exists. A source row is one ContactSensor body (world wrench) or one KinematicTaxel
        sensor (the sum over its probes, link frame)."""
        groups: dict[int, dict] = {}
        for k, sources in enumerate(self.sources):
            for name, bodies in sources:
                batch, i = self.suite.locate(name)
                g = groups.setdefault(id(batch), {"batch": batch, "rows": {}, "pairs": []})
                if batch.sensor_type == "ContactSensor":
                    sl = batch.body_slices[i]
                    for row, body in zip(range(sl.start, sl.stop), batch.sensor_bodies[i]):
                        if body in bodies:
                            g["pairs"].append((k, body, g["rows"].setdefault(("body", row), (row, row + 1, -1))))
                else:
                    a, b = batch.probes.slices[i]
                    link = self.ctx.scene.body_index(batch.options[i].link)
                    g["pairs"].append((k, bodies[0], g["rows"].setdefault(("sensor", i), (a, b, link))))
        rows: list[tuple[int, int, int, int]] = []  # (source batch, start, stop, link or -1)
        pairs = []
        for source, g in enumerate(groups.values()):
            index = {}
            for key, (start, stop, link) in g["rows"].items():
                index[(start, stop, link)] = len(rows)
                rows.append((source, start, stop, link))
            pairs += [(k, link, index[row]) for k, link, row in g["pairs"]]
        batches = [g["batch"] for g in groups.values()]
        i32 = dict(device=self.ctx.device, dtype=torch.int32)
        pairs.sort(key=lambda pair: pair[0])
        lanes = np.array([k for k, _, _ in pairs], dtype=np.int64)
        self.lanes["pair_start"] = torch.as_tensor(np.searchsorted(lanes, np.arange(len(self.options) + 1)), **i32)
        self.lanes["pair_link"] = torch.as_tensor([link for _, link, _ in pairs] or [0], **i32)
        self.lanes["pair_row"] = torch.as_tensor([row for _, _, row in pairs] or [0], **i32)
        for c, name in enumerate(("row_source", "row_start", "row_stop", "row_link")):
            self.lanes[name] = torch.as_tensor([row[c] for row in rows] or [0], **i32)
        # source table (SOURCE_COLUMNS): a ContactSensor's wrenches are the same views on every step, so its row is
        # fixed; a taxel batch's ground truth alternates among a few buffers, so the tables of the combinations met
        # are kept on the device, by the data pointers of the moving sources
        self._source_rows = np.zeros((max(len(batches), 1), len(SOURCE_COLUMNS)), dtype=np.int64)
        self._moving = []
        for k, batch in enumerate(batches):
            if batch.sensor_type == "ContactSensor":
                self._source_rows[k] = self._source_row(batch, *batch.latest_wrenches())
            else:
                self._moving.append((k, batch))
        self._source_tables: dict[tuple[int, ...], torch.Tensor] = {}

    @staticmethod
    def _source_row(batch: SensorBatch, force: torch.Tensor, torque: torch.Tensor) -> tuple[int, ...]:
        """The :data:`SOURCE_COLUMNS` row of a source batch whose latest forces and torques are ``force`` and
        ``torque`` (a taxel batch: both its [E, P, 6] ground truth)."""
        strides = force.stride()
        if torque.stride() != strides:
            raise RuntimeError(f"JointTorque: the forces and torques of {batch.sensor_type} batch {batch.names} have "
                               f"different strides {strides} and {torque.stride()}")
        return (force.data_ptr(), torque.data_ptr(), *strides,
                1 + sum((n - 1) * st for n, st in zip(force.shape, strides)))

    # ------------------------------------------------------------------ evaluation
    def joint_names(self, i: int) -> list[str]:
        """The joints sensor i reports, in output order."""
        return list(self._joint_names[i])

    def _source_table(self) -> torch.Tensor:
        """The source table [K, 6] int64 (device) of the source batches' latest ground truth (no copy of their
        values): one of the tables kept by the data pointers of the taxel batches' ground truth, made on first
        use."""
        latest = [batch.branch.read_ground_truth_batch()[0] for _, batch in self._moving]
        key = tuple([t.data_ptr() for t in latest])
        table = self._source_tables.get(key)
        if table is None:
            if len(self._source_tables) >= 8:
                self._source_tables.clear()
            rows = self._source_rows.copy()
            for (k, batch), t in zip(self._moving, latest):
                rows[k] = self._source_row(batch, t, t)
            table = self._source_tables[key] = torch.as_tensor(rows, device=self.ctx.device)
        return table

    def _build_launches(self, state: WorldState) -> SlotLaunches:
        """The kernel's launches, one per combination of source table and staging pair met (those fields never
        rebound); the state fields are rebound every step."""
        kernel, call_type, batch_type = joint_torque_kernel(self.ctx.dtype)
        _, v, _, v6 = WP_TYPES[self.ctx.dtype]
        lanes = self.lanes
        b = batch_type()
        for name, t in lanes.items():
            wtype = {"fext": v6}.get(name)
            setattr(b, name, wp.from_torch(t, dtype=wtype) if wtype is not None else wp.from_torch(t))
        b.root = self.robot.link_index(self.robot.root_link)
        b.gravity = v(*self.suite.config.suite.gravity)
        dyn = self.dynamics
        work, self._work_tensors = dyn.workspace(self.ctx.n_envs * len(self.options))
        fields = {"joint_pos": state.joint_pos.contiguous(), "joint_vel": self._no_joint_values,
                  "joint_acc": self._no_joint_values, "body_rot": state.rot.contiguous()}
        f = WP_TYPES[self.ctx.dtype][0]
        flags, dt = self._recorded_scalars
        return SlotLaunches(kernel, (self.ctx.n_envs, len(self.options)), call_type, fields,
                            [b, dyn.tables, work, *flags, f(dt), f(-2 * math.pi * dt)], self.ctx.device,
                            ("sources", "measured", "ground_truth"))

    def evaluate(self, state: WorldState) -> None:
        stamp, accept, dt = joint_sample(state.t, state.joint_stamp, self.t_prev)
        vel_measured = state.joint_vel is not None and state.joint_vel_measured
        if not accept:
            self.dropped_samples += 1
        if self._moving is None:
            self._resolve_loads()
        branch = self.branch
        launches = self._launches
        if launches is None:
            launches = self._launches = self._build_launches(state)
        measured, gt = branch.staging()
        launch = launches.select((self._source_table(), measured, gt))
        acc_mode = ACC_ESTIMATED if state.joint_acc is None else (
            ACC_GIVEN_WITH_VELOCITY if vel_measured else ACC_GIVEN)
        launch.bind("joint_pos", state.joint_pos.contiguous())
        launch.bind("joint_vel", state.joint_vel.contiguous() if vel_measured else self._no_joint_values)
        launch.bind("joint_acc", self._no_joint_values if state.joint_acc is None else state.joint_acc.contiguous())
        launch.bind("body_rot", state.rot.contiguous())
        # scalar parameters 4… of the kernel: the flags rarely change, Δt on every step
        flags = (int(accept), int(vel_measured), acc_mode)
        held_flags, held_dt = self._scalars.get(id(launch), self._recorded_scalars)
        if flags != held_flags:
            for i, (value, last) in enumerate(zip(flags, held_flags)):
                if value != last:
                    launch.set_arg(4 + i, value)
        if dt != held_dt:
            launch.set_arg(7, dt)
            launch.set_arg(8, -2 * math.pi * dt)
        self._scalars[id(launch)] = (flags, dt)
        launch()
        if accept:
            self.t_prev = stamp
        # stages 5–9 and the commit in one launch; docs/models/imperfections.md#validity: an invalid read (warm-up) is
        # zeros on both branches
        branch.push_staged(sample_valid=self.lanes["valid"])

    def rewind(self) -> None:
        """The state right after build (:meth:`SensorBatch.rewind`): no previous joint sample stamp (a new run may
        start at an earlier time) and no dropped samples counted."""
        self.t_prev = None
        self.dropped_samples = 0
        super().rewind()

    def reset(self, env_mask: torch.Tensor | None) -> None:
        """docs/models/imperfections.md#reset: pipeline state and estimator of the envs cleared (warm-up restarts)."""
        super().reset(env_mask)
        m = (torch.ones(self.n_envs, dtype=torch.bool, device=self.ctx.device) if env_mask is None
             else env_mask.to(self.ctx.device))
        s = len(self.options)
        rows = m.repeat_interleave(s)[:, None]
        for name in ("q_prev", "qd", "qdd"):
            self.lanes[name].masked_fill_(rows, 0.0)
        for name in ("qd_known", "qdd_known", "has_sample"):
            self.lanes[name].masked_fill_(m[:, None], False)
