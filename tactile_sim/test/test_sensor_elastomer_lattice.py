"""ElastomerTaxel lattice shear (spec §7.5) when the grid sensors of one shape are not neighbours in the batch: two
grid sensors with a flat one between them share one separable group whose probes are not contiguous."""

from __future__ import annotations

import numpy as np
import torch

from helpers_pointcloud import box, centred_lattice, make_suite, numpy, step
from test_sensor_elastomer import replay_shear


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
