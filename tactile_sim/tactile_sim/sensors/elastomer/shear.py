"""ElastomerTaxel shear (docs/models/elastomer_taxel.md#shear): tracked surface samples that stick to the gel and drag
its markers.

Per env and tracked sample j (link-frame position q̃_j, area share a_j), with sd_j the signed distance of the
sample's world position to the sensor link's own shapes and D_j = max(0, −sd_j), each step:

    if anchored and sd_j > −release_threshold:          release
    elif not anchored and sd_j < −contact_threshold:    anchor, A_j = q̃_j
    s_i = shear_scale · P_i Σ_{anchored j, D_j > 0} (a_j / A_cell) (q̃_j − A_j) D_j exp(−λ_s ‖P_i(p_i − q̃_j)‖²)

P_i = I − a_i a_iᵀ is linear, so it is applied to the sum. One warp kernel per step poses the samples (world and
link frame), finds sd_j (nearest own shape of the sensor link, culled beyond a cutoff just above the release level:
farther samples release or stay free whatever their distance), updates the anchors and gives each sample's drag; the
contributing samples (anchored, D_j > 0, non-zero drag) of every (env, sensor) are compacted in sample order — on the
CPU by the same kernel (one thread per env), on CUDA by a second one. Sensors evaluated by :mod:`.pairwise` read the
compacted samples there; for the others

* lattice sensors — regular planar grids whose axes t_u, t_v and shared normal a are mutually orthogonal, evaluated
  on the ideal lattice like the FFT path — use the separable Gaussian exp(−λ_s(cΔu − u_j)²)·exp(−λ_s(rΔv − v_j)²):
  one batched matrix product [M, K] × [K, N·3] per env (row factors × column factors times the in-plane drags);
* every other layout sums densely over the compacted samples; the Gaussian's exponent is one matrix product of
  per-sample features with per-probe coefficients.

Anchors persist across steps and are cleared on reset. Sensors with shear_scale = 0 never anchor.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
import warp as wp

from ...constants import EPS_LEN
from ...geometry.query import ShapeQuery, nearest_shape, tables_type
from ...geometry.shapes import Shape, ShapeKind
from ...geometry.struct_launch import StructLaunch, warp_struct
from ...geometry.warp_kernels import native_grid_kernel, unique_kernel
from .dilation import orthogonal_grid
from ..layout.probe_layout import ProbeLayout
from ...world.state import WorldState
from ..points.probe_set import WP_TYPES
from ..points.tracked_cloud import PointCloud
from ..warp_launch import bind_state

CULL_SLACK = 64
"""ulps (of the working dtype) of the summed coordinate magnitudes by which the posing loop widens the reach box for
its cull: far above the rounding of two 3×3 products and sums, so no sample inside the exact box is culled."""


def _pose_loop(dtype: torch.dtype) -> str:
    """C++ body of the native posing of the samples [start, stop) of env e (see :func:`_sample_kernel`). A sample
    whose link-frame position q̃ lies inside its link's reach box is posed by warp's own vector functions (so the same
    values as warp code): world x into ``world``, q̃ into ``local``, listed in ``near`` from slot ``start`` on (how
    many into ``listed[e, t]``). The others are released on the spot (sd = +inf: anchored ← false, not selected;
    their drag, world and link-frame positions are read by nobody and left as they are). Whether a sample is inside is
    decided on q̃ by the composed pose R_Lᵀ R_B, R_Lᵀ(o_B − o_L) (one product per sample instead of two) against the
    box widened by a bound of that pose's rounding (``CULL_SLACK`` ulps of the sum of the magnitudes involved): a
    sample listed although outside the box is released by the warp code alike (beyond the cutoff)."""
    real = "float" if dtype == torch.float32 else "double"
    slack = repr(CULL_SLACK * float(torch.finfo(dtype).eps))
    return f"""
    typedef wp::vec_t<3, {real}> vec3;
    typedef wp::mat_t<3, 3, {real}> mat33;
    const int n = call.points.shape[0];
    const size_t bodies = static_cast<size_t>(e) * call.body_pos.shape[1];
    const size_t row = static_cast<size_t>(e) * n;
    const vec3* points = call.points.data;
    const int* owner = call.owner.data;
    const int* sensor = call.sensor.data;
    const mat33* body_rot = call.body_rot.data + bodies;
    const vec3* body_pos = call.body_pos.data + bodies;
    vec3* __restrict__ local = call.local.data + row;
    vec3* __restrict__ world = call.world.data + row;
    bool* anchored = call.anchored.data + row;
    bool* selected = call.selected.data + row;
    int* near = call.near.data + row;
    const {real} slack = static_cast<{real}>({slack});
    int listed = 0;
    // runs of samples of one body and sensor: poses and box read once
    for (int j = start; j < stop;) {{
        const int b = owner[j];
        const int g = sensor[j];
        int end = j + 1;
        while (end < stop && owner[end] == b && sensor[end] == g) ++end;
        const int link = call.link_of_sensor.data[g];
        const mat33 rb = body_rot[b];
        const vec3 ob = body_pos[b];
        const mat33 rl_t = wp::transpose(body_rot[link]);
        const vec3 ol = body_pos[link];
        const mat33 r = wp::mul(rl_t, rb);
        const vec3 o = wp::mul(rl_t, wp::sub(ob, ol));
        const vec3 lo = call.box_lo.data[g];
        const vec3 hi = call.box_hi.data[g];
        const {real} reach = wp::abs(ob[0]) + wp::abs(ob[1]) + wp::abs(ob[2]) + wp::abs(ol[0]) + wp::abs(ol[1])
            + wp::abs(ol[2]);
        // the cull, branch-free: inside flags into near[i] (listed below, in place: slot start + listed <= i)
        for (int i = j; i < end; ++i) {{
            const {real} px = points[i][0], py = points[i][1], pz = points[i][2];
            const {real} tol = slack * (reach + wp::abs(px) + wp::abs(py) + wp::abs(pz));
            int inside = 1;
            for (int k = 0; k < 3; ++k) {{
                const {real} q = r.data[k][0] * px + r.data[k][1] * py + r.data[k][2] * pz + o[k];
                inside &= (q >= lo[k] - tol) & (q <= hi[k] + tol);
            }}
            near[i] = inside;
            anchored[i] = anchored[i] & (inside != 0);
            selected[i] = false;
        }}
        for (int i = j; i < end; ++i) {{
            if (near[i] == 0) continue;
            const vec3 x = wp::add(wp::mul(rb, points[i]), ob);
            world[i] = x;
            local[i] = wp::mul(rl_t, wp::sub(x, ol));
            near[start + listed] = i;
            ++listed;
        }}
        j = end;
    }}
    call.listed.data[static_cast<size_t>(e) * call.listed.shape[1] + t] = listed;
