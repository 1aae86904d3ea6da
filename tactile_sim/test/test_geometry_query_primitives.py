"""ShapeQuery on analytic primitives: closed forms, exactness, ties, unsigned mode, culling, batching
(docs/models/scene.md#signed-distance, docs/models/scene.md#candidates)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers_geometry import (PRIMITIVES, body_poses, identity_poses, primitive_inside, primitive_surface_grid,
                              primitive_surface_residual, random_rotation, run_query)
from tactile_sim.geometry.query import QueryResult, ShapeQuery
from tactile_sim.geometry.shapes import Shape, ShapeKind


def _tol(dtype):
    return 1e-12 if dtype == torch.float64 else 3e-6


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_primitive_distance_is_exact(name, dtype):
    """Closest point on the surface, |sd| = its distance, sign = inside test, and no surface point is closer."""
    rng = np.random.default_rng(3)
    base = PRIMITIVES[name]
    shape_rot, shape_pos = random_rotation(rng), rng.uniform(-0.05, 0.05, 3)
    shape = Shape(base.kind, base.size, rot=shape_rot, pos=shape_pos)
    body_rot, body_pos = random_rotation(rng), rng.uniform(-0.2, 0.2, 3)
    sq = ShapeQuery([(1, shape)], dtype=dtype)
    local = rng.uniform(-0.15, 0.15, (400, 3))
    rot_w, pos_w = body_rot @ shape_rot, body_rot @ shape_pos + body_pos  # shape frame in the world
    world = local @ rot_w.T + pos_w
    rots = np.stack([np.eye(3), body_rot])[None]
    poss = np.stack([np.zeros(3), body_pos])[None]
    r = run_query(sq, world, *body_poses(rots, poss, dtype))
    tol = _tol(dtype)
    assert np.all(r["shape"] == 0) and np.all(r["body"] == 1)
    sd, n, c = r["sd"][0], r["normal"][0] @ rot_w, (r["closest"][0] - pos_w) @ rot_w  # back to the shape frame
    np.testing.assert_array_less(primitive_surface_residual(shape, c), tol)
    np.testing.assert_allclose(np.abs(sd), np.linalg.norm(local - c, axis=1), atol=tol)
    clear = np.abs(sd) > 10 * tol
    assert np.array_equal((sd < 0)[clear], primitive_inside(shape, local)[clear])
    nearest_sample = np.min(np.linalg.norm(local[:, None] - primitive_surface_grid(shape)[None], axis=2), axis=1)
    assert np.all(nearest_sample >= np.abs(sd) - tol)
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=tol)
    far = np.abs(sd) > 1e-4
    np.testing.assert_allclose(n[far], (local - c)[far] / sd[far, None], atol=1e-9 if dtype == torch.float64 else 1e-3)


def test_box_mesh_of_trimesh_agrees_with_analytic_box():
    """trimesh's exact signed distance to its (exact) box mesh equals the analytic box (trimesh: + inside)."""
    trimesh = pytest.importorskip("trimesh")
    h = np.array([0.04, 0.06, 0.03])
    sq = ShapeQuery([(0, Shape(ShapeKind.BOX, tuple(h)))], dtype=torch.float64)
    pts = np.random.default_rng(0).uniform(-0.1, 0.1, (200, 3))
    expected = -trimesh.proximity.signed_distance(trimesh.creation.box(extents=2 * h), pts)
    np.testing.assert_allclose(run_query(sq, pts)["sd"][0], expected, atol=1e-5)


