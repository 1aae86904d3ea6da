"""TemperatureGrid (docs/models/temperature_grid.md#temperature-grid): temperature field of a link on a voxel grid,
read through a first-order sensing element.

Ground truth is the grid state of the :class:`~.system.ThermalSystem` after each evaluation, °C,
``[E, (H,) nx, ny, nz]`` indexed [ix, iy, iz] along the link's x, y, z. The measured branch applies the sensing lag
T_m ← T_m + (1 − exp(−dt/τ_s))(T − T_m) (stage 4; restarts at the true temperature after a reset; state and weight
of a :class:`~..imperfections.lag.FirstOrderLag`, advanced in the readout kernel of :mod:`.kernels`), then the
generic noise chain (°C) and delay/jitter/history.

Shared settings (merged over every TemperatureGrid of the configuration): ``properties_dict``,
``ambient_temperature`` (None → 21 °C), ``convection_coefficient`` (None → 1 W/(m²K)) and
``simulate_all_link_temperatures`` (OR). With it, all grids and lumped bodies are one system, advanced once per
evaluation of the (single) TemperatureGrid batch.
"""

from __future__ import annotations

import numpy as np
import torch

from ...imperfections.lag import FirstOrderLag
from ...imperfections.pipeline import MeasuredBranch
from ...world.state import WorldState
from ..base import BuildContext, SensorBatch, imperfections_of
from .kernels import CELL_KERNELS, CONTACT_KERNELS, READOUT_KERNELS
from .materials import resolve_materials
from .system import GridSpec, ThermalSystem
from ..warp_launch import SlotLaunches

DEFAULT_AMBIENT = 21.0
DEFAULT_CONVECTION = 1.0


class TemperatureGridBatch(SensorBatch):
    """TemperatureGrid sensors of one evaluation period and their thermal system.

    Geometry accessors (sensor i of the batch): :meth:`grid_origin` (lowest grid corner, link frame, m),
    :meth:`cell_size` (Δx, Δy, Δz m), :meth:`cell_centers` ((nx, ny, nz, 3) link frame, m), :meth:`frame`
    (the link name), :meth:`link_temperatures` (lumped bodies: name → [E] °C).
    """

    sensor_type = "TemperatureGrid"
    kernel_tables = (CONTACT_KERNELS, CELL_KERNELS, READOUT_KERNELS)

    def __init__(self, options, ctx: BuildContext):
        super().__init__(options, ctx)
        config = ctx.extras["suite"].config
        scene = ctx.scene
        every = [s for s in config.sensors if s.type == "TemperatureGrid"]
        materials = resolve_materials(every, config, scene.body_names, ctx.where)
        ambient = next((g.ambient_temperature for g in every if g.ambient_temperature is not None), DEFAULT_AMBIENT)
        convection = next((g.convection_coefficient for g in every if g.convection_coefficient is not None),
                          DEFAULT_CONVECTION)
        specs = []
        for o in self.options:
            where = ctx.where.get(o.name, f"TemperatureGrid(name={o.name!r})")
            specs.append(GridSpec(o.name, scene.body_index(o.link, f"{where}.link"), tuple(o.grid_size),
                                  o.heat_generation, o.contact_band, o.contact_conductance, o.contact_sample_spacing,
                                  tuple(o.temperature_bounds), tuple(o.ignore), where))
        self.system = ThermalSystem(
            specs, materials, scene, ctx.query, ambient=ambient, convection=convection,
            simulate_all=any(g.simulate_all_link_temperatures for g in every),
            lumped_spacing=config.suite.lumped_sample_spacing, dt=ctx.dt, n_envs=ctx.n_envs, device=ctx.device,
            dtype=ctx.dtype, lumped_where=f"{config.source or '<config>'}:suite")
        sys_ = self.system
        self._grid = sys_.grid_of_spec
        self._cells = torch.cat([sys_.cell_index[g] for g in self._grid])
        counts = [sys_.n_cells[g] for g in self._grid]
        self.branch = MeasuredBranch(
            [imperfections_of(o, ctx, n=n, channels=1, layout_shape=tuple(o.grid_size))
             for o, n in zip(self.options, counts)], ctx.n_envs, ctx.device, ctx.dtype, streams=ctx.noise_streams)
        tau = ctx.tensor(np.repeat([o.sensor_time_constant for o in self.options], counts))
        self.lag = FirstOrderLag(tau, ctx.dt, self.true_temperatures())
        kernel, call_type = READOUT_KERNELS[ctx.dtype]
        self._readout = SlotLaunches(kernel, (ctx.n_envs, len(self._cells)), call_type, {
            "t": sys_.t_cell, "cell": self._cells.to(torch.int32), "weight": self.lag.weight.contiguous(),
            "lag": self.lag.state}, [], ctx.device, ("measured", "ground_truth"))

    def true_temperatures(self) -> torch.Tensor:
        """Current grid temperatures of the batch's sensors, concatenated cell-major: [E, P] °C."""
        return self.system.t_cell.index_select(1, self._cells)

    def evaluate(self, state: WorldState) -> None:
        """Thermal step, then one readout launch (ground truth and sensing lag into the branch's staging buffers;
        one recorded launch per staging pair) and the generic noise chain with the commit
        (:meth:`MeasuredBranch.push_staged`)."""
        self.system.step(state)
        self._readout.select(self.branch.staging())()
        self.branch.push_staged()

    def reset(self, env_mask: torch.Tensor | None) -> None:
        """docs/models/imperfections.md#reset: pipeline state; every cell exactly its base temperature, lumped bodies
        theirs, T_m = T."""
        super().reset(env_mask)
        self.system.reset(env_mask)
        self.lag.reset(self.true_temperatures(), env_mask)

    # ------------------------------------------------------------------ geometry of sensor i
    def frame(self, i: int) -> str:
        """The link frame of sensor i's grid."""
        return self.options[i].link

    def grid_origin(self, i: int) -> np.ndarray:
        """Lowest corner b_lo of sensor i's grid in its link frame, (3,) m."""
        return self.system.lo[self._grid[i]].copy()

    def cell_size(self, i: int) -> np.ndarray:
        """(Δx, Δy, Δz) of sensor i's grid, m."""
        return self.system.delta[self._grid[i]].copy()

    def cell_centers(self, i: int) -> torch.Tensor:
        """Cell centres b_lo + (index + ½)⊙Δ of sensor i, (nx, ny, nz, 3) link frame, m."""
        n = self.options[i].grid_size
        idx = np.stack(np.meshgrid(*(np.arange(k) for k in n), indexing="ij"), axis=-1)
        return self.ctx.tensor(self.grid_origin(i) + (idx + 0.5) * self.cell_size(i))

    def link_temperatures(self, i: int) -> dict[str, torch.Tensor]:
        """Lumped temperatures of the thermal system (empty unless simulate_all_link_temperatures): name → [E] °C."""
        return {name: self.system.t_lump[:, k].clone() for k, name in enumerate(self.system.lumped_names)}
