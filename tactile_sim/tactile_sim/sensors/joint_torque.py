"""JointTorque (spec §11): link-side joint torques by inverse dynamics of the observed motion plus modelled contacts.

    τ = M(q) q̈ + C(q, q̇) q̇ + g(q) − Σ_c J_c(q)ᵀ w_c   (+ armature·q̈ + damping·q̇ + friction·tanh(q̇/v_f))

evaluated by the world layer's batched recursive Newton–Euler (:class:`~..world.dynamics.InverseDynamics`) with the
root fixed at its current pose. w_c are the latest ground-truth contact loads of the suite's KinematicTaxel and
ContactSensor batches on the robot's links (§11.3; evaluated earlier in the same engine step, held otherwise).
q̇ and q̈ come from the §11.4 estimator (message velocities or wrapped finite differences, first-order filtered
acceleration, warm-up flagged invalid). Output ``[E, (H,) n_selected]`` in N·m (revolute) or N (prismatic).

The sensors of one batch are estimator "lanes" [E, S, n_mov] (each has its own velocity source, filter and contact
sources); the inverse dynamics runs once on E·S rows, so there is no Python loop over sensors in the step path.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch

from ..errors import option_error
from ..imperfections.pipeline import MeasuredBranch
from ..world.state import WorldState
from ..world.urdf import JointType
from .base import BuildContext, SensorBatch, imperfections_of
from .contact_sensor import match_bodies


class JointTorqueBatch(SensorBatch):
    """JointTorque sensors of one evaluation period (see the module docstring).

    Public: ``joint_names(i)`` the selected joints of sensor i; ``dropped_samples`` joint samples ignored because
    their stamp did not increase (diagnostics).
    """

    sensor_type = "JointTorque"
    evaluation_order = 1

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
            if o.robot is not None and o.robot != robot.name:
                raise option_error(where, "robot", "unknown robot", o.robot, f"{robot.name!r} (the only robot)")
        self.robot = robot
        self.dynamics = suite.world.dynamics
        movable = list(robot.movable_joint_names)
        n = len(movable)
        self.n_mov = n
        selections = [self._selection(o, where, robot, movable) for o, where in zip(self.options, wheres)]
        self._joint_names = [[movable[j] for j in sel] for sel in selections]
        self._warn_massless(movable)
        s = len(self.options)
        self.flat_index = torch.as_tensor(np.concatenate([k * n + np.asarray(sel) for k, sel in enumerate(selections)]),
                                          device=dev)
        joints = [robot.joint(name) for name in movable]
        self.continuous = torch.as_tensor([j.type is JointType.CONTINUOUS for j in joints], device=dev)
        self.use_messages = torch.as_tensor([o.velocity_source == "auto" for o in self.options], device=dev)
        self.cutoff_hz = ctx.tensor([math.inf if o.acceleration_cutoff_hz is None else o.acceleration_cutoff_hz
                                     for o in self.options])[:, None]  # inf: no filter (β = 1)
        motor = np.array([o.include_motor_terms for o in self.options], dtype=float)
        armature = np.zeros((s, n))
        for k, (o, where) in enumerate(zip(self.options, wheres)):
            for name, value in o.armature.items():
                if name not in movable:
                    raise option_error(where, f"armature.{name}", "not a movable joint", name,
                                       f"names of movable joints: {movable}")
                armature[k, movable.index(name)] = value
        self.motor = ctx.tensor(motor)[:, None]
        self.armature = ctx.tensor(armature * motor[:, None])
        self.damping = ctx.tensor([j.damping for j in joints])
        self.friction = ctx.tensor([j.friction for j in joints])
        self.v_f = ctx.tensor([o.friction_velocity_scale for o in self.options])[:, None]
        self.gravity = torch.as_tensor(suite.config.suite.gravity, device=dev, dtype=dt)
        self.root_index = robot.link_index(robot.root_link)
        self.sources = [self._sources(o, where, suite.config.sensors, robot, ctx.scene)
                        for o, where in zip(self.options, wheres)]
        self._loads = None
        specs = [imperfections_of(o, ctx, n=len(sel), channels=1, layout_shape=(len(sel),), sample_validity=True)
                 for o, sel in zip(self.options, selections)]
        self.branch = MeasuredBranch(specs, ctx.n_envs, dev, dt)
        e = ctx.n_envs
        z = dict(device=dev, dtype=dt)
        self.q_prev = torch.zeros(e, s, n, **z)
        self.qd = torch.zeros(e, s, n, **z)
        self.qdd = torch.zeros(e, s, n, **z)
        self.qd_known = torch.zeros(e, s, dtype=torch.bool, device=dev)
        self.qdd_known = torch.zeros(e, s, dtype=torch.bool, device=dev)
        self.n_samples = torch.zeros(e, dtype=torch.int64, device=dev)
        self.t_prev: float | None = None
        self.dropped_samples = 0

    # ------------------------------------------------------------------ build helpers
    @staticmethod
    def _selection(o, where: str, robot, movable: list[str]) -> list[int]:
        if not movable:
            raise option_error(where, "joints", "empty joint selection: the robot has no movable joints", [],
                               "a robot with revolute, continuous or prismatic joints")
        if o.joints is not None:
            sel = []
            for name in o.joints:
                if name in movable:
                    sel.append(movable.index(name))
                elif name in robot.joint_names:
                    raise option_error(where, "joints", f"joint {name!r} is fixed", name, f"movable joints: {movable}")
                else:
                    raise option_error(where, "joints", "unknown joint", name, f"movable joints: {movable}")
            return sel
        if o.dofs_idx_local is not None:
            for i in o.dofs_idx_local:
                if i >= len(movable):
                    raise option_error(where, "dofs_idx_local", "index out of range", i,
                                       f"0 <= index < {len(movable)} (movable joints {movable})")
            return list(o.dofs_idx_local)
        return list(range(len(movable)))

    def _warn_massless(self, movable: list[str]) -> None:
        mass = self.dynamics.mass  # [L]
        subtree = (self.dynamics.kin.ancestor * mass[:, None]).sum(0)  # [n_mov]
        for j in torch.nonzero(subtree == 0).flatten().tolist():
            warnings.warn(f"JointTorque: the subtree of joint {movable[j]!r} has no mass; its torque reads only "
                          "contact loads", stacklevel=3)

    @staticmethod
    def _sources(o, where: str, sensors, robot, scene) -> list[tuple[str, list[int]]]:
        """(source sensor name, robot links it loads) per contact source of one JointTorque (§11.3)."""
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

    def _resolve_loads(self) -> list:
        """Per source batch: (kind, batch, selection matrix, link rows, map [S, L, rows]); built on first use, when
        every batch of the suite exists."""
        groups: dict[int, dict] = {}
        s_count, n_links = len(self.options), self.robot.n_links
        for k, sources in enumerate(self.sources):
            for name, bodies in sources:
                batch, i = self.suite._lookup(name)
                g = groups.setdefault(id(batch), {"batch": batch, "rows": [], "links": [], "pairs": []})
                if batch.sensor_type == "ContactSensor":
                    sl = batch.body_slices[i]
                    for row, body in zip(range(sl.start, sl.stop), batch.sensor_bodies[i]):
                        if body in bodies:
                            g["pairs"].append((k, body, row))
                else:
                    g["rows"].append(i)
                    g["pairs"].append((k, bodies[0], len(g["rows"]) - 1))
        loads = []
        for g in groups.values():
            batch = g["batch"]
            n_rows = batch.n_sensor_bodies if batch.sensor_type == "ContactSensor" else len(g["rows"])
            mapping = np.zeros((s_count, n_links, n_rows))
            for k, link, row in g["pairs"]:
                mapping[k, link, row] = 1.0
            mapping = self.ctx.tensor(mapping)
            if batch.sensor_type == "ContactSensor":
                loads.append(("contact", batch, None, None, mapping))
                continue
            select = np.zeros((len(g["rows"]), batch.probes.n))
            links = []
            for r, i in enumerate(g["rows"]):
                a, b = batch.probes.slices[i]
                select[r, a:b] = 1.0
                links.append(self.ctx.scene.body_index(batch.options[i].link))
            loads.append(("taxel", batch, self.ctx.tensor(select),
                          torch.as_tensor(links, device=self.ctx.device), mapping))
        return loads

    # ------------------------------------------------------------------ evaluation
    def joint_names(self, i: int) -> list[str]:
        """The joints sensor i reports, in output order."""
        return list(self._joint_names[i])

    def external_wrenches(self, state: WorldState) -> torch.Tensor | None:
        """Contact loads of every sensor's sources on the robot links: [E, S, L, 6] (force, torque about the link
        origin; W), or None when no sensor has a source."""
        if self._loads is None:
            self._loads = self._resolve_loads()
        if not self._loads:
            return None
        total = None
        for kind, batch, select, links, mapping in self._loads:
            if kind == "contact":
                force, torque = batch.latest_wrenches()
                w = torch.cat([force, torque], dim=-1)
            else:
                gt = batch.branch.read_ground_truth_batch()[0]  # [E, P, 6] link frame
                sums = torch.matmul(select, gt)  # [E, rows, 6]
                rot = state.rot.index_select(1, links)  # [E, rows, 3, 3]
                w = torch.cat([(rot @ sums[..., :3, None])[..., 0], (rot @ sums[..., 3:, None])[..., 0]], dim=-1)
            part = torch.einsum("slr,erc->eslc", mapping, w)
            total = part if total is None else total + part
        return total

    def _estimate(self, state: WorldState) -> None:
        """§11.4: accept the joint sample if its stamp increased; update q̇, the filtered q̈ and the warm-up flags."""
        stamp = state.joint_stamp if state.joint_stamp is not None else state.t
        if self.t_prev is not None and not stamp > self.t_prev:
            self.dropped_samples += 1
            return
        e, s, n = self.qd.shape
        q = state.joint_pos[:, None, :].expand(e, s, n)
        have_prev = (self.n_samples > 0)[:, None] if self.t_prev is not None else \
            torch.zeros(e, 1, dtype=torch.bool, device=q.device)
        dt = stamp - self.t_prev if self.t_prev is not None else 1.0
        d = q - self.q_prev
        d = torch.where(self.continuous, d - 2 * math.pi * torch.ceil((d - math.pi) / (2 * math.pi)), d)
        qd = d / dt
        measured = state.joint_vel is not None and state.joint_vel_measured
        if measured:
            qd = torch.where(self.use_messages[:, None], state.joint_vel[:, None, :], qd)
            qd_known = self.use_messages[None, :] | have_prev
        else:
            qd_known = have_prev.expand(e, s)
        raw_ok = qd_known & self.qd_known
        qdd_raw = (qd - self.qd) / dt
        beta = -torch.expm1(self.cutoff_hz * (-2 * math.pi * dt))
        filtered = torch.where(self.qdd_known[..., None], self.qdd + beta * (qdd_raw - self.qdd), qdd_raw)
        zero = torch.zeros((), device=q.device, dtype=q.dtype)
        self.qdd = torch.where(raw_ok[..., None], filtered, self.qdd)
        self.qdd_known = self.qdd_known | raw_ok
        self.qd = torch.where(qd_known[..., None], qd, zero)
        self.qd_known = qd_known
        self.q_prev = q.clone()
        self.n_samples += 1
        self.t_prev = stamp

    def evaluate(self, state: WorldState) -> None:
        self._estimate(state)
        e, s, n = self.qd.shape
        zero = torch.zeros((), device=self.qd.device, dtype=self.qd.dtype)
        qd = self.qd
        qdd = torch.where(self.qdd_known[..., None], self.qdd, zero)
        valid = self.qdd_known & self.qd_known
        if state.joint_acc is not None:  # q̈ (and q̇) given through the API are used unchanged
            qdd = state.joint_acc[:, None, :].expand(e, s, n)
            if state.joint_vel is not None and state.joint_vel_measured:
                qd = state.joint_vel[:, None, :].expand(e, s, n)
                valid = torch.ones_like(valid)
            else:
                valid = self.qd_known
        f_ext = self.external_wrenches(state)
        root_rot = state.rot[:, self.root_index]
        q = state.joint_pos
        if s > 1:
            q, root_rot = q.repeat_interleave(s, 0), root_rot.repeat_interleave(s, 0)
        tau = self.dynamics.rnea_movable(q, qd.reshape(e * s, n), qdd.reshape(e * s, n), self.gravity,
                                         None if f_ext is None else f_ext.reshape(e * s, -1, 6), root_rot)
        tau = tau.view(e, s, n) + self.armature * qdd + self.motor * (
            self.damping * qd + self.friction * torch.tanh(qd / self.v_f))
        out = tau.reshape(e, s * n).index_select(1, self.flat_index)[..., None]
        # §13.7: an invalid read is zeros — warm-up samples carry no estimate on either branch
        keep = valid.index_select(1, self.branch.sensor_of_probe)[..., None]
        self.branch.push(torch.where(keep, self.branch.hardware(out), zero), torch.where(keep, out, zero),
                         sample_valid=valid)

    def reset(self, env_mask: torch.Tensor | None) -> None:
        """§13.8: pipeline state and estimator of the envs cleared (warm-up restarts)."""
        super().reset(env_mask)
        m = (torch.ones(self.n_envs, dtype=torch.bool, device=self.ctx.device) if env_mask is None
             else env_mask.to(self.ctx.device))
        for name in ("q_prev", "qd", "qdd"):
            setattr(self, name, getattr(self, name).masked_fill(m[:, None, None], 0.0))
        self.qd_known = self.qd_known & ~m[:, None]
        self.qdd_known = self.qdd_known & ~m[:, None]
        self.n_samples = self.n_samples.masked_fill(m, 0)
