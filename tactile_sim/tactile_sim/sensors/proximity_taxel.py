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
median k-d split of each body's samples, at most :data:`SAMPLES_PER_CHUNK` each, with a body-frame bounding sphere),
consecutive chunks of one body are grouped into *clusters* (at most :data:`CHUNKS_PER_CLUSTER`, with a bounding sphere
of their own), and its probes into the blocks of :class:`~.points.probe_grid.ProbeGrid` (the whole sensor on the CPU,
one probe on CUDA), each with the link-frame bounding box of its probes, their largest reach (R + radius noise) and a
uniform grid of them. One thread per (env, block) poses each cluster centre of its sensor into the link frame and skips
the cluster when its sphere cannot come within reach of the block's box, then the same for each chunk of a cluster it
keeps; it poses a kept chunk's samples one by one, skips a sample that lies beyond reach of the box along an axis, and
visits the probes of the grid cells within reach of each, accumulating ΣP, Σ P_j v_j and Σ P_j ω_j of both branches for
the probes within R (R̃) of it (a per-probe scratch buffer, cleared by the first sample that reaches the probe in an
evaluation, which marks it ``touched`` and lists it in ``reached``: the scratch of the probes nothing reaches is neither
written nor read); the velocity sums being linear, v_L(x_i), ω_L and the tangential projection are applied to the sums.
The thread then sets both branches of its block's probes to their rest wrench (:func:`_rest_kernel`: the wrench of zero
sums, computed at build; a native copy loop, :func:`_rest_fill`) and overwrites the branches of the probes it listed.
The culls are conservative (a round-off margin), so they never change a result, nor the order of a probe's sums (chunks,
then samples, in cloud order). Both branches go straight into the measured branch's staging buffers. Output ``(force,
torque)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import warp as wp

from ..config.sensor_options import MEASURED_CHANNELS
from ..geometry.query import ROUND_OFF_ULPS
from ..geometry.struct_launch import StructLaunch, warp_struct
from ..geometry.warp_kernels import unique_kernel
from ..world.state import WorldState
from .kinematic_taxel import ForceTorque
from .points.probe_sensor import ProbeSensorBatch, per_probe
from .points.probe_grid import ProbeGrid
from .points.probe_set import WP_TYPES, ProbeSensorGeometry
from .points.tracked_cloud import PointCloud, sample_tracked_cloud, tracked_shape_mask
from .warp_launch import SlotLaunches, bind_state

SAMPLES_PER_CHUNK = 16
"""Largest number of samples in one chunk (the unit of the sample-side broad phase)."""

CHUNKS_PER_CLUSTER = 8
"""Largest number of consecutive chunks (of one body) in one cluster, the broad phase's first level."""


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


def chunk_clusters(runs: list, size: int = CHUNKS_PER_CLUSTER) -> list[tuple[int, int]]:
    """Clusters of consecutive chunks of one body, at most ``size`` each: (first, stop) index ranges into ``runs``
    (:func:`cloud_chunks`' chunks, whose k-d order keeps consecutive chunks close together)."""
    bounds: list[list[int]] = []
    for k, (_, _, owner) in enumerate(runs):
        if not bounds or owner != runs[bounds[-1][0]][2] or k - bounds[-1][0] == size:
            bounds.append([k, k])
        bounds[-1][1] = k + 1
    return [(a, b) for a, b in bounds]


@wp.func
def _unit_gain_force(s: Any, v: Any, own: Any, a: Any, normal_coef: Any, shear_coef: Any):
    """F / g (link frame, N per unit gain) from the sums ΣP = s, Σ P_j v_j = v and the probe's own velocity."""
    slip = v - s * own
    return (-normal_coef * s - shear_coef * wp.dot(slip, a)) * a + shear_coef * slip


@wp.func
def _twist(s: Any, w: Any, spin: Any, a: Any):
    """ω̄ (rad/s) from the sums ΣP = s, Σ P_j ω_j = w and the link's spin (0 when s = 0)."""
    zero = s - s
    twist = zero
    if s > zero:
        twist = (wp.dot(w, a) - s * wp.dot(spin, a)) / s
    return twist


