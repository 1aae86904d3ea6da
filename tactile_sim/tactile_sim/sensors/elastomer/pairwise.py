"""ElastomerTaxel field of small layouts (docs/models/elastomer_taxel.md#dilation) as per-probe pair sums, dilation and
shear in one kernel.

For a batch whose sensors are small (n_envs · P_s² ≤ ``PAIRWISE_WORK``), a handful of torch operations per step
(lattice products, FFTs, compaction) would cost more than the sums themselves. Here one thread per env and target
probe i (several on the CPU) adds

    u_i = Σ_{sources j of i's sensor, H_j > 0} [K(i, j) H_j − a_i G(i, j) H_j^p]
        + P_i Σ_{anchored samples k, D_k > 0} c_k exp(−λ_s ‖P_i(p_i − q̃_k)‖²)

with the dense pair tables K = dilate_scale·K_in, G = dilate_scale·G of :func:`~.pair_kernel.dilation_pair`
(built once in float64), and c_k the weighted drags compacted by :class:`~.shear.ShearAnchors`. The sums
are the same as the lattice and direct paths': regular planar grids with a shared normal use the ideal lattice
positions and that normal for the dilation (as the FFT path), orthogonal grids use the ideal lattice for the shear
(as the separable shear), every other layout its own positions and normals.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
import warp as wp

from ...geometry.struct_launch import StructLaunch, warp_struct
from ...geometry.warp_kernels import unique_kernel
from .dilation import orthogonal_grid, pair_tables
from ..layout.probe_layout import ProbeLayout
from ..points.probe_set import WP_TYPES

PAIRWISE_WORK = 1 << 16
"""A sensor is evaluated here when n_envs · P_s² is at most this (P_s: its probe count)."""

CPU_TARGETS_PER_THREAD = 16
"""Target probes per kernel thread (chunk) on the CPU (one on CUDA): warp copies the call struct once per thread,
and a chunk scans its sensor's sources once."""


def _shear_loop(dtype: torch.dtype) -> str:
    """C++ body of the shear sum of the targets [r0, r1) of chunk t in env e (see :func:`_pairwise_kernel`), added to
    ``out``: warp's own vector functions in the kernel language's order, so the same values as warp code."""
    real = "float" if dtype == torch.float32 else "double"
    return f"""
    typedef wp::vec_t<3, {real}> vec3;
    const int s = call.sensor.data[t];
    const int count = call.count.data[static_cast<size_t>(e) * call.count.shape[1] + s];
    const size_t at = (static_cast<size_t>(e) * call.samples.shape[1] + s) * call.samples.shape[2];
    const vec3* q = call.samples.data + at;
    const vec3* c = call.drags.data + at;
    vec3* out = call.out.data + static_cast<size_t>(e) * call.out.shape[1];
    const {real} lam = call.lambda_s.data[t];
    for (int r = r0; r < r1; ++r) {{
        const vec3 b = call.shear_normal.data[r];
        const vec3 p = call.shear_pos.data[r];
        vec3 drag = wp::sub(call.normal.data[r0], call.normal.data[r0]);
        for (int k = 0; k < count; ++k) {{
            vec3 d = wp::sub(p, q[k]);
            d = wp::sub(d, wp::mul(wp::dot(b, d), b));
            drag = wp::add(drag, wp::mul(wp::exp(wp::mul(wp::neg(lam), wp::dot(d, d))), c[k]));
        }}
        const int i = call.probe.data[r];
        out[i] = wp::add(out[i], wp::sub(drag, wp::mul(wp::dot(b, drag), b)));
    }}
"""


def _pairwise_kernel(dtype: torch.dtype):
    """(kernel, call struct type): u of the pairwise targets of chunk t (targets ``chunk[t]`` … ``chunk[t + 1]``, all of
    one sensor) in env e, written to ``out``. The chunk's sources are scanned once: each source with H > 0 is added to
    every target of the chunk, in source order (the sum of each target is the same as a per-target loop); then each
    target's shear sum over the compacted samples, in a native loop (:func:`_shear_loop`)."""
    f, v, _ = WP_TYPES[dtype]
    i32 = wp.array(dtype=wp.int32)
    call_type = warp_struct(f"ElastomerPairwiseCall_{f.__name__}", {
        "chunk": i32, "sensor": i32, "first": i32, "source": i32, "length": i32, "lambda_s": wp.array(dtype=f),
        "probe": i32, "normal": wp.array(dtype=v), "table_k": wp.array2d(dtype=v), "table_g": wp.array2d(dtype=f),
        "shear_pos": wp.array(dtype=v), "shear_normal": wp.array(dtype=v), "depth": wp.array2d(dtype=f),
        "depth_p": wp.array2d(dtype=f), "samples": wp.array3d(dtype=v), "drags": wp.array3d(dtype=v),
        "count": wp.array2d(dtype=wp.int32), "out": wp.array2d(dtype=v)}, __name__)
    name = f"elastomer_pairwise_{f.__name__}"

    def shear(call, e, t, r0, r1): ...

    shear.__name__ = f"{name}_shear"
    shear.__annotations__ = {"call": call_type, "e": int, "t": int, "r0": int, "r1": int}
    shear_sum = wp.func_native(_shear_loop(dtype))(shear)

    def kernel(call: Any):
        e, t = wp.tid()
        r0 = call.chunk[t]
        r1 = call.chunk[t + 1]
        lam = call.lambda_s[t]
        zero = lam - lam
        nothing = call.normal[r0] - call.normal[r0]
        for r in range(r0, r1):
            call.out[e, call.probe[r]] = nothing
        first = call.first[t]
        source = call.source[t]
        for m in range(call.length[t]):
            h = call.depth[e, source + m]
            if h > zero:
                hp = call.depth_p[e, source + m]
                for r in range(r0, r1):
                    i = call.probe[r]
                    g = call.table_g[r, first + m] * hp
                    call.out[e, i] = call.out[e, i] + h * call.table_k[r, first + m] - g * call.normal[r]
        shear_sum(call, e, t, r0, r1)

    kernel.__name__ = name
    kernel.__annotations__ = {"call": call_type}
    return unique_kernel(kernel), call_type


