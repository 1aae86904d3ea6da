"""ElastomerTaxel dilation field (docs/models/elastomer_taxel.md#kernels) of a batch: kernels, FFT path and direct path.

For a target probe i (link-frame position p_i, unit normal a_i) and a source j, with δ = P_i(p_i − p_j),
P_i = I − a_i a_iᵀ, r = ‖δ‖:

    G(r) = exp(−λ_d r²);  K_loc = δ G;  g* = exp(−½)/sqrt(2λ_d)
    K_glob = g*·2ε₀·δ/(r² + ε₀²)              (h = 0)      K_glob = g*·(δ/r)·κ₁(r/h)/κ₁*     (h > 0)
    K_in = c K_loc + (1 − c) K_glob
    u_dil,i = dilate_scale · Σ_{active j, H_j > 0} [K_in H_j − a_i G H_j^p]          (link frame, [E, P, 3])

The kernel pair (K_in, G) has one implementation, the warp function :func:`~.pair_kernel.dilation_pair`; it fills
the tables at build (in float64) and is evaluated per step only by the direct path of very large layouts (on the CPU
once per source coming into contact, :mod:`.source_rows`).

* FFT path (regular planar grid with one shared normal a, docs/models/layouts.md#planar-grids): the (M, N) depth maps H
and H^p — on the CPU
  only the window of rows and columns where some env has H > 0 — are zero-padded to (L_v, L_u) ≥ (M + w_r − 1,
  N + w_c − 1) and multiplied in Fourier space with the spectra of the three scalar kernels e₁·K_in, e₂·K_in and G
  on the ideal lattice offsets o = i_u Δu t_u + i_v Δv t_v (tables at build), where (e₁, e₂, a) is an orthonormal
  frame: an exact linear convolution without wrap-around. u = e₁U₁ + e₂U₂ − a N. On the CPU the transforms are
  MKL descriptors committed once per window size between kept buffers (:mod:`.dfti`; torch.fft's values); maps
  with the bits of the last step's (a contact at rest) reuse its fields.
  With c = 1 on a grid whose axes and normal are mutually orthogonal the kernels factor along the axes and the
  same lattice sum is a few Toeplitz matrix products instead (:class:`SeparableLattice`).
* Direct path (every other layout): per env and sensor, the sources with H > 0 are listed (in probe order) and the
  rows of dense pair tables (built once, 4 values per pair) are summed with weights H and H^p — on the CPU in one
  native loop (:mod:`.table_sum`), on CUDA by ``embedding_bag`` over the compacted sources
  (:mod:`..points.compaction`, no gathered copy); up to ``FULL_SUM_LIMIT`` probes the tables simply multiply the
  whole H and H^p. Beyond ``DENSE_LIMIT`` table elements a warp kernel evaluates the pairs per step instead (one thread
  per env and target).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import scipy.fft
import torch
import warp as wp

from ...geometry.struct_launch import StructLaunch, warp_struct
from ...geometry.warp_kernels import native_grid_kernel, unique_kernel
from ..points.compaction import SegmentCompaction
from . import dfti
from .layer_profile import layer_profile
from .pair_kernel import dilation_pair, profile_arrays
from .source_rows import SourceRows
from .table_sum import TableSum
from ..layout.probe_layout import ProbeLayout
from ..points.probe_set import WP_TYPES

ORTHOGONAL = 1e-12
"""|t_u·t_v|, |a·t_u|, |a·t_v| at most this (unit vectors) make a grid orthogonal (Gaussians separable)."""

log = logging.getLogger(__name__)

DENSE_LIMIT = 2**24
"""Largest total size (elements) of the direct path's dense pair tables, Σ 4·P_s² (P_s = 2048 for one sensor; 64 MB
in float32); beyond, the kernels are evaluated per step. Keeps table indices within int32."""

FULL_SUM_LIMIT = 128
"""Up to this many direct probes the dense tables are multiplied by the whole H and H^p (two small GEMMs) instead
of compacting the sources first (the compaction's fixed cost is larger there)."""


@dataclass(frozen=True)
class DilationParameters:
    """One sensor's dilation constants: λ_d (m⁻²), c, ε₀ (m), h (m), dilate_scale, normal exponent p."""

    lambda_d: float
    compressibility: float
    epsilon0: float
    thickness: float
    dilate_scale: float
    exponent: float

    def row(self) -> list[float]:
        """The sensor's row of the parameter table read by :func:`dilation_pair`:
        (λ_d, c, g*, ε₀, h, 1/κ₁*, dilate_scale)."""
        peak = math.exp(-0.5) / math.sqrt(2.0 * self.lambda_d)
        return [self.lambda_d, self.compressibility, peak, self.epsilon0, self.thickness,
                1.0 / layer_profile().peak, self.dilate_scale]


_F64 = {"params": wp.array2d(dtype=wp.float64), "coefficients": wp.array2d(dtype=wp.float64),
        "table": wp.array(dtype=wp.float64), "out_k": wp.array2d(dtype=wp.vec3d), "out_g": wp.array2d(dtype=wp.float64)}
"""Fields of the build-time table kernels (float64): the parameter table [S, 7], κ₁'s cubic pieces and their grid,
the output tables (K_in, G)."""

_PairTablesCall = warp_struct("DilationPairTablesCall", {
    "pos": wp.array(dtype=wp.vec3d), "normal": wp.array(dtype=wp.vec3d), **_F64}, __name__)
_LatticeTablesCall = warp_struct("DilationLatticeTablesCall", {"offsets": wp.array2d(dtype=wp.vec3d), **_F64},
                                 __name__)


def _pair_tables(call: _PairTablesCall, at: int, s: int):
    """Dense tables of one sensor (block [at, at + count)² of the direct probes): dilate_scale·(K_in, G)(p_i − p_j)
    at [j, i] for source j and target i."""
    j, i = wp.tid()
    k, g = dilation_pair(call.pos[at + i] - call.pos[at + j], call.normal[at + i], call.params, s, call.coefficients,
                         call.table)
    scale = call.params[s, 6]
    call.out_k[at + j, at + i] = scale * k
    call.out_g[at + j, at + i] = scale * g


def _lattice_tables(call: _LatticeTablesCall, a: wp.vec3d, s: int):
    """(K_in, G) at every lattice offset (no dilate_scale)."""
    r, c = wp.tid()
    k, g = dilation_pair(call.offsets[r, c], a, call.params, s, call.coefficients, call.table)
    call.out_k[r, c] = k
    call.out_g[r, c] = g


_pair_tables.__annotations__ = {"call": _PairTablesCall, "at": int, "s": int}
_lattice_tables.__annotations__ = {"call": _LatticeTablesCall, "a": wp.vec3d, "s": int}
_pair_tables = unique_kernel(_pair_tables, "elastomer_dilation_pair_tables_float64")
_lattice_tables = unique_kernel(_lattice_tables, "elastomer_dilation_lattice_tables_float64")


def _direct_sum_kernel(dtype: torch.dtype):
    """(kernel, call struct type) of the direct path's per-step sum in the working dtype, over (E, direct probes):
    u[e, i] = Σ over the compacted sources j of i's sensor: dilate_scale·(K_in H_j − a_i G H_j^p), kernels evaluated
    here (direct probes only: every index is into the direct subset)."""
    f, v, _ = WP_TYPES[dtype]
    i64 = wp.array(dtype=wp.int64)
    call_type = warp_struct(f"DilationDirectSumCall_{f.__name__}", {
        "pos": wp.array(dtype=v), "normal": wp.array(dtype=v), "segment": i64, "sensor": wp.array(dtype=wp.int32),
        "params": wp.array2d(dtype=f), "coefficients": wp.array2d(dtype=f), "table": wp.array(dtype=f),
        "depth": wp.array2d(dtype=f), "depth_p": wp.array2d(dtype=f), "order": wp.array2d(dtype=wp.int64),
        "first": i64, "count": wp.array2d(dtype=wp.int64), "out": wp.array2d(dtype=v)}, __name__)

    def kernel(call: Any):
        e, i = wp.tid()
        t = int(call.segment[i])
        s = call.sensor[t]
        a = call.normal[i]
        u = a - a
        begin = int(call.first[t])
        for m in range(int(call.count[e, t])):
            j = int(call.order[e, begin + m])
            k, g = dilation_pair(call.pos[i] - call.pos[j], a, call.params, s, call.coefficients, call.table)
            u = u + call.params[s, 6] * (call.depth[e, j] * k - (g * call.depth_p[e, j]) * a)
        call.out[e, i] = u

    kernel.__name__ = f"elastomer_dilation_direct_sum_{f.__name__}"
    kernel.__annotations__ = {"call": call_type}
    return unique_kernel(kernel), call_type


_DIRECT_SUM_KERNELS = {dt: _direct_sum_kernel(dt) for dt in WP_TYPES}


def _interleave_kernel(dtype: torch.dtype, scaled: bool):
    """(kernel, call struct type) over (E, M) in the working dtype: out[e, y·N + x, c] = fields[e, c, y, x] for
    x < N, the channels of a lattice group's fields [E, 3, M, L ≥ N] (contiguous) interleaved into its probes'
    vectors out [E, M·N, 3]; one row of N probes per thread, in a loop the compiler keeps on unit strides. With
    ``scaled`` also measured[e, y·N + x, c] = out[e, y·N + x, c] · gain[e, y·N + x] (probe gain [E, M·N]): the
    sensor's emit of u and g·u (the same product) straight into its staging buffers."""
    f = WP_TYPES[dtype][0]
    real = "float" if dtype == torch.float32 else "double"
    fields = {"fields": wp.array4d(dtype=f), "out": wp.array3d(dtype=f)}
    if scaled:
        fields.update(measured=wp.array3d(dtype=f), gain=wp.array2d(dtype=f))
    what = "interleave_scaled" if scaled else "interleave"
    call_type = warp_struct(f"Dilation{what.title().replace('_', '')}Call_{f.__name__}", fields, __name__)
    name = f"elastomer_dilation_{what}_{f.__name__}"
    row = f"""
    const int m = call.fields.shape[2];
    const size_t width = call.fields.shape[3], plane = static_cast<size_t>(m) * width;
    const int n = call.out.shape[1] / m;
    const size_t first = (static_cast<size_t>(e) * m + y) * n;
    const {real}* __restrict__ a = reinterpret_cast<const {real}*>(call.fields.data) + (3 * e * plane + y * width);
    const {real}* __restrict__ b = a + plane;
    const {real}* __restrict__ c = b + plane;
    {real}* __restrict__ u = reinterpret_cast<{real}*>(call.out.data) + 3 * first;
    for (int x = 0; x < n; ++x) {{
        u[3 * x] = a[x];
        u[3 * x + 1] = b[x];
        u[3 * x + 2] = c[x];
    }}
"""
    if scaled:
        row += f"""
    const {real}* __restrict__ g = reinterpret_cast<const {real}*>(call.gain.data) + first;
    {real}* __restrict__ v = reinterpret_cast<{real}*>(call.measured.data) + 3 * first;
    for (int x = 0; x < n; ++x) {{
        v[3 * x] = a[x] * g[x];
        v[3 * x + 1] = b[x] * g[x];
        v[3 * x + 2] = c[x] * g[x];
    }}
"""

    def row_of(call, e, y): ...

    return native_grid_kernel(name, call_type, row_of, row), call_type


_INTERLEAVE_KERNELS = {(dt, scaled): _interleave_kernel(dt, scaled) for dt in WP_TYPES for scaled in (False, True)}


def _transpose_kernel(dtype: torch.dtype):
    """(kernel, call struct type) over (B, 1) in the working dtype: dst[b, j, i] = src[b, i, j] for the first C
    columns of ``src`` [B, R, K ≥ C, 2] into ``dst`` [B, C, L ≥ R, 2] (complex values as pairs of reals, contiguous;
    the rest of each ``dst`` row, its zero padding, left as it is): the FFT path's transposes of the rows' half
    spectra into columns and of the first M rows of the inverse column transforms back into rows. Exact copies, one
    complex value at a time, a destination row at a time (these planes stay in cache: tiles only add branches)."""
    f = WP_TYPES[dtype][0]
    call_type = warp_struct(f"DilationTransposeCall_{f.__name__}", {
        "src": wp.array4d(dtype=f), "dst": wp.array4d(dtype=f)}, __name__)
    item = "uint64_t" if dtype == torch.float32 else "wp::vec_t<2, double>"
    body = f"""
    typedef {item} item;
    const int rows = call.src.shape[1], length = call.src.shape[2];
    const int cols = call.dst.shape[1], width = call.dst.shape[2];
    const size_t in_plane = static_cast<size_t>(rows) * length, out_plane = static_cast<size_t>(cols) * width;
    const item* __restrict__ src = reinterpret_cast<const item*>(call.src.data) + b * in_plane;
    item* __restrict__ dst = reinterpret_cast<item*>(call.dst.data) + b * out_plane;
    for (int j = 0; j < cols; ++j) {{
        item* __restrict__ out = dst + static_cast<size_t>(j) * width;
        for (int i = 0; i < rows; ++i) out[i] = src[static_cast<size_t>(i) * length + j];
    }}
"""

    def block(call, b, unused): ...

    return native_grid_kernel(f"elastomer_dilation_transpose_{f.__name__}", call_type, block, body), call_type


_TRANSPOSE_KERNELS = {dt: _transpose_kernel(dt) for dt in WP_TYPES}


# ---------------------------------------------------------------------------------------------- shared tables
def _in_plane_frame(a: np.ndarray, t_u: np.ndarray, t_v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal e₁, e₂ perpendicular to the unit normal a (e₁ along the grid axis least parallel to a)."""
    candidates = [t - np.dot(a, t) * a for t in (t_u, t_v)]
    e1 = max(candidates, key=np.linalg.norm)
    e1 = e1 / np.linalg.norm(e1)
    return e1, np.cross(a, e1)


def pair_tables(positions: np.ndarray, normals: np.ndarray, sensors: Sequence[int], counts: Sequence[int],
                params: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Dense float64 pair tables of consecutive probe blocks (block b: the counts[b] rows of ``positions`` /
    ``normals`` (n, 3), link frame, of sensor sensors[b], parameters ``params`` [S, 7] on the build device):
    dilate_scale·K_in(p_i − p_j) [n, n, 3] and dilate_scale·G [n, n] at [source j, target i] within each block, zero
    between blocks."""
    device = params.device
    n = len(positions)
    pos64 = torch.tensor(np.array(positions, dtype=np.float64), device=device)  # copies: layouts are read-only
    nrm64 = torch.tensor(np.array(normals, dtype=np.float64), device=device)
    coef, prof = profile_arrays(device, torch.float64)
    table_k = torch.zeros((n, n, 3), device=device, dtype=torch.float64)
    table_g = torch.zeros((n, n), device=device, dtype=torch.float64)
    fields = {"pos": pos64, "normal": nrm64, "params": params, "coefficients": coef, "table": prof,
              "out_k": table_k, "out_g": table_g}
    at = 0
    for s, c in zip(sensors, counts):
        StructLaunch(_pair_tables, (c, c), _PairTablesCall, fields, [at, int(s)], device)()
        at += c
    return table_k, table_g


# ---------------------------------------------------------------------------------------------- lattice paths
def orthogonal_grid(layout: ProbeLayout) -> bool:
    """True for a regular grid whose axes t_u, t_v and shared normal a are mutually orthogonal: then P δ = δ for
    every lattice offset and a Gaussian of ‖δ‖ is a product of 1-D Gaussians along the axes."""
    grid = layout.grid
    if grid is None or not grid.regular or grid.shared_normal is None:
        return False
    a, t_u, t_v = grid.shared_normal, grid.t_u, grid.t_v
    return max(abs(t_u @ t_v), abs(a @ t_u), abs(a @ t_v)) <= ORTHOGONAL


class _LatticeGroup:
    """The grid sensors of one layout shape (M, N) summed on the ideal lattice: their depth maps in, their
    displacement out. Subclasses give the three scalar fields [E, S_g, 3, M, N] whose weights are the rows of
    ``basis`` [S_g, 3, 3] (link frame); u = Σ_c field_c basis_c."""

    def __init__(self, members: Sequence[tuple[int, int, ProbeLayout]], exponents: Sequence[float], device):
        m, n = members[0][2].shape
        self.shape = (m, n)
        self.index = torch.as_tensor(np.concatenate([np.arange(first, first + m * n) for _, first, _ in members]),
                                     device=device, dtype=torch.int64)
        self.contiguous_from = int(self.index[0]) if bool(
            (self.index == torch.arange(len(self.index), device=device) + self.index[0]).all()) else None
        self.powered = any(p != 1.0 for p in exponents)

    def set_basis(self, bases: Sequence[np.ndarray], dtype: torch.dtype) -> None:
        device = self.index.device
        self.basis = torch.as_tensor(np.stack(bases), device=device, dtype=dtype)      # [S_g, 3, 3]
        # one sensor whose rows are the link axes: the fields are the link-frame components (interleaved)
        self.identity = len(bases) == 1 and bool(np.array_equal(bases[0], np.eye(3)))
        self._interleaves: dict[tuple, StructLaunch] = {}              # (fields' width L, scaled) → launch (CPU)
        self._member_fields: tuple = (None, None)                        # (fields, fields[:, 0]) of the last call

    def maps(self, depth: torch.Tensor, depth_p: torch.Tensor,
             window: tuple[int, int, int, int] | None = None) -> torch.Tensor:
        """The members' depth maps [E, S_g, 1|2, M, N] (H, and H^p when some exponent is not 1), or only the rows
        r₀:r₁ and columns c₀:c₁ of ``window`` (a view when the members' probes are contiguous and no H^p is needed)."""
        e = depth.shape[0]
        m, n = self.shape
        r0, r1, c0, c1 = (0, m, 0, n) if window is None else window
        sources = [depth, depth_p] if self.powered else [depth]
        if self.contiguous_from is not None:
            a, b = self.contiguous_from, self.contiguous_from + len(self.index)
            maps = [x[:, a:b].view(e, -1, m, n)[..., r0:r1, c0:c1] for x in sources]
        else:
            maps = [x.index_select(1, self.index).view(e, -1, m, n)[..., r0:r1, c0:c1] for x in sources]
        return maps[0][:, :, None] if len(maps) == 1 else torch.stack(maps, 2)

    def emit(self, fields: torch.Tensor, out: torch.Tensor | None,
             scaled: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor | None:
        """u of the members' probes from fields [E, S_g, 3, M, L ≥ N] (the columns past N are left out): written
        into out [E, S_g·M·N, 3] when given, else returned. scaled: (measured [E, M·N, 3], probe gain [E, M·N]),
        given only with out for the one member along the link axes on the CPU (fields contiguous): g·u into
        measured as well (:meth:`_interleave`)."""
        e = fields.shape[0]
        m, n = self.shape
        if scaled is not None or self.identity and out is not None and out.device.type == "cpu" \
                and fields.is_contiguous() and out.is_contiguous():
            self._interleave(fields, out, scaled)
            return None
        fields = fields[..., :n]
        if self.identity:
            if out is None:
                return fields[:, 0].permute(0, 2, 3, 1).reshape(e, -1, 3)
            out.view(e, m, n, 3).permute(0, 3, 1, 2).copy_(fields[:, 0])
            return None
        if len(self.basis) == 1:                                           # one GEMM with the basis rows
            u = torch.matmul(fields.movedim(2, -1).reshape(e, -1, 3), self.basis[0])
        else:
            u = torch.einsum("egcmn,gcd->egmnd", fields, self.basis).reshape(e, -1, 3)
        if out is None:
            return u
        out.copy_(u)
        return None

    def _interleave(self, fields: torch.Tensor, out: torch.Tensor,
                    scaled: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
        """out [E, M·N, 3] ← the link-frame components fields [E, 1, 3, M, L] (contiguous) of the one member, and
        with ``scaled`` (measured, gain) measured ← out · gain, by :data:`_INTERLEAVE_KERNELS` (a launch recorded per
        width L and variant, its tensors rebound every call; the member's view of fields kept while fields is the
        same tensor, as the CPU transforms' output buffer is: a new view would be checked again at every bind)."""
        if self._member_fields[0] is not fields:
            self._member_fields = (fields, fields[:, 0])
        member = self._member_fields[1]
        key = (fields.shape[-1], scaled is not None)
        tensors = {"fields": member, "out": out}
        if scaled is not None:
            tensors.update(measured=scaled[0], gain=scaled[1])
        launch = self._interleaves.get(key)
        if launch is None:
            kernel, call_type = _INTERLEAVE_KERNELS[out.dtype, scaled is not None]
            launch = self._interleaves[key] = StructLaunch(kernel, (member.shape[0], self.shape[0]), call_type,
                                                           tensors, [], out.device)
        else:
            for name, t in tensors.items():
                launch.bind(name, t)
        launch()


class LatticeConvolution(_LatticeGroup):
    """FFT path for the grid sensors of one layout shape (M, N): kernel tables at build, a spectrum per window.

    members: (sensor index, first probe index, layout) with regular planar grids and a shared normal;
    params: [S, 7] float64 parameter table; exponents: each member's p. Call with depth maps H, H^p [E, P] (and
    optionally out, window) → displacement of the members' probes [E, S_g·M·N, 3] (link frame), in the members'
    probe order.

    With the sources inside a window of w_r × w_c rows and columns (H = 0 outside in every member and env; the
    whole grid by default), only the window's maps are transformed, padded to (L_v, L_u) ≥ (M + w_r − 1,
    N + w_c − 1) (fast FFT sizes): every (target, source) row offset y − x' (x' the source row within the window)
    lies in [1 − w_r, M − 1], fewer than L_v values, so the circular convolution is the exact linear one on every
    target when the kernel of that offset sits at (y − x') mod L_v (columns alike). That arrangement, and so its
    spectrum, depends on the window: the build computes the whole grid's, a step the window's (the last one is kept,
    a static contact reuses it).
    """

    def __init__(self, members: Sequence[tuple[int, int, ProbeLayout]], params: torch.Tensor,
                 exponents: Sequence[float], device, dtype: torch.dtype):
        super().__init__(members, exponents, device)
        m, n = self.shape
        coef, table = profile_arrays(device, torch.float64)
        kernels, bases = [], []
        for s, _, layout in members:
            grid = layout.grid
            a = grid.shared_normal
            e1, e2 = _in_plane_frame(a, grid.t_u, grid.t_v)
            iv, iu = np.meshgrid(np.arange(2 * m - 1) - (m - 1), np.arange(2 * n - 1) - (n - 1), indexing="ij")
            offsets = (iu[..., None] * (grid.du * grid.t_u) + iv[..., None] * (grid.dv * grid.t_v))
            offsets_t = torch.as_tensor(offsets, device=device, dtype=torch.float64).contiguous()
            out_k = torch.zeros(offsets.shape, device=device, dtype=torch.float64)
            out_g = torch.zeros(offsets.shape[:2], device=device, dtype=torch.float64)
            StructLaunch(_lattice_tables, offsets.shape[:2], _LatticeTablesCall, {
                "offsets": offsets_t, "params": params, "coefficients": coef, "table": table, "out_k": out_k,
                "out_g": out_g}, [wp.vec3d(*a), s], device)()
            # third field −N: the basis row is +a
            scalars = torch.stack([out_k @ torch.as_tensor(e1, device=device, dtype=torch.float64),
                                   out_k @ torch.as_tensor(e2, device=device, dtype=torch.float64), -out_g])
            kernels.append(scalars * float(params[s, 6]))
            bases.append(np.stack([e1, e2, a]))
        self.kernels = torch.stack(kernels)                                # [S_g, 3, 2M − 1, 2N − 1] at d + (M−1, N−1)
        self.complex_dtype = torch.complex64 if dtype == torch.float32 else torch.complex128
        self._spectra: dict[tuple[int, int, int, int], tuple] = {}        # window → (L_v, L_u, spectra)
        self.whole = (0, m, 0, n)
        self._spectra[self.whole] = self._spectrum(self.whole)
        self._last = self.whole
        self._product: torch.Tensor | None = None                          # spectra × kernel spectra (torch.fft)
        self._transforms: _LatticeTransforms | None = None                 # the CPU's committed transforms
        self._window_view: tuple | None = None                             # (window, H, H^p, their window maps)
        self.set_basis(bases, dtype)

    def _spectrum(self, window: tuple[int, int, int, int]):
        """(L_v, L_u, in-plane and normal spectra [S_g, 2 | 1, L_u/2 + 1, L_v]: v last, so the inverse column pass
        runs along unit strides) of the kernels arranged for sources in ``window``: the
        window's source row r₀ + x' (x' ≥ 0) sits at padded row x', target row y at y; offset y − x' is at
        (y − x') mod L_v and reads the kernel at d = y − x' − r₀ (columns alike)."""
        m, n = self.shape
        r0, r1, c0, c1 = window
        wr, wc = r1 - r0, c1 - c0
        lv = scipy.fft.next_fast_len(m + wr - 1, real=True)
        lu = scipy.fft.next_fast_len(n + wc - 1, real=True)
        k = self.kernels
        padded = k.new_zeros(k.shape[:2] + (lv, lu))
        # rows: y − x' ∈ [0, M) at the head, [1 − w_r, 0) at the tail; kernel row index (M − 1) + d
        rows = [(slice(0, m), slice(m - 1 - r0, 2 * m - 1 - r0)),
                (slice(lv - wr + 1, lv), slice(m - wr - r0, m - 1 - r0))]
        cols = [(slice(0, n), slice(n - 1 - c0, 2 * n - 1 - c0)),
                (slice(lu - wc + 1, lu), slice(n - wc - c0, n - 1 - c0))]
        for to_r, from_r in rows:
            for to_c, from_c in cols:
                padded[..., to_r, to_c] = k[..., from_r, from_c]
        spectra = torch.fft.rfft2(padded).transpose(-1, -2).to(self.complex_dtype).contiguous()
        return lv, lu, spectra[:, :2], spectra[:, 2:]

    def _window_maps(self, depth: torch.Tensor, depth_p: torch.Tensor,
                     window: tuple[int, int, int, int]) -> torch.Tensor:
        """The window's maps [E, S_g, 1|2, w_r, w_c] (:meth:`maps`); with the members' probes contiguous and H^p (when
        needed) at a fixed offset after H in H's storage (ElastomerTaxel's ``depths`` [2, E, P]), one strided view
        of both — no copy — kept while the window and the two tensors stay the same."""
        kept = self._window_view
        if kept is not None and kept[0] == window and kept[1] is depth and kept[2] is depth_p:
            return kept[3]
        gap = depth_p.storage_offset() - depth.storage_offset()
        shared = depth_p.dtype == depth.dtype and depth_p.stride() == depth.stride() and gap >= 0 \
            and depth_p.untyped_storage().data_ptr() == depth.untyped_storage().data_ptr()
        if self.contiguous_from is None or (self.powered and not shared):
            return self.maps(depth, depth_p, window)
        m, n = self.shape
        r0, r1, c0, c1 = window
        row, col = depth.stride()
        view = depth.as_strided(
            (depth.shape[0], len(self.index) // (m * n), 2 if self.powered else 1, r1 - r0, c1 - c0),
            (row, m * n * col, gap if self.powered else 0, n * col, col),
            depth.storage_offset() + (self.contiguous_from + r0 * n + c0) * col)
        self._window_view = (window, depth, depth_p, view)
        return view

    def __call__(self, depth: torch.Tensor, depth_p: torch.Tensor, out: torch.Tensor | None = None,
                 window: tuple[int, int, int, int] | None = None,
                 scaled: tuple[torch.Tensor, torch.Tensor] | None = None):
        """scaled: see :meth:`emit` (one member along the link axes, on the CPU)."""
        m, n = self.shape
        window = self.whole if window is None else tuple(window)
        if window not in self._spectra:                                    # keep the build's and the last window's
            if self._last != self.whole:
                del self._spectra[self._last]
            self._spectra[window] = self._spectrum(window)
        self._last = window
        lv, lu, in_plane, normal = self._spectra[window]
        maps = self._window_maps(depth, depth_p, window)                   # [E, S_g, 1|2, w_r, w_c]
        if maps.device.type == "cpu" and dfti.available():
            key = (maps.shape, lv, lu)
            if self._transforms is None or self._transforms.key != key:    # kept while the window's size holds
                self._transforms = _LatticeTransforms(key, m, in_plane.dtype)
            return self.emit(self._transforms(maps, in_plane, normal), out, scaled)
        spectrum = torch.fft.fft(torch.fft.rfft(maps, n=lu, dim=-1).transpose(-1, -2), n=lv, dim=-1)
        shape = (spectrum.shape[0], in_plane.shape[0], 3) + in_plane.shape[2:]  # [E, S_g, 3, L_u/2 + 1, L_v]
        if self._product is None or self._product.shape != shape:         # reused while the window's size holds
            self._product = spectrum.new_empty(shape)
        _multiply(_product_views(spectrum, self._product), in_plane, normal)
        # the target rows' spectra [E, S_g, 3, M, L_u/2 + 1], contiguous: the row pass gives contiguous fields
        rows = torch.fft.ifft(self._product, dim=-1)[..., :m].transpose(-1, -2).contiguous()
        return self.emit(torch.fft.irfft(rows, n=lu, dim=-1), out, scaled)


def _product_views(spectrum: torch.Tensor, product: torch.Tensor) -> tuple:
    """The operands of :func:`_multiply` in the maps' spectra [E, S_g, 1|2, L_u/2 + 1, L_v] and the product
    [E, S_g, 3, ...]: (H's spectrum, channels 1–2), (H^p's spectrum — H's when there is one map —, channel 3)."""
    return (spectrum[:, :, :1], product[:, :, :2]), (spectrum[:, :, -1:], product[:, :, 2:])


def _multiply(views: tuple, in_plane: torch.Tensor, normal: torch.Tensor) -> None:
    """product ← the maps' spectra × the kernels' (in_plane [S_g, 2, ...], normal [S_g, 1, ...]) into the views of
    :func:`_product_views`: channels 1–2 (in-plane) take H's spectrum, channel 3 (normal) H^p's, each broadcast over
    its channels."""
    (h, planar), (h_p, across) = views
    torch.mul(h, in_plane, out=planar)
    torch.mul(h_p, normal, out=across)


class _LatticeTransforms:
    """The FFT path's transforms on the CPU for one size of window maps (key: (their shape [E, S_g, 1|2, w_r, w_c],
    L_v, L_u)), committed once (:class:`~.dfti.BatchedFFT`) between buffers kept here; each step runs torch.fft's
    sequence of :meth:`LatticeConvolution.__call__` with the same transforms, so the same values: the maps
    zero-padded to L_u columns → their rows' half spectra, transposed and zero-padded to L_v → spectra
    [E, S_g, 1|2, L_u/2 + 1, L_v] → × kernel spectra → inverse along v → its first M rows, transposed → inverse along
    u → fields [E, S_g, 3, M, L_u] (returned; overwritten by the next call). Both transposes are a native loop
    (:data:`_TRANSPOSE_KERNELS`, exact copies; torch's strided copy is several times slower on the half spectra and
    1.1–1.2× slower on the inverse's rows). A call whose maps hold the bits of the last call's (kept in the padded
    window) with the same kernel spectra returns the fields it holds without transforming anything (a contact at
    rest: those transforms would give the same values)."""

    def __init__(self, key: tuple, m: int, complex_dtype: torch.dtype):
        (e, s, c, wr, wc), lv, lu = key
        self.key = key
        half = lu // 2 + 1
        real_dtype = torch.float32 if complex_dtype == torch.complex64 else torch.float64
        self.padded = torch.zeros((e, s, c, wr, lu), dtype=real_dtype)
        self.half = torch.empty((e, s, c, wr, half), dtype=complex_dtype)
        self.columns = torch.zeros((e, s, c, half, lv), dtype=complex_dtype)
        # two work buffers of the product's size, each holding one stage's values at a time (a smaller footprint
        # stays in cache): spectra → inverse → fields, and product → rows (M ≤ L_v, M·L_u reals ≤ (L_u/2 + 1)·L_v)
        first, second = (torch.empty(e * s * 3 * half * lv, dtype=complex_dtype) for _ in range(2))
        self.spectrum = first[:e * s * c * half * lv].view(e, s, c, half, lv)
        self.inverse = first.view(e, s, 3, half, lv)
        self.fields = torch.view_as_real(first).view(-1)[:e * s * 3 * m * lu].view(e, s, 3, m, lu)
        self.product = second.view(e, s, 3, half, lv)
        self.rows = second[:e * s * 3 * m * half].view(e, s, 3, m, half)
        self.row_pass = dfti.BatchedFFT("rfft", lu, self.padded, self.half)
        self.column_pass = dfti.BatchedFFT("fft", lv, self.columns, self.spectrum)
        self.column_inverse = dfti.BatchedFFT("ifft", lv, self.product, self.inverse)
        self.row_inverse = dfti.BatchedFFT("irfft", lu, self.rows, self.fields)
        self.to_columns = _transpose(self.half, self.columns)
        self.to_rows = _transpose(self.inverse, self.rows)
        # the views of every step, made once
        self.window = self.padded[..., :wc]
        self.products = _product_views(self.spectrum, self.product)
        self.bits = torch.int32 if real_dtype == torch.float32 else torch.int64      # maps compared bit for bit
        self.window_bits = self.window.view(self.bits)
        self.held: tuple | None = None                  # the kernel spectra of the fields held (None: none held)

    def __call__(self, maps: torch.Tensor, in_plane: torch.Tensor, normal: torch.Tensor) -> torch.Tensor:
        held = self.held
        if held is not None and held[0] is in_plane and held[1] is normal \
                and torch.equal(self.window_bits, maps.view(self.bits)):
            return self.fields
        self.held = None
        self.window.copy_(maps)
        self.row_pass()
        self.to_columns()
        self.column_pass()
        _multiply(self.products, in_plane, normal)
        self.column_inverse()
        self.to_rows()
        self.row_inverse()
        self.held = (in_plane, normal)                  # kept alive here: a later spectrum cannot take their ids
        return self.fields


def _transpose(src: torch.Tensor, dst: torch.Tensor) -> StructLaunch:
    """The launch of :data:`_TRANSPOSE_KERNELS` from the complex planes ``src`` [..., R, K] into ``dst`` [..., C, L]
    (contiguous CPU buffers of one complex dtype, equal leading axes, C ≤ K, R ≤ L)."""
    pairs = [torch.view_as_real(x).view((-1,) + x.shape[-2:] + (2,)) for x in (src, dst)]
    kernel, call_type = _TRANSPOSE_KERNELS[pairs[0].dtype]
    return StructLaunch(kernel, (pairs[0].shape[0], 1), call_type, dict(zip(("src", "dst"), pairs)), [], src.device)


class SeparableLattice(_LatticeGroup):
    """Lattice sum of the grid sensors of one shape (M, N) whose kernels factor along the axes (c = 1, so
    K_in = δ G, on an :func:`orthogonal_grid`): with lattice steps Δu, Δv, g_u(k) = exp(−λ_d (kΔu)²) and
    κ_u(k) = kΔu g_u(k) (same along v), the Toeplitz matrices G_u[c, c'] = g_u(c − c') etc. give

        U_u = G_v H K_uᵀ,   U_v = K_v H G_uᵀ,   N = G_v H^p G_uᵀ;   u = dilate_scale (U_u t_u + U_v t_v − N a)

    — the same exact linear convolution as the FFT path, as batched matrix products. Call as LatticeConvolution.
    The products run between views and buffers made once per window (:class:`_SeparableProducts`); on the CPU, maps
    with the bits of the last call's (a contact at rest) reuse its fields, as the FFT path does.
    """

    def __init__(self, members: Sequence[tuple[int, int, ProbeLayout]], params: torch.Tensor,
                 exponents: Sequence[float], device, dtype: torch.dtype):
        super().__init__(members, exponents, device)
        m, n = self.shape

        def toeplitz(count: int, step: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
            d = (np.arange(count)[:, None] - np.arange(count)[None, :]) * step      # target − source
            g = np.exp(-lam * d * d)
            return g, d * g

        right, left_u, left_v, bases = [], [], [], []
        for s, _, layout in members:
            grid = layout.grid
            lam, scale = float(params[s, 0]), float(params[s, 6])
            g_u, k_u = toeplitz(n, grid.du, lam)
            g_v, k_v = toeplitz(m, grid.dv, lam)
            right.append(np.concatenate([k_u.T, g_u.T], 1))                 # H·[K_uᵀ | G_uᵀ]
            left_u.append(scale * g_v)
            left_v.append(scale * k_v)
            bases.append(np.stack([grid.t_u, grid.t_v, grid.shared_normal]))
        kw = dict(device=device, dtype=dtype)
        self.right = torch.as_tensor(np.stack(right), **kw)[None]          # [1, S_g, N, 2N]
        self.left_u = torch.as_tensor(np.stack(left_u), **kw)[None]        # [1, S_g, M, M]
        self.left_v = torch.as_tensor(np.stack(left_v), **kw)[None]
        self.set_basis(bases, dtype)
        self._products: _SeparableProducts | None = None

    def __call__(self, depth: torch.Tensor, depth_p: torch.Tensor, out: torch.Tensor | None = None,
                 window: tuple[int, int, int, int] | None = None,
                 scaled: tuple[torch.Tensor, torch.Tensor] | None = None):
        """As LatticeConvolution; window (r₀, r₁, c₀, c₁): the rows and columns outside it hold H = 0 in every
        member and env, so their (exactly zero) terms are left out of the products. scaled: see :meth:`emit`."""
        m, n = self.shape
        window = (0, m, 0, n) if window is None else tuple(window)
        # the maps as :meth:`maps` makes them (H^p's stacked into a fresh, aligned copy): MKL's float64 products
        # can round differently on operands at other alignments
        maps = self.maps(depth, depth_p, window)                          # [E, S_g, 1|2, w_r, w_c]
        products = self._products
        if products is None or products.window != window or products.shape != maps.shape:
            products = self._products = _SeparableProducts(self, window, maps.shape, maps.dtype, maps.device)
        return self.emit(products(maps), out, scaled)


class _SeparableProducts:
    """The products of a :class:`SeparableLattice` for one window (r₀, r₁, c₀, c₁) and one shape of window maps
    [E, S_g, 1|2, w_r, w_c]: with the weights' window rows and columns,

        along = H [K_uᵀ | G_uᵀ]  (and H^p G_uᵀ when some exponent is not 1),
        fields = [G_v along_K, K_v along_G, −G_v (H^p G_uᵀ)]  [E, S_g, 3, M, N] (returned; overwritten next call).

    Each product is the ``torch.bmm`` that ``torch.matmul`` makes of it (operands batched over E·S_g, the weights
    expanded over the envs), here between views and buffers made once, so the same values without matmul's per-call
    broadcasting and reshaping. On the CPU, maps with the bits of the last call's return the fields held."""

    def __init__(self, lattice: SeparableLattice, window: tuple[int, int, int, int], shape: torch.Size,
                 dtype: torch.dtype, device):
        e, s, _, wr, wc = shape
        m, n = lattice.shape
        r0, r1, c0, c1 = window
        self.window, self.shape, self.powered = window, shape, lattice.powered
        b = e * s

        def batched(weights: torch.Tensor, rows: int, cols: int) -> torch.Tensor:   # [1, S_g, rows, cols]
            return weights.expand(e, s, rows, cols).reshape(b, rows, cols)

        right = lattice.right[..., c0:c1, :]
        self.right = batched(right, wc, 2 * n)
        self.right_g = batched(right[..., n:], wc, n)
        self.left_u = batched(lattice.left_u[..., r0:r1], m, wr)
        self.left_v = batched(lattice.left_v[..., r0:r1], m, wr)
        kw = dict(dtype=dtype, device=device)
        self.along = torch.empty((b, wr, 2 * n), **kw)
        self.along_k, self.along_g = self.along[..., :n], self.along[..., n:]
        self.normal = torch.empty((b, wr, n), **kw) if self.powered else self.along_g
        self.parts = [torch.empty((b, m, n), **kw) for _ in range(3)]
        self.part_maps = [p.view(e, s, m, n) for p in self.parts]
        self.fields = torch.empty((e, s, 3, m, n), **kw)
        self.bits = torch.int32 if dtype == torch.float32 else torch.int64
        self.held = torch.empty(shape, **kw) if torch.device(device).type == "cpu" else None
        self.holds = False
        """Whether :attr:`held` holds the maps of the fields (CPU only: the comparison would wait for a GPU)."""

    def __call__(self, maps: torch.Tensor) -> torch.Tensor:
        """fields [E, S_g, 3, M, N] of the window maps [E, S_g, 1|2, w_r, w_c]."""
        if self.holds and torch.equal(self.held.view(self.bits), maps.view(self.bits)):
            return self.fields
        b, (_, _, _, wr, wc) = len(self.along), self.shape
        torch.bmm(maps[:, :, 0].reshape(b, wr, wc), self.right, out=self.along)
        if self.powered:
            torch.bmm(maps[:, :, 1].reshape(b, wr, wc), self.right_g, out=self.normal)
        torch.bmm(self.left_u, self.along_k, out=self.parts[0])
        torch.bmm(self.left_v, self.along_g, out=self.parts[1])
        torch.bmm(self.left_u, self.normal, out=self.parts[2]).neg_()
        torch.stack(self.part_maps, 2, out=self.fields)
        if self.held is not None:
            self.held.copy_(maps)
            self.holds = True
        return self.fields


# ---------------------------------------------------------------------------------------------- direct path
class _DirectSum:
    """Direct path for the sensors ``members``: per env, the probes with H > 0 are compacted per sensor; the sum
    weights their rows of the dense pair tables (built once; blocks of one sensor, zero elsewhere; on the CPU one
    native loop, :class:`~.table_sum.TableSum`), or — beyond DENSE_LIMIT — reads the rows of the sources in contact
    cached on the CPU (:class:`~.source_rows.SourceRows`) or, on CUDA and when they do not fit, evaluates the kernels
    per step in a warp kernel. Call with H, H^p [E, P]: writes u of the members' probes into ``field`` [E, P, 3]
    (the per-step sums into ``field`` itself when the members' probes are all the batch's, in order)."""

    def __init__(self, members: Sequence[int], layouts: Sequence[ProbeLayout], starts: Sequence[int],
                 params: torch.Tensor, local_pos: torch.Tensor, local_normal: torch.Tensor, field: torch.Tensor):
        device, dtype = local_pos.device, local_pos.dtype
        e = field.shape[0]
        self.field = field
        counts = [layouts[s].n for s in members]
        at = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        n = int(at[-1])
        self.probes = torch.as_tensor(np.concatenate([np.arange(starts[s], starts[s] + c)
                                                      for s, c in zip(members, counts)]), device=device)
        self.normal = local_normal[self.probes].contiguous()
        self.compaction = SegmentCompaction(at[:-1], counts, e, device, dtype)
        self.depth = torch.zeros((e, n), device=device, dtype=dtype)
        self.depth_p = torch.zeros((e, n), device=device, dtype=dtype)
        self.dense = 4 * n * n <= DENSE_LIMIT
        self.table_sum = None
        if self.dense:
            table_k, table_g = pair_tables(np.concatenate([layouts[s].flat_positions for s in members]),
                                           np.concatenate([layouts[s].flat_normals for s in members]), members,
                                           counts, params)
            self.table_k = table_k.reshape(n, 3 * n).to(dtype)                        # [source, 3·target]
            self.table_g = table_g.to(dtype)                                           # [source, target]
            if device.type == "cpu" and n > FULL_SUM_LIMIT:
                self.table_sum = TableSum(at, self.probes, self.table_k, self.table_g, self.normal, field)
        else:
            # the members' probes being the batch's, in order, the per-step sums write the field itself
            whole = n == field.shape[1] and bool((self.probes == torch.arange(n, device=device)).all())
            self.out = field if whole else torch.zeros((e, n, 3), device=device, dtype=dtype)
            self.selected = torch.zeros((e, n), device=device, dtype=torch.bool)
            pos, sensors, table = local_pos[self.probes].contiguous(), list(members), params.to(dtype)
            coef, prof = profile_arrays(device, dtype)
            kernel, call_type = _DIRECT_SUM_KERNELS[dtype]
            self.launch = StructLaunch(kernel, (e, n), call_type, {
                "pos": pos, "normal": self.normal, "segment": self.compaction.segment,
                "sensor": torch.as_tensor(sensors, device=device, dtype=torch.int32),
                "params": table, "coefficients": coef, "table": prof, "depth": self.depth,
                "depth_p": self.depth_p, "order": self.compaction.order, "first": self.compaction.starts,
                "count": self.compaction.count, "out": self.out}, [], device)
            self.rows = SourceRows(
                pos, self.normal, self.compaction.segment, sensors, table, self.depth, self.depth_p,
                self.compaction.order, self.compaction.starts, self.compaction.count, self.out) \
                if device.type == "cpu" else None

    def __call__(self, depth: torch.Tensor, depth_p: torch.Tensor) -> None:
        if self.table_sum is not None:
            self.table_sum(depth, depth_p)
            return
        u = self._sum(depth, depth_p)
        if u is not self.field:
            self.field.index_copy_(1, self.probes, u)

    def _sum(self, depth: torch.Tensor, depth_p: torch.Tensor) -> torch.Tensor:
        """u of the members' probes [E, P_d, 3] (in ``probes`` order), by torch ops or the per-step kernels."""
        torch.index_select(depth, 1, self.probes, out=self.depth)
        torch.index_select(depth_p, 1, self.probes, out=self.depth_p)
        e = depth.shape[0]
        if self.dense and self.depth.shape[1] <= FULL_SUM_LIMIT:                # sources with H = 0 add exactly 0
            u = torch.matmul(self.depth, self.table_k).view(e, -1, 3)
            return u - torch.matmul(self.depth_p, self.table_g)[..., None] * self.normal
        if not self.dense:
            selected = torch.gt(self.depth, 0, out=self.selected)
            self.compaction(selected)
            if self.rows is None or not self.rows(selected):
                self.launch()
            return self.out
        selected = self.depth > 0
        self.compaction(selected)
        index, valid = self.compaction.slots()
        if index.shape[-1] == 0:
            return torch.zeros_like(self.normal).expand(e, -1, -1)
        index = index.reshape(e, -1)
        valid = valid.reshape(e, -1).to(depth.dtype)
        h = torch.gather(self.depth, 1, index) * valid                               # [E, S·K]
        hp = torch.gather(self.depth_p, 1, index) * valid
        # Σ_k h_k · table[index_k]: weighted sums of table rows without materialising them
        u = torch.nn.functional.embedding_bag(index, self.table_k, per_sample_weights=h, mode="sum").view(e, -1, 3)
        normal = torch.nn.functional.embedding_bag(index, self.table_g, per_sample_weights=hp, mode="sum")
        return u - normal[..., None] * self.normal


# ---------------------------------------------------------------------------------------------- both paths
class DilationField:
    """The dilation field of a batch's ElastomerTaxel sensors, written into a persistent ``out`` [E, P, 3].

    layouts / starts: per sensor (first probe index in the batch); params: one :class:`DilationParameters` per
    sensor; probe positions/normals [P, 3] (link frame, working dtype); where: error/log prefix per sensor;
    elsewhere: sensors whose probes this field leaves untouched (evaluated by another path). ``params`` holds the
    [S, 7] float64 parameter table of :func:`dilation_pair`.
    """

    def __init__(self, layouts: Sequence[ProbeLayout], starts: Sequence[int], params: Sequence[DilationParameters],
                 local_pos: torch.Tensor, local_normal: torch.Tensor, out: torch.Tensor, where: Sequence[str],
                 elsewhere: Sequence[int] = ()):
        device, dtype = out.device, out.dtype
        e, p, _ = out.shape
        self.out = out
        self.params = table64 = torch.tensor([prm.row() for prm in params], device=device, dtype=torch.float64)
        lattice: dict[tuple, list] = {}
        direct = []
        for s, (layout, first) in enumerate(zip(layouts, starts)):
            if s in elsewhere:
                continue
            grid = layout.grid
            if grid is not None and grid.regular and grid.shared_normal is not None:
                separable = params[s].compressibility == 1.0 and orthogonal_grid(layout)
                lattice.setdefault((layout.shape, separable), []).append((s, first, layout))
            else:
                direct.append(s)
                log.info("%s: ElastomerTaxel dilation by the direct path (layout %s is not a regular planar grid "
                         "with one shared normal)", where[s], layout.shape)
        self.groups = [(SeparableLattice if separable else LatticeConvolution)(
            members, table64, [params[s].exponent for s, _, _ in members], device, dtype)
            for (_, separable), members in lattice.items()]
        self.whole = len(self.groups) == 1 and not direct and len(self.groups[0].index) == p \
            and self.groups[0].contiguous_from == 0
        self.direct = _DirectSum(direct, layouts, starts, table64, local_pos, local_normal, out) if direct else None
        # windows of the lattice groups on the CPU (where reading them back costs nothing): the indentation kernel
        # raises bounds[s] to (M − r, r + 1, N − c, c + 1) of every probe with H > 0 (keys of other probes are 0)
        self.windows = [(g, [s for s, _, _ in members]) for g, members in enumerate(lattice.values())
                        if device.type == "cpu"]
        key = np.zeros((p, 4), np.int32)
        for _, members in self.windows:
            for s in members:
                m, n = layouts[s].shape
                r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
                key[starts[s]:starts[s] + m * n] = np.stack([m - r, r + 1, n - c, c + 1], -1).reshape(-1, 4)
        self.bound_key = torch.as_tensor(key, device=device)
        self.bounds = torch.zeros((len(layouts), 4), dtype=torch.int32, device=device)
        self.shapes = [layout.shape for layout in layouts]
        # one lattice sensor (FFT or separable path) along the link axes on the CPU: u_dil can be emitted straight
        # into staging buffers
        self.stages = self.whole and device.type == "cpu" and self.groups[0].identity

    def __call__(self, depth: torch.Tensor, depth_p: torch.Tensor,
                 staged: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None) -> None:
        """Write u_dil [E, P, 3] into ``out`` from this step's H and H^p (the buffers given at build) and, when there
        are windows, ``bounds`` (cleared before the step's indentation kernel raised them). staged (only when
        :attr:`stages`): (ground truth, measured [E, P, 3], probe gain [E, P]), contiguous: u_dil into the first and
        g·u_dil into the second instead (``out`` is left as it is)."""
        if self.direct is not None:
            self.direct(depth, depth_p)
        windows = self._windows() if self.windows else {}
        for g, group in enumerate(self.groups):
            window = {"window": windows[g]} if g in windows else {}
            if staged is not None:
                group(depth, depth_p, staged[0], scaled=staged[1:], **window)
            elif self.whole:
                group(depth, depth_p, self.out, **window)
            else:
                self.out.index_copy_(1, group.index, group(depth, depth_p, **window))

    def _windows(self) -> dict[int, tuple[int, int, int, int]]:
        """group → (r₀, r₁, c₀, c₁) of each lattice group: the rows and columns where some member has H > 0 in some
        env (one row and column when none has: their products are zero)."""
        bounds = self.bounds.tolist()
        windows = {}
        for g, members in self.windows:
            m, n = self.shapes[members[0]]
            lo_r, hi_r, lo_c, hi_c = bounds[members[0]] if len(members) == 1 else \
                [max(column) for column in zip(*(bounds[s] for s in members))]
            windows[g] = (m - lo_r, hi_r, n - lo_c, hi_c) if hi_r > 0 else (0, 1, 0, 1)
        return windows
