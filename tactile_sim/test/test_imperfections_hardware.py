"""Hardware stages, probe-level draws, fillers, resets and seeding (docs/models/imperfections.md: #hardware,
#probe-level, #reset, #seeding, #checks)."""

import math

import numpy as np
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st
from helpers_imperfections import DT, constant, evaluate, spec

from tactile_sim.imperfections.pipeline import MeasuredBranch
from tactile_sim.imperfections.rng import sensor_seed


def measured_minus_truth(branch, raw, steps):
    """[steps, E, P(, K)] of read − ground truth (no delay), evaluating `raw` each step."""
    out = []
    for _ in range(steps):
        evaluate(branch, raw)
        out.append(branch.read(0)[0] - branch.read_ground_truth(0)[0])
    return torch.stack(out)


def test_bias_is_exact(dtype):
    b = MeasuredBranch([spec(n_probes=4, bias=0.25)], n_envs=2, dtype=dtype)
    raw = torch.arange(8, dtype=dtype).view(2, 4, 1) * 0.1
    evaluate(b, raw)
    assert torch.equal(b.read(0)[0], raw[..., 0] + torch.tensor(0.25, dtype=dtype))
    assert torch.equal(b.read_ground_truth(0)[0], raw[..., 0])


def test_white_noise_statistics(dtype):
    sigma, bias = 0.1, -0.3
    b = MeasuredBranch([spec(n_probes=2, noise=sigma, bias=bias)], n_envs=100, dtype=dtype)
    d = measured_minus_truth(b, constant(b, 1.0), 100).double()  # 2e4 samples per probe
    n = d.shape[0] * d.shape[1]
    for p in range(2):
        x = d[..., p].reshape(-1)
        assert abs(float(x.mean()) - bias) < 4 * sigma / math.sqrt(n)
        assert abs(float(x.std()) / sigma - 1) < 4 / math.sqrt(2 * n)
    r = np.corrcoef(d[..., 0].reshape(-1).numpy(), d[..., 1].reshape(-1).numpy())[0, 1]
    assert abs(r) < 4 / math.sqrt(n)


def test_resolution_rounds_half_to_even(dtype):
    b = MeasuredBranch([spec(n_probes=6, resolution=0.5)], n_envs=1, dtype=dtype)
    raw = torch.tensor([0.25, 0.75, 1.25, -0.25, -0.75, 0.3], dtype=dtype).view(1, 6, 1)
    evaluate(b, raw)
    assert b.read(0)[0][0].tolist() == [0.0, 1.0, 1.0, 0.0, -1.0, 0.5]


def test_resolution_only_on_channels_that_set_it():
    res = np.zeros(12)
    res[3 * 2 + 1] = 1.0  # torque block (after 2 probes × 3 forces), probe 0, y → channel 4 of probe 0
    b = MeasuredBranch([spec(n_probes=2, channels=6, resolution=res)], n_envs=1, dtype=torch.float64)
    raw = torch.full((1, 2, 6), 0.3, dtype=torch.float64)
    evaluate(b, raw)
    out = b.read(0)[0][0]
    expected = torch.full((2, 6), 0.3, dtype=torch.float64)
    expected[0, 4] = 0.0
    assert torch.equal(out, expected)


def test_per_channel_arrays_force_block_then_torque_block():
    n = 3
    flat = np.arange(6 * n, dtype=float)  # bias = flat index in the sensor's flat channel order
    b = MeasuredBranch([spec(n_probes=n, channels=6, bias=flat)], n_envs=1, dtype=torch.float64)
    evaluate(b, torch.zeros(1, n, 6, dtype=torch.float64))
    out = b.read(0)[0][0]
    for p in range(n):
        for c in range(3):
            assert out[p, c] == flat[3 * p + c]  # force (probe-major, xyz)
            assert out[p, 3 + c] == flat[3 * n + 3 * p + c]  # torque block after all forces


def test_per_channel_array_for_displacement_and_scalar_outputs():
    b = MeasuredBranch([spec("d", 2, channels=3, bias=np.arange(6.0))], n_envs=1, dtype=torch.float64)
    evaluate(b, torch.zeros(1, 2, 3, dtype=torch.float64))
    assert b.read(0)[0][0].tolist() == [[0, 1, 2], [3, 4, 5]]
    grid = spec("g", 6, layout_shape=(2, 3), bias=np.arange(6.0))
    b = MeasuredBranch([grid], n_envs=1, dtype=torch.float64)
    evaluate(b, torch.zeros(1, 6, 1, dtype=torch.float64))
    assert b.read(0)[0][0].tolist() == [[0, 1, 2], [3, 4, 5]]  # row-major layout


@pytest.mark.parametrize("episode_steps", [20])
def test_random_walk_variance_in_two_episodes(episode_steps):
    sigma_w = 0.2
    b = MeasuredBranch([spec(random_walk=sigma_w)], n_envs=1000, dtype=torch.float64)
    for _ in range(2):
        d = measured_minus_truth(b, constant(b, 0.0), episode_steps)[..., 0]  # [m, E]
        for m in (1, 2, 5, 10, 20):
            var = float(d[m - 1].var())
            assert abs(var / (m * sigma_w**2) - 1) < 0.15, (m, var)
        b.reset()