def test_sphere_over_pad_closed_form(dtype):
    """ContactDepthProbe Check 1 geometry: sd at lateral distance ρ = sqrt(ρ² + (r − d)²) − r, centre probe r − d − r."""
    r, d = 0.02, 0.004
    sq = ShapeQuery([(0, Shape(ShapeKind.SPHERE, (r,)))], dtype=dtype)
    rho = np.linspace(0.0, 0.03, 31)
    probes = np.stack([rho, np.zeros_like(rho), np.zeros_like(rho)], 1)
    rot, pos = body_poses(np.eye(3)[None, None], np.array([[[0.0, 0.0, r - d]]]), dtype)
    res = run_query(sq, probes, rot, pos)
    np.testing.assert_allclose(res["sd"][0], np.sqrt(rho**2 + (r - d) ** 2) - r, atol=_tol(dtype))
    np.testing.assert_allclose(res["normal"][0, 0], [0, 0, -1], atol=_tol(dtype))


def test_box_inside_face_and_outside_edge(dtype):
    """SurfaceDistanceProbe Check 3 geometry: depth e from the nearest face reads −e; near an edge √(e_x² + e_y²)."""
    h = (0.1, 0.2, 0.3)
    sq = ShapeQuery([(0, Shape(ShapeKind.BOX, h))], dtype=dtype)
    pts = np.array([[0.1 - 0.01, 0.0, 0.0], [0.0, -0.2 + 0.02, 0.05], [0.1 + 0.03, 0.2 + 0.04, 0.0]])
    res = run_query(sq, pts)
    np.testing.assert_allclose(res["sd"][0], [-0.01, -0.02, 0.05], atol=_tol(dtype))
    np.testing.assert_allclose(res["normal"][0], [[1, 0, 0], [0, -1, 0], [0.6, 0.8, 0]], atol=_tol(dtype))
    np.testing.assert_allclose(res["closest"][0], [[0.1, 0, 0], [0, -0.2, 0.05], [0.1, 0.2, 0]], atol=_tol(dtype))


def test_plane_is_half_space_below_its_frame(dtype):
    rot = random_rotation(np.random.default_rng(5))
    sq = ShapeQuery([(0, Shape(ShapeKind.PLANE, (), rot=rot, pos=[0, 0, 0.5]))], dtype=dtype)
    local = np.array([[1.0, 2.0, 0.3], [-4.0, 0.5, -0.2]])
    res = run_query(sq, local @ rot.T + [0, 0, 0.5])
    np.testing.assert_allclose(res["sd"][0], [0.3, -0.2], atol=1e-6)
    np.testing.assert_allclose(res["normal"][0], np.tile(rot[:, 2], (2, 1)), atol=1e-6)
    np.testing.assert_allclose(res["closest"][0], (local * [1, 1, 0]) @ rot.T + [0, 0, 0.5], atol=1e-6)


def test_undefined_gradients_take_lowest_axis_plus_side(dtype):
    """Sphere centre, capsule and cylinder axis: +x of the shape frame (docs/models/scene.md#signed-distance).

    Rotated in float64 only: float32 rounding of a rotated point (~2e-9 m at 3 cm) exceeds ε_len = 1e-9 m.
    """
    rot = random_rotation(np.random.default_rng(7)) if dtype == torch.float64 else np.eye(3)
    shapes = [Shape(ShapeKind.SPHERE, (0.05,)), Shape(ShapeKind.CAPSULE, (0.02, 0.1)),
              Shape(ShapeKind.CYLINDER, (0.03, 0.5))]
    rots, poss = body_poses(np.tile(rot, (1, 3, 1, 1)), np.zeros((1, 3, 3)), dtype)
    sq = ShapeQuery([(i, s) for i, s in enumerate(shapes)], dtype=dtype)
    for i, (local, sd) in enumerate([([0, 0, 0], -0.05), ([0, 0, 0.03], -0.02), ([0, 0, 0.1], -0.03)]):
        res = run_query(sq, [rot @ np.asarray(local, float)], rots, poss, mask=np.arange(3) == i)
        np.testing.assert_allclose(res["sd"][0, 0], sd, atol=_tol(dtype))
        np.testing.assert_allclose(res["normal"][0, 0], rot[:, 0], atol=_tol(dtype))
        np.testing.assert_allclose(res["closest"][0, 0], rot @ (np.asarray(local) + [-sd, 0, 0]), atol=_tol(dtype))


