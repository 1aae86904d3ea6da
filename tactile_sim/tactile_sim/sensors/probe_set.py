"""The probes of several sensors of one class, concatenated into one batch.

Layouts are flattened row-major and concatenated in sensor order; every per-probe quantity is a tensor ``[P]`` or
``[P, 3]`` (P = total probes of the batch), and ``sensor_of_probe[P]`` / ``slices`` map back to the sensors. World
positions and link motion are computed for all probes at once (one path for a batch whose sensors share one link,
a gather path otherwise), so the per-step Python work does not grow with the number of sensors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ..geometry.query import QueryResult, ShapeQuery
from ..world.state import WorldState
from .layout import ProbeLayout


@dataclass(frozen=True)
class ProbeSensorGeometry:
    """What the probe set needs of one sensor: its link (body index), layout and candidate/tracked shapes.

    shape_mask: [S] bool over the scene's shape table — the shapes this sensor may sense.
    exact: mesh backend (True = BVH closest triangle, False = SDF grid).
    """

    link: int
    layout: ProbeLayout
    shape_mask: np.ndarray
    exact: bool = False


class ProbeSet:
    """Concatenated probe layouts of a batch.

    local_pos [P, 3] m (link frame), radius [P] m (0 = filler), local_normal [P, 3] (unit, link frame),
    active [P] bool, link_of_probe [P] long (body index), sensor_of_probe [P] long, slices: per sensor (start, stop).
    """

    def __init__(self, sensors: Sequence[ProbeSensorGeometry], query: ShapeQuery, device, dtype):
        self.query_engine = query
        self.device, self.dtype = device, dtype
        counts = [s.layout.n for s in sensors]
        starts = np.concatenate([[0], np.cumsum(counts)])
        self.slices = [(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]
        self.layouts = [s.layout for s in sensors]
        self.n = int(starts[-1])

        def cat(arrays):
            return torch.as_tensor(np.concatenate(arrays, axis=0), device=device, dtype=dtype)

        self.local_pos = cat([s.layout.flat_positions for s in sensors])
        self.radius = cat([s.layout.flat_radius for s in sensors])
        self.local_normal = cat([s.layout.flat_normals for s in sensors])
        self.active = torch.as_tensor(np.concatenate([s.layout.active for s in sensors]), device=device)
        self.sensor_of_probe = torch.as_tensor(np.repeat(np.arange(len(sensors)), counts), device=device)
        links = np.array([s.link for s in sensors])
        self.link_of_probe = torch.as_tensor(np.repeat(links, counts), device=device)
        self.single_link = int(links[0]) if np.all(links == links[0]) else None
        self.group_shape_mask = torch.as_tensor(np.stack([s.shape_mask for s in sensors]), device=device)
        self.group_exact = torch.as_tensor(np.array([s.exact for s in sensors]), device=device)

    # ------------------------------------------------------------------ per-probe link motion
    def at_probes(self, t: torch.Tensor) -> torch.Tensor:
        """Select the probe's link from a per-body tensor ``[E, B, ...]`` → ``[E, P or 1, ...]``."""
        if self.single_link is not None:
            return t[:, self.single_link : self.single_link + 1]
        return t.index_select(1, self.link_of_probe)

    def link_pose(self, state: WorldState) -> tuple[torch.Tensor, torch.Tensor]:
        """Link rotation ``[E, P|1, 3, 3]`` and origin ``[E, P|1, 3]`` of every probe (world frame)."""
        return self.at_probes(state.rot), self.at_probes(state.pos)

    def world_positions(self, rot: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """Probe centres x_i = R_L p_i + o_L in W, ``[E, P, 3]`` m."""
        if rot.shape[1] == 1:
            return torch.matmul(self.local_pos, rot[:, 0].transpose(-1, -2)) + pos
        return torch.matmul(rot, self.local_pos[:, :, None])[..., 0] + pos

    def to_link_frame(self, rot: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Rotate world vectors ``[..., E, P, 3]`` into each probe's link frame: R_Lᵀ v (leading dims broadcast)."""
        if rot.shape[1] == 1:
            return torch.matmul(v, rot[:, 0])
        return torch.matmul(v.unsqueeze(-2), rot).squeeze(-2)

    def to_world_frame(self, rot: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Rotate link-frame vectors ``[P, 3]`` into W: R_L v → ``[E, P, 3]``."""
        if rot.shape[1] == 1:
            return torch.matmul(v, rot[:, 0].transpose(-1, -2))
        return torch.matmul(rot, v[:, :, None])[..., 0]

    def query(self, x: torch.Tensor, state: WorldState, cutoff: torch.Tensor, unsigned: bool = False) -> QueryResult:
        """Nearest candidate geometry of every probe (spec §3: sd*, c*, O, n), culled beyond ``cutoff`` [P]."""
        return self.query_engine.query(
            x, state.rot, state.pos, self.sensor_of_probe, self.group_shape_mask, cutoff,
            group_exact=self.group_exact, unsigned=unsigned,
        )
