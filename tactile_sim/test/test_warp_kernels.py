"""Every Warp kernel of the library is a module of its own, named after the sensor (or layer) and the working dtype
it serves, so that a configuration compiles only the variants it launches and a log line names the right kernel."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import warp as wp

import tactile_sim
from tactile_sim.config import load_config
from tactile_sim.demo_trajectory import DEMO_CONFIG
from tactile_sim.geometry import warp_kernels
from tactile_sim.geometry.warp_kernels import CPU_BLOCK_DIM, cpu_only, typed_kernel
from tactile_sim.offline.demo import run_demo
from tactile_sim.suite import suite_kernels
from helpers_scenes import grid_layout, make_suite, step

NAME = re.compile(r"^[a-z][a-z0-9_]*_(float32|float64)_[0-9a-f]{8}$")
"""``<what>_<dtype>_<hash>``: the name Warp gives a unique module of a kernel named ``<what>_<dtype>``."""
FLOAT64_ONLY = ("elastomer_dilation_pair_tables_float64", "elastomer_dilation_lattice_tables_float64",
                "mesh_sdf_grid_float64")
"""Kernels that run in float64 whatever the working dtype (tables precomputed at build)."""
NO_IMPORT = ("tactile_sim.__main__", "tactile_sim.ros.node", "tactile_sim.ros.demo_trajectory_node")
"""Modules that run the command line or need rclpy."""


def _kernels_in(value: Any):
    if isinstance(value, wp.Kernel):
        yield value
    elif isinstance(value, (dict, tuple)):
        for v in value.values() if isinstance(value, dict) else value:
            yield from _kernels_in(v)


def library_kernels() -> list[wp.Kernel]:
    """Every kernel that a module of the package holds (alone, or in dicts and tuples), all modules imported."""
    found = {}
    for info in pkgutil.walk_packages(tactile_sim.__path__, "tactile_sim."):
        if info.name not in NO_IMPORT:
            for value in vars(importlib.import_module(info.name)).values():
                found.update((id(k), k) for k in _kernels_in(value))
    return list(found.values())


def loaded_modules() -> set[str]:
    """Names of the library's kernel modules loaded (compiled or read from the cache) on some device."""
    return {k.module.name for k in library_kernels() if k.module.execs}


def test_every_kernel_is_a_module_named_after_what_and_dtype():
    kernels = library_kernels()
    assert len(kernels) >= 30
    for k in kernels:
        assert NAME.match(k.module.name), f"{k.key}: module {k.module.name!r}"
        assert k.module.name.startswith(k.key + "_")
        assert list(k.module.kernels) == [k.key]  # one kernel per module


def _scaled(x: Any, a: Any, out: Any):
    i = wp.tid()
    out[i] = a * x[i]


def test_typed_kernel_compiles_only_its_dtype():
    kernels = {dt: typed_kernel(_scaled, "test_scaled", dt, {"x": wp.array(dtype=f), "a": f,
                                                             "out": wp.array(dtype=f)})
               for dt, f in ((torch.float32, wp.float32), (torch.float64, wp.float64))}
    assert kernels[torch.float32].module.name.startswith("test_scaled_float32_")
    x = wp.array([1.0, 2.0], dtype=wp.float32, device="cpu")
    out = wp.zeros(2, dtype=wp.float32, device="cpu")
    wp.launch(kernels[torch.float32], dim=2, inputs=[x, 3.0, out], device="cpu")
    assert out.numpy().tolist() == [3.0, 6.0]
    assert kernels[torch.float32].module.execs and not kernels[torch.float64].module.execs


def test_float32_suite_loads_no_float64_kernel():
    before = loaded_modules()
    suite = make_suite([{"type": "KinematicTaxel", "name": "skin", "link": "pad", "probe_local_pos": grid_layout(4),
                         "noise": 0.01}],
                       [{"name": "ball", "geometry": [{"sphere": {"radius": 0.02}}]}], dtype="float32")
    step(suite, 0.0, ball=[0.0, 0.0, 0.018])
    new = loaded_modules() - before
    assert not [n for n in new if "_float64_" in n and not n.startswith(FLOAT64_ONLY)], new


CONDITIONAL = {"elastomer_pairwise_float32", "elastomer_dilation_pair_tables_float64"}
"""Kernels of the demo that only some options launch (ElastomerTaxel's small-batch paths): compiled on first use."""