@pytest.mark.parametrize("kind, size, point, normal", [
    (ShapeKind.BOX, (0.5, 0.5, 1.0), [0.0, 0.0, 0.0], [1, 0, 0]),     # x/y tie at the centre: x, + side
    (ShapeKind.BOX, (0.5, 0.5, 0.5), [-0.25, -0.25, 0.0], [-1, 0, 0]),  # x/y tie on the − side: x, − side
    (ShapeKind.BOX, (0.5, 0.5, 0.5), [0.0, -0.25, 0.0], [0, -1, 0]),    # no tie: nearest face
    (ShapeKind.CYLINDER, (0.5, 2.0), [0.25, 0.0, 0.75], [1, 0, 0]),   # radial/axial tie: radial
    (ShapeKind.CYLINDER, (0.5, 2.0), [0.0, 0.0, -0.75], [0, 0, -1]),  # on the axis near the bottom cap
])
def test_exact_ties_inside(kind, size, point, normal, dtype):
    sq = ShapeQuery([(0, Shape(kind, size))], dtype=dtype)
    res = run_query(sq, [point])
    np.testing.assert_array_equal(res["normal"][0, 0], normal)


def test_scene_order_breaks_ties_and_the_deepest_shape_wins(dtype):
    sphere = Shape(ShapeKind.SPHERE, (0.05,))
    sq = ShapeQuery([(2, sphere), (0, sphere), (1, Shape(ShapeKind.SPHERE, (0.08,)))], dtype=dtype)
    pts = [[0.0, 0.0, 0.01], [0.3, 0.0, 0.0]]
    res = run_query(sq, pts, mask=[True, True, False])
    assert res["shape"].tolist() == [[0, 0]] and res["body"].tolist() == [[2, 2]]
    res = run_query(sq, pts)
    assert res["shape"].tolist() == [[2, 2]] and res["body"].tolist() == [[1, 1]]


def test_unsigned_mode_reports_distance_to_the_nearest_surface(dtype):
    box = Shape(ShapeKind.BOX, (0.5, 0.5, 0.1))
    sphere = Shape(ShapeKind.SPHERE, (0.03,), pos=[0.0, 0.0, 0.12])
    sq = ShapeQuery([(0, box), (1, sphere)], dtype=dtype)
    # 3 cm deep in the box and 2 cm below the sphere; 5 cm inside the box's +x face, far from the sphere
    pts = [[0.0, 0.0, 0.07], [0.45, 0.0, 0.0]]
    signed, unsigned = run_query(sq, pts), run_query(sq, pts, unsigned=True)
    np.testing.assert_allclose(signed["sd"][0], [-0.03, -0.05], atol=_tol(dtype))
    assert signed["shape"].tolist() == [[0, 0]]
    np.testing.assert_allclose(unsigned["sd"][0], [0.02, 0.05], atol=_tol(dtype))
    assert unsigned["shape"].tolist() == [[1, 0]]
    np.testing.assert_allclose(unsigned["closest"][0], [[0, 0, 0.09], [0.5, 0, 0]], atol=_tol(dtype))
    np.testing.assert_allclose(unsigned["normal"][0], [[0, 0, -1], [1, 0, 0]], atol=_tol(dtype))


def _random_scene(seed, n_shapes, n_bodies=3):
    rng = np.random.default_rng(seed)
    kinds = [ShapeKind.SPHERE, ShapeKind.BOX, ShapeKind.CAPSULE, ShapeKind.CYLINDER]
    shapes = []
    for _ in range(n_shapes):
        kind = kinds[rng.integers(len(kinds))]
        size = {ShapeKind.SPHERE: 1, ShapeKind.BOX: 3, ShapeKind.CAPSULE: 2, ShapeKind.CYLINDER: 2}[kind]
        shapes.append((int(rng.integers(n_bodies)), Shape(kind, tuple(rng.uniform(0.01, 0.08, size)),
                                                          rot=random_rotation(rng), pos=rng.uniform(-0.1, 0.1, 3))))
    rots = np.stack([[random_rotation(rng) for _ in range(n_bodies)] for _ in range(2)])
    poss = rng.uniform(-0.1, 0.1, (2, n_bodies, 3))
    return shapes, rots, poss, rng


