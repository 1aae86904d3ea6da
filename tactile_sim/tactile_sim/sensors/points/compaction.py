"""Per-(env, segment) stream compaction: the selected elements of every segment first, in their original order.

The point-cloud sensors sum over the few elements that matter this step (probes inside a body, anchored samples
inside the gel). Elements [0, N) are split into S contiguous segments (one per sensor). After a call with the
selection mask [E, N], ``order[e, start_s + m]`` (m < ``count[e, s]``) is the m-th selected element of segment s in
env e — a stable sort by (segment, not selected), so there is no Python loop and the order is deterministic.

:meth:`SegmentCompaction.slots` gathers them into fixed-width tensors [E, S, K] for torch code. On CPU, K is the
largest count of this step (reading it costs nothing); on other devices K is the longest segment, so the step never
waits for the device.
"""

from __future__ import annotations

from typing import Sequence

import torch


class SegmentCompaction:
    """Compaction of E rows of N elements in S segments (starts / lengths in element units, covering [0, N)).

    Buffers (persistent, on ``device``): ``order`` [E, N] int64, ``count`` [E, S] int64.
    """

    def __init__(self, starts: Sequence[int], lengths: Sequence[int], n_envs: int, device):
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
        self._keys = torch.zeros((n_envs, n), dtype=torch.int64, device=self.device)
        self.count = torch.zeros((n_envs, len(lengths)), dtype=torch.int64, device=self.device)

    def __call__(self, selected: torch.Tensor) -> None:
        """Compact the selection [E, N] bool into ``order`` and ``count``."""
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
