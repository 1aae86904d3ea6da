"""Mesh-conforming layouts: taxels on a link's collision surface at about the requested spacing, outward normals."""

import numpy as np
import pytest
import trimesh
from scipy.spatial import cKDTree

from helpers_layout import raises_config_error
from tactile_sim.config import load_config
from tactile_sim.errors import ConfigError
from tactile_sim.geometry.shapes import MeshData, Shape, ShapeKind
from tactile_sim.geometry.transforms import rpy_to_matrix_np
from tactile_sim.sensors.layout.sources import conforming_layout
from tactile_sim.suite import SensorSuite

H = np.array([0.02, 0.015, 0.008])  # box half extents, m
S = 0.003  # spacing, m


def nn_dist(p):
    return cKDTree(p).query(p, k=2)[0][:, 1]


def test_box_facing_covers_only_that_face():
    box = Shape(ShapeKind.BOX, tuple(H), name="pad")
    lay = conforming_layout([box], S, facing=(0, 0, 1), seed=3)
    p, n = lay.flat_positions, lay.flat_normals
    assert lay.shape == (lay.n,) and not lay.is_grid
    np.testing.assert_allclose(p[:, 2], H[2], atol=1e-15)  # on the +z face only
    assert np.all(np.abs(p[:, :2]) <= H[:2] + 1e-15)
    np.testing.assert_allclose(n, np.broadcast_to([0, 0, 1], n.shape), atol=1e-15)
    np.testing.assert_array_equal(lay.flat_radius, S / 2)
    # spacing: never closer than S, nearest neighbours within a factor 2 (Poisson-disk cover)
    d = nn_dist(p)
    assert d.min() > S and d.max() < 2 * S and 1.0 < np.median(d) / S < 1.5
    # count: a random close packing of discs of diameter S covers about 55–70 % of the face
    area = 4 * H[0] * H[1]
    assert 0.5 * area / S**2 < lay.n < 1.0 * area / S**2
    # cover: every point of the face is within about S of a taxel
    u, v = np.meshgrid(np.linspace(-H[0], H[0], 60), np.linspace(-H[1], H[1], 40))
    probe = np.stack([u.ravel(), v.ravel(), np.full(u.size, H[2])], axis=1)
    assert cKDTree(p).query(probe)[0].max() < 1.5 * S


def test_whole_box_surface_and_outward_normals():
    rot = rpy_to_matrix_np([0.3, -0.2, 1.0])
    box = Shape(ShapeKind.BOX, tuple(H), rot=rot, pos=np.array([0.1, 0.0, -0.05]))
    lay = conforming_layout([box], 0.004, seed=0)
    q = (lay.flat_positions - box.pos) @ rot  # back into the box frame
    m = lay.flat_normals @ rot
    np.testing.assert_allclose(np.linalg.norm(lay.flat_normals, axis=1), 1.0, atol=1e-14)
    # each point lies on a face and its normal is that face's outward axis
    on_face = np.isclose(np.abs(q), H, atol=1e-12)
    assert np.all(on_face.any(axis=1))
    axis = np.argmax(np.abs(m), axis=1)
    np.testing.assert_allclose(np.abs(m[np.arange(len(m)), axis]), 1.0, atol=1e-12)
    assert np.all(on_face[np.arange(len(m)), axis])
    assert np.all(np.sign(m[np.arange(len(m)), axis]) == np.sign(q[np.arange(len(m)), axis]))
    # every face gets taxels roughly in proportion to its area
    for k in range(3):
        for sign in (1, -1):
            face = (axis == k) & (np.sign(m[np.arange(len(m)), k]) == sign)
            face_area = 4 * np.prod(np.delete(H, k))
            assert 0.4 * face_area / 0.004**2 < face.sum() < 1.1 * face_area / 0.004**2


@pytest.mark.parametrize("kind, size", [(ShapeKind.SPHERE, (0.02,)), (ShapeKind.CAPSULE, (0.01, 0.03)),
                                        (ShapeKind.CYLINDER, (0.012, 0.03))])
def test_curved_primitives_exact_surface_and_normals(kind, size):
    rot = rpy_to_matrix_np([0.5, 0.1, -0.4])
    pos = np.array([0.0, 0.02, 0.01])
    shape = Shape(kind, size, rot=rot, pos=pos)
    facing = np.array([1.0, 1.0, 0.0])
    lay = conforming_layout([shape], 0.003, facing=facing, min_cos=0.2, seed=1)
    q = (lay.flat_positions - pos) @ rot
    m = lay.flat_normals @ rot
    np.testing.assert_allclose(np.linalg.norm(m, axis=1), 1.0, atol=1e-14)
    assert np.all(lay.flat_normals @ (facing / np.linalg.norm(facing)) > 0.2)
    r = size[0]
    if kind == ShapeKind.SPHERE:
        np.testing.assert_allclose(np.linalg.norm(q, axis=1), r, atol=1e-12)
        np.testing.assert_allclose(m, q / r, atol=1e-12)
    elif kind == ShapeKind.CAPSULE:
        c = np.zeros_like(q)
        c[:, 2] = np.clip(q[:, 2], -size[1] / 2, size[1] / 2)
        np.testing.assert_allclose(np.linalg.norm(q - c, axis=1), r, atol=1e-12)
        np.testing.assert_allclose(m, (q - c) / r, atol=1e-12)
    else:
        side = np.abs(m[:, 2]) < 0.5
        assert side.any() and (~side).any()
        np.testing.assert_allclose(np.hypot(q[side, 0], q[side, 1]), r, atol=1e-12)
        np.testing.assert_allclose(m[side, :2], q[side, :2] / r, atol=1e-12)
        np.testing.assert_allclose(np.abs(q[~side, 2]), size[1] / 2, atol=1e-12)
        np.testing.assert_allclose(m[~side], np.sign(q[~side, 2:3]) * [0, 0, 1], atol=1e-12)
    assert nn_dist(lay.flat_positions).min() > 0.003