@settings(max_examples=25)
@given(seed=st.integers(0, 2**31 - 1), n_shapes=st.integers(1, 6), unsigned=st.booleans(),
       f32=st.booleans())
def test_cutoff_and_culling_never_change_results_below_the_cutoff(seed, n_shapes, unsigned, f32):
    dtype = torch.float32 if f32 else torch.float64
    shapes, rots, poss, rng = _random_scene(seed, n_shapes)
    sq = ShapeQuery(shapes, dtype=dtype)
    pts = rng.uniform(-0.3, 0.3, (2, 64, 3))
    rot, pos = body_poses(rots, poss, dtype)
    full = run_query(sq, pts, rot, pos, unsigned=unsigned)
    cutoff = rng.uniform(-0.05, 0.2, 64)
    cutoff[::7] = full["sd"][0, ::7]  # cut-off exactly at the minimum: that point reads "none"
    cut = run_query(sq, pts, rot, pos, cutoff=cutoff, unsigned=unsigned)
    below = full["sd"] < cutoff
    for key in ("sd", "normal", "closest", "shape", "body"):
        assert np.array_equal(cut[key][below], full[key][below]), key
    assert np.all(cut["sd"][~below] == np.inf) and np.all(cut["shape"][~below] == -1)
    assert np.all(cut["body"][~below] == -1) and np.all(cut["normal"][~below] == 0)
    np.testing.assert_array_equal(cut["closest"][~below], pts.astype(cut["closest"].dtype)[~below])


@settings(max_examples=25)
@given(seed=st.integers(0, 2**31 - 1), n_shapes=st.integers(1, 5), unsigned=st.booleans())
def test_rigid_motion_of_scene_and_points_moves_the_results(seed, n_shapes, unsigned):
    shapes, rots, poss, rng = _random_scene(seed, n_shapes)
    sq = ShapeQuery(shapes, dtype=torch.float64)
    pts = rng.uniform(-0.3, 0.3, (2, 32, 3))
    a = run_query(sq, pts, *body_poses(rots, poss), unsigned=unsigned)
    g_rot, g_pos = random_rotation(rng), rng.uniform(-1, 1, 3)
    b = run_query(sq, pts @ g_rot.T + g_pos, *body_poses(g_rot @ rots, poss @ g_rot.T + g_pos), unsigned=unsigned)
    np.testing.assert_allclose(b["sd"], a["sd"], atol=1e-12)
    assert np.array_equal(a["shape"], b["shape"])
    np.testing.assert_allclose(b["normal"], a["normal"] @ g_rot.T, atol=1e-9)
    np.testing.assert_allclose(b["closest"], a["closest"] @ g_rot.T + g_pos, atol=1e-12)


@settings(max_examples=30)
@given(seed=st.integers(0, 2**31 - 1), name=st.sampled_from(sorted(PRIMITIVES)))
def test_gradient_is_unit_and_matches_finite_differences_outside(seed, name):
    """Outside a convex shape the SDF is smooth: |∇sd| = 1 and the normal is its gradient."""
    rng = np.random.default_rng(seed)
    sq = ShapeQuery([(0, PRIMITIVES[name])], dtype=torch.float64)
    x = rng.uniform(-0.15, 0.15, (1, 3))
    base = run_query(sq, x)
    if base["sd"][0, 0] < 1e-3:
        x = base["closest"][0] + 2e-3 * base["normal"][0]  # move the point just outside
        base = run_query(sq, x)
    step = 1e-7
    stencil = np.concatenate([x + step * np.eye(3), x - step * np.eye(3)])
    sd = run_query(sq, stencil)["sd"][0]
    fd = (sd[:3] - sd[3:]) / (2 * step)
    np.testing.assert_allclose(np.linalg.norm(fd), 1.0, atol=1e-6)
    np.testing.assert_allclose(fd, base["normal"][0, 0], atol=1e-6)


