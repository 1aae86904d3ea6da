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
    never reached); device, dtype: of the tables; whole_groups: one block per group (the CPU's blocking), else one
    per probe. :meth:`fields` returns the kernel tables (K blocks, C cells over
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
                 cutoff: np.ndarray, device, dtype: torch.dtype, whole_groups: bool):
        pts = np.asarray(points, np.float64)
        blocks = self._group_block if whole_groups else self._probe_blocks
        rows, counts, probes, first_cell = [], [], [], 0
        for g, (a, b) in enumerate(slices):           # one group (sensor) after the other, at least one
            row, cell_counts, cell_probes = blocks(pts, cutoff, a, b, dtype)
            n = len(row["first"])
            rows.append({**row, "group": np.full(n, g), "link": np.full(n, int(group_link[g])),
                         "cells": row["cells"] + first_cell})
            counts.append(cell_counts), probes.append(cell_probes)
            first_cell += len(cell_counts)
        cols = {k: np.concatenate([r[k] for r in rows]) for k in rows[0]}
        probe = np.concatenate(probes).astype(np.int64)

        def ints(v, *shape):
            return torch.as_tensor(np.asarray(v, np.int32).reshape(-1, *shape), device=device)

        def floats(v, *shape):
            return torch.as_tensor(np.asarray(v, np.float64).reshape(-1, *shape), device=device, dtype=dtype)

        self.n_blocks = len(cols["first"])
        self._fields = {"block_group": ints(cols["group"]), "block_link": ints(cols["link"]),
                        "block_first": ints(cols["first"]), "block_stop": ints(cols["stop"]),
                        "block_lo": floats(cols["lo"], 3), "block_hi": floats(cols["hi"], 3),
                        "block_cut": floats(cols["cut"]), "block_scale": floats(cols["scale"]),
                        "grid_cell": floats(cols["cell"]), "grid_dims": ints(cols["dims"], 3),
                        "grid_first_cell": ints(cols["cells"]),
                        "cell_start": ints(np.concatenate([[0], np.cumsum(np.concatenate(counts))])),
                        "cell_probe": ints(probe), "cell_pos": floats(pts[probe], 3)}

    @staticmethod
    def _group_block(pts, cutoff, a, b, dtype):
        """One block of the probes [a, b) (CPU): its columns as 1-row arrays (``cells``: its first cell within the
        group), the probe count of every cell and the active probes cell by cell. The cell edge is rounded to
        ``dtype``, as the kernel reads it."""
        active = np.flatnonzero(np.isfinite(cutoff[a:b])) + a
        cut = float(cutoff[active].max()) if len(active) else -np.inf
        own = pts[active] if len(active) else np.zeros((1, 3))
        lo, hi = own.min(0), own.max(0)
        h, dims = grid_shape(hi - lo, max(cut, 0.0), len(active))
        h = float(torch.tensor(h, dtype=dtype))
        cells = np.clip(np.floor((pts[active] - lo) / h).astype(np.int64), 0, dims - 1)
        flat = (cells[:, 2] * dims[1] + cells[:, 1]) * dims[0] + cells[:, 0]
        counts = np.bincount(flat, minlength=int(np.prod(dims)))
        corner = max(np.linalg.norm(lo), np.linalg.norm(hi))
        row = {"first": [a], "stop": [b], "lo": lo[None], "hi": hi[None], "cut": [cut],
               "scale": [(corner + np.linalg.norm(hi - lo)) * (1 + 1e-6)], "cell": [h], "dims": dims[None],
               "cells": [0]}
        return {k: np.asarray(v) for k, v in row.items()}, counts, active[np.argsort(flat, kind="stable")]

    @staticmethod
    def _probe_blocks(pts, cutoff, a, b, dtype):
        """One block per probe of [a, b) (CUDA), in the form of :meth:`_group_block`, vectorised: a grid of one cell
        (edge: the probe's reach) holding the probe, or nothing for a filler."""
        idx = np.arange(a, b)
        active = np.isfinite(cutoff[a:b])
        own = np.where(active[:, None], pts[a:b], 0.0)
        reach = np.where(active, cutoff[a:b], 0.0)
        h = torch.tensor(np.maximum(reach, 1e-6), dtype=dtype).double().numpy()     # grid_shape of an empty extent
        row = {"first": idx, "stop": idx + 1, "lo": own, "hi": own, "cut": cutoff[a:b], "cell": h,
               "scale": np.linalg.norm(own, axis=1) * (1 + 1e-6), "dims": np.ones((b - a, 3), np.int64),
               "cells": idx - a}
        return row, active.astype(np.int64), idx[active]

    def fields(self) -> dict[str, torch.Tensor]:
        """The kernel tables (class docstring)."""
        return dict(self._fields)
