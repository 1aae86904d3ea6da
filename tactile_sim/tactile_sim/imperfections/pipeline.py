"""The measured branch of one sensor batch (docs/models/imperfections.md#imperfections): probe-level draws, transform,
hardware stages, rings, reads.

A batch is the sensors of one class and one evaluation period, evaluated together: their probes are concatenated.
Internally a value is [E, P, K] (E envs, P probes/cells/joints of all sensors, K channels per probe). Per evaluation a
sensor calls, in this order::

    r_tilde = branch.radius(R)                 # stage: radius noise  (R [P] nominal → [E, P])
    g = branch.gain                            # [E, P] state, drawn at reset
    y = branch.transform(raw_measured)         # stages 1–2: crosstalk, hysteresis   ([E, P, K])
    ...                                        # stages 3–4 are the sensor's (ElastomerTaxel gain, temperature lag)
    y = branch.hardware(y)                     # stages 5–9: random walk, noise, bias, quantisation, dead taxels
    branch.push(y, ground_truth)               # stage 11 filler mask, rings; commits the evaluation

and any time later ``branch.read(i)`` / ``branch.read_ground_truth(i)`` for sensor i of the batch. A sensor may
write its raw measured values and its ground truth straight into ``branch.staging()`` (the buffers that push
commits): then hardware works in place and push copies nothing, and ``branch.push_staged()`` replaces the last three
calls — transform, hardware, stage 10 (the ContactProbe latch of both branches, for a branch built with
``latch_thresholds``), the sample validity (``push_staged(sample_valid)``: invalid samples zeroed), the filler mask
and the commit in one kernel launch (plus the crosstalk/hysteresis ops when a sensor has them). Stage 10 exists only
on that path.

Randomness (docs/models/imperfections.md#seeding) is counter-based (:mod:`.rng`): each sensor's draws are a pure
function of its own seed, the stage
(1 radius noise, 2 jitter, 3 random-walk increments, 4 white noise; per reset 5 gains, 6 dead mask, 7 dead values),
the env, the element within the sensor and a counter. Per-evaluation draws use the batch's evaluation index g
(1, 2, … since build; shared by all envs, never rewound by a reset). Per-reset draws use the env's own reset count
(0 for the reset that ends the build). Hence: adding or removing a sensor never changes another's draws; a run is
reproducible from the seeds and the call sequence; resetting a subset of envs draws for those envs exactly what a
reset of every env would have drawn for them, and leaves the other envs untouched. There is no Python loop over
sensors or probes in the step path: per-sensor options are precomputed into per-probe tensors at build. Stages 5–11
run in one warp kernel (native element-wise loops, see :mod:`.rng`): a step of the branch costs one launch whatever
stages are active.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import warp as wp

from ..geometry.struct_launch import StructLaunch, warp_struct
from ..geometry.warp_kernels import unique_kernel
from .grid_crosstalk import CrosstalkMember, GridCrosstalk
from .latch import SchmittLatch
from .rng import (
    CPU_CHUNK,
    INTERLEAVED_LOOP_CPP,
    MIX32_CPP,
    NORMAL_DRAWS_CPP,
    WP_FLOAT,
    CounterStream,
    bits_to_uniform,
    block_size,
    counter_hash,
    COUNTER_HASH_CPP,
    draw_bits,
    lane_keys,
    lanes_uint32,
)
from .spec import SensorImperfections

STAGE_RADIUS, STAGE_JITTER, STAGE_RANDOM_WALK, STAGE_NOISE = 1, 2, 3, 4
STAGE_GAIN, STAGE_DEAD_MASK, STAGE_DEAD_VALUE = 5, 6, 7
_MAX_PHASES = 16
"""Most launches recorded per branch kernel use (one per phase of the staging slots, i.e. per ring slot)."""

_WALK, _NOISE, _BIAS, _RESOLUTION, _DEAD, _LATCH, _FILLERS, _VALIDITY = 1, 2, 4, 8, 16, 32, 64, 128
"""Flags of the stages the branch kernel applies (:func:`_branch_loop`)."""
_HARDWARE_FLAGS = _WALK | _NOISE | _BIAS | _RESOLUTION | _DEAD


def _branch_struct(dtype: torch.dtype):
    """Per-batch arrays of the branch kernel (N = P·K values per env): input x and output y [E, N] (y: the measured
    staging slot; x may be y), ground truth gt [E, N] (staging, updated in place), random-walk state [E, N], per-channel
    σ_w, σ, bias and resolution [N], the uint32 lanes [E, N] of the walk and noise streams, dead mask and value
    [E, P], the probes' active flags [P], the ContactProbe latch thresholds [P] and states [E, P] of both branches,
    the sensor of each probe [P] int32, the evaluation's sample validity [E, S] (input) and its ring slot [E, S]."""
    f, u, b = WP_FLOAT[dtype], wp.uint32, wp.bool
    fields = {"x": wp.array3d(dtype=f), "y": wp.array3d(dtype=f), "gt": wp.array3d(dtype=f),
              "walk": wp.array2d(dtype=f), "walk_sigma": wp.array(dtype=f), "walk_lanes": wp.array2d(dtype=u),
              "noise_sigma": wp.array(dtype=f), "noise_lanes": wp.array2d(dtype=u), "bias": wp.array(dtype=f),
              "resolution": wp.array(dtype=f), "dead_mask": wp.array2d(dtype=b), "dead_value": wp.array2d(dtype=f),
              "active": wp.array(dtype=b), "contact": wp.array(dtype=f), "release": wp.array(dtype=f),
              "latch_measured": wp.array2d(dtype=b), "latch_truth": wp.array2d(dtype=b),
              "sensor_of_probe": wp.array(dtype=wp.int32), "sample_valid": wp.array2d(dtype=b),
              "ring_valid": wp.array2d(dtype=b)}
    name = f"BranchCall_{f.__name__}"
    return warp_struct(name, fields, __name__)


