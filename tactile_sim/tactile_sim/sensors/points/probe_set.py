"""The probes of several sensors of one class, concatenated into one batch, their broad-phase layout and launch.

Layouts are flattened row-major and concatenated in sensor order; every per-probe quantity is a tensor ``[P]`` or
``[P, 3]`` (P = total probes of the batch), and ``sensor_of_probe[P]`` / ``slices`` map back to the sensors. World
positions and link motion are computed for all probes at once (one path for a batch whose sensors share one link,
a gather path otherwise), so the per-step Python work does not grow with the number of sensors.

Fused models run one warp kernel per step (:func:`.cell_kernel.cell_kernel`, launched by :class:`FusedProbeLaunch`):
it places the probes in the world, finds their nearest candidate shape (:func:`~..geometry.query.nearest_shape`) and
calls the model's per-probe function for the probes that found one. Probes are visited in *cells* of a few probes of
one sensor that lie close together (runs of the sensor's probes in :func:`cluster_order` of their link-frame
positions), grouped into *blocks* (one kernel thread each on the CPU); a block or cell that cannot reach a candidate
shape within its largest cutoff is skipped whole — it reads "none" exactly as its probes would.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Sequence

import numpy as np
import torch

import warp as wp

from ...geometry.query import QueryResult, ShapeQuery
from ...geometry.struct_launch import warp_struct
from ...world.state import WorldState
from ..layout.probe_layout import ProbeLayout
from ..warp_launch import SlotLaunches, bind_state, state_tensors

CPU_CELL_PROBES = 8
"""Consecutive probes per broad-phase cell on the CPU (one on CUDA)."""
CPU_BLOCK_CELLS = 32
"""Cells per block (one CPU kernel thread; one cell per thread on CUDA): warp copies the kernel arguments once per
thread, so a thread should visit a few hundred probes."""

KERNEL_CLEAR_LIMIT = wp.constant(1024)
"""Most (env, probe) pairs whose out-of-reach readings a fused probe kernel writes itself (:func:`kernel_clears`);
above, a torch fill before the launch is cheaper (a few µs of fixed cost against a few ns per probe)."""

WP_TYPES = {torch.float32: (wp.float32, wp.vec3f, wp.mat33f), torch.float64: (wp.float64, wp.vec3d, wp.mat33d)}
"""Warp (scalar, vec3, mat33) types of a working dtype."""


@dataclass(frozen=True)
class ProbeSensorGeometry:
    """What the probe set needs of one sensor: its link (body index), layout and candidate/tracked shapes.

    shape_mask: [S] bool over the scene's shape table — the shapes this sensor may sense.
    exact: mesh backend (True = BVH closest triangle, False = SDF grid).
    """

    link: int
    layout: ProbeLayout
    shape_mask: np.ndarray
    exact: bool = False


class ProbeSet:
    """Concatenated probe layouts of a batch.

    local_pos [P, 3] m (link frame), radius [P] m (0 = filler), local_normal [P, 3] (unit, link frame),
    active [P] bool, link_of_probe [P] long (body index), sensor_of_probe [P] long, slices: per sensor (start, stop).
    """

    def __init__(self, sensors: Sequence[ProbeSensorGeometry], query: ShapeQuery, device, dtype):
        self.query_engine = query
        self.device, self.dtype = device, dtype
        counts = [s.layout.n for s in sensors]
        starts = np.concatenate([[0], np.cumsum(counts)])
        self.slices = [(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]
        self.layouts = [s.layout for s in sensors]
        self.n = int(starts[-1])

        def cat(arrays):
            return torch.as_tensor(np.concatenate(arrays, axis=0), device=device, dtype=dtype)

        self.local_pos = cat([s.layout.flat_positions for s in sensors])
        self.radius = cat([s.layout.flat_radius for s in sensors])
        self.local_normal = cat([s.layout.flat_normals for s in sensors])
        self.active = torch.as_tensor(np.concatenate([s.layout.active for s in sensors]), device=device)
        self.sensor_of_probe = torch.as_tensor(np.repeat(np.arange(len(sensors)), counts), device=device)
        links = np.array([s.link for s in sensors])
        self.link_of_probe = torch.as_tensor(np.repeat(links, counts), device=device)
        self.single_link = int(links[0]) if np.all(links == links[0]) else None
        self.group_shape_mask = torch.as_tensor(np.stack([s.shape_mask for s in sensors]), device=device)
        self.group_exact = torch.as_tensor(np.array([s.exact for s in sensors]), device=device)
        self.cell_layout = ProbeCells(np.concatenate([s.layout.flat_positions for s in sensors], axis=0),
                                      self.slices, links, device, dtype)

    @property
    def n_blocks(self) -> int:
        return self.cell_layout.n_blocks

    def kernel_fields(self, cutoff: torch.Tensor) -> dict[str, torch.Tensor]:
        """The static probe fields of :func:`probe_fields` for a batch whose probes query up to ``cutoff`` [P] m:
        probe, cell and block tables, the largest cutoff of every cell and block, groups (one per sensor)."""
        return {**self.cell_layout.fields(cutoff), "local_pos": self.local_pos,
                "group_shape_mask": self.group_shape_mask, "group_exact": self.group_exact}

    # ------------------------------------------------------------------ per-probe link motion
    def at_probes(self, t: torch.Tensor) -> torch.Tensor:
        """Select the probe's link from a per-body tensor ``[E, B, ...]`` → ``[E, P or 1, ...]``."""
        if self.single_link is not None:
            return t[:, self.single_link : self.single_link + 1]
        return t.index_select(1, self.link_of_probe)

    def link_pose(self, state: WorldState) -> tuple[torch.Tensor, torch.Tensor]:
        """Link rotation ``[E, P|1, 3, 3]`` and origin ``[E, P|1, 3]`` of every probe (world frame)."""
        return self.at_probes(state.rot), self.at_probes(state.pos)

    def world_positions(self, rot: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """Probe centres x_i = R_L p_i + o_L in W, ``[E, P, 3]`` m."""
        if rot.shape[1] == 1:
            return torch.matmul(self.local_pos, rot[:, 0].transpose(-1, -2)) + pos
        return torch.matmul(rot, self.local_pos[:, :, None])[..., 0] + pos

    def to_link_frame(self, rot: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Rotate world vectors ``[..., E, P, 3]`` into each probe's link frame: R_Lᵀ v (leading dims broadcast)."""
        if rot.shape[1] == 1:
            return torch.matmul(v, rot[:, 0])
        return torch.matmul(v.unsqueeze(-2), rot).squeeze(-2)

    def query(self, x: torch.Tensor, state: WorldState, cutoff: torch.Tensor, unsigned: bool = False) -> QueryResult:
        """Nearest candidate geometry of every probe (docs/models/probes.md#probes: sd*, c*, O, n), culled beyond
        ``cutoff`` [P]."""
        return self.query_engine.query(
            x, state.rot, state.pos, self.sensor_of_probe, self.group_shape_mask, cutoff,
            group_exact=self.group_exact, unsigned=unsigned,
        )


class ProbeCells:
    """Broad-phase layout of P probes split into groups (one query group each, contiguous slices): *cells* are runs
    of a group's probes in :func:`cluster_order` of their positions (:data:`CPU_CELL_PROBES` on the CPU, one on CUDA),
    *blocks* runs of one group's cells (:data:`CPU_BLOCK_CELLS`; one CPU kernel thread each), each with a bounding
    sphere (radius padded for round-off).

    points: (P, 3) m, each group's probes in its link (body) frame; slices: per group (start, stop); group_link:
    per group, the body index its probes ride on. ``cells``: the probe, cell and block tables of
    :func:`probe_fields` (``probe_order`` lists the probes cell by cell), tensors on ``device``.
    """

    def __init__(self, points: np.ndarray, slices: Sequence[tuple[int, int]], group_link: Sequence[int], device,
                 dtype: torch.dtype):
        self.device, self.dtype = torch.device(device), dtype
        per_cell, per_block = (CPU_CELL_PROBES, CPU_BLOCK_CELLS) if self.device.type == "cpu" else (1, 1)
        pad = 16 * float(torch.finfo(dtype).eps)
        order, cell_start, cell_stop, cell_center, cell_radius = [], [], [], [], []
        blocks: dict[str, list] = {k: [] for k in ("first", "count", "link", "group", "center", "radius")}
        for g, (a, b) in enumerate(slices):
            perm = cluster_order(points[a:b], per_cell, per_block)
            pos = points[a:b][perm]
            order.append(perm + a)
            first = len(cell_start)
            for c0 in range(a, b, per_cell):
                c1 = min(c0 + per_cell, b)
                center, radius = bounding_sphere(pos[c0 - a:c1 - a], pad)
                cell_start.append(c0), cell_stop.append(c1), cell_center.append(center), cell_radius.append(radius)
            for k0 in range(first, len(cell_start), per_block):
                k1 = min(k0 + per_block, len(cell_start))
                center, radius = bounding_sphere(pos[cell_start[k0] - a:cell_stop[k1 - 1] - a], pad)
                for key, v in zip(blocks, (k0, k1 - k0, int(group_link[g]), g, center, radius)):
                    blocks[key].append(v)

        def ints(v):
            return torch.as_tensor(np.asarray(v, np.int32).reshape(-1), device=self.device)

        def floats(v, *shape):
            return torch.as_tensor(np.asarray(v, np.float64).reshape(-1, *shape), device=self.device, dtype=dtype)

        probe_order = np.concatenate(order) if order else np.zeros(0, np.int64)
        self.cells = {"probe_order": ints(probe_order), "cell_start": ints(cell_start), "cell_stop": ints(cell_stop),
                      "cell_center": floats(cell_center, 3), "cell_radius": floats(cell_radius),
                      "block_first_cell": ints(blocks["first"]), "block_cells": ints(blocks["count"]),
                      "block_link": ints(blocks["link"]), "block_group": ints(blocks["group"]),
                      "block_center": floats(blocks["center"], 3), "block_radius": floats(blocks["radius"])}
        cell_of_slot = np.repeat(np.arange(len(cell_start)), np.subtract(cell_stop, cell_start))
        cell_of_probe = np.empty(len(points), np.int64)
        cell_of_probe[probe_order] = cell_of_slot
        self._cell_of_probe = torch.as_tensor(cell_of_probe, device=self.device)
        self._block_of_cell = torch.repeat_interleave(torch.arange(len(blocks["first"]), device=self.device),
                                                      self.cells["block_cells"].long())

    @property
    def n_blocks(self) -> int:
        return int(self.cells["block_group"].numel())

    def fields(self, cutoff: torch.Tensor) -> dict[str, torch.Tensor]:
        """``cells`` plus, for probes that query up to ``cutoff`` [P] m, ``cutoff`` and the largest cutoff of every
        cell (``cell_cut``) and block (``block_cut``)."""
        neg = torch.full((len(self.cells["cell_start"]),), -torch.inf, dtype=self.dtype, device=self.device)
        cell_cut = neg.scatter_reduce(0, self._cell_of_probe, cutoff, "amax")
        block_cut = neg[: self.n_blocks].scatter_reduce(0, self._block_of_cell, cell_cut, "amax")
        return {**self.cells, "cell_cut": cell_cut, "block_cut": block_cut, "cutoff": cutoff.contiguous()}


def cluster_order(points: np.ndarray, leaf: int, group: int) -> np.ndarray:
    """Permutation of ``points`` (n, 3) whose consecutive runs of ``leaf`` points, and of ``leaf · group`` points, are
    compact clusters: the points are halved recursively across the longest side of their bounding box, every split
    at a whole number of runs (of ``leaf · group`` points while more than that many remain, then of ``leaf``). With
    leaf 8, a pad of 4 × 5 taxels becomes cells of 4 × 2, 4 × 2 and 4 × 1 taxels (a Morton curve over the same grid
    made cells that spanned the whole pad).

    Level by level (every segment of one depth split in the same numpy calls), so that a layout of one-point cells
    (CUDA) over 10⁵ samples builds in a fraction of a second rather than through 10⁵ recursive calls."""
    n = len(points)
    order = np.arange(n)
    starts = np.zeros(min(n, 1), np.int64)
    sizes = np.full(len(starts), n, np.int64)
    while len(starts) and sizes.max() > leaf:
        pts = points[order]
        split = sizes > leaf
        extent = np.maximum.reduceat(pts, starts) - np.minimum.reduceat(pts, starts)
        axis = np.argmax(extent, axis=1)
        segment = np.repeat(np.arange(len(starts)), sizes)
        key = np.where(split[segment], pts[np.arange(n), axis[segment]], 0.0)
        order = order[np.lexsort((key, segment))]
        unit = np.where(sizes > leaf * group, leaf * group, leaf)
        left = unit * ((-(-sizes // unit) + 1) // 2)
        halves = np.stack([np.where(split, left, sizes), np.where(split, sizes - left, 0)], axis=1).ravel()
        sizes = halves[halves > 0]
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return order


def bounding_sphere(points: np.ndarray, pad: float) -> tuple[np.ndarray, float]:
    """Centre (bounding-box centre) and radius of a sphere holding ``points`` (n, 3), padded by ``pad`` relative."""
    center = (points.min(0) + points.max(0)) / 2
    radius = float(np.linalg.norm(points - center, axis=1).max())
    return center, radius + pad * (radius + float(np.abs(center).max()) + 1.0)


def probe_fields(dtype: torch.dtype) -> dict:
    """Warp array types of the struct fields every fused kernel (:func:`.cell_kernel.cell_kernel`) reads: names as
    :meth:`ProbeSet.kernel_fields`, the per-step body poses ``body_rot`` [E, B], ``body_pos`` [E, B], the shape world
    poses ``world_rot``, ``world_pos``, ``world_center`` [E, S] of :meth:`ShapeQuery.world_poses` and the cell-cull
    fields of :func:`cull_fields`."""
    f, v, m = WP_TYPES[dtype]
    i32 = wp.array(dtype=wp.int32)
    return {"probe_order": i32, "cell_start": i32, "cell_stop": i32, "cell_center": wp.array(dtype=v),
            "cell_radius": wp.array(dtype=f), "cell_cut": wp.array(dtype=f), "block_first_cell": i32,
            "block_cells": i32, "block_link": i32, "block_group": i32, "block_center": wp.array(dtype=v),
            "block_radius": wp.array(dtype=f), "block_cut": wp.array(dtype=f), "local_pos": wp.array(dtype=v),
            "cutoff": wp.array(dtype=f), "group_shape_mask": wp.array2d(dtype=wp.bool),
            "group_exact": wp.array(dtype=wp.bool),
            "body_rot": wp.array2d(dtype=m), "body_pos": wp.array2d(dtype=v), "world_rot": wp.array2d(dtype=m),
            "world_pos": wp.array2d(dtype=v), "world_center": wp.array2d(dtype=v), "cell_cull": i32,
            "cell_mask": wp.array2d(dtype=wp.bool)}


def probe_struct(name: str, dtype: torch.dtype, model_fields: dict):
    """A warp struct type with :func:`probe_fields` and the model's own fields."""
    return warp_struct(name, {**probe_fields(dtype), **model_fields}, __name__)


def cull_fields(n_envs: int, n_blocks: int, group_shape_mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """``cell_cull`` [1] int32 and ``cell_mask`` of :func:`.cell_kernel.cell_kernel` for ``n_blocks`` blocks of
    points with candidate rows ``group_shape_mask`` [G, S] bool: on the CPU (cell cull on) two candidate rows per
    thread, i.e. per (env, block), [2 · E · blocks, S]; on CUDA (off) the groups' candidate rows."""
    dev = group_shape_mask.device
    if dev.type == "cpu":
        return {"cell_cull": torch.ones(1, dtype=torch.int32, device=dev),
                "cell_mask": torch.zeros(2 * n_envs * n_blocks, group_shape_mask.shape[1], dtype=torch.bool,
                                         device=dev)}
    return {"cell_cull": torch.zeros(1, dtype=torch.int32, device=dev), "cell_mask": group_shape_mask.clone()}


def kernel_clears(n_envs: int, n_probes: int) -> bool:
    """Whether the fused kernel of a batch of ``n_probes`` probes and ``n_envs`` envs writes the out-of-reach
    readings itself (:func:`.cell_kernel.cell_kernel` with a clear); otherwise the caller fills the outputs before
    the launch."""
    return n_envs * n_probes <= KERNEL_CLEAR_LIMIT


NO_FIELDS: Mapping[str, torch.Tensor] = MappingProxyType({})
"""No per-step fields (the default of :meth:`FusedProbeLaunch.__call__`)."""


class FusedProbeLaunch:
    """The per-step launch of a fused kernel (:func:`.cell_kernel.cell_kernel`) for one batch.

    probes: the batch's ProbeSet; query: the scene's ShapeQuery; cutoff [P] m: the batch's query cutoffs;
    model_fields: the model's static fields (name → tensor); outputs: the names of the output fields that take turns
    among a few persistent buffers (the measured branch's staging slots; :class:`~.warp_launch.SlotLaunches`). Each
    call binds the world state and the per-step model tensors (gains, …; rebinding is a pointer write) and launches
    once.
    """

    def __init__(self, probes: ProbeSet, query: ShapeQuery, n_envs: int, kernel, call_type, cutoff: torch.Tensor,
                 model_fields: dict[str, torch.Tensor], outputs: Sequence[str] = ()):
        self.query, self.kernel, self.call_type, self.n_envs = query, kernel, call_type, n_envs
        self.dim = (n_envs, probes.n_blocks)
        self.outputs = tuple(outputs)
        poses = query.pose_buffers(n_envs)
        static = probes.kernel_fields(cutoff)
        self.fields = {**static, **cull_fields(n_envs, probes.n_blocks, static["group_shape_mask"]),
                       "world_rot": poses.rot, "world_pos": poses.pos, "world_center": poses.cull_center,
                       **model_fields}
        self.launches: SlotLaunches | None = None

    def bind_all(self, name: str, t: torch.Tensor) -> None:
        """Point the static field ``name`` (one of ``model_fields``) at ``t`` from now on
        (:meth:`SlotLaunches.bind_all`)."""
        self.fields[name] = t
        if self.launches is not None:
            self.launches.bind_all(name, t)

    def __call__(self, state: WorldState, per_step: Mapping[str, torch.Tensor] = NO_FIELDS,
                 buffers: Sequence[torch.Tensor] = ()) -> None:
        """Launch for ``state`` with ``per_step`` fields (contiguous tensors, bound by data pointer) and the output
        ``buffers`` (one persistent tensor per name of ``outputs``, in order)."""
        self.query.world_poses(state.rot, state.pos)
        launches = self.launches
        if launches is None:
            rot, pos = state_tensors(state)
            launches = self.launches = SlotLaunches(self.kernel, self.dim, self.call_type, {
                **self.fields, "body_rot": rot, "body_pos": pos, **per_step}, [self.query.tables], self.query.device,
                self.outputs)
        launch = launches.select(buffers)
        bind_state(launch, state)
        for name, t in per_step.items():
            launch.bind(name, t)
        launch()
