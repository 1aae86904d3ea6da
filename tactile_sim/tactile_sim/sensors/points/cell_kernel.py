"""Fused kernel skeleton of the sensors that query the scene at points fixed on links: taxel probes
(KinematicTaxel, ContactDepthProbe, ContactProbe, ElastomerTaxel) and surface samples (ContactSensor,
TemperatureGrid). Points are laid out in cells and blocks (:class:`.probe_set.ProbeCells`); a cell-level shape cull
keeps the per-point query to the shapes that can reach the cell.

A link's points often lie inside the bounding sphere of the object they touch (or of a neighbouring link), so a
bounding-sphere test keeps nearly every point of a touching link. Primitive signed distances (sphere, box, capsule,
cylinder, plane) are exact Euclidean distances, hence 1-Lipschitz: for a cell of points within radius r of its
centre c, sd(x) ≥ sd(c) − r. A primitive whose sd(c) − r exceeds the cell's largest cutoff (plus a round-off margin
of :data:`.geometry.query.ROUND_OFF_ULPS` ulps of the magnitudes involved) cannot be reported for any point of the
cell, and it cannot change the winner either (its sd is above the cutoff, which bounds every reported sd). Such
shapes are dropped from the cell's candidate row before the per-point query, and so is any shape whose bounding
sphere cannot come within the cutoff (:func:`~.geometry.query.shape_may_hit`, the test of the broad phase); a cell
left with no candidate is skipped whole. Results are those of :func:`~.geometry.query.nearest_shape` over the full
candidate row.

Primitives are convex, and the signed distance of a convex set is a convex function: with g the gradient that the
primitive's query returns at the cell centre (a subgradient; a unit vector), sd(x) ≥ sd(c) + g·(x − c) for every x.
When a cell keeps exactly one candidate shape and it is a primitive, this support plane (lowered by the cell test's
round-off margin and 2 :data:`~..constants.EPS_LEN` for the fallback direction the queries return within EPS_LEN of a
centre or an axis) is tested per point before the query: a point whose plane bound exceeds its cutoff cannot touch
the shape and is skipped, as its query would report "none". The query then runs only for the points near the
contact patch (on a flat face against a curved body the plane removes most of a touching cell's points). Likewise,
when a block keeps exactly one primitive, a cell whose whole sphere lies above the block's support plane by more than
the cell's cutoff is skipped before its own exact test (and the cells test only that shape). Either bound only skips
what the query would not report, so results and their summation order are unchanged. A point whose cell keeps one
primitive is queried against that shape alone (:func:`primitive_query`: the arithmetic of
:func:`~.geometry.query.nearest_shape` for that shape, without the walk over the candidate row); in a listed kernel,
when that shape is a sphere, capsule or plane, the cell's points are the lanes of one native loop that the compiler
vectorises (:func:`_listed_cell`: the same operations, so the same values).

On the CPU (``cell_cull`` [1] = 1) a kernel thread visits one block and owns two rows of ``cell_mask``
[2 · E · blocks, S]: the shapes that pass the same test for the whole block (its bounding sphere; a block that keeps
none is skipped), and the shapes of the current cell, tested among those; on CUDA (``cell_cull`` = 0, one point per
cell and block) ``cell_mask`` is the groups' candidate rows [G, S], a block is skipped when
:func:`~.geometry.query.sphere_may_hit` says so and every point queries its group's row
(:func:`.probe_set.cull_fields`).
"""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from ...constants import EPS_LEN
from ...geometry.query import nearest_shape, primitive_bound, shape_may_hit, sphere_may_hit, tables_type
from ...geometry.sdf_funcs import primitive_sd
from ...geometry.shapes import ShapeKind
from ...geometry.warp_kernels import unique_kernel
from .probe_set import CPU_CELL_PROBES, KERNEL_CLEAR_LIMIT, WP_TYPES