def _branch_loop(dtype: torch.dtype) -> str:
    """Native loop over elements [start, stop) of env row e (probe p = j / K of element j), stage by stage:
    y = x; 5 w += σ_w z_w, y += w; 6–7 y += σ z + b (or y += b); 8 y = r·nearbyint(y / r) where r > 0 (half to
    even); 9 y = dead value of dead probes; 10 Schmitt latch of both branches (K = 1): on = active ∧ (v > contact ∨
    (on_prev ∧ v > release)), value ← on; invalid samples zeroed on both branches and the sample validity of the
    env copied into its ring slot (by the row's first block); 11 fillers zeroed on both branches.
    z: the normal of mix32(lane ^ key) (:data:`.rng.NORMAL_DRAWS_CPP`), key = counter_hash(evaluation): the draws of
    :func:`.rng.draw_bits`."""
    t = "float" if dtype == torch.float32 else "double"
    nearbyint = "nearbyintf" if dtype == torch.float32 else "nearbyint"
    return INTERLEAVED_LOOP_CPP + MIX32_CPP + COUNTER_HASH_CPP + NORMAL_DRAWS_CPP[dtype] + f"""
#if defined(__CUDA_ARCH__)
#define BRANCH_NEARBYINT {nearbyint}
#else
#define BRANCH_NEARBYINT __builtin_{nearbyint}
#endif
    auto row = [e](auto& a) {{ return reinterpret_cast<char*>(a.data) + static_cast<size_t>(e) * a.strides[0]; }};
    const uint32_t key = counter_hash(evaluation);
    const auto hashed = [&](auto lane) {{ return mix32(lane ^ key); }};
    {t}* y = reinterpret_cast<{t}*>(row(call.y));
    const {t}* x = reinterpret_cast<const {t}*>(row(call.x));
    if (flags & {_WALK}) {{
        {t}* __restrict__ w = reinterpret_cast<{t}*>(row(call.walk));
        const {t}* __restrict__ sw = call.walk_sigma.data;
        const uint32_t* __restrict__ lw = reinterpret_cast<const uint32_t*>(row(call.walk_lanes));
        for_each_normal(lw, hashed, start, stop, [&](int j, {t} z) {{
            w[j] += z * sw[j];
            y[j] = x[j] + w[j];
        }});
    }} else if (x != y) {{
        for (int j = start; j < stop; ++j) y[j] = x[j];
    }}
    const {t}* __restrict__ b = call.bias.data;
    if (flags & {_NOISE}) {{
        const {t}* __restrict__ sn = call.noise_sigma.data;
        const uint32_t* __restrict__ ln = reinterpret_cast<const uint32_t*>(row(call.noise_lanes));
        if (flags & {_BIAS}) {{
            for_each_normal(ln, hashed, start, stop, [&](int j, {t} z) {{ y[j] += z * sn[j] + b[j]; }});
        }} else {{
            for_each_normal(ln, hashed, start, stop, [&](int j, {t} z) {{ y[j] += z * sn[j]; }});
        }}
    }} else if (flags & {_BIAS}) {{
        for (int j = start; j < stop; ++j) y[j] += b[j];
    }}
    if (flags & {_RESOLUTION}) {{
        const {t}* __restrict__ r = call.resolution.data;
        for (int j = start; j < stop; ++j) {{
            const {t} q = BRANCH_NEARBYINT(y[j] / r[j]) * r[j];
            y[j] = r[j] > static_cast<{t}>(0) ? q : y[j];
        }}
    }}
    if (flags & {_DEAD}) {{
        const bool* dm = reinterpret_cast<const bool*>(row(call.dead_mask));
        const {t}* dv = reinterpret_cast<const {t}*>(row(call.dead_value));
        for (int j = start; j < stop; ++j) if (dm[j / channels]) y[j] = dv[j / channels];
    }}
    {t}* gt = reinterpret_cast<{t}*>(row(call.gt));
    const bool* active = call.active.data;
    if (flags & {_LATCH}) {{
        const {t}* __restrict__ on_at = call.contact.data;
        const {t}* __restrict__ off_at = call.release.data;
        bool* lm = reinterpret_cast<bool*>(row(call.latch_measured));
        bool* lt = reinterpret_cast<bool*>(row(call.latch_truth));
        for (int j = start; j < stop; ++j) {{
            const bool m = active[j] && (y[j] > on_at[j] || (lm[j] && y[j] > off_at[j]));
            const bool g = active[j] && (gt[j] > on_at[j] || (lt[j] && gt[j] > off_at[j]));
            lm[j] = m;
            lt[j] = g;
            y[j] = m ? static_cast<{t}>(1) : static_cast<{t}>(0);
            gt[j] = g ? static_cast<{t}>(1) : static_cast<{t}>(0);
        }}
    }}
    if (flags & {_VALIDITY}) {{
        const bool* valid = reinterpret_cast<const bool*>(row(call.sample_valid));
        const int* sensor = call.sensor_of_probe.data;
        for (int j = start; j < stop; ++j) if (!valid[sensor[j / channels]]) {{ y[j] = static_cast<{t}>(0); gt[j] = static_cast<{t}>(0); }}
        if (start == 0) {{
            bool* slot = reinterpret_cast<bool*>(row(call.ring_valid));
            for (int s = 0; s < call.ring_valid.shape[1]; ++s) slot[s] = valid[s];
        }}
    }}
    if (flags & {_FILLERS}) {{
        for (int j = start; j < stop; ++j) if (!active[j / channels]) {{ y[j] = static_cast<{t}>(0); gt[j] = static_cast<{t}>(0); }}
    }}
"""


def _branch_kernel(dtype: torch.dtype):
    """Kernel ``(call, evaluation, flags, chunk, channels)`` over (E, ⌈N/chunk⌉); evaluation: the counter of the
    normal draws (both streams draw with its hash; their lanes differ); channels: K."""
    call_type = _BRANCH_STRUCTS[dtype]
    name = f"measured_branch_{WP_FLOAT[dtype].__name__}"

    def block(call, evaluation, flags, channels, e, start, stop): ...

    block.__name__ = f"{name}_block"
    block.__annotations__ = {"call": call_type, "evaluation": wp.int64, "flags": int, "channels": int, "e": int,
                             "start": int, "stop": int}
    native = wp.func_native(_branch_loop(dtype))(block)

    def kernel(call, evaluation, flags, chunk, channels):
        e, t = wp.tid()
        n = call.y.shape[1] * call.y.shape[2]
        native(call, evaluation, flags, channels, e, t * chunk, wp.min(t * chunk + chunk, n))

    kernel.__name__ = name
    kernel.__annotations__ = {"call": call_type, "evaluation": wp.int64, "flags": int, "chunk": int,
                              "channels": int}
    return unique_kernel(kernel)


