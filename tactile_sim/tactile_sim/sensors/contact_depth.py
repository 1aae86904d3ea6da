"""ContactDepthProbe (spec §4) and ContactProbe (spec §5).

ContactDepthProbe: depth_i = max(0, R_i − sd*_i) (ground truth); g_i·max(0, R̃_i − sd*_i) (measured), metres.
ContactProbe: the signed overlap x = max(g(R̃ − sd*), x_floor) through a Schmitt trigger, per branch; bool.
Outputs ``[E, (H,) *layout]`` in the sensor's layout shape.
"""

from __future__ import annotations

import torch

from ..imperfections.latch import SchmittLatch, overlap_floor
from ..world.state import WorldState
from .probe_sensor import ProbeSensorBatch, per_probe


class ContactDepthProbeBatch(ProbeSensorBatch):
    """Per-probe overlap depth of the sensing sphere with the nearest candidate geometry, m."""

    sensor_type = "ContactDepthProbe"

    def evaluate(self, state: WorldState) -> None:
        sd = self.geometry(state)[3].sd
        radius = self.probes.radius
        gt = torch.clamp_min(radius - sd, 0.0)
        measured = torch.clamp_min(self.branch.radius(radius) - sd, 0.0).mul_(self.branch.gain)
        y = self.branch.hardware(self.branch.transform(measured[..., None]))
        self.branch.push(y, gt[..., None])


class ContactProbeBatch(ProbeSensorBatch):
    """Per-probe contact flag: Schmitt trigger on the signed overlap (separate contact / release thresholds)."""

    sensor_type = "ContactProbe"

    def __init__(self, options, ctx):
        counts = [ctx.layouts[o.name].n for o in options]
        self.contact_threshold = per_probe(options, counts, "contact_threshold", ctx)
        self.release_threshold = per_probe(options, counts, "release_threshold", ctx)
        self.floor = overlap_floor(self.release_threshold)
        super().__init__(options, ctx)
        self.latch_gt = SchmittLatch(self.contact_threshold, self.release_threshold, self.probes.active, ctx.n_envs)
        self.latch_measured = SchmittLatch(self.contact_threshold, self.release_threshold, self.probes.active,
                                           ctx.n_envs)

    def extra_reach(self):
        # x = g(R̃ − sd) stays above a negative floor (and can still hold the latch) up to sd = R̃ − floor/g
        return -self.floor / self.min_gain()

    def evaluate(self, state: WorldState) -> None:
        sd = self.geometry(state)[3].sd
        radius = self.probes.radius
        x_gt = torch.maximum(radius - sd, self.floor)
        x_measured = torch.maximum((self.branch.radius(radius) - sd).mul_(self.branch.gain), self.floor)
        y = self.branch.hardware(self.branch.transform(x_measured[..., None]))[..., 0]
        on_measured = self.latch_measured.update(y)
        on_gt = self.latch_gt.update(x_gt)
        self.branch.push(on_measured[..., None].to(sd.dtype), on_gt[..., None].to(sd.dtype))

    def output(self, value: torch.Tensor) -> torch.Tensor:
        return value > 0.5

    def reset(self, env_mask):
        super().reset(env_mask)
        self.latch_gt.reset(env_mask)
        self.latch_measured.reset(env_mask)
