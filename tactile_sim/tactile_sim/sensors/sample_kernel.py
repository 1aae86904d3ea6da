"""Fused kernel skeleton of the surface-sample sensors (ContactSensor, TemperatureGrid): a cell-level shape cull.

Surface samples touch geometry in small patches, and a link's samples usually lie inside the bounding sphere of the
object they touch, so a bounding-sphere test keeps nearly every sample of a touching link. Primitive signed distances
(sphere, box, capsule, cylinder, plane) are exact Euclidean distances, hence 1-Lipschitz: for a cell of samples within
radius r of its centre c, sd(x) ≥ sd(c) − r. A primitive whose sd(c) − r exceeds the cell's largest cutoff (plus a
round-off margin of :data:`.geometry.query.ROUND_OFF_ULPS` ulps of the magnitudes involved) cannot be reported for any
sample of the cell, and it cannot change the winner either (its sd is above the cutoff, which bounds every reported
sd). Such shapes are dropped from the cell's candidate row before the per-sample query; a cell left with no candidate
is skipped whole. Meshes stay candidates (:func:`~.geometry.query.nearest_shape` still culls them per sample by their
bounding spheres). Results are those of :func:`~.geometry.query.nearest_shape` over the full candidate row.

On the CPU (``cell_cull`` [1] = 1) a kernel thread visits one block (:class:`.body_samples.SampleCells`) and owns
two rows of ``cell_mask`` [2 · E · blocks, S]: the shapes that pass the same test for the whole block (its bounding
sphere), and the shapes of the current cell, tested among those; on CUDA (``cell_cull`` = 0, one sample per cell)
``cell_mask`` is the owners' candidate rows [O, S] and every sample queries its owner's row.
"""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from ..geometry.query import nearest_shape, sphere_may_hit, tables_type
from ..geometry.sdf_funcs import primitive_sd


@wp.func
def primitive_may_hit(center: Any, radius: Any, cut: Any, e: int, s: int, world_rot: wp.array2d(dtype=Any),
                      world_pos: wp.array2d(dtype=Any), tables: Any):
    """False only when primitive shape s (env e) has sd > ``cut`` at every point within ``radius`` of world point
    ``center`` (exact distance at the centre minus the radius, with the query's round-off margin); True for
    meshes."""
    if tables.shape_mesh[s] >= 0:
        return True
    p = wp.transpose(world_rot[e, s]) @ (center - world_pos[e, s])
    sd, grad, closest = primitive_sd(tables.shape_kind[s], tables.shape_size[s], p)
    margin = tables.round_off * (wp.length(center) + wp.length(p) + radius + wp.abs(cut) + wp.abs(sd))
    return not sd - radius > cut + margin


def sample_kernel(name: str, call_type, dtype: torch.dtype, evaluate_sample):
    """The fused sample kernel ``(call, tables)`` over (E, blocks), called like :func:`.probe_set.probe_kernel`
    (same fields, plus ``cell_cull`` and ``cell_mask``, see the module docstring and
    :meth:`.body_samples.SampleCells.cull_fields`): for every sample i of env e
    whose nearest candidate shape lies within its cutoff, ``evaluate_sample(call, tables, e, i, x, sd, shape, normal,
    link, link_rot, link_pos)``. Other samples are not visited."""

    def kernel(call, tables):
        e, k = wp.tid()
        g = call.block_group[k]
        link = call.block_link[k]
        rl = call.body_rot[e, link]
        ol = call.body_pos[e, link]
        exact = call.group_exact[g]
        if not sphere_may_hit(rl @ call.block_center[k] + ol, call.block_radius[k], call.block_cut[k], e, g, exact,
                              0, call.group_shape_mask, call.world_center, tables):
            return
        per_cell = call.cell_cull[0] != 0
        row = g
        block_row = g
        if per_cell:  # the thread's two rows: shapes that may reach the block, then the current cell
            block_row = 2 * (e * call.block_group.shape[0] + k)
            row = block_row + 1
            reach = int(0)
            for s in range(call.group_shape_mask.shape[1]):
                keep = False
                if call.group_shape_mask[g, s]:
                    keep = primitive_may_hit(rl @ call.block_center[k] + ol, call.block_radius[k], call.block_cut[k],
                                             e, s, call.world_rot, call.world_pos, tables)
                call.cell_mask[block_row, s] = keep
                if keep:
                    reach = int(1)
            if reach == 0:
                return
        first = call.block_first_cell[k]
        for c in range(first, first + call.block_cells[k]):
            center = rl @ call.cell_center[c] + ol
            radius = call.cell_radius[c]
            cut = call.cell_cut[c]
            visit = int(1)
            if per_cell:
                visit = int(0)
                for s in range(call.group_shape_mask.shape[1]):
                    keep = False
                    if call.cell_mask[block_row, s]:
                        keep = primitive_may_hit(center, radius, cut, e, s, call.world_rot, call.world_pos, tables)
                    call.cell_mask[row, s] = keep
                    if keep:
                        visit = int(1)
            if visit != 0:
                for j in range(call.cell_start[c], call.cell_stop[c]):
                    i = call.probe_order[j]
                    x = rl @ call.local_pos[i] + ol
                    sd, s, normal, closest = nearest_shape(x, e, row, call.cutoff[i], exact, 0, call.cell_mask,
                                                           call.world_rot, call.world_pos, call.world_center, tables)
                    if s >= 0:
                        evaluate_sample(call, tables, e, i, x, sd, s, normal, link, rl, ol)

    kernel.__name__ = name
    kernel.__annotations__ = {"call": call_type, "tables": tables_type(dtype)}
    return wp.kernel(kernel, enable_backward=False, module="unique")
