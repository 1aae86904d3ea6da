"""ContactDepthProbe (spec §4) and ContactProbe (spec §5).

ContactDepthProbe: depth_i = max(0, R_i − sd*_i) (ground truth); g_i·max(0, R̃_i − sd*_i) (measured), metres.
ContactProbe: the signed overlap x = max(g(R̃ − sd*), x_floor) through a Schmitt trigger, per branch; bool.
Outputs ``[E, (H,) *layout]`` in the sensor's layout shape.
"""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from ..imperfections.latch import SchmittLatch, overlap_floor
from ..world.state import WorldState
from .probe_sensor import FusedProbeBatch, ProbeSensorBatch, per_probe
from .probe_set import WP_TYPES, probe_kernel, probe_struct


@wp.func
def _depth(call: Any, tables: Any, e: int, i: int, x: Any, sd: Any, shape: int, normal: Any, link: int,
           link_rot: Any, link_pos: Any):
    """Both branches' depth of probe i (env e) whose nearest shape is at signed distance sd."""
    zero = type(sd)(0.0)
    call.ground_truth[e, i, 0] = wp.max(call.radius[i] - sd, zero)
    call.measured[e, i, 0] = wp.max(call.radius_measured[e, i] - sd, zero) * call.gain[e, i]


def _depth_kernel(dtype: torch.dtype):
    f = WP_TYPES[dtype][0]
    call_type = probe_struct(f"DepthProbeCall_{f.__name__}", dtype, {
        "radius": wp.array(dtype=f), "radius_measured": wp.array2d(dtype=f), "gain": wp.array2d(dtype=f),
        "ground_truth": wp.array3d(dtype=f), "measured": wp.array3d(dtype=f)})
    return probe_kernel(f"contact_depth_probe_{f.__name__}", call_type, dtype, _depth), call_type


_DEPTH_KERNELS = {dt: _depth_kernel(dt) for dt in WP_TYPES}


class ContactDepthProbeBatch(FusedProbeBatch):
    """Per-probe overlap depth of the sensing sphere with the nearest candidate geometry, m.

    One fused kernel per evaluation writes both branches into the measured branch's staging buffers (probes out of
    reach keep the zeros written before the launch); the hardware stages then run in place.
    """

    sensor_type = "ContactDepthProbe"
    kernels = _DEPTH_KERNELS


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