@wp.func
def _assembled(like: Any, force: Any, twist: Any, a: Any, lever: Any, k_tw: Any):
    """[F, T] (``like``'s 6-vector type) of a force F and a twist ω̄: T = p × F + k_tw ω̄ a."""
    torque = wp.cross(lever, force) + (k_tw * twist) * a
    return type(like)(force[0], force[1], force[2], torque[0], torque[1], torque[2])


@wp.func
def _wrench(like: Any, s: Any, v: Any, w: Any, gain: Any, own: Any, spin: Any, a: Any, lever: Any,
            normal_coef: Any, shear_coef: Any, k_tw: Any):
    """[F, T] (``like``'s 6-vector type) from the sums ΣP = s, Σ P_j v_j = v, Σ P_j ω_j = w (link frame)."""
    force = gain * _unit_gain_force(s, v, own, a, normal_coef, shear_coef)
    return _assembled(like, force, _twist(s, w, spin, a), a, lever, k_tw)


@wp.func
def _box_beyond(lo: Any, hi: Any, center: Any, radius: Any, cut: Any, margin: Any, scale: Any):
    """True when no point of the sphere (center, radius) can come within ``cut`` of any point of the box [lo, hi]
    (with a round-off margin: ``margin`` times the magnitudes involved, ``scale`` ≥ ‖center‖ + radius + the largest
    ‖corner‖); always True for ``cut`` = −inf (fillers only)."""
    if not cut > -type(cut)(wp.inf):
        return True
    d = wp.length(wp.max(wp.max(lo - center, center - hi), center - center))
    return d - radius > cut + margin * (d + radius + cut + scale)


def _rest_fill(call_type, dtype: torch.dtype):
    """Native ``rest_fill(call, e, first, stop)``: both branches of env e at the rest wrench (``call.rest``) for the
    probes [first, stop): a plain copy loop over raw pointers, cheaper on the CPU than warp's code for the same copy
    (the kernel with nothing in reach, 4096 probes × 16 envs: about 0.6 → 0.4 ms)."""
    scalar = "float" if dtype == torch.float32 else "double"
    snippet = f"""
    using wrench = wp::vec_t<6, {scalar}>;
    auto row = [e](auto& a) {{
        return reinterpret_cast<wrench*>(reinterpret_cast<char*>(a.data) + static_cast<size_t>(e) * a.strides[0]);
    }};
    wrench* truth = row(call.ground_truth);
    wrench* measured = row(call.measured);
    const wrench* rest = call.rest.data;
    for (int i = first; i < stop; ++i) {{
        truth[i] = rest[i];
        measured[i] = rest[i];
    }}
"""

    def fill(call, e, first, stop): ...

    fill.__name__ = f"proximity_taxel_rest_fill_{WP_TYPES[dtype][0].__name__}"
    fill.__annotations__ = {"call": call_type, "e": int, "first": int, "stop": int}
    return wp.func_native(snippet)(fill)


@wp.func
def _slab_beyond(q: Any, lo: Any, hi: Any, reach: Any):
    """True when point q lies farther than ``reach`` outside the box [lo, hi] along some axis (z first: the
    thin axis of a skin patch), i.e. when one of :func:`_cell_span`'s three spans is empty for a finite q."""
    return (q[2] - reach > hi[2] or q[2] + reach < lo[2] or q[0] - reach > hi[0] or q[0] + reach < lo[0]
            or q[1] - reach > hi[1] or q[1] + reach < lo[1])


@wp.func
def _sphere_reach(to_link: Any, shift: Any, shift_norm: Any, local_center: Any, radius: Any, lo: Any, hi: Any,
                  cut: Any, scale: Any, round_off: Any):
    """(beyond, margin) of a body-frame sphere (local_center, radius) posed into the link frame by q̃ = T u + t
    (``to_link``, ``shift``, ‖t‖ = ``shift_norm``): beyond is True when no point of it can come within ``cut`` of
    the block's box [lo, hi] (:func:`_box_beyond`); margin: the round-off margin of its posed points."""
    center = to_link @ local_center + shift
    margin = round_off * (shift_norm + wp.length(local_center) + radius + type(radius)(1.0))
    return _box_beyond(lo, hi, center, radius, cut, margin, wp.length(center) + radius + scale), margin


