"""Delay, jitter, validity, history and ground truth of the measured branch (docs/models/imperfections.md#validity,
docs/models/imperfections.md#checks Checks 1, 2, 5)."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from helpers_imperfections import DT, constant, evaluate, run, spec

from tactile_sim.imperfections.pipeline import MeasuredBranch


def ramp(branch, n):
    """Raw inputs whose value is the 1-based evaluation index, so a read reveals which sample it is."""
    return [constant(branch, float(k)) for k in range(1, n + 1)]


def test_delay_two_steps(dtype):
    b = MeasuredBranch([spec(n_probes=3, delay=2 * DT)], n_envs=2, dtype=dtype)
    reads = run(b, ramp(b, 6))
    truth = run(MeasuredBranch([spec(n_probes=3, delay=2 * DT)], 2, dtype=dtype), ramp(b, 6), ground_truth=True)
    for n, (value, valid) in enumerate(reads, start=1):
        assert value.shape == (2, 3) and valid.shape == (2,)
        if n <= 2:
            assert not valid.any() and torch.equal(value, torch.zeros_like(value))
        else:
            assert valid.all() and torch.equal(value, torch.full_like(value, n - 2))
        assert truth[n - 1][1].all() and torch.equal(truth[n - 1][0], torch.full_like(value, n))


def test_reads_before_first_evaluation_are_zero_and_invalid():
    b = MeasuredBranch([spec(n_probes=2, bias=1.0)], n_envs=2)
    for read in (b.read, b.read_ground_truth):
        value, valid = read(0)
        assert not valid.any() and torch.equal(value, torch.zeros(2, 2))
    evaluate(b, constant(b, 3.0))
    b.reset(torch.tensor([True, False]))
    value, valid = b.read(0)
    assert valid.tolist() == [False, True] and value[0].eq(0).all() and value[1].eq(4.0).all()
    gt, gt_valid = b.read_ground_truth(0)
    assert gt_valid.tolist() == [False, True] and gt[0].eq(0).all() and gt[1].eq(3.0).all()


def test_delay_rounds_halves_up_and_warns():
    with pytest.warns(UserWarning, match="not a multiple"):
        s = spec(delay=2.5 * DT)
    assert s.delay_steps == 3
    with pytest.warns(UserWarning):
        assert spec(delay=0.4 * DT).delay_steps == 0
    assert spec(delay=3 * DT).delay_steps == 3  # float round-off (0.03 / 0.01 = 2.9999999999999996) is a multiple


def test_history_three_with_delay_one(dtype):
    b = MeasuredBranch([spec(n_probes=2, delay=DT, history_length=3)], n_envs=1, dtype=dtype)
    reads = run(b, ramp(b, 6))
    # delayed reads r_n = n - 1 (invalid 0 at n = 1); history = [r_n, r_{n-1}, r_{n-2}], newest first
    for n, (value, valid) in enumerate(reads, start=1):
        assert value.shape == (1, 3, 2) and valid.shape == (1, 3)
        expected = [n - 1 - i if n - 1 - i >= 1 else 0.0 for i in range(3)]
        assert value[0, :, 0].tolist() == expected
        assert valid[0].tolist() == [n - 1 - i >= 1 for i in range(3)]


def test_a_long_history_builds_in_memory_linear_in_its_length():
    """H = 100 000 slots (within the ring cap): the newest-first order is computed per read, not kept for every
    step of the ring (H² indices: 80 GB, built for minutes)."""
    b = MeasuredBranch([spec(n_probes=1, history_length=100_000)], n_envs=1, dtype=torch.float64)
    reads = run(b, ramp(b, 3))
    value, valid = reads[-1]
    assert value.shape == (1, 100_000, 1) and value[0, :4, 0].tolist() == [3.0, 2.0, 1.0, 0.0]
    assert valid[0, :4].tolist() == [True, True, True, False] and not valid[0, 3:].any()


def test_ground_truth_history_is_not_delayed():
    b = MeasuredBranch([spec(n_probes=1, delay=2 * DT, history_length=2)], n_envs=1, dtype=torch.float64)
    reads = run(b, ramp(b, 4), ground_truth=True)
    assert reads[0][0][0, :, 0].tolist() == [1.0, 0.0] and reads[0][1][0].tolist() == [True, False]
    assert reads[3][0][0, :, 0].tolist() == [4.0, 3.0] and reads[3][1].all()


def test_history_is_cleared_by_reset():
    b = MeasuredBranch([spec(n_probes=1, history_length=2)], n_envs=2, dtype=torch.float64)
    run(b, ramp(b, 3))
    b.reset(torch.tensor([1]))
    value, valid = b.read(0)
    assert value[0, :, 0].tolist() == [3.0, 2.0] and valid[0].all()
    assert value[1].eq(0).all() and not valid[1].any()
    evaluate(b, constant(b, 9.0))
    value, valid = b.read(0)
    assert value[1, :, 0].tolist() == [9.0, 0.0] and valid[1].tolist() == [True, False]


def test_sensors_with_different_delays_share_a_batch(dtype):
    sensors = [spec("a", 2, delay=0.0), spec("b", 3, delay=3 * DT, history_length=2), spec("c", 1, delay=DT)]
    b = MeasuredBranch(sensors, n_envs=2, dtype=dtype)
    raws = ramp(b, 6)
    for n, raw in enumerate(raws, start=1):
        evaluate(b, raw)
        for i, d in enumerate([0, 3, 1]):
            value, valid = b.read(i)
            if i == 1:  # history: newest first
                value, valid = value[:, 0], valid[:, 0]
            assert valid.tolist() == [n - d >= 1] * 2
            assert value.eq(n - d if n - d >= 1 else 0).all()


def test_jitter_two_step_fraction():
    b = MeasuredBranch([spec(delay=DT, jitter=0.6 * DT)], n_envs=10)
    latencies = []
    for n, raw in enumerate(ramp(b, 1000), start=1):
        evaluate(b, raw)
        value, valid = b.read(0)
        ok = valid
        latencies.append(torch.where(ok, n - value[:, 0], torch.full_like(value[:, 0], -1)))
    lat = torch.stack(latencies[5:]).numpy()  # 995 evaluations × 10 envs ≈ 1e4
    assert set(np.unique(lat)) <= {1.0, 2.0}
    frac = float((lat == 2).mean())
    assert abs(frac - 0.30) < 0.02


def test_jitter_validity_uses_the_drawn_latency():
    b = MeasuredBranch([spec(delay=DT, jitter=0.9 * DT)], n_envs=200, dtype=torch.float64)
    evaluate(b, constant(b, 1.0))
    assert not b.read(0)[1].any()
    evaluate(b, constant(b, 2.0))
    value, valid = b.read(0)
    # latency 1 → sample 1 (valid); latency 2 → sample 0 (before the episode: zeros, invalid)
    assert torch.equal(valid, value[:, 0] == 1.0)
    assert 0 < int(valid.sum()) < 200


def test_jitter_sensor_and_plain_sensor_in_one_batch():
    b = MeasuredBranch([spec("j", 1, delay=DT, jitter=0.5 * DT), spec("p", 2, delay=DT)], n_envs=4, dtype=torch.float64)
    for n, raw in enumerate(ramp(b, 20), start=1):
        evaluate(b, raw)
        value, valid = b.read(1)
        assert value.eq(n - 1).all() and valid.all() == (n >= 2)
        jv, jvalid = b.read(0)
        assert ((n - jv[jvalid]) >= 1).all() and ((n - jv[jvalid]) <= 2).all()


def test_sample_validity_flags_are_delayed_with_their_sample():
    b = MeasuredBranch([spec("t", 2, delay=DT, sample_validity=True), spec("u", 1, delay=DT)], n_envs=2)
    evaluate_flags = [torch.tensor([[False, True], [True, True]]), torch.ones(2, 2, dtype=torch.bool)]
    for k, flags in enumerate(evaluate_flags, start=1):
        raw = constant(b, float(k))
        b.push(b.hardware(raw), raw, sample_valid=flags)
        gt_valid = b.read_ground_truth(0)[1]
        assert torch.equal(gt_valid, flags[:, 0])
    assert b.read(0)[1].tolist() == [False, True]  # sample 1 of env 0 was flagged invalid
    assert b.read(1)[1].tolist() == [True, True]


def test_reads_are_not_overwritten_by_later_evaluations():
    b = MeasuredBranch([spec(n_probes=2)], n_envs=1)
    evaluate(b, constant(b, 1.0))
    first, first_gt = b.read(0)[0], b.read_ground_truth(0)[0]
    evaluate(b, constant(b, 2.0))
    assert first.eq(1.0).all() and first_gt.eq(1.0).all()


@given(
    delays=st.lists(st.integers(0, 4), min_size=1, max_size=3),
    history=st.integers(0, 3),
    values=st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=12),
    reset_at=st.integers(0, 12),
)
def test_delay_and_history_property(delays, history, values, reset_at):
    """Read of sensor i at evaluation n (counted from the last reset) = sample n − D_i, zeros/invalid before 1."""
    sensors = [spec(f"s{i}", 2, delay=d * DT, history_length=history) for i, d in enumerate(delays)]
    b = MeasuredBranch(sensors, n_envs=1, dtype=torch.float64)
    episode = []
    for k, v in enumerate(values):
        if k == reset_at:
            b.reset()
            episode = []
        episode.append(v)
        evaluate(b, constant(b, v))
        n = len(episode)
        for i, d in enumerate(delays):
            value, valid = b.read(i)
            slots = range(history) if history else [None]
            for h in slots:
                m = n - d - (h or 0)
                got = value[0, h, 0] if history else value[0, 0]
                ok = valid[0, h] if history else valid[0]
                assert bool(ok) == (m >= 1) and float(got) == (episode[m - 1] if m >= 1 else 0.0)


@pytest.mark.parametrize("sensors", [[("u", 0.02, 0.0)], [("a", 0.02, 0.0), ("j", 0.01, 0.005)]])
def test_validity_after_a_subset_reset_late_in_a_run(sensors):
    """Long after the build every read is valid; a reset of one env makes only that env's reads invalid until its
    own evaluations since the reset exceed the latency (measured: n > D + j; ground truth: n ≥ 1), by every read."""
    b = MeasuredBranch([spec(name, 2, delay=delay, jitter=jitter) for name, delay, jitter in sensors], n_envs=2)
    for _ in range(10):
        evaluate(b, constant(b, 1.0))
    assert b.read_batch()[1].all() and b.read_ground_truth_batch()[1].all()
    b.reset(torch.tensor([False, True]))
    assert b.read_ground_truth_batch()[1].tolist() == [[True] * len(sensors), [False] * len(sensors)]
    for n in range(1, 5):
        evaluate(b, constant(b, 1.0))
        valid = b.read_batch()[1]
        assert torch.equal(b.read_ground_truth_batch()[1], torch.ones_like(valid))
        for i, (_, delay, jitter) in enumerate(sensors):
            lag = round(delay / DT)
            assert bool(valid[0, i]) and bool(b.read(i)[1][0]) and bool(b.read_ground_truth(i)[1][1])
            assert bool(b.read(i)[1][1]) == bool(valid[1, i])
            if n <= lag or (jitter == 0 and n > lag):
                assert bool(valid[1, i]) == (n > lag)
            elif n > lag + 1:
                assert bool(valid[1, i])
