"""Batched 1-D FFTs on the CPU between fixed buffers, by the MKL DFTI descriptors that torch.fft commits per call.

On the CPU torch.fft runs MKL's DFTI: every call creates and commits a descriptor (out of place, a batch of
transforms along the last, unit-stride axis, input and output distances of the contiguous layouts, the complex
conjugate-even storage for real transforms, 1/n on the inverse), allocates its output and pads its input (a copy). A
:class:`BatchedFFT` commits the same descriptor once for a pair of buffers kept by its caller and then only computes:
the same library, transform and configuration, so the same values, bit for bit (``test_sensor_elastomer_fft``).
:func:`available` says whether this torch exposes MKL's DFTI entry points (an MKL build); callers use torch.fft
otherwise.
"""

from __future__ import annotations

import ctypes
import functools
import os
import weakref

import torch

# mkl_dfti.h: configuration parameters and values
_FORWARD_DOMAIN_REAL, _FORWARD_DOMAIN_COMPLEX = 33, 32
_BACKWARD_SCALE, _NUMBER_OF_TRANSFORMS, _CONJUGATE_EVEN_STORAGE, _PLACEMENT = 5, 7, 10, 11
_INPUT_STRIDES, _OUTPUT_STRIDES, _INPUT_DISTANCE, _OUTPUT_DISTANCE = 12, 13, 14, 15
_COMPLEX_COMPLEX, _NOT_INPLACE = 39, 44

KINDS = ("rfft", "fft", "ifft", "irfft")
"""Transforms as torch.fft names them (default norm): real → half spectrum, forward and inverse (1/n) complex,
half spectrum → real."""


@functools.cache
def _library() -> ctypes.CDLL | None:
    """torch's CPU library when it exports MKL's DFTI entry points, else None."""
    if not torch.backends.mkl.is_available():
        return None
    try:
        library = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
        for name in ("DftiCreateDescriptor_s_1d", "DftiCreateDescriptor_d_1d", "DftiSetValue",
                     "DftiCommitDescriptor", "DftiComputeForward", "DftiComputeBackward", "DftiFreeDescriptor"):
            getattr(library, name)
    except (OSError, AttributeError):
        return None
    library.DftiSetValue.restype = ctypes.c_long
    return library


def available() -> bool:
    """Whether :class:`BatchedFFT` can run (torch built with MKL, its DFTI entry points exported)."""
    return _library() is not None


def _free(library: ctypes.CDLL, handle: ctypes.c_void_p) -> None:
    library.DftiFreeDescriptor(ctypes.byref(handle))


class BatchedFFT:
    """``kind`` (:data:`KINDS`) of length ``n`` along the last axis of every row of ``source`` into ``destination``
    (CPU tensors, contiguous, float32/64 or their complex types, as torch.fft's input and output of that transform
    with ``n``: last axes n | n // 2 + 1, equal leading axes). The buffers stay bound: a call transforms their
    current values (``irfft`` may overwrite its source, as MKL's complex-to-real transforms do)."""

    def __init__(self, kind: str, n: int, source: torch.Tensor, destination: torch.Tensor):
        library = _library()
        if library is None or kind not in KINDS:
            raise ValueError(f"no MKL DFTI transform {kind!r} in this torch build")
        if not (source.is_contiguous() and destination.is_contiguous()) or source.shape[:-1] != destination.shape[:-1]:
            raise ValueError("BatchedFFT needs contiguous buffers of equal leading axes")
        self.buffers = (source, destination)
        real = destination if kind == "irfft" else source
        single = real.dtype in (torch.float32, torch.complex64)
        create = library.DftiCreateDescriptor_s_1d if single else library.DftiCreateDescriptor_d_1d
        handle = ctypes.c_void_p()
        domain = _FORWARD_DOMAIN_COMPLEX if kind in ("fft", "ifft") else _FORWARD_DOMAIN_REAL
        _check(create(ctypes.byref(handle), ctypes.c_long(domain), ctypes.c_long(n)), "create")
        weakref.finalize(self, _free, library, handle)

        def value(parameter: int, *arguments) -> None:
            _check(library.DftiSetValue(handle, ctypes.c_long(parameter), *arguments), "set value")

        value(_PLACEMENT, ctypes.c_long(_NOT_INPLACE))
        value(_NUMBER_OF_TRANSFORMS, ctypes.c_long(source.numel() // max(source.shape[-1], 1)))
        value(_INPUT_DISTANCE, ctypes.c_long(source.shape[-1]))
        value(_OUTPUT_DISTANCE, ctypes.c_long(destination.shape[-1]))
        unit = (ctypes.c_long * 2)(0, 1)
        value(_INPUT_STRIDES, unit)
        value(_OUTPUT_STRIDES, unit)
        if kind in ("rfft", "irfft"):
            value(_CONJUGATE_EVEN_STORAGE, ctypes.c_long(_COMPLEX_COMPLEX))
        if kind in ("ifft", "irfft"):
            value(_BACKWARD_SCALE, ctypes.c_double(1.0 / n))
        _check(library.DftiCommitDescriptor(handle), "commit")
        compute = library.DftiComputeForward if kind in ("rfft", "fft") else library.DftiComputeBackward
        self._call = functools.partial(compute, handle, ctypes.c_void_p(source.data_ptr()),
                                       ctypes.c_void_p(destination.data_ptr()))

    def __call__(self) -> None:
        _check(self._call(), "compute")


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"MKL DFTI {what} failed (status {status})")
