"""The thermal system of the TemperatureGrid sensors (docs/models/temperature_grid.md#grid): voxel grids, lumped
bodies, one update.

Grids. Each grid covers the link-frame bounding box [b_lo, b_hi] of its link's collision shapes with n_a cells per
axis (Δ_a = extent_a/n_a, V = ΔxΔyΔz, C = ρcV). All grids of a system share one padded layout
[E, G, NX, NY, NZ] (NX = max n_x, …); padding cells have zero conductance and an identity conduction operator, so
they never change and never touch a real cell. ``cell`` indices below are flat in that layout.

Per step (dt = the sensors' evaluation period):
  A. every cell: exact solution of C dT/dt = −G T + Q over dt with the fixed partners (contact through the
     covered surface samples), convection h and linearised radiation through the exposed face area, generation;
  B. (simulate_all_link_temperatures) exact pairwise relaxation of (cell, lumped), (cell, cell) and
     (lumped, lumped) pairs in the documented fixed order (:mod:`.pairs`);
  C. interior conduction, backward Euler with zero-flux walls, diagonal in the orthonormal DCT-II basis:
     T̂_m ← T̂_m / (1 + dt α Λ_m), Λ_m = Σ_a (4/Δ_a²) sin²(π m_a/(2 n_a)); one precomputed DCT matrix per axis;
  D. (simulate_all) lumped bodies exchange with fixed partners and convect/radiate through their exposed area,
     exactly as A;
  E. clamp to ``temperature_bounds``.
The step runs as warp launches (:mod:`.kernels`, :mod:`.pairs`) on persistent buffers: the grid and
lumped contact kernels accumulate per cell / body, one cell kernel per grid does A (and C + E for grids of at most
:data:`DENSE_CONDUCTION_CELLS` cells, through one dense operator; larger grids run C as the separable DCT in torch).
A, B and D are exact exponentials with factors in (0, 1]; C divides every mode by a factor ≥ 1: the scheme is
unconditionally stable and obeys a discrete maximum principle. Without boundary exchange Σ C T is conserved to
round-off (C keeps mode 0; each B pair conserves its energy).

Where the model page leaves a choice, this implementation takes (documented here, not elsewhere):
* a body's material: its ``properties_dict`` entry, else its object ``material``, else ``properties_dict["default"]``;
  a body with both an entry and an object material that differ is an error;
* lumped bodies: every body with a material, collision shapes and finite volume that carries no grid; bodies with a
  plane (infinite capacity) stay at their base temperature ("fixed"); V and S are sums over the body's shapes;
* lumped samples (``lumped_sample_spacing``, seed 0) touch the deepest candidate body (docs/models/scene.md#candidates)
within the
  ``contact_band`` of the first grid in scene order; a lumped body also exchanges with fixed partners it touches,
  with U = 1/(ℓ/k_X + ℓ/k_Y + 1/h_c), ℓ = V_X/S_X (the fixed-body rule of docs/models/temperature_grid.md#contact-area
  mirrored); lumped–lumped and
  lumped–fixed pairs use that grid's ``contact_conductance``, and lumped temperatures are clamped to the widest
  ``temperature_bounds`` of the grids;
* (cell, cell) pairs: see :mod:`.pairs` for their order (the model fixes none within one cell).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ...errors import ConfigError
from ...geometry.sampling import check_sample_spacing, sample_body_surface
from ...geometry.shapes import ShapeKind
from ...world.state import WorldState
from ...geometry.struct_launch import StructLaunch
from ..points.body_samples import BodySamples, SampleCells
from ..points.probe_set import FusedProbeLaunch
from .kernels import CELL_KERNELS, CONTACT_KERNELS, EXCHANGE_KERNELS, FIXED, GRIDDED, LUMPED, LUMPED_KERNELS
from .materials import Material, link_material
from .pairs import PairRelaxation

DENSE_CONDUCTION_CELLS = 64
"""Grids of at most this many (padded) cells conduct through one dense operator in a kernel; larger ones through
the separable DCT in torch (the same linear map; the dense form avoids six small matrix products per step)."""


@dataclass(frozen=True)
class GridSpec:
    """One TemperatureGrid: link (body index), grid_size, heat generation q (None, a scalar or (nx, ny, nz) array,
    W/m²), contact_band m, contact_conductance W/(m²K) or None, sample spacing m or None, bounds °C, ignore (body
    names), where (error prefix)."""

    name: str
    link: int
    grid_size: tuple[int, int, int]
    heat_generation: object
    contact_band: float
    contact_conductance: float | None
    sample_spacing: float | None
    bounds: tuple[float, float]
    ignore: tuple[str, ...]
    where: str


def dct_matrix(n: int) -> np.ndarray:
    """Orthonormal DCT-II matrix D (n, n): D[k, j] = sqrt(2/n)·cos(π k (2j + 1)/(2n)), row 0 scaled by 1/√2
    (SciPy ``dct(norm="ortho")``); Dᵀ is DCT-III, its exact inverse."""
    k = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    d = np.sqrt(2.0 / n) * np.cos(np.pi * k * (2 * j + 1) / (2 * n))
    d[0] /= np.sqrt(2.0)
    return d


def link_bounds(shapes, where: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Link-frame AABB of collision shapes (exact for primitives, vertices for meshes); errors for no shapes or a
    zero / infinite extent."""
    if not shapes:
        raise ConfigError(f"{where}.link: body {name!r} has no collision geometry; got no shapes; allowed: a link "
                          "with box, sphere, capsule, cylinder or mesh collision shapes")
    boxes = [s.body_aabb() for s in shapes]
    lo = np.min([b[0] for b in boxes], axis=0)
    hi = np.max([b[1] for b in boxes], axis=0)
    extent = hi - lo
    if not np.all(np.isfinite(extent)) or np.any(extent <= 0):
        raise ConfigError(f"{where}.link: the collision bounding box of {name!r} has a zero or infinite extent; "
                          f"got {extent.tolist()} m; allowed: finite extents > 0 on every axis")
    return lo, hi


