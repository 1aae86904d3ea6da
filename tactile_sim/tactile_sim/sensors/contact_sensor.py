"""ContactSensor (spec §12): Isaac-Lab-style net contact force on whole bodies from a kinematic penalty model.

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

import re
from dataclasses import dataclass, fields, replace

import numpy as np
import torch

from ..constants import EPS_D, TIMER_TOL, int_ceil
from ..errors import option_error
from ..geometry.sampling import sample_body_surface
from ..geometry.shapes import ShapeKind
from ..world.scene import closest_names
from ..world.state import WorldState
from .base import BuildContext, SensorBatch
from .body_samples import BodySamples

MAX_SAMPLES_PER_BODY = 200_000


@dataclass
class ContactSensorData:
    """Buffers of one ContactSensor (spec §12 Output). E envs (absent for an unbatched scene), S bodies, F filters,
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


def match_bodies(pattern: str, names: tuple[str, ...]) -> list[int]:
    """Indices (scene order) of the bodies whose name equals ``pattern`` or matches it in full as a regex."""
    try:
        regex = re.compile(pattern)
    except re.error:
        return [i for i, n in enumerate(names) if n == pattern]
    return [i for i, n in enumerate(names) if n == pattern or regex.fullmatch(n)]


def expected_sample_count(shapes, spacing: float) -> int:
    """Samples that :func:`sample_body_surface` draws for ``shapes`` at ``spacing`` (§2.5 counts)."""
    total = 0
    for s in shapes:
        if s.kind == ShapeKind.BOX:
            lx, ly, lz = (2 * h for h in s.size)
            total += 2 * sum(int_ceil(a / spacing) * int_ceil(b / spacing) for a, b in ((ly, lz), (lx, lz), (lx, ly)))
        else:
            total += int_ceil(s.area / spacing**2)
    return total


