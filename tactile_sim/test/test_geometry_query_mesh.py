"""ShapeQuery on meshes: exact BVH mode against trimesh and the analytic box, SDF-grid accuracy and extension,
open meshes, culling (docs/models/scene.md#signed-distance)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
import trimesh

from helpers_geometry import body_poses, random_rotation, run_query
from tactile_sim.geometry.mesh_io import make_mesh_data
from tactile_sim.geometry.query import ShapeQuery
from tactile_sim.geometry.shapes import Shape, ShapeKind

CELL = 0.01  # coarse SDF cells keep the grids tiny (13-16 nodes per axis)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("sdf_cache")


@pytest.fixture(scope="module")
def sphere_mesh():
    tm = trimesh.creation.icosphere(subdivisions=2, radius=0.05)
    return tm, make_mesh_data(tm.vertices, tm.faces, "icosphere")


@pytest.fixture(scope="module")
def torus_mesh():
    tm = trimesh.creation.torus(major_radius=0.05, minor_radius=0.02, major_sections=24, minor_sections=12)
    return tm, make_mesh_data(tm.vertices, tm.faces, "torus")


def _posed_query(tm, md, dtype, cache_dir, seed, exact_only=False):
    """A mesh shape posed in its body, the body posed in the world, and points around it (world)."""
    rng = np.random.default_rng(seed)
    s_rot, s_pos, b_rot, b_pos = random_rotation(rng), rng.uniform(-0.02, 0.02, 3), random_rotation(rng), \
        rng.uniform(-0.1, 0.1, 3)
    sq = ShapeQuery([(0, Shape(ShapeKind.MESH, mesh=md, rot=s_rot, pos=s_pos))], dtype=dtype, sdf_cell_size=CELL,
                    cache_dir=cache_dir, exact_only=exact_only)
    local = rng.uniform(-0.09, 0.09, (300, 3))
    rot_w, pos_w = b_rot @ s_rot, b_rot @ s_pos + b_pos
    poses = body_poses(b_rot[None, None], b_pos[None, None], dtype)
    return sq, local, local @ rot_w.T + pos_w, poses, (rot_w, pos_w)


@pytest.mark.parametrize("which", ["sphere_mesh", "torus_mesh"])
def test_exact_mode_equals_trimesh_signed_distance(which, dtype, cache_dir, request):
    tm, md = request.getfixturevalue(which)
    sq, local, world, poses, (rot_w, pos_w) = _posed_query(tm, md, dtype, cache_dir, seed=1)
    res = run_query(sq, world, *poses, exact=True)
    expected = -trimesh.proximity.signed_distance(tm, local)  # trimesh: positive inside
    np.testing.assert_allclose(res["sd"][0], expected, atol=1e-5)
    c = (res["closest"][0] - pos_w) @ rot_w  # shape frame
    _, on_mesh, _ = trimesh.proximity.closest_point(tm, c)
    np.testing.assert_array_less(on_mesh, 1e-5)
    n, sd = res["normal"][0] @ rot_w, res["sd"][0]
    clear = np.abs(sd) > 1e-4
    np.testing.assert_allclose(n[clear], ((local - c) / sd[:, None])[clear],
                               atol=1e-9 if dtype == torch.float64 else 1e-3)


def test_exact_mode_on_a_box_mesh_equals_the_analytic_box(cache_dir):
    """12 triangles describe a box exactly: sd, normal (off the edges) and closest point match the analytic box."""
    h = np.array([0.04, 0.06, 0.03])
    box_tm = trimesh.creation.box(extents=2 * h)
    shapes = [(0, Shape(ShapeKind.MESH, mesh=make_mesh_data(box_tm.vertices, box_tm.faces))),
              (1, Shape(ShapeKind.BOX, tuple(h)))]
    sq = ShapeQuery(shapes, dtype=torch.float64, cache_dir=cache_dir, exact_only=True)
    pts = np.random.default_rng(4).uniform(-0.1, 0.1, (400, 3))
    mesh = run_query(sq, pts, mask=[True, False])
    box = run_query(sq, pts, mask=[False, True])
    np.testing.assert_allclose(mesh["sd"], box["sd"], atol=1e-12)
    np.testing.assert_allclose(mesh["closest"], box["closest"], atol=1e-12)
    off_edges = np.sort(np.abs(np.abs(pts) - h), axis=1)[:, 1] > 1e-6  # the face is unambiguous
    np.testing.assert_allclose(mesh["normal"][0][off_edges], box["normal"][0][off_edges], atol=1e-9)
    # on a face: ‖x − c‖ < ε_len → the face normal
    on_face = run_query(sq, [[h[0], 0.01, 0.02], [0.01, -h[1], -0.02]], mask=[True, False])
    np.testing.assert_allclose(on_face["sd"][0], 0.0, atol=1e-15)
    np.testing.assert_allclose(on_face["normal"][0], [[1, 0, 0], [0, -1, 0]], atol=1e-15)


@pytest.mark.parametrize("which", ["sphere_mesh", "torus_mesh"])
def test_grid_mode_error_is_below_a_quarter_node_spacing(which, dtype, cache_dir, request):
    tm, md = request.getfixturevalue(which)
    sq, local, world, poses, _ = _posed_query(tm, md, dtype, cache_dir, seed=2)
    exact = run_query(sq, world, *poses, exact=True)["sd"][0]
    grid = run_query(sq, world, *poses, exact=False)
    g = sq.sdf_grid(0)
    inside_lattice = np.all((local >= g.lo) & (local <= g.hi), axis=1)
    near_surface = np.abs(exact) < 0.4 * 0.02  # a band around the surface, clear of the medial axes
    sel = inside_lattice & near_surface
    assert sel.sum() > 20
    assert np.max(np.abs(grid["sd"][0][sel] - exact[sel])) <= 0.25 * g.spacing.max()
    np.testing.assert_allclose(np.linalg.norm(grid["normal"][0][sel], axis=1), 1.0, atol=1e-5)


def test_grid_extension_outside_the_lattice(sphere_mesh, cache_dir):
    """Outside the node lattice: sd(x) = sd(c) + ‖x − c‖ and n(x) = n(c), with c = x clamped onto the lattice box."""
    tm, md = sphere_mesh
    sq = ShapeQuery([(0, Shape(ShapeKind.MESH, mesh=md))], dtype=torch.float64, sdf_cell_size=CELL,
                    cache_dir=cache_dir)
    g = sq.sdf_grid(0)
    rng = np.random.default_rng(6)
    far = rng.uniform(-0.5, 0.5, (200, 3))
    far = far[~np.all((far >= g.lo) & (far <= g.hi), axis=1)]
    clamped = np.clip(far, g.lo, g.hi)
    at_far, at_clamped = run_query(sq, far), run_query(sq, clamped)
    np.testing.assert_allclose(at_far["sd"][0], at_clamped["sd"][0] + np.linalg.norm(far - clamped, axis=1),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(at_far["normal"][0], at_clamped["normal"][0], atol=1e-15)
    # the reported closest point is c − sd(c)·n(c)
    np.testing.assert_allclose(at_far["closest"][0],
                               clamped - at_clamped["sd"][0][:, None] * at_clamped["normal"][0], atol=1e-15)


def test_open_mesh_warns_and_keeps_a_winding_number_sign(cache_dir):
    """A bowl (lower hemisphere, open at the top): inside the bowl reads negative, above the opening positive."""
    full = trimesh.creation.icosphere(subdivisions=3, radius=0.05)
    keep = full.triangles_center[:, 2] < 0
    bowl = trimesh.Trimesh(full.vertices, full.faces[keep])
    with pytest.warns(UserWarning, match="bowl.stl: mesh is not watertight"):
        md = make_mesh_data(bowl.vertices, bowl.faces, source="bowl.stl")
    sq = ShapeQuery([(0, Shape(ShapeKind.MESH, mesh=md))], dtype=torch.float64, cache_dir=cache_dir,
                    exact_only=True)
    res = run_query(sq, [[0.0, 0.0, -0.03], [0.0, 0.0, 0.03]])
    assert res["sd"][0, 0] < 0 < res["sd"][0, 1]
    pts = np.random.default_rng(8).uniform(-0.3, 0.3, (100, 3))
    unsigned = run_query(sq, pts, unsigned=True)["sd"][0]
    np.testing.assert_allclose(unsigned, trimesh.proximity.closest_point(bowl, pts)[1], atol=1e-5)
    # culling with a cut-off must not change the signed results of an open mesh
    signed = run_query(sq, pts)["sd"][0]
    cut = run_query(sq, pts, cutoff=0.01)["sd"][0]
    below = signed < 0.01
    np.testing.assert_array_equal(cut[below], signed[below])


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("unsigned", [False, True])
def test_cutoff_never_changes_mesh_results_below_it(exact, unsigned, sphere_mesh, torus_mesh, cache_dir):
    rng = np.random.default_rng(9)
    shapes = [(0, Shape(ShapeKind.MESH, mesh=torus_mesh[1], rot=random_rotation(rng), pos=[0.05, 0, 0])),
              (1, Shape(ShapeKind.MESH, mesh=sphere_mesh[1], pos=[-0.05, 0.02, 0])),
              (1, Shape(ShapeKind.CAPSULE, (0.02, 0.05), pos=[0, 0.08, 0]))]
    sq = ShapeQuery(shapes, dtype=torch.float32, sdf_cell_size=CELL, cache_dir=cache_dir)
    poses = body_poses(np.stack([random_rotation(rng), random_rotation(rng)])[None], rng.uniform(-0.02, 0.02, (1, 2, 3)),
                       torch.float32)
    pts = rng.uniform(-0.15, 0.15, (1, 200, 3))
    full = run_query(sq, pts, *poses, exact=exact, unsigned=unsigned)
    cutoff = rng.uniform(-0.02, 0.05, 200)
    cut = run_query(sq, pts, *poses, cutoff=cutoff, exact=exact, unsigned=unsigned)
    below = full["sd"] < cutoff
    assert below.any() and (~below).any()
    for key in ("sd", "normal", "closest", "shape"):
        assert np.array_equal(cut[key][below], full[key][below]), key
    assert np.all(cut["shape"][~below] == -1)


def test_shared_mesh_builds_one_grid_and_exact_only_builds_none(sphere_mesh, cache_dir):
    md = sphere_mesh[1]
    shapes = [(0, Shape(ShapeKind.MESH, mesh=md)), (1, Shape(ShapeKind.MESH, mesh=md, pos=[1.0, 0, 0]))]
    sq = ShapeQuery(shapes, dtype=torch.float64, sdf_cell_size=CELL, cache_dir=cache_dir)
    assert sq.sdf_grid(0) is sq.sdf_grid(1) is not None
    exact_only = ShapeQuery(shapes, dtype=torch.float64, cache_dir=cache_dir, exact_only=True)
    assert exact_only.sdf_grid(0) is None
    pts = [[0.0, 0.0, 0.06], [1.0, 0.0, -0.07]]
    a = run_query(exact_only, pts, exact=False)  # group_exact is ignored: always the BVH
    b = run_query(sq, pts, exact=True)
    np.testing.assert_array_equal(a["sd"], b["sd"])
    np.testing.assert_array_equal(a["body"], [[0, 1]])


def test_float32_exact_mode_matches_float64(torus_mesh, cache_dir):
    tm, md = torus_mesh
    res = {}
    for dtype in (torch.float32, torch.float64):
        sq, local, world, poses, _ = _posed_query(tm, md, dtype, cache_dir, seed=3, exact_only=True)
        res[dtype] = run_query(sq, world, *poses, exact=True)
    np.testing.assert_allclose(res[torch.float32]["sd"], res[torch.float64]["sd"], atol=2e-6)
    assert math.isfinite(float(res[torch.float32]["sd"].max()))


def test_mesh_query_emits_no_warning_for_watertight_meshes(sphere_mesh, cache_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ShapeQuery([(0, Shape(ShapeKind.MESH, mesh=sphere_mesh[1]))], sdf_cell_size=CELL, cache_dir=cache_dir)


def test_grid_culling_is_tight_beyond_a_lattice_corner(cache_dir):
    """Beyond a lattice corner, along the diagonal, the circumscribed-sphere bound is nearly attained: a cut-off just
    above the true value must still report it (guards the outside-lattice lower bound of the broad phase)."""
    box_tm = trimesh.creation.box(extents=[0.04, 0.04, 0.04])
    md = make_mesh_data(box_tm.vertices, box_tm.faces)
    sq = ShapeQuery([(0, Shape(ShapeKind.MESH, mesh=md))], dtype=torch.float64, sdf_cell_size=CELL,
                    cache_dir=cache_dir)
    g = sq.sdf_grid(0)
    direction = np.array([1.0, -1.0, 1.0]) / math.sqrt(3)
    corner = np.where(direction > 0, g.hi, g.lo)
    pts = corner + np.outer([0.001, 0.01, 0.05], direction)
    full = run_query(sq, pts)["sd"][0]
    np.testing.assert_allclose(full, g.values[-1, 0, -1] + np.array([0.001, 0.01, 0.05]), rtol=1e-12)
    cut = run_query(sq, pts, cutoff=full * (1 + 1e-9))
    np.testing.assert_array_equal(cut["sd"][0], full)
