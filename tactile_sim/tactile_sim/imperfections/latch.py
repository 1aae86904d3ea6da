"""ContactProbe Schmitt trigger (docs/models/contact_probe.md#model): signed overlap with its floor, and the per-branch
latch."""

from __future__ import annotations

import torch

from ..constants import X_FLOOR_MARGIN


def overlap_floor(release_threshold: torch.Tensor) -> torch.Tensor:
    """x_floor per probe, m: 0 where release_threshold ≥ 0, else release_threshold − 1e-3 m. Shape as the input."""
    return torch.where(release_threshold >= 0, torch.zeros_like(release_threshold), release_threshold - X_FLOOR_MARGIN)


def signed_overlap(overlap: torch.Tensor, floor: torch.Tensor) -> torch.Tensor:
    """x = max(overlap, x_floor), m. overlap: [E, P] = g·(R − sd*) (unclamped; g = 1, R nominal on the GT branch);
    floor: [P] from :func:`overlap_floor`. The gain scales the overlap, never the floor."""
    return torch.maximum(overlap, floor)


class SchmittLatch:
    """One branch's latch: on_k = (x_k > contact) OR (on_{k−1} AND x_k > release), strict >; state [E, P] bool.

    contact_threshold, release_threshold: [P] m (one value per probe of the batch; release ≤ contact);
    active: [P] bool (fillers always read False). Reset clears the state of the chosen envs.
    """

    def __init__(
        self, contact_threshold: torch.Tensor, release_threshold: torch.Tensor, active: torch.Tensor, n_envs: int
    ):
        self.contact = contact_threshold
        self.release = release_threshold
        self.active = active.to(torch.bool)
        shape = (n_envs, contact_threshold.shape[0])
        self.state = torch.zeros(shape, dtype=torch.bool, device=contact_threshold.device)

    def update(self, x: torch.Tensor) -> torch.Tensor:
        """x: [E, P] signed overlap after the hardware stages (m) → on: [E, P] bool (also stored as the new state,
        in place: the branch kernel of :class:`~.pipeline.MeasuredBranch` binds the state buffer)."""
        on = (x > self.contact) | (self.state & (x > self.release))
        on &= self.active
        self.state.copy_(on)
        return on

    def reset(self, env_mask: torch.Tensor | None = None) -> None:
        """Clear the latch (False) for the envs of env_mask ([E] bool; None = all)."""
        if env_mask is None:
            self.state.zero_()
        else:
            self.state.masked_fill_(env_mask[:, None], False)
