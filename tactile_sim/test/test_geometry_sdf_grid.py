"""SDF grid build (docs/models/scene.md#signed-distance "sdf" backend): lattice rule, exact node values, gradients,
disk cache."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from tactile_sim.geometry import sdf_grid
from tactile_sim.geometry.mesh_io import make_mesh_data
from tactile_sim.geometry.sdf_grid import build_sdf_grid, cache_path, default_cache_dir, lattice


@pytest.fixture(scope="module")
def box_mesh():
    tm = trimesh.creation.box(extents=[0.1, 0.02, 0.3])
    return make_mesh_data(tm.vertices, tm.faces, "box")


@pytest.fixture(scope="module")
def sphere():
    tm = trimesh.creation.icosphere(subdivisions=2, radius=0.05)
    return tm, make_mesh_data(tm.vertices, tm.faces, "icosphere")


def test_lattice_rule(box_mesh):
    # extents (0.1, 0.02, 0.3): pad = max(0.1·0.3, 0.01) = 0.03 → padded (0.16, 0.08, 0.36)
    lo, spacing, dims = lattice(box_mesh, cell_size=2e-3, max_nodes=128, padding=0.01)
    np.testing.assert_allclose(lo, [-0.08, -0.04, -0.18], atol=1e-15)
    assert dims == (81, 41, 128)  # 0.16/0.002 = 80 exactly (not 81 from a naive ceil of 80.00000000000001)
    np.testing.assert_allclose(spacing, np.array([0.16, 0.08, 0.36]) / (np.array(dims) - 1), rtol=1e-15)
    _, _, coarse = lattice(box_mesh, cell_size=0.05, max_nodes=128, padding=0.01)
    assert coarse == (8, 8, 9)  # at least 8 nodes per axis; ceil(0.36/0.05) + 1 = 9
    small = make_mesh_data(box_mesh.vertices * 0.1, box_mesh.faces)  # extents ≤ 0.03: pad = padding 0.01
    lo, _, _ = lattice(small, cell_size=2e-3, max_nodes=128, padding=0.01)
    np.testing.assert_allclose(lo, [-0.015, -0.011, -0.025], atol=1e-15)
    with pytest.raises(ValueError, match="sdf_cell_size > 0"):
        lattice(box_mesh, cell_size=0.0, max_nodes=128, padding=0.01)


def test_node_values_are_exact_signed_distances(sphere, tmp_path):
    tm, md = sphere
    grid = build_sdf_grid(md, cell_size=0.01, cache_dir=tmp_path)
    axes = [grid.lo[a] + np.arange(grid.dims[a]) * grid.spacing[a] for a in range(3)]
    nodes = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    tri = tm.triangles
    # brute force over every triangle (trimesh's per-pair closest point), sign from trimesh's containment test
    closest = trimesh.triangles.closest_point(np.repeat(tri, len(nodes), axis=0), np.tile(nodes, (len(tri), 1)))
    dist = np.linalg.norm(closest - np.tile(nodes, (len(tri), 1)), axis=1).reshape(len(tri), len(nodes)).min(0)
    expected = np.where(tm.contains(nodes), -dist, dist)
    np.testing.assert_allclose(grid.values.reshape(-1), expected, atol=1e-8)


def test_gradients_are_central_differences_one_sided_on_the_boundary(sphere, tmp_path):
    _, md = sphere
    g = build_sdf_grid(md, cell_size=0.01, cache_dir=tmp_path)
    v, h = g.values, g.spacing
    i, j, k = 3, 5, 7
    np.testing.assert_allclose(g.gradients[i, j, k], [(v[i + 1, j, k] - v[i - 1, j, k]) / (2 * h[0]),
                                                      (v[i, j + 1, k] - v[i, j - 1, k]) / (2 * h[1]),
                                                      (v[i, j, k + 1] - v[i, j, k - 1]) / (2 * h[2])], rtol=1e-12)
    n = g.dims[0] - 1
    np.testing.assert_allclose(g.gradients[0, j, k, 0], (v[1, j, k] - v[0, j, k]) / h[0], rtol=1e-12)
    np.testing.assert_allclose(g.gradients[n, j, k, 0], (v[n, j, k] - v[n - 1, j, k]) / h[0], rtol=1e-12)


def test_second_build_reads_the_cache_file(sphere, tmp_path, monkeypatch):
    _, md = sphere
    first = build_sdf_grid(md, cell_size=0.01, cache_dir=tmp_path)
    path = cache_path(md, 0.01, 128, 0.01, tmp_path)
    assert path.is_file() and [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left

    def no_compute(*args):
        raise AssertionError("node values recomputed despite a cache file")

    monkeypatch.setattr(sdf_grid, "node_values", no_compute)
    second = build_sdf_grid(md, cell_size=0.01, cache_dir=tmp_path)
    np.testing.assert_array_equal(second.values, first.values)
    np.testing.assert_array_equal(second.gradients, first.gradients)
    # any option change is another key
    assert len({cache_path(md, 0.01, 128, 0.01, tmp_path), cache_path(md, 0.02, 128, 0.01, tmp_path),
                cache_path(md, 0.01, 64, 0.01, tmp_path), cache_path(md, 0.01, 128, 0.02, tmp_path)}) == 4


def test_corrupt_cache_file_is_rebuilt(sphere, tmp_path):
    _, md = sphere
    path = cache_path(md, 0.01, 128, 0.01, tmp_path)
    path.write_bytes(b"not an npz file")
    grid = build_sdf_grid(md, cell_size=0.01, cache_dir=tmp_path)
    with np.load(path) as data:
        np.testing.assert_array_equal(data["values"], grid.values)


def test_default_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TACTILE_SIM_CACHE", str(tmp_path / "here"))
    assert default_cache_dir() == tmp_path / "here"
    monkeypatch.delenv("TACTILE_SIM_CACHE")
    assert default_cache_dir().parts[-3:] == (".cache", "tactile_sim", "sdf")
