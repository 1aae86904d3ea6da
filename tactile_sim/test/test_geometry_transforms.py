"""Host quaternion conversion used per TF message: it must be the torch formula exactly (closed forms, rotation)."""

import math

import numpy as np
import pytest
import torch

from tactile_sim.geometry.transforms import quat_to_matrix, quat_to_matrix_np, scan_finite


def test_quarter_turn_about_z_closed_form():
    s = math.sqrt(0.5)
    r = quat_to_matrix_np([0.0, 0.0, s, s])
    np.testing.assert_allclose(r, [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-15)


@pytest.mark.parametrize("seed", range(5))
def test_host_conversion_equals_torch_and_is_a_rotation(seed):
    q = np.random.default_rng(seed).normal(size=4)
    q *= 1.0005 / np.linalg.norm(q)  # slightly off unit: both normalise
    r = quat_to_matrix_np(q)
    assert r.dtype == np.float64 and r.shape == (3, 3)
    np.testing.assert_allclose(r, quat_to_matrix(torch.as_tensor(q)).numpy(), rtol=0, atol=1e-15)
    np.testing.assert_allclose(r.T @ r, np.eye(3), atol=1e-14)
    assert np.linalg.det(r) == pytest.approx(1.0, abs=1e-14)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_scan_finite_agrees_with_numpy(bad):
    values = np.array([0.0, -1.5, 1e30, 2.0])
    assert scan_finite(values) and scan_finite(np.zeros(0)) and scan_finite(values.astype(np.float32))
    for i in range(len(values)):
        v = values.copy()
        v[i] = bad
        assert not scan_finite(v) and scan_finite(v) == bool(np.isfinite(v).all())