def test_mesh_shape_uses_face_normals():
    tm = trimesh.creation.box(extents=2 * H)
    mesh = MeshData(np.asarray(tm.vertices), np.asarray(tm.faces, dtype=np.int64))
    lay = conforming_layout([Shape(ShapeKind.MESH, mesh=mesh)], 0.004, facing=(0, -1, 0), seed=0)
    np.testing.assert_allclose(lay.flat_positions[:, 1], -H[1], atol=1e-12)
    np.testing.assert_allclose(lay.flat_normals, np.broadcast_to([0, -1, 0], (lay.n, 3)), atol=1e-12)


def test_points_inside_other_shapes_are_dropped_and_box_filter():
    box = Shape(ShapeKind.BOX, tuple(H))
    ball = Shape(ShapeKind.SPHERE, (0.012,), pos=np.array([H[0], 0.0, 0.0]))
    lay = conforming_layout([box, ball], 0.002, seed=5)
    p = lay.flat_positions
    inside_box = np.all(np.abs(p) < H - 1e-9, axis=1)
    inside_ball = np.linalg.norm(p - ball.pos, axis=1) < 0.012 - 1e-9
    assert not inside_box.any() and not inside_ball.any()
    on_ball = np.isclose(np.linalg.norm(p - ball.pos, axis=1), 0.012, atol=1e-12)
    assert on_ball.any() and (~on_ball).any()
    lo, hi = np.array([0.0, -1.0, -1.0]), np.array([1.0, 1.0, 1.0])
    half = conforming_layout([box, ball], 0.002, box=(lo, hi), seed=5)
    assert np.all(half.flat_positions[:, 0] >= 0.0)
    assert 0.2 * lay.n < half.n < 0.8 * lay.n


def test_deterministic_for_a_seed():
    shapes = [Shape(ShapeKind.CAPSULE, (0.01, 0.02))]
    a = conforming_layout(shapes, 0.004, seed=11)
    b = conforming_layout(shapes, 0.004, seed=11)
    c = conforming_layout(shapes, 0.004, seed=12)
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.normals, b.normals)
    assert a.n != c.n or not np.array_equal(a.positions, c.positions)


def test_errors():
    box = [Shape(ShapeKind.BOX, tuple(H))]
    w = "tips.yaml:sensors[1].layout"
    raises_config_error(lambda: conforming_layout(box, 0.0, where=w), f"{w}.spacing", "got 0.0", "allowed: > 0")
    raises_config_error(lambda: conforming_layout([], 0.01, where=w), f"{w}.shapes", "no collision shapes")
    raises_config_error(lambda: conforming_layout([Shape(ShapeKind.PLANE)], 0.01, where=w), f"{w}.shapes",
                        "plane", "allowed:")
    raises_config_error(lambda: conforming_layout(box, 0.01, facing=(0, 0, 0), where=w), f"{w}.facing",
                        "got [0, 0, 0]", "allowed:")
    raises_config_error(lambda: conforming_layout(box, 0.01, box=((0, 0, 0), (-1, 1, 1)), where=w), f"{w}.box",
                        "lo <= hi", "allowed:")
    raises_config_error(lambda: conforming_layout(box, 0.01, box=((1, 1, 1), (2, 2, 2)), where=w),
                        f"{w}: no surface point is left", "box=", "allowed:")
    raises_config_error(lambda: conforming_layout(box, 1e-6, where=w), f"{w}.spacing: too small", "got 1e-06")


@pytest.mark.parametrize("conforming, error", [
    ({"spacing": 1e-6}, "probe_local_pos.conforming.spacing: too small for this link"),
    ({"spacing": 0.004, "box": [[1, 1, 1], [2, 2, 2]]}, "probe_local_pos.conforming: no surface point is left"),
])
def test_a_suite_names_the_yaml_path_of_a_conforming_layout_it_cannot_build(tmp_path, conforming, error):
    config = load_config({"suite": {"dt": 0.01}, "objects": [{"name": "pad", "geometry": [{"box": {"size": [
        0.04, 0.03, 0.016]}}]}], "sensors": [{"type": "ContactDepthProbe", "name": "s", "link": "pad",
                                              "probe_local_pos": {"conforming": conforming}}]})
    with pytest.raises(ConfigError) as info:
        SensorSuite(config)
    assert str(info.value).startswith(f"<dict>:sensors[0].{error}"), str(info.value)