def test_dead_taxels_probability_one(dtype):
    active = np.array([True, False, True, True])
    s = spec(n_probes=4, channels=6, active=active, dead_taxel_probability=1.0, dead_taxel_value_range=(0.123, 0.456))
    b = MeasuredBranch([s], n_envs=3, dtype=dtype)
    raw = torch.rand(3, 4, 6, dtype=dtype) * active[None, :, None]
    evaluate(b, raw)
    value = b.read(0)[0]
    first = value.clone()
    for e in range(3):
        for p in np.flatnonzero(active):
            ch = value[e, p]
            assert torch.equal(ch, ch[0].expand(6)) and 0.123 <= float(ch[0]) < 0.456
        assert value[e, 1].eq(0).all()
    assert torch.equal(b.read_ground_truth(0)[0], raw)
    b.reset()
    evaluate(b, raw)
    assert not torch.equal(b.read(0)[0][:, [0, 2, 3]], first[:, [0, 2, 3]])  # redrawn


def test_dead_probability_fraction():
    b = MeasuredBranch([spec(n_probes=50, dead_taxel_probability=0.3, dead_taxel_value_range=(-7.0, -7.0))], 40)
    evaluate(b, constant(b, 1.0))
    frac = float((b.read(0)[0] == -7.0).double().mean())
    assert abs(frac - 0.3) < 4 * math.sqrt(0.3 * 0.7 / 2000)


def test_fillers_read_exactly_zero_on_both_branches():
    active = np.array([True, False, True])
    s = spec(n_probes=3, active=active, noise=0.3, bias=1.0, random_walk=0.2, resolution=0.01, probe_radius_noise=0.1,
             dead_taxel_probability=0.5, dead_taxel_value_range=(1.0, 2.0), hysteresis_strength=0.5, hysteresis_tau=0.1)
    b = MeasuredBranch([s], n_envs=4)
    radius = b.radius(torch.tensor([0.01, 0.0, 0.02]))
    assert radius[:, 1].eq(0).all()
    for _ in range(3):
        raw = torch.rand(4, 3, 1)  # even a non-zero filler input is masked
        evaluate(b, raw)
        assert b.read(0)[0][:, 1].eq(0).all() and b.read_ground_truth(0)[0][:, 1].eq(0).all()
        assert b.read(0)[0][:, 0].ne(raw[:, 0, 0]).all()
    assert b.gain[:, 1].eq(1).all()


def test_radius_noise_bounds_and_spread(dtype):
    a = 0.004
    b = MeasuredBranch([spec(n_probes=3, probe_radius_noise=a)], n_envs=2000, dtype=dtype)
    nominal = torch.tensor([0.01, 0.002, 0.0], dtype=dtype)
    nominal[2] = 0.03
    r = b.radius(nominal)
    assert r.shape == (2000, 3)
    assert (r[:, 0] >= 0.01 - a - 1e-7).all() and (r[:, 0] < 0.01 + a + 1e-7).all()
    assert (r[:, 1] >= 0).all() and (r[:, 1] == 0).any()  # clamped at 0
    x = (r[:, 2] - 0.03).double()
    assert abs(float(x.mean())) < 4 * a / math.sqrt(3 * 2000)
    assert abs(float(x.var()) / (a * a / 3) - 1) < 0.15
    evaluate(b, constant(b, 0.0))
    assert not torch.equal(b.radius(nominal), r)  # fresh draw each evaluation
    plain = MeasuredBranch([spec(n_probes=3)], n_envs=2, dtype=dtype)
    assert torch.equal(plain.radius(nominal), nominal.expand(2, 3))


def test_static_and_resampled_gains():
    grid_gain = np.array([[1.0, 1.5], [2.0, 0.5]])
    b = MeasuredBranch([spec("s", 4, layout_shape=(2, 2), probe_gain=grid_gain)], n_envs=2, dtype=torch.float64)
    assert torch.equal(b.gain, torch.tensor(grid_gain.reshape(1, 4)).expand(2, 4))
    r = MeasuredBranch([spec("a", 3, probe_gain=9.0), spec("r", 500, probe_gain_resample_range=(0.8, 1.2))], 4)
    assert r.gain[:, :3].eq(9.0).all()
    g0 = r.gain[:, 3:].clone()
    assert (g0 >= 0.8).all() and (g0 < 1.2).all() and g0.std() > 0.05
    r.reset(torch.tensor([2]))
    assert torch.equal(r.gain[[0, 1, 3], 3:], g0[[0, 1, 3]])
    assert not torch.equal(r.gain[2, 3:], g0[2])


