"""Counter-based random numbers in torch: one independent stream per sensor (spec §13.9).

A draw is a pure function of (sensor seed, stage, env, local index, counter)::

    bits = mix32(lane ^ counter_hash(counter)),   lane = hash(sensor seed, stage, env, local index)

so it does not depend on which other sensors exist, on how sensors are batched, on the device, or on the order in
which tensors are filled. Lanes are hashed once at build; a step only xors a counter in and mixes once.

All integer arithmetic is done on int64 tensors holding values in [0, 2**32): every product is a 32-bit value times
a constant below 2**31, so it stays below 2**63 and never overflows (torch has no uint32 arithmetic on every device).
Integer results are identical on CPU and CUDA; the float conversions are exact; the normal transform uses
``torch.erfinv`` (the inverse-CDF method: one uniform per normal, no pairing), whose last bit may differ by device.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import torch

MASK32 = 0xFFFFFFFF
SEED_MASK = (1 << 63) - 1
_MUL_1 = 0x7FEB352D
_MUL_2 = 0x68E31DA5
_GOLDEN = 0x9E3779B9


def sensor_seed(scene_seed: int, name: str, seed: int | None = None) -> int:
    """The key of a sensor's stream: ``seed`` when given, else the first 8 bytes of SHA-256(f"{scene_seed}:{name}")
    read big-endian and masked to 63 bits (spec §13.9)."""
    if seed is not None:
        return int(seed)
    digest = hashlib.sha256(f"{scene_seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & SEED_MASK


def mix32(x: torch.Tensor) -> torch.Tensor:
    """Bijective 32-bit integer finaliser (xorshift-multiply rounds). x: int64 in [0, 2**32) → same shape and range.

    Works in place on a fresh tensor; the argument itself is not modified.
    """
    x = x ^ (x >> 16)
    x.mul_(_MUL_1).bitwise_and_(MASK32)
    x.bitwise_xor_(x >> 15)
    x.mul_(_MUL_2).bitwise_and_(MASK32)
    x.bitwise_xor_(x >> 16)
    return x


def mix32_int(x: int) -> int:
    """:func:`mix32` on a Python int in [0, 2**32) (identical results)."""
    x ^= x >> 16
    x = (x * _MUL_1) & MASK32
    x ^= x >> 15
    x = (x * _MUL_2) & MASK32
    x ^= x >> 16
    return x


def stream_key(seed: int, stage: int) -> int:
    """32-bit key of one (sensor seed, stage) pair; seed is the 63-bit sensor key, stage a small int."""
    k = mix32_int((seed & MASK32) ^ mix32_int((stage * _GOLDEN + 1) & MASK32))
    return mix32_int((k + (seed >> 32)) & MASK32)


def lane_keys(seed: int, stage: int, n_envs: int, n_local: int, device: torch.device | str) -> torch.Tensor:
    """Lanes of one sensor and stage: int64 [n_envs, n_local], lane[e, j] = hash(key, e, j); j = local index."""
    key = stream_key(seed, stage)
    env = torch.arange(n_envs, dtype=torch.int64, device=device)[:, None]
    local = torch.arange(n_local, dtype=torch.int64, device=device)[None, :]
    per_env = mix32((mix32(env ^ key) + _GOLDEN) & MASK32)
    return mix32((per_env + local) & MASK32)


def counter_hash(counter: torch.Tensor) -> torch.Tensor:
    """Hash of a non-negative int64 counter (< 2**63) → int64 in [0, 2**32), same shape."""
    lo = mix32(counter & MASK32)
    return mix32((lo + (counter >> 32) + _GOLDEN) & MASK32)


def draw_bits(lanes: torch.Tensor, counter_hashes: torch.Tensor) -> torch.Tensor:
    """32 random bits per (lane, counter): int64 in [0, 2**32); shapes broadcast (lanes [E, P], hashes [B, 1, 1])."""
    return mix32(lanes ^ counter_hashes)


def bits_to_uniform(bits: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Uniform in [0, 1), exactly representable: 24 bits for float32 (and lower precisions), 32 bits for float64."""
    if dtype == torch.float64:
        return bits.to(dtype).mul_(2.0**-32)
    return (bits >> 8).to(dtype).mul_(2.0**-24)


def bits_to_normal(bits: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Standard normal by inverse CDF: sqrt(2)·erfinv(v), v = odd multiple of 2**-(b-1) in the open interval (−1, 1)
    (b = 32 bits in float64, 24 in float32), so the result is always finite."""
    shift, top = (0, 31) if dtype == torch.float64 else (8, 23)
    v = ((bits >> shift) | 1).sub_(1 << top).to(dtype).mul_(2.0**-top)
    return v.erfinv_().mul_(2.0**0.5)


class CounterStream:
    """Draws of one stage for evaluations k = 0, 1, 2, …, computed ``block`` evaluations at a time.

    lanes: int64 lane keys of any shape S (built with :func:`lane_keys`, stacked over sensors).
    transform(bits [B, *S], counters [B]) → one tensor or a tuple of tensors with leading axis B (the values this
    stage needs, e.g. σ·normal + bias). ``stream[k]`` returns the values (views) of evaluation k; it only recomputes
    when k leaves the cached block, so small batches pay the hashing cost once per ``block`` evaluations.
    """

    def __init__(
        self,
        lanes: torch.Tensor,
        transform: Callable[[torch.Tensor, torch.Tensor], torch.Tensor | Sequence[torch.Tensor]],
        block: int,
    ):
        self.lanes = lanes
        self.transform = transform
        self.block = max(1, int(block))
        self._start = -1
        self._views: list = []

    def __getitem__(self, k: int):
        i = k - self._start
        if self._start < 0 or not 0 <= i < self.block:
            self._fill(k)
            i = 0
        return self._views[i]

    def _fill(self, k: int) -> None:
        counters = torch.arange(k, k + self.block, dtype=torch.int64, device=self.lanes.device)
        hashes = counter_hash(counters).view((self.block,) + (1,) * self.lanes.dim())
        out = self.transform(draw_bits(self.lanes, hashes), counters)
        if isinstance(out, torch.Tensor):
            self._views = list(out.unbind(0))
        else:
            self._views = list(zip(*(t.unbind(0) for t in out)))
        self._start = k


def block_size(n_elements: int, target: int = 1 << 17, cap: int = 64) -> int:
    """Evaluations per :class:`CounterStream` block: ≈ target / n_elements, between 1 and cap."""
    return max(1, min(cap, target // max(1, n_elements)))