class ContactSensorBatch(SensorBatch):
    """ContactSensors of one evaluation period: all their bodies' samples in one query and one scatter.

    Internally S_tot = the bodies of all sensors, concatenated; F_max the largest filter count (matrices of a sensor
    use its first F columns).
    """

    sensor_type = "ContactSensor"
    evaluation_order = 0

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
            matched = match_bodies(o.prim_path, names)
            if not matched:
                raise option_error(where, "prim_path", "matches no body", o.prim_path,
                                   f"a body name or a regular expression matching one in full; closest bodies: "
                                   f"{closest_names(o.prim_path, names)}")
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
            for f, pattern in enumerate(o.filter_prim_paths_expr):
                hit = match_bodies(pattern, names)
                clash = [names[b] for b in hit if b in matched]
                if clash:
                    raise option_error(where, f"filter_prim_paths_expr[{f}]", f"matches the sensor body {clash[0]!r}",
                                       pattern, "bodies other than those matched by prim_path")
                if not any(candidates[b] for b in hit):
                    touchable = [n for i, n in enumerate(names) if candidates[i]]
                    raise option_error(where, f"filter_prim_paths_expr[{f}]", "matches no candidate body", pattern,
                                       f"a name or regular expression matching a body the sensor can touch; closest "
                                       f"bodies: {closest_names(pattern, touchable)}")
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
        self.group_shape_mask = torch.as_tensor(np.stack(group_masks), device=dev)
        self.group_exact = torch.as_tensor(np.array(group_exact), device=dev)
        self.sample_group = self.samples.owner.to(torch.int32)
        self.cutoff = torch.full((self.samples.n,), -EPS_D, device=dev, dtype=dt)
        def per_body(key: str) -> torch.Tensor:
            return ctx.tensor(np.repeat([float(getattr(o, key)) for o in self.options], counts))

        def sample_option(key: str) -> torch.Tensor:
            return per_body(key)[self.samples.owner]

        self.k_c, self.c_c = sample_option("contact_stiffness"), sample_option("contact_damping")
        self.mu, self.v_s = sample_option("friction_coefficient"), sample_option("slip_velocity")
        exponent = sample_option("contact_exponent")
        self.exponent = None if bool((exponent == 1).all()) else exponent
        self.threshold = per_body("force_threshold")
        self.f_max = max((len(c) for c in filters), default=0)
        self.n_bodies = nb
        self.filter_matrix = None
        if self.f_max:
            m = np.zeros((self.n_sensor_bodies, self.f_max, nb))
            for i, columns in enumerate(filters):
                for f, col in enumerate(columns):
                    m[self.body_slices[i], f] = col
            self.filter_matrix = ctx.tensor(m)
        self.h_max = max(o.history_length for o in self.options)
        self._alloc_state()

    @staticmethod
    def _sample(body, o, where: str):
        shapes = body.shapes
        if not shapes or any(s.kind == ShapeKind.PLANE for s in shapes):
            raise option_error(where, "prim_path", f"body {body.name!r} has no sampleable collision geometry "
                               f"({'a plane' if shapes else 'no collision shapes'})", o.prim_path,
                               "bodies with sphere, box, capsule, cylinder or mesh collision shapes")
        n = expected_sample_count(shapes, o.surface_sample_spacing)
        if n > MAX_SAMPLES_PER_BODY:
            raise option_error(where, "surface_sample_spacing", f"{n} samples on body {body.name!r} exceed "
                               f"{MAX_SAMPLES_PER_BODY}", o.surface_sample_spacing,
                               f"a spacing giving at most {MAX_SAMPLES_PER_BODY} samples per body")
        return sample_body_surface(shapes, spacing=o.surface_sample_spacing, seed=o.sample_seed)

    # ------------------------------------------------------------------ state
    def _alloc_state(self) -> None:
        e, s, f = self.n_envs, self.n_sensor_bodies, self.f_max
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
        self.history = torch.zeros(e, self.h_max, s, 6, 3, **z)  # normal, friction, total (W), then the same in B
        self.n_since = torch.zeros(e, dtype=torch.int64, device=self.ctx.device)
        self.count = 0

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, state: WorldState) -> None:
        smp = self.samples
        rot, pos = smp.owner_pose(state)
        x = smp.world_positions(rot, pos)
        q = self.ctx.query.query(x, state.rot, state.pos, self.sample_group, self.group_shape_mask, self.cutoff,
                                 group_exact=self.group_exact)
        contact = q.body >= 0
        zero = torch.zeros((), dtype=x.dtype, device=x.device)
        depth = torch.where(contact, -q.sd, zero)
        n = torch.where((q.normal == 0).all(-1, keepdim=True), -smp.world_normals(rot), q.normal)
        body = q.body.clamp_min(0)
        o_s = smp.per_sample(pos)
        v_s = smp.per_sample(state.lin_vel.index_select(1, smp.owner_body))
        w_s = smp.per_sample(state.ang_vel.index_select(1, smp.owner_body))
        v = state.point_velocity(body, x) - (v_s + torch.cross(w_s, x - o_s, dim=-1))
        d_dot = (n * v).sum(-1)
        v_t = v - d_dot[..., None] * n
        s = depth if self.exponent is None else depth.pow(self.exponent)
        pressure = torch.clamp_min(s * (self.k_c + self.c_c * d_dot), 0.0)
        fn = (pressure * smp.area)[..., None] * n
        slip = torch.linalg.vector_norm(v_t, dim=-1).clamp_min(self.v_s)
        ft = (self.mu * torch.linalg.vector_norm(fn, dim=-1) / slip)[..., None] * v_t
        f = fn + ft
        torque = torch.cross(x - o_s, f, dim=-1)
        a = torch.where(contact, smp.area, zero)
        e, nb, ns = x.shape[0], self.n_bodies, self.n_sensor_bodies
        loads = torch.cat([fn, ft, torque, a[..., None] * x, a[..., None]], dim=-1).transpose(1, 2)  # [E, 13, P]
        channels = loads.shape[1]
        if self.f_max:  # per (sensor body, touched body) bins, then filter columns
            index = (smp.owner * nb + body)[:, None, :].expand(-1, channels, -1)
            bins = torch.zeros(e, channels, ns * nb, dtype=x.dtype, device=x.device)
            bins.scatter_add_(2, index, loads)
            bins = bins.view(e, channels, ns, nb)
            sums = bins.sum(3).transpose(1, 2)
            per_filter = torch.einsum("ecsb,sfb->esfc", bins, self.filter_matrix)
        else:
            sums = torch.zeros(e, channels, ns, dtype=x.dtype, device=x.device)
            sums = sums.index_add_(2, smp.owner, loads.contiguous()).transpose(1, 2)
        normal, friction = sums[..., 0:3], sums[..., 3:6]
        self.net = torch.stack([normal, friction, normal + friction, sums[..., 6:9]], dim=2)
        self.net_b = torch.matmul(self.net, rot)  # R_sᵀ v for each row vector v
        if self.f_max:
            m_n, m_f = per_filter[..., 0:3], per_filter[..., 3:6]
            self.matrix = torch.stack([m_n, m_f, m_n + m_f], dim=3)
            self.matrix_b = torch.matmul(self.matrix, rot[:, :, None])
            area = per_filter[..., 12:13]
            self.contact_pos = torch.where(area > 0, per_filter[..., 9:12] / area,
                                           torch.full_like(area, float("nan")))
            self.contact_pos_b = torch.matmul(self.contact_pos - pos[:, :, None], rot)
        self.pose_rot, self.pose_pos = rot, pos
        self._update_timers()
        self.count += 1
        self.n_since += 1
        if self.h_max:
            slot = self.count % self.h_max
            self.history[:, slot] = torch.cat([self.net[:, :, :3], self.net_b[:, :, :3]], dim=2)

    def _update_timers(self) -> None:
        dt = self.ctx.dt
        on = torch.linalg.vector_norm(self.net[:, :, 2], dim=-1) > self.threshold
        air, touch, last_air, last_touch = self.timers.unbind(-1)
        last_air = torch.where(on & (air > 0), air + dt, last_air)
        last_touch = torch.where(~on & (touch > 0), touch + dt, last_touch)
        zero = torch.zeros((), dtype=air.dtype, device=air.device)
        air = torch.where(on, zero, air + dt)
        touch = torch.where(on, touch + dt, zero)
        self.timers = torch.stack([air, touch, last_air, last_touch], dim=-1)

    # ------------------------------------------------------------------ contact loads for JointTorque
    def latest_wrenches(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Latest ground truth of every sensor body: net_forces_w and net_torques_w, each [E, S_tot, 3] (W, N and
        N·m about the body origin); ``body_index`` [S_tot] gives the scene body of each row."""
        return self.net[:, :, 2], self.net[:, :, 3]

    # ------------------------------------------------------------------ reading
    def read(self, i: int) -> tuple[ContactSensorData, torch.Tensor]:
        """The buffers of sensor i (caller-owned copies) and valid [E] (False before the first evaluation after a
        reset, when every buffer reads zero / NaN)."""
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
        data = {k: v.clone() for k, v in data.items()}
        return ContactSensorData(**data), self.n_since > 0

    def read_ground_truth(self, i: int) -> tuple[ContactSensorData, torch.Tensor]:
        """Same as :meth:`read` (no imperfection pipeline)."""
        return self.read(i)

    def reset(self, env_mask: torch.Tensor | None) -> None:
        """§13.8: timers, histories and current buffers of the envs zeroed (contact positions NaN)."""
        m = (torch.ones(self.n_envs, dtype=torch.bool, device=self.ctx.device) if env_mask is None
             else env_mask.to(self.ctx.device))
        for name in ("net", "net_b", "matrix", "matrix_b", "timers", "history"):
            t = getattr(self, name)
            setattr(self, name, t.masked_fill(m.view((-1,) + (1,) * (t.dim() - 1)), 0.0))
        for name in ("contact_pos", "contact_pos_b"):
            t = getattr(self, name)
            setattr(self, name, t.masked_fill(m.view(-1, 1, 1, 1), float("nan")))
        self.n_since = self.n_since.masked_fill(m, 0)