def test_demo_compiles_ahead_exactly_the_kernels_it_always_launches(tmp_path, monkeypatch):
    launched = set()
    launch = wp.launch

    def recording_launch(kernel, *args, **kwargs):
        launched.add(kernel.key)
        return launch(kernel, *args, **kwargs)

    monkeypatch.setattr(wp, "launch", recording_launch)
    run_demo(tmp_path, duration=0.03, pictures=False, progress=False)
    declared = {k.key for k in suite_kernels(load_config(DEMO_CONFIG), torch.float32)}
    assert declared <= launched  # nothing compiled ahead that the demo does not launch
    assert launched - declared == CONDITIONAL


def _python(script: str, cache: Path, *args: str) -> subprocess.CompletedProcess:
    """Run ``script`` in a fresh interpreter whose Warp kernel cache is ``cache``."""
    env = {**os.environ, "WARP_CACHE_PATH": str(cache)}
    env.pop("WARP_LOG_LEVEL", None)
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True, env=env, timeout=300)


def test_warp_starts_quietly_unless_verbose(tmp_path):
    script = tmp_path / "start.py"
    script.write_text("import sys\nfrom tactile_sim.geometry.warp_kernels import init_warp, set_verbose\n"
                      "set_verbose(sys.argv[1] == 'verbose')\ninit_warp()\nprint('started')\n")
    quiet = _python(str(script), tmp_path / "cache", "quiet")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "started\n", "")
    verbose = _python(str(script), tmp_path / "cache", "verbose")
    assert verbose.returncode == 0 and "Warp " in verbose.stdout + verbose.stderr


PREPARE = '''
import sys
import torch
import warp as wp
from tactile_sim.geometry.warp_kernels import prepare_kernels, typed_kernel


def scaled(x: wp.array(dtype=float), out: wp.array(dtype=float), a: float):
    out[wp.tid()] = a * x[wp.tid()]


kernels = [typed_kernel(scaled, f"test_prepare_{i}", torch.float32, {}) for i in range(3)]
kernels[1] = typed_kernel(scaled, "test_prepare_1", torch.float32, {})  # the same module again: compiled once
notices = []
print(prepare_kernels(kernels, "cpu", notices.append), notices)
print(prepare_kernels(kernels, "cpu", notices.append), len(notices))
'''


def test_prepare_kernels_compiles_what_the_cache_lacks_once(tmp_path):
    script = tmp_path / "prepare.py"
    script.write_text(PREPARE)
    first = _python(str(script), tmp_path / "cache")
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == ["3 ['compiling 3 sensor kernels for cpu (first run only)…']", "0 1"]
    again = _python(str(script), tmp_path / "cache")  # a new process: everything is in the cache
    assert again.stdout.splitlines() == ["0 []", "0 0"]


HASHES = '''
import warp._src.context as context
made = []
make = context.ModuleHasher.__init__
context.ModuleHasher.__init__ = lambda hasher, *args, **kwargs: made.append(1) or make(hasher, *args, **kwargs)
import torch
from tactile_sim.config import load_config
from tactile_sim.demo_trajectory import DEMO_CONFIG
from tactile_sim.geometry.warp_kernels import prepare_kernels
from tactile_sim.suite import suite_kernels
kernels = suite_kernels(load_config(DEMO_CONFIG), torch.float32)
before = len(made)
prepare_kernels(kernels, "cpu")
print(len(kernels), len(made) - before, sorted({k.module.options["block_dim"] for k in kernels}))
'''


def test_loading_the_kernels_on_the_cpu_hashes_no_module_again(tmp_path):
    """Where torch has no CUDA device, a kernel's module is of the CPU's block dimension and hashed after Warp started,
    so that loading it (compiled, or from the cache) reuses the hash made with the kernel."""
    if not cpu_only():
        pytest.skip("torch has a CUDA device here: the modules are of Warp's default block dimension")
    script = tmp_path / "hashes.py"
    script.write_text(HASHES)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    count, hashed, block_dims = done.stdout.split(maxsplit=2)
    assert int(count) > 10 and int(hashed) == 0 and block_dims.strip() == f"[{CPU_BLOCK_DIM}]"


def test_kernels_keep_warps_block_dimension_where_torch_has_cuda(monkeypatch):
    types = {"x": wp.array(dtype=wp.float32), "a": wp.float32, "out": wp.array(dtype=wp.float32)}
    monkeypatch.setattr(warp_kernels, "cpu_only", lambda: False)
    kernel = typed_kernel(_scaled, "test_cuda_block_dim", torch.float32, types)
    assert kernel.module.options["block_dim"] == wp.Module("default", None).options["block_dim"] != CPU_BLOCK_DIM
    monkeypatch.setattr(warp_kernels, "cpu_only", lambda: True)
    assert typed_kernel(_scaled, "test_cpu_block_dim", torch.float32, types).module.options["block_dim"] == \
        CPU_BLOCK_DIM
