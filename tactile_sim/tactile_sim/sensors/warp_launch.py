"""Warp kernels on persistent torch buffers: record a launch once, replay it every step.

The point-cloud sensors allocate their per-step tensors once at build (sizes are fixed: envs, probes, samples), so
a kernel launch can be recorded with those buffers bound and replayed for a few µs. Arguments are torch tensors
(bound by data pointer — the caller must keep writing into the same tensors) or Python scalars. A tensor whose
trailing dims are (3,) or (3, 3) and that the kernel reads as vectors / matrices is wrapped with :func:`vec3` /
:func:`mat33`. On CUDA the launch runs on the current torch stream.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
import warp as wp

_VEC3 = {torch.float32: wp.vec3f, torch.float64: wp.vec3d}
_MAT33 = {torch.float32: wp.mat33f, torch.float64: wp.mat33d}


class _Typed:
    """A tensor to be bound with an explicit warp element type."""

    def __init__(self, tensor: torch.Tensor, table: dict):
        self.tensor = tensor
        self.dtype = table[tensor.dtype]


def vec3(t: torch.Tensor) -> _Typed:
    """Bind ``t`` ``[..., 3]`` as an array of 3-vectors (working float type)."""
    return _Typed(t, _VEC3)


def mat33(t: torch.Tensor) -> _Typed:
    """Bind ``t`` ``[..., 3, 3]`` as an array of 3×3 matrices (working float type)."""
    return _Typed(t, _MAT33)


def warp_array(arg: torch.Tensor | _Typed) -> wp.array:
    """A warp array aliasing a contiguous torch tensor (no copy)."""
    if isinstance(arg, _Typed):
        return wp.from_torch(arg.tensor, dtype=arg.dtype)
    return wp.from_torch(arg)


def warp_stream(device: torch.device):
    """The warp stream of the current torch stream on ``device`` (None on CPU)."""
    if device.type != "cuda":
        return None
    return wp.stream_from_torch(torch.cuda.current_stream(device))


class RecordedLaunch:
    """One kernel launch over ``dim`` with fixed arguments, replayed by calling the object.

    args: torch tensors (contiguous, on ``device``; see :func:`vec3` / :func:`mat33`) and Python scalars, in the
    kernel's argument order. The tensors stay referenced so that their memory outlives the recording.
    """

    def __init__(self, kernel, dim: Sequence[int] | int, args: Sequence[Any], device: torch.device):
        device = torch.device(device)
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        self.device = device
        self.args = list(args)
        for a in self.args:
            t = a.tensor if isinstance(a, _Typed) else a
            if isinstance(t, torch.Tensor) and not t.is_contiguous():
                raise ValueError(f"RecordedLaunch({kernel.key}): tensor arguments must be contiguous; got a tensor "
                                 f"of shape {list(t.shape)} with strides {t.stride()}")
        inputs = [warp_array(a) if isinstance(a, (torch.Tensor, _Typed)) else a for a in self.args]
        self.empty = (dim == 0) if isinstance(dim, int) else any(d == 0 for d in dim)
        self.cmd = None if self.empty else wp.launch(kernel, dim=dim, inputs=inputs, record_cmd=True,
                                                     device=wp.device_from_torch(self.device))

    def __call__(self) -> None:
        if not self.empty:
            self.cmd.launch(warp_stream(self.device))