def body_volume_area(body) -> tuple[float, float]:
    """(V m³, S m²) of a body as the sums over its shapes; meshes that are not watertight use their AABB box
    (with a warning). Infinite for a plane."""
    volume = area = 0.0
    for s in body.shapes:
        if s.kind == ShapeKind.MESH and not s.mesh.watertight:
            warnings.warn(f"thermal: mesh of body {body.name!r} is not watertight; its lumped volume and area use "
                          "the mesh bounding box", stacklevel=4)
            ext = s.mesh.vertices.max(0) - s.mesh.vertices.min(0)
            volume += float(np.prod(ext))
            area += 2.0 * float(ext[0] * ext[1] + ext[1] * ext[2] + ext[0] * ext[2])
        else:
            volume += s.volume
            area += s.area
    return volume, area


class ThermalSystem:
    """Grids and (optionally) lumped bodies of the scene, advanced together (see the module docstring).

    grids: the TemperatureGrid specs (one per link); materials: per scene body a :class:`Material` or None;
    ambient °C; convection W/(m²K); simulate_all: lumped bodies on; lumped_spacing m (named ``lumped_where`` in
    errors); dt s.
    Grids are kept in scene order of their links; ``grid_of_spec[i]`` is the system index of the i-th given spec.
    Public after build: ``n_cells`` (per grid), ``lo`` / ``delta`` (per grid (3,) arrays, link frame, m),
    ``cell_index`` (per grid: flat padded indices of its real cells, row-major over (nx, ny, nz)), ``lumped_names``.
    State: ``t_cell`` [E, Nc] and ``t_lump`` [E, NL], °C.
    """

    def __init__(self, grids: Sequence[GridSpec], materials: Sequence[Material | None], scene, query, *,
                 ambient: float, convection: float, simulate_all: bool, lumped_spacing: float, dt: float,
                 n_envs: int, device, dtype, lumped_where: str = "suite"):
        self.scene, self.query = scene, query
        self.dt, self.n_envs = float(dt), n_envs
        self.device, self.dtype = torch.device(device), dtype
        self.ambient, self.h = float(ambient), float(convection)
        self.simulate_all = simulate_all
        self.lumped_spacing, self.lumped_where = float(lumped_spacing), lumped_where
        order = sorted(range(len(grids)), key=lambda i: grids[i].link)  # scene order of the links
        self.grids = [grids[i] for i in order]
        self.grid_of_spec = [order.index(i) for i in range(len(grids))]
        self.materials = list(materials)
        f = dict(device=self.device, dtype=dtype)
        self._f = f
        nb = scene.n_bodies
        mat_ok = np.array([m is not None for m in materials])
        grid_of_body = np.full(nb, -1, np.int64)
        for g, spec in enumerate(self.grids):
            grid_of_body[spec.link] = g
        category = np.full(nb, FIXED, np.int64)
        self.lumped: list[int] = []
        volume = np.full(nb, np.inf)
        area = np.full(nb, np.inf)
        if simulate_all:
            for b, body in enumerate(scene.bodies):
                if grid_of_body[b] >= 0:
                    category[b] = GRIDDED
                elif mat_ok[b] and body.shapes and not any(s.kind == ShapeKind.PLANE for s in body.shapes):
                    category[b] = LUMPED
                    volume[b], area[b] = body_volume_area(body)
                    self.lumped.append(b)
        self.lumped_names = [scene.body_names[b] for b in self.lumped]
        lumped_index = np.full(nb, -1, np.int64)
        lumped_index[self.lumped] = np.arange(len(self.lumped))

        def body_column(key, default=0.0):
            return torch.as_tensor([getattr(m, key) if m is not None else default for m in materials], **f)

        self.body_mat = torch.as_tensor(mat_ok, **f)  # 1 for bodies with a material, else 0
        self.body_inv_k = 1.0 / body_column("conductivity", 1.0)  # 1/k_B, m·K/W
        self.body_base = body_column("base_temperature")
        self.body_category = torch.as_tensor(category, device=self.device)
        self.body_grid = torch.as_tensor(grid_of_body, device=self.device)
        self.body_lumped = torch.as_tensor(lumped_index, device=self.device)
        lumped_vs = np.zeros(nb)
        lumped_vs[self.lumped] = volume[self.lumped] / area[self.lumped]
        self.body_vs = torch.as_tensor(lumped_vs, **f)  # ℓ_B = V_B/S_B of a lumped partner, m
        self._build_grids()
        self._build_lumped(volume, area)
        self.t_cell = torch.zeros(n_envs, self.n_total, **f)
        self.t_lump = torch.zeros(n_envs, len(self.lumped), **f)
        self.reset()
        self._build_launches()

    # ------------------------------------------------------------------ build: grids
    def _build_grids(self) -> None:
        f, scene = self._f, self.scene
        dims = np.array([g.grid_size for g in self.grids], dtype=np.int64)
        nx, ny, nz = (int(v) for v in dims.max(0))
        self.pad = (nx, ny, nz)
        n_pad = nx * ny * nz
        n_grids = len(self.grids)
        self.n_total = n_grids * n_pad
        ic = np.zeros(self.n_total)
        power = np.zeros(self.n_total)
        face = np.zeros(self.n_total)
        eps = np.zeros(self.n_total)
        base = np.zeros(self.n_total)
        low = np.full(self.n_total, -np.inf)
        high = np.full(self.n_total, np.inf)
        decay = np.ones((n_grids, nx, ny, nz))
        mats = [np.stack([np.eye(n) for _ in range(n_grids)]) for n in self.pad]
        self.lo, self.delta, self.cell_index, self.n_cells = [], [], [], []
        samples, cell_of_sample, l_half, k_self, inv_hc, band, masks = [], [], [], [], [], [], []
        shape_body = np.array([b for b, _ in scene.shape_table()], dtype=np.int64)
        for g, spec in enumerate(self.grids):
            body = scene.bodies[spec.link]
            mat = link_material(self.materials, spec.link, body.name, spec.where)
            lo, hi = link_bounds(body.shapes, spec.where, body.name)
            n = np.array(spec.grid_size, dtype=np.int64)
            delta = (hi - lo) / n
            self.lo.append(lo)
            self.delta.append(delta)
            rc = mat.heat_capacity_density
            cap = rc * float(np.prod(delta))
            alpha = mat.conductivity / rc
            grid_idx = np.indices(tuple(n)).reshape(3, -1).T  # row-major (ix, iy, iz)
            flat = g * n_pad + (grid_idx[:, 0] * ny + grid_idx[:, 1]) * nz + grid_idx[:, 2]
            self.cell_index.append(torch.as_tensor(flat, device=self.device))
            self.n_cells.append(int(np.prod(n)))
            ic[flat] = 1.0 / cap
            q = 0.0 if spec.heat_generation is None else np.asarray(spec.heat_generation, dtype=np.float64)
            power[flat] = (np.broadcast_to(q, tuple(n)).reshape(-1)) * delta[0] * delta[1]
            areas = np.array([delta[1] * delta[2], delta[0] * delta[2], delta[0] * delta[1]])
            on_faces = sum(((grid_idx[:, a] == 0).astype(float) + (grid_idx[:, a] == n[a] - 1)) * areas[a]
                           for a in range(3))
            face[flat] = on_faces
            eps[flat] = mat.emissivity
            base[flat] = mat.base_temperature
            low[flat], high[flat] = spec.bounds
            lam = [4.0 / delta[a] ** 2 * np.sin(np.pi * np.arange(n[a]) / (2 * n[a])) ** 2 for a in range(3)]
            total = lam[0][:, None, None] + lam[1][None, :, None] + lam[2][None, None, :]
            decay[g, : n[0], : n[1], : n[2]] = 1.0 / (1.0 + self.dt * alpha * total)
            for a in range(3):
                mats[a][g, : n[a], : n[a]] = dct_matrix(int(n[a]))
            spacing = spec.sample_spacing if spec.sample_spacing is not None else float(delta.min()) / 4
            check_sample_spacing(body.shapes, spacing, spec.where, "contact_sample_spacing", body.name)
            cloud = sample_body_surface(body.shapes, spacing=spacing, seed=0)
            samples.append(cloud)
            cell = np.clip(np.floor((cloud.points - lo) / delta).astype(np.int64), 0, n - 1)
            cell_of_sample.append(g * n_pad + (cell[:, 0] * ny + cell[:, 1]) * nz + cell[:, 2])
            perp = (cloud.normals**2) @ delta  # Δ⊥(ν) = Σ ν_a² Δ_a
            l_half.append(perp / 2)
            hc = spec.contact_conductance
            inv_hc.append(np.full(len(cloud), 0.0 if hc is None else 1.0 / hc))
            band.append(np.full(len(cloud), spec.contact_band))
            k_self.append(np.full(len(cloud), mat.conductivity))
            cand = scene.candidate_mask(spec.link, list(spec.ignore), spec.where)
            masks.append(cand[shape_body])
        t = lambda a: torch.as_tensor(a, **f)  # noqa: E731
        self.ic_cell, self.power, self.face_area = t(ic), t(power), t(face)
        self.eps_cell, self.base_cell = t(eps), t(base)
        self.low_cell, self.high_cell = t(low), t(high)
        self.decay = t(decay)
        self.dct = [t(m) for m in mats]
        self.conduction_operator = None
        # M_g = Kᵀ diag(decay) K, K = Dx ⊗ Dy ⊗ Dz (flat order ix·ny·nz + iy·nz + iz)
        if n_pad <= DENSE_CONDUCTION_CELLS:
            ops = []
            for g in range(n_grids):
                k = np.kron(np.kron(mats[0][g], mats[1][g]), mats[2][g])
                ops.append(k.T @ (decay[g].reshape(-1, 1) * k))
            self.conduction_operator = t(np.stack(ops))
        self.samples = BodySamples([g.link for g in self.grids], samples, self.device, self.dtype)
        self.sample_cell = torch.as_tensor(np.concatenate(cell_of_sample), device=self.device)
        l_half = np.concatenate(l_half)
        k_s = np.concatenate(k_self)
        self.sample_l_fixed = t(l_half)  # ℓ_B of a fixed partner = ℓ_S
        self.sample_r_self = t(l_half / k_s)  # ℓ_S / k_S, m²K/W
        self.sample_inv_hc = t(np.concatenate(inv_hc))
        self.sample_band = t(np.concatenate(band))
        self.sample_group = self.samples.owner.to(torch.int32)
        self.group_mask = torch.as_tensor(np.stack(masks), device=self.device)
        self.grid_delta = t(np.stack(self.delta))  # [G, 3]
        self.grid_lo = t(np.stack(self.lo))
        self.grid_n = torch.as_tensor(np.array([g.grid_size for g in self.grids]), device=self.device)

    # ------------------------------------------------------------------ build: lumped bodies and pairs
    def _build_lumped(self, volume: np.ndarray, area: np.ndarray) -> None:
        f, scene = self._f, self.scene
        self.lumped_samples = None
        lumped = self.lumped
        n_l = len(lumped)
        first = self.grids[0]
        self.lumped_inv_hc = 0.0 if first.contact_conductance is None else 1.0 / first.contact_conductance
        self.lumped_band = first.contact_band
        self.lumped_low = min(g.bounds[0] for g in self.grids)
        self.lumped_high = max(g.bounds[1] for g in self.grids)
        mats = [self.materials[b] for b in lumped]
        self.lumped_ic = torch.as_tensor([1.0 / (m.heat_capacity_density * volume[b]) for m, b in zip(mats, lumped)],
                                         **f)
        self.lumped_area = torch.as_tensor([area[b] for b in lumped], **f)
        self.lumped_eps = torch.as_tensor([m.emissivity for m in mats], **f)
        self.lumped_base = torch.as_tensor([m.base_temperature for m in mats], **f)
        self.lumped_vs_k = torch.as_tensor([volume[b] / area[b] / m.conductivity for m, b in zip(mats, lumped)], **f)
        self.lumped_vs = torch.as_tensor([volume[b] / area[b] for b in lumped], **f)
        self.pairs: PairRelaxation | None = None  # built with the launches
        self._pair_runs = None
        if not self.simulate_all:
            return
        if n_l:
            shape_body = np.array([b for b, _ in scene.shape_table()], dtype=np.int64)
            for b in lumped:
                check_sample_spacing(scene.bodies[b].shapes, self.lumped_spacing, self.lumped_where,
                                     "lumped_sample_spacing", scene.bodies[b].name)
            clouds = [sample_body_surface(scene.bodies[b].shapes, spacing=self.lumped_spacing, seed=0)
                      for b in lumped]
            self.lumped_samples = BodySamples(lumped, clouds, self.device, self.dtype)
            self.lumped_mask = torch.as_tensor(np.stack([scene.candidate_mask(b)[shape_body] for b in lumped]),
                                               device=self.device)
            self.lumped_cutoff = torch.full((self.lumped_samples.n,), self.lumped_band, **f)
        # (cell, lumped) pairs: the cells that own samples, in flat order; (cell, cell): earlier-grid samples
        cells = self.sample_cell.cpu().numpy()
        self.surf_cells = np.unique(cells)
        self.sample_surf = torch.as_tensor(np.searchsorted(self.surf_cells, cells), device=self.device)
        order = np.lexsort((np.arange(len(cells)), cells))  # cell-major, then sample order
        self.pair_order = torch.as_tensor(order, device=self.device)
        slot = np.empty(len(order), np.int64)
        slot[order] = np.arange(len(order))
        self.pair_slot = torch.as_tensor(slot, device=self.device)  # position of each sample in pair order
        sorted_cells = cells[order]
        self._pair_runs = (sorted_cells, np.searchsorted(sorted_cells, sorted_cells, side="right"))

    # ------------------------------------------------------------------ state
    def reset(self, env_mask: torch.Tensor | None = None) -> None:
        """Every cell exactly its link's base temperature, lumped bodies theirs (envs of env_mask; None = all)."""
        if env_mask is None:
            self.t_cell.copy_(self.base_cell.expand_as(self.t_cell))
            self.t_lump.copy_(self.lumped_base.expand_as(self.t_lump))
        else:
            m = env_mask.to(self.device)[:, None]
            self.t_cell.copy_(torch.where(m, self.base_cell, self.t_cell))
            self.t_lump.copy_(torch.where(m, self.lumped_base, self.t_lump))

    # ------------------------------------------------------------------ build: kernels
    def _build_launches(self) -> None:
        """Per-step buffers and the recorded launches of :mod:`.kernels` (the contact launch binds the
        world state per step; the others only persistent tensors)."""
        f, dev, e = self._f, self.device, self.n_envs
        ints = lambda a: torch.as_tensor(np.asarray(a), device=dev).to(torch.int32).contiguous()  # noqa: E731
        n_samples = self.samples.n
        pairs = self._pair_runs is not None
        n_surf = len(self.surf_cells) if pairs else 1
        self.acc_cell = torch.zeros(e, self.n_total, 3, **f)  # covered area, G_fixed, Q_fixed per cell
        self.g_cl = torch.zeros(e, n_surf, max(len(self.lumped), 1), **f)
        self.cell_y = torch.full((e, n_samples if pairs else 1), -1, dtype=torch.int32, device=dev)
        self.g_cc = torch.zeros(e, n_samples if pairs else 1, **f)
        zeros = torch.zeros(n_samples, dtype=torch.int32, device=dev)
        model = {"area": self.samples.area, "local_normal": self.samples.local_normal,
                 "sample_cell": ints(self.sample_cell.cpu()), "sample_grid": self.sample_group,
                 "sample_surf": ints(self.sample_surf.cpu()) if pairs else zeros,
                 "pair_slot": ints(self.pair_slot.cpu()) if pairs else zeros,
                 "r_self": self.sample_r_self, "l_fixed": self.sample_l_fixed, "inv_hc": self.sample_inv_hc,
                 "body_mat": self.body_mat, "body_inv_k": self.body_inv_k, "body_base": self.body_base,
                 "body_vs": self.body_vs, "body_category": ints(self.body_category.cpu()),
                 "body_grid": ints(self.body_grid.cpu()), "body_lumped": ints(self.body_lumped.cpu()),
                 "grid_delta": self.grid_delta, "grid_lo": self.grid_lo, "grid_n": ints(self.grid_n.cpu()),
                 "pad": ints(self.pad), "dt": torch.full((1,), self.dt, **f), "acc": self.acc_cell, "g_cl": self.g_cl,
                 "cell_y": self.cell_y, "g_cc": self.g_cc}
        n_l = len(self.lumped)
        self.acc_lump = torch.zeros(e, n_l, 3, **f)  # covered area, G_fixed, Q_fixed per lumped body
        self.area_ll = torch.zeros(e, n_l, n_l, **f)  # area of X's samples within the band of Y
        if pairs:
            vs_k = self.lumped_vs_k
            u_ll_dt = self.dt / (vs_k[:, None] + vs_k[None, :] + self.lumped_inv_hc)
            self.pairs = PairRelaxation(self.ic_cell, self.lumped_ic, torch.as_tensor(self.surf_cells, device=dev),
                                        *(torch.as_tensor(a, device=dev) for a in self._pair_runs), self.t_cell,
                                        self.t_lump, self.g_cl, self.cell_y, self.g_cc, self.area_ll, u_ll_dt)
        cells = SampleCells(self.samples, self.group_mask, torch.zeros(len(self.grids), dtype=torch.bool, device=dev))
        kernel, call_type = CONTACT_KERNELS[self.dtype]
        self._contact_launch = FusedProbeLaunch(cells, self.query, e, kernel, call_type, self.sample_band, model)
        scalars = [self.h, self.ambient, self.dt]
        kernel, call_type = EXCHANGE_KERNELS[self.dtype]
        self._lump_exchange = self._lump_contact = None
        if self.lumped_samples is not None:
            self._lump_exchange = StructLaunch(kernel, (e, n_l), call_type, {
                "t": self.t_lump, "ic": self.lumped_ic, "eps": self.lumped_eps, "area": self.lumped_area,
                "power": torch.zeros(n_l, **f), "low": torch.full((n_l,), self.lumped_low, **f),
                "high": torch.full((n_l,), self.lumped_high, **f), "acc": self.acc_lump}, scalars, dev)
            smp = self.lumped_samples
            cells = SampleCells(smp, self.lumped_mask, torch.zeros(n_l, dtype=torch.bool, device=dev))
            model = {"sample_owner": smp.owner.to(torch.int32), "area": smp.area,
                     "body_category": ints(self.body_category.cpu()), "body_mat": self.body_mat,
                     "body_inv_k": self.body_inv_k, "body_base": self.body_base,
                     "body_lumped": ints(self.body_lumped.cpu()), "lumped_vs": self.lumped_vs,
                     "lumped_vs_k": self.lumped_vs_k, "inv_hc": torch.full((1,), self.lumped_inv_hc, **f),
                     "acc": self.acc_lump, "area_ll": self.area_ll}
            lumped_kernel, lumped_type = LUMPED_KERNELS[self.dtype]
            self._lump_contact = FusedProbeLaunch(cells, self.query, e, lumped_kernel, lumped_type,
                                                  self.lumped_cutoff, model)
        # A (+ C and E for dense grids) in one launch; with pairs, A and C + E around them
        kernel, call_type = CELL_KERNELS[self.dtype]
        dense = self.conduction_operator
        fields = {"t": self.t_cell, "ic": self.ic_cell, "eps": self.eps_cell, "area": self.face_area,
                  "power": self.power, "low": self.low_cell, "high": self.high_cell, "acc": self.acc_cell,
                  "scratch": torch.zeros_like(self.t_cell),
                  "dense": dense if dense is not None else torch.zeros(1, 1, 1, **f)}
        n_pad = self.n_total // len(self.grids)
        split = pairs or dense is None

        def cells(exchange_step: bool, conduct: bool) -> StructLaunch:
            return StructLaunch(kernel, (e, len(self.grids)), call_type, fields,
                                scalars + [n_pad, int(exchange_step), int(conduct)], dev)

        self._before_pairs = cells(True, not split)
        self._after_pairs = cells(False, True) if split and dense is not None else None

    # ------------------------------------------------------------------ step
    def step(self, state: WorldState) -> None:
        """Advance every temperature by dt with the poses of ``state`` (steps A–E), in place."""
        self._contact_launch(state)
        self._before_pairs()
        if self._lump_contact is not None:
            self._lump_contact(state)
        if self.pairs is not None:
            self.pairs()
        if self._after_pairs is not None:
            self._after_pairs()
        elif self.conduction_operator is None:
            self.t_cell.copy_(self._conduct(self.t_cell))
            torch.clamp(self.t_cell, self.low_cell, self.high_cell, out=self.t_cell)
        if self._lump_exchange is not None:
            self._lump_exchange()

    def _conduct(self, t: torch.Tensor) -> torch.Tensor:
        """Step C on the padded layout: DCT-II per axis, divide by 1 + dt α Λ, DCT-III per axis (grids larger than
        :data:`DENSE_CONDUCTION_CELLS`; smaller ones apply the same map as one dense operator in a kernel)."""
        e = t.shape[0]
        nx, ny, nz = self.pad
        x = t.view(e, len(self.grids), nx, ny, nz)
        dx, dy, dz = self.dct
        x = torch.einsum("gai,egijk->egajk", dx, x)
        x = torch.einsum("gbj,egajk->egabk", dy, x)
        x = torch.einsum("gck,egabk->egabc", dz, x)
        x = x * self.decay
        x = torch.einsum("gck,egabc->egabk", dz, x)
        x = torch.einsum("gbj,egabk->egajk", dy, x)
        x = torch.einsum("gai,egajk->egijk", dx, x)
        return x.reshape(e, -1)

    # ------------------------------------------------------------------ views
    def grid_temperatures(self, g: int, t: torch.Tensor | None = None) -> torch.Tensor:
        """Real cells of grid g (system order) from a flat padded tensor [E, Nc] (default the state): [E, n_cells]."""
        return (self.t_cell if t is None else t).index_select(1, self.cell_index[g])
