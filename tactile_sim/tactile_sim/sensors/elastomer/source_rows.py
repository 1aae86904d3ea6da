"""ElastomerTaxel direct path of large layouts on the CPU (docs/models/elastomer_taxel.md#kernels): the pair-table
rows of the sources in contact, evaluated when a source comes into contact and kept while it stays.

The direct sum of target i is Σ over the compacted sources j of its sensor (in source order) of
dilate_scale·(K_in(i, j) H_j − a_i G(i, j) H_j^p). K_in and G depend only on the link-frame layout, so the row of a
source — (K_in, G) at every target of its sensor — is evaluated once, when the source comes into contact in some
env, by :func:`~.pair_kernel.dilation_pair` (the function, dtype and offsets of the per-step kernel, so the same
values), and read again while it stays in contact. The sum reads the rows in a native loop over the targets of a
chunk that the compiler vectorises (a whole chunk with a constant trip count, so its sums stay in registers across
the sources); every operation is the per-step kernel's, in its order and without fused multiply-adds, so each partial
sum — and u — is the per-step kernel's, bit for bit. A row whose K_z are all +0 (a flat sensor's in-plane kernels) is
summed with the constant +0 in their place, the same products, and the K_z are stored last in the row so that its
read skips them: a quarter less of the rows to stream.

Rows live in slots, ``ROW_CACHE_LIMIT`` elements in all (4 per pair, each slot a row over all direct probes, stored
by chunk: the rows a thread reads are contiguous): a source coming into contact takes the free slot whose source left
contact longest ago (a slot is free when its source is in contact in no env). A step whose sources in contact in some
env do not all fit in the slots is left to the caller (the per-step evaluation of every pair), as are the rows on
CUDA, where the per-step evaluation is fast.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
import warp as wp

from ...geometry.struct_launch import StructLaunch, warp_struct
from ...geometry.warp_kernels import native_grid_kernel, unique_kernel
from .pair_kernel import dilation_pair, profile_arrays
from ..points.probe_set import WP_TYPES

ROW_CACHE_LIMIT = 2**24
"""Elements of the cached rows (4 per pair; 64 MB in float32): with n direct probes in chunks of TARGETS_PER_THREAD,
⌊ROW_CACHE_LIMIT / 4n'⌋ slots (n' = n padded to whole chunks per sensor; 1024 slots at n = 4096), at most n."""

TARGETS_PER_THREAD = 64
"""Targets (of one sensor) per kernel thread: the slice of a row one thread reads stays in cache across the envs."""

_NO_FUSED_MULTIPLY_ADD = """
#if !defined(__CUDA_ARCH__)
#pragma clang fp contract(off)
#define TARGET_LOOP _Pragma("clang loop vectorize(enable)")
#else
#define TARGET_LOOP
#endif
"""
"""C++ source for the start of the native sum: no fused multiply-adds (warp's per-step kernel has none in its sums),
and ``TARGET_LOOP`` to put before the vectorised loop over a chunk's targets."""


def _fill_kernel(dtype: torch.dtype):
    """(kernel, call struct type) over chunks of targets: the rows of the ``new_count[0]`` sources ``new_source`` into
    slots ``new_slot`` — (K_in, G) of :func:`dilation_pair` at ``rows[c, slot, (0, 1, 3) | 2, i − chunk[c]]`` for every
    target i of chunk c in the source's sensor (probe indices into the direct probes)."""
    f, v, _ = WP_TYPES[dtype]
    i32 = wp.array(dtype=wp.int32)
    call_type = warp_struct(f"ElastomerSourceRowsFillCall_{f.__name__}", {
        "pos": wp.array(dtype=v), "normal": wp.array(dtype=v), "segment": wp.array(dtype=wp.int64),
        "sensor": i32, "params": wp.array2d(dtype=f), "coefficients": wp.array2d(dtype=f),
        "table": wp.array(dtype=f), "chunk": i32, "chunk_segment": i32, "new_count": i32, "new_source": i32,
        "new_slot": i32, "rows": wp.array4d(dtype=f)}, __name__)

    def kernel(call: Any):
        c = wp.tid()
        t = call.chunk_segment[c]
        s = call.sensor[t]
        for q in range(call.new_count[0]):
            j = call.new_source[q]
            if int(call.segment[j]) == t:
                slot = call.new_slot[q]
                i0 = call.chunk[c]
                for i in range(i0, call.chunk[c + 1]):
                    k, g = dilation_pair(call.pos[i] - call.pos[j], call.normal[i], call.params, s,
                                         call.coefficients, call.table)
                    call.rows[c, slot, 0, i - i0] = k[0]
                    call.rows[c, slot, 1, i - i0] = k[1]
                    call.rows[c, slot, 2, i - i0] = g
                    call.rows[c, slot, 3, i - i0] = k[2]

    kernel.__name__ = f"elastomer_source_rows_fill_{f.__name__}"
    kernel.__annotations__ = {"call": call_type}
    return unique_kernel(kernel), call_type


def _sum_loop(dtype: torch.dtype) -> str:
    """C++ body of the native sum of chunk c in env e (see :func:`_sum_kernel`)."""
    real = "float" if dtype == torch.float32 else "double"
    return _NO_FUSED_MULTIPLY_ADD + f"""
    const int n = call.depth.shape[1];
    const int i0 = call.chunk.data[c];
    const int len = call.chunk.data[c + 1] - i0;
    const int t = call.chunk_segment.data[c];
    const {real} scale = call.params.data[call.sensor.data[t] * call.params.shape[1] + 6];
    const int64_t begin = call.first.data[t];
    const int64_t count = call.count.data[(int64_t)e * call.count.shape[1] + t];
    const int64_t* order = call.order.data + (int64_t)e * n + begin;
    const {real}* depth = call.depth.data + (int64_t)e * n;
    const {real}* depth_p = call.depth_p.data + (int64_t)e * n;
    const {real}* ax = call.normal_t.data + i0;
    const {real}* ay = ax + n;
    const {real}* az = ay + n;
    const {real}* rows = call.rows.data + (int64_t)c * call.rows.shape[1] * 4 * {TARGETS_PER_THREAD};
    {real} ux[{TARGETS_PER_THREAD}], uy[{TARGETS_PER_THREAD}], uz[{TARGETS_PER_THREAD}];
    for (int r = 0; r < len; ++r) {{ ux[r] = uy[r] = uz[r] = static_cast<{real}>(0); }}
    const bool* planar = call.planar.data + (int64_t)c * call.planar.shape[1];
    auto sources = [&](const int width) {{
        for (int64_t m = 0; m < count; ++m) {{
            const int64_t j = order[m];
            const int slot = call.slot.data[j];
            const {real} h = depth[j];
            const {real} hp = depth_p[j];
            const {real}* kx = rows + (int64_t)slot * 4 * {TARGETS_PER_THREAD};
            const {real}* ky = kx + {TARGETS_PER_THREAD};
            const {real}* g = ky + {TARGETS_PER_THREAD};
            const {real}* kz = g + {TARGETS_PER_THREAD};
            if (planar[slot]) {{  // every K_z of the row is +0: h·(+0) without reading it
                const {real} zero = static_cast<{real}>(0);
                TARGET_LOOP
                for (int r = 0; r < width; ++r) {{
                    const {real} ghp = g[r] * hp;
                    ux[r] = ux[r] + scale * (h * kx[r] - ghp * ax[r]);
                    uy[r] = uy[r] + scale * (h * ky[r] - ghp * ay[r]);
                    uz[r] = uz[r] + scale * (h * zero - ghp * az[r]);
                }}
            }} else {{
                TARGET_LOOP
                for (int r = 0; r < width; ++r) {{
                    const {real} ghp = g[r] * hp;
                    ux[r] = ux[r] + scale * (h * kx[r] - ghp * ax[r]);
                    uy[r] = uy[r] + scale * (h * ky[r] - ghp * ay[r]);
                    uz[r] = uz[r] + scale * (h * kz[r] - ghp * az[r]);
                }}
            }}
        }}
    }};
    if (len == {TARGETS_PER_THREAD}) {{
        sources({TARGETS_PER_THREAD});  // a whole chunk: a constant width, the sums kept in registers
    }} else {{
        sources(len);
    }}
    {real}* out = reinterpret_cast<{real}*>(call.out.data) + ((int64_t)e * n + i0) * 3;
    for (int r = 0; r < len; ++r) {{ out[3 * r] = ux[r]; out[3 * r + 1] = uy[r]; out[3 * r + 2] = uz[r]; }}
"""


def _sum_kernel(dtype: torch.dtype):
    """(kernel, call struct type) over (chunks, E): u[e, i] of the chunk's targets = Σ over the compacted sources j of
    its sensor (``order``, ``first``, ``count`` of the direct path's compaction, all cached in slots ``slot[j]``) of
    dilate_scale·(K_in H_j − a_i G H_j^p), the per-step kernel's operations on the cached rows. ``normal_t``: the
    target normals as [3, n]; the envs of one chunk are consecutive threads (its rows stay in cache)."""
    f, v, _ = WP_TYPES[dtype]
    i32 = wp.array(dtype=wp.int32)
    call_type = warp_struct(f"ElastomerSourceRowsSumCall_{f.__name__}", {
        "chunk": i32, "chunk_segment": i32, "sensor": i32, "params": wp.array2d(dtype=f),
        "normal_t": wp.array2d(dtype=f), "slot": i32, "rows": wp.array4d(dtype=f),
        "planar": wp.array2d(dtype=wp.bool), "depth": wp.array2d(dtype=f),
        "depth_p": wp.array2d(dtype=f), "order": wp.array2d(dtype=wp.int64), "first": wp.array(dtype=wp.int64),
        "count": wp.array2d(dtype=wp.int64), "out": wp.array2d(dtype=v)}, __name__)
    name = f"elastomer_source_rows_sum_{f.__name__}"

    def chunk_sum(call, c, e): ...

    return native_grid_kernel(name, call_type, chunk_sum, _sum_loop(dtype)), call_type


_FILL_KERNELS = {dt: _fill_kernel(dt) for dt in WP_TYPES}
_SUM_KERNELS = {dt: _sum_kernel(dt) for dt in WP_TYPES}


class SourceRows:
    """Cached source rows of the direct path's probes (CPU), summed into ``out`` [E, n, 3].

    pos, normal: the direct probes' link-frame positions and normals [n, 3] (working dtype, as the per-step kernel's);
    segment: member index of each probe [n] int64; sensors: the members' sensor indices; params: [S, 7] parameter
    table (working dtype); depth, depth_p [E, n]; order, first, count: the direct path's compaction buffers.
    Calling with the selection [E, n] (H > 0) writes u and returns True, or returns False (nothing written) when the
    sources in contact do not fit in the slots.
    """

    def __init__(self, pos: torch.Tensor, normal: torch.Tensor, segment: torch.Tensor, sensors: Sequence[int],
                 params: torch.Tensor, depth: torch.Tensor, depth_p: torch.Tensor, order: torch.Tensor,
                 first: torch.Tensor, count: torch.Tensor, out: torch.Tensor):
        device, dtype = pos.device, pos.dtype
        e, n = depth.shape
        self.steps = 0
        self.new_count = torch.zeros(1, device=device, dtype=torch.int32)
        self.new_source = torch.zeros(n, device=device, dtype=torch.int32)
        self.new_slot = torch.zeros(n, device=device, dtype=torch.int32)
        bounds = np.flatnonzero(np.diff(segment.cpu().numpy(), prepend=-1, append=-1)).tolist()   # segment starts
        firsts = [a for a0, a1 in zip(bounds[:-1], bounds[1:]) for a in range(a0, a1, TARGETS_PER_THREAD)]
        chunk = torch.as_tensor(firsts + [n], device=device, dtype=torch.int32)
        chunk_segment = segment[chunk[:-1].long()].to(torch.int32)
        self.capacity = min(n, ROW_CACHE_LIMIT // (4 * TARGETS_PER_THREAD * len(firsts)))
        # [chunk, slot, K_in x, y | G | K_in z, target in chunk]: a chunk's rows are contiguous; a new slot is written
        # whole
        self.rows = torch.empty((len(firsts), self.capacity, 4, TARGETS_PER_THREAD), device=device, dtype=dtype)
        # [chunk, slot]: every K_z of the slot's row is +0 (in-plane kernels, a flat sensor), so the sum leaves it
        # unread; the lanes past a chunk's targets (never written) count as +0
        self.planar = torch.zeros((len(firsts), self.capacity), device=device, dtype=torch.bool)
        lanes = torch.arange(TARGETS_PER_THREAD, device=device)
        self._padding = (lanes >= (chunk[1:] - chunk[:-1])[:, None])[:, None]          # [chunk, 1, lane]
        self.slot = torch.full((n,), -1, device=device, dtype=torch.int32)            # slot of each probe's row
        self.source = torch.full((self.capacity,), -1, device=device, dtype=torch.int64)  # probe of each slot
        self.used = torch.full((self.capacity,), -1, device=device, dtype=torch.int64)    # last step in contact
        sensor = torch.as_tensor(list(sensors), device=device, dtype=torch.int32)
        coef, table = profile_arrays(device, dtype)
        common = {"chunk": chunk, "chunk_segment": chunk_segment, "sensor": sensor, "params": params}
        kernel, call_type = _FILL_KERNELS[dtype]
        self.fill = StructLaunch(kernel, (len(firsts),), call_type, {
            **common, "pos": pos, "normal": normal, "segment": segment, "coefficients": coef, "table": table,
            "new_count": self.new_count, "new_source": self.new_source, "new_slot": self.new_slot,
            "rows": self.rows}, [], device)
        kernel, call_type = _SUM_KERNELS[dtype]
        self.sum = StructLaunch(kernel, (len(firsts), e), call_type, {
            **common, "normal_t": normal.t().contiguous(), "slot": self.slot, "rows": self.rows,
            "planar": self.planar, "depth": depth,
            "depth_p": depth_p, "order": order, "first": first, "count": count, "out": out}, [], device)

    def __call__(self, selected: torch.Tensor) -> bool:
        contact = selected.any(0)
        new = (contact & (self.slot < 0)).nonzero()[:, 0]
        self.steps += 1
        if len(new):
            busy = (self.source >= 0) & contact[self.source.clamp(min=0)]
            free = (~busy).nonzero()[:, 0]
            if len(free) < len(new):
                return False
            slots = free[torch.argsort(self.used[free], stable=True)[:len(new)]]
            evicted = self.source[slots]
            self.slot[evicted[evicted >= 0]] = -1
            self.source[slots] = new
            self.slot[new] = slots.to(torch.int32)
            self.new_count[0] = len(new)
            self.new_source[:len(new)] = new
            self.new_slot[:len(new)] = slots
            self.fill()
            k_z = self.rows[:, slots, 3]
            bits = k_z.view(torch.int32 if k_z.dtype == torch.float32 else torch.int64)
            self.planar[:, slots] = ((bits == 0) | self._padding).all(-1)
        self.used[self.slot[contact].long()] = self.steps
        self.sum()
        return True
