"""ElastomerTaxel direct path of mid-size layouts on the CPU (docs/models/elastomer_taxel.md#kernels): the rows of the
dense pair tables of the sources in contact, summed in one native loop.

With the dense tables (dilate_scale·K_in [n, 3n] and dilate_scale·G [n, n], source rows, target columns, built once;
:func:`~.dilation.pair_tables`), u of target i is Σ over the sources j of its sensor with H_j > 0, in source order,
of H_j K_in[j, i] and H_j^p G[j, i], then u_i = ΣK − (ΣG) a_i. One kernel thread per env and sensor lists the
sensor's sources in contact, adds their rows over chunks of ``TARGETS_PER_THREAD`` targets (in a loop the compiler
vectorises, with constant trip counts for a whole chunk so that its sums stay in registers across the sources) and
writes u straight into the field at the targets' probe indices: no compaction, gathers or scatter. Each value is
rounded as in the weighted row sums this replaces (torch's ``embedding_bag``, on the CPU): one fused multiply-add per
term in float32 (FBGEMM's), a product then a sum in float64; the other sensors' sources that those sums also visit
add exact zeros, so leaving them out changes no value.
"""

from __future__ import annotations

import numpy as np
import torch
import warp as wp

from ...geometry.struct_launch import StructLaunch, warp_struct
from ...geometry.warp_kernels import native_grid_kernel
from ..points.probe_set import WP_TYPES

TARGETS_PER_THREAD = 64
"""Targets (of one sensor) per kernel thread: its accumulators stay in registers and L1."""


def _sum_loop(dtype: torch.dtype) -> str:
    """C++ body of the sum of member t in env e (see :func:`_sum_kernel`)."""
    real = "float" if dtype == torch.float32 else "double"

    def add(acc: str, weight: str, row: str) -> str:               # acc + weight·row as torch's row sums round it
        return f"fmaf({weight}, {row}, {acc})" if dtype == torch.float32 else f"{acc} + {weight} * {row}"

    return f"""
#if !defined(__CUDA_ARCH__)
#pragma clang fp contract(off)
#endif
    const int64_t n = call.table_g.shape[0];
    const int j0 = call.first.data[t], j1 = call.first.data[t + 1];
    const int64_t* probe = call.probe.data;
    const {real}* depth = reinterpret_cast<const {real}*>(
        reinterpret_cast<const char*>(call.depth.data) + (int64_t)e * call.depth.strides[0]);
    const {real}* depth_p = reinterpret_cast<const {real}*>(
        reinterpret_cast<const char*>(call.depth_p.data) + (int64_t)e * call.depth_p.strides[0]);
    {real}* out = reinterpret_cast<{real}*>(reinterpret_cast<char*>(call.out.data) + (int64_t)e * call.out.strides[0]);
    int* source = call.source.data + (int64_t)e * n + j0;
    int count = 0;
    for (int j = j0; j < j1; ++j) {{
        source[count] = j;
        count += depth[probe[j]] > static_cast<{real}>(0);
    }}
    {real} k[3 * {TARGETS_PER_THREAD}], g[{TARGETS_PER_THREAD}];
    const auto sources = [&](const int i0, const int width) {{
        for (int m = 0; m < count; ++m) {{
            const int j = source[m];
            const {real} h = depth[probe[j]];
            const {real} hp = depth_p[probe[j]];
            const {real}* row_k = call.table_k.data + j * 3 * n + 3 * i0;
            const {real}* row_g = call.table_g.data + j * n + i0;
            for (int r = 0; r < 3 * width; ++r) {{ k[r] = {add('k[r]', 'h', 'row_k[r]')}; }}
            for (int r = 0; r < width; ++r) {{ g[r] = {add('g[r]', 'hp', 'row_g[r]')}; }}
        }}
    }};
    for (int i0 = j0; i0 < j1; i0 += {TARGETS_PER_THREAD}) {{
        const int len = j1 - i0 < {TARGETS_PER_THREAD} ? j1 - i0 : {TARGETS_PER_THREAD};
        for (int r = 0; r < 3 * len; ++r) {{ k[r] = static_cast<{real}>(0); }}
        for (int r = 0; r < len; ++r) {{ g[r] = static_cast<{real}>(0); }}
        if (len == {TARGETS_PER_THREAD}) {{
            sources(i0, {TARGETS_PER_THREAD});  // a whole chunk: constant trip counts, the sums kept in registers
        }} else {{
            sources(i0, len);
        }}
        const {real}* normal = reinterpret_cast<const {real}*>(call.normal.data) + 3 * i0;
        for (int r = 0; r < len; ++r) {{
            {real}* u = out + 3 * probe[i0 + r];
            for (int x = 0; x < 3; ++x) {{
                const {real} ga = g[r] * normal[3 * r + x];
                u[x] = k[3 * r + x] - ga;
            }}
        }}
    }}
"""


