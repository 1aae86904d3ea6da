"""Normal draws of the hardware kernel (docs/models/imperfections.md#hardware, docs/models/imperfections.md#seeding):
the same integer stream as the torch hash, an accurate
inverse-CDF transform, and the walk / noise / bias arithmetic of the measured branch."""

import numpy as np
import pytest
import torch
from helpers_imperfections import constant, evaluate, spec

from tactile_sim.imperfections import rng
from tactile_sim.imperfections.pipeline import STAGE_NOISE, STAGE_RANDOM_WALK, MeasuredBranch


def _expected_normals(branch: MeasuredBranch, stage: int, evaluation: int) -> torch.Tensor:
    """N(0, 1) draws [E, P, K] of one stage and evaluation, hashed in torch (int64) and transformed."""
    lanes = branch._channel_lanes(stage)
    bits = rng.draw_bits(lanes, rng.counter_hash(torch.tensor(evaluation)))
    return rng.bits_to_normal(bits, branch.dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_noise_kernel_draws_the_torch_integer_stream(dtype):
    b = MeasuredBranch([spec("a", 5, channels=3, noise=1.0), spec("b", 2, channels=3, noise=1.0)], n_envs=3,
                       dtype=dtype)
    zero = constant(b, 0.0)
    for g in (1, 2, 3):
        evaluate(b, zero)
        value = torch.cat([b.read(0)[0].reshape(3, -1, 3), b.read(1)[0].reshape(3, -1, 3)], dim=1)
        assert torch.equal(value, _expected_normals(b, STAGE_NOISE, g))


def test_noise_scales_and_bias_adds_per_channel():
    sensor = spec("s", 2, channels=2, noise=np.array([0.5, 2.0, 0.0, 1.0]), bias=np.array([0.25, -1.0, 3.0, 0.0]))
    b = MeasuredBranch([sensor], n_envs=2, dtype=torch.float64)
    raw = torch.arange(8, dtype=torch.float64).view(2, 2, 2)
    evaluate(b, raw)
    z = _expected_normals(b, STAGE_NOISE, 1)
    sigma, bias = (torch.tensor(sensor.per_channel(key)) for key in ("noise", "bias"))  # [probe, channel]
    torch.testing.assert_close(b.read(0)[0], raw + (z * sigma + bias), rtol=0, atol=1e-15)
    assert torch.equal(b.read(0)[0][:, 0, 1], raw[:, 0, 1] + 3.0)  # probe 0, channel 1: σ = 0, the bias only


def test_random_walk_accumulates_the_stage_draws():
    b = MeasuredBranch([spec("w", 3, random_walk=0.2)], n_envs=2, dtype=torch.float64)
    walk = torch.zeros(2, 3, 1, dtype=torch.float64)
    for g in (1, 2, 3):
        evaluate(b, constant(b, 1.0))
        walk += 0.2 * _expected_normals(b, STAGE_RANDOM_WALK, g)
        torch.testing.assert_close(b.read(0)[0], 1.0 + walk[..., 0], rtol=0, atol=1e-14)


def test_float32_transform_is_within_a_few_ulp_of_erfinv():
    g = torch.Generator().manual_seed(3)
    bits = torch.randint(0, 2**32, (200_000,), generator=g, dtype=torch.int64)
    bits = torch.cat([bits, torch.tensor([0, 255, 256, 2**31 - 1, 2**31, 2**32 - 256, 2**32 - 1])])
    z = rng.bits_to_normal(bits, torch.float32).double()
    v = ((bits >> 8) | 1).sub(1 << 23).double() * 2.0**-23  # the float32 transform's uniform, exactly
    exact = torch.erfinv(v) * 2**0.5
    assert float(((z - exact).abs() / exact.abs()).max()) < 8 * 2.0**-24
    z64 = rng.bits_to_normal(bits, torch.float64)
    v64 = ((bits | 1) - 2**31).double() * 2.0**-31
    torch.testing.assert_close(z64, torch.erfinv(v64) * 2**0.5, rtol=4e-15, atol=0)


def test_float32_draw_does_not_depend_on_its_block():
    """The float32 CPU transform makes rng.NORMAL_BLOCK draws at a time and evaluates the tail polynomial (w ≥ 5:
    top 24 bits below about 28 000 or above 2**24 − 28 000) only for a block that holds a tail draw: a draw must
    read the same alone, at any offset in a block (full or the last, partial one), beside tail draws or not."""
    g = torch.Generator().manual_seed(5)
    n = 3 * rng.NORMAL_BLOCK + 5
    bits = torch.randint(0, 2**32, (n,), generator=g, dtype=torch.int64)
    bits[::29] = torch.randint(0, 20_000 << 8, (len(range(0, n, 29)),), generator=g)  # tails, z < -2.9
    bits[1] = 2**32 - 1  # z > 5
    z = rng.bits_to_normal(bits, torch.float32)
    alone = torch.cat([rng.bits_to_normal(bits[i:i + 1], torch.float32) for i in range(n)])
    assert torch.equal(z, alone)
    for offset in (1, 3, rng.NORMAL_BLOCK - 1):
        assert torch.equal(rng.bits_to_normal(bits[offset:], torch.float32), z[offset:])
    assert float(z[::29].max()) < -2.9 and float(z[1]) > 5.0


def test_lanes_keep_their_32_bits():
    lanes = torch.tensor([0, 1, 2**31 - 1, 2**31, 2**32 - 1], dtype=torch.int64)
    assert rng.lanes_uint32(lanes).tolist() == [0, 1, 2**31 - 1, -(2**31), -1]
    assert [rng.counter_hash_int(k) for k in (0, 5, 2**40 + 3)] == rng.counter_hash(
        torch.tensor([0, 5, 2**40 + 3])).tolist()
