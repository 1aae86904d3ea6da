"""How the library makes its Warp kernels: one module per kernel and working dtype, named after what it serves.

Warp compiles a module as a whole: every kernel in it and every overload of a generic kernel. A Python module that
defines the float32 and float64 variants of a kernel, or two kernels of which a configuration launches one,
therefore compiles code that is never run. Every kernel of the library is instead a module of its own
(``module="unique"``) named ``<what>_<dtype>`` (``kinematic_taxel_float32``, ``world_update_float64``), which Warp
completes with a content hash (``kinematic_taxel_float32_1a2b3c4d``): a configuration compiles only the variants
it launches, and a log line, a profile or a kernel cache folder names the sensor and dtype it belongs to.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Any

import torch
import warp as wp

DTYPE_NAMES = {torch.float32: "float32", torch.float64: "float64"}
"""Working dtype → the suffix of its kernels' names."""


def unique_kernel(fn: Callable, name: str | None = None) -> wp.Kernel:
    """``fn`` (fully annotated) as a kernel without a backward pass in a module of its own named ``name``
    (default ``fn.__name__``, which the factories set to ``<what>_<dtype>``)."""
    return wp.kernel(fn, name=name or fn.__name__, enable_backward=False, module="unique")


def typed_kernel(fn: Callable, what: str, dtype: torch.dtype, annotations: Mapping[str, Any]) -> wp.Kernel:
    """The kernel of a generic function ``fn`` (parameters annotated ``Any``) for one working dtype: a copy of
    ``fn`` whose parameters in ``annotations`` get those types, named ``<what>_<dtype>`` (:func:`unique_kernel`)."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__qualname__, copy.__module__, copy.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    copy.__annotations__ = {**fn.__annotations__, **annotations}
    return unique_kernel(copy, f"{what}_{DTYPE_NAMES[dtype]}")
