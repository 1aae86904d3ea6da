"""Counter-based generator (docs/models/imperfections.md#seeding): seed derivation, integer hashing, distributions,
block invariance."""

import hashlib

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from tactile_sim.imperfections import rng


def test_sensor_seed_follows_sha256_definition():
    digest = hashlib.sha256(b"7:left_pad").digest()
    expected = int.from_bytes(digest[:8], "big") & (2**63 - 1)
    assert rng.sensor_seed(7, "left_pad") == expected
    assert rng.sensor_seed(7, "left_pad", seed=123) == 123
    assert rng.sensor_seed(0, "a") != rng.sensor_seed(0, "b")
    assert rng.sensor_seed(0, "a") != rng.sensor_seed(1, "a")
    assert 0 <= rng.sensor_seed(3, "x") < 2**63


@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=50))
def test_tensor_and_int_mixers_agree(values):
    x = torch.tensor(values, dtype=torch.int64)
    assert rng.mix32(x).tolist() == [rng.mix32_int(v) for v in values]
    assert x.tolist() == values  # the argument is not modified


def test_mix32_is_a_bijection_and_stays_in_32_bits():
    x = torch.arange(1 << 20, dtype=torch.int64) * 4093 + (2**32 - (1 << 20) * 4093)  # spans the top of the range
    y = rng.mix32(x)
    assert int(y.min()) >= 0 and int(y.max()) < 2**32
    assert torch.unique(y).numel() == x.numel()
    assert rng.mix32(torch.tensor([2**32 - 1])).item() == rng.mix32_int(2**32 - 1)


def test_lane_keys_depend_on_seed_stage_env_and_index():
    a = rng.lane_keys(5, 1, 3, 100, "cpu")
    assert a.shape == (3, 100)
    assert torch.unique(a).numel() == 300
    assert not torch.equal(a, rng.lane_keys(6, 1, 3, 100, "cpu"))
    assert not torch.equal(a, rng.lane_keys(5, 2, 3, 100, "cpu"))
    # a lane does not depend on how many envs / elements are built
    assert torch.equal(a[:2, :40], rng.lane_keys(5, 1, 2, 40, "cpu"))


def test_lanes_of_an_env_are_those_of_its_stream():
    a = rng.lane_keys(5, 1, 3, 100, "cpu")  # streams 0, 1, 2: the env indices
    assert torch.equal(a, rng.lane_keys(5, 1, torch.tensor([0, 1, 2]), 100, "cpu"))
    b = rng.lane_keys(5, 1, torch.tensor([2, 0, 0, 7]), 100, "cpu")
    assert torch.equal(b[0], a[2]) and torch.equal(b[1], a[0]) and torch.equal(b[2], a[0])
    assert torch.unique(b[3]).numel() == 100 and not (b[3, :, None] == a.reshape(-1)).any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_uniform_and_normal_distributions(dtype):
    lanes = rng.lane_keys(11, 4, 1, 50_000, "cpu")
    bits = rng.draw_bits(lanes, rng.counter_hash(torch.tensor([3])))
    u = rng.bits_to_uniform(bits, dtype)
    assert u.dtype == dtype and float(u.min()) >= 0.0 and float(u.max()) < 1.0
    assert stats.kstest(u.double().numpy().ravel(), "uniform").pvalue > 1e-3
    z = rng.bits_to_normal(bits, dtype)
    assert torch.isfinite(z).all()
    assert stats.kstest(z.double().numpy().ravel(), "norm").pvalue > 1e-3
    n = z.numel()
    assert abs(float(z.double().mean())) < 4.0 / n**0.5
    assert abs(float(z.double().std()) - 1.0) < 4.0 / (2 * n) ** 0.5


def test_extreme_bits_give_finite_normals():
    bits = torch.tensor([0, 1, 2**32 - 1, 2**31], dtype=torch.int64)
    for dtype in (torch.float32, torch.float64):
        z = rng.bits_to_normal(bits, dtype)
        assert torch.isfinite(z).all()
        assert float(z[0]) < -5.0 and float(z[2]) > 5.0


def test_streams_are_uncorrelated_across_lanes_and_counters():
    lanes = rng.lane_keys(2, 4, 1, 64, "cpu")[0]
    hashes = rng.counter_hash(torch.arange(4000))[:, None]
    z = rng.bits_to_normal(rng.draw_bits(lanes, hashes), torch.float64).numpy()  # [counter, lane]
    corr = np.corrcoef(z.T)
    off = corr[~np.eye(64, dtype=bool)]
    bound = 5.0 / np.sqrt(z.shape[0])  # |r| of independent samples has std 1/sqrt(n)
    assert np.abs(off).max() < bound
    lag1 = np.array([np.corrcoef(z[:-1, i], z[1:, i])[0, 1] for i in range(64)])
    assert np.abs(lag1).max() < bound


@pytest.mark.parametrize("block", [1, 3, 64])
def test_counter_stream_values_do_not_depend_on_block_size(block):
    lanes = rng.lane_keys(9, 3, 2, 5, "cpu")

    def uniform(bits, counters):
        return rng.bits_to_uniform(bits, torch.float64)

    ref = rng.CounterStream(lanes, uniform, 1)
    s = rng.CounterStream(lanes, uniform, block)
    for k in [1, 2, 3, 70, 4, 5, 200, 1]:
        assert torch.equal(s[k], ref[k])
    direct = rng.bits_to_uniform(rng.draw_bits(lanes, rng.counter_hash(torch.tensor(70))), torch.float64)
    assert torch.equal(s[70], direct)


def test_block_size_bounds():
    assert rng.block_size(1) == 64
    assert rng.block_size(10**9) == 1
    assert 1 <= rng.block_size(4096) <= 64
