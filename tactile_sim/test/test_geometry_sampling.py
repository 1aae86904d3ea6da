"""Surface sampling (docs/models/scene.md#sampling): budget split, box lattices, area shares, points on the surface,
determinism, FPS."""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh

from helpers_geometry import PRIMITIVES, primitive_inside, primitive_surface_residual, random_rotation
from tactile_sim.errors import SceneError
from tactile_sim.geometry.mesh_io import make_mesh_data
from tactile_sim import derived_cache
from tactile_sim.geometry.sampling import FPS_CACHE_MIN_PICKS, apportion, farthest_point_indices, sample_body_surface
from tactile_sim.geometry.shapes import Shape, ShapeKind


@pytest.fixture(scope="module")
def icosphere():
    tm = trimesh.creation.icosphere(subdivisions=2, radius=0.04)
    return tm, Shape(ShapeKind.MESH, mesh=make_mesh_data(tm.vertices, tm.faces), pos=[0.1, 0.0, 0.0])


def _posed(shape, seed):
    rng = np.random.default_rng(seed)
    return Shape(shape.kind, shape.size, mesh=shape.mesh, rot=random_rotation(rng), pos=rng.uniform(-0.1, 0.1, 3))


def test_apportion_largest_remainder_ties_and_minimum_one():
    assert apportion(10, [1, 1, 1]).tolist() == [4, 3, 3]  # equal remainders: the earlier entry gets the extra
    assert apportion(10, [1, 2, 2]).tolist() == [2, 4, 4]
    assert apportion(7, [1, 1, 2]).tolist() == [2, 2, 3]  # quotas 1.75, 1.75, 3.5: remainders .75 .75 .5
    assert apportion(5, [100, 1]).tolist() == [5, 1]  # the tiny shape still gets one sample
    assert apportion(0, [1, 2]).tolist() == [0, 0]


def _box_cells(half, m):
    """Spec docs/models/scene.md#sampling count form: face shares m_f, then max(1, ⌊L_u/s_f + ½⌋) × max(1, ⌊L_v/s_f +
    ½⌋) cells per face."""
    sizes = [(2 * half[u], 2 * half[v]) for axis in range(3) for u, v in [[a for a in range(3) if a != axis]] * 2]
    total = 0
    for (lu, lv), m_f in zip(sizes, apportion(m, [lu * lv for lu, lv in sizes])):
        s_f = math.sqrt(lu * lv / m_f)
        total += max(1, math.floor(lu / s_f + 0.5 + 1e-9)) * max(1, math.floor(lv / s_f + 0.5 + 1e-9))
    return total


def test_budget_split_and_area_shares(icosphere):
    shapes = [_posed(PRIMITIVES[k], i) for i, k in enumerate(sorted(PRIMITIVES))] + [icosphere[1]]
    cloud = sample_body_surface(shapes, n=700, seed=3)
    counts = np.bincount(cloud.shape_index, minlength=len(shapes))
    expected = apportion(700, [s.area for s in shapes])
    for i, shape in enumerate(shapes):
        mine = cloud.shape_index == i
        np.testing.assert_allclose(cloud.areas[mine].sum(), shape.area, rtol=1e-12)
        expected_count = _box_cells(shape.size, expected[i]) if shape.kind == ShapeKind.BOX else expected[i]
        assert counts[i] == expected_count


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_primitive_samples_lie_on_the_surface_with_outward_normals(name):
    shape = _posed(PRIMITIVES[name], 5)
    cloud = sample_body_surface([shape], n=300, seed=1)
    local = (cloud.points - shape.pos) @ shape.rot
    normal = cloud.normals @ shape.rot
    np.testing.assert_array_less(primitive_surface_residual(shape, local), 1e-12)
    np.testing.assert_allclose(np.linalg.norm(normal, axis=1), 1.0, rtol=1e-12)
    # a small step along the normal leaves the shape, against it enters
    assert not primitive_inside(shape, local + 1e-6 * normal).any()
    assert primitive_inside(shape, local - 1e-6 * normal).all()


def test_mesh_samples_lie_on_the_mesh_with_face_normals(icosphere):
    tm, shape = icosphere
    cloud = sample_body_surface([shape], n=200, seed=2)
    local = cloud.points - shape.pos
    _, dist, tri = trimesh.proximity.closest_point(tm, local)
    np.testing.assert_array_less(dist, 1e-9)
    np.testing.assert_allclose(cloud.normals, tm.face_normals[tri], atol=1e-9)
    assert len(cloud) == 200 and np.allclose(cloud.areas, shape.area / 200, rtol=1e-15)


def test_box_lattice_with_spacing():
    h = (0.05, 0.03, 0.02)
    cloud = sample_body_surface([Shape(ShapeKind.BOX, h)], spacing=0.01)
    # faces ±x: 6 × 4 cells, ±y: 10 × 4, ±z: 10 × 6 (0.1/0.01 = 10.000000000000002 still gives 10)
    sizes = [24, 24, 40, 40, 60, 60]
    assert len(cloud) == sum(sizes)
    starts = np.cumsum([0] + sizes)
    for f, (axis, sign) in enumerate([(0, 1), (0, -1), (1, 1), (1, -1), (2, 1), (2, -1)]):
        face = slice(starts[f], starts[f + 1])
        expected_normal = np.zeros(3)
        expected_normal[axis] = sign
        assert np.all(cloud.normals[face] == expected_normal)
        np.testing.assert_allclose(cloud.points[face, axis], sign * h[axis], rtol=0, atol=0)
        np.testing.assert_allclose(cloud.areas[face], 1e-4, rtol=1e-12)
    # cell centres: on the +z face x ∈ {−0.045, …, 0.045}, y ∈ {−0.025, …, 0.025}
    top = cloud.points[starts[4]:starts[5]]
    np.testing.assert_allclose(np.unique(top[:, 0].round(12)), np.linspace(-0.045, 0.045, 10), atol=1e-15)
    np.testing.assert_allclose(np.unique(top[:, 1].round(12)), np.linspace(-0.025, 0.025, 6), atol=1e-15)