def test_env_axis_uses_each_envs_body_poses(dtype):
    shapes, rots, poss, rng = _random_scene(11, 4)
    sq = ShapeQuery(shapes, dtype=dtype)
    pts = rng.uniform(-0.3, 0.3, (2, 20, 3))
    both = run_query(sq, pts, *body_poses(rots, poss, dtype))
    for env in range(2):
        one = run_query(sq, pts[env], *body_poses(rots[env:env + 1], poss[env:env + 1], dtype))
        for key in ("sd", "closest", "shape"):
            np.testing.assert_array_equal(both[key][env], one[key][0])


def test_body_pose_composes_with_shape_pose(dtype):
    rng = np.random.default_rng(2)
    s_rot, s_pos, b_rot, b_pos = random_rotation(rng), rng.uniform(-1, 1, 3), random_rotation(rng), rng.uniform(-1, 1, 3)
    nested = ShapeQuery([(0, Shape(ShapeKind.BOX, (0.1, 0.2, 0.3), rot=s_rot, pos=s_pos))], dtype=dtype)
    flat = ShapeQuery([(0, Shape(ShapeKind.BOX, (0.1, 0.2, 0.3), rot=b_rot @ s_rot, pos=b_rot @ s_pos + b_pos))],
                      dtype=dtype)
    pts = rng.uniform(-1.5, 1.5, (50, 3))
    a = run_query(nested, pts, *body_poses(b_rot[None, None], b_pos[None, None], dtype))
    b = run_query(flat, pts)
    np.testing.assert_allclose(a["sd"], b["sd"], atol=10 * _tol(dtype))
    np.testing.assert_allclose(a["closest"], b["closest"], atol=10 * _tol(dtype))


def test_groups_select_their_candidate_shapes(dtype):
    shapes, rots, poss, rng = _random_scene(5, 5)
    sq = ShapeQuery(shapes, dtype=dtype)
    rot, pos = body_poses(rots, poss, dtype)
    pts = torch.as_tensor(rng.uniform(-0.3, 0.3, (2, 30, 3)), dtype=dtype)
    masks = torch.tensor([[True, False, True, False, True], [False, True, False, True, False], [False] * 5])
    group = torch.arange(30, dtype=torch.int32) % 3
    res = sq.query(pts, rot, pos, group, masks, torch.full((30,), math.inf, dtype=dtype))
    for g in range(3):
        alone = run_query(sq, pts[:, group == g].numpy(), rot, pos, mask=masks[g].numpy())
        np.testing.assert_array_equal(res.sd[:, group == g].numpy(), alone["sd"])
        np.testing.assert_array_equal(res.shape[:, group == g].numpy(), alone["shape"])
    assert torch.all(res.shape[:, group == 2] == -1)
    np.testing.assert_array_equal(sq.body_shape_mask([shapes[0][0]]).numpy(),
                                  [b == shapes[0][0] for b, _ in shapes])


