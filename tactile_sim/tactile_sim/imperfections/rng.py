"""Counter-based random numbers in torch: one independent stream per sensor (docs/models/imperfections.md#seeding).

A draw is a pure function of (sensor seed, stage, env stream, local index, counter)::

    bits = mix32(lane ^ counter_hash(counter)),   lane = hash(sensor seed, stage, env stream, local index)

so it does not depend on which other sensors exist, on how sensors are batched, on the device, or on the order in
which tensors are filled. Lanes are hashed once at build; a step only xors a counter in and mixes once. The env
stream is the env index unless the suite is given others (``SensorSuite(noise_streams=...)``): envs of one stream
draw the same noise.

All integer arithmetic in torch is done on int64 tensors holding values in [0, 2**32): every product is a 32-bit
value times a constant below 2**31, so it stays below 2**63 and never overflows (torch has no uint32 arithmetic on
every device). The normal draws of the hardware stages are made by a warp kernel that hashes in uint32 (the same
integer stream, bit for bit, on CPU and CUDA) and applies the transform of :data:`NORMAL_DRAWS_CPP`. The uniform
conversions are exact; the normal transform is the inverse-CDF method (one uniform per normal, no pairing): in
float32 Giles' (2010) single-precision erfinv polynomials with Cephes' logarithm polynomial on the CPU (``logf`` on
CUDA), within a few ulp of erfinv; in float64 warp's double erfinv. Its last bits may differ by device.

The normal transform is native C++ inside warp kernels (``wp.func_native``): warp's own CPU code generation keeps
every array access scalar (negative-index wrapping), while a plain loop over raw pointers is vectorised by the
compiler — about 20 times faster for these element-wise streams. On the CPU the float32 transform works on explicit
clang vectors of :data:`NORMAL_BLOCK` draws, so that the polynomial of the rare tail draws (0.34 %) is evaluated only
for a block that has one, not for every draw: a fifth to a third less time per draw.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import torch
import warp as wp

from ..geometry.struct_launch import StructLaunch, warp_struct
from ..geometry.warp_kernels import unique_kernel

MASK32 = 0xFFFFFFFF
SEED_MASK = (1 << 63) - 1
_MUL_1 = 0x7FEB352D
_MUL_2 = 0x68E31DA5
_GOLDEN = 0x9E3779B9


def sensor_seed(scene_seed: int, name: str, seed: int | None = None) -> int:
    """The key of a sensor's stream: ``seed`` when given, else the first 8 bytes of SHA-256(f"{scene_seed}:{name}")
    read big-endian and masked to 63 bits (docs/models/imperfections.md#seeding)."""
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


def lane_keys(seed: int, stage: int, streams: int | torch.Tensor, n_local: int,
              device: torch.device | str) -> torch.Tensor:
    """Lanes of one sensor and stage: int64 [E, n_local], lane[e, j] = hash(key, streams[e], j); streams: the stream
    of each env, int64 [E] in [0, 2**32), or an int E for streams 0 … E − 1 (the env indices); j = local index."""
    key = stream_key(seed, stage)
    if isinstance(streams, int):
        streams = torch.arange(streams, dtype=torch.int64)
    env = streams.to(device=device, dtype=torch.int64)[:, None]
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


def counter_hash_int(counter: int) -> int:
    """:func:`counter_hash` of one Python int (identical results; the per-evaluation key of a kernel launch)."""
    lo = mix32_int(counter & MASK32)
    return mix32_int((lo + (counter >> 32) + _GOLDEN) & MASK32)


def lanes_uint32(lanes: torch.Tensor) -> torch.Tensor:
    """int64 values in [0, 2**32) as an int32 tensor holding the same 32 bits (bound as uint32 in warp kernels;
    the narrowing conversion keeps the low 32 bits)."""
    return lanes.to(torch.int32).contiguous()


MIX32_CPP = f"""
    auto mix32 = [](auto x) {{
        x ^= x >> 16;
        x *= {_MUL_1:#x}u;
        x ^= x >> 15;
        x *= {_MUL_2:#x}u;
        return x ^ (x >> 16);
    }};
"""
"""C++ source defining ``mix32(x)``: :func:`mix32` in native uint32 arithmetic (identical results), of one uint32_t or
of a clang vector of them."""

COUNTER_HASH_CPP = f"""
    auto counter_hash = [mix32](int64_t counter) -> uint32_t {{
        const uint64_t c = static_cast<uint64_t>(counter);
        return mix32(mix32(static_cast<uint32_t>(c)) + static_cast<uint32_t>(c >> 32) + {_GOLDEN:#x}u);
    }};
"""
"""C++ source defining ``counter_hash(int64_t)`` (after :data:`MIX32_CPP`): :func:`counter_hash` of a counter in
[0, 2**63) in native uint32 arithmetic (identical results)."""

INTERLEAVED_LOOP_CPP = """
#if !defined(__CUDA_ARCH__)
#pragma clang fp contract(fast)
#define INTERLEAVED_LOOP _Pragma("clang loop vectorize(enable) interleave_count(4)")
#else
#define INTERLEAVED_LOOP
#endif
"""
"""C++ source for the start of a native snippet: fused multiply-adds on the CPU (as CUDA does by default), and
``INTERLEAVED_LOOP`` to put before an element-wise loop so that the compiler keeps four vector iterations in
flight (the normal transform is a long dependency chain)."""

_GILES_CENTRAL = ("2.81022636e-08f", "3.43273939e-07f", "-3.5233877e-06f", "-4.39150654e-06f", "0.00021858087f",
                  "-0.00125372503f", "-0.00417768164f", "0.246640727f", "1.50140941f")
"""Giles' single-precision erfinv polynomial for w < 5, in w − 2.5, highest degree first (C++ float literals)."""
_GILES_TAIL = ("-0.000200214257f", "0.000100950558f", "0.00134934322f", "-0.00367342844f", "0.00573950773f",
               "-0.0076224613f", "0.00943887047f", "1.00167406f", "2.83297682f")
"""The same for w ≥ 5, in sqrt(w) − 3."""


def _horner(p: str, coefficients, x: str, declare: str) -> str:
    """C++ lines evaluating a polynomial by Horner's rule into ``p`` (declared as ``declare``): coefficients are C++
    expressions, highest degree first; one multiply-add per degree."""
    lines = [f"{declare} {p} = {coefficients[0]};"] + [f"{p} = {c} + {p} * {x};" for c in coefficients[1:]]
    return "\n        ".join(lines)


NORMAL_BLOCK = 64
"""Draws the float32 CPU transform makes per call: a clang vector of that many lanes, which the compiler splits into
its vector registers (64 float32 lanes: eight AVX registers, enough independent work to hide the transform's long
dependency chain)."""

_FOR_EACH_SCALAR = """
    auto for_each_normal = [&](const uint32_t* lanes, auto&& bits_of, int start, int stop, auto&& use) {
        INTERLEAVED_LOOP
        for (int j = start; j < stop; ++j) use(j, standard_normal(bits_of(lanes[j])));
    };
"""

_F32_SCALAR = r"""
    auto standard_normal = [](uint32_t bits) -> float {
        // v: odd multiple of 2^-23 in (-1, 1) from the top 24 bits; z = sqrt(2) erfinv(v)
        const float v = static_cast<float>(static_cast<int32_t>((bits >> 8) | 1u) - 8388608) * 1.1920928955078125e-07f;
        const float a = (1.0f - v) * (1.0f + v);
        const float w = -logf(a);
        // Giles' two branches (w < 5: in w - 2.5, else in sqrt(w) - 3) as one polynomial with each draw's coefficients
        const bool central = w < 5.0f;
        const float c = central ? w - 2.5f : sqrtf(w) - 3.0f;
        """ + _horner("p", [f"(central ? {a} : {b})" for a, b in zip(_GILES_CENTRAL, _GILES_TAIL)], "c", "float") + r"""
        return 1.41421356f * p * v;
    };
"""

_F32_VECTOR = r"""
    typedef float normal_fv __attribute__((ext_vector_type(""" + str(NORMAL_BLOCK) + r""")));
    typedef int32_t normal_iv __attribute__((ext_vector_type(""" + str(NORMAL_BLOCK) + r""")));
    typedef uint32_t normal_uv __attribute__((ext_vector_type(""" + str(NORMAL_BLOCK) + r""")));
    auto standard_normals = [](normal_uv bits) -> normal_fv {
        // v: odd multiple of 2^-23 in (-1, 1) from the top 24 bits; z = sqrt(2) erfinv(v)
        const normal_fv v = __builtin_convertvector(__builtin_bit_cast(normal_iv, (bits >> 8) | 1u) - 8388608,
                                                    normal_fv) * 1.1920928955078125e-07f;
        const normal_fv a = (1.0f - v) * (1.0f + v);
        // w = -log(a): log(a) = e ln 2 + log(m), m in [sqrt(1/2), sqrt(2)): Cephes' logf polynomial in m - 1
        const normal_uv ab = __builtin_bit_cast(normal_uv, a);
        const normal_iv high = (ab & 0x007fffffu) > 0x003504f3u;
        const normal_fv ex = __builtin_convertvector(__builtin_bit_cast(normal_iv, ab >> 23) - (high ? 126 : 127),
                                                     normal_fv);
        const normal_fv x = __builtin_bit_cast(normal_fv, (ab & 0x007fffffu) | (high ? 0x3f000000u : 0x3f800000u)) - 1.0f;
        const normal_fv x2 = x * x;
        normal_fv r = 7.0376836292e-2f;
        r = -1.1514610310e-1f + r * x;
        r = 1.1676998740e-1f + r * x;
        r = -1.2420140846e-1f + r * x;
        r = 1.4249322787e-1f + r * x;
        r = -1.6668057665e-1f + r * x;
        r = 2.0000714765e-1f + r * x;
        r = -2.4999993993e-1f + r * x;
        r = 3.3333331174e-1f + r * x;
        const normal_fv w = -(x + (x * x2 * r - 2.12194440e-4f * ex - 0.5f * x2) + 0.693359375f * ex);
        // Giles' central polynomial for every lane; the tail's (w >= 5, |z| > 2.8, 0.34 % of the draws) only for
        // a block that has such a lane, then selected for those lanes: per draw the operations of its branch
        const normal_iv central = w < 5.0f;
        const normal_fv c = w - 2.5f;
        """ + _horner("p", _GILES_CENTRAL, "c", "normal_fv") + r"""
        if (__builtin_reduce_and(central) == 0) {
            const normal_fv t = __builtin_elementwise_sqrt(w) - 3.0f;
            """ + _horner("q", _GILES_TAIL, "t", "normal_fv").replace("\n        ", "\n            ") + r"""
            p = central ? p : q;
        }
        return 1.41421356f * p * v;
    };
    auto for_each_normal = [&](const uint32_t* lanes, auto&& bits_of, int start, int stop, auto&& use) {
        constexpr int n_block = """ + str(NORMAL_BLOCK) + r""";
        auto block = [&](int j, int n, const normal_uv& lane) {
            const normal_fv drawn = standard_normals(bits_of(lane));
            float z[n_block];
            __builtin_memcpy(z, &drawn, sizeof(z));
            for (int i = 0; i < n; ++i) use(j + i, z[i]);
        };
        int j = start;
        for (; j + n_block <= stop; j += n_block) {
            normal_uv lane;
            __builtin_memcpy(&lane, lanes + j, sizeof(lane));
            block(j, n_block, lane);
        }
        if (j < stop) {  // a last, partial block: its lanes past stop repeat the last one (draws unused; no tail
                         // polynomial for the block unless a used draw needs it)
            normal_uv lane = lanes[stop - 1];
            for (int i = 0; i < stop - j; ++i) lane[i] = lanes[j + i];
            block(j, stop - j, lane);
        }
    };
"""

NORMAL_DRAWS_CPP = {
    torch.float32: "\n#if defined(__CUDA_ARCH__)\n" + _F32_SCALAR + _FOR_EACH_SCALAR + "#else\n" + _F32_VECTOR
                   + "#endif\n",
    torch.float64: r"""
    auto standard_normal = [](uint32_t bits) -> double {
        // v: odd multiple of 2^-31 in (-1, 1) from all 32 bits; z = sqrt(2) erfinv(v)
        const double v = static_cast<double>(static_cast<int64_t>(bits | 1u) - 2147483648LL) * 4.656612873077392578125e-10;
        return 1.4142135623730951 * wp::erfinv(v);
    };
""" + _FOR_EACH_SCALAR,
}
"""C++ source (after :data:`INTERLEAVED_LOOP_CPP`) defining ``for_each_normal(lanes, bits_of, start, stop, use)``:
``use(j, z_j)`` for j in [start, stop) in order, z_j = N(0, 1) of the 32 bits ``bits_of(lanes[j])`` in the working
precision (float32 uses the top 24 bits, float64 all 32) by the inverse CDF. float32: Giles' (2010) single-precision
erfinv polynomials, with ``logf`` on CUDA and on the CPU Cephes' logarithm polynomial (no division), NORMAL_BLOCK
draws at a time (``bits_of`` then gets a clang vector of lanes; each draw's arithmetic is that of a lone draw, so the
values do not depend on the blocking); float64: warp's double erfinv, one draw at a time."""

WP_FLOAT = {torch.float32: wp.float32, torch.float64: wp.float64}
CPU_CHUNK = 4096
"""Elements one CPU kernel thread handles in the native element-wise loops (one per thread on CUDA)."""


def _normal_loop(dtype: torch.dtype) -> str:
    scalar = "float" if dtype == torch.float32 else "double"
    return INTERLEAVED_LOOP_CPP + NORMAL_DRAWS_CPP[dtype] + f"""
    {scalar}* z = reinterpret_cast<{scalar}*>(call.out.data);
    for_each_normal(reinterpret_cast<const uint32_t*>(call.bits.data), [](auto bits) {{ return bits; }}, start, stop,
                    [&](int i, {scalar} value) {{ z[i] = value; }});
"""


def _normal_struct(dtype: torch.dtype):
    fields = {"bits": wp.array(dtype=wp.uint32), "out": wp.array(dtype=WP_FLOAT[dtype])}
    name = f"NormalCall_{WP_FLOAT[dtype].__name__}"
    return warp_struct(name, fields, __name__)


_NORMAL_STRUCTS = {dt: _normal_struct(dt) for dt in NORMAL_DRAWS_CPP}


def _normal_kernel(dtype: torch.dtype):
    """Kernel ``(call, chunk)``: thread t fills ``call.out[t·chunk : (t+1)·chunk]`` from ``call.bits``."""
    call_type = _NORMAL_STRUCTS[dtype]
    name = f"standard_normals_{WP_FLOAT[dtype].__name__}"

    def block(call, start, stop): ...

    block.__name__, block.__annotations__ = f"{name}_block", {"call": call_type, "start": int, "stop": int}
    native = wp.func_native(_normal_loop(dtype))(block)

    def kernel(call, chunk):
        t = wp.tid()
        native(call, t * chunk, wp.min(t * chunk + chunk, call.out.shape[0]))

    kernel.__name__, kernel.__annotations__ = name, {"call": call_type, "chunk": int}
    return unique_kernel(kernel)


_NORMAL_KERNELS = {dt: _normal_kernel(dt) for dt in NORMAL_DRAWS_CPP}


def bits_to_normal(bits: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Standard normal by inverse CDF of v = odd multiple of 2**-(b-1) in the open interval (−1, 1) (b = 32 bits in
    float64, 24 in float32), so the result is always finite: the transform of :data:`NORMAL_DRAWS_CPP`.
    bits: int64 in [0, 2**32), any shape → same shape in ``dtype`` (float32 or float64)."""
    flat = lanes_uint32(bits.reshape(-1))
    out = torch.empty(flat.shape, dtype=dtype, device=bits.device)
    chunk = CPU_CHUNK if bits.device.type == "cpu" else 1
    StructLaunch(_NORMAL_KERNELS[dtype], (-(-flat.numel() // chunk),), _NORMAL_STRUCTS[dtype],
                 {"bits": flat, "out": out}, [chunk], bits.device)()
    return out.view(bits.shape)


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
