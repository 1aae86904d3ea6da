"""SurfaceDistanceProbe (spec §9): unsigned distance from each probe to the nearest tracked surface, capped.

    d_i = min(R_i, min over tracked shapes c of |sd_c(x_i)|)          (measured: cap R̃_i)
    nearest_i = closest surface point of the minimising shape if that minimum < cap, else x_i      (world frame)

Distances are always exact (analytic primitives, BVH closest triangle for meshes); a probe inside a body reports
the distance to its surface; ties go to scene order. The batch carries four channels per probe — the distance and
the nearest point — through one measured branch, so ``nearest_points`` comes from the same evaluation (same delay,
jitter sample and history slots) as ``read()``; noise, bias, random walk and quantisation act on the distance only.
``read()`` → ``[E, (H,) *layout]`` m; nearest points → ``[E, (H,) *layout, 3]`` m (world frame).
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import torch

from ..imperfections.spec import PER_CHANNEL_OPTIONS, SensorImperfections
from ..world.state import WorldState
from .base import imperfections_of
from .probe_sensor import ProbeSensorBatch
from .probe_set import ProbeSensorGeometry
from .tracked_cloud import tracked_shape_mask


def _distance_channel_only(value, n: int):
    """A per-channel option of the scalar distance output as one for the 4-channel batch (0 on the point channels;
    flat channel-major order of :meth:`SensorImperfections.per_channel` for K = 4)."""
    if not isinstance(value, np.ndarray) and value == 0:
        return 0.0
    return np.concatenate([np.broadcast_to(np.asarray(value, np.float64), (n,)), np.zeros(3 * n)])


class SurfaceDistanceProbeBatch(ProbeSensorBatch):
    """Capped exact distances to the tracked bodies, with the nearest points (channels: distance, x, y, z)."""

    sensor_type = "SurfaceDistanceProbe"
    channels = 4

    def probe_geometry(self, options, layout) -> ProbeSensorGeometry:
        link = self.ctx.scene.body_index(options.link)
        return ProbeSensorGeometry(link, layout, tracked_shape_mask(self.ctx.scene, options.track), exact=True)

    def imperfection_spec(self, options, layout) -> SensorImperfections:
        # validate against the public scalar output (flat arrays of one value per probe), then widen to 4 channels
        spec = imperfections_of(options, self.ctx, n=layout.n, channels=1, layout_shape=layout.shape,
                                active=layout.active, grid=layout.grid)
        widened = {key: _distance_channel_only(getattr(spec, key), layout.n) for key in PER_CHANNEL_OPTIONS}
        with warnings.catch_warnings():  # the delay warning was already given once above
            warnings.simplefilter("ignore")
            return dataclasses.replace(spec, channels=self.channels, **widened)

    def evaluate(self, state: WorldState) -> None:
        probes = self.probes
        rot, pos = probes.link_pose(state)
        x = probes.world_positions(rot, pos)
        q = probes.query(x, state, self.cutoff, unsigned=True)
        cap = torch.stack([probes.radius.expand_as(q.sd), self.branch.radius(probes.radius)])   # [2, E, P]
        found = q.sd < cap
        distance = torch.where(found, q.sd, cap)
        nearest = torch.where(found[..., None], q.closest, x)
        out = torch.cat([distance[..., None], nearest], dim=-1)
        self.branch.push(self.branch.hardware(self.branch.transform(out[1])), out[0])

    def output(self, value: torch.Tensor) -> torch.Tensor:
        return value[..., 0].contiguous()

    def read_nearest_points(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Nearest points of sensor i's measured read (world frame, m) and its validity, as :meth:`read`."""
        value, valid = self.branch.read(i)
        return value[..., 1:].contiguous(), valid

    def read_nearest_points_ground_truth(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Nearest points of sensor i's ground truth (world frame, m) and its validity."""
        value, valid = self.branch.read_ground_truth(i)
        return value[..., 1:].contiguous(), valid
