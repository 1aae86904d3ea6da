"""Host quaternion conversion used per TF message: it must be the torch formula exactly (closed forms, rotation)."""

import math

import numpy as np
import pytest
import torch

from tactile_sim.geometry.transforms import (quat_to_matrix, quat_to_matrix_np, rpy_to_matrix, rpy_to_matrix_np,
                                             scan_finite)


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


def _uncached_rpy(rpy):
    return rpy_to_matrix(torch.as_tensor(np.asarray(rpy, dtype=np.float64))).numpy()


def test_host_rpy_equals_torch_bit_for_bit_on_repeats():
    """Angles computed once per process: every call, first or repeated, is the torch formula's bits."""
    rng = np.random.default_rng(7)
    angles = [rng.uniform(-4, 4, 3) for _ in range(20)] + [np.zeros(3), np.array([0.0, 1e-300, -2.5])]
    for rpy in angles * 2:
        for given in (rpy, list(rpy), tuple(float(a) for a in rpy)):
            r = rpy_to_matrix_np(given)
            assert r.dtype == np.float64 and r.shape == (3, 3)
            assert r.tobytes() == _uncached_rpy(rpy).tobytes()


def test_host_rpy_tells_signed_zeros_apart():
    """-0.0 equals 0.0 as a float, but its matrix has other zero signs: it must not reuse 0.0's."""
    plus, minus = rpy_to_matrix_np([0.0, 0.0, 0.0]), rpy_to_matrix_np([-0.0, -0.0, -0.0])
    assert minus.tobytes() == _uncached_rpy([-0.0, -0.0, -0.0]).tobytes() != plus.tobytes()
    assert rpy_to_matrix_np([0.0, 0.0, 0.0]).tobytes() == _uncached_rpy([0.0, 0.0, 0.0]).tobytes()


def test_host_rpy_returns_a_new_writable_array():
    """A caller may change what it got: the next call still gives the formula's matrix."""
    first = rpy_to_matrix_np([0.1, 0.2, 0.3])
    first[:] = 5.0
    again = rpy_to_matrix_np([0.1, 0.2, 0.3])
    assert again is not first and again.flags.writeable
    assert again.tobytes() == _uncached_rpy([0.1, 0.2, 0.3]).tobytes()