def test_box_lattice_with_a_count_budget():
    h = (0.05, 0.05, 0.05)
    cloud = sample_body_surface([Shape(ShapeKind.BOX, h)], n=100)
    # shares 17, 17, 17, 17, 16, 16 (earlier faces first): 4 × 4 cells each (s_f = 0.0243 or 0.025 m)
    assert len(cloud) == _box_cells(h, 100) == 96
    flat = sample_body_surface([Shape(ShapeKind.BOX, (0.1, 0.1, 0.001))], n=10)  # thin faces still get 1 cell
    assert len(flat) == _box_cells((0.1, 0.1, 0.001), 10)
    np.testing.assert_allclose(cloud.areas.sum(), 24 * 0.05**2, rtol=1e-12)


def test_spacing_budget_for_curved_shapes():
    sphere = PRIMITIVES["sphere"]
    cloud = sample_body_surface([sphere], spacing=0.01)
    assert len(cloud) == math.ceil(sphere.area / 0.01**2)


def test_deterministic_per_seed_and_one_stream_per_cloud(icosphere):
    shapes = [PRIMITIVES["capsule"], PRIMITIVES["cylinder"], icosphere[1]]
    a = sample_body_surface(shapes, n=150, seed=7)
    b = sample_body_surface(shapes, n=150, seed=7)
    c = sample_body_surface(shapes, n=150, seed=8)
    for key in ("points", "normals", "areas", "shape_index"):
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key))
    assert not np.array_equal(a.points, c.points)
    # a shared generator continues shape by shape: split calls == one call (spacing budgets are per shape)
    whole = sample_body_surface(shapes, spacing=0.01, seed=4)
    rng = np.random.default_rng(4)
    parts = [sample_body_surface([s], spacing=0.01, seed=rng).points for s in shapes]
    np.testing.assert_array_equal(whole.points, np.concatenate(parts))


def _textbook_fps(points, n, start):
    dist = np.full(len(points), np.inf)
    chosen, index = [], start
    for _ in range(n):
        chosen.append(index)
        d = points - points[index]
        dist = np.minimum(dist, np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]))
        dist[index] = -np.inf
        index = int(np.argmax(dist))
    return np.array(chosen)


@pytest.mark.parametrize("seed", [0, 1])
def test_farthest_point_matches_the_textbook_loop_computed_and_cached(seed, tmp_path, monkeypatch):
    monkeypatch.setenv(derived_cache.ENV_VAR, str(tmp_path))
    rng = np.random.default_rng(seed)
    pts = rng.uniform(-1, 1, (1500, 3))
    lattice = np.round(rng.uniform(-1, 1, (800, 3)) * 2) / 2  # many exact ties and duplicates
    for _ in ("computed", "read from the cache"):
        assert np.array_equal(farthest_point_indices(pts, 300, 11), _textbook_fps(pts, 300, 11))
        assert np.array_equal(farthest_point_indices(lattice, 200, 5), _textbook_fps(lattice, 200, 5))
        assert np.array_equal(farthest_point_indices(pts, 20, 3), _textbook_fps(pts, 20, 3))
    assert len(list((tmp_path / "fps").iterdir())) == 2, "one file per order of >= FPS_CACHE_MIN_PICKS picks"


def test_the_farthest_point_cache_is_keyed_by_its_inputs_and_rebuilt_when_damaged(tmp_path, monkeypatch):
    monkeypatch.setenv(derived_cache.ENV_VAR, str(tmp_path))
    pts = np.random.default_rng(3).uniform(-1, 1, (600, 3))
    n = FPS_CACHE_MIN_PICKS
    farthest_point_indices(pts, n, 0)
    moved = pts.copy()
    moved[7, 2] += 1e-12
    for other in ((pts, n, 1), (pts, n + 1, 0), (moved, n, 0), (pts.astype(np.float32), n, 0)):
        assert np.array_equal(farthest_point_indices(*other), _textbook_fps(*other))
    files = sorted((tmp_path / "fps").iterdir())
    assert len(files) == 5
    for path in files:
        path.write_bytes(path.read_bytes()[:-3])
    assert np.array_equal(farthest_point_indices(pts, n, 0), _textbook_fps(pts, n, 0))
    assert len(sorted((tmp_path / "fps").iterdir())) == 5, "the damaged file is rewritten in place"


def test_errors_and_empty_budget():
    with pytest.raises(SceneError, match="'floor'.*a plane cannot be sampled"):
        sample_body_surface([PRIMITIVES["sphere"], Shape(ShapeKind.PLANE, (), name="floor")], n=10)
    with pytest.raises(ValueError, match="exactly one of n"):
        sample_body_surface([PRIMITIVES["sphere"]], n=10, spacing=0.01)
    with pytest.raises(ValueError, match="exactly one of n"):
        sample_body_surface([PRIMITIVES["sphere"]])
    with pytest.raises(ValueError, match="spacing must be finite and > 0"):
        sample_body_surface([PRIMITIVES["sphere"]], spacing=0.0)
    with pytest.raises(ValueError, match="n must be an integer >= 0"):
        sample_body_surface([PRIMITIVES["sphere"]], n=-1)
    empty = sample_body_surface([PRIMITIVES["sphere"], PRIMITIVES["box"]], n=0)
    assert len(empty) == 0 and empty.points.shape == (0, 3)