@wp.func
def _cell_span(x: Any, lo: Any, hi: Any, reach: Any, inv_cell: Any, cells: int):
    """Cells [first, last] of one axis of a grid (``cells`` cells of edge 1 / ``inv_cell`` from ``lo``; its probes
    within [lo, hi]) that may hold probes within ``reach`` of coordinate x (``reach`` padded for the round-off of
    the bins); last < first when none (or x is not finite)."""
    if not (x - reach <= hi and x + reach >= lo):
        return int(0), int(-1)
    top = type(inv_cell)(float(cells - 1))
    low = wp.min(wp.max((x - lo - reach) * inv_cell, inv_cell - inv_cell), top)
    high = wp.max(wp.min((x - lo + reach) * inv_cell, top), inv_cell - inv_cell)
    return int(low), int(high)


def _taxel_kernel(dtype: torch.dtype):
    """(kernel, call struct type) of the fused ProximityTaxel kernel over (E, blocks)."""
    f, v, m = WP_TYPES[dtype]
    i32, fs, vs = wp.array(dtype=wp.int32), wp.array(dtype=f), wp.array(dtype=v)
    wrench = wp.array2d(dtype=wp.types.vector(6, f))
    name = f"ProximityTaxelCall_{f.__name__}"
    call_type = warp_struct(name, {
        "block_group": i32, "block_link": i32, "block_first": i32, "block_stop": i32, "block_lo": vs,
        "block_hi": vs, "block_cut": fs, "block_scale": fs, "grid_cell": fs, "grid_dims": wp.array(dtype=wp.vec3i),
        "grid_first_cell": i32, "cell_start": i32, "cell_probe": i32, "cell_pos": vs, "local_pos": vs,
        "local_normal": vs, "radius": fs, "normal_coef": fs, "shear_coef": fs, "k_tw": fs, "group_first_cluster": i32,
        "group_stop_cluster": i32, "cluster_first_chunk": i32, "cluster_stop_chunk": i32, "cluster_body": i32,
        "cluster_center": vs, "cluster_radius": fs, "chunk_start": i32, "chunk_stop": i32, "chunk_center": vs,
        "chunk_radius": fs, "sample_pos": vs, "radius_measured": wp.array2d(dtype=f),
        "gain": wp.array2d(dtype=f), "body_rot": wp.array2d(dtype=m), "body_pos": wp.array2d(dtype=v),
        "lin_vel": wp.array2d(dtype=v), "ang_vel": wp.array2d(dtype=v), "sums": wp.array2d(dtype=f),
        "moments": wp.array3d(dtype=v), "touched": wp.array2d(dtype=wp.int64), "reached": wp.array2d(dtype=wp.int32),
        "rest": wp.array(dtype=wp.types.vector(6, f)), "ground_truth": wrench, "measured": wrench}, __name__)

    rest_fill = _rest_fill(call_type, dtype)

    def kernel(call: Any, round_off: Any, evaluation: Any):
        e, k = wp.tid()
        g = call.block_group[k]
        link = call.block_link[k]
        rt = wp.transpose(call.body_rot[e, link])
        ol = call.body_pos[e, link]
        first_probe = call.block_first[k]
        lo = call.block_lo[k]
        hi = call.block_hi[k]
        cut = call.block_cut[k]
        scale = call.block_scale[k]
        cell = call.grid_cell[k]
        dims = call.grid_dims[k]
        first_cell = call.grid_first_cell[k]
        zero = round_off - round_off
        one = zero + type(zero)(1.0)
        origin = type(ol)(zero, zero, zero)
        inv_cell = one / cell
        cut_sq = cut * cut * (one + round_off)   # ≥ the square of every probe's reach, with a round-off margin
        n_reached = int(0)   # probes reached this evaluation: reached[e, first_probe:first_probe + n_reached]
        # cluster and chunk poses: q̃ = T u + t per body (clusters of one body are consecutive)
        body = int(-1)
        to_link = rt
        shift = origin
        lin = origin
        spin = origin
        shift_norm = zero
        for cl in range(call.group_first_cluster[g], call.group_stop_cluster[g]):
            b = call.cluster_body[cl]
            if b != body:
                body = b
                to_link = rt @ call.body_rot[e, b]
                shift = rt @ (call.body_pos[e, b] - ol)
                shift_norm = wp.length(shift)
                lin = rt @ call.lin_vel[e, b]
                spin = rt @ call.ang_vel[e, b]
            cluster_far, cluster_margin = _sphere_reach(to_link, shift, shift_norm, call.cluster_center[cl],
                                                        call.cluster_radius[cl], lo, hi, cut, scale, round_off)
            if cluster_far:
                continue
            for ch in range(call.cluster_first_chunk[cl], call.cluster_stop_chunk[cl]):
                far, margin = _sphere_reach(to_link, shift, shift_norm, call.chunk_center[ch], call.chunk_radius[ch],
                                            lo, hi, cut, scale, round_off)
                if far:
                    continue
                # the reach of a sample's cell search, padded for the round-off of q (‖u‖ ≤ ‖centre‖ + chunk
                # radius) and of the bins
                reach = cut + margin + round_off * (cut + scale)
                for j in range(call.chunk_start[ch], call.chunk_stop[ch]):
                    u = to_link @ call.sample_pos[j]
                    q = u + shift
                    if _slab_beyond(q, lo, hi, reach):
                        continue   # no cell within reach: the spans below would all be empty
                    x0, x1 = _cell_span(q[0], lo[0], hi[0], reach, inv_cell, dims[0])
                    y0, y1 = _cell_span(q[1], lo[1], hi[1], reach, inv_cell, dims[1])
                    z0, z1 = _cell_span(q[2], lo[2], hi[2], reach, inv_cell, dims[2])
                    for z in range(z0, z1 + 1):
                        for y in range(y0, y1 + 1):
                            row = first_cell + (z * dims[1] + y) * dims[0]
                            for slot in range(call.cell_start[row + x0], call.cell_start[row + x1 + 1]):
                                gap = q - call.cell_pos[slot]
                                if wp.length_sq(gap) > cut_sq:
                                    continue   # beyond every reach of the block: no square root, no probe tables
                                i = call.cell_probe[slot]
                                r0 = call.radius[i]
                                r1 = call.radius_measured[e, i]
                                d = wp.length(gap)
                                if d < r0 or d < r1:
                                    if call.touched[e, i] != evaluation:  # first sample of this evaluation: clear
                                        call.touched[e, i] = evaluation
                                        call.reached[e, first_probe + n_reached] = i
                                        n_reached += 1
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
                                    if d < r1 and r1 != r0:   # r1 = r0: the measured branch's sums are these
                                        pen = r1 - d
                                        call.sums[e, 2 * i + 1] += pen
                                        call.moments[e, i, 2] += pen * vel
                                        call.moments[e, i, 3] += pen * spin
        # forces and torques of both branches: the rest wrench, then the probes that samples reached
        link_lin = rt @ call.lin_vel[e, link]
        link_spin = rt @ call.ang_vel[e, link]
        rest_fill(call, e, first_probe, call.block_stop[k])
        for n in range(n_reached):
            i = call.reached[e, first_probe + n]
            p = call.local_pos[i]
            own = link_lin + wp.cross(link_spin, p)                 # R_Lᵀ v_L(x_i)
            a = call.local_normal[i]
            s0 = call.sums[e, 2 * i]
            if call.radius[i] == call.radius_measured[e, i]:  # one set of sums: F of unit gain and ω̄ shared
                if s0 > zero:
                    force = _unit_gain_force(s0, call.moments[e, i, 0], own, a, call.normal_coef[i],
                                             call.shear_coef[i])
                    twist = _twist(s0, call.moments[e, i, 1], link_spin, a)
                    call.ground_truth[e, i] = _assembled(call.rest[i], force, twist, a, p, call.k_tw[i])
                    call.measured[e, i] = _assembled(call.rest[i], call.gain[e, i] * force, twist, a, p,
                                                     call.k_tw[i])
                continue
            if s0 > zero:
                call.ground_truth[e, i] = _wrench(call.rest[i], s0, call.moments[e, i, 0], call.moments[e, i, 1], one,
                                                  own, link_spin, a, p, call.normal_coef[i], call.shear_coef[i],
                                                  call.k_tw[i])
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


