"""Spatial crosstalk (docs/models/imperfections.md#crosstalk, docs/models/imperfections.md#checks Check 8) against an
independent direct cross-correlation."""

import math

import numpy as np
import pytest
import torch
from helpers_imperfections import evaluate, spec

from tactile_sim.errors import ConfigError
from tactile_sim.imperfections.crosstalk import gaussian_crosstalk_kernel, gaussian_option_kernel
from tactile_sim.imperfections.pipeline import MeasuredBranch


def correlate(field: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Same-size zero-padded cross-correlation out[r, c] = Σ K[a, b] in[r + a − h_r, c + b − h_c] (loops)."""
    m, n = field.shape
    kh, kw = kernel.shape
    out = np.zeros_like(field)
    for r in range(m):
        for c in range(n):
            for a in range(kh):
                for b in range(kw):
                    rr, cc = r + a - kh // 2, c + b - kw // 2
                    if 0 <= rr < m and 0 <= cc < n:
                        out[r, c] += kernel[a, b] * field[rr, cc]
    return out


def grid_spec(name="g", m=4, n=5, du=0.002, dv=0.003, **options):
    return spec(name, m * n, channels=6, layout_shape=(m, n), grid_spacing=(du, dv), grid_normal=(0.0, 0.0, 1.0),
                **options)


def test_gaussian_helper_closed_form():
    k = gaussian_crosstalk_kernel(3, 5, sigma=1.0)
    assert k.shape == (3, 5) and math.isclose(k.sum(), 1.0, rel_tol=1e-15)
    assert k[1, 2] == k.max()
    assert math.isclose(k[1, 3] / k[1, 2], math.exp(-0.5), rel_tol=1e-14)
    assert math.isclose(k[0, 0] / k[1, 2], math.exp(-(1 + 4) / 2), rel_tol=1e-14)
    anisotropic = gaussian_crosstalk_kernel(3, 3, sigma=2.0, spacing=(1.0, 2.0))
    assert math.isclose(anisotropic[1, 2] / anisotropic[1, 1], math.exp(-4 / 8), rel_tol=1e-14)
    assert math.isclose(anisotropic[0, 1] / anisotropic[1, 1], math.exp(-1 / 8), rel_tol=1e-14)
    for bad in [(2, 3, 1.0), (3, 3, 0.0), (3, 3, float("nan"))]:
        with pytest.raises(ValueError):
            gaussian_crosstalk_kernel(*bad)


def test_option_kernel_sizes_and_mixing():
    assert gaussian_option_kernel(1.0, 0.002, 0.002, 0.002).shape == (7, 7)  # σ = Δ → h = 3
    assert gaussian_option_kernel(1.0, 0.003, 0.001, 0.001).shape == (19, 19)  # 3σ/Δ = 9 up to round-off
    assert gaussian_option_kernel(1.0, 1e-4, 0.002, 0.003).shape == (3, 3)  # minimum half size 1
    assert gaussian_option_kernel(1.0, 0.002, 0.001, 0.003).shape == (5, 13)  # rows follow Δv, columns Δu
    s = 0.4
    k = gaussian_option_kernel(s, 0.002, 0.002, 0.002)
    g = gaussian_crosstalk_kernel(7, 7, 1.0)
    expected = s * g
    expected[3, 3] += 1 - s
    assert np.allclose(k, expected, rtol=0, atol=1e-15) and math.isclose(k.sum(), 1.0, rel_tol=1e-14)


def test_strength_zero_and_identity_kernel_are_exact_no_ops(dtype):
    identity = np.zeros((3, 3))
    identity[1, 1] = 1.0
    for options in ({"crosstalk_strength": 0.0, "crosstalk_sigma": 0.001}, {"crosstalk_kernel": identity}):
        b = MeasuredBranch([grid_spec(**options)], n_envs=2, dtype=dtype)
        x = torch.randn(2, 20, 6, dtype=dtype)
        assert torch.equal(b.transform(x), x)


def test_matches_direct_correlation_with_an_asymmetric_kernel():
    kernel = np.arange(15.0).reshape(3, 5) / 105.0  # not symmetric: a flipped kernel would differ
    b = MeasuredBranch([grid_spec(crosstalk_kernel=kernel)], n_envs=2, dtype=torch.float64)
    x = torch.randn(2, 20, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    y = b.transform(x).numpy()
    for e in range(2):
        for c in range(6):
            expected = correlate(x[e, :, c].numpy().reshape(4, 5), kernel)
            assert np.allclose(y[e, :, c].reshape(4, 5), expected, rtol=0, atol=1e-12)


def test_gaussian_mode_uniform_interior_unchanged_edges_lose_signal(dtype):
    b = MeasuredBranch([grid_spec(m=9, n=9, du=0.002, dv=0.002, crosstalk_strength=0.7, crosstalk_sigma=0.0007)],
                       n_envs=1, dtype=dtype)
    x = torch.full((1, 81, 6), 2.0, dtype=dtype)
    y = b.transform(x).view(9, 9, 6)
    h = 2  # 3σ/Δ = 1.05 → half size 2
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert torch.allclose(y[h:-h, h:-h], torch.full_like(y[h:-h, h:-h], 2.0), rtol=tol, atol=0)
    assert (y[0, 0] < 2.0 - 1e-3).all()


def test_split_kernel_filters_normal_shear_and_torque_separately():
    k_normal = np.zeros((3, 3))
    k_normal[1, 1] = 0.5
    k_normal[1, 2] = 0.5
    k_shear = np.zeros((3, 3))
    k_shear[0, 1] = 1.0
    k_torque = np.full((3, 3), 1 / 9)
    normal = np.array([0.0, 0.6, 0.8])
    s = spec("sp", 12, channels=6, layout_shape=(3, 4), grid_spacing=(0.001, 0.001), grid_normal=normal,
             crosstalk_kernel=np.stack([k_normal, k_shear, k_torque]))
    b = MeasuredBranch([s], n_envs=1, dtype=torch.float64)
    x = torch.randn(1, 12, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    y = b.transform(x)[0].numpy()
    f = x[0, :, :3].numpy()
    fn = (f @ normal)[:, None] * normal
    fs = f - fn
    def grid(v):
        return v.reshape(3, 4)

    expected = np.zeros((12, 6))
    for c in range(3):
        expected[:, c] = (correlate(grid(fn[:, c]), k_normal) + correlate(grid(fs[:, c]), k_shear)).ravel()
        expected[:, 3 + c] = correlate(x[0, :, 3 + c].numpy().reshape(3, 4), k_torque).ravel()
    assert np.allclose(y, expected, rtol=0, atol=1e-12)
    two = spec("sp2", 12, channels=6, layout_shape=(3, 4), grid_spacing=(0.001, 0.001), grid_normal=normal,
               crosstalk_kernel=np.stack([k_normal, k_torque]))
    y2 = MeasuredBranch([two], 1, dtype=torch.float64).transform(x)[0].numpy()
    expected[:, :3] = 0
    for c in range(3):
        expected[:, c] = (correlate(grid(fn[:, c]), k_normal) + correlate(grid(fs[:, c]), k_torque)).ravel()
    assert np.allclose(y2, expected, rtol=0, atol=1e-12)


def test_fillers_re_zeroed_and_other_sensors_untouched():
    active = np.ones(20, dtype=bool)
    active[[0, 7]] = False
    kernel = np.full((3, 3), 1 / 9)
    batch = [spec("plain", 3, channels=6), grid_spec("a", active=active, crosstalk_kernel=kernel),
             grid_spec("b", crosstalk_kernel=gaussian_crosstalk_kernel(5, 5, 1.0))]
    b = MeasuredBranch(batch, n_envs=2, dtype=torch.float64)
    x = torch.randn(2, 43, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    x[:, 3:23][:, ~torch.as_tensor(active)] = 0.0
    y = b.transform(x)
    assert torch.equal(y[:, :3], x[:, :3])
    assert y[:, 3:23][:, ~torch.as_tensor(active)].eq(0).all()
    alone = MeasuredBranch([batch[2]], n_envs=2, dtype=torch.float64).transform(x[:, 23:])
    assert torch.allclose(y[:, 23:], alone, rtol=0, atol=1e-14)  # batching two sensors = filtering each alone


def test_ground_truth_is_unchanged_by_crosstalk():
    b = MeasuredBranch([grid_spec(crosstalk_strength=1.0, crosstalk_sigma=0.002)], n_envs=1, dtype=torch.float64)
    raw = torch.zeros(1, 20, 6, dtype=torch.float64)
    raw[0, 7, 2] = 1.0
    evaluate(b, raw)
    assert torch.equal(b.read_ground_truth(0)[0].reshape(1, 20, 6), raw)
    assert b.read(0)[0][0, 1, 2, 2] < 1.0 and b.read(0)[0][0, 1, 1, 2] > 0.0


def test_crosstalk_errors():
    with pytest.raises(ConfigError, match="regular planar"):
        spec("x", 20, channels=6, layout_shape=(4, 5), crosstalk_strength=0.5, crosstalk_sigma=0.001)
    with pytest.raises(ConfigError, match="crosstalk_sigma"):
        grid_spec(crosstalk_strength=0.5)
    with pytest.raises(ConfigError, match="together"):
        grid_spec(crosstalk_strength=0.5, crosstalk_sigma=0.001, crosstalk_kernel=np.ones((3, 3)) / 9)
    with pytest.raises(ConfigError, match="wrong shape"):
        grid_spec(crosstalk_kernel=np.ones((2, 3)) / 6)
    with pytest.raises(ConfigError, match="not finite"):
        grid_spec(crosstalk_kernel=np.array([[0, 0, 0], [0, np.nan, 0], [0, 0, 0]]))
    with pytest.raises(ConfigError, match="crosstalk_strength"):
        grid_spec(crosstalk_strength=1.5, crosstalk_sigma=0.001)
    with pytest.raises(ConfigError, match="splits force and torque"):
        spec("k", 4, channels=1, layout_shape=(2, 2), grid_spacing=(0.001, 0.001),
             crosstalk_kernel=np.ones((2, 3, 3)) / 9)
    with pytest.warns(UserWarning, match="sums to"):
        grid_spec(crosstalk_kernel=np.full((3, 3), 0.2))

