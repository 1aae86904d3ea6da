"""Per-(env, segment) stream compaction: the selected elements of every segment first, in their original order.

The point-cloud sensors sum over the few elements that matter this step (probes inside a body, anchored samples
inside the gel). Elements [0, N) are split into S contiguous segments (one per sensor). After a call with the
selection mask [E, N], ``order[e, start_s + m]`` (m < ``count[e, s]``) is the m-th selected element of segment s in
env e, the unselected ones following in their order — a stable sort by (segment, not selected), so there is no
Python loop and the order is deterministic. On the CPU one native loop per env partitions each segment in place of the
sort (the same order, without sorting keys).

:meth:`SegmentCompaction.slots` gathers them into fixed-width tensors [E, S, K] for torch code. On CPU, K is the
largest count of this step (reading it costs nothing); on other devices K is the longest segment, so the step never
waits for the device.
"""

from __future__ import annotations

from typing import Sequence

import torch
import warp as wp

from ...geometry.struct_launch import StructLaunch, warp_struct
from ...geometry.warp_kernels import DTYPE_NAMES, native_grid_kernel

_PartitionCall = warp_struct("SegmentPartitionCall", {
    "selected": wp.array2d(dtype=wp.bool), "starts": wp.array(dtype=wp.int64), "stops": wp.array(dtype=wp.int64),
    "order": wp.array2d(dtype=wp.int64), "count": wp.array2d(dtype=wp.int64)}, __name__)

_PARTITION_LOOP = """
    const int64_t n = call.order.shape[1];
    const int segments = call.count.shape[1];
    const bool* __restrict__ selected = call.selected.data + static_cast<int64_t>(e) * n;
    int64_t* __restrict__ order = call.order.data + static_cast<int64_t>(e) * n;
    for (int s = 0; s < segments; ++s) {
        const int64_t a = call.starts.data[s], b = call.stops.data[s];
        int64_t k = a;
        for (int64_t j = a; j < b; ++j) {
            if (selected[j]) order[k++] = j;
        }
        call.count.data[static_cast<int64_t>(e) * segments + s] = k - a;
        for (int64_t j = a; j < b; ++j) {
            if (!selected[j]) order[k++] = j;
        }
    }
"""


def _partition_stub(call, e, unused): ...


_PARTITION_KERNELS = {dt: native_grid_kernel(f"segment_partition_{DTYPE_NAMES[dt]}", _PartitionCall, _partition_stub,
                                             _PARTITION_LOOP) for dt in (torch.float32, torch.float64)}
"""Per working dtype (the same code; a suite compiles only its own): over (E, 1), env e's ``order`` [E, N] and
``count`` [E, S] from ``selected`` [E, N] (segments [starts, stops)), as the stable sort of :class:`SegmentCompaction`
gives them."""


class SegmentCompaction:
    """Compaction of E rows of N elements in S segments (starts / lengths in element units, covering [0, N)).

    Buffers (persistent, on ``device``): ``order`` [E, N] int64, ``count`` [E, S] int64.
    """

    def __init__(self, starts: Sequence[int], lengths: Sequence[int], n_envs: int, device,
                 dtype: torch.dtype = torch.float32):
        self.device = torch.device(device)
        n = int(sum(lengths))
        segment = torch.repeat_interleave(torch.arange(len(lengths), device=self.device),
                                          torch.as_tensor(list(lengths), device=self.device))
        self.segment = segment
        self._base = segment * 2
        self.starts = torch.as_tensor(list(starts), device=self.device)
        self.longest = max(lengths) if len(lengths) else 0
        self.n = n
        self.order = torch.zeros((n_envs, n), dtype=torch.int64, device=self.device)
        self.count = torch.zeros((n_envs, len(lengths)), dtype=torch.int64, device=self.device)
        self._stops = self.starts + torch.as_tensor(list(lengths), device=self.device)
        self._native = self.device.type == "cpu" and n_envs > 0 and n > 0
        self._dtype = dtype                                          # the working dtype (names the native kernel)
        self._partition = None                                       # its launch, recorded on the first call
        self._keys = None if self._native else torch.zeros((n_envs, n), dtype=torch.int64, device=self.device)

    def __call__(self, selected: torch.Tensor) -> None:
        """Compact the selection [E, N] bool into ``order`` and ``count``."""
        if self._native:
            selected = selected if selected.is_contiguous() else selected.contiguous()
            if self._partition is None:
                self._partition = StructLaunch(_PARTITION_KERNELS[self._dtype], (self.order.shape[0], 1),
                                               _PartitionCall, {"selected": selected, "starts": self.starts,
                                                                "stops": self._stops, "order": self.order,
                                                                "count": self.count}, [], self.device)
            else:
                self._partition.bind("selected", selected)
            self._partition()
            return
        keys = self._base + (~selected).to(torch.int64)
        torch.sort(keys, dim=1, stable=True, out=(self._keys, self.order))
        if self.count.shape[1] == 1:
            torch.sum(selected, dim=1, keepdim=True, out=self.count)
        else:
            self.count.zero_()
            self.count.index_add_(1, self.segment, selected.to(torch.int64))

    def capacity(self) -> int:
        """Slots per segment for :meth:`slots`: this step's largest count on CPU, the longest segment elsewhere."""
        if self.device.type == "cpu":
            return int(self.count.max()) if self.count.numel() else 0
        return self.longest

    def slots(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(index [E, S, K] into [0, N), valid [E, S, K] bool) of the compacted elements; K = :meth:`capacity`."""
        k = self.capacity()
        m = torch.arange(k, device=self.device)
        at = (self.starts[:, None] + m).clamp_max(max(self.n - 1, 0))
        index = self.order[:, at]
        return index, m < self.count[:, :, None]