@wp.func
def kept_shapes(center: Any, radius: Any, cut: Any, e: int, exact: bool, candidates: wp.array2d(dtype=wp.bool),
                from_row: int, kept: wp.array2d(dtype=wp.bool), to_row: int, world_rot: wp.array2d(dtype=Any),
                world_pos: wp.array2d(dtype=Any), world_center: wp.array2d(dtype=Any), tables: Any):
    """The shapes of row ``from_row`` of ``candidates`` that :func:`~.geometry.query.shape_may_hit` keeps for the
    points within ``radius`` of ``center`` (env e; exact: meshes by BVH), written into row ``to_row`` of ``kept``:
    ``(count, single, h, g)``, the number kept, the kept shape when it is the only one and a primitive (else −1) and
    its support plane (h = −inf when single is −1). A cutoff of −inf (fillers only) keeps none and leaves the row as
    it was."""
    count = int(0)
    single = int(-1)
    h = -type(cut)(wp.inf)
    g = center - center
    if not cut > h:
        return count, single, h, g
    for s in range(candidates.shape[1]):
        keep = False
        if candidates[from_row, s]:
            keep, hs, gs = shape_may_hit(center, radius, cut, e, s, exact, 0, world_rot, world_pos, world_center,
                                         tables)
            if keep:
                single = s
                h = hs
                g = gs
        kept[to_row, s] = keep
        if keep:
            count += 1
    if count != 1:
        single = int(-1)
        h = -type(cut)(wp.inf)
    elif tables.shape_mesh[single] >= 0:  # a mesh: the full query (its plane is already −inf)
        single = int(-1)
    return count, single, h, g


@wp.func
def primitive_query(x: Any, e: int, s: int, cut: Any, world_rot: wp.array2d(dtype=Any),
                    world_pos: wp.array2d(dtype=Any), tables: Any):
    """:func:`~.geometry.query.nearest_shape` of world point ``x`` (env e) when primitive s is its only candidate:
    ``(sd, s, world normal)`` when sd < ``cut``, else ``(inf, −1, 0)`` (the same operations, so the same values)."""
    rot = world_rot[e, s]
    p = wp.transpose(rot) @ (x - world_pos[e, s])
    sd, grad, closest = primitive_sd(tables.shape_kind[s], tables.shape_size[s], p)
    if sd < cut:
        return sd, s, rot @ grad
    zero = type(cut)(0.0)
    return type(cut)(wp.inf), int(-1), type(x)(zero, zero, zero)


def contact_list_fields(dtype: torch.dtype) -> dict:
    """Warp array types of the contact list of a :func:`cell_kernel` with ``listed``, per (env, slot) [E, P]: the
    point (``contact_point``, int32), its nearest shape (``contact_shape``, int32), signed distance
    (``contact_sd``, m), world normal (``contact_normal``) and world position (``contact_x``, m); the length of
    every block's run (``block_count`` [E, blocks] int32) and ``list_clears`` [1] int32 (1: the kernel clears the
    list's previous points, :func:`contact_list_slot`). The shape, sd, normal and position are scratch of one row
    [1, P] on the CPU, shared by the envs (:func:`contact_list_buffers`): a row of a field with one row is row 0."""
    f, v, _ = WP_TYPES[dtype]
    i32 = wp.array2d(dtype=wp.int32)
    return {"contact_point": i32, "contact_shape": i32, "contact_sd": wp.array2d(dtype=f),
            "contact_normal": wp.array2d(dtype=v), "contact_x": wp.array2d(dtype=v), "block_count": i32,
            "list_clears": wp.array(dtype=wp.int32)}


