"""Batched signed-distance queries against the scene's shapes: the hot path of every sensor
(docs/models/scene.md#signed-distance, docs/models/scene.md#candidates).

Public API
----------
``ShapeQuery(shapes, *, device="cpu", dtype=torch.float32, sdf_cell_size=2e-3, sdf_max_nodes=128,
sdf_padding=0.01, cache_dir=None, exact_only=False)``
    ``shapes``: sequence of ``(body_index, Shape)`` in scene order (the order is the tie-break). Builds once: shape
    tables, one warp BVH per distinct mesh and, unless ``exact_only``, one SDF grid per distinct mesh
    (:func:`.sdf_grid.build_sdf_grid`, cached on disk in ``cache_dir``). With ``exact_only=True`` meshes are always
    queried through the BVH and ``group_exact`` is ignored.

``ShapeQuery.query(points, body_rot, body_pos, point_group, group_shape_mask, cutoff, group_exact=None,
unsigned=False, out=None) -> QueryResult``
    points [E, P, 3] world, m · body_rot [E, B, 3, 3] · body_pos [E, B, 3] (world poses of the bodies; a shape's
    pose is body pose ∘ (shape.rot, shape.pos)) · point_group [P] int32 (int64 is converted) · group_shape_mask
    [G, S] bool (candidate shapes of each group) · cutoff [P] m · group_exact [G] bool (meshes by exact BVH instead
    of the SDF grid; primitives are always analytic) · unsigned: minimise |sd| instead of sd (a point inside a body
    reports its positive distance to the surface). Float tensors in the query's dtype, all on its device,
    contiguous.

    Per point: the minimum over its group's shapes of sd (or |sd|), strict ``<`` in scene order (ties → earlier
    shape). It is reported only when it is < cutoff; otherwise the point reads "none". Culling by bounding spheres
    never changes a reported result.

``QueryResult`` (named tuple): sd [E, P] (|sd| when unsigned; +inf for none) · normal [E, P, 3] world unit gradient
    of the minimising shape's sd (points out of that shape; the zero vector where an SDF-grid gradient vanishes and
    for none — the caller applies its fallback) · closest [E, P, 3] world closest surface point of that shape
    (the query point itself for none; SDF grid: c − sd(c)·n(c), see :func:`.sdf_funcs.grid_sd`) · shape [E, P]
    int32 (−1 none) · body [E, P] int64 (−1 none).

    **The returned tensors are persistent buffers** owned by the ShapeQuery, one set per (E, P, G): the next
    call with the same sizes overwrites them. Clone what you keep, or pass ``out=`` (a QueryResult of tensors with
    the shapes and dtypes above) to receive the results in your own tensors.

``ShapeQuery.body_shape_mask(bodies) -> [S] bool``: shapes owned by the given body indices — one row of
    ``group_shape_mask``. "Minimum over the shapes of one body" = a group whose row is ``body_shape_mask([b])``.

``ShapeQuery.sdf_grid(shape_index) -> SdfGrid | None``: the grid a mesh shape is sampled from.

``ShapeQuery.world_poses(body_rot, body_pos) -> WorldPoses`` (rot [E, S, 3, 3], pos [E, S, 3], cull_center
    [E, S, 3]): every shape's world pose and bounding-sphere centre for the given body poses, in persistent buffers
    per E (``pose_buffers(E)``); skipped when called again with the same, unchanged tensors.

For fused kernels (sensors that query and evaluate their model in one launch): the warp functions
:func:`nearest_shape` (the per-point query) and :func:`sphere_may_hit` (the broad phase: may any candidate shape come
within the cutoff anywhere inside a sphere?), the static tables ``ShapeQuery.tables`` (struct type
:func:`tables_type`) and the world poses above.

A query runs two kernels: the shape world poses ([E, S], composed once per call instead of per point and shape),
then one thread per (env, run of points) that culls every candidate shape by its world bounding sphere before any
rotation and evaluates the survivors; the same kernels run on CPU and CUDA (on the current torch stream) in float32
or float64. Launches are recorded once per size (:class:`.struct_launch.StructLaunch`) and later calls only swap the
data pointers of tensors that changed, so the fixed cost of a call is about 10–20 µs on the 2-core CI machine
(``bench/geometry.py``). Pass the same static tensors (point_group as int32, group_shape_mask, cutoff, group_exact)
on every call to skip their checks.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np
import torch
import warp as wp

from ..constants import EPS_LEN
from .mesh_io import mesh_content_hash
from .sdf_funcs import BVH_UNBOUNDED, grid_sd, mesh_exact_sd, primitive_sd
from .sdf_grid import SdfGrid, build_sdf_grid
from .shapes import Shape, ShapeKind
from .struct_launch import StructLaunch, warp_device, warp_struct
from .warp_kernels import init_warp, typed_kernel

_CULL_NEVER = wp.constant(0)
_CULL_ALWAYS = wp.constant(1)
_CULL_UNSIGNED_ONLY = wp.constant(2)
"""Culling modes per shape: planes are never culled; an open mesh's exact-mode sign is not bounded by its bounding
sphere (the winding number may call an outside point inside), so it is culled only in unsigned mode."""

ROUND_OFF_ULPS = 64
"""Culling compares lower bounds with a margin of this many ulps of the working dtype (relative to the magnitudes
involved), so that round-off can never cull a shape that the exact comparison would keep."""


POINTS_PER_CPU_THREAD = 64
"""Points one kernel thread handles on the CPU (one per thread on CUDA): warp copies the argument structs once per
thread, which would otherwise cost more than the geometry of a simple scene."""


class QueryResult(NamedTuple):
    """Result of :meth:`ShapeQuery.query` (see the module docstring for shapes and conventions)."""

    sd: torch.Tensor
    normal: torch.Tensor
    closest: torch.Tensor
    shape: torch.Tensor
    body: torch.Tensor


class WorldPoses(NamedTuple):
    """World poses of every shape in every env (:meth:`ShapeQuery.world_poses`): rot [E, S, 3, 3] (body rotation ∘
    shape rotation), pos [E, S, 3] m (shape origin), cull_center [E, S, 3] m (centre of the bounding sphere)."""

    rot: torch.Tensor
    pos: torch.Tensor
    cull_center: torch.Tensor


def _struct_types(scalar, vec, mat, vec4):
    """(per-call query struct, per-call pose struct, static-table struct) for one float type."""
    arr, arr2, i32 = (lambda t: wp.array(dtype=t)), (lambda t: wp.array2d(dtype=t)), wp.array(dtype=wp.int32)
    suffix = scalar.__name__
    call = warp_struct(f"QueryCall_{suffix}", {
        "points": arr2(vec), "point_group": i32, "group_shape_mask": arr2(wp.bool), "cutoff": arr(scalar),
        "group_exact": arr(wp.bool), "world_rot": arr2(mat), "world_pos": arr2(vec), "world_center": arr2(vec),
        "sd": arr2(scalar), "normal": arr2(vec), "closest": arr2(vec), "shape": arr2(wp.int32),
        "body": arr2(wp.int64)}, __name__)
    poses = warp_struct(f"PoseCall_{suffix}", {
        "body_rot": arr2(mat), "body_pos": arr2(vec), "world_rot": arr2(mat), "world_pos": arr2(vec),
        "world_center": arr2(vec)}, __name__)
    tables = warp_struct(f"ShapeTables_{suffix}", {
        "shape_kind": i32, "shape_body": i32, "shape_mesh": i32, "shape_cull": i32, "shape_rot": arr(mat),
        "shape_pos": arr(vec), "shape_size": arr(vec), "cull_center": arr(vec), "cull_radius": arr(scalar),
        "grid_cull_radius": arr(scalar), "grid_cull_floor": arr(scalar), "grid_cull_rim": arr(scalar),
        "mesh_ids": arr(wp.uint64),
        "mesh_vertex_offset": i32, "mesh_face_offset": i32, "vertices": arr(vec), "faces": i32, "grid_offset": i32,
        "grid_dims": arr(wp.vec3i), "grid_lo": arr(vec), "grid_hi": arr(vec), "grid_inv_spacing": arr(vec),
        "grid_nodes": arr(vec4), "round_off": scalar}, __name__)
    return call, poses, tables


@wp.func
def nearest_shape(x: Any, e: int, g: int, cut: Any, exact: bool, unsigned_mode: int,
                  group_shape_mask: wp.array2d(dtype=wp.bool), world_rot: wp.array2d(dtype=Any),
                  world_pos: wp.array2d(dtype=Any), world_center: wp.array2d(dtype=Any), tables: Any):
    """The nearest candidate shape of world point ``x`` in env ``e`` (the query of the module docstring).

    g: the point's group (row of ``group_shape_mask``); cut: its cutoff; exact: meshes by BVH instead of the grid;
    unsigned_mode: minimise |sd|; world_*: :meth:`ShapeQuery.world_poses`; tables: the static shape tables.
    Returns ``(sd, shape, normal, closest)``: sd (|sd| when unsigned; +inf for none), shape index (−1 for none),
    world unit normal (zero for none), world closest point (x for none). Shapes are culled by their world bounding
    spheres before any rotation; the winner is rotated into the world once.
    """
    zero = type(cut)(0.0)
    inf = type(cut)(wp.inf)
    best = inf
    best_s = int(-1)
    best_grad = type(x)(zero, zero, zero)
    best_closest = x
    if not cut > -inf:  # fillers never query
        return inf, int(-1), type(x)(zero, zero, zero), x
    for s in range(tables.shape_kind.shape[0]):
        if not group_shape_mask[g, s]:
            continue
        m = tables.shape_mesh[s]
        use_grid = False
        if m >= 0:
            if not exact and tables.grid_offset[m] >= 0:
                use_grid = True
        thr = wp.min(best, cut)
        cull = tables.shape_cull[s]
        if cull != _CULL_NEVER and thr < inf:
            # lower bound of this shape's (|)sd(|) from a bounding sphere; skip the shape when it cannot win
            dc = wp.length(x - world_center[e, s])
            r = tables.cull_radius[s]
            lb = dc - r
            if use_grid:
                # inside the lattice sd ≥ the lowest node; outside sd = sd(c) + ‖p − c‖ with c on the lattice
                # box, so sd ≥ the lowest boundary node + the distance to the box's circumscribed sphere
                r = tables.grid_cull_radius[s]
                lb = tables.grid_cull_floor[s]
                if dc > r:
                    lb = tables.grid_cull_rim[s] + (dc - r)
            elif cull == _CULL_UNSIGNED_ONLY and unsigned_mode == 0:
                lb = -inf
            if unsigned_mode != 0:
                lb = wp.max(lb, zero)
            if lb > thr + tables.round_off * (dc + r + wp.abs(thr)):
                continue
        p = wp.transpose(world_rot[e, s]) @ (x - world_pos[e, s])
        kind = tables.shape_kind[s]
        size = tables.shape_size[s]
        found = True
        sd = zero
        grad = best_grad
        closest = p
        if m < 0:  # a primitive (only meshes have a mesh index)
            sd, grad, closest = primitive_sd(kind, size, p)
        elif use_grid:
            sd, grad, closest = grid_sd(tables.grid_nodes, tables.grid_offset[m], tables.grid_dims[m],
                                        tables.grid_lo[m], tables.grid_hi[m], tables.grid_inv_spacing[m], p)
        else:
            max_dist = float(BVH_UNBOUNDED)
            if unsigned_mode != 0 and thr < inf:
                max_dist = wp.float32(thr) * 1.001 + 1.0e-6
            found, sd, grad, closest = mesh_exact_sd(tables.mesh_ids[m], tables.vertices, tables.faces,
                                                     tables.mesh_vertex_offset[m], tables.mesh_face_offset[m], p,
                                                     max_dist)
        if found:
            value = sd
            if unsigned_mode != 0:
                value = wp.abs(sd)
            if value < best:
                best = value
                best_s = s
                best_grad = grad
                best_closest = closest
    if best_s >= 0 and best < cut:
        rot = world_rot[e, best_s]
        return best, best_s, rot @ best_grad, rot @ best_closest + world_pos[e, best_s]
    return inf, int(-1), type(x)(zero, zero, zero), x


@wp.func
def primitive_bound(center: Any, radius: Any, cut: Any, e: int, s: int, world_rot: wp.array2d(dtype=Any),
                    world_pos: wp.array2d(dtype=Any), tables: Any):
    """Cull test of shape s (env e) for the points within ``radius`` of world point ``center``: ``(keep, h, g)``.
    keep is False only when primitive s has sd > ``cut`` at every such point (exact distance at the centre minus the
    radius, with the query's round-off margin; primitive signed distances are exact Euclidean distances, hence
    1-Lipschitz); True for meshes. (h, g) is the support plane of a primitive (primitives are convex, so their sd is
    a convex function), sd(x) ≥ h + g·(x − center) for every x (g world, unit; h the centre's sd lowered by the
    margin and 2 EPS_LEN, for the fallback direction the queries return within EPS_LEN of a centre or an axis);
    h = −inf for a mesh (no bound)."""
    zero = type(cut)(0.0)
    if tables.shape_mesh[s] >= 0:
        return True, -type(cut)(wp.inf), type(center)(zero, zero, zero)
    rot = world_rot[e, s]
    p = wp.transpose(rot) @ (center - world_pos[e, s])
    sd, grad, closest = primitive_sd(tables.shape_kind[s], tables.shape_size[s], p)
    margin = tables.round_off * (wp.length(center) + wp.length(p) + radius + wp.abs(cut) + wp.abs(sd))
    return not sd - radius > cut + margin, sd - margin - type(cut)(2.0 * EPS_LEN), rot @ grad


@wp.func
def shape_may_hit(center: Any, radius: Any, cut: Any, e: int, s: int, exact: bool, unsigned_mode: int,
                  world_rot: wp.array2d(dtype=Any), world_pos: wp.array2d(dtype=Any),
                  world_center: wp.array2d(dtype=Any), tables: Any):
    """Broad phase of one shape s (env e): ``(may, h, g)``; may is False only when s cannot have (|)sd(|) < ``cut``
    anywhere within ``radius`` of world point ``center``. It passes when its bounding sphere (the bounds and round-off
    margin of :func:`nearest_shape`) comes within ``cut`` and, for a primitive in signed mode, when its exact distance
    bound (:func:`primitive_bound`) does too: a flat box or a long capsule reaches far less of its bounding sphere.
    (h, g): the support plane of :func:`primitive_bound` for a primitive that passes in signed mode; h = −inf
    otherwise."""
    zero = type(cut)(0.0)
    no_plane = -type(cut)(wp.inf)
    cull = tables.shape_cull[s]
    m = tables.shape_mesh[s]
    if cull != _CULL_NEVER and not (cull == _CULL_UNSIGNED_ONLY and unsigned_mode == 0):
        dc = wp.length(center - world_center[e, s])
        near = wp.max(dc - radius, zero)  # distance bound of the nearest point of the sphere
        r = tables.cull_radius[s]
        lb = near - r
        if m >= 0:
            if not exact and tables.grid_offset[m] >= 0:
                r = tables.grid_cull_radius[s]
                lb = tables.grid_cull_floor[s]
                if near > r:
                    lb = tables.grid_cull_rim[s] + (near - r)
        if unsigned_mode != 0:
            lb = wp.max(lb, zero)
        if lb > cut + tables.round_off * (dc + radius + r + wp.abs(cut)):
            return False, no_plane, center - center
    if m < 0 and unsigned_mode == 0:
        return primitive_bound(center, radius, cut, e, s, world_rot, world_pos, tables)
    return True, no_plane, center - center


@wp.func
def sphere_may_hit(center: Any, radius: Any, cut: Any, e: int, g: int, exact: bool, unsigned_mode: int,
                   group_shape_mask: wp.array2d(dtype=wp.bool), world_rot: wp.array2d(dtype=Any),
                   world_pos: wp.array2d(dtype=Any), world_center: wp.array2d(dtype=Any), tables: Any):
    """Broad phase: False only when no candidate shape of group ``g`` can have (|)sd(|) < ``cut`` anywhere within
    ``radius`` of world point ``center`` (:func:`shape_may_hit`) — then :func:`nearest_shape` reports "none" for every
    such point whose cutoff is at most ``cut``."""
    if not cut > -type(cut)(wp.inf):
        return False
    if not cut < type(cut)(wp.inf):
        return True
    for s in range(tables.shape_kind.shape[0]):
        if group_shape_mask[g, s]:
            may, h, gs = shape_may_hit(center, radius, cut, e, s, exact, unsigned_mode, world_rot, world_pos,
                                       world_center, tables)
            if may:
                return True
    return False


def _world_pose_kernel(call: Any, tables: Any):
    """World pose and cull centre of shape s in env e: body pose ∘ shape pose."""
    e, s = wp.tid()
    b = tables.shape_body[s]
    rb = call.body_rot[e, b]
    ob = call.body_pos[e, b]
    call.world_rot[e, s] = rb @ tables.shape_rot[s]
    call.world_pos[e, s] = rb @ tables.shape_pos[s] + ob
    call.world_center[e, s] = rb @ tables.cull_center[s] + ob


def _shape_query_kernel(call: Any, tables: Any, unsigned_mode: int, points_per_thread: int):
    e, t = wp.tid()
    first = t * points_per_thread
    for i in range(first, wp.min(first + points_per_thread, call.points.shape[1])):
        g = call.point_group[i]
        sd, s, normal, closest = nearest_shape(call.points[e, i], e, g, call.cutoff[i], call.group_exact[g],
                                               unsigned_mode, call.group_shape_mask, call.world_rot,
                                               call.world_pos, call.world_center, tables)
        b = int(-1)
        if s >= 0:
            b = tables.shape_body[s]
        call.sd[e, i] = sd
        call.normal[e, i] = normal
        call.closest[e, i] = closest
        call.shape[e, i] = s
        call.body[e, i] = wp.int64(b)


_WP_TYPES = {torch.float32: (wp.float32, wp.vec3f, wp.mat33f, wp.vec4f),
             torch.float64: (wp.float64, wp.vec3d, wp.mat33d, wp.vec4d)}
_STRUCTS = {dt: _struct_types(*types) for dt, types in _WP_TYPES.items()}


def tables_type(dtype: torch.dtype):
    """The warp struct type of :attr:`ShapeQuery.tables` for a working dtype (float32 or float64)."""
    return _STRUCTS[dtype][2]


_KERNELS = {dt: typed_kernel(_shape_query_kernel, "shape_query", dt,
                             {"call": _STRUCTS[dt][0], "tables": _STRUCTS[dt][2]})
            for dt in _WP_TYPES}
_POSE_KERNELS = {dt: typed_kernel(_world_pose_kernel, "shape_poses", dt,
                                  {"call": _STRUCTS[dt][1], "tables": _STRUCTS[dt][2]})
                 for dt in _WP_TYPES}


_QUERY_FIELDS = ("points", "point_group", "group_shape_mask", "cutoff", "group_exact")
"""Per-call inputs of the query struct, in :meth:`ShapeQuery.query` order; the outputs follow QueryResult."""


def _empty_outputs(points: torch.Tensor) -> tuple[torch.Tensor, ...]:
    e, p = points.shape[:2]
    kw = {"device": points.device}
    return (torch.empty(e, p, dtype=points.dtype, **kw), torch.empty(e, p, 3, dtype=points.dtype, **kw),
            torch.empty(e, p, 3, dtype=points.dtype, **kw), torch.empty(e, p, dtype=torch.int32, **kw),
            torch.empty(e, p, dtype=torch.int64, **kw))


class ShapeQuery:
    """Signed distance, normal and closest point of the nearest candidate shape, for batches of points.

    See the module docstring for the full contract. Attributes: ``shapes`` (the Shape list, scene order),
    ``shape_body`` [S] int64 owning body per shape (on ``device``), ``device``, ``dtype``.
    """

    kernel_tables = (_POSE_KERNELS,)
    """Tables (working dtype → kernel) of the kernels every query launches (its shape poses), compiled before a suite
    is built (:func:`.warp_kernels.prepare_kernels`)."""

    def __init__(self, shapes: Sequence[tuple[int, Shape]], *, device="cpu", dtype: torch.dtype = torch.float32,
                 sdf_cell_size: float = 2e-3, sdf_max_nodes: int = 128, sdf_padding: float = 0.01, cache_dir=None,
                 exact_only: bool = False):
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"ShapeQuery: dtype must be torch.float32 or torch.float64; got {dtype}")
        device = warp_device(device)
        self.device, self.dtype = device, dtype
        self._device_index = -1 if device.type == "cpu" else device.index
        init_warp()
        self._wp_device = wp.device_from_torch(device)
        self._kernel = _KERNELS[dtype]
        bodies = [int(b) for b, _ in shapes]
        if any(b < 0 for b in bodies):
            raise ValueError(f"ShapeQuery: body indices must be >= 0; got {bodies}")
        self.shapes: list[Shape] = [s for _, s in shapes]
        self.shape_body = torch.tensor(bodies, dtype=torch.int64, device=device)
        self._min_bodies = max(bodies, default=-1) + 1
        self._grids: dict[int, SdfGrid] = {}
        self._tables = self._build_tables(bodies, exact_only, dict(
            cell_size=sdf_cell_size, max_nodes=sdf_max_nodes, padding=sdf_padding, cache_dir=cache_dir))
        self._points_per_thread = POINTS_PER_CPU_THREAD if device.type == "cpu" else 1
        self._poses: dict[int, WorldPoses] = {}
        self._pose_launches: dict[tuple, StructLaunch] = {}
        self._pose_source: tuple | None = None  # (body_rot, body_pos, their versions and data pointers, poses)
        self._launches: dict[tuple, StructLaunch] = {}
        self._default_exact: dict[int, torch.Tensor] = {}
        self._group_cache = None

    # ------------------------------------------------------------------ public helpers
    @property
    def n_shapes(self) -> int:
        return len(self.shapes)

    def body_shape_mask(self, bodies: Sequence[int]) -> torch.Tensor:
        """[S] bool: True for the shapes owned by any of ``bodies`` (body indices)."""
        wanted = torch.as_tensor(list(bodies), dtype=torch.int64, device=self.device)
        return torch.isin(self.shape_body, wanted)

    def sdf_grid(self, shape_index: int) -> SdfGrid | None:
        """The SDF grid mesh shape ``shape_index`` is sampled from (None for primitives or with exact_only)."""
        return self._grids.get(shape_index)

    # ------------------------------------------------------------------ query
    @property
    def tables(self):
        """The static shape tables (a warp struct of :func:`tables_type`, for kernels that call
        :func:`nearest_shape`)."""
        return self._tables

    def pose_buffers(self, n_envs: int) -> WorldPoses:
        """The persistent world-pose buffers of ``n_envs`` envs that :meth:`world_poses` fills (zeros until then)."""
        poses = self._poses.get(n_envs)
        if poses is None:
            s, kw = self.n_shapes, {"dtype": self.dtype, "device": self.device}
            poses = self._poses[n_envs] = WorldPoses(torch.zeros(n_envs, s, 3, 3, **kw),
                                                     torch.zeros(n_envs, s, 3, **kw), torch.zeros(n_envs, s, 3, **kw))
        return poses

    def world_poses(self, body_rot: torch.Tensor, body_pos: torch.Tensor) -> WorldPoses:
        """World pose and bounding-sphere centre of every shape for body poses ``body_rot`` [E, B, 3, 3] and
        ``body_pos`` [E, B, 3] (one small kernel). Returns persistent buffers, one set per E: the next call with the
        same E overwrites them. A call with the same two tensors as the last call, unchanged since (same data and
        torch version counters), returns the buffers without a launch."""
        last = self._pose_source
        if (last is not None and last[0] is body_rot and last[1] is body_pos and last[2] == body_rot._version
                and last[3] == body_pos._version and last[4] == body_rot.data_ptr()
                and last[5] == body_pos.data_ptr()):
            return last[6]
        try:
            e, b, _, _ = body_rot.shape
        except ValueError:
            raise ValueError(f"ShapeQuery.world_poses: body_rot must be [E, B, 3, 3]; got {list(body_rot.shape)}") \
                from None
        launch = self._pose_launches.get((e, b))
        if launch is None:
            if b < self._min_bodies:
                raise ValueError(f"ShapeQuery.query: body_rot has {b} bodies but shapes refer to body "
                                 f"{self._min_bodies - 1}; allowed: B >= {self._min_bodies}")
            poses = self.pose_buffers(e)
            fields = {"body_rot": self._validate("body_rot", body_rot, (e, b, 3, 3), self.dtype),
                      "body_pos": self._validate("body_pos", body_pos, (e, b, 3), self.dtype),
                      "world_rot": poses.rot, "world_pos": poses.pos, "world_center": poses.cull_center}
            launch = self._pose_launches[(e, b)] = StructLaunch(
                _POSE_KERNELS[self.dtype], (e, self.n_shapes), _STRUCTS[self.dtype][1], fields, [self._tables],
                self.device)
        else:
            self._bind(launch, "body_rot", body_rot, (e, b, 3, 3), self.dtype)
            self._bind(launch, "body_pos", body_pos, (e, b, 3), self.dtype)
        launch()
        poses = self._poses[e]
        self._pose_source = (body_rot, body_pos, body_rot._version, body_pos._version, body_rot.data_ptr(),
                             body_pos.data_ptr(), poses)
        return poses

    def query(self, points: torch.Tensor, body_rot: torch.Tensor, body_pos: torch.Tensor, point_group: torch.Tensor,
              group_shape_mask: torch.Tensor, cutoff: torch.Tensor, group_exact: torch.Tensor | None = None,
              unsigned: bool = False, out: QueryResult | None = None) -> QueryResult:
        """Nearest-shape query; see the module docstring. Returns persistent buffers unless ``out`` is given."""
        try:
            e, p, _ = points.shape
            _, _, _, _ = body_rot.shape
            g, _ = group_shape_mask.shape
        except ValueError:
            raise ValueError(f"ShapeQuery.query: points must be [E, P, 3], body_rot [E, B, 3, 3], group_shape_mask "
                             f"[G, S]; got {list(points.shape)}, {list(body_rot.shape)}, "
                             f"{list(group_shape_mask.shape)}") from None
        if point_group.dtype is not torch.int32:
            point_group = self._int32_groups(point_group)
        if group_exact is None:
            group_exact = self._default_exact.get(g)
            if group_exact is None:
                group_exact = self._default_exact[g] = torch.zeros(g, dtype=torch.bool, device=self.device)
        inputs = (points, point_group, group_shape_mask, cutoff, group_exact)
        launch = self._launches.get((e, p, g))
        if launch is None:
            expected = self._expected(e, p, g)
            inputs = tuple(self._validate(name, t, *expected[name]) for name, t in zip(_QUERY_FIELDS, inputs))
            if e == 0 or p == 0:
                self._validate("body_rot", body_rot, (e, body_rot.shape[1], 3, 3), self.dtype)
                return QueryResult(*_empty_outputs(points)) if out is None else out
            poses = self.pose_buffers(e)
            own = QueryResult(*_empty_outputs(points))
            fields = {**dict(zip(_QUERY_FIELDS, inputs)), "world_rot": poses.rot, "world_pos": poses.pos,
                      "world_center": poses.cull_center, **own._asdict()}
            launch = self._launches[(e, p, g)] = StructLaunch(
                self._kernel, (e, -(-p // self._points_per_thread)), _STRUCTS[self.dtype][0], fields,
                [self._tables, int(unsigned), self._points_per_thread], self.device)
            launch.outputs, launch.expected, launch.unsigned = own, expected, int(unsigned)
        self.world_poses(body_rot, body_pos)
        result = launch.outputs if out is None else out
        for name, t in zip(_QUERY_FIELDS + QueryResult._fields, inputs + tuple(result)):
            if not launch.fits(name, t):
                key = name if name in _QUERY_FIELDS else "out." + name
                t = self._validate(key, t, *launch.expected[key])
            launch.bind(name, t)
        if launch.unsigned != int(unsigned):
            launch.unsigned = int(unsigned)
            launch.set_arg(2, launch.unsigned)
        launch()
        return result

    def _bind(self, launch: StructLaunch, name: str, t: torch.Tensor, shape: tuple, dtype: torch.dtype) -> None:
        """Point field ``name`` of ``launch`` at ``t``, checked with this query's message (made contiguous if needed)
        unless the launch accepts it as it is."""
        if not launch.fits(name, t):
            t = self._validate(name, t, shape, dtype)
        launch.bind(name, t)

    def _int32_groups(self, groups: torch.Tensor) -> torch.Tensor:
        """``groups`` as int32, converted once per tensor (and again only after an in-place change)."""
        cached = self._group_cache
        if cached is not None and cached[0] is groups and cached[1] == (groups._version, groups.data_ptr()):
            return cached[2]
        converted = groups.to(torch.int32)
        self._group_cache = (groups, (groups._version, groups.data_ptr()), converted)
        return converted

    def _expected(self, e: int, p: int, g: int) -> dict[str, tuple]:
        """(shape, dtype) of each query tensor by struct field name (outputs as ``out.<field>``)."""
        dt = self.dtype
        return {"points": ((e, p, 3), dt), "point_group": ((p,), torch.int32),
                "group_shape_mask": ((g, self.n_shapes), torch.bool), "cutoff": ((p,), dt),
                "group_exact": ((g,), torch.bool), "out.sd": ((e, p), dt), "out.normal": ((e, p, 3), dt),
                "out.closest": ((e, p, 3), dt), "out.shape": ((e, p), torch.int32), "out.body": ((e, p), torch.int64)}

    def _validate(self, name: str, t: torch.Tensor, shape: tuple, dtype: torch.dtype) -> torch.Tensor:
        """``t`` (made contiguous) after checking its shape, dtype and device."""
        if t.shape != shape or t.dtype is not dtype or t.get_device() != self._device_index:
            raise ValueError(f"ShapeQuery.query: {name} must be a {dtype} tensor of shape {list(shape)} on "
                             f"{self.device}; got {t.dtype} {list(t.shape)} on {t.device}")
        return t if t.is_contiguous() else t.contiguous()

    # ------------------------------------------------------------------ build
    def _build_tables(self, bodies: list[int], exact_only: bool, grid_options: dict):
        """The static shape, mesh and grid tables as one warp struct (device arrays)."""
        n = len(self.shapes)
        kind = np.zeros(n, np.int32)
        mesh_index = np.full(n, -1, np.int32)
        cull = np.full(n, _CULL_ALWAYS, np.int32)
        rot = np.zeros((n, 3, 3))
        pos = np.zeros((n, 3))
        size = np.zeros((n, 3))
        center = np.zeros((n, 3))
        radius = np.zeros(n)
        grid_radius, grid_floor, grid_rim = np.zeros(n), np.zeros(n), np.zeros(n)
        meshes: dict[str, int] = {}
        mesh_list, grid_list = [], []
        for s, shape in enumerate(self.shapes):
            kind[s] = int(shape.kind)
            rot[s], pos[s] = shape.rot, shape.pos
            k = shape.kind
            if k == ShapeKind.SPHERE:
                size[s, 0] = shape.size[0]
            elif k == ShapeKind.BOX:
                size[s] = shape.size
            elif k in (ShapeKind.CAPSULE, ShapeKind.CYLINDER):
                size[s, :2] = shape.size[0], shape.size[1] / 2
            if k == ShapeKind.PLANE:
                cull[s] = _CULL_NEVER
                radius[s] = np.inf
            elif k == ShapeKind.MESH:
                md = shape.mesh
                key = md.content_hash or mesh_content_hash(md.vertices, md.faces)
                if key not in meshes:
                    meshes[key] = len(mesh_list)
                    mesh_list.append(md)
                    grid_list.append(None if exact_only else build_sdf_grid(md, **grid_options))
                m = mesh_index[s] = meshes[key]
                c = (md.vertices.min(0) + md.vertices.max(0)) / 2  # also the centre of the (symmetric) lattice
                center[s] = shape.rot @ c + shape.pos
                radius[s] = np.linalg.norm(md.vertices - c, axis=1).max()
                if not md.watertight:
                    cull[s] = _CULL_UNSIGNED_ONLY
                grid = grid_list[m]
                if grid is not None:
                    self._grids[s] = grid
                    v = grid.values
                    grid_radius[s] = max(np.linalg.norm(grid.hi - c), np.linalg.norm(grid.lo - c))
                    grid_floor[s] = v.min()
                    grid_rim[s] = min(v[[0, -1]].min(), v[:, [0, -1]].min(), v[:, :, [0, -1]].min())
            else:
                radius[s] = shape.bounding_radius
                center[s] = shape.pos
        # meshes: BVHs (float32, as warp requires) and working-precision vertices for the closest point
        dev = self._wp_device
        self._wp_meshes = [wp.Mesh(points=wp.array(md.vertices, dtype=wp.vec3f, device=dev),
                                   indices=wp.array(md.faces.astype(np.int32).reshape(-1), dtype=wp.int32, device=dev),
                                   support_winding_number=True) for md in mesh_list]
        v_off = np.cumsum([0] + [len(md.vertices) for md in mesh_list])
        f_off = np.cumsum([0] + [len(md.faces) for md in mesh_list])
        vertices = np.concatenate([md.vertices for md in mesh_list] or [np.zeros((0, 3))])
        faces = np.concatenate([md.faces.reshape(-1) for md in mesh_list] or [np.zeros(0, np.int64)])
        grid_offset = np.full(len(mesh_list), -1, np.int32)
        grid_dims = np.zeros((len(mesh_list), 3), np.int32)
        grid_lo, grid_hi, grid_inv = (np.zeros((len(mesh_list), 3)) for _ in range(3))
        nodes, total = [], 0
        for m, grid in enumerate(grid_list):
            if grid is None:
                continue
            grid_offset[m] = total
            grid_dims[m] = grid.dims
            grid_lo[m], grid_hi[m], grid_inv[m] = grid.lo, grid.hi, 1.0 / grid.spacing
            nodes.append(np.concatenate([grid.values.reshape(-1, 1), grid.gradients.reshape(-1, 3)], axis=1))
            total += grid.values.size
        nodes = np.concatenate(nodes or [np.zeros((0, 4))])

        tables_type = _STRUCTS[self.dtype][2]
        columns = {
            "shape_kind": kind, "shape_body": np.asarray(bodies, np.int32).reshape(n), "shape_mesh": mesh_index,
            "shape_cull": cull, "shape_rot": rot, "shape_pos": pos, "shape_size": size, "cull_center": center,
            "cull_radius": radius, "grid_cull_radius": grid_radius, "grid_cull_floor": grid_floor,
            "grid_cull_rim": grid_rim,
            "mesh_ids": np.array([wm.id for wm in self._wp_meshes], np.uint64),
            "mesh_vertex_offset": v_off[:-1].astype(np.int32), "mesh_face_offset": f_off[:-1].astype(np.int32),
            "vertices": vertices, "faces": faces.astype(np.int32), "grid_offset": grid_offset,
            "grid_dims": grid_dims, "grid_lo": grid_lo, "grid_hi": grid_hi, "grid_inv_spacing": grid_inv,
            "grid_nodes": nodes}
        tables = tables_type()
        for name, column in columns.items():
            setattr(tables, name, wp.array(column, dtype=tables_type.vars[name].type.dtype, device=dev))
        tables.round_off = ROUND_OFF_ULPS * float(torch.finfo(self.dtype).eps)
        return tables
