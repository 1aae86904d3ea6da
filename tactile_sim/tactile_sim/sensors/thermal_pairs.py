"""Step B of the thermal system (spec §10.3): exact pairwise relaxation of finite-capacity pairs in a fixed order.

Each pair (X, Y) with conductance G relaxes exactly over dt, conserving C_X T_X + C_Y T_Y (written with inverse
capacities i = 1/C, so that a body of infinite capacity, i = 0, keeps its temperature):
    T̄ = (i_Y T_X + i_X T_Y)/(i_X + i_Y);  δ = (T_X − T_Y)·exp(−dt G (i_X + i_Y))
    T_X ← T̄ + δ i_X/(i_X + i_Y);  T_Y ← T̄ − δ i_Y/(i_X + i_Y)
Consecutive pairs share bodies, so the order matters; one warp thread per env walks the pairs in the spec's order:
1. (cell, lumped body): cells in the given surface-cell order (grids in scene order, cells in flat order), bodies in
   scene order;
2. (cell, cell) between two gridded links: the samples of the earlier link in cell-major order; the samples of one
   cell with the same partner cell form one pair (conductances summed), pairs in order of first occurrence;
3. (lumped, lumped): X < Y in scene order.
Conductances arrive pre-multiplied by dt (dimension W/K·s = J/K), so that the kernel has no scalar argument.
"""

from __future__ import annotations

from typing import Any

import torch
import warp as wp


@wp.func
def _relax(tx: Any, ty: Any, ix: Any, iy: Any, g_dt: Any):
    s = ix + iy
    mean = (iy * tx + ix * ty) / s
    delta = (tx - ty) * wp.exp(-g_dt * s)
    return mean + delta * ix / s, mean - delta * iy / s


@wp.kernel(enable_backward=False)
def _relax_pairs(t_cell: wp.array2d(dtype=Any), ic_cell: wp.array(dtype=Any), t_lump: wp.array2d(dtype=Any),
                 ic_lump: wp.array(dtype=Any), surf_cells: wp.array(dtype=wp.int32), g_cl: wp.array3d(dtype=Any),
                 cell_x: wp.array(dtype=wp.int32), run_start: wp.array(dtype=wp.int32),
                 run_end: wp.array(dtype=wp.int32), cell_y: wp.array2d(dtype=wp.int32), g_cc: wp.array2d(dtype=Any),
                 g_ll: wp.array3d(dtype=Any)):
    e = wp.tid()
    n_lump = ic_lump.shape[0]
    zero = ic_cell[0] - ic_cell[0]
    for m in range(surf_cells.shape[0]):
        c = surf_cells[m]
        for b in range(n_lump):
            g = g_cl[e, m, b]
            if g > zero:
                tc, tb = _relax(t_cell[e, c], t_lump[e, b], ic_cell[c], ic_lump[b], g)
                t_cell[e, c] = tc
                t_lump[e, b] = tb
    for i in range(cell_x.shape[0]):
        cy = cell_y[e, i]
        if cy < 0:
            continue
        seen = int(0)
        for j in range(run_start[i], i):
            if cell_y[e, j] == cy:
                seen = 1
        if seen != 0:
            continue
        g = ic_cell[0] - ic_cell[0]
        for j in range(i, run_end[i]):
            if cell_y[e, j] == cy:
                g += g_cc[e, j]
        if g > zero:
            cx = cell_x[i]
            tx, ty = _relax(t_cell[e, cx], t_cell[e, cy], ic_cell[cx], ic_cell[cy], g)
            t_cell[e, cx] = tx
            t_cell[e, cy] = ty
    for x in range(n_lump):
        for y in range(x + 1, n_lump):
            g = g_ll[e, x, y]
            if g > zero:
                tx, ty = _relax(t_lump[e, x], t_lump[e, y], ic_lump[x], ic_lump[y], g)
                t_lump[e, x] = tx
                t_lump[e, y] = ty


class PairRelaxation:
    """The fixed pair structure of one thermal system.

    ic_cell [Nc] inverse cell capacities (K/J, flat padded cell layout); ic_lump [NL] inverse lumped capacities
    (0 = infinite); surf_cells [M] the cells that can touch a lumped body, in pair order; cell_x [K] the cell of each
    cell–cell candidate sample, in pair order, with run_start / run_end [K] the bounds of its cell's run.
    """

    def __init__(self, ic_cell: torch.Tensor, ic_lump: torch.Tensor, surf_cells: torch.Tensor, cell_x: torch.Tensor,
                 run_start: torch.Tensor, run_end: torch.Tensor):
        self.ic_cell, self.ic_lump = ic_cell.contiguous(), ic_lump.contiguous()
        self.surf_cells = surf_cells.to(torch.int32).contiguous()
        self.cell_x = cell_x.to(torch.int32).contiguous()
        self.run_start = run_start.to(torch.int32).contiguous()
        self.run_end = run_end.to(torch.int32).contiguous()
        self.device = wp.device_from_torch(ic_cell.device)

    def __call__(self, t_cell: torch.Tensor, t_lump: torch.Tensor, g_cl_dt: torch.Tensor, cell_y: torch.Tensor,
                 g_cc_dt: torch.Tensor, g_ll_dt: torch.Tensor) -> None:
        """Relax in place. t_cell [E, Nc], t_lump [E, NL] °C (contiguous); g_cl_dt [E, M, NL], g_cc_dt [E, K],
        g_ll_dt [E, NL, NL] conductance·dt, J/K; cell_y [E, K] partner cell (−1: no pair)."""
        args = [t_cell, self.ic_cell, t_lump, self.ic_lump, self.surf_cells, g_cl_dt.contiguous(), self.cell_x,
                self.run_start, self.run_end, cell_y.to(torch.int32).contiguous(), g_cc_dt.contiguous(),
                g_ll_dt.contiguous()]
        stream = wp.stream_from_torch(torch.cuda.current_stream(t_cell.device)) if t_cell.is_cuda else None
        wp.launch(_relax_pairs, dim=t_cell.shape[0], inputs=[wp.from_torch(a) for a in args], device=self.device,
                  stream=stream)