_BRANCH_STRUCTS = {dt: _branch_struct(dt) for dt in WP_FLOAT}
_BRANCH_KERNELS = {dt: _branch_kernel(dt) for dt in WP_FLOAT}


class ProbeDraws(NamedTuple):
    """The per-reset random draws of one sensor (redrawn at each reset of an env), each ``[E, *layout]``.

    gain: probe gain g on the measured branch (1 where no gain option is set); dead: True for a dead taxel;
    dead_value: the value the taxel reads while dead, drawn for every taxel and applied only where ``dead``
    (0 when no dead taxels are configured). Units are those of the sensor's reading.
    """

    gain: torch.Tensor
    dead: torch.Tensor
    dead_value: torch.Tensor


class MeasuredBranch:
    """Measured branch, ground-truth ring and read-out of the sensors of one batch.

    specs: the batch's sensors (same channels K and dt); n_envs: E ≥ 1; device, dtype: of every tensor;
    latch_thresholds: (contact, release) [P] m of the ContactProbe latch (stage 10, K = 1; applied by
    :meth:`push_staged`), or None; streams: the noise stream of each env (int64 [E], in the lane hash of every
    draw, :func:`.rng.lane_keys`), or None for the env indices. Attributes: ``gain`` [E, P] (probe gain, 1 at
    fillers), ``slices[i]`` the probe range of sensor i, ``sensor_of_probe`` [P] long, ``active`` [P] bool,
    ``radius_varies`` (True when some sensor has radius noise: :meth:`radius` then differs per evaluation),
    ``transforms`` (True when some sensor has
    crosstalk or hysteresis, stages 1–2: :meth:`transform` then changes the measured values), ``staging_slots`` (see
    :meth:`staging`). Build ends with a reset of every env.
    """

    kernel_tables = (_BRANCH_KERNELS,)
    """Tables (working dtype → kernel) of the kernels every branch launches, compiled before a suite is built
    (:func:`~..geometry.warp_kernels.prepare_kernels`)."""

    def __init__(self, specs: list[SensorImperfections], n_envs: int, device="cpu", dtype: torch.dtype = torch.float32,
                 latch_thresholds: tuple[torch.Tensor, torch.Tensor] | None = None,
                 streams: torch.Tensor | None = None):
        if not specs:
            raise ValueError("MeasuredBranch: a batch needs at least one sensor")
        if n_envs < 1:
            raise ValueError(f"MeasuredBranch: n_envs must be >= 1 inside the library; got {n_envs}")
        k, dt = specs[0].channels, specs[0].dt
        for s in specs:
            if s.channels != k or s.dt != dt:
                raise ValueError(
                    f"MeasuredBranch: sensors of one batch share channels and dt; {s.where} has K={s.channels}, "
                    f"dt={s.dt} but {specs[0].where} has K={k}, dt={dt}"
                )
        self.specs = list(specs)
        self.n_envs, self.channels, self.dt = n_envs, k, dt
        self.streams = n_envs if streams is None else streams
        self.device, self.dtype = torch.device(device), dtype
        offsets = [0]
        for s in specs:
            offsets.append(offsets[-1] + s.n_probes)
        self.slices = [slice(a, b) for a, b in zip(offsets[:-1], offsets[1:])]
        self.n_probes = offsets[-1]
        self.sensor_of_probe = torch.repeat_interleave(
            torch.arange(len(specs), device=self.device), torch.tensor([s.n_probes for s in specs], device=self.device)
        )
        self.active = self._cat_probe([torch.as_tensor(s.active) for s in specs]).to(torch.bool)
        self._has_fillers = not bool(self.active.all())
        self._active3 = self.active[None, :, None]
        self._count = 0
        self._cache = None
        self._build_probe_level()
        self._build_transform()
        self._build_hardware()
        self._build_rings()
        self._build_latches(latch_thresholds)
        self._build_launches()
        self.reset()

    # ---- build helpers ------------------------------------------------------------------------------------------

    def _tensor(self, values) -> torch.Tensor:
        return torch.as_tensor(values, dtype=self.dtype, device=self.device)

    def _cat_probe(self, parts: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat([p.reshape(-1).to(self.device) for p in parts])

    def _per_probe(self, value_of) -> torch.Tensor:
        """[P] tensor from a per-sensor scalar (or [n] array) given by value_of(spec)."""
        return self._cat_probe([self._tensor(value_of(s)).expand(s.n_probes) for s in self.specs])

    def _per_channel(self, option: str) -> torch.Tensor:
        """[P, K] tensor of a per-channel option; 0 at fillers (they carry no imperfections)."""
        v = torch.cat([self._tensor(s.per_channel(option)) for s in self.specs])
        return torch.where(self._active3[0], v, torch.zeros((), dtype=self.dtype, device=self.device))

    def _probe_lanes(self, stage: int) -> torch.Tensor:
        """Lane keys [E, P]: one lane per (env, probe)."""
        return torch.cat([lane_keys(s.seed, stage, self.streams, s.n_probes, self.device) for s in self.specs], dim=1)

    def _channel_lanes(self, stage: int) -> torch.Tensor:
        """Lane keys [E, P, K]: one lane per (env, probe, channel)."""
        e, k = self.n_envs, self.channels
        return torch.cat(
            [lane_keys(s.seed, stage, self.streams, s.n_probes * k, self.device).view(e, s.n_probes, k)
             for s in self.specs], dim=1
        )

    def _sensor_lanes(self, stage: int, n: int) -> torch.Tensor:
        """Lane keys [E, S, n]: n lanes per (env, sensor)."""
        return torch.stack([lane_keys(s.seed, stage, self.streams, n, self.device) for s in self.specs], dim=1)

    def _build_probe_level(self) -> None:
        specs, e, p = self.specs, self.n_envs, self.n_probes
        a = self._per_probe(lambda s: s.probe_radius_noise) * self.active
        self._radius_noise = None
        self.radius_varies = bool((a > 0).any())
        if self.radius_varies:
            def radius_offsets(bits, counters):
                return a * (bits_to_uniform(bits, self.dtype).mul_(2.0).sub_(1.0))
            self._radius_noise = CounterStream(self._probe_lanes(STAGE_RADIUS), radius_offsets, block_size(e * p))
        self._static_gain = torch.where(self.active, self._per_probe(lambda s: s.probe_gain), self._tensor(1.0))
        ranges = [s.probe_gain_resample_range for s in specs]
        self._gain_range = None
        if any(r is not None for r in ranges):
            has = self._per_probe(lambda s: float(s.probe_gain_resample_range is not None)) > 0
            lo = self._per_probe(lambda s: (s.probe_gain_resample_range or (1.0, 1.0))[0])
            hi = self._per_probe(lambda s: (s.probe_gain_resample_range or (1.0, 1.0))[1])
            self._gain_range = (has & self.active, lo, hi - lo, self._probe_lanes(STAGE_GAIN))
        self.gain = self._static_gain.expand(e, p).clone()
        prob = self._per_probe(lambda s: s.dead_taxel_probability) * self.active
        self._dead = None
        if bool((prob > 0).any()):
            lo = self._per_probe(lambda s: s.dead_taxel_value_range[0])
            hi = self._per_probe(lambda s: s.dead_taxel_value_range[1])
            self._dead = (prob, lo, hi - lo, self._probe_lanes(STAGE_DEAD_MASK), self._probe_lanes(STAGE_DEAD_VALUE))
            self._dead_mask = torch.zeros((e, p), dtype=torch.bool, device=self.device)
            self._dead_value = torch.zeros((e, p), dtype=self.dtype, device=self.device)

    def _build_transform(self) -> None:
        members, offset = [], 0
        for s in self.specs:
            if s.kernel is not None:
                members.append(CrosstalkMember(offset, s.layout_shape, s.kernel, s.active))
            offset += s.n_probes
        self._crosstalk = GridCrosstalk(members, self.channels, self.device, self.dtype) if members else None
        strength = self._per_probe(lambda s: s.hysteresis_strength)
        self._hysteresis = None
        if bool((strength > 0).any()):
            tau = self._per_probe(lambda s: s.hysteresis_tau if s.hysteresis_strength > 0 else 1.0)
            alpha = torch.where(strength > 0, torch.exp(-self.dt / tau), torch.zeros_like(tau))
            shape = (self.n_envs, self.n_probes, self.channels)
            self._hysteresis = (strength[:, None], alpha[:, None])
            self._xi = torch.zeros(shape, dtype=self.dtype, device=self.device)
            self._x_prev = torch.zeros(shape, dtype=self.dtype, device=self.device)

    def _build_hardware(self) -> None:
        """The per-channel tables of stages 5–9 as fields of the branch kernel, and the flags of those present."""
        e, p, k = self.n_envs, self.n_probes, self.channels
        walk, sigma, bias = self._per_channel("random_walk"), self._per_channel("noise"), self._per_channel("bias")
        res = self._per_channel("resolution")
        fields: dict[str, torch.Tensor] = {}
        self._walk_state = None
        if bool((walk > 0).any()):
            self._walk_state = torch.zeros((e, p, k), dtype=self.dtype, device=self.device)
            fields.update(walk=self._walk_state.view(e, -1), walk_sigma=walk.reshape(-1).contiguous(),
                          walk_lanes=lanes_uint32(self._channel_lanes(STAGE_RANDOM_WALK).view(e, -1)))
        if bool((sigma > 0).any()):
            fields.update(noise_sigma=sigma.reshape(-1).contiguous(),
                          noise_lanes=lanes_uint32(self._channel_lanes(STAGE_NOISE).view(e, -1)))
        if bool((bias != 0).any()):
            fields.update(bias=bias.reshape(-1).contiguous())
        if bool((res > 0).any()):
            fields.update(resolution=res.reshape(-1).contiguous())
        if self._dead is not None:
            fields.update(dead_mask=self._dead_mask, dead_value=self._dead_value)
        self._hardware_flags = (_WALK * ("walk" in fields) + _NOISE * ("noise_sigma" in fields)
                                + _BIAS * ("bias" in fields) + _RESOLUTION * ("resolution" in fields)
                                + _DEAD * ("dead_mask" in fields))
        self._hardware_fields = fields

    def _build_rings(self) -> None:
        e, p, k, s = self.n_envs, self.n_probes, self.channels, len(self.specs)
        dev = self.device
        delays = [sp.delay_steps for sp in self.specs]
        jitters = [sp.jitter for sp in self.specs]
        has_jitter = any(j > 0 for j in jitters)
        # the longest lag plus the latest evaluation: a delayed read never needs the slot that the next evaluation
        # stages into (that slot may hold the current delayed read, which nothing reads between the staging writes
        # and the commit that moves the reads on); an even length, so that the phases of the ring are also those of
        # the 2-slot ground truth. The fewer slots, the sooner a slot returns: a delay of one evaluation stages into
        # the slot the last read copied (2 slots)
        lag_slots = max(delays) + (1 if has_jitter else 0) + 1
        self._ring_len = lag_slots + lag_slots % 2
        r = self._ring_len
        self._ring = torch.zeros((r, e, p, k), dtype=self.dtype, device=dev)
        self._ring_views = list(self._ring.unbind(0))
        self._gt_ring = torch.zeros((2, e, p, k), dtype=self.dtype, device=dev)  # latest and next ground truth
        self._gt_views = list(self._gt_ring.unbind(0))
        self._reset_at = torch.zeros(e, dtype=torch.int64, device=dev)  # evaluations committed at each env's reset
        # host bound: no env was reset after evaluation _warm_from, so at evaluation g every env has n ≥ g − _warm_from
        # evaluations since its reset; beyond the longest lag every read is valid (shared, never modified masks)
        self._warm_from = 0
        self._max_lag = max(delays) + (1 if has_jitter else 0)
        self._all_envs = torch.ones(e, dtype=torch.bool, device=dev)
        self._all_sensors = torch.ones((e, s), dtype=torch.bool, device=dev)
        self._reset_count = torch.zeros(e, dtype=torch.int64, device=dev)
        self._flags = any(sp.sample_validity for sp in self.specs)
        if self._flags:  # sample validity [E, S] of each ring slot; the latest slot's is also the ground truth's
            self._ring_valid = torch.ones((r, e, s), dtype=torch.bool, device=dev)
            self._ring_valid_views = list(self._ring_valid.unbind(0))
        # per ring slot q (evaluations g ≡ q mod r): the staging pair of evaluation g and the warm ground-truth read
        # of evaluation g (valid: the shared all-true mask, or the slot's sample validity)
        self.staging_slots = [(self._ring_views[q], self._gt_views[q % 2]) for q in range(r)]
        self._warm_gt_reads = [(self._gt_views[q % 2], self._ring_valid_views[q] if self._flags
                                else self._all_sensors) for q in range(r)]
        self._uniform_delay = None if has_jitter or len(set(delays)) > 1 else delays[0]
        self._warm_reads = None  # one delay d for every sensor: the warm delayed read of evaluation g ≡ q mod r
        if self._uniform_delay is not None:
            slots = [(q - self._uniform_delay) % r for q in range(r)]
            self._warm_reads = [((self._ring_views[q], self._ring_valid_views[q] if self._flags
                                  else self._all_sensors), q, None if self._flags else self._all_envs)
                                for q in slots]
        self._lag_stream = None
        if self._uniform_delay is None:
            d_s = torch.tensor(delays, dtype=torch.int64, device=dev)
            if has_jitter:
                ratio = torch.tensor([j / self.dt for j in jitters], dtype=torch.float64, device=dev)

                def lags(bits, counters):
                    u = bits_to_uniform(bits, torch.float64)
                    lag_s = d_s + (u[..., 1] < u[..., 0] * ratio).to(torch.int64)  # [B, E, S]
                    return self._slots(lag_s, counters)

                self._lag_stream = CounterStream(self._sensor_lanes(STAGE_JITTER, 2), lags, block_size(e * p * k))
            else:
                residues = torch.arange(r, dtype=torch.int64, device=dev)
                lag_s = d_s.expand(r, e, s)
                self._static_lags = list(zip(*(t.unbind(0) for t in self._slots(lag_s, residues))))
        h = max(sp.history_length for sp in self.specs)
        self._hist_len = h
        if h:
            self._hist = torch.zeros((e, h, p, k), dtype=self.dtype, device=dev)
            self._hist_valid = torch.zeros((e, h, s), dtype=torch.bool, device=dev)
            self._gt_hist = torch.zeros((e, h, p, k), dtype=self.dtype, device=dev)
            self._gt_hist_valid = torch.zeros((e, h, s), dtype=torch.bool, device=dev)
            self._hist_ages = torch.arange(h, device=dev)
            """Ages 0 … H − 1 of the history slots (steps back from the newest)."""
        self._history_of = [sp.history_length for sp in self.specs]
        self._ring_sensor_views = [
            [self._shaped(i, v[:, sl]) for i, sl in enumerate(self.slices)] for v in self._ring_views
        ]
        self._gt_sensor_views = [[self._shaped(i, v[:, sl]) for i, sl in enumerate(self.slices)]
                                 for v in self._gt_views]

    def _build_latches(self, thresholds: tuple[torch.Tensor, torch.Tensor] | None) -> None:
        """Stage 10 (ContactProbe): one Schmitt latch per branch on (contact, release) thresholds [P] m, K = 1."""
        self._latches = None
        if thresholds is None:
            return
        if self.channels != 1:
            raise ValueError(f"MeasuredBranch: a latch needs one channel per probe; {self.specs[0].where} has "
                             f"K={self.channels}")
        contact, release = (torch.as_tensor(t, dtype=self.dtype, device=self.device).reshape(-1).contiguous()
                            for t in thresholds)
        for label, t in (("contact", contact), ("release", release)):
            if t.numel() != self.n_probes:
                raise ValueError(f"MeasuredBranch: {label} thresholds must have one value per probe "
                                 f"({self.n_probes}); got {t.numel()}")
        self._latches = (SchmittLatch(contact, release, self.active, self.n_envs),
                         SchmittLatch(contact, release, self.active, self.n_envs))

    def _build_launches(self) -> None:
        """Recorded launches of the branch kernel: stages 5–9 (:meth:`hardware`) and stages 5–11 with the commit
        (:meth:`push_staged`; none when no stage would change the staging buffers), one per phase g mod r (ring
        length, even) of the evaluation counter with x, y, gt (and the sample validity's ring slot) bound to that
        phase's staging slots (nothing to rebind per evaluation), or a single one rebound per evaluation when the
        ring is long (more than :data:`_MAX_PHASES` slots)."""
        e, n, r = self.n_envs, self.n_probes * self.channels, self._ring_len
        chunk = CPU_CHUNK if self.device.type == "cpu" else 1
        phases = range(r) if r <= _MAX_PHASES else [1]

        def record(fields: dict, flags: int) -> list[StructLaunch]:
            def slots(g: int) -> dict:
                slot = {"x": self._ring_views[g % r], "y": self._ring_views[g % r], "gt": self._gt_views[g % 2]}
                if flags & _VALIDITY:
                    slot["ring_valid"] = self._ring_valid_views[g % r]
                return slot

            return [StructLaunch(_BRANCH_KERNELS[self.dtype], (e, -(-n // chunk)), _BRANCH_STRUCTS[self.dtype],
                                 {**slots(g), **fields}, [0, flags, chunk, self.channels], self.device)
                    for g in phases]

        self._hardware_launches = record(self._hardware_fields, self._hardware_flags) if self._hardware_flags else []
        fields = {**self._hardware_fields, "active": self.active}
        flags = self._hardware_flags | (_FILLERS if self._has_fillers else 0)
        if self._latches is not None:
            measured, truth = self._latches
            fields.update(contact=measured.contact, release=measured.release, latch_measured=measured.state,
                          latch_truth=truth.state)
            flags |= _LATCH
        if self._flags:
            fields.update(sensor_of_probe=self.sensor_of_probe.to(torch.int32), sample_valid=self._all_sensors)
            flags |= _VALIDITY
        self.transforms = self._crosstalk is not None or self._hysteresis is not None
        self._staged_launches = record(fields, flags) if flags or self.transforms else []
        self._staged_flags = flags if self._staged_launches else 0

    def _slots(self, lag_s: torch.Tensor, counters: torch.Tensor):
        """For lags [B, E, S] at evaluations counters [B]: (slot index [B, 1, E, P, K] for gather on the ring,
        lag [B, E, S], slot per sensor [B, 1, E, S])."""
        b, e, s = lag_s.shape
        slot_s = (counters.view(b, 1, 1) - lag_s) % self._ring_len
        slot_p = slot_s[:, :, self.sensor_of_probe]
        full = slot_p[:, None, :, :, None].expand(b, 1, e, self.n_probes, self.channels).contiguous()
        return full, lag_s, slot_s[:, None]

    # ---- per-evaluation stages ----------------------------------------------------------------------------------

    def radius(self, nominal: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Measured-branch radii R̃ = max(0, R + U(−a, a)) per env and active probe (fillers untouched), m.
        nominal: [P] m → [E, P] (a broadcast view of nominal when no sensor has radius noise; written into ``out``
        [E, P] when given)."""
        if self._radius_noise is None:
            r = nominal.expand(self.n_envs, self.n_probes)
            return r if out is None else out.copy_(r)
        return torch.add(nominal, self._radius_noise[self._count + 1], out=out).clamp_min_(0.0)

    def transform(self, x: torch.Tensor) -> torch.Tensor:
        """Stages 1–2 on clean values: spatial crosstalk (grid sensors with a kernel), then viscoelastic hysteresis
        ξ_k = α ξ_k−1 + (x_k − x_k−1), y = x + s ξ (per channel). x: [E, P, K] → y [E, P, K] (x itself when no
        stage is active; never modified in place). Call once per evaluation."""
        if self._crosstalk is not None:
            x = self._crosstalk(x)
        if self._hysteresis is None:
            return x
        strength, alpha = self._hysteresis
        step = x - self._x_prev
        self._xi.mul_(alpha).add_(step)
        self._x_prev.copy_(x)
        return torch.addcmul(x, self._xi, strength)

    def staging(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(measured, ground truth) buffers ``[E, P, K]`` that the next :meth:`push` commits. A sensor may write its
        raw measured values and its ground truth here, pass the first to :meth:`hardware` (which then works in
        place) and both to push (which then copies nothing). The ground-truth one is not a visible read before that
        push; the measured one may be the current delayed read (the ring is one slot longer than the longest lag):
        read before writing into it.
        The pair is ``staging_slots[(evaluations + 1) % len(staging_slots)]``: a sensor kernel writing into it may
        record one launch per slot instead of rebinding its outputs every evaluation."""
        slots = self.staging_slots
        return slots[(self._count + 1) % len(slots)]

    def share_ground_truth(self) -> bool:
        """Make the ground-truth slots those of the measured ring when the branch changes no value (no stage 1–11,
        no filler, delay 0 without jitter, no history) and draws nothing (no radius noise, gain 1, no dead taxel):
        for a sensor whose measured values then equal its ground truth bit for bit, which then writes (and clears)
        one buffer per evaluation instead of two (:meth:`staging` gives the same tensor twice). Reads stay the
        caller's own tensors. Returns whether the slots are shared. Call once, right after build."""
        if (self._staged_launches or self._ring_len != 2 or self._uniform_delay != 0 or self._hist_len
                or self.radius_varies or self._gain_range is not None or self._dead is not None
                or not bool((self._static_gain == 1).all())):
            return False
        self._gt_ring, self._gt_views, self._gt_sensor_views = self._ring, self._ring_views, self._ring_sensor_views
        self.staging_slots = [(measured, measured) for measured, _ in self.staging_slots]
        self._warm_gt_reads = [(self._gt_views[q % 2], valid) for q, (_, valid) in enumerate(self._warm_gt_reads)]
        return True

    def sensor_writes_ground_truth(self) -> bool:
        """Whether only the sensor writes the ground-truth staging slots (:meth:`push_staged` writes them only for
        stage 10, sample validity or fillers; a reset writes zeros): then, as the slots alternate with the parity of
        the evaluation, a slot holds what the sensor wrote into it two evaluations before (or zeros after a reset),
        and a sensor that knows where it wrote may clear only there."""
        return not self._staged_flags & (_LATCH | _VALIDITY | _FILLERS)

    def hardware(self, x: torch.Tensor) -> torch.Tensor:
        """Stages 5–9: random walk (w += N(0, σ_w²), added), white noise N(0, σ²), bias, quantisation
        r·round(x/r) (half to even), dead-taxel override, in one kernel launch. x: [E, P, K] → the measured staging
        buffer (x itself when no stage is active). x is only modified when it is that staging buffer. Call once per
        evaluation, before :meth:`push`."""
        if not self._hardware_flags:
            return x
        g = self._count + 1
        slot = g % self._ring_len
        y = self._ring_views[slot]
        launches = self._hardware_launches
        launch = launches[g % len(launches)] if len(launches) > 1 else self._rebound_launch(launches[0], g)
        if x is not y:
            if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device or not x.is_contiguous():
                x = y.copy_(x)
            elif x.data_ptr() == launch.pointers["x"]:  # a new view of the memory already bound (e.g. a state)
                x = launch.tensors["x"]
        launch.bind("x", x)
        launch.set_arg(1, g)
        launch()
        return y

    def _rebound_launch(self, launch: StructLaunch, g: int) -> StructLaunch:
        """The single launch of a long ring (see :meth:`_build_launches`) with x, y and gt (and the sample validity's
        ring slot) bound to the staging slots of evaluation g."""
        y = self._ring_views[g % self._ring_len]
        launch.bind("x", y)
        launch.bind("y", y)
        launch.bind("gt", self._gt_views[g % 2])
        if "ring_valid" in launch.tensors:
            launch.bind("ring_valid", self._ring_valid_views[g % self._ring_len])
        return launch

    def push_staged(self, sample_valid: torch.Tensor | None = None) -> None:
        """Stages 1–11 and the commit of what the sensor wrote into :meth:`staging` (raw measured values and ground
        truth): :meth:`transform` (only when a sensor has crosstalk or hysteresis), then stages 5–9, the latch of
        both branches (branches built with ``latch_thresholds``; the staging buffers then hold the signed overlaps
        and become 0./1.), the sample validity and the filler mask in one kernel launch, in place. Equivalent to
        ``push(hardware(transform(measured)), ground_truth, sample_valid)`` of the staging buffers (plus the latch),
        with the values of invalid samples zeroed on both branches first (docs/models/imperfections.md#validity: an
        invalid read is zeros).

        sample_valid: [E, S] bool (contiguous, on the branch's device), only for sensors built with
        ``sample_validity`` (None = all valid); read by the launch, not kept."""
        g = self._count + 1
        launches = self._staged_launches
        if launches:  # none when no stage would change the staging buffers
            launch = launches[g % len(launches)] if len(launches) > 1 else self._rebound_launch(launches[0], g)
            if self.transforms:  # otherwise x stays the measured staging slot, as recorded
                launch.bind("x", self.transform(self._ring_views[g % self._ring_len]).contiguous())
            if self._flags:
                launch.bind("sample_valid", self._all_sensors if sample_valid is None else sample_valid)
            launch.set_arg(1, g)
            launch()
        self._committed(g)

    def push(
        self, measured: torch.Tensor, ground_truth: torch.Tensor, sample_valid: torch.Tensor | None = None
    ) -> None:
        """Commit one evaluation: filler mask (stage 11), measured ring, ground truth, histories.

        measured, ground_truth: [E, P, K] (ContactProbe: 0./1.); sample_valid: [E, S] bool, only for sensors built
        with ``sample_validity`` (False marks a sample invalid, e.g. JointTorque warm-up; None = all valid).
        """
        g = self._count + 1
        self._commit(self._ring_views[g % self._ring_len], measured)
        self._commit(self._gt_views[g % 2], ground_truth)
        if self._flags:
            flags = self._ring_valid_views[g % self._ring_len]
            if sample_valid is None:
                flags.fill_(True)
            else:
                flags.copy_(sample_valid)
        self._committed(g)

    def _committed(self, g: int) -> None:
        """Bookkeeping of a committed evaluation g (its values and sample validity are in the rings): the
        evaluation counter (each env's evaluations since its reset are g minus the counter at that reset), read
        cache (filled at once when it is a warm read of one delay) and histories."""
        self._count = g
        warm = self._warm_reads
        self._cache = warm[g % self._ring_len] if warm and g - self._warm_from > self._max_lag else None
        if self._hist_len:
            value, valid = self.read_batch()
            pos = g % self._hist_len
            self._hist[:, pos] = value
            self._hist_valid[:, pos] = valid
            gt, gt_valid = self.read_ground_truth_batch()
            self._gt_hist[:, pos] = gt
            self._gt_hist_valid[:, pos] = gt_valid

    def _commit(self, buffer: torch.Tensor, value: torch.Tensor) -> None:
        """Write ``value`` into ``buffer`` with fillers zeroed (nothing to copy when value is the buffer)."""
        if self._has_fillers:
            torch.where(self._active3, value, torch.zeros((), dtype=self.dtype, device=self.device), out=buffer)
        elif value is not buffer:
            buffer.copy_(value)

    # ---- reading ------------------------------------------------------------------------------------------------

    @property
    def evaluations(self) -> int:
        """Evaluations committed since build (the counter of per-evaluation draws)."""
        return self._count

    def _current(self):
        """Cached delayed read of the latest evaluation: ((value [E, P, K], valid [E, S]), ring slot of value or
        None, valid [E] shared by the batch's sensors or None)."""
        if self._cache is None:
            self._cache = self._delayed_read()
        return self._cache

    def _delayed_read(self):
        """The delayed read of evaluation g = :attr:`evaluations` in the form of :meth:`_current`. Warm (no env
        reset within the longest lag) with one delay d for every sensor it is slot (g − d) mod r of the ring with
        its precomputed validity; otherwise the validity is computed per env (and gathered per sensor when the
        lags differ)."""
        g = self._count
        warm = g - self._warm_from > self._max_lag
        if self._uniform_delay is not None:
            if warm:
                return self._warm_reads[g % self._ring_len]
            d = self._uniform_delay
            slot = (g - d) % self._ring_len
            valid_env = self._reset_at < g - d  # n = g − reset_at evaluations since the reset, valid iff n > d
            if self._flags:
                return (self._ring_views[slot], valid_env[:, None] & self._ring_valid_views[slot]), slot, None
            return (self._ring_views[slot], valid_env[:, None].expand(self.n_envs, len(self.specs))), slot, valid_env
        if self._lag_stream is not None:
            index, lag_s, slot_s = self._lag_stream[g]
        else:
            index, lag_s, slot_s = self._static_lags[g % self._ring_len]
        valid = self._all_sensors if warm else (g - self._reset_at)[:, None] > lag_s
        if self._flags:
            flags = torch.gather(self._ring_valid, 0, slot_s)[0]
            valid = flags if warm else valid & flags
        return (torch.gather(self._ring, 0, index)[0], valid), None, None

    def read_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Delayed measured reads of the latest evaluation: value [E, P, K] (zeros where invalid), valid [E, S].
        Both may be views of internal buffers that later evaluations overwrite: consume or copy them at once (and
        never modify them)."""
        return (self._cache or self._current())[0]

    def read_ground_truth_batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Ground truth of the latest evaluation (never delayed): value [E, P, K] (a view of an internal buffer,
        as :meth:`read_batch`), valid [E, S]."""
        g = self._count
        if g > self._warm_from:
            reads = self._warm_gt_reads
            return reads[g % len(reads)]
        valid = (self._reset_at < g)[:, None].expand(self.n_envs, len(self.specs))
        if self._flags:
            valid = valid & self._ring_valid_views[g % self._ring_len]
        return self._gt_views[g % 2], valid

    def read(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Measured read of sensor i: value [E, (H,) *layout, (K if K > 1)], valid [E] or [E, H] (H > 0: the last
        H delayed reads, newest first; slots before the first evaluation after a reset are zeros and invalid).
        The value is the caller's own tensor (never overwritten by later evaluations); valid may be a mask shared
        with other reads (read it, do not modify it)."""
        if self._history_of[i]:
            return self._history(i, self._hist, self._hist_valid)
        (value, valid), slot, valid_env = self._current()
        if slot is not None:
            shaped = self._ring_sensor_views[slot][i].clone()
        else:
            shaped = self._shaped(i, value[:, self.slices[i]])
        # valid [E, S] may be a view of the ring's sample validity, which later evaluations overwrite
        return shaped, (valid_env if valid_env is not None else valid[:, i].clone())

    def read_ground_truth(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Ground truth of sensor i, shaped as :meth:`read` (history of ground truth when H > 0); the caller's own
        tensor."""
        if self._history_of[i]:
            return self._history(i, self._gt_hist, self._gt_hist_valid)
        g = self._count
        valid = self._all_envs if g > self._warm_from else self._reset_at < g
        if self._flags:
            valid = valid & self._ring_valid_views[g % self._ring_len][:, i]
        return self._gt_sensor_views[g % 2][i].clone(), valid

    def _history(self, i: int, values: torch.Tensor, valids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        order = (self._count - self._hist_ages[: self._history_of[i]]) % self._hist_len  # newest first
        value = values[:, :, self.slices[i]].index_select(1, order)
        return self._shaped(i, value), valids[:, :, i].index_select(1, order)

    def _shaped(self, i: int, value: torch.Tensor) -> torch.Tensor:
        """[E, (H,) n, K] → [E, (H,) *layout, (K if K > 1)]."""
        spec = self.specs[i]
        tail = spec.layout_shape + ((self.channels,) if self.channels > 1 else ())
        return value.reshape(value.shape[:-2] + tail)

    def draws(self, i: int) -> ProbeDraws:
        """Copies of sensor i's current per-reset draws (gain, dead mask, dead value), each ``[E, *layout]``."""
        shape = (self.n_envs,) + self.specs[i].layout_shape
        cut = self.slices[i]
        gain = self.gain[:, cut]
        if self._dead is None:
            dead, value = torch.zeros_like(gain, dtype=torch.bool), torch.zeros_like(gain)
        else:
            dead, value = self._dead_mask[:, cut], self._dead_value[:, cut]
        return ProbeDraws(*(x.reshape(shape).clone() for x in (gain, dead, value)))

    # ---- reset --------------------------------------------------------------------------------------------------

    def env_mask(self, envs: torch.Tensor | None) -> torch.Tensor | None:
        """[E] bool mask from None (all), a bool mask or env indices."""
        if envs is None:
            return None
        envs = torch.as_tensor(envs, device=self.device)
        if envs.dtype == torch.bool:
            return envs.reshape(self.n_envs)
        mask = torch.zeros(self.n_envs, dtype=torch.bool, device=self.device)
        mask[envs.reshape(-1).to(torch.int64)] = True
        return mask

    def reset(self, envs: torch.Tensor | None = None) -> None:
        """docs/models/imperfections.md#reset for the chosen envs (None = all; [E] bool mask or indices): rings,
        validity, histories, hysteresis,
        random walk zeroed; gains and dead taxels redrawn (per-reset draws use each env's own reset count).
        The other envs are untouched."""
        mask = self.env_mask(envs)
        self._warm_from = self._count
        state = [self._ring, self._gt_ring]
        if self._hysteresis is not None:
            state += [self._xi, self._x_prev]
        if self._walk_state is not None:
            state.append(self._walk_state)
        if self._hist_len:
            state += [self._hist, self._hist_valid, self._gt_hist, self._gt_hist_valid]
        for t in state:
            if mask is None:
                t.zero_()
            else:
                env_axis = 1 if t is self._ring or t is self._gt_ring else 0
                t.masked_fill_(mask.view((1,) * env_axis + (-1,) + (1,) * (t.dim() - env_axis - 1)), 0)
        self._fill_envs(self._reset_at, mask, self._count, env_axis=0)
        if self._flags:
            self._fill_envs(self._ring_valid, mask, True, env_axis=1)
        if self._latches is not None:
            for latch in self._latches:
                latch.reset(mask)
        self._draw_reset(mask)
        self._reset_count += 1 if mask is None else mask.to(torch.int64)
        self._cache = None

    def restart_counters(self) -> None:
        """The evaluation counter and every env's reset count back to zero, as before the reset that ends the build:
        followed by a reset of every env (:meth:`SensorBatch.rewind <..sensors.base.SensorBatch.rewind>`), the branch
        is in its state right after build and draws what a freshly built one would."""
        self._count = 0
        self._reset_count.zero_()

    @staticmethod
    def _fill_envs(t: torch.Tensor, mask: torch.Tensor | None, value, env_axis: int) -> None:
        if mask is None:
            t.fill_(value)
        else:
            t.masked_fill_(mask.view((1,) * env_axis + (-1,) + (1,) * (t.dim() - env_axis - 1)), value)

    def _reset_uniform(self, lanes: torch.Tensor) -> torch.Tensor:
        """U[0, 1) per (env, lane) for the current reset of each env: [E, …]."""
        hashes = counter_hash(self._reset_count).view((-1,) + (1,) * (lanes.dim() - 1))
        return bits_to_uniform(draw_bits(lanes, hashes), self.dtype)

    def _draw_reset(self, mask: torch.Tensor | None) -> None:
        if self._gain_range is not None:
            has, lo, span, lanes = self._gain_range
            new = torch.where(has, lo + span * self._reset_uniform(lanes), self._static_gain)
            self.gain = new if mask is None else torch.where(mask[:, None], new, self.gain)
        if self._dead is not None:
            prob, lo, span, mask_lanes, value_lanes = self._dead
            dead = self._reset_uniform(mask_lanes) < prob
            value = lo + span * self._reset_uniform(value_lanes)
            if mask is not None:  # the kernel reads these buffers: update them in place
                dead = torch.where(mask[:, None], dead, self._dead_mask)
                value = torch.where(mask[:, None], value, self._dead_value)
            self._dead_mask.copy_(dead)
            self._dead_value.copy_(value)
