"""Every Warp kernel of the library compiles for CUDA, ahead of time through NVRTC, on a machine without a GPU: for
sm_75 (Turing, the oldest architecture Warp's CUDA 12/13 builds target) and sm_90 (Hopper), with the block dimension
of CUDA launches. A kernel that only compiles for the CPU fails here. The kernels are all of them
(:func:`test_warp_kernels.library_kernels`), so those that the demo, the test configurations and the benchmarks
launch are among them."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
import warp as wp

from tactile_sim.geometry.warp_kernels import init_warp
from test_warp_kernels import library_kernels


def nvrtc_archs() -> tuple[int, ...]:
    """The architectures this Warp build can compile for without a driver (empty for a CPU-only build)."""
    init_warp()
    runtime = wp._src.context.runtime
    return tuple(runtime.nvrtc_supported_archs or ()) if runtime.is_cuda_enabled else ()


@pytest.mark.parametrize("arch", [75, 90])
def test_every_kernel_compiles_for_cuda(arch, tmp_path, monkeypatch):
    if arch not in nvrtc_archs():
        pytest.skip(f"this warp-lang build cannot compile for sm_{arch} (no NVRTC for it)")

    def compile_for_cuda(kernel: wp.Kernel) -> str | None:
        try:
            paths = wp.compile_aot_module(kernel.module, arch=arch, module_dir=tmp_path / kernel.module.name)
        except Exception as exc:  # noqa: BLE001 - any failure is the finding
            return f"{kernel.module.name}: {type(exc).__name__}: {exc}"
        if not paths or not all(p.is_file() and f"sm{arch}" in p.name for p in paths):
            return f"{kernel.module.name}: no sm_{arch} binary in {paths}"
        return None

    kernels = library_kernels()
    for kernel in kernels:  # the block dimension of CUDA launches (where torch has none, modules are the CPU's)
        monkeypatch.setitem(kernel.module.options, "block_dim", wp.Module("default", None).options["block_dim"])
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        failures = [f for f in pool.map(compile_for_cuda, kernels) if f]
    assert not failures, "\n".join(failures)
    assert len(kernels) >= 50
