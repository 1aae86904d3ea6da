"""Surface samples fixed on bodies (spec §2.5), concatenated over several owners and posed in one batched step.

Used by the sensors that integrate over their own body's collision surface (ContactSensor, TemperatureGrid and the
lumped bodies of the thermal system). An *owner* is one sampled body; its samples are contiguous, owners in the
order given. World positions are computed for all owners at once through a padded [O, K_max] layout, so the step
cost has no Python loop over owners or samples.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..geometry.sampling import SurfaceSamples
from ..world.state import WorldState


class BodySamples:
    """Samples of O owner bodies.

    local_pos [P, 3] m and local_normal [P, 3] (outward unit) in the owner's body frame; area [P] m²;
    owner [P] long (0..O−1); body [P] long (scene body index of the owner); owner_body [O] long;
    slices: per owner (start, stop); counts: per owner.
    """

    def __init__(self, owner_bodies: Sequence[int], clouds: Sequence[SurfaceSamples], device, dtype):
        if len(owner_bodies) != len(clouds) or not clouds:
            raise ValueError(f"BodySamples: one cloud per owner body is needed; got {len(owner_bodies)} bodies and "
                             f"{len(clouds)} clouds")
        self.device, self.dtype = torch.device(device), dtype
        counts = [len(c) for c in clouds]
        self.counts = counts
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.slices = [(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]
        self.n = int(starts[-1])
        self.n_owners = len(clouds)
        f = dict(device=self.device, dtype=dtype)
        self.local_pos = torch.as_tensor(np.concatenate([c.points for c in clouds]).reshape(-1, 3), **f)
        self.local_normal = torch.as_tensor(np.concatenate([c.normals for c in clouds]).reshape(-1, 3), **f)
        self.area = torch.as_tensor(np.concatenate([c.areas for c in clouds]), **f)
        self.owner = torch.as_tensor(np.repeat(np.arange(len(clouds)), counts), device=self.device)
        self.owner_body = torch.as_tensor(np.asarray(owner_bodies, dtype=np.int64), device=self.device)
        self.body = self.owner_body[self.owner]
        # padded layout [O, K_max] and the flat positions of the real samples in it
        k_max = max(counts)
        self._k_max = k_max
        flat = np.concatenate([o * k_max + np.arange(c) for o, c in enumerate(counts)]).astype(np.int64)
        self._dense = bool(flat.size == len(counts) * k_max)
        self._flat = torch.as_tensor(flat, device=self.device)
        pad_pos = torch.zeros(len(counts), k_max, 3, **f)
        pad_nrm = torch.zeros(len(counts), k_max, 3, **f)
        pad_pos.view(-1, 3)[self._flat] = self.local_pos
        pad_nrm.view(-1, 3)[self._flat] = self.local_normal
        self._pad_pos, self._pad_nrm = pad_pos, pad_nrm

    def owner_pose(self, state: WorldState) -> tuple[torch.Tensor, torch.Tensor]:
        """Owner rotations [E, O, 3, 3] and origins [E, O, 3] (W)."""
        return state.rot.index_select(1, self.owner_body), state.pos.index_select(1, self.owner_body)

    def _unpad(self, x: torch.Tensor) -> torch.Tensor:
        e = x.shape[0]
        x = x.reshape(e, -1, 3)
        return x if self._dense else x.index_select(1, self._flat)

    def world_positions(self, rot: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """Sample positions x = R_o p + o_o in W, [E, P, 3] m (rot/pos from :meth:`owner_pose`)."""
        x = torch.einsum("okj,eoij->eoki", self._pad_pos, rot) + pos[:, :, None, :]
        return self._unpad(x)

    def world_normals(self, rot: torch.Tensor) -> torch.Tensor:
        """Outward sample normals R_o ν in W, [E, P, 3]."""
        return self._unpad(torch.einsum("okj,eoij->eoki", self._pad_nrm, rot))

    def per_sample(self, per_owner: torch.Tensor) -> torch.Tensor:
        """Expand a per-owner tensor [E, O, ...] to the samples [E, P, ...]."""
        return per_owner.index_select(1, self.owner)
