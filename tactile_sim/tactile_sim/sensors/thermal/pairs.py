"""Step B of the thermal system (docs/models/temperature_grid.md#update): exact pairwise relaxation of finite-capacity
pairs in a fixed order.

Each pair (X, Y) with conductance G relaxes exactly over dt, conserving C_X T_X + C_Y T_Y (written with inverse
capacities i = 1/C, so that a body of infinite capacity, i = 0, keeps its temperature):
    T̄ = (i_Y T_X + i_X T_Y)/(i_X + i_Y);  δ = (T_X − T_Y)·exp(−dt G (i_X + i_Y))
    T_X ← T̄ + δ i_X/(i_X + i_Y);  T_Y ← T̄ − δ i_Y/(i_X + i_Y)
Consecutive pairs share bodies, so the order matters; one warp thread per env walks the pairs in the documented order
(a recorded launch on buffers bound at build, which it clears as it consumes them):
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

from ...geometry.struct_launch import StructLaunch, warp_struct
from ...geometry.warp_kernels import unique_kernel


@wp.func
def _relax(tx: Any, ty: Any, ix: Any, iy: Any, g_dt: Any):
    s = ix + iy
    mean = (iy * tx + ix * ty) / s
    delta = (tx - ty) * wp.exp(-g_dt * s)
    return mean + delta * ix / s, mean - delta * iy / s


def _pair_struct(f):
    fields = {"t_cell": wp.array2d(dtype=f), "ic_cell": wp.array(dtype=f), "t_lump": wp.array2d(dtype=f),
              "ic_lump": wp.array(dtype=f), "surf_cells": wp.array(dtype=wp.int32), "g_cl": wp.array3d(dtype=f),
              "cell_x": wp.array(dtype=wp.int32), "run_end": wp.array(dtype=wp.int32),
              "cell_y": wp.array2d(dtype=wp.int32), "g_cc": wp.array2d(dtype=f), "area_ll": wp.array3d(dtype=f),
              "u_ll_dt": wp.array2d(dtype=f)}
    name = f"PairCall_{f.__name__}"
    return warp_struct(name, fields, __name__)


def _pair_kernel(f):
    call_type = _pair_struct(f)

    def kernel(call):
        """Env e: the three pair families in order; every conductance read is cleared (cell_y set to −1)."""
        e = wp.tid()
        zero = call.ic_cell[0] - call.ic_cell[0]
        n_lump = call.ic_lump.shape[0]
        for m in range(call.surf_cells.shape[0]):
            c = call.surf_cells[m]
            for b in range(n_lump):
                g = call.g_cl[e, m, b]
                call.g_cl[e, m, b] = zero
                if g > zero:
                    tc, tb = _relax(call.t_cell[e, c], call.t_lump[e, b], call.ic_cell[c], call.ic_lump[b], g)
                    call.t_cell[e, c] = tc
                    call.t_lump[e, b] = tb
        # cell–cell: the first sample of a run with partner cy sums its run's later samples with the same partner
        # (in sample order) and marks them done, so that each (cell, partner) pair relaxes once, in order of first
        # occurrence
        for i in range(call.cell_x.shape[0]):
            cy = call.cell_y[e, i]
            if cy < 0:
                continue
            g = zero
            for j in range(i, call.run_end[i]):
                if call.cell_y[e, j] == cy:
                    g += call.g_cc[e, j]
                    call.cell_y[e, j] = -1
                    call.g_cc[e, j] = zero
            if g > zero:
                cx = call.cell_x[i]
                tx, ty = _relax(call.t_cell[e, cx], call.t_cell[e, cy], call.ic_cell[cx], call.ic_cell[cy], g)
                call.t_cell[e, cx] = tx
                call.t_cell[e, cy] = ty
        half = type(zero)(0.5)
        for x in range(n_lump):
            for y in range(x + 1, n_lump):
                g = call.u_ll_dt[x, y] * (half * (call.area_ll[e, x, y] + call.area_ll[e, y, x]))
                if g > zero:
                    tx, ty = _relax(call.t_lump[e, x], call.t_lump[e, y], call.ic_lump[x], call.ic_lump[y], g)
                    call.t_lump[e, x] = tx
                    call.t_lump[e, y] = ty
        for x in range(n_lump):
            for y in range(n_lump):
                call.area_ll[e, x, y] = zero

    kernel.__name__ = f"thermal_relax_pairs_{f.__name__}"
    kernel.__annotations__ = {"call": call_type}
    return unique_kernel(kernel), call_type


_KERNELS = {torch.float32: _pair_kernel(wp.float32), torch.float64: _pair_kernel(wp.float64)}


class PairRelaxation:
    """The fixed pair structure of one thermal system and its recorded launch (one thread per env).

    State and per-step inputs (bound at build, used in place): t_cell [E, Nc], t_lump [E, NL] °C; g_cl_dt
    [E, M, ≥NL] (cell, lumped) conductance·dt, J/K; cell_y [E, K] int32 partner cell per sample in pair order (−1: no
    pair) with g_cc_dt [E, K]; area_ll [E, NL, NL] m², area of X's samples within the band of Y. Each call consumes
    them: it leaves g_cl_dt, g_cc_dt and area_ll zero and cell_y −1. Lumped–lumped pairs: G·dt = u_ll_dt[X, Y]·½
    (area_ll[X, Y] + area_ll[Y, X]) with u_ll_dt [NL, NL] = U_XY·dt, W/(m²K)·s.
    Static: ic_cell [Nc] inverse cell capacities (K/J, flat padded cell layout); ic_lump [NL] inverse lumped
    capacities (0 = infinite); surf_cells [M] the cells that can touch a lumped body, in pair order; cell_x [K] the
    cell of each cell–cell candidate sample, in pair order, with run_end [K] the end of its cell's run.
    """

    def __init__(self, ic_cell: torch.Tensor, ic_lump: torch.Tensor, surf_cells: torch.Tensor, cell_x: torch.Tensor,
                 run_end: torch.Tensor, t_cell: torch.Tensor, t_lump: torch.Tensor, g_cl_dt: torch.Tensor,
                 cell_y: torch.Tensor, g_cc_dt: torch.Tensor, area_ll: torch.Tensor, u_ll_dt: torch.Tensor):
        ints = lambda t: t.to(torch.int32).contiguous()  # noqa: E731
        kernel, call_type = _KERNELS[t_cell.dtype]
        fields = {"t_cell": t_cell, "ic_cell": ic_cell.contiguous(), "t_lump": t_lump,
                  "ic_lump": ic_lump.contiguous(), "surf_cells": ints(surf_cells), "g_cl": g_cl_dt,
                  "cell_x": ints(cell_x), "run_end": ints(run_end), "cell_y": cell_y, "g_cc": g_cc_dt,
                  "area_ll": area_ll, "u_ll_dt": u_ll_dt.contiguous()}
        self.launch = StructLaunch(kernel, (t_cell.shape[0],), call_type, fields, [], t_cell.device)

    def __call__(self) -> None:
        """Relax in place (and clear the consumed inputs)."""
        self.launch()
