"""A warp kernel launch recorded once and replayed every step, with its per-call tensors rebound by data pointer.

The kernel's first parameter is a warp struct whose array fields alias torch tensors (the per-call inputs and the
outputs); the other parameters are fixed at recording (tables, scalars). Few parameters keep warp's CPU launch cheap
(it packs every parameter on every launch), and rebinding a field to another tensor of the same shape, dtype and
strides is one pointer write, so a replay costs a few µs whatever the tensors. On CUDA the launch runs on the
current torch stream. The bound tensors stay referenced until they are replaced, so an asynchronous launch can still
read them.

A tensor is checked once, not once per launch: the tensors that passed the checks are remembered (a shared table
by id: a weak reference to the tensor, its layout and its torch version counter at the check), and another
launch that expects that layout binds such a tensor without checking again (e.g. the state tensors of one step, bound
by every sensor). Every in-place change of a tensor's metadata (``resize_``, ``set_``, ``as_strided_``, ...) bumps its
version counter, so an entry cannot vouch for a layout the tensor no longer has; a dead reference never matches, so
an id reused by a new tensor is checked anew. :func:`unbind_checked` makes views that are remembered from the start
(a producer of fresh tensors every step, such as the world model, hands them out already checked).

On the CPU a replay calls the kernel's compiled entry point directly with one argument block packed at recording
(warp's own replay packs a fresh block from every parameter on every call); the struct's array fields are views into
that block, so a rebind is still one pointer write.
"""

from __future__ import annotations

import ctypes
import functools
import weakref
from typing import Any, Mapping, Sequence

import torch
import warp as wp

from .warp_kernels import init_warp

DIRECT_CPU_WARP_VERSIONS = ("1.19.",)
"""warp releases whose recorded-launch internals (``cmd.params``, ``cmd.hooks.forward``) the direct CPU replay was
checked against; any other release replays through warp's own ``cmd.launch`` (same results, ~2 µs more per launch)."""


_CHECKED: dict[int, tuple[weakref.ref, tuple, int]] = {}
"""Checked tensors by id: (weak reference to the tensor, its layout, its version counter at the check). When it
reaches ``_CHECKED_MAX`` entries the dead ones are dropped (all of them when most are alive)."""

_CHECKED_MAX = 1024

_LAYOUTS: dict[tuple, tuple] = {}
"""Interned layouts (shape, dtype, device, device index): equal layouts are one object, compared by identity."""


def _interned_layout(t: torch.Tensor) -> tuple:
    key = (t.shape, t.dtype, t.device, t.get_device())
    return _LAYOUTS.setdefault(key, key)


def _make_room(n: int) -> None:
    """Make room for ``n`` more entries in ``_CHECKED``: drop the dead entries, or all of them when most live."""
    if len(_CHECKED) + n > _CHECKED_MAX:
        alive = {k: e for k, e in _CHECKED.items() if e[0]() is not None}
        _CHECKED.clear()
        if len(alive) + n <= _CHECKED_MAX // 2:
            _CHECKED.update(alive)


def _known(t: torch.Tensor, layout: tuple) -> bool:
    """Whether ``_CHECKED`` vouches that ``t`` has ``layout`` and is contiguous."""
    entry = _CHECKED.get(id(t))
    return entry is not None and entry[1] is layout and entry[2] == t._version and entry[0]() is t


def _check(t: torch.Tensor, layout: tuple) -> bool:
    """Whether ``t`` has ``layout`` and is contiguous (checked now; remembered in ``_CHECKED`` when it is)."""
    shape, dtype, _, index = layout
    if t.shape != shape or t.dtype is not dtype or t.get_device() != index or not t.is_contiguous():
        return False
    if len(_CHECKED) >= _CHECKED_MAX:
        _make_room(1)
    _CHECKED[id(t)] = (weakref.ref(t), layout, t._version)
    return True


