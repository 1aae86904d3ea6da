"""ProximityTaxel (docs/models/proximity_taxel.md#model): per-taxel force and torque from tracked surface samples
inside each sensing sphere.

Probe i (link-frame position p_i, unit normal a_i, radius R — R̃ on the measured branch — gain g), samples j of the
sensor's cloud (N_pts samples, ρ = density_scalar / N_pts), world positions q_j on bodies B(j):

    J_i = { j : ‖q_j − x_i‖ < R },  P_j = R − ‖q_j − x_i‖,  ΣP = Σ_{J_i} P_j
    v_j = v_B(j)(q_j) − v_L(x_i),  v_t,j = v_j − (a·v_j) a,  ω̄ = Σ_{J_i} P_j (ω_B(j) − ω_L)·a / ΣP  (0 if ΣP = 0)
    F = −k ρ g ΣP a + k_s ρ g Σ_{J_i} P_j v_t,j ;   T = p_i × F + k_tw ω̄ a        (link frame, N and N·m)

Everything is evaluated in the sensor's link frame L (distances are frame-independent): a sample of body B is
q̃_j = T u_j + t with T = R_Lᵀ R_B, t = R_Lᵀ(o_B − o_L) (u_j: its body-frame position), its velocity R_Lᵀ v_B +
(R_Lᵀ ω_B) × T u_j and its angular velocity R_Lᵀ ω_B.

One warp kernel per evaluation does the whole step. At build every sensor's cloud is cut into *chunks* (leaves of a
median k-d split of each body's samples, at most :data:`SAMPLES_PER_CHUNK` each, with a body-frame bounding sphere); the
probes are visited in the cells and blocks of :class:`~.points.probe_set.ProbeSet` (link-frame bounding spheres and
bounding boxes of their probes — a box is far tighter than a sphere for a flat layout —, the largest reach R + radius
noise of each). One thread per (env, block) poses each chunk centre of its sensor into the link frame, skips the chunk
when its sphere cannot come within reach of the block's box, then of each cell's box, then of each of the cell's probes,
and only then poses the chunk's samples (once per chunk, into a per-thread scratch; skipping those beyond the reach of
the cell's sphere) and accumulates ΣP, Σ P_j v_j and Σ P_j ω_j of both branches for the probes it may reach (a per-probe
scratch buffer, cleared by the first sample that reaches the probe in an evaluation, which marks it ``touched``: the
scratch of the probes nothing reaches is neither written nor read); the velocity sums being linear, v_L(x_i), ω_L and
the tangential projection are applied to the sums. The thread then sets both branches of its block's probes to their
rest wrench (:func:`_rest_kernel`: the wrench of zero sums, computed at build; a native copy loop, :func:`_rest_fill`)
and overwrites the branches of the probes that samples reached. The culls are conservative (a round-off margin), so
they never change a result, nor the order of a probe's sums (chunks, then samples, in cloud order). Both branches go
straight into the measured branch's staging buffers. Output ``(force, torque)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import warp as wp

from ..geometry.query import ROUND_OFF_ULPS
from ..geometry.struct_launch import StructLaunch, warp_struct
from ..geometry.warp_kernels import unique_kernel
from ..world.state import WorldState
from .kinematic_taxel import ForceTorque
from .points.probe_sensor import ProbeSensorBatch, per_probe
from .points.probe_set import WP_TYPES, ProbeSensorGeometry
from .points.tracked_cloud import PointCloud, sample_tracked_cloud, tracked_shape_mask
from .warp_launch import SlotLaunches, bind_state

SAMPLES_PER_CHUNK = 16
"""Largest number of samples in one chunk (the unit of the sample-side broad phase)."""
MAX_CELL_PROBES = 31
"""Most probes a cell of :class:`~.points.probe_set.ProbeSet` may hold here (one bit each in an int32 mask)."""


def cloud_chunks(points: np.ndarray, body: np.ndarray, size: int = SAMPLES_PER_CHUNK) -> tuple[np.ndarray, list]:
    """Cut one cloud into compact chunks of at most ``size`` samples of one body.

    points: (N, 3) body-frame positions, m; body: (N,) owning body. Returns ``order`` (N,), the samples chunk by chunk
    (bodies in order of first appearance), and ``runs``: one (start, stop, body) per chunk, indices into ``order``.
    The split is a median k-d split along the widest axis, so every chunk is a spatially compact cluster.
    """
    order, runs = [], []

    def split(idx: np.ndarray, b: int) -> None:
        if len(idx) <= size:
            runs.append((len(order), len(order) + len(idx), b))
            order.extend(idx.tolist())
            return
        pts = points[idx]
        axis = int(np.argmax(np.ptp(pts, axis=0)))
        idx = idx[np.argsort(pts[:, axis], kind="stable")]
        half = len(idx) // 2
        split(idx[:half], b)
        split(idx[half:], b)

    for b in dict.fromkeys(body.tolist()):
        split(np.flatnonzero(body == b), int(b))
    return np.asarray(order, np.int64), runs


@wp.func
def _wrench(like: Any, s: Any, v: Any, w: Any, gain: Any, own: Any, spin: Any, a: Any, lever: Any,
            normal_coef: Any, shear_coef: Any, k_tw: Any):
    """[F, T] (``like``'s 6-vector type) from the sums ΣP = s, Σ P_j v_j = v, Σ P_j ω_j = w (link frame)."""
    slip = v - s * own
    force = gain * ((-normal_coef * s - shear_coef * wp.dot(slip, a)) * a + shear_coef * slip)
    zero = s - s
    twist = zero
    if s > zero:
        twist = (wp.dot(w, a) - s * wp.dot(spin, a)) / s
    torque = wp.cross(lever, force) + (k_tw * twist) * a
    return type(like)(force[0], force[1], force[2], torque[0], torque[1], torque[2])


@wp.func
def _beyond(center: Any, radius: Any, chunk_center: Any, chunk_radius: Any, cut: Any, margin: Any):
    """True when no point of the chunk sphere can come within ``cut`` of any point of the probe sphere (with a
    round-off margin relative to the magnitudes involved); always True for ``cut`` = −inf (fillers only)."""
    if not cut > -type(cut)(wp.inf):
        return True
    dc = wp.length(chunk_center - center)
    return dc - radius - chunk_radius > cut + margin * (dc + radius + chunk_radius + cut)


@wp.func
def _box_beyond(lo: Any, hi: Any, center: Any, radius: Any, cut: Any, margin: Any, scale: Any):
    """True when no point of the sphere (center, radius) can come within ``cut`` of any point of the box [lo, hi]
    (the round-off margin of :func:`_beyond`, relative to the magnitudes involved: ``scale`` ≥ ‖center‖ + the
    largest ‖corner‖); always True for ``cut`` = −inf (fillers only). A box of a few probes of a flat layout is far
    tighter than their bounding sphere."""
    if not cut > -type(cut)(wp.inf):
        return True
    d = wp.length(wp.max(wp.max(lo - center, center - hi), center - center))
    return d - radius > cut + margin * (d + radius + cut + scale)


def _rest_fill(call_type, dtype: torch.dtype):
    """Native ``rest_fill(call, e, first, stop)``: both branches of env e at the rest wrench (``call.rest``) for the
    probes of slots [first, stop) of ``call.probe_order``: a plain loop over raw pointers, cheaper on the CPU than
    warp's code for the same copy (the kernel with nothing in reach, 4096 probes × 16 envs: about
    0.6 → 0.4 ms)."""
    scalar = "float" if dtype == torch.float32 else "double"
    snippet = f"""
    using wrench = wp::vec_t<6, {scalar}>;
    auto row = [e](auto& a) {{
        return reinterpret_cast<wrench*>(reinterpret_cast<char*>(a.data) + static_cast<size_t>(e) * a.strides[0]);
    }};
    wrench* truth = row(call.ground_truth);
    wrench* measured = row(call.measured);
    const wrench* rest = call.rest.data;
    const int* order = call.probe_order.data;
    for (int slot = first; slot < stop; ++slot) {{
        const int i = order[slot];
        truth[i] = rest[i];
        measured[i] = rest[i];
    }}
"""

    def fill(call, e, first, stop): ...

    fill.__name__ = f"proximity_taxel_rest_fill_{WP_TYPES[dtype][0].__name__}"
    fill.__annotations__ = {"call": call_type, "e": int, "first": int, "stop": int}
    return wp.func_native(snippet)(fill)


def _taxel_kernel(dtype: torch.dtype):
    """(kernel, call struct type) of the fused ProximityTaxel kernel over (E, blocks)."""
    f, v, m = WP_TYPES[dtype]
    i32, fs, vs = wp.array(dtype=wp.int32), wp.array(dtype=f), wp.array(dtype=v)
    wrench = wp.array2d(dtype=wp.types.vector(6, f))
    name = f"ProximityTaxelCall_{f.__name__}"
    call_type = warp_struct(name, {
        "probe_order": i32, "cell_start": i32, "cell_stop": i32, "cell_center": vs, "cell_radius": fs,
        "cell_lo": vs, "cell_hi": vs, "cell_scale": fs, "cell_cut": fs, "block_first_cell": i32,
        "block_cells": i32, "block_link": i32, "block_group": i32, "block_lo": vs, "block_hi": vs, "block_scale": fs,
        "block_cut": fs, "local_pos": vs, "local_normal": vs,
        "radius": fs, "normal_coef": fs, "shear_coef": fs, "k_tw": fs, "group_first_chunk": i32,
        "group_stop_chunk": i32, "chunk_start": i32, "chunk_stop": i32, "chunk_body": i32, "chunk_center": vs,
        "chunk_radius": fs, "sample_pos": vs, "radius_measured": wp.array2d(dtype=f),
        "gain": wp.array2d(dtype=f), "body_rot": wp.array2d(dtype=m), "body_pos": wp.array2d(dtype=v),
        "lin_vel": wp.array2d(dtype=v), "ang_vel": wp.array2d(dtype=v), "sums": wp.array2d(dtype=f),
        "moments": wp.array3d(dtype=v), "touched": wp.array2d(dtype=wp.int64), "posed": wp.array3d(dtype=v),
        "rest": wp.array(dtype=wp.types.vector(6, f)), "ground_truth": wrench, "measured": wrench}, __name__)

    rest_fill = _rest_fill(call_type, dtype)

    def kernel(call: Any, round_off: Any, evaluation: Any):
        e, k = wp.tid()
        g = call.block_group[k]
        link = call.block_link[k]
        rt = wp.transpose(call.body_rot[e, link])
        ol = call.body_pos[e, link]
        first_cell = call.block_first_cell[k]
        stop_cell = first_cell + call.block_cells[k]
        zero = round_off - round_off
        origin = type(ol)(zero, zero, zero)
        # chunk poses: q̃ = T u + t per body (chunks of one body are consecutive)
        body = int(-1)
        to_link = rt
        shift = origin
        lin = origin
        spin = origin
        shift_norm = zero
        for ch in range(call.group_first_chunk[g], call.group_stop_chunk[g]):
            b = call.chunk_body[ch]
            if b != body:
                body = b
                to_link = rt @ call.body_rot[e, b]
                shift = rt @ (call.body_pos[e, b] - ol)
                shift_norm = wp.length(shift)
                lin = rt @ call.lin_vel[e, b]
                spin = rt @ call.ang_vel[e, b]
            local_center = call.chunk_center[ch]
            center = to_link @ local_center + shift
            chunk_r = call.chunk_radius[ch]
            margin = round_off * (shift_norm + wp.length(local_center) + chunk_r + zero + type(zero)(1.0))
            reach_scale = wp.length(center) + chunk_r
            if _box_beyond(call.block_lo[k], call.block_hi[k], center, chunk_r, call.block_cut[k], margin,
                           reach_scale + call.block_scale[k]):
                continue
            posed = int(0)   # 1 once the chunk's samples T u_j are posed (when it first reaches a probe)
            for c in range(first_cell, stop_cell):
                if _box_beyond(call.cell_lo[c], call.cell_hi[c], center, chunk_r, call.cell_cut[c], margin,
                               reach_scale + call.cell_scale[c]):
                    continue
                # the cell's probes this chunk may reach (bit slot − start)
                start = call.cell_start[c]
                stop = call.cell_stop[c]
                reached = int(0)
                for slot in range(start, stop):
                    i = call.probe_order[slot]
                    reach = wp.max(call.radius[i], call.radius_measured[e, i])
                    if not _beyond(call.local_pos[i], zero, center, chunk_r, reach, margin):
                        reached = reached | (1 << (slot - start))
                if reached == 0:
                    continue
                first_sample = call.chunk_start[ch]
                if posed == 0:
                    posed = 1
                    for j in range(first_sample, call.chunk_stop[ch]):
                        call.posed[e, k, j - first_sample] = to_link @ call.sample_pos[j]
                cell_center = call.cell_center[c]
                cell_reach = call.cell_radius[c] + call.cell_cut[c]
                for j in range(first_sample, call.chunk_stop[ch]):
                    u = call.posed[e, k, j - first_sample]
                    q = u + shift
                    gap = wp.length(q - cell_center)
                    if gap > cell_reach + margin * (gap + cell_reach):
                        continue
                    for slot in range(start, stop):
                        if (reached >> (slot - start)) & 1 == 0:
                            continue
                        i = call.probe_order[slot]
                        d = wp.length(q - call.local_pos[i])
                        r0 = call.radius[i]
                        r1 = call.radius_measured[e, i]
                        if d < r0 or d < r1:
                            if call.touched[e, i] != evaluation:  # first sample of this evaluation: clear
                                call.touched[e, i] = evaluation
                                call.sums[e, 2 * i] = zero
                                call.sums[e, 2 * i + 1] = zero
                                for m in range(4):
                                    call.moments[e, i, m] = origin
                            vel = lin + wp.cross(spin, u)
                            if d < r0:
                                pen = r0 - d
                                call.sums[e, 2 * i] += pen
                                call.moments[e, i, 0] += pen * vel
                                call.moments[e, i, 1] += pen * spin
                            if d < r1:
                                pen = r1 - d
                                call.sums[e, 2 * i + 1] += pen
                                call.moments[e, i, 2] += pen * vel
                                call.moments[e, i, 3] += pen * spin
        # forces and torques of both branches
        link_lin = rt @ call.lin_vel[e, link]
        link_spin = rt @ call.ang_vel[e, link]
        one = zero + type(zero)(1.0)
        rest_fill(call, e, call.cell_start[first_cell], call.cell_stop[stop_cell - 1])  # the block's cells: consecutive
        for c in range(first_cell, stop_cell):
            for slot in range(call.cell_start[c], call.cell_stop[c]):
                i = call.probe_order[slot]
                if call.touched[e, i] != evaluation:  # no sample reached the probe: both branches stay at rest
                    continue
                p = call.local_pos[i]
                own = link_lin + wp.cross(link_spin, p)                 # R_Lᵀ v_L(x_i)
                a = call.local_normal[i]
                if call.sums[e, 2 * i] > zero:
                    call.ground_truth[e, i] = _wrench(call.rest[i], call.sums[e, 2 * i], call.moments[e, i, 0],
                                                      call.moments[e, i, 1], one, own, link_spin, a, p,
                                                      call.normal_coef[i], call.shear_coef[i], call.k_tw[i])
                if call.sums[e, 2 * i + 1] > zero:
                    call.measured[e, i] = _wrench(call.rest[i], call.sums[e, 2 * i + 1], call.moments[e, i, 2],
                                                  call.moments[e, i, 3], call.gain[e, i], own, link_spin, a, p,
                                                  call.normal_coef[i], call.shear_coef[i], call.k_tw[i])

    kernel.__name__ = f"proximity_taxel_{f.__name__}"
    kernel.__annotations__ = {"call": call_type, "round_off": f, "evaluation": wp.int64}
    return unique_kernel(kernel), call_type


def _rest_kernel(dtype: torch.dtype):
    """(kernel, call struct type) over the probes of their rest wrench ``rest[i]``: :func:`_wrench` of zero sums.

    A probe that no sample reaches has ΣP = +0 and Σ P v = Σ P ω = +0 (the sums only grow, by P_j > 0, where a
    sample is within reach), and then :func:`_wrench` depends neither on the link motion nor on the gain: s·own is
    ±0, so v − s·own = +0 for any finite own; the force is then g·(+0) = +0 for every gain g > 0 (gains are
    validated positive), and the twist stays zero whatever the spin. Its [F, T] — the same on both branches — is a
    function of the probe's static tables alone, computed at build; the step copies it."""
    f, v, m = WP_TYPES[dtype]
    vs, fs = wp.array(dtype=v), wp.array(dtype=f)
    call_type = warp_struct(f"ProximityTaxelRestCall_{f.__name__}", {
        "local_pos": vs, "local_normal": vs, "normal_coef": fs, "shear_coef": fs, "k_tw": fs,
        "rest": wp.array(dtype=wp.types.vector(6, f))}, __name__)

    def kernel(call: Any, zero: Any):
        i = wp.tid()
        origin = type(call.local_pos[i])(zero, zero, zero)
        call.rest[i] = _wrench(call.rest[i], zero, origin, origin, zero + type(zero)(1.0), origin, origin,
                               call.local_normal[i], call.local_pos[i], call.normal_coef[i], call.shear_coef[i],
                               call.k_tw[i])

    kernel.__name__ = f"proximity_taxel_rest_{f.__name__}"
    kernel.__annotations__ = {"call": call_type, "zero": f}
    return unique_kernel(kernel), call_type


_KERNELS = {dt: _taxel_kernel(dt) for dt in WP_TYPES}
_REST_KERNELS = {dt: _rest_kernel(dt) for dt in WP_TYPES}


def _cell_boxes(fields: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Link-frame bounding boxes of the probes of every cell (``cell_lo``, ``cell_hi`` [cells, 3]) and block
    (``block_lo``, ``block_hi`` [blocks, 3]), m, and the largest corner norm of each (``cell_scale``, ``block_scale``,
    rounded up), from the probe and cell tables of :meth:`ProbeSet.kernel_fields`."""
    pos = fields["local_pos"].cpu().numpy()
    order, start, stop = (fields[k].cpu().numpy() for k in ("probe_order", "cell_start", "cell_stop"))
    cells = [pos[order[a:b]] for a, b in zip(start, stop)]
    lo, hi = np.array([c.min(0) for c in cells]), np.array([c.max(0) for c in cells])
    first, count = fields["block_first_cell"].cpu().numpy(), fields["block_cells"].cpu().numpy()
    block_lo = np.array([lo[a:a + n].min(0) for a, n in zip(first, count)])
    block_hi = np.array([hi[a:a + n].max(0) for a, n in zip(first, count)])
    like = fields["local_pos"]

    def scale(a, b):
        return np.maximum(np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)) * (1 + 1e-6)

    return {name: torch.as_tensor(x, dtype=like.dtype, device=like.device).contiguous()
            for name, x in (("cell_lo", lo), ("cell_hi", hi), ("block_lo", block_lo), ("block_hi", block_hi),
                            ("cell_scale", scale(lo, hi)), ("block_scale", scale(block_lo, block_hi)))}


class ProximityTaxelBatch(ProbeSensorBatch):
    """Near-touch force/torque taxels: one fused kernel per evaluation writes both branches ([F, T], 6 channels) into
    the measured branch's staging buffers."""

    sensor_type = "ProximityTaxel"
    channels = 6
    kernel_tables = (_KERNELS, _REST_KERNELS)

    def probe_geometry(self, options, layout) -> ProbeSensorGeometry:
        link = self.ctx.scene.body_index(options.link)
        return ProbeSensorGeometry(link, layout, tracked_shape_mask(self.ctx.scene, options.track))

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        opts, probes, scene = self.options, self.probes, ctx.scene
        e, dev, dt = ctx.n_envs, ctx.device, ctx.dtype
        self.clouds = [sample_tracked_cloud(scene, o, ctx.where.get(o.name, o.where), require_collision=False)
                       for o in opts]
        density = [o.density_scalar / len(c) for o, c in zip(opts, self.clouds)]
        stiffness = np.array([o.stiffness for o in opts]) * density
        coupling = np.array([o.shear_coupling for o in opts]) * density
        # R̃ [E, P]: redrawn per evaluation only when a sensor has radius noise
        self.radius_measured = self.branch.radius(probes.radius).contiguous()
        kernel, call_type = _KERNELS[dt]
        kw = dict(device=dev, dtype=dt)
        fields = {**self._chunk_tables(), "normal_coef": ctx.tensor(np.repeat(stiffness, self.counts)),
                  "shear_coef": ctx.tensor(np.repeat(coupling, self.counts)),
                  "k_tw": per_probe(opts, self.counts, "twist_scalar", ctx).contiguous(),
                  "local_normal": probes.local_normal.contiguous(), "radius": probes.radius,
                  "radius_measured": self.radius_measured, "gain": self.branch.gain,
                  "body_rot": torch.zeros(e, scene.n_bodies, 3, 3, **kw),
                  "body_pos": torch.zeros(e, scene.n_bodies, 3, **kw),
                  "lin_vel": torch.zeros(e, scene.n_bodies, 3, **kw),
                  "ang_vel": torch.zeros(e, scene.n_bodies, 3, **kw),
                  "sums": torch.zeros(e, 2 * probes.n, **kw), "moments": torch.zeros(e, probes.n, 4, 3, **kw),
                  "touched": torch.zeros(e, probes.n, dtype=torch.int64, device=dev),
                  "posed": torch.zeros(e, probes.n_blocks, SAMPLES_PER_CHUNK, 3, **kw),
                  "rest": torch.zeros(probes.n, 6, **kw)}
        probe_tables = probes.kernel_fields(self.cutoff)
        for key in ("local_pos", "probe_order", "cell_start", "cell_stop", "cell_center", "cell_radius", "cell_cut",
                    "block_first_cell", "block_cells", "block_link", "block_group", "block_cut"):
            fields[key] = probe_tables[key].contiguous()
        fields.update(_cell_boxes(fields))
        widest = int((fields["cell_stop"] - fields["cell_start"]).max())
        if widest > MAX_CELL_PROBES:
            raise ValueError(f"ProximityTaxel: a probe cell holds {widest} probes; allowed: at most {MAX_CELL_PROBES} "
                             "(the kernel marks a cell's reachable probes in the bits of one int32)")
        round_off = ROUND_OFF_ULPS * float(torch.finfo(dt).eps)       # relative margin of the culls
        self.evaluation = 0   # the kernel's count of evaluations (marks the sums it cleared this evaluation)
        self.launches = SlotLaunches(kernel, (e, probes.n_blocks), call_type, fields, [round_off, 0], dev,
                                     outputs=("measured", "ground_truth"))
        rest_kernel, rest_type = _REST_KERNELS[dt]
        StructLaunch(rest_kernel, (probes.n,), rest_type, {key: fields[key] for key in rest_type.vars}, [0.0], dev)()

    def _chunk_tables(self) -> dict[str, torch.Tensor]:
        """Chunk tables of the batch's clouds (:func:`cloud_chunks`), sensor after sensor: the reordered body-frame
        samples, each chunk's sample range, body and padded body-frame bounding sphere, each sensor's chunk range."""
        pad = 16 * float(torch.finfo(self.ctx.dtype).eps)
        samples, start, stop, body, center, radius, first, last = [], [], [], [], [], [], [], []
        offset = 0
        for cloud in self.clouds:
            order, runs = cloud_chunks(cloud.points, cloud.body)
            pts = cloud.points[order]
            samples.append(pts)
            first.append(len(start))
            for a, b, owner in runs:
                c = (pts[a:b].min(0) + pts[a:b].max(0)) / 2
                r = float(np.linalg.norm(pts[a:b] - c, axis=1).max())
                start.append(offset + a), stop.append(offset + b), body.append(owner), center.append(c)
                radius.append(r + pad * (r + float(np.abs(c).max()) + 1.0))
            last.append(len(start))
            offset += len(pts)
        dev, dt = self.ctx.device, self.ctx.dtype

        def ints(x):
            return torch.as_tensor(np.asarray(x, np.int32).reshape(-1), device=dev)

        def floats(x, *shape):
            return torch.as_tensor(np.asarray(x, np.float64).reshape(-1, *shape), device=dev, dtype=dt)

        return {"sample_pos": floats(np.concatenate(samples) if samples else np.zeros((0, 3)), 3),
                "chunk_start": ints(start), "chunk_stop": ints(stop), "chunk_body": ints(body),
                "chunk_center": floats(center, 3), "chunk_radius": floats(radius), "group_first_chunk": ints(first),
                "group_stop_chunk": ints(last)}

    def point_cloud(self, i: int) -> PointCloud:
        """The tracked cloud of sensor i (body frames, read-only)."""
        return self.clouds[i]

    def evaluate(self, state: WorldState) -> None:
        self.draw_radius()
        self.bind_new_gain(self.launches)
        branch = self.branch
        launch = self.launches.select(branch.staging())
        self.evaluation += 1
        launch.set_arg(2, self.evaluation)
        bind_state(launch, state, twists=True)
        launch()
        branch.push_staged()

    def output(self, value: torch.Tensor) -> ForceTorque:
        return ForceTorque(value[..., :3], value[..., 3:])