def test_outputs_are_persistent_buffers_unless_out_is_given():
    sq = ShapeQuery([(0, Shape(ShapeKind.SPHERE, (0.1,)))], dtype=torch.float64)
    rot, pos = identity_poses(1, 1)
    group, mask, cut = torch.zeros(2, dtype=torch.int32), torch.ones(1, 1, dtype=torch.bool), torch.full((2,), math.inf,
                                                                                                         dtype=torch.float64)
    pts_a = torch.tensor([[[0.5, 0, 0], [0, 0.3, 0]]], dtype=torch.float64)
    pts_b = torch.tensor([[[0.2, 0, 0], [0, 0.6, 0]]], dtype=torch.float64)
    a = sq.query(pts_a, rot, pos, group, mask, cut)
    b = sq.query(pts_b, rot, pos, group, mask, cut)
    assert a.sd is b.sd and torch.allclose(a.sd, torch.tensor([[0.1, 0.5]], dtype=torch.float64))
    mine = QueryResult(torch.empty(1, 2, dtype=torch.float64), torch.empty(1, 2, 3, dtype=torch.float64),
                       torch.empty(1, 2, 3, dtype=torch.float64), torch.empty(1, 2, dtype=torch.int32),
                       torch.empty(1, 2, dtype=torch.int64))
    c = sq.query(pts_a, rot, pos, group, mask, cut, out=mine)
    assert c is mine and torch.allclose(mine.sd, torch.tensor([[0.4, 0.2]], dtype=torch.float64))
    assert torch.allclose(b.sd, torch.tensor([[0.1, 0.5]], dtype=torch.float64))  # own buffers untouched
    d = sq.query(pts_b, rot, pos, group.long(), mask, cut)  # back to the own buffers; int64 groups accepted
    assert d.sd is a.sd and torch.allclose(d.sd, torch.tensor([[0.1, 0.5]], dtype=torch.float64))


def test_float32_matches_float64():
    shapes, rots, poss, rng = _random_scene(8, 5)
    pts = rng.uniform(-0.3, 0.3, (2, 50, 3))
    r64 = run_query(ShapeQuery(shapes, dtype=torch.float64), pts, *body_poses(rots, poss, torch.float64))
    r32 = run_query(ShapeQuery(shapes, dtype=torch.float32), pts, *body_poses(rots, poss, torch.float32))
    np.testing.assert_allclose(r32["sd"], r64["sd"], atol=2e-6)
    np.testing.assert_allclose(r32["closest"], r64["closest"], atol=2e-6)


def test_no_shapes_and_empty_batches():
    sq = ShapeQuery([], dtype=torch.float64)
    res = run_query(sq, [[0.0, 0.0, 0.0]])
    assert res["sd"][0, 0] == np.inf and res["shape"][0, 0] == -1
    sq = ShapeQuery([(0, Shape(ShapeKind.SPHERE, (0.1,)))], dtype=torch.float64)
    rot, pos = identity_poses(1, 1)
    empty = sq.query(torch.zeros(1, 0, 3, dtype=torch.float64), rot, pos, torch.zeros(0, dtype=torch.int32),
                     torch.ones(1, 1, dtype=torch.bool), torch.zeros(0, dtype=torch.float64))
    assert empty.sd.shape == (1, 0) and empty.closest.shape == (1, 0, 3)


def test_bad_inputs_name_the_argument():
    sq = ShapeQuery([(2, Shape(ShapeKind.SPHERE, (0.1,)))], dtype=torch.float32)
    rot, pos = identity_poses(1, 3, torch.float32)
    args = dict(points=torch.zeros(1, 4, 3), body_rot=rot, body_pos=pos, point_group=torch.zeros(4, dtype=torch.int32),
                group_shape_mask=torch.ones(1, 1, dtype=torch.bool), cutoff=torch.zeros(4))
    with pytest.raises(ValueError, match="points must be a torch.float32"):
        sq.query(**{**args, "points": torch.zeros(1, 4, 3, dtype=torch.float64)})
    with pytest.raises(ValueError, match=r"group_shape_mask must be .* shape \[1, 1\]"):
        sq.query(**{**args, "group_shape_mask": torch.ones(1, 2, dtype=torch.bool)})
    with pytest.raises(ValueError, match=r"cutoff must be .* shape \[4\]"):
        sq.query(**{**args, "cutoff": torch.zeros(5)})
    with pytest.raises(ValueError, match="body_rot has 2 bodies but shapes refer to body 2"):
        sq.query(**{**args, "body_rot": rot[:, :2], "body_pos": pos[:, :2]})
    with pytest.raises(ValueError, match=r"points must be \[E, P, 3\]"):
        sq.query(**{**args, "points": torch.zeros(4, 3)})
    with pytest.raises(ValueError, match="dtype must be"):
        ShapeQuery([], dtype=torch.float16)