def contact_list_buffers(n_envs: int, n_points: int, device, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """Tensors [E, P] (P points; vectors [E, P, 3]) of :func:`contact_list_fields` but the points and run lengths
    (:func:`contact_list_slot`) and ``list_clears``: scratch the kernel writes before it reads, so they need no
    initialisation. On the CPU, where the kernel's threads run one after another and each reads only what it wrote,
    one row [1, P] for all envs: it stays in cache instead of a row per env being written back to memory."""
    rows = 1 if torch.device(device).type == "cpu" else n_envs
    return {"contact_shape": torch.empty((rows, n_points), dtype=torch.int32, device=device),
            "contact_sd": torch.empty((rows, n_points), dtype=dtype, device=device),
            **{k: torch.empty((rows, n_points, 3), dtype=dtype, device=device)
               for k in ("contact_normal", "contact_x")}}


def contact_list_slot(n_envs: int, n_points: int, n_blocks: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """The points (``contact_point`` [E, P] int32) and run lengths (``block_count`` [E, blocks] int32, zeros: no
    point yet) of one contact list. With ``list_clears`` the kernel first writes the reading of a point out of reach
    (zeros) into ``ground_truth`` at the points the list holds from its previous launch, then lists anew: a
    ground-truth buffer that nothing else writes between two launches with the same list (one list per buffer)
    then needs no fill before the launch."""
    return (torch.empty((n_envs, n_points), dtype=torch.int32, device=device),
            torch.zeros((n_envs, n_blocks), dtype=torch.int32, device=device))


ARRAY_AT_CPP = """    auto at = [](const auto& a, int i) -> auto& {  // a[i] of a 1-d warp array, through its stride
        return *reinterpret_cast<decltype(a.data)>(reinterpret_cast<char*>(a.data) + int64_t(i) * a.strides[0]);
    };
"""
"""C++ source defining ``at(a, i)``, a reference to a[i] of a 1-d array, for the native code of the listed kernels."""


def listed_model(name: str, call_type, dtype: torch.dtype, body: str):
    """The ``evaluate`` of a :func:`cell_kernel` with ``listed``, written in C++: a native function ``<name>_listed``
    whose ``body`` runs with ``call`` (a ``call_type`` struct), ``tables``, ``e``, ``link``, ``link_rot``,
    ``link_pos``, ``first`` and ``stop`` in scope (the model of env e's contact-list slots [first, stop)), and with
    ``T`` (the working float type) and accessors that read arrays through their strides: ``at(a, i)`` = a[i] of a
    1-d array, ``row(a)`` = the address of row e, ``in_row(row(a), a, j)`` = a[e, j] of a 2-d array."""
    _, vec, mat = WP_TYPES[dtype]
    accessors = f"""
    using T = {"float" if dtype == torch.float32 else "double"};
{ARRAY_AT_CPP}
    auto row = [e](const auto& a) {{  // row e, or row 0 of a one-row field (the CPU's shared scratch)
        return reinterpret_cast<char*>(a.data) + int64_t(a.shape[0] > 1 ? e : 0) * a.strides[0];
    }};
    auto in_row = [](char* r, const auto& a, int j) -> auto& {{
        return *reinterpret_cast<decltype(a.data)>(r + int64_t(j) * a.strides[1]);
    }};
"""

    def model(call, tables, e, link, link_rot, link_pos, first, stop): ...

    model.__name__ = f"{name}_listed"
    model.__annotations__ = {"call": call_type, "tables": tables_type(dtype), "e": int, "link": int,
                             "link_rot": mat, "link_pos": vec, "first": int, "stop": int}
    return wp.func_native(accessors + body)(model)


_LISTED_CLEAR_CPP = """
    // zeros into ground_truth[e, i] (every channel) for the points i of contact-list slots [first, stop), row e
    const auto& truth = call.ground_truth;
    char* row = reinterpret_cast<char*>(truth.data) + int64_t(e) * truth.strides[0];
    const char* points = reinterpret_cast<const char*>(call.contact_point.data)
                         + int64_t(e) * call.contact_point.strides[0];
    const int channels = truth.ndim > 2 ? truth.shape[2] : 1;
    for (int m = first; m < stop; ++m) {
        const int i = *reinterpret_cast<const int*>(points + int64_t(m) * call.contact_point.strides[1]);
        auto* value = reinterpret_cast<decltype(truth.data)>(row + int64_t(i) * truth.strides[1]);
        for (int k = 0; k < channels; ++k) {
            value[k] = {};
        }
    }
"""
"""C++ body of the clear of a listed kernel's previous points (:func:`contact_list_slot`): ``ground_truth`` is
[E, P] of one value per point, or [E, P, K] contiguous in K."""


def _listed_cell(dtype: torch.dtype) -> str:
    """C++ body of :func:`primitive_query` for the points of cell c (env e, link pose ``link_rot``, ``link_pos``)
    whose only candidate is primitive s, with the cell's support plane (``plane_h``, ``plane_g``): appends the
    points that find s within their cutoff to the contact list from ``slot`` on (:func:`contact_list_fields`, row e)
    and returns how many, in the cell's point order; −1 (nothing written) for a kind it does not evaluate (box,
    cylinder) or a cell of more than :data:`.probe_set.CPU_CELL_PROBES` points. The points are the lanes of one loop
    that the compiler vectorises, every lane with warp's own operations in the order of :func:`primitive_query`,
    :func:`~.geometry.sdf_funcs.round_segment_sd` and ``plane_sd`` (so the same values: warp compiles CPU code
    without contracting products into FMAs); a lane whose plane bound exceeds its cutoff is evaluated too and
    dropped, as the query it skips would report none. Only the cell cull keeps a single shape per cell, so this
    runs on the CPU only (it compiles for CUDA)."""
    t = "float" if dtype == torch.float32 else "double"
    return f"""
    using T = {t};
    using V3 = wp::vec_t<3, T>;
    using M3 = wp::mat_t<3, 3, T>;
    constexpr int W = {CPU_CELL_PROBES};
{ARRAY_AT_CPP}
    auto at2 = [](const auto& a, int i, int j) -> auto& {{  // a[i, j] of a 2-d array
        return *reinterpret_cast<decltype(a.data)>(reinterpret_cast<char*>(a.data) + int64_t(i) * a.strides[0]
                                                   + int64_t(j) * a.strides[1]);
    }};
    const int kind = at(tables.shape_kind, s);
    const bool segment = kind == {int(ShapeKind.SPHERE)} || kind == {int(ShapeKind.CAPSULE)};
    const int j0 = at(call.cell_start, c);
    const int n = at(call.cell_stop, c) - j0;
    if (!(segment || kind == {int(ShapeKind.PLANE)}) || n > W) {{
        return -1;
    }}
    // warp's operations written out per component in their order (dot: (a0 b0 + a1 b1) + a2 b2; matrix times
    // vector: the same per row), so that the lanes form one loop the compiler vectorises
    const T zero = T(0.0);
    const T one = T(1.0);
    const M3 rot = at2(call.world_rot, e, s);
    const V3 pos = at2(call.world_pos, e, s);
    const V3 size = at(tables.shape_size, s);
    const T radius = size[0];
    const T half = kind == {int(ShapeKind.CAPSULE)} ? size[1] : zero;  // a sphere: the segment of length 0
    const T low = wp::neg(half);
    int probe[W];
    T xs[3][W], cut[W];
    for (int k = 0; k < W; ++k) {{  // lanes past the cell's points repeat its last point and are dropped
        const int i = at(call.probe_order, j0 + (k < n ? k : n - 1));
        const V3 local = at(call.local_pos, i);
        probe[k] = i;
        cut[k] = at(call.cutoff, i);
        for (int a = 0; a < 3; ++a) {{  // x = R_L p + o_L
            xs[a][k] = ((link_rot.data[a][0] * local[0] + link_rot.data[a][1] * local[1])
                        + link_rot.data[a][2] * local[2]) + link_pos[a];
        }}
    }}
    bool hit[W];
    T sds[W], normals[3][W];
    for (int k = 0; k < W; ++k) {{
        const T x0 = xs[0][k];
        const T x1 = xs[1][k];
        const T x2 = xs[2][k];
        // the support plane's bound (the query is skipped above it)
        const T bound = plane_h + ((plane_g[0] * (x0 - center[0]) + plane_g[1] * (x1 - center[1]))
                                   + plane_g[2] * (x2 - center[2]));
        // p = R_sᵀ (x − o_s)
        const T q0 = x0 - pos[0];
        const T q1 = x1 - pos[1];
        const T q2 = x2 - pos[2];
        const T p0 = (rot.data[0][0] * q0 + rot.data[1][0] * q1) + rot.data[2][0] * q2;
        const T p1 = (rot.data[0][1] * q0 + rot.data[1][1] * q1) + rot.data[2][1] * q2;
        const T p2 = (rot.data[0][2] * q0 + rot.data[1][2] * q1) + rot.data[2][2] * q2;
        T sd = p2;  // plane_sd
        T g0 = zero;
        T g1 = zero;
        T g2 = one;
        if (segment) {{  // round_segment_sd
            const T d0 = p0 - zero;
            const T d1 = p1 - zero;
            const T d2 = p2 - wp::clamp(p2, low, half);
            const T dist = wp::sqrt((d0 * d0 + d1 * d1) + d2 * d2);
            const bool off_axis = dist > T({EPS_LEN!r});
            g0 = off_axis ? d0 / dist : one;
            g1 = off_axis ? d1 / dist : zero;
            g2 = off_axis ? d2 / dist : zero;
            sd = dist - radius;
        }}
        hit[k] = k < n && !(bound > cut[k]) && sd < cut[k];
        sds[k] = sd;
        for (int a = 0; a < 3; ++a) {{  // world normal R_s g
            normals[a][k] = (rot.data[a][0] * g0 + rot.data[a][1] * g1) + rot.data[a][2] * g2;
        }}
    }}
    int count = 0;
    const int scratch = call.contact_sd.shape[0] > 1 ? e : 0;  // the CPU's scratch: one row for all envs
    for (int k = 0; k < n; ++k) {{
        if (hit[k]) {{
            const int m = slot + count;
            at2(call.contact_point, e, m) = probe[k];
            at2(call.contact_shape, scratch, m) = s;
            at2(call.contact_sd, scratch, m) = sds[k];
            at2(call.contact_normal, scratch, m) = V3(normals[0][k], normals[1][k], normals[2][k]);
            at2(call.contact_x, scratch, m) = V3(xs[0][k], xs[1][k], xs[2][k]);
            ++count;
        }}
    }}
    return count;
"""


def cell_kernel(name: str, call_type, dtype: torch.dtype, evaluate, clear=None, listed: bool = False):
    """The fused kernel ``(call, tables)`` over (E, blocks) of a struct type with
    :func:`.probe_set.probe_fields` (see the module docstring): first, when ``clear`` is given and
    :func:`.probe_set.kernel_clears` (E from ``body_rot``, P from ``local_pos``), ``clear(call, e, first, stop)``
    for the block's points (``call.probe_order[j]`` for the slots j in [first, stop): the reading of a point out of
    reach; one call per block, as warp passes the call struct by value); then, for every point i of env e whose
    nearest candidate shape lies within its cutoff, ``evaluate(call, tables, e, i, x, sd, shape, normal, link,
    link_rot, link_pos)`` (x: world point; sd, shape, normal: :func:`~.geometry.query.nearest_shape`; link: body
    index of the point's link, pose R_L, o_L). Other points are not visited: every point belongs to exactly one
    block, so with the kernel's clears the outputs need no fill before the launch.

    With ``listed`` (a struct with :func:`contact_list_fields`), those points are not evaluated one by one inside the
    query loop: each is appended to the thread's run of the contact list (slots from the block's first slot on,
    row e; a block has as many slots as points), and after its cells the thread makes one call
    ``evaluate(call, tables, e, link, link_rot, link_pos, first, stop)`` for the run's slots [first, stop) when it
    holds any — a model evaluated in a loop of its own (e.g. native code) over only the points that found a shape,
    with the same inputs as the per-point call. A cell whose only candidate is a sphere, capsule or plane lists its
    points in one native call (:func:`_listed_cell`). With ``list_clears`` [0] = 1 the thread first writes zeros
    into ``ground_truth`` at the points of its previous run (``block_count`` [e, block] of them), and stores the
    new run's length at the end (:func:`contact_list_slot`)."""

    if listed:
        scalar, vec, mat = WP_TYPES[dtype]

        def cell_query(call, tables, e, c, s, link_rot, link_pos, center, plane_h, plane_g, slot):
            return int(0)

        cell_query.__name__ = f"{name}_cell"
        cell_query.__annotations__ = {"call": call_type, "tables": tables_type(dtype), "e": int, "c": int, "s": int,
                                      "link_rot": mat, "link_pos": vec, "center": vec, "plane_h": scalar,
                                      "plane_g": vec, "slot": int}
        listed_cell = wp.func_native(_listed_cell(dtype))(cell_query)

        def clear_listed(call, e, first, stop): ...

        clear_listed.__name__ = f"{name}_clear_listed"
        clear_listed.__annotations__ = {"call": call_type, "e": int, "first": int, "stop": int}
        clear_listed = wp.func_native(_LISTED_CLEAR_CPP)(clear_listed)

    def kernel(call, tables):
        e, k = wp.tid()
        g = call.block_group[k]
        link = call.block_link[k]
        first = call.block_first_cell[k]
        stop = first + call.block_cells[k]
        if wp.static(listed):
            if call.list_clears[0] != 0:  # the list's previous points back to "out of reach"; no run yet
                first_slot = call.cell_start[first]
                clear_listed(call, e, first_slot, first_slot + call.block_count[e, k])
                call.block_count[e, k] = 0
        if wp.static(clear is not None):
            if call.body_rot.shape[0] * call.local_pos.shape[0] <= KERNEL_CLEAR_LIMIT:
                clear(call, e, call.cell_start[first], call.cell_stop[stop - 1])  # the block's cells: consecutive
        rl = call.body_rot[e, link]
        ol = call.body_pos[e, link]
        exact = call.group_exact[g]
        block_center = rl @ call.block_center[k] + ol
        per_cell = call.cell_cull[0] != 0
        row = g
        block_row = g
        only = int(-1)  # the block's single kept shape when it is a primitive, else −1
        block_h = -type(call.block_radius[k])(wp.inf)  # its support plane (−inf: none)
        block_g = block_center - block_center
        if per_cell:  # the thread's two rows: shapes that may reach the block, then the current cell
            block_row = 2 * (e * call.block_group.shape[0] + k)
            row = block_row + 1
            reach, only, block_h, block_g = kept_shapes(block_center, call.block_radius[k], call.block_cut[k], e,
                                                        exact, call.group_shape_mask, g, call.cell_mask, block_row,
                                                        call.world_rot, call.world_pos, call.world_center, tables)
            if reach == 0:
                return
        elif not sphere_may_hit(block_center, call.block_radius[k], call.block_cut[k], e, g, exact, 0,
                                call.group_shape_mask, call.world_rot, call.world_pos, call.world_center, tables):
            return
        if wp.static(listed):  # the run of the block's contacts: slots [first_slot, first_slot + count)
            first_slot = call.cell_start[first]
            count = int(0)
            scratch = wp.min(e, call.contact_sd.shape[0] - 1)  # the CPU's scratch: one row for all envs
        for c in range(first, stop):
            center = rl @ call.cell_center[c] + ol
            radius = call.cell_radius[c]
            cut = call.cell_cut[c]
            kept = int(1)
            shape = int(-1)  # the cell's single kept shape when it is a primitive, else −1
            plane_h = -type(cut)(wp.inf)  # its support plane (−inf: none)
            plane_g = center - center
            if block_h + wp.dot(block_g, center - block_center) - radius > cut:
                kept = int(0)  # above the block's support plane: the cell cannot touch the block's single shape
            elif only >= 0:
                keep, plane_h, plane_g = primitive_bound(center, radius, cut, e, only, call.world_rot,
                                                         call.world_pos, tables)
                kept = int(0)
                if keep:
                    kept = int(1)
                    shape = only
            elif per_cell:
                kept, shape, plane_h, plane_g = kept_shapes(center, radius, cut, e, exact, call.cell_mask, block_row,
                                                            call.cell_mask, row, call.world_rot, call.world_pos,
                                                            call.world_center, tables)
            if wp.static(listed):
                if kept != 0 and shape >= 0:
                    appended = listed_cell(call, tables, e, c, shape, rl, ol, center, plane_h, plane_g,
                                           first_slot + count)
                    if appended >= 0:  # the cell is listed: no per-point query
                        count += appended
                        kept = int(0)
            if kept != 0:
                for j in range(call.cell_start[c], call.cell_stop[c]):
                    i = call.probe_order[j]
                    x = rl @ call.local_pos[i] + ol
                    cutoff = call.cutoff[i]
                    if not plane_h + wp.dot(plane_g, x - center) > cutoff:
                        sd = cutoff
                        s = int(-1)
                        normal = plane_g
                        if shape >= 0:
                            sd, s, normal = primitive_query(x, e, shape, cutoff, call.world_rot, call.world_pos,
                                                            tables)
                        else:
                            sd, s, normal, closest = nearest_shape(x, e, row, cutoff, exact, 0, call.cell_mask,
                                                                   call.world_rot, call.world_pos, call.world_center,
                                                                   tables)
                        if s >= 0:
                            if wp.static(listed):
                                slot = first_slot + count
                                call.contact_point[e, slot] = i
                                call.contact_shape[scratch, slot] = s
                                call.contact_sd[scratch, slot] = sd
                                call.contact_normal[scratch, slot] = normal
                                call.contact_x[scratch, slot] = x
                                count += 1
                            else:
                                evaluate(call, tables, e, i, x, sd, s, normal, link, rl, ol)
        if wp.static(listed):
            if count > 0:
                evaluate(call, tables, e, link, rl, ol, first_slot, first_slot + count)
                if call.list_clears[0] != 0:
                    call.block_count[e, k] = count

    kernel.__name__ = name
    kernel.__annotations__ = {"call": call_type, "tables": tables_type(dtype)}
    return unique_kernel(kernel)