_KERNELS = {dt: _pairwise_kernel(dt) for dt in WP_TYPES}


def pairwise_sensors(layouts: Sequence[ProbeLayout], n_envs: int) -> list[int]:
    """The sensors (indices) small enough for :class:`PairwiseField`."""
    return [s for s, layout in enumerate(layouts) if n_envs * layout.n * layout.n <= PAIRWISE_WORK]


def _ideal_lattice(layout: ProbeLayout) -> np.ndarray:
    """Ideal lattice positions origin + c Δu t_u + r Δv t_v of a regular grid, flat row-major (P, 3) m."""
    grid = layout.grid
    m, n = layout.shape[:2]
    r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    return (grid.origin + c[..., None] * (grid.du * grid.t_u) + r[..., None] * (grid.dv * grid.t_v)).reshape(-1, 3)


class PairwiseField:
    """Dilation and shear of the sensors ``members`` of a batch by per-probe pair sums, written into ``out``.

    layouts / starts: per sensor of the batch (link frame; first probe index); params: [S, 7] float64 table of
    :meth:`~.dilation.DilationParameters.row`; lambda_s: per sensor (m⁻²); depth, depth_p: the batch's
    persistent H, H^p [E, P]; samples, drags, count: the compacted link-frame sample positions and weighted drags
    [E, S, K, 3] and their counts [E, S] (:class:`~.shear.ShearAnchors`; zero counts without shear);
    out [E, P, 3]. Calling writes u of every member probe (other probes untouched).
    """

    def __init__(self, members: Sequence[int], layouts: Sequence[ProbeLayout], starts: Sequence[int],
                 params: torch.Tensor, lambda_s: Sequence[float], depth: torch.Tensor, depth_p: torch.Tensor,
                 samples: torch.Tensor, drags: torch.Tensor, count: torch.Tensor, out: torch.Tensor):
        device, dtype = out.device, out.dtype
        counts = [layouts[s].n for s in members]
        at = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        n = int(at[-1])
        dil_pos, dil_normal, shear_pos, shear_normal = [], [], [], []
        for s in members:
            layout = layouts[s]
            grid = layout.grid
            lattice = grid is not None and grid.regular and grid.shared_normal is not None
            dil_pos.append(_ideal_lattice(layout) if lattice else layout.flat_positions)
            dil_normal.append(np.tile(grid.shared_normal, (layout.n, 1)) if lattice else layout.flat_normals)
            shear_lattice = orthogonal_grid(layout)
            shear_pos.append(_ideal_lattice(layout) if shear_lattice else layout.flat_positions)
            shear_normal.append(dil_normal[-1] if shear_lattice else layout.flat_normals)
        table_k, table_g = pair_tables(np.concatenate(dil_pos), np.concatenate(dil_normal), members, counts, params)

        def ints(x) -> torch.Tensor:
            return torch.as_tensor(np.asarray(x, np.int64), device=device, dtype=torch.int32)

        def floats(x) -> torch.Tensor:
            return torch.as_tensor(np.asarray(x, np.float64), device=device, dtype=dtype).contiguous()

        self.probes = np.concatenate([np.arange(starts[s], starts[s] + c) for s, c in zip(members, counts)])
        per_chunk = CPU_TARGETS_PER_THREAD if device.type == "cpu" else 1
        chunks = [(k, a0) for k, s in enumerate(members) for a0 in range(at[k], at[k + 1], per_chunk)]
        member = np.array([k for k, _ in chunks], np.int64)
        kernel, call_type = _KERNELS[dtype]
        self.launch = StructLaunch(kernel, (out.shape[0], len(chunks)), call_type, {
            "chunk": ints([a0 for _, a0 in chunks] + [n]), "sensor": ints(np.asarray(members)[member]),
            "first": ints(at[member]), "source": ints(np.asarray([starts[s] for s in members])[member]),
            "length": ints(np.asarray(counts)[member]),
            "lambda_s": floats(np.asarray([lambda_s[s] for s in members], np.float64)[member]),
            "probe": ints(self.probes), "normal": floats(np.concatenate(dil_normal)),
            "table_k": table_k.transpose(0, 1).to(dtype).contiguous(),
            "table_g": table_g.transpose(0, 1).to(dtype).contiguous(),
            "shear_pos": floats(np.concatenate(shear_pos)), "shear_normal": floats(np.concatenate(shear_normal)),
            "depth": depth, "depth_p": depth_p, "samples": samples, "drags": drags, "count": count, "out": out}, [],
            device)

    def __call__(self) -> None:
        self.launch()