class ProximityTaxelBatch(ProbeSensorBatch):
    """Near-touch force/torque taxels: one fused kernel per evaluation writes both branches ([F, T], 6 channels) into
    the measured branch's staging buffers."""

    sensor_type = "ProximityTaxel"
    channels = MEASURED_CHANNELS[sensor_type]
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
                  "reached": torch.zeros(e, probes.n, dtype=torch.int32, device=dev),
                  "rest": torch.zeros(probes.n, 6, **kw), "local_pos": probes.local_pos.contiguous()}
        links = probes.link_of_probe.cpu().numpy()
        grid = ProbeGrid(probes.local_pos.cpu().numpy(), probes.slices, [links[a] for a, _ in probes.slices],
                         self.cutoff.cpu().numpy(), dev, dt, whole_groups=torch.device(dev).type == "cpu")
        fields.update(grid.fields())
        round_off = ROUND_OFF_ULPS * float(torch.finfo(dt).eps)       # relative margin of the culls
        self.evaluation = 0   # the kernel's count of evaluations (marks the sums it cleared this evaluation)
        self.launches = SlotLaunches(kernel, (e, grid.n_blocks), call_type, fields, [round_off, 0], dev,
                                     outputs=("measured", "ground_truth"))
        rest_kernel, rest_type = _REST_KERNELS[dt]
        StructLaunch(rest_kernel, (probes.n,), rest_type, {key: fields[key] for key in rest_type.vars}, [0.0], dev)()

    def _chunk_tables(self) -> dict[str, torch.Tensor]:
        """Broad-phase tables of the batch's clouds, sensor after sensor: the body-frame samples reordered chunk by
        chunk (:func:`cloud_chunks`), each chunk's sample range and padded body-frame bounding sphere, each cluster's
        chunk range, body and padded bounding sphere (:func:`chunk_clusters`), each sensor's cluster range."""
        pad = 16 * float(torch.finfo(self.ctx.dtype).eps)

        def sphere(pts: np.ndarray) -> tuple[np.ndarray, float]:
            c = (pts.min(0) + pts.max(0)) / 2
            r = float(np.linalg.norm(pts - c, axis=1).max())
            return c, r + pad * (r + float(np.abs(c).max()) + 1.0)

        samples, chunks, clusters, first, last = [], [], [], [], []
        for cloud in self.clouds:
            order, runs = cloud_chunks(cloud.points, cloud.body)
            pts, offset, base = cloud.points[order], sum(map(len, samples)), len(chunks)
            samples.append(pts)
            chunks += [(offset + a, offset + b, *sphere(pts[a:b])) for a, b, _ in runs]
            first.append(len(clusters))
            clusters += [(base + k0, base + k1, runs[k0][2], *sphere(pts[runs[k0][0]:runs[k1 - 1][1]]))
                         for k0, k1 in chunk_clusters(runs)]
            last.append(len(clusters))
        dev, dt = self.ctx.device, self.ctx.dtype

        def ints(rows, k):
            return torch.as_tensor(np.asarray([row[k] for row in rows], np.int32).reshape(-1), device=dev)

        def floats(rows, k, *shape):
            values = np.asarray([row[k] for row in rows], np.float64).reshape(-1, *shape)
            return torch.as_tensor(values, device=dev, dtype=dt)

        return {"sample_pos": torch.as_tensor(np.concatenate(samples).reshape(-1, 3), device=dev, dtype=dt),
                "chunk_start": ints(chunks, 0), "chunk_stop": ints(chunks, 1), "chunk_center": floats(chunks, 2, 3),
                "chunk_radius": floats(chunks, 3), "cluster_first_chunk": ints(clusters, 0),
                "cluster_stop_chunk": ints(clusters, 1), "cluster_body": ints(clusters, 2),
                "cluster_center": floats(clusters, 3, 3), "cluster_radius": floats(clusters, 4),
                "group_first_cluster": torch.as_tensor(np.asarray(first, np.int32), device=dev),
                "group_stop_cluster": torch.as_tensor(np.asarray(last, np.int32), device=dev)}

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
