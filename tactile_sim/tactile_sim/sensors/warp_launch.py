"""Recorded launches of a sensor kernel that writes into its measured branch's staging buffers, and the binding of
the world state to a launch.

A sensor batch that writes straight into the staging buffers (:meth:`MeasuredBranch.staging`) gets another
(measured, ground truth) pair every evaluation, cycling through the branch's ring slots. Rebinding both output
fields each evaluation costs two checked binds; instead :class:`SlotLaunches` records one
:class:`~..geometry.struct_launch.StructLaunch` per set of output buffers (told apart by the identity of their
tensors) and only the fields that really change per step (world state, gains) are rebound on the one used.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch

from ..geometry.struct_launch import StructLaunch
from ..world.state import WorldState

MAX_OUTPUT_SETS = 8
"""Most launches recorded per :class:`SlotLaunches` (one per set of output buffers); beyond, one more launch serves
every other set with its output fields rebound per call."""


def contiguous_pair(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``a`` and ``b`` contiguous (copies only when one is not; the state's tensors usually are)."""
    if a.is_contiguous() and b.is_contiguous():
        return a, b
    return a.contiguous(), b.contiguous()


def state_tensors(state: WorldState, twists: bool = False) -> tuple[torch.Tensor, ...]:
    """The state's body rotations [E, B, 3, 3] and origins [E, B, 3] — and with ``twists`` its linear and angular
    velocities [E, B, 3] — contiguous (:func:`contiguous_pair`)."""
    rot, pos = contiguous_pair(state.rot, state.pos)
    if not twists:
        return rot, pos
    return (rot, pos, *contiguous_pair(state.lin_vel, state.ang_vel))


def bind_state(launch: StructLaunch, state: WorldState, twists: bool = False) -> None:
    """Bind :func:`state_tensors` to the fields ``body_rot``, ``body_pos`` (and ``lin_vel``, ``ang_vel``) of
    ``launch``."""
    bind = launch.bind
    if twists:
        rot, pos, lin, ang = state_tensors(state, True)
        bind("lin_vel", lin)
        bind("ang_vel", ang)
    else:
        rot, pos = state_tensors(state)
    bind("body_rot", rot)
    bind("body_pos", pos)


class SlotLaunches:
    """Launches of ``kernel(call, *args)`` over ``dim`` (see :class:`StructLaunch`): ``fields`` name → tensor are
    bound at recording (the per-step ones are rebound by the caller on the launch :meth:`select` returns); the fields
    named ``outputs`` are fixed per recorded launch to the output buffers it was selected for."""

    def __init__(self, kernel, dim: Sequence[int], call_type, fields: Mapping[str, torch.Tensor],
                 args: Sequence[Any], device: torch.device, outputs: Sequence[str]):
        self.kernel, self.dim, self.call_type, self.args, self.device = kernel, dim, call_type, list(args), device
        self.fields = dict(fields)
        self.outputs = tuple(outputs)
        self._pair = len(self.outputs) == 2
        self._recorded: dict[tuple[int, ...], StructLaunch] = {}
        self._rebound: StructLaunch | None = None

    def select(self, buffers: Sequence[torch.Tensor]) -> StructLaunch:
        """The launch whose output fields point at ``buffers`` (one tensor per output name, in order; recorded on
        first use). The buffers must stay the same tensors from call to call (persistent staging slots)."""
        # a pair (the staging buffers) keyed without map/tuple: this runs once per batch and step
        key = (id(buffers[0]), id(buffers[1])) if self._pair else tuple(map(id, buffers))
        launch = self._recorded.get(key)
        if launch is not None:
            return launch
        if len(self._recorded) < MAX_OUTPUT_SETS:
            # the launch references the buffers, so their ids cannot be reused while the key is held
            launch = self._recorded[key] = self._record(buffers)
            return launch
        if self._rebound is None:
            self._rebound = self._record(buffers)
        for name, t in zip(self.outputs, buffers):
            self._rebound.bind(name, t)
        return self._rebound

    def bind_all(self, name: str, t: torch.Tensor) -> None:
        """Point field ``name`` of every launch, recorded or to come, at ``t``: for a field that changes rarely (the
        probe gains a reset redraws), so that no call needs to rebind it."""
        self.fields[name] = t
        for launch in self._recorded.values():
            launch.bind(name, t)
        if self._rebound is not None:
            self._rebound.bind(name, t)

    def _record(self, buffers: Sequence[torch.Tensor]) -> StructLaunch:
        fields = {**self.fields, **dict(zip(self.outputs, buffers))}
        return StructLaunch(self.kernel, self.dim, self.call_type, fields, self.args, self.device)
