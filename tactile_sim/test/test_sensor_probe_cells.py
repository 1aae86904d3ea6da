"""The broad-phase layout of probes (:class:`ProbeCells`, :func:`cluster_order`): cells and blocks are compact runs
of one group's probes, so that a cell's bounding sphere is about as small as its probes allow."""

import numpy as np
import pytest
import torch

from tactile_sim.sensors.points.probe_set import CPU_BLOCK_CELLS, CPU_CELL_PROBES, ProbeCells, cluster_order


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 20, 255, 256, 257, 1000])
def test_the_order_is_a_permutation(n):
    points = np.random.default_rng(n).normal(size=(n, 3))
    assert sorted(cluster_order(points, 8, 32).tolist()) == list(range(n))


def _bisection_reference(points, leaf, group):
    """The definition of cluster_order, one recursive call per segment: sort a segment stably along its longest side,
    split it at a whole number of runs (of leaf · group while more than that many points remain, then of leaf)."""
    if len(points) == 0:
        return np.zeros(0, np.int64)

    def split(idx):
        n = len(idx)
        if n <= leaf:
            return list(idx)
        unit = leaf * group if n > leaf * group else leaf
        left = unit * ((-(-n // unit) + 1) // 2)
        idx = idx[np.argsort(points[idx, np.argmax(np.ptp(points[idx], axis=0))], kind="stable")]
        return split(idx[:left]) + split(idx[left:])

    return np.array(split(np.arange(len(points))))


@pytest.mark.parametrize("leaf, group", [(8, 32), (1, 1), (3, 5), (8, 1)])
def test_the_level_by_level_split_is_the_recursive_bisection(leaf, group):
    """Random clouds and lattices full of ties (where only a stable sort within each segment gives one answer)."""
    rng = np.random.default_rng(leaf * 10 + group)
    clouds = [rng.normal(size=(n, 3)) for n in (1, 9, 300, 1500)]
    clouds += [rng.integers(0, 4, size=(n, 3)).astype(float) for n in (50, 777)]
    clouds += [np.zeros((40, 3)), (rng.integers(0, 10, size=(600, 3)) * 1e-3).astype(np.float32)]
    for points in clouds:
        assert np.array_equal(cluster_order(points, leaf, group), _bisection_reference(points, leaf, group))


def test_points_on_a_line_come_out_sorted_along_it():
    t = np.random.default_rng(1).permutation(700).astype(float)
    points = np.outer(t, [0.3, -0.2, 0.1]) + [1.0, 2.0, 3.0]
    order = cluster_order(points, 8, 32)
    assert np.all(np.diff(t[order]) > 0)


def test_cells_of_a_taxel_pad_are_tiles_of_neighbours():
    """A 4 × 5 pad (5 mm pitch along x, 4 mm along y): cells of 8 are 4 × 2 tiles, the rest one column."""
    x, y = np.meshgrid(np.arange(5) * 0.005, np.arange(4) * 0.004, indexing="ij")
    points = np.stack([x.ravel(), y.ravel(), np.zeros(20)], axis=1)
    cells = ProbeCells(points, [(0, 20)], [0], "cpu", torch.float64).cells
    assert cells["cell_start"].tolist() == [0, 8, 16] and cells["cell_stop"].tolist() == [8, 16, 20]
    order = cells["probe_order"].numpy()
    for a, b in zip(cells["cell_start"].tolist(), cells["cell_stop"].tolist()):
        columns = np.unique(points[order[a:b], 0])
        assert len(columns) == (b - a) // 4 and np.all(np.diff(columns) == pytest.approx(0.005))
    tile_radius = np.hypot(0.005, 0.012) / 2
    assert cells["cell_radius"][:2].numpy() == pytest.approx([tile_radius] * 2, rel=1e-9)


def test_blocks_are_whole_runs_of_cells_that_stay_together():
    """Probes on a 3 × 40 × 40 lattice: every block (CPU_BLOCK_CELLS cells) keeps to a slab far smaller than the
    lattice, and each group's cells start where its slice starts."""
    g = np.stack(np.meshgrid(np.arange(3), np.arange(40), np.arange(40), indexing="ij"), -1).reshape(-1, 3) * 0.001
    n = len(g)
    cells = ProbeCells(np.concatenate([g, g]), [(0, n), (n, 2 * n)], [0, 1], "cpu", torch.float64).cells
    starts = cells["cell_start"].numpy()
    assert np.all(np.diff(starts) <= CPU_CELL_PROBES) and n in starts
    lattice_radius = np.linalg.norm(np.ptp(g, axis=0)) / 2
    assert cells["block_radius"].max().item() < 0.5 * lattice_radius
    per_block = CPU_CELL_PROBES * CPU_BLOCK_CELLS
    assert cells["block_cells"].tolist()[:2] == [CPU_BLOCK_CELLS] * 2 and -(-n // per_block) * 2 == len(
        cells["block_first_cell"])
