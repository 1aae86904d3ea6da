"""Stateful elements: viscoelastic hysteresis (docs/models/imperfections.md#hysteresis), the ContactProbe latch
(docs/models/contact_probe.md#model), the sensing-element lag (docs/models/temperature_grid.md#sensing-element)."""

import math

import torch
from helpers_imperfections import DT, constant, evaluate, spec

from tactile_sim.imperfections.lag import FirstOrderLag
from tactile_sim.imperfections.latch import SchmittLatch, overlap_floor, signed_overlap
from tactile_sim.imperfections.pipeline import MeasuredBranch


def test_hysteresis_step_response_and_reset(dtype):
    s, tau, x_step = 0.5, 0.05, 2.0
    sensors = [spec("h", 3, channels=3, hysteresis_strength=s, hysteresis_tau=tau), spec("plain", 2, channels=3)]
    b = MeasuredBranch(sensors, n_envs=2, dtype=dtype)
    alpha = math.exp(-DT / tau)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    for episode in range(2):
        for j in range(8):
            y = b.transform(constant(b, x_step))
            expected = x_step * (1 + s * alpha**j)
            assert torch.allclose(y[:, :3], torch.full_like(y[:, :3], expected), rtol=tol, atol=0)
            assert torch.equal(y[:, 3:], torch.full_like(y[:, 3:], x_step))
        b.reset()  # ξ and x_prev cleared: the next step overshoots again


def test_hysteresis_unloading_and_subset_reset():
    s, tau = 1.0, 0.02
    b = MeasuredBranch([spec("h", 1, hysteresis_strength=s, hysteresis_tau=tau)], n_envs=2, dtype=torch.float64)
    alpha = math.exp(-DT / tau)
    b.transform(constant(b, 1.0))
    y = b.transform(constant(b, 0.0))  # ξ = α·1 + (0 − 1)
    assert torch.allclose(y, torch.full_like(y, s * (alpha - 1)), rtol=1e-12, atol=0)
    b.reset(torch.tensor([True, False]))
    y = b.transform(constant(b, 1.0))
    assert math.isclose(float(y[0, 0, 0]), 1 + s, rel_tol=1e-12)
    assert math.isclose(float(y[1, 0, 0]), 1 + s * (alpha * (alpha - 1) + 1), rel_tol=1e-12)


def test_hysteresis_sees_clean_values_only():
    """Noise is added after the transform, so two runs with and without noise have equal ξ."""
    opts = dict(hysteresis_strength=0.5, hysteresis_tau=0.03)
    noisy = MeasuredBranch([spec("n", 2, noise=0.5, **opts)], 1, dtype=torch.float64)
    clean = MeasuredBranch([spec("n", 2, **opts)], 1, dtype=torch.float64)
    for v in (1.0, 3.0, 2.0):
        evaluate(noisy, constant(noisy, v))
        evaluate(clean, constant(clean, v))
    assert torch.equal(noisy._xi, clean._xi)


def latch(contact, release, n=1):
    c = torch.full((n,), contact, dtype=torch.float64)
    r = torch.full((n,), release, dtype=torch.float64)
    return SchmittLatch(c, r, torch.ones(n, dtype=torch.bool), n_envs=1)


def test_schmitt_sequence_check_2():
    l = latch(0.03, 0.015)
    depths = [0.0, 0.02, 0.04, 0.02, 0.01, 0.02]
    out = [bool(l.update(torch.tensor([[d]], dtype=torch.float64))[0, 0]) for d in depths]
    assert out == [False, False, True, True, False, False]
    l.update(torch.tensor([[0.04]], dtype=torch.float64))
    l.reset()
    assert not bool(l.update(torch.tensor([[0.02]], dtype=torch.float64))[0, 0])


def test_strict_threshold_check_3():
    l = latch(0.25, 0.25)
    x = torch.tensor([[0.5 - 0.25]], dtype=torch.float64)  # R = 0.5, sd = 0.25: exactly the threshold
    assert not bool(l.update(x)[0, 0])


def test_negative_release_check_4():
    contact, release = 1e-4, -2e-3
    floor = overlap_floor(torch.tensor([release], dtype=torch.float64))
    assert math.isclose(float(floor[0]), release - 1e-3, rel_tol=1e-15)
    assert overlap_floor(torch.tensor([0.0]))[0] == 0.0
    l = latch(contact, release)
    radius = 0.01
    outputs = []
    for sd in (0.0, radius + 1e-3, radius + 3e-3, radius + 1e-3):  # touching; 1 mm outside; 3 mm outside; back
        x = signed_overlap(torch.tensor([[radius - sd]], dtype=torch.float64), floor)
        outputs.append(bool(l.update(x)[0, 0]))
    assert outputs == [True, True, False, False]
    far = signed_overlap(torch.tensor([[-1.0]], dtype=torch.float64), floor)
    assert float(far[0, 0]) == release - 1e-3  # the floor stays below the release threshold


def test_latch_per_probe_thresholds_fillers_and_subset_reset():
    c = torch.tensor([0.1, 0.5, 0.1])
    r = torch.tensor([0.05, 0.2, 0.05])
    l = SchmittLatch(c, r, torch.tensor([True, True, False]), n_envs=2)
    on = l.update(torch.full((2, 3), 0.3))
    assert on.tolist() == [[True, False, False]] * 2
    l.reset(torch.tensor([True, False]))
    on = l.update(torch.full((2, 3), 0.07))
    assert on.tolist() == [[False, False, False], [True, False, False]]


def test_lag_weight_is_the_exact_first_order_discretisation(dtype):
    """w = 1 − exp(−dt/τ_s) (a float τ_s or one per cell); τ_s = 0 gives w = 1 (T_m = T). The step itself runs in the
    TemperatureGrid readout kernel (test_sensor_thermal checks its step response)."""
    tau, dt = 0.2, 0.01
    lag = FirstOrderLag(tau, dt, torch.zeros(1, 4, dtype=dtype))
    assert math.isclose(lag.weight, 1 - math.exp(-dt / tau), rel_tol=1e-12)
    per_cell = FirstOrderLag(torch.tensor([0.0, 0.5]), 0.1, torch.zeros(2, 2, dtype=dtype))
    assert per_cell.weight.dtype == dtype
    tol = 1e-6 if dtype == torch.float32 else 1e-15
    assert float(per_cell.weight[0]) == 1.0
    assert math.isclose(float(per_cell.weight[1]), 1 - math.exp(-0.2), rel_tol=tol)


def test_lag_restarts_at_the_true_value_of_the_reset_envs_only():
    lag = FirstOrderLag(0.5, 0.1, torch.zeros(2, 2, dtype=torch.float64))
    lag.reset(torch.full((2, 2), 21.0, dtype=torch.float64))
    assert torch.equal(lag.state, torch.full((2, 2), 21.0, dtype=torch.float64))
    lag.reset(torch.full((2, 2), 30.0, dtype=torch.float64), torch.tensor([False, True]))
    assert lag.state[0].tolist() == [21.0, 21.0] and lag.state[1].tolist() == [30.0, 30.0]