def test_subset_reset_matches_full_reset_for_that_env_and_leaves_others_untouched():
    def make():
        s = spec("x", 5, noise=0.1, random_walk=0.05, probe_gain_resample_range=(0.5, 1.5), dead_taxel_probability=0.2,
                 dead_taxel_value_range=(3.0, 4.0), hysteresis_strength=0.3, hysteresis_tau=0.05, delay=DT)
        return MeasuredBranch([s], n_envs=3, dtype=torch.float64)

    raws = [torch.rand(3, 5, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(k)) for k in range(12)]
    plain, partial, full = make(), make(), make()
    reads = {"plain": [], "partial": [], "full": []}
    for k, raw in enumerate(raws):
        if k == 6:
            partial.reset(torch.tensor([False, True, False]))
            full.reset()
        for key, b in (("plain", plain), ("partial", partial), ("full", full)):
            evaluate(b, raw)
            reads[key].append(b.read(0)[0].clone())
    for k in range(12):
        assert torch.equal(reads["partial"][k][[0, 2]], reads["plain"][k][[0, 2]])
        assert torch.equal(reads["partial"][k][1], (reads["full"] if k >= 6 else reads["plain"])[k][1])
    assert not torch.equal(reads["partial"][8][1], reads["plain"][8][1])


def test_same_seed_identical_and_names_give_distinct_streams():
    def reads(sensors, steps=5):
        b = MeasuredBranch(sensors, n_envs=2)
        out = []
        for _ in range(steps):
            evaluate(b, constant(b, 1.0))
            out.append([b.read(i)[0].clone() for i in range(len(sensors))] + [b.gain.clone()])
        return out

    opts = dict(n_probes=4, noise=0.1, random_walk=0.1, probe_gain_resample_range=(0.5, 2.0))
    a1, a2 = reads([spec("a", **opts), spec("b", **opts)]), reads([spec("a", **opts), spec("b", **opts)])
    for x, y in zip(a1, a2):
        assert all(torch.equal(u, v) for u, v in zip(x, y))
    assert not torch.equal(a1[0][0], a1[0][1])  # different names → different streams
    # adding a third sensor (before and after) changes nothing for the first two
    with3 = reads([spec("c", **opts), spec("a", **opts), spec("b", **opts)])
    for x, y in zip(a1, with3):
        assert torch.equal(x[0], y[1]) and torch.equal(x[1], y[2])
        assert torch.equal(x[2], y[3][:, 4:])
    explicit = reads([spec("renamed", seed=sensor_seed(0, "a"), **opts)])
    assert torch.equal(explicit[3][0], a1[3][0])


def test_scene_seed_changes_the_stream():
    s0 = spec("a", 3, noise=1.0)
    s1 = spec("a", 3, seed=sensor_seed(1, "a"), noise=1.0)
    out = []
    for s in (s0, s1):
        b = MeasuredBranch([s], 1)
        evaluate(b, constant(b, 0.0))
        out.append(b.read(0)[0])
    assert not torch.equal(out[0], out[1])


def test_hardware_does_not_modify_its_input_and_is_identity_without_stages():
    b = MeasuredBranch([spec(n_probes=2, noise=0.1, bias=1.0, resolution=0.1)], 1)
    x = torch.ones(1, 2, 1)
    y = b.hardware(x)
    assert x.eq(1).all() and not torch.equal(x, y)
    plain = MeasuredBranch([spec(n_probes=2)], 1)
    assert plain.hardware(x) is x and plain.transform(x) is x


def test_batch_validation():
    with pytest.raises(ValueError, match="share channels and dt"):
        MeasuredBranch([spec("a", 1), spec("b", 1, channels=3)], 1)
    with pytest.raises(ValueError, match="share channels and dt"):
        MeasuredBranch([spec("a", 1), spec("b", 1, dt=0.02)], 1)
    with pytest.raises(ValueError, match="n_envs"):
        MeasuredBranch([spec("a", 1)], 0)


@given(
    x=st.lists(st.floats(-100, 100, allow_nan=False), min_size=1, max_size=16),
    r=st.sampled_from([0.5, 0.25, 1e-3, 0.1, 3.0]),
    bias=st.floats(-10, 10, allow_nan=False),
)
@example(x=[0.0], r=1e-3, bias=5.0195)   # a tie whose product r·k rounds up by one ulp
def test_bias_and_quantisation_property(x, r, bias):
    """Output = r·round((x + b)/r): a multiple of r within r/2 of x + b, halves to even (float64)."""
    n = len(x)
    b = MeasuredBranch([spec(n_probes=n, bias=bias, resolution=r)], n_envs=1, dtype=torch.float64)
    raw = torch.tensor(x, dtype=torch.float64).view(1, n, 1)
    evaluate(b, raw)
    out = b.read(0)[0][0].numpy()
    shifted = np.asarray(x) + bias
    assert np.array_equal(out, r * np.round(shifted / r))  # numpy rounds half to even too
    # within r/2, up to the rounding of the product r·k (x = 0, b = 5.0195, r = 1e-3: 5.0200000000000005)
    assert np.all(np.abs(out - shifted) <= r / 2 + 2 * np.spacing(np.maximum(np.abs(out), np.abs(shifted))))
