"""How the library makes its Warp kernels: one module per kernel and working dtype, named after what it serves.

Warp compiles a module as a whole: every kernel in it and every overload of a generic kernel. A Python module that
defines the float32 and float64 variants of a kernel, or two kernels of which a configuration launches one,
therefore compiles code that is never run. Every kernel of the library is instead a module of its own
(``module="unique"``) named ``<what>_<dtype>`` (``kinematic_taxel_float32``, ``world_update_float64``), which Warp
completes with a content hash (``kinematic_taxel_float32_1a2b3c4d``): a configuration compiles only the variants
it launches, and a log line, a profile or a kernel cache folder names the sensor and dtype it belongs to. Where
torch has no CUDA device the modules are of the CPU's block dimension and made once Warp has started
(:func:`unique_kernel`), so that the hash Warp computes for a module when it makes it is the one loading it asks for.

Warp is quiet here: :func:`init_warp` starts it without its banner, its "CUDA driver not found" warning or a line per
loaded module (:func:`set_verbose` brings them back). :func:`prepare_kernels` compiles the kernels a suite is about to
launch before it records them: the modules not yet in Warp's kernel cache are compiled concurrently, one thread per
core, after one line saying so (and a progress bar on a terminal when it lasts longer than a second).
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

import torch
import warp as wp

DTYPE_NAMES = {torch.float32: "float32", torch.float64: "float64"}
"""Working dtype → the suffix of its kernels' names."""


CPU_BLOCK_DIM = 1
"""The block dimension of every kernel launch on the CPU (Warp's, for a launch that names none)."""


@functools.cache
def cpu_only() -> bool:
    """True where torch has no CUDA device: every suite, and so every kernel launch, is then on the CPU."""
    return not torch.cuda.is_available()


def unique_kernel(fn: Callable, name: str | None = None) -> wp.Kernel:
    """``fn`` (fully annotated) as a kernel without a backward pass in a module of its own named ``name``
    (default ``fn.__name__``, which the factories set to ``<what>_<dtype>``).

    Where every launch is on the CPU (:func:`cpu_only`), the module's block dimension is :data:`CPU_BLOCK_DIM` and
    Warp is started first (:func:`init_warp`): the module hash Warp computes as it makes the kernel (that of the
    module's block dimension; Warp's start discards those made before it) is then the one that loading the module on
    the CPU asks for, instead of one computed again per module on a suite's first build (about 3 ms a module). Else
    Warp's defaults (block dimension 256, CUDA launches'; Warp started by the first suite, so that worker processes
    forked before it can still start CUDA)."""
    options = None
    if cpu_only():
        init_warp()
        options = {"block_dim": CPU_BLOCK_DIM}
    return wp.kernel(fn, name=name or fn.__name__, enable_backward=False, module="unique", module_options=options)


def native_grid_kernel(name: str, call_type: Any, stub: Callable, snippet: str) -> wp.Kernel:
    """A kernel ``name`` (:func:`unique_kernel`) over a 2-D launch whose thread (i, j) runs the C++ ``snippet``
    (``wp.func_native``) with ``call`` (a ``call_type`` struct) and i, j in scope: ``stub`` is a typed stub
    ``(call, i, j): ...`` whose last two parameter names are the names the snippet uses for i and j."""
    first, second = list(inspect.signature(stub).parameters)[1:]
    stub.__name__, stub.__annotations__ = f"{name}_native", {"call": call_type, first: int, second: int}
    native = wp.func_native(snippet)(stub)

    def kernel(call: Any):
        i, j = wp.tid()
        native(call, i, j)

    kernel.__name__, kernel.__annotations__ = name, {"call": call_type}
    return unique_kernel(kernel)