def unbind_checked(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """``t.unbind(0)``: the slices t[0], t[1], … (one layout, ``t.shape[1:]``), remembered as checked when they are
    contiguous (and at most half a table), so that every launch expecting that layout binds them without a check."""
    views = t.unbind(0)
    if 0 < len(views) <= _CHECKED_MAX // 2 and views[0].is_contiguous():  # all slices have the first's layout
        layout, version = _interned_layout(views[0]), t._version  # views share t's version counter
        _make_room(len(views))
        _CHECKED.update((id(v), (weakref.ref(v), layout, version)) for v in views)
    return views


def warp_struct(name: str, fields: dict, module: str):
    """A warp struct type ``name`` with the fields ``fields`` (name → warp type; a dict, so that they can depend on
    the float type), defined in ``module`` (the caller's ``__name__``; warp keys a struct by module and name)."""
    return wp.struct(type(name, (), {"__annotations__": fields, "__module__": module, "__qualname__": name}))


def warp_device(device: torch.device) -> torch.device:
    """``device`` with an explicit CUDA index (warp needs one)."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


class StructLaunch:
    """One recorded launch of ``kernel(call, *args)`` over ``dim``.

    call_type: the warp struct type of the first parameter; fields: struct field name → torch tensor (contiguous, on
    ``device``; a ``[..., 3]`` / ``[..., 3, 3]`` tensor is bound as vectors / matrices when the field says so);
    args: the remaining parameters (warp structs, arrays or scalars), fixed. A launch over an empty ``dim`` does
    nothing.
    """

    def __init__(self, kernel, dim: Sequence[int], call_type, fields: Mapping[str, torch.Tensor],
                 args: Sequence[Any], device: torch.device):
        init_warp()
        self.device = warp_device(device)
        self._cuda = self.device.type == "cuda"
        self.tensors = dict(fields)
        self.pointers = {name: t.data_ptr() for name, t in self.tensors.items()}
        self.empty = any(int(d) == 0 for d in dim)
        self._stream_cache: dict[int, Any] = {}
        self._fields = {name: (_interned_layout(t), None) for name, t in self.tensors.items()}  # (layout, array)
        if self.empty:
            return
        call = call_type()
        for name, t in self.tensors.items():
            _check_contiguous(kernel, name, t)
            setattr(call, name, wp.from_torch(t, dtype=call_type.vars[name].type.dtype))
        self.cmd = wp.launch(kernel, dim=tuple(int(d) for d in dim), inputs=[call, *args],
                             device=wp.device_from_torch(self.device), record_cmd=True)
        self._ctype = call.__ctype__()
        self.cmd.set_param_at_index_from_ctype(0, self._ctype)
        self._kernel_key = kernel.key
        self._launch = self.cmd.launch
        self._direct = None
        if (not self._cuda and self.cmd.block_dim <= 1 and not self.cmd.adjoint
                and wp.config.version.startswith(DIRECT_CPU_WARP_VERSIONS)):
            self._direct = _DirectCpuLaunch(self.cmd)
            self._launch = self._direct.launch
            self._ctype = self._direct.call
            self.set_arg = self._direct.set_arg  # the same replacement, one call less
        # each field's array descriptor is a view into the struct memory: its data pointer is the binding
        self._fields = {name: (layout, getattr(self._ctype, name)) for name, (layout, _) in self._fields.items()}

    def is_bound(self, name: str, t: torch.Tensor) -> bool:
        """True when field ``name`` already points at ``t``'s memory (``tensors`` / ``pointers``: the bound tensors
        and their data pointers by field name)."""
        return self.empty or (t is self.tensors[name] and t.data_ptr() == self.pointers[name])

    def fits(self, name: str, t: torch.Tensor) -> bool:
        """Whether :meth:`bind` would accept ``t`` for field ``name`` (same shape, dtype and device as the recorded
        tensor; contiguous)."""
        layout = self._fields[name][0]
        return self.is_bound(name, t) or _known(t, layout) or _check(t, layout)

    def bind(self, name: str, t: torch.Tensor) -> None:
        """Point field ``name`` at ``t`` (same shape, dtype and device as the recorded tensor; contiguous). A tensor
        already checked against this layout and unchanged in place since (same version counter) is not checked again
        (e.g. the slots of a ring, bound in turn, or the state tensors of a step, bound by several launches)."""
        ptr = t.data_ptr()
        if t is self.tensors[name] and ptr == self.pointers[name] or self.empty:
            return
        layout, array = self._fields[name]
        entry = _CHECKED.get(id(t))  # _known(t, layout) inlined: most binds end here
        if entry is None or entry[1] is not layout or entry[2] != t._version or entry[0]() is not t:
            if not _check(t, layout):
                shape, dtype, device, index = layout
                if t.shape == shape and t.dtype is dtype and t.get_device() == index:
                    _check_contiguous(self._kernel_key, name, t)
                raise ValueError(f"{self._kernel_key}: {name} must be a {dtype} tensor of shape {list(shape)} on "
                                 f"{device}; got {t.dtype} {list(t.shape)} on {t.device}")
        self.tensors[name] = t
        self.pointers[name] = array.data = ptr

    def set_arg(self, index: int, value) -> None:
        """Replace the scalar parameter ``index`` (0 is the struct; 1… are ``args``)."""
        if not self.empty:
            self.cmd.set_param_at_index_from_ctype(index, value)

    def __call__(self) -> None:
        if self.empty:
            return
        if not self._cuda:
            self._launch()
            return
        ts = torch.cuda.current_stream(self.device)
        stream = self._stream_cache.get(ts.cuda_stream)
        if stream is None:
            stream = self._stream_cache[ts.cuda_stream] = wp.stream_from_torch(ts)
        self.cmd.launch(stream)


class _DirectCpuLaunch:
    """A recorded CPU launch replayed by calling the kernel's forward entry point with one argument block packed at
    recording (the same block warp's replay packs from ``cmd.params`` on every call). ``call``: the block's first
    parameter (the per-call struct), whose fields are views into the block; ``launch()``: one replay."""

    def __init__(self, cmd):
        params = cmd.params
        fields = [(arg.label, type(params[1 + i])) for i, arg in enumerate(cmd.kernel.adj.args)]
        self._labels = [label for label, _ in fields]
        self._args = type("ArgsStruct", (ctypes.Structure,), {"_fields_": fields})()
        for i, label in enumerate(self._labels):
            setattr(self._args, label, params[1 + i])
        self.call = getattr(self._args, self._labels[0])
        self.launch = functools.partial(cmd.hooks.forward, ctypes.byref(params[0]), ctypes.byref(self._args))

    def set_arg(self, index: int, value) -> None:
        """Replace parameter ``index`` (0 is the struct) in the argument block (converted as warp's replay does)."""
        setattr(self._args, self._labels[index], value)


def _check_contiguous(kernel, name: str, t: torch.Tensor) -> None:
    if not t.is_contiguous():
        key = getattr(kernel, "key", kernel)
        raise ValueError(f"{key}: {name} must be contiguous; got shape {list(t.shape)} with strides {t.stride()}")
