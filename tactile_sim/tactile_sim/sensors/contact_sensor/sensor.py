"""ContactSensor (docs/models/contact_sensor.md#model): Isaac-Lab-style net contact force on whole bodies from a
kinematic penalty model.

Per collision-surface sample k of sensor body s (position x_k in W, area a_k), over the candidates of s:
B(k) = deepest body, d_k = max(0, −sd_B(x_k)); a sample is in contact when d_k > ε_d. Then
    n_k = n_B(x_k) (object normal; fallback −outward sample normal)
    v = v_B(x_k) − v_s(x_k);  ḋ = n_k·v;  v_t = v − ḋ n_k
    p_k = max(0, k_c d_k^e + c_c d_k^e ḋ)                      [Pa]
    fn_k = p_k a_k n_k;  ft_k = μ ‖fn_k‖ v_t / max(‖v_t‖, v_s)
summed per body (net values, torques about o_s) and per (body, filter) (matrices, mean contact positions). Air and
contact timers follow Isaac Lab. There is no imperfection pipeline: ``read`` and ``read_ground_truth`` return the
same :class:`ContactSensorData` (env axis first, S always present; ``data[e]`` drops the env axis).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np
import torch

from ...config.body_patterns import filter_bodies, prim_path_bodies
from ...constants import EPS_D, TIMER_TOL
from ...errors import option_error
from ...geometry.sampling import check_sample_spacing, sample_body_surface
from ...geometry.shapes import ShapeKind
from ...geometry.struct_launch import StructLaunch
from ...world.state import WorldState
from ..base import BuildContext, SensorBatch
from ..points.body_samples import BodySamples, SampleCells
from .kernels import BODY_KERNELS, SAMPLE_KERNELS
from ..points.probe_set import FusedProbeLaunch
from ..warp_launch import state_tensors


@dataclass
class ContactSensorData:
    """Buffers of one ContactSensor (docs/models/contact_sensor.md#model Output). E envs (absent for an unbatched
    scene), S bodies, F filters,
    H history length. W = world frame; ``_b`` = body frame of each sensor body (positions relative to o_s).

    net_*_forces_w / net_torques_w [E, S, 3] N, N·m about o_s; *_force_matrix_w [E, S, F, 3] N (None when F = 0);
    contact_pos_w [E, S, F, 3] m, NaN without contact (None unless tracked); timers [E, S] s (None unless
    track_air_time); *_history [E, H, S, 3] newest first (None when H = 0); pos_w [E, S, 3], rot_w [E, S, 3, 3]
    (None unless track_pose). Friction buffers are None unless track_friction_forces.
    """

    net_normal_forces_w: torch.Tensor
    net_forces_w: torch.Tensor
    net_torques_w: torch.Tensor
    net_normal_forces_b: torch.Tensor
    net_forces_b: torch.Tensor
    net_torques_b: torch.Tensor
    net_friction_forces_w: torch.Tensor | None = None
    net_friction_forces_b: torch.Tensor | None = None
    normal_force_matrix_w: torch.Tensor | None = None
    friction_force_matrix_w: torch.Tensor | None = None
    force_matrix_w: torch.Tensor | None = None
    normal_force_matrix_b: torch.Tensor | None = None
    friction_force_matrix_b: torch.Tensor | None = None
    force_matrix_b: torch.Tensor | None = None
    contact_pos_w: torch.Tensor | None = None
    contact_pos_b: torch.Tensor | None = None
    current_air_time: torch.Tensor | None = None
    current_contact_time: torch.Tensor | None = None
    last_air_time: torch.Tensor | None = None
    last_contact_time: torch.Tensor | None = None
    net_normal_forces_w_history: torch.Tensor | None = None
    net_friction_forces_w_history: torch.Tensor | None = None
    net_forces_w_history: torch.Tensor | None = None
    net_normal_forces_b_history: torch.Tensor | None = None
    net_friction_forces_b_history: torch.Tensor | None = None
    net_forces_b_history: torch.Tensor | None = None
    pos_w: torch.Tensor | None = None
    rot_w: torch.Tensor | None = None

    @property
    def friction_forces_w(self) -> torch.Tensor | None:
        """Alias of ``net_friction_forces_w`` (Isaac Lab compatibility)."""
        return self.net_friction_forces_w

    def __getitem__(self, env) -> "ContactSensorData":
        """The buffers of one env (or an env slice / index tensor) — every tensor indexed on its first axis."""
        return replace(self, **{f.name: None if getattr(self, f.name) is None else getattr(self, f.name)[env]
                                for f in fields(self)})

    def _timer(self, name: str) -> torch.Tensor:
        t = getattr(self, name)
        if t is None:
            raise RuntimeError(f"ContactSensorData.{name} is not tracked; build the sensor with track_air_time=True")
        return t

    def compute_first_contact(self, dt: float, abs_tol: float = TIMER_TOL) -> torch.Tensor:
        """Bodies that made contact within the last dt (s): 0 < current_contact_time < dt + abs_tol → bool [E, S]."""
        t = self._timer("current_contact_time")
        return (t > 0.0) & (t < dt + abs_tol)

    def compute_first_air(self, dt: float, abs_tol: float = TIMER_TOL) -> torch.Tensor:
        """Bodies that broke contact within the last dt (s): 0 < current_air_time < dt + abs_tol → bool [E, S]."""
        t = self._timer("current_air_time")
        return (t > 0.0) & (t < dt + abs_tol)


class ContactSensorBatch(SensorBatch):
    """ContactSensors of one evaluation period: all their bodies' samples in two warp launches per step
    (:mod:`.kernels`: the samples' penalty loads, then the per-body buffers).

    Internally S_tot = the bodies of all sensors, concatenated; F_max the largest filter count (matrices of a sensor
    use its first F columns).
    """

    sensor_type = "ContactSensor"
    evaluation_order = 0
    kernel_tables = (SAMPLE_KERNELS, BODY_KERNELS)

    def __init__(self, options, ctx: BuildContext):
        super().__init__(options, ctx)
        scene = ctx.scene
        names = scene.body_names
        nb = scene.n_bodies
        shape_body = np.array([b for b, _ in scene.shape_table()], dtype=np.int64)
        bodies, clouds, group_masks, group_exact, filters, filter_names = [], [], [], [], [], []
        self.sensor_bodies: list[list[int]] = []
        for o in self.options:
            where = ctx.where.get(o.name, f"ContactSensor(name={o.name!r})")
            matched = prim_path_bodies(o.prim_path, names, where)
            ignore_mask = np.zeros(nb, dtype=bool)
            for name in o.ignore:
                ignore_mask[scene.body_index(name, f"{where}.ignore")] = True
            candidates = np.zeros(nb, dtype=bool)
            for b in matched:
                cand = scene.candidate_mask(b) & ~ignore_mask
                candidates |= cand
                group_masks.append(cand[shape_body])
                group_exact.append(o.contact_depth_query != "sdf")
                clouds.append(self._sample(scene.bodies[b], o, where))
                bodies.append(b)
            columns = []
            for hit in filter_bodies(o.filter_prim_paths_expr, names, matched, where,
                                     np.flatnonzero(candidates).tolist()):
                col = np.zeros(nb, dtype=bool)
                col[hit] = True
                columns.append(col)
            self.sensor_bodies.append(matched)
            filters.append(columns)
            filter_names.append(list(o.filter_prim_paths_expr))
        self.filter_names = filter_names
        self.samples = BodySamples(bodies, clouds, ctx.device, ctx.dtype)
        dev, dt = ctx.device, ctx.dtype
        counts = [len(b) for b in self.sensor_bodies]
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        self.body_slices = [slice(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]
        self.n_sensor_bodies = int(starts[-1])
        self.body_index = torch.as_tensor(bodies, device=dev)
        self.n_bodies = nb
        self.f_max = max((len(c) for c in filters), default=0)
        self.h_max = max(o.history_length for o in self.options)
        filter_mask = np.zeros((self.n_sensor_bodies, max(self.f_max, 1), nb), dtype=bool)
        for i, columns in enumerate(filters):
            for f, col in enumerate(columns):
                filter_mask[self.body_slices[i], f] = col

        def per_body(key: str) -> torch.Tensor:
            return ctx.tensor(np.repeat([float(getattr(o, key)) for o in self.options], counts))

        self.threshold = per_body("force_threshold")
        self._alloc_state()
        cells = SampleCells(self.samples, torch.as_tensor(np.stack(group_masks), device=dev),
                            torch.as_tensor(np.array(group_exact), device=dev))
        model = {"sample_owner": self.samples.owner.to(torch.int32), "local_normal": self.samples.local_normal,
                 "area": self.samples.area, "k_c": per_body("contact_stiffness"), "c_c": per_body("contact_damping"),
                 "mu": per_body("friction_coefficient"), "v_s": per_body("slip_velocity"),
                 "exponent": per_body("contact_exponent"), "filter_mask": torch.as_tensor(filter_mask, device=dev),
                 **self._acc}
        kernel, call_type = SAMPLE_KERNELS[dt]
        cutoff = torch.full((self.samples.n,), -EPS_D, device=dev, dtype=dt)
        self._samples_launch = FusedProbeLaunch(cells, ctx.query, self.n_envs, kernel, call_type, cutoff, model)
        self._bodies_launch: StructLaunch | None = None

    @staticmethod
    def _sample(body, o, where: str):
        shapes = body.shapes
        if not shapes or any(s.kind == ShapeKind.PLANE for s in shapes):
            raise option_error(where, "prim_path", f"body {body.name!r} has no sampleable collision geometry "
                               f"({'a plane' if shapes else 'no collision shapes'})", o.prim_path,
                               "bodies with sphere, box, capsule, cylinder or mesh collision shapes")
        check_sample_spacing(shapes, o.surface_sample_spacing, where, "surface_sample_spacing", body.name)
        return sample_body_surface(shapes, spacing=o.surface_sample_spacing, seed=o.sample_seed)

    # ------------------------------------------------------------------ state
    def _alloc_state(self) -> None:
        """Persistent buffers, written in place by the body kernel (F and H padded to at least 1)."""
        e, s, f, h = self.n_envs, self.n_sensor_bodies, max(self.f_max, 1), max(self.h_max, 1)
        z = dict(device=self.ctx.device, dtype=self.ctx.dtype)
        self.net = torch.zeros(e, s, 4, 3, **z)  # normal, friction, total, torque (W)
        self.net_b = torch.zeros(e, s, 4, 3, **z)
        self.matrix = torch.zeros(e, s, f, 3, 3, **z)  # normal, friction, total
        self.matrix_b = torch.zeros(e, s, f, 3, 3, **z)
        self.contact_pos = torch.full((e, s, f, 3), float("nan"), **z)
        self.contact_pos_b = torch.full((e, s, f, 3), float("nan"), **z)
        self.timers = torch.zeros(e, s, 4, **z)  # current air, current contact, last air, last contact
        self.pose_rot = torch.eye(3, **z).expand(e, s, 3, 3).clone()
        self.pose_pos = torch.zeros(e, s, 3, **z)
        self.history = torch.zeros(e, h, s, 6, 3, **z)  # normal, friction, total (W), then the same in B
        self.n_since = torch.zeros(e, dtype=torch.int64, device=self.ctx.device)
        self._wrenches = (self.net[:, :, 2], self.net[:, :, 3])
        self._acc = {"acc_net": torch.zeros(e, s, 3, 3, **z), "acc_filter": torch.zeros(e, s, f, 3, 3, **z),
                     "acc_area": torch.zeros(e, s, f, **z)}
        self.count = 0

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, state: WorldState) -> None:
        """One step: the sample kernel accumulates the penalty loads, the body kernel writes every buffer."""
        rot, pos, lin_vel, ang_vel = state_tensors(state, twists=True)
        self._samples_launch(state, {"lin_vel": lin_vel, "ang_vel": ang_vel})
        self.count += 1
        launch = self._bodies_launch
        if launch is None:
            e, s, h = self.n_envs, self.n_sensor_bodies, max(self.h_max, 1)
            fields = {"body_index": self.body_index.to(torch.int32), "threshold": self.threshold,
                      "body_rot": rot, "body_pos": pos, **self._acc, "net": self.net, "net_b": self.net_b,
                      "matrix": self.matrix, "matrix_b": self.matrix_b, "contact_pos": self.contact_pos,
                      "contact_pos_b": self.contact_pos_b, "timers": self.timers, "pose_rot": self.pose_rot,
                      "pose_pos": self.pose_pos, "history": self.history.view(e, h, s * 6, 3),
                      "n_since": self.n_since}
            kernel, call_type = BODY_KERNELS[self.ctx.dtype]
            launch = self._bodies_launch = StructLaunch(kernel, (e, s), call_type, fields,
                                                        [float(self.ctx.dt), -1], self.ctx.device)
        else:
            launch.bind("body_rot", rot)
            launch.bind("body_pos", pos)
        if self.h_max:
            launch.set_arg(2, self.count % self.h_max)
        launch()

    # ------------------------------------------------------------------ contact loads for JointTorque
    def latest_wrenches(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Latest ground truth of every sensor body: net_forces_w and net_torques_w, each [E, S_tot, 3] (W, N and
        N·m about the body origin); ``body_index`` [S_tot] gives the scene body of each row. The same two views of
        the batch's persistent buffers on every call (every evaluation and reset overwrites them in place), so a
        consumer may keep them."""
        return self._wrenches

    # ------------------------------------------------------------------ reading
    def read(self, i: int) -> tuple[ContactSensorData, torch.Tensor]:
        """The buffers of sensor i (caller-owned copies) and valid [E] (False before the first evaluation after a
        reset, when every buffer reads zero / NaN)."""
        data, evaluations = self.live_view(i)
        return ContactSensorData(**{f.name: None if getattr(data, f.name) is None else getattr(data, f.name).clone()
                                    for f in fields(data)}), evaluations > 0

    def live_view(self, i: int) -> tuple[ContactSensorData, torch.Tensor]:
        """The buffers of sensor i as views of the batch's own buffers, which every evaluation and reset overwrites
        in place (the views stay views of them for the life of the batch: read them at once, never modify them;
        the history fields, when present, are fresh tensors of this call), and the evaluations since the last
        reset [E] (int; a read is valid where it is > 0) — also a view."""
        o = self.options[i]
        sl = self.body_slices[i]
        nf = len(self.filter_names[i])
        friction = o.track_friction_forces
        net, net_b = self.net[:, sl], self.net_b[:, sl]
        data = dict(net_normal_forces_w=net[:, :, 0], net_forces_w=net[:, :, 2], net_torques_w=net[:, :, 3],
                    net_normal_forces_b=net_b[:, :, 0], net_forces_b=net_b[:, :, 2], net_torques_b=net_b[:, :, 3])
        if friction:
            data.update(net_friction_forces_w=net[:, :, 1], net_friction_forces_b=net_b[:, :, 1])
        if nf:
            m, m_b = self.matrix[:, sl, :nf], self.matrix_b[:, sl, :nf]
            data.update(normal_force_matrix_w=m[..., 0, :], force_matrix_w=m[..., 2, :],
                        normal_force_matrix_b=m_b[..., 0, :], force_matrix_b=m_b[..., 2, :])
            if friction:
                data.update(friction_force_matrix_w=m[..., 1, :], friction_force_matrix_b=m_b[..., 1, :])
            if o.track_contact_points:
                data.update(contact_pos_w=self.contact_pos[:, sl, :nf], contact_pos_b=self.contact_pos_b[:, sl, :nf])
        if o.track_air_time:
            t = self.timers[:, sl]
            data.update(current_air_time=t[..., 0], current_contact_time=t[..., 1], last_air_time=t[..., 2],
                        last_contact_time=t[..., 3])
        if o.track_pose:
            data.update(pos_w=self.pose_pos[:, sl], rot_w=self.pose_rot[:, sl])
        h = o.history_length
        if h:
            order = torch.as_tensor([(self.count - j) % self.h_max for j in range(h)], device=self.ctx.device)
            hist = self.history[:, :, sl].index_select(1, order)
            data.update(net_normal_forces_w_history=hist[:, :, :, 0], net_forces_w_history=hist[:, :, :, 2],
                        net_normal_forces_b_history=hist[:, :, :, 3], net_forces_b_history=hist[:, :, :, 5])
            if friction:
                data.update(net_friction_forces_w_history=hist[:, :, :, 1],
                            net_friction_forces_b_history=hist[:, :, :, 4])
        return ContactSensorData(**data), self.n_since

    def read_ground_truth(self, i: int) -> tuple[ContactSensorData, torch.Tensor]:
        """Same as :meth:`read` (no imperfection pipeline)."""
        return self.read(i)

    def reset(self, env_mask: torch.Tensor | None) -> None:
        """docs/models/imperfections.md#reset: timers, histories and current buffers of the envs zeroed (contact
        positions NaN), in place."""
        if env_mask is None:
            m = torch.ones(self.n_envs, dtype=torch.bool, device=self.ctx.device)
        else:
            m = env_mask.to(self.ctx.device)
        for name in ("net", "net_b", "matrix", "matrix_b", "timers", "history"):
            t = getattr(self, name)
            t.masked_fill_(m.view((-1,) + (1,) * (t.dim() - 1)), 0.0)
        for name in ("contact_pos", "contact_pos_b"):
            getattr(self, name).masked_fill_(m.view(-1, 1, 1, 1), float("nan"))
        self.n_since.masked_fill_(m, 0)
