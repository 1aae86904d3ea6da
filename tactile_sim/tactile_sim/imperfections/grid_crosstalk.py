"""The batched spatial-crosstalk filter of a measured branch (docs/models/imperfections.md#crosstalk): the kernels of
:mod:`.crosstalk` applied to the grid taxel sensors of one batch as grouped convolutions (torch)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from .crosstalk import CrosstalkKernel


@dataclass(frozen=True)
class CrosstalkMember:
    """One sensor of a batch with crosstalk: first probe index in the batch, grid (M, N), kernel, active [M·N]."""

    offset: int
    grid: tuple[int, int]
    kernel: CrosstalkKernel
    active: np.ndarray


class GridCrosstalk:
    """Stage 1 for the crosstalk sensors of one batch; x [E, P, K] → [E, P, K] (other probes pass unchanged).

    Sensors with the same grid (M, N) and kind (plain / split) are filtered together by one grouped conv2d whose
    groups are (sensor, channel) pairs; smaller kernels are zero-padded to the group's largest. Fillers are re-zeroed.
    """

    def __init__(self, members: list[CrosstalkMember], channels: int, device, dtype: torch.dtype):
        self.channels = channels
        groups: dict[tuple[int, int, bool], list[CrosstalkMember]] = {}
        for m in members:
            groups.setdefault((m.grid[0], m.grid[1], m.kernel.split), []).append(m)
        self.groups = [self._build(ms, device, dtype) for ms in groups.values()]

    def _build(self, ms: list[CrosstalkMember], device, dtype) -> dict:
        m_rows, n_cols = ms[0].grid
        cells = m_rows * n_cols
        split = ms[0].kernel.split
        per = [m.kernel.channel_kernels(self.channels) for m in ms]
        kh = max(k.shape[1] for k in per)
        kw = max(k.shape[2] for k in per)
        weight = np.zeros((len(ms), per[0].shape[0], kh, kw))
        for i, k in enumerate(per):
            r0, c0 = (kh - k.shape[1]) // 2, (kw - k.shape[2]) // 2
            weight[i, :, r0 : r0 + k.shape[1], c0 : c0 + k.shape[2]] = k
        idx = np.concatenate([np.arange(m.offset, m.offset + cells) for m in ms])
        active = np.concatenate([m.active for m in ms])
        expansion = None
        if split:
            expansion = torch.as_tensor(np.stack([m.kernel.expansion() for m in ms]), dtype=dtype, device=device)
        return {
            "shape": (len(ms), m_rows, n_cols),
            "idx": torch.as_tensor(idx, dtype=torch.int64, device=device),
            "weight": torch.as_tensor(weight.reshape(-1, 1, kh, kw), dtype=dtype, device=device),
            "padding": (kh // 2, kw // 2),
            "expansion": expansion,
            "active": torch.as_tensor(active, device=device)[None, :, None],
        }

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        out = x.clone()
        e, k = x.shape[0], self.channels
        for g in self.groups:
            s, m_rows, n_cols = g["shape"]
            xg = x.index_select(1, g["idx"]).view(e, s, m_rows, n_cols, k)
            if g["expansion"] is None:
                z = xg.permute(0, 1, 4, 2, 3)
            else:
                z = torch.einsum("sck,esmnk->escmn", g["expansion"], xg)
            c = z.shape[2]
            y = F.conv2d(z.reshape(e, s * c, m_rows, n_cols), g["weight"], padding=g["padding"], groups=s * c)
            y = y.view(e, s, c, m_rows, n_cols)
            if g["expansion"] is not None:
                y = torch.cat((y[:, :, 0:3] + y[:, :, 3:6], y[:, :, 6:9]), dim=2)
            y = y.permute(0, 1, 3, 4, 2).reshape(e, s * m_rows * n_cols, k)
            out.index_copy_(1, g["idx"], torch.where(g["active"], y, torch.zeros((), dtype=y.dtype, device=y.device)))
        return out
