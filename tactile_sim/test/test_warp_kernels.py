"""Every Warp kernel of the library is a module of its own, named after the sensor (or layer) and the working dtype
it serves, so that a configuration compiles only the variants it launches and a log line names the right kernel."""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import Any

import torch
import warp as wp

import tactile_sim
from tactile_sim.geometry.warp_kernels import typed_kernel
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
