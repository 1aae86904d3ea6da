"""Uniform grids of a probe batch's probes in their link frames: the broad phase of a search from points (tracked
samples) to the probes within reach of them (ProximityTaxel).

The probes of each group (one sensor: a contiguous slice of the batch, on one link) are cut into *blocks* — the
whole group on the CPU (one kernel thread per (env, group), so that a sample is posed once per env), one probe on
CUDA (one thread per (env, probe)) — and the active probes of a block (finite reach) are binned into a uniform grid
over their link-frame bounding box, cells of edge h ≥ the block's largest reach (larger when that would make more
than about :data:`CELLS_PER_PROBE` cells per probe). A point then visits only the probes of the few cells that its
reach box overlaps. The grids are static: probes do not move in their link frame.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

CELLS_PER_PROBE = 4
"""Most grid cells per probe of a block (plus a few): the cell edge grows beyond the largest reach when a block's
probes are spread far apart relative to it."""


def grid_shape(extent: np.ndarray, reach: float, n: int) -> tuple[float, np.ndarray]:
    """Cell edge h (m) and cells per axis (3,) of a grid over a box of ``extent`` (3,) m for ``n`` probes of largest
    ``reach`` m: h ≥ reach, doubled until the grid has at most CELLS_PER_PROBE·n + 8 cells."""
    h = max(reach, 1e-6 * (float(extent.max()) + 1.0))
    while True:
        dims = np.floor(extent / h).astype(np.int64) + 1
        if int(np.prod(dims)) <= CELLS_PER_PROBE * n + 8:
            return h, dims
        h *= 2.0


class ProbeGrid:
    """Blocks of a batch's probes and their grids (module docstring).

    points: (P, 3) link-frame probe positions, m (values of the working ``dtype``), groups as contiguous ``slices``
    (start, stop) riding on the bodies ``group_link``; cutoff: (P,) each probe's largest reach, m (−inf: a filler,
    never reached); device, dtype: of the tables. :meth:`fields` returns the kernel tables (K blocks, C cells over
    all blocks):

    * ``block_group``, ``block_link``, ``block_first``, ``block_stop`` [K] int32: group, link body and probe range
      [first, stop) of each block;
    * ``block_lo``, ``block_hi`` [K, 3] m: bounding box of the block's active probes (its grid's origin is ``lo``),
      ``block_cut`` [K] m: their largest reach (−inf when none), ``block_scale`` [K] m: ≥ the largest corner norm and
      the box's extent (the magnitude of the round-off margins);
    * ``grid_cell`` [K] m: cell edge h, ``grid_dims`` [K, 3] int32: cells per axis, ``grid_first_cell`` [K] int32:
      the block's first cell (cell (x, y, z) is first + (z·ny + y)·nx + x);
    * ``cell_start`` [C + 1] int32: the probes of cell c are ``cell_probe[cell_start[c]:cell_start[c + 1]]``, their
      positions ``cell_pos`` [·, 3] m (copies of ``points``, so that a search reads them in cell order).
    """

    def __init__(self, points: np.ndarray, slices: Sequence[tuple[int, int]], group_link: Sequence[int],
                 cutoff: np.ndarray, device, dtype: torch.dtype):
        device = torch.device(device)
        whole_group = device.type == "cpu"
        pts = np.asarray(points, np.float64)
        cols: dict[str, list] = {k: [] for k in ("group", "link", "first", "stop", "lo", "hi", "cut", "scale", "cell",
                                                 "dims", "first_cell")}
        cell_start, cell_probe = [0], []
        for g, (a, b) in enumerate(slices):
            for first in range(a, b, (b - a) if whole_group else 1):
                stop = b if whole_group else first + 1
                self._add_block(pts, cutoff, first, stop, dtype, cols, cell_start, cell_probe)
                cols["group"].append(g), cols["link"].append(int(group_link[g]))

        def ints(v, *shape):
            return torch.as_tensor(np.asarray(v, np.int32).reshape(-1, *shape), device=device)

        def floats(v, *shape):
            return torch.as_tensor(np.asarray(v, np.float64).reshape(-1, *shape), device=device, dtype=dtype)

        self.n_blocks = len(cols["group"])
        self._fields = {"block_group": ints(cols["group"]), "block_link": ints(cols["link"]),
                        "block_first": ints(cols["first"]), "block_stop": ints(cols["stop"]),
                        "block_lo": floats(cols["lo"], 3), "block_hi": floats(cols["hi"], 3),
                        "block_cut": floats(cols["cut"]), "block_scale": floats(cols["scale"]),
                        "grid_cell": floats(cols["cell"]), "grid_dims": ints(cols["dims"], 3),
                        "grid_first_cell": ints(cols["first_cell"]), "cell_start": ints(cell_start),
                        "cell_probe": ints(cell_probe), "cell_pos": floats(pts[np.asarray(cell_probe, np.int64)], 3)}

    @staticmethod
    def _add_block(pts, cutoff, first, stop, dtype, cols, cell_start, cell_probe) -> None:
        """Append block [first, stop)'s row to ``cols`` and its cells to the CSR lists (the cell edge rounded to
        ``dtype``, as the kernel reads it)."""
        active = np.flatnonzero(np.isfinite(cutoff[first:stop])) + first
        cut = float(cutoff[active].max()) if len(active) else -np.inf
        own = pts[active] if len(active) else np.zeros((1, 3))
        lo, hi = own.min(0), own.max(0)
        h, dims = grid_shape(hi - lo, max(cut, 0.0), len(active))
        h = float(torch.tensor(h, dtype=dtype))
        cells = np.clip(np.floor((pts[active] - lo) / h).astype(np.int64), 0, dims - 1)
        flat = (cells[:, 2] * dims[1] + cells[:, 1]) * dims[0] + cells[:, 0]
        counts = np.bincount(flat, minlength=int(np.prod(dims)))
        cols["first_cell"].append(len(cell_start) - 1)
        cell_start.extend((cell_start[-1] + np.cumsum(counts)).tolist())
        cell_probe.extend(active[np.argsort(flat, kind="stable")].tolist())
        corner = max(np.linalg.norm(lo), np.linalg.norm(hi))
        for key, v in zip(("first", "stop", "lo", "hi", "cut", "scale", "cell", "dims"),
                          (first, stop, lo, hi, cut, (corner + np.linalg.norm(hi - lo)) * (1 + 1e-6), h, dims)):
            cols[key].append(v)

    def fields(self) -> dict[str, torch.Tensor]:
        """The kernel tables (class docstring)."""
        return dict(self._fields)