def _sum_kernel(dtype: torch.dtype):
    """(kernel, call struct type) over (E, members): u of the member's targets (see the module docstring) into
    ``out`` [E, P] vectors at their batch probe indices ``probe`` [n] int64; depth, depth_p [E, P] (batch probes);
    table_k [n, 3n], table_g [n, n]; normal [n] vectors; first [members + 1] (first direct probe of each member);
    source [E, n] int32 scratch (the sources in contact)."""
    f, v, _ = WP_TYPES[dtype]
    i32 = wp.array(dtype=wp.int32)
    call_type = warp_struct(f"ElastomerTableSumCall_{f.__name__}", {
        "first": i32, "probe": wp.array(dtype=wp.int64), "depth": wp.array2d(dtype=f), "depth_p": wp.array2d(dtype=f),
        "table_k": wp.array2d(dtype=f), "table_g": wp.array2d(dtype=f), "normal": wp.array(dtype=v),
        "source": wp.array2d(dtype=wp.int32), "out": wp.array2d(dtype=v)}, __name__)

    def member_sum(call, e, t): ...

    return native_grid_kernel(f"elastomer_table_sum_{f.__name__}", call_type, member_sum, _sum_loop(dtype)), call_type


_SUM_KERNELS = {dt: _sum_kernel(dt) for dt in WP_TYPES}


class TableSum:
    """Sum of the dense pair-table rows of the sources in contact (CPU), written into ``out`` [E, P, 3].

    first: [members + 1] where each member sensor's direct probes start (and the end), in order; probes [n] int64:
    their batch probe indices;
    table_k [n, 3n], table_g [n, n]: the dense tables (working dtype); normal [n, 3]: the direct probes' normals.
    Call with the batch's H and H^p [E, P].
    """

    def __init__(self, first: np.ndarray, probes: torch.Tensor, table_k: torch.Tensor, table_g: torch.Tensor,
                 normal: torch.Tensor, out: torch.Tensor):
        device = out.device
        e, n, members = out.shape[0], len(probes), len(first) - 1
        first = torch.as_tensor(first, device=device, dtype=torch.int32)
        kernel, call_type = _SUM_KERNELS[out.dtype]
        self.depths = (out.new_zeros(out.shape[:2]), out.new_zeros(out.shape[:2]))   # bound until the first call
        self.launch = StructLaunch(kernel, (e, members), call_type, {
            "first": first, "probe": probes, "depth": self.depths[0], "depth_p": self.depths[1], "table_k": table_k,
            "table_g": table_g, "normal": normal, "source": torch.zeros((e, n), device=device, dtype=torch.int32),
            "out": out}, [], device)

    def __call__(self, depth: torch.Tensor, depth_p: torch.Tensor) -> None:
        if depth is not self.depths[0] or depth_p is not self.depths[1]:
            self.launch.bind("depth", depth)
            self.launch.bind("depth_p", depth_p)
            self.depths = (depth, depth_p)
        self.launch()
