"""ElastomerTaxel lattice and direct sums beyond the spec checks of test_sensor_elastomer: the lattice shear
(docs/models/elastomer_taxel.md#shear)
of grid sensors that are not neighbours in the batch, and both forms of the direct dilation sum
(docs/models/elastomer_taxel.md#dilation) against
the lattice paths in two envs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers_pointcloud import box, centred_lattice, lattice, make_suite, numpy, sphere, step
from tactile_sim.sensors.elastomer import dilation as elastomer_dilation, shear as elastomer_shear
from tactile_sim.sensors.layout.probe_layout import ProbeLayout
from test_sensor_elastomer import elastomer, replay_shear


def test_lattice_shear_of_sensors_apart_in_the_batch():
    grid = centred_lattice(12, 0.006)
    base = {"type": "ElastomerTaxel", "link": "pad", "track": ["ball"], "dilate_scale": 0.0, "shear_scale": 1.0}
    sensors = [{**base, "name": "first", "n_sample_points": 2000, "probe_local_pos": grid.tolist()},
               {**base, "name": "between", "n_sample_points": 1500, "probe_local_pos": grid.reshape(-1, 3).tolist()},
               {**base, "name": "last", "n_sample_points": 1000, "probe_local_pos": grid.tolist()}]
    suite = make_suite(sensors, [box("ball", (0.03, 0.03, 0.02), (0.0, 0.0, 0.05))])
    pressed = np.array([0.0, 0.0, 0.009])
    step(suite, 0.0, {"ball": pressed})
    slid = pressed + [0.0008, -0.0005, 0.0]
    step(suite, 0.01, {"ball": slid})
    for name in ("first", "between", "last"):
        s = numpy(suite.read_ground_truth(name)).reshape(-1, 3)
        expected = replay_shear(suite.point_cloud(name), pressed, slid, grid, 0.006**2, 300.0)
        assert np.abs(expected).max() > 0 and torch.count_nonzero(suite.read_ground_truth(name)[..., 2]) == 0
        assert np.abs(s - expected).max() <= 1e-6 * np.abs(expected).max(), name


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_lattice_shear_column_factors_times_drags_are_the_broadcast_products(dtype):
    # the native outer product of the lattice shear gives torch's broadcast product value for value, over changing
    # sample counts K (a launch per row count, rebound to new tensors when a count comes back, and dropped, least
    # recently used first, beyond OUTER_LAUNCHES counts: a moving contact meets many)
    grid = lattice(5, 7, 0.004, 0.003, (-0.01, -0.006, 0.0))
    layout = ProbeLayout.from_options(grid, 0.002, where="ElastomerTaxel(name='el')")
    members = elastomer_shear._LatticeMembers([0], 1, [layout], [0], [300.0], torch.device("cpu"), dtype)
    gen = torch.Generator().manual_seed(3)
    counts = [(3, 4), (3, 1), (3, 4), (1, 9)] + [(2, k) for k in range(2, 2 + elastomer_shear.OUTER_LAUNCHES)]
    for e, k in counts + [(3, 4), (2, 3)]:
        along = torch.rand((e, 1, k, 7), generator=gen, dtype=dtype)
        drag = torch.randn((e, 1, k, 3), generator=gen, dtype=dtype)
        drag[0, 0, 0] = torch.tensor([0.0, -0.0, 1e-30])
        want = (along[..., None] * drag[..., None, :]).reshape(e, 1, k, 21)
        got = members._weighted(along, drag)
        assert got.shape == want.shape and torch.equal(got.view(torch.uint8), want.view(torch.uint8)), (e, k)
        assert len(members._outer) <= elastomer_shear.OUTER_LAUNCHES
    # the last OUTER_LAUNCHES row counts used are the ones kept, the most recent last
    recent = list(dict.fromkeys(e * k for e, k in reversed(counts + [(3, 4), (2, 3)])))[:elastomer_shear.OUTER_LAUNCHES]
    assert list(members._outer) == recent[::-1]


@pytest.mark.parametrize("full_sum_limit", [0, 10**6])
def test_compacted_and_whole_direct_sums_agree_with_the_lattice(full_sum_limit, monkeypatch):
    # the direct path compacts the sources (limit 0) or multiplies its tables by the whole H; the grid twins of the
    # flat sensors take the lattice paths (c = 1: separable, c = 0.3: FFT), in two envs with different indentations
    monkeypatch.setattr(elastomer_dilation, "FULL_SUM_LIMIT", full_sum_limit)
    grid = lattice(9, 12, 0.004, 0.003, (-0.021, -0.013, 0.0))
    sensors = []
    for c in (1.0, 0.3):
        kw = dict(compressibility=c, elastomer_thickness=0.003, lambda_d=20000.0, shear_scale=0.0)
        sensors += [elastomer(f"grid{c}", grid, **kw), elastomer(f"flat{c}", grid.reshape(-1, 3), **kw)]
    suite = make_suite(sensors, [sphere("ball", 0.008)], n_envs=2)
    rot = torch.eye(3, dtype=torch.float64).expand(2, 3, 3)
    centres = torch.tensor([[-0.004, 0.002, 0.0065], [0.006, -0.003, 0.007]], dtype=torch.float64)
    suite.update(0.0, object_poses={"ball": (rot, centres)})
    for c in (1.0, 0.3):
        u_grid = numpy(suite.read_ground_truth(f"grid{c}")).reshape(2, -1, 3)
        u_flat = numpy(suite.read_ground_truth(f"flat{c}"))
        scale = np.abs(u_flat).max(axis=(1, 2))
        assert (scale > 0).all() and not np.allclose(u_flat[0], u_flat[1])
        assert (np.abs(u_grid - u_flat).max(axis=(1, 2)) <= 1e-10 * scale).all(), c