def typed_kernel(fn: Callable, what: str, dtype: torch.dtype, annotations: Mapping[str, Any]) -> wp.Kernel:
    """The kernel of a generic function ``fn`` (parameters annotated ``Any``) for one working dtype: a copy of
    ``fn`` whose parameters in ``annotations`` get those types, named ``<what>_<dtype>`` (:func:`unique_kernel`)."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__qualname__, copy.__module__, copy.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    copy.__annotations__ = {**fn.__annotations__, **annotations}
    return unique_kernel(copy, f"{what}_{DTYPE_NAMES[dtype]}")


_VERBOSE = False
_STARTED = False


def set_verbose(verbose: bool) -> None:
    """Show Warp's own output (banner, driver warning, one line per loaded module) from now on, or hide it."""
    global _VERBOSE
    _VERBOSE = bool(verbose)
    wp.config.log_level = wp.LOG_INFO if _VERBOSE else max(wp.config.log_level, wp.LOG_WARNING)


def init_warp() -> None:
    """``wp.init()``, quiet unless :func:`set_verbose`: info messages are off and what Warp's native library writes to
    stderr while it starts (the driver warning of a machine without CUDA) is discarded."""
    global _STARTED
    if _STARTED:
        return
    _STARTED = True
    if _VERBOSE:
        wp.init()
        return
    wp.config.log_level = max(wp.config.log_level, wp.LOG_WARNING)
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            try:
                wp.init()
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def _block_dim(module: Any, device: Any) -> int:
    """The block dimension an ordinary launch loads ``module`` with on ``device`` (:data:`CPU_BLOCK_DIM` on the
    CPU)."""
    return CPU_BLOCK_DIM if device.is_cpu else module.options["block_dim"]


def _in_cache(module: Any, device: Any) -> bool:
    """Whether Warp's kernel cache holds ``module``'s binary for ``device`` (loading it compiles nothing); False
    where this Warp release names its cache files otherwise than 1.19 (the module is then loaded with the others)."""
    block_dim = _block_dim(module, device)
    try:
        name = module._get_compile_output_name(device, block_dim=block_dim)
        folder = module.get_module_identifier(block_dim)
    except (AttributeError, TypeError):
        return False
    return os.path.exists(os.path.join(wp.config.kernel_cache_dir, folder, name))


def prepare_kernels(kernels: Iterable[wp.Kernel], device: torch.device | str,
                    notice: Callable[[str], None] | None = None) -> int:
    """Load the modules of ``kernels`` on ``device``, compiling those not in Warp's kernel cache concurrently (one
    thread per core) after ``notice("compiling N sensor kernels for <device> (first run only)…")`` (default: a line
    on stderr) and with a progress bar on a terminal once it lasts a second. Returns N."""
    from tqdm import tqdm

    init_warp()
    dev = wp.get_device(str(device))
    modules = list({id(k.module): k.module for k in kernels}.values())
    modules = [m for m in modules if (dev.context, _block_dim(m, dev)) not in m.execs]
    todo = [m for m in modules if not _in_cache(m, dev)]
    if todo:
        (notice or _stderr_line)(f"compiling {len(todo)} sensor kernels for {dev.alias} (first run only)…")
        with tqdm(total=len(todo), desc="kernels", unit="", delay=1.0, leave=False, disable=None) as bar, \
                ThreadPoolExecutor(max_workers=min(len(todo), os.cpu_count() or 1)) as pool:
            for done in as_completed(pool.submit(m.load, dev, _block_dim(m, dev)) for m in todo):
                done.result()
                bar.update()
    for m in modules:
        if m not in todo:
            m.load(dev, _block_dim(m, dev))
    return len(todo)


def _stderr_line(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def table_kernels(tables: Iterable[Mapping[torch.dtype, Any]], dtype: torch.dtype) -> list[wp.Kernel]:
    """The ``dtype`` kernels of kernel tables (working dtype → kernel, or a tuple whose first item is the kernel)."""
    entries = (table[dtype] for table in tables)
    return [e[0] if isinstance(e, tuple) else e for e in entries]