"""


@wp.func
def _clear_slots(q_out: Any, c_out: Any, e: int, s: int, first: int, stop: int):
    """Zero the compacted slots [first, stop) of sensor s in env e (those the previous step filled beyond this
    step's count: slots past the count stay zero, a zero drag adds nothing)."""
    for j in range(first, stop):
        q_out[e, s, j] = q_out[e, s, j] - q_out[e, s, j]
        c_out[e, s, j] = c_out[e, s, j] - c_out[e, s, j]


def _sample_kernel(dtype: torch.dtype):
    """(kernel, call struct type) of one step of the samples ``per_thread``·t … of env e (all of an env per thread on
    the CPU, where warp copies the call struct once per thread; one on CUDA). Each sample j (body-frame point u_j of
    body B): world q = R_B u_j + o_B and link frame q̃ = R_Lᵀ(q − o_L) (into ``local``), its signed distance sd to the
    own shapes of its sensor's link L (:func:`nearest_shape`, +inf beyond the sample's cutoff, and without a query
    outside the link frame box ``box_lo`` … ``box_hi`` that holds every point within the cutoff), release / anchor,
    then the weighted drag c = (q̃ − A) a_j/A_cell D_j and whether it contributes (anchored, D_j > 0 and c ≠ 0: a zero
    drag adds exactly nothing). The posing and the samples outside the box (most of them) run in a native loop
    (:func:`_pose_loop`), the few inside in warp code. With ``fused`` (a thread holds every sample of its env, in
    order) the thread also compacts the contributing samples as :func:`_compact_kernel` does."""
    f, v, m = WP_TYPES[dtype]
    i32 = wp.array(dtype=wp.int32)
    name = f"ShearSampleCall_{f.__name__}"
    call_type = warp_struct(name, {
        "points": wp.array(dtype=v), "owner": i32, "sensor": i32, "link_of_sensor": i32, "box_lo": wp.array(dtype=v),
        "box_hi": wp.array(dtype=v),
        "body_rot": wp.array2d(dtype=m), "body_pos": wp.array2d(dtype=v), "local": wp.array2d(dtype=v),
        "own_shapes": wp.array2d(dtype=wp.bool), "exact": wp.array(dtype=wp.bool), "cutoff": wp.array(dtype=f),
        "contact": wp.array(dtype=f), "release": wp.array(dtype=f), "weight": wp.array(dtype=f),
        "world_rot": wp.array2d(dtype=m), "world_pos": wp.array2d(dtype=v), "world_center": wp.array2d(dtype=v),
        "anchored": wp.array2d(dtype=wp.bool), "anchor": wp.array2d(dtype=v), "drag": wp.array2d(dtype=v),
        "selected": wp.array2d(dtype=wp.bool), "near": wp.array2d(dtype=wp.int32), "world": wp.array2d(dtype=v),
        "q_out": wp.array3d(dtype=v), "c_out": wp.array3d(dtype=v), "count": wp.array2d(dtype=wp.int32),
        "previous": wp.array2d(dtype=wp.int32), "listed": wp.array2d(dtype=wp.int32)}, __name__)
    kernel_name = f"elastomer_shear_samples_{f.__name__}"

    def pose(call, e, t, start, stop): ...

    pose.__name__ = f"{kernel_name}_pose"
    pose.__annotations__ = {"call": call_type, "e": int, "t": int, "start": int, "stop": int}
    native_pose = wp.func_native(_pose_loop(dtype))(pose)

    def kernel(call: Any, tables: Any, per_thread: int, fused: int):
        e, t = wp.tid()
        first = t * per_thread
        if fused != 0:
            for s in range(call.count.shape[1]):
                call.previous[e, s] = call.count[e, s]
                call.count[e, s] = 0
        native_pose(call, e, t, first, wp.min(first + per_thread, call.points.shape[0]))
        for k in range(call.listed[e, t]):
            j = call.near[e, first + k]
            x = call.world[e, j]
            q = call.local[e, j]
            g = call.sensor[j]
            d, _shape, normal, closest = nearest_shape(x, e, g, call.cutoff[j], call.exact[g], 0, call.own_shapes,
                                                  call.world_rot, call.world_pos, call.world_center, tables)
            held = call.anchored[e, j]
            if held and d > call.release[j]:
                held = False
            elif not held and d < call.contact[j]:
                held = True
                call.anchor[e, j] = q
            call.anchored[e, j] = held
            zero = type(d)(0.0)
            w = zero
            if held and d < zero:
                w = -d * call.weight[j]
            c = (q - call.anchor[e, j]) * w
            call.drag[e, j] = c
            chosen = w > zero and (c[0] != zero or c[1] != zero or c[2] != zero)
            call.selected[e, j] = chosen
            if fused != 0 and chosen:
                m = call.count[e, g]
                call.q_out[e, g, m] = q
                call.c_out[e, g, m] = c
                call.count[e, g] = m + 1
        if fused != 0:
            for s in range(call.count.shape[1]):
                _clear_slots(call.q_out, call.c_out, e, s, call.count[e, s], call.previous[e, s])

    kernel.__name__ = kernel_name
    kernel.__annotations__ = {"call": call_type, "tables": tables_type(dtype), "per_thread": int, "fused": int}
    return unique_kernel(kernel), call_type


_SAMPLE_KERNELS = {dt: _sample_kernel(dt) for dt in WP_TYPES}


def _compact_kernel(dtype: torch.dtype):
    """(kernel, call struct type): the selected samples of sensor s in env e first, in sample order: q̃ and drag into
    [e, s, 0 … count). Slots from count on stay zero (zero drag: they add nothing): only those the previous step
    filled beyond the new count are cleared."""
    v = WP_TYPES[dtype][1]
    i32 = wp.array(dtype=wp.int32)
    name = f"ShearCompactCall_{v.__name__}"
    call_type = warp_struct(name, {
        "local": wp.array2d(dtype=v), "drag": wp.array2d(dtype=v), "selected": wp.array2d(dtype=wp.bool),
        "start": i32, "length": i32, "q_out": wp.array3d(dtype=v), "c_out": wp.array3d(dtype=v),
        "count": wp.array2d(dtype=wp.int32)}, __name__)

    def kernel(call: Any):
        e, s = wp.tid()
        a = call.start[s]
        m = int(0)
        for j in range(call.length[s]):
            if call.selected[e, a + j]:
                call.q_out[e, s, m] = call.local[e, a + j]
                call.c_out[e, s, m] = call.drag[e, a + j]
                m = m + 1
        _clear_slots(call.q_out, call.c_out, e, s, m, call.count[e, s])
        call.count[e, s] = m

    kernel.__name__ = f"elastomer_shear_compact_{WP_TYPES[dtype][0].__name__}"
    kernel.__annotations__ = {"call": call_type}
    return unique_kernel(kernel), call_type


_COMPACT_KERNELS = {dt: _compact_kernel(dt) for dt in WP_TYPES}


REACH_MARGIN = 1e-5
"""Widening (m) of a link's reach box beyond the cutoff: far above the round-off of a signed distance."""


def _reach_box(shapes: Sequence[Shape], cutoff: float) -> tuple[np.ndarray, np.ndarray]:
    """Link-frame box holding every point whose signed distance to one of ``shapes`` is below ``cutoff`` (m): the
    shapes' boxes widened by cutoff + REACH_MARGIN; unbounded when a shape is a plane or a mesh (its distance may
    come from an SDF grid)."""
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for shape in shapes:
        size = shape.size
        if shape.kind == ShapeKind.SPHERE:
            half = np.full(3, size[0])
        elif shape.kind == ShapeKind.BOX:
            half = np.abs(shape.rot) @ np.asarray(size)
        elif shape.kind in (ShapeKind.CAPSULE, ShapeKind.CYLINDER):        # (r, l): r + l bounds either length
            half = np.abs(shape.rot) @ np.array([size[0], size[0], size[0] + size[1]])
        else:
            return np.full(3, -np.inf), np.full(3, np.inf)
        lo, hi = np.minimum(lo, shape.pos - half), np.maximum(hi, shape.pos + half)
    pad = max(cutoff, 0.0) + REACH_MARGIN
    return lo - pad, hi + pad


def _probe_range(starts: Sequence[int], counts: Sequence[int], device) -> torch.Tensor | slice:
    """The probe indices of several sensors: a slice when they are contiguous, else an index tensor."""
    index = np.concatenate([np.arange(a, a + c) for a, c in zip(starts, counts)])
    if np.array_equal(index, np.arange(index[0], index[0] + len(index))):
        return slice(int(index[0]), int(index[0]) + len(index))
    return torch.as_tensor(index, device=device)


def _add_at(out: torch.Tensor, probes: torch.Tensor | slice, value: torch.Tensor) -> None:
    """out[:, probes] += value (value [E, len(probes), 3])."""
    if isinstance(probes, slice):
        out[:, probes].add_(value)
    else:
        out.index_add_(1, probes, value)


def _outer_kernel(dtype: torch.dtype):
    """(kernel, call struct type) over (R, 1) in the working dtype: out[r, 3x + c] = along[r, x] · drag[r, c] for the
    R rows of ``along`` [R, N] (column factors), ``drag`` [R, 3] and ``out`` [R, 3N] (contiguous): the lattice shear's
    column factors times the in-plane drags, one row of N probes per thread. Each value is one product, as torch's
    broadcast product gives it (whose loop over 3 channels at a time costs ~10× more)."""
    f = WP_TYPES[dtype][0]
    real = "float" if dtype == torch.float32 else "double"
    call_type = warp_struct(f"ShearOuterCall_{f.__name__}", {
        "along": wp.array2d(dtype=f), "drag": wp.array2d(dtype=f), "out": wp.array2d(dtype=f)}, __name__)
    body = f"""
    const int n = call.along.shape[1];
    const {real}* __restrict__ a = reinterpret_cast<const {real}*>(call.along.data) + static_cast<size_t>(r) * n;
    const {real}* __restrict__ d = reinterpret_cast<const {real}*>(call.drag.data) + static_cast<size_t>(r) * 3;
    {real}* __restrict__ w = reinterpret_cast<{real}*>(call.out.data) + static_cast<size_t>(r) * 3 * n;
    const {real} d0 = d[0], d1 = d[1], d2 = d[2];
    for (int x = 0; x < n; ++x) {{
        w[3 * x] = a[x] * d0;
        w[3 * x + 1] = a[x] * d1;
        w[3 * x + 2] = a[x] * d2;
    }}
"""

    def row(call, r, unused): ...

    return native_grid_kernel(f"elastomer_shear_outer_{f.__name__}", call_type, row, body), call_type


_OUTER_KERNELS = {dt: _outer_kernel(dt) for dt in WP_TYPES}
OUTER_LAUNCHES = 8
"""Most outer-product launches a lattice group keeps, one per row count E·G·K, the least recently used dropped
first. The sample count K changes from step to step as a contact moves (a ball circling on a 64 × 64 pad: 46 counts
in 600 steps, the count changing every third step), and a kept launch holds its last call's tensors, so without a
bound a long run would hold one set of them for every count it ever met."""


class _LatticeMembers:
    """Separable shear of the lattice sensors of one grid shape (M, N): with in-plane coordinates (u, v) of a
    sample, exp(−λ_s‖P(p_rc − q)‖²) = exp(−(√λ_s(cΔu − u))²)·exp(−(√λ_s(rΔv − v))²), so per env the field is one
    matrix product [M, K] × [K, N·3] of the row factors with the column factors times the in-plane drags."""

    def __init__(self, members: Sequence[int], n_sensors: int, layouts: Sequence[ProbeLayout],
                 starts: Sequence[int], lambda_s: Sequence[float], device, dtype):
        self.members = None if list(members) == list(range(n_sensors)) else torch.as_tensor(list(members),
                                                                                             device=device)
        m, n = layouts[members[0]].shape
        grids = [layouts[s].grid for s in members]
        root = np.sqrt([lambda_s[s] for s in members])[:, None, None]                     # [G, 1, 1]
        axes = np.stack([np.stack([g.t_u, g.t_v], 1) for g in grids])                     # [G, 3, 2]
        origin = np.stack([g.origin for g in grids])[:, None, :]                          # [G, 1, 3]

        def tensor(x: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(x, device=device, dtype=dtype)

        self.scaled_axes = tensor(axes * root)
        self.scaled_origin = tensor(origin @ axes * root)                                 # [G, 1, 2]
        self.cols = tensor(np.stack([np.arange(n) * g.du for g in grids])[:, None] * root[..., 0, None])  # [G,1,N]
        self.rows = tensor(np.stack([np.arange(m) * g.dv for g in grids])[:, None] * root[..., 0, None])  # [G,1,M]
        self.plane = tensor(axes @ axes.transpose(0, 2, 1))                               # [G, 3, 3] projector
        self.probes = _probe_range([starts[s] for s in members], [m * n] * len(members), device)
        self.shape = (m, n)
        self._outer: dict[int, StructLaunch] = {}           # rows E·G·K → launch, least recently used first

    def __call__(self, q: torch.Tensor, c: torch.Tensor, out: torch.Tensor) -> None:
        """q, c: compacted positions and weighted drags [E, S, K, 3] (all sensors); adds s into out [E, P, 3]."""
        if self.members is not None:
            q, c = q[:, self.members], c[:, self.members]                           # [E, G, K, 3]
        m, n = self.shape
        uv = torch.matmul(q, self.scaled_axes).sub_(self.scaled_origin)              # [E, G, K, 2]
        drag = torch.matmul(c, self.plane)                                          # in-plane part [E, G, K, 3]
        along_u = (self.cols - uv[..., :1]).square_().neg_().exp_()                  # [E, G, K, N]
        along_v = (self.rows - uv[..., 1:]).square_().neg_().exp_()                  # [E, G, K, M]
        e, g, k, _ = along_v.shape
        weighted = self._weighted(along_u, drag)                                    # [E, G, K, N·3]
        field = torch.matmul(along_v.transpose(-1, -2), weighted)                   # [E, G, M, N·3]
        if isinstance(self.probes, slice):
            out[:, self.probes].view(e, g, m, 3 * n).add_(field)
        else:
            out.index_add_(1, self.probes, field.view(e, -1, 3))

    def _weighted(self, along_u: torch.Tensor, drag: torch.Tensor) -> torch.Tensor:
        """along_u [E, G, K, N] times drag [E, G, K, 3] → [E, G, K, N·3] (probe-major, channel-minor): on the CPU by
        :data:`_OUTER_KERNELS` (a launch per row count E·G·K, its tensors rebound every call; at most
        :data:`OUTER_LAUNCHES` kept), on CUDA by torch's broadcast product (one elementwise kernel there)."""
        e, g, k, n = along_u.shape
        if along_u.device.type != "cpu":
            return (along_u[..., None] * drag[..., None, :]).view(e, g, k, 3 * n)
        weighted = along_u.new_empty((e, g, k, 3 * n))
        tensors = {"along": along_u.view(-1, n), "drag": drag.view(-1, 3), "out": weighted.view(-1, 3 * n)}
        rows = e * g * k
        launch = self._outer.pop(rows, None)
        if launch is None:
            if len(self._outer) >= OUTER_LAUNCHES:
                del self._outer[next(iter(self._outer))]
            kernel, call_type = _OUTER_KERNELS[along_u.dtype]
            launch = StructLaunch(kernel, (rows, 1), call_type, tensors, [], along_u.device)
        else:
            for name, t in tensors.items():
                launch.bind(name, t)
        self._outer[rows] = launch
        launch()
        return weighted


class _ScatteredMembers:
    """Dense shear of every other layout (any normals) over the compacted samples.

    The exponent −λ_i ‖P_i(p_i − q)‖² is linear in the features f(q) = (q, 1, ‖q‖², q_x², q_y², q_z², q_x q_y,
    q_x q_z, q_y q_z), so one matrix product with per-probe coefficients (built once) gives it for every pair.
    """

    def __init__(self, members: Sequence[int], starts: Sequence[int], counts: Sequence[int],
                 lambda_s: Sequence[float], layouts: Sequence[ProbeLayout], device, dtype):
        self.members = torch.as_tensor(list(members), device=device)
        self.probes = _probe_range([starts[s] for s in members], [counts[s] for s in members], device)
        p = np.concatenate([layouts[s].flat_positions for s in members])
        a = np.concatenate([layouts[s].flat_normals for s in members])
        lam = np.concatenate([np.full(counts[s], lambda_s[s]) for s in members])
        along = (a * p).sum(1)
        coef = np.column_stack([
            2 * lam[:, None] * (p - along[:, None] * a), -lam * ((p * p).sum(1) - along**2), -lam,
            lam[:, None] * a**2, 2 * lam * a[:, 0] * a[:, 1], 2 * lam * a[:, 0] * a[:, 2], 2 * lam * a[:, 1] * a[:, 2]])
        self.coef = torch.as_tensor(coef.T.copy(), device=device, dtype=dtype)        # [11, Q]
        self.normal_t = torch.as_tensor(a.T.copy(), device=device, dtype=dtype)      # [3, Q]
        self.sensor = torch.as_tensor(np.concatenate([np.full(counts[s], k) for k, s in enumerate(members)]),
                                      device=device)

    def __call__(self, q: torch.Tensor, c: torch.Tensor, out: torch.Tensor) -> None:
        q, c = q[:, self.members], c[:, self.members]                               # [E, G, K, 3]
        e, g, k, _ = q.shape
        q, c = q.reshape(e, g * k, 3), c.reshape(e, g * k, 3)
        x, y, z = q.unbind(-1)
        features = torch.stack([x, y, z, torch.ones_like(x), x * x + y * y + z * z, x * x, y * y, z * z, x * y,
                                x * z, y * z], dim=-1)                              # [E, GK, 11]
        weight = torch.matmul(features, self.coef).exp_()                           # [E, GK, Q]
        if g > 1:
            own = self.sensor[None, :] == torch.arange(g, device=q.device).repeat_interleave(k)[:, None]
            weight = weight * own
        s = torch.matmul(c.transpose(1, 2), weight)                                 # [E, 3, Q]
        s = s - (s * self.normal_t).sum(1, keepdim=True) * self.normal_t
        _add_at(out, self.probes, s.transpose(1, 2))


class ShearAnchors:
    """Anchor state and shear of a batch's ElastomerTaxel sensors.

    clouds / links / link_shapes: per sensor, its tracked cloud (N samples in all), link (body index) and the link's
    collision shapes (link frame); n_envs, n_bodies: the
    sizes of the world state's pose tensors [E, B, …]; query: the scene's
    ShapeQuery, whose shape poses must be current for the step (the batch's probe launch fills them first);
    own_shapes [S, n]
    bool: each sensor link's own shapes; exact [S] bool: mesh backend per sensor; per sensor: layouts (link frame),
    first probe index, shear_scale, A_cell = ε₀² (m²), lambda_s (m⁻²), contact/release thresholds (m); elsewhere:
    sensors whose shear sum another path evaluates from the compacted samples. State: ``anchored`` [E, N] bool,
    ``anchor`` A_j [E, N, 3] m (link frame). Per step (after a call): ``q_c``, ``c_c`` [E, S, K, 3] the compacted
    positions q̃ and weighted drags of each sensor's contributing samples, ``count`` [E, S] int32 how many.
    """

    kernel_tables = (_SAMPLE_KERNELS,)
    """Tables (working dtype → (kernel, call type)) of the kernels every instance launches (the compaction kernel,
    launched on CUDA only, compiles when first launched)."""

    def __init__(self, clouds: Sequence[PointCloud], links: Sequence[int], link_shapes: Sequence[Sequence[Shape]],
                 n_envs: int, n_bodies: int, query: ShapeQuery,
                 own_shapes: torch.Tensor, exact: torch.Tensor, layouts: Sequence[ProbeLayout],
                 starts: Sequence[int], shear_scale: Sequence[float], cell_area: Sequence[float],
                 lambda_s: Sequence[float], contact: Sequence[float], release: Sequence[float],
                 elsewhere: Sequence[int] = ()):
        device, dtype = query.device, query.dtype
        e = n_envs
        lengths = [len(c) for c in clouds]
        n = sum(lengths)
        sensor = torch.as_tensor(np.repeat(np.arange(len(clouds)), lengths), device=device)

        def per_sample(values) -> torch.Tensor:
            return torch.as_tensor(np.asarray(values, np.float64), device=device)[sensor].to(dtype)

        def cat(key) -> np.ndarray:
            return np.concatenate([getattr(c, key) for c in clouds])

        scale = np.asarray(shear_scale, np.float64)
        areas = torch.as_tensor(cat("areas"), device=device, dtype=torch.float64)
        self.weight = (areas * per_sample(scale / np.asarray(cell_area))).to(dtype)
        # anchor when sd < −contact_threshold (never with shear_scale = 0); release when sd > −release_threshold
        self.contact = torch.where(per_sample(scale) > 0, -per_sample(contact), -torch.inf)
        self.release = -per_sample(release)
        # sd beyond the release level only releases (or keeps free): query up to a cutoff strictly above it;
        # samples of sensors without shear never query
        cutoff = self.release + self.release.abs() + EPS_LEN
        reach = [2 * max(-r, 0.0) + EPS_LEN for r in release]                # the cutoff of each sensor, m
        self.cutoff = torch.where(per_sample(scale) > 0, cutoff, -torch.inf).contiguous()
        self.local = torch.zeros((e, n, 3), dtype=dtype, device=device)
        self.anchored = torch.zeros((e, n), dtype=torch.bool, device=device)
        self.anchor = torch.zeros((e, n, 3), dtype=dtype, device=device)
        self.drag = torch.zeros((e, n, 3), dtype=dtype, device=device)
        self.selected = torch.zeros((e, n), dtype=torch.bool, device=device)
        poses = query.pose_buffers(e)
        cpu = torch.device(device).type == "cpu"

        def ints(x) -> torch.Tensor:
            return torch.as_tensor(np.asarray(x, np.int64), device=device, dtype=torch.int32)

        starts_of_sample = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        self.longest = max(lengths)
        self.count = torch.zeros((e, len(lengths)), dtype=torch.int32, device=device)
        self.q_c = torch.zeros((e, len(lengths), self.longest, 3), dtype=dtype, device=device)
        self.c_c = torch.zeros((e, len(lengths), self.longest, 3), dtype=dtype, device=device)
        lo, hi = np.stack([_reach_box(shapes, float(c)) for shapes, c in zip(link_shapes, reach)]).transpose(1, 0, 2)
        kernel, call_type = _SAMPLE_KERNELS[dtype]
        # CPU: one thread per env, which compacts its samples too; CUDA: one per sample, compacted by a second kernel
        per_thread = n if cpu else 1
        self._step = StructLaunch(kernel, (e, -(-n // per_thread)), call_type, {
            "points": torch.as_tensor(cat("points").reshape(n, 3), device=device, dtype=dtype),
            "owner": ints(cat("body")), "sensor": ints(sensor.cpu()), "link_of_sensor": ints(links),
            "box_lo": torch.as_tensor(lo, device=device, dtype=dtype).contiguous(),
            "box_hi": torch.as_tensor(hi, device=device, dtype=dtype).contiguous(),
            "body_rot": torch.zeros((e, n_bodies, 3, 3), device=device, dtype=dtype),
            "body_pos": torch.zeros((e, n_bodies, 3), device=device, dtype=dtype), "local": self.local,
            "own_shapes": own_shapes.contiguous(), "exact": exact.contiguous(), "cutoff": self.cutoff,
            "contact": self.contact, "release": self.release, "weight": self.weight, "world_rot": poses.rot,
            "world_pos": poses.pos, "world_center": poses.cull_center, "anchored": self.anchored,
            "anchor": self.anchor, "drag": self.drag, "selected": self.selected,
            "near": torch.zeros((e, n), dtype=torch.int32, device=device),
            "world": torch.zeros((e, n, 3), dtype=dtype, device=device), "q_out": self.q_c, "c_out": self.c_c,
            "count": self.count, "previous": torch.zeros_like(self.count),
            "listed": torch.zeros((e, -(-n // per_thread)), dtype=torch.int32, device=device)},
            [query.tables, per_thread, int(cpu)], device)
        self._compact = None
        self._slots = 0                                                   # compacted slots of the step (update)
        if not cpu:
            kernel, call_type = _COMPACT_KERNELS[dtype]
            self._compact = StructLaunch(kernel, (e, len(lengths)), call_type, {
                "local": self.local, "drag": self.drag, "selected": self.selected, "start": ints(starts_of_sample),
                "length": ints(lengths), "q_out": self.q_c, "c_out": self.c_c, "count": self.count}, [], device)
        counts = [lay.n for lay in layouts]
        lattice: dict[tuple[int, int], list[int]] = {}
        scattered = []
        for s, layout in enumerate(layouts):
            if shear_scale[s] <= 0 or s in elsewhere:
                continue
            if orthogonal_grid(layout):
                lattice.setdefault(layout.shape, []).append(s)
            else:
                scattered.append(s)
        self.groups = [_LatticeMembers(m, len(layouts), layouts, starts, lambda_s, device, dtype)
                       for m in lattice.values()]
        if scattered:
            self.groups.append(_ScatteredMembers(scattered, starts, counts, lambda_s, layouts, device, dtype))

    def update(self, state: WorldState) -> bool:
        """Pose the samples for ``state`` and update the anchors and the compacted samples; True when :meth:`add`
        then adds something (some sensor not evaluated elsewhere, and on the CPU some compacted sample)."""
        bind_state(self._step, state)
        self._step()
        if self._compact is not None:
            self._compact()
        # slots per segment: this step's largest count on CPU (reading it costs nothing), the longest elsewhere
        self._slots = 0 if not self.groups else int(self.count.max()) if self.count.device.type == "cpu" \
            else self.longest
        return self._slots > 0

    def add(self, out: torch.Tensor) -> None:
        """Add the shear of the sensors not evaluated elsewhere to out [E, P, 3] (after :meth:`update` returned
        True)."""
        k = self._slots
        q_c, c_c = self.q_c[:, :, :k], self.c_c[:, :, :k]                           # [E, S, K, 3]
        for group in self.groups:
            group(q_c, c_c, out)

    def reset(self, env_mask: torch.Tensor | None) -> None:
        """Clear the anchors of the envs of env_mask ([E] bool; None = all)."""
        if env_mask is None:
            self.anchored.zero_()
            self.anchor.zero_()
        else:
            self.anchored.masked_fill_(env_mask[:, None], False)
            self.anchor.masked_fill_(env_mask[:, None, None], 0)

