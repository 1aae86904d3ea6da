"""ElastomerTaxel (spec §7): marker displacement field of a soft gel skin, link frame, ``[E, (H,) *layout, 3]``.

Per step, for the batch's sensors together:

1. indentation depth H_i = max(0, −min over tracked shapes of sd(x_i)) at every active probe centre (7.1), and the
   signed distance of every tracked sample to the sensor link's own shapes (7.5) — one fused shape query;
2. dilation u_dil (7.3–7.4, :mod:`.elastomer_dilation`: FFT path on regular planar grids with a shared normal,
   direct path otherwise);
3. shear s (7.5, :mod:`.elastomer_shear`) when any sensor has ``shear_scale`` > 0;
4. u = u_dil + s is the ground truth; measured = hysteresis(u) × probe gain → hardware stages (§13.2).

The probe radius marks fillers only (they read 0 and are no sources). Each sensor's tracked cloud is exposed through
:meth:`ElastomerTaxelBatch.point_cloud`.
"""

from __future__ import annotations

import numpy as np
import torch

from ..geometry.query import QueryResult
from ..world.state import WorldState
from .elastomer_dilation import DilationField, DilationParameters
from .elastomer_shear import ShearAnchors
from .probe_sensor import ProbeSensorBatch
from .probe_set import ProbeSensorGeometry
from .tracked_cloud import PointCloud, TrackedClouds, sample_tracked_cloud, tracked_shape_mask


class ElastomerTaxelBatch(ProbeSensorBatch):
    """Gel-skin marker displacement of the batch's sensors (3 channels per probe)."""

    sensor_type = "ElastomerTaxel"
    channels = 3

    def probe_geometry(self, options, layout) -> ProbeSensorGeometry:
        link = self.ctx.scene.body_index(options.link)
        return ProbeSensorGeometry(link, layout, tracked_shape_mask(self.ctx.scene, options.track),
                                   exact=options.contact_depth_query != "sdf")

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        opts, probes, scene = self.options, self.probes, ctx.scene
        e, p, dev, dt = ctx.n_envs, probes.n, ctx.device, ctx.dtype
        self.clouds = [sample_tracked_cloud(scene, o, ctx.where.get(o.name, o.where), require_collision=True)
                       for o in opts]
        eps0 = [ctx.layouts[o.name].epsilon0() for o in opts]
        # depth of the probe centre only: distances ≥ 0 are never needed; fillers never query
        self.cutoff = torch.where(probes.active, torch.zeros_like(probes.radius),
                                  torch.full_like(probes.radius, -torch.inf)).contiguous()
        self.exponent = torch.as_tensor(np.repeat([o.normal_exponent for o in opts], self.counts), device=dev,
                                        dtype=dt)
        self.square = bool((self.exponent == 2).all())
        self.depth = torch.zeros((e, p), device=dev, dtype=dt)
        self.depth_p = torch.zeros((e, p), device=dev, dtype=dt)
        self.field = torch.zeros((e, p, 3), device=dev, dtype=dt)
        starts = [a for a, _ in probes.slices]
        self.dilation = DilationField(
            [ctx.layouts[o.name] for o in opts], starts,
            [DilationParameters(o.lambda_d, o.compressibility, eps, o.elastomer_thickness, o.dilate_scale,
                                o.normal_exponent) for o, eps in zip(opts, eps0)],
            probes.local_pos, probes.local_normal, self.field, [ctx.where.get(o.name, o.where) for o in opts])
        # one fused query: probes (groups 0..S−1: tracked shapes, cutoff 0) and, with shear, the tracked samples
        # (groups S..2S−1: the sensor link's own shapes, no cutoff)
        self.groups, self.group_mask, self.group_exact = probes.sensor_of_probe, probes.group_shape_mask, \
            probes.group_exact
        self.query_cutoff = self.cutoff
        self.shear = None
        n = 0
        with_shear = any(o.shear_scale > 0 for o in opts)
        if with_shear:
            n = sum(len(c) for c in self.clouds)
            links = [scene.body_index(o.link) for o in opts]
            self.points = torch.zeros((e, p + n, 3), device=dev, dtype=dt)
            self.tracked = TrackedClouds(self.clouds, links, e, scene.n_bodies, dev, dt, world=self.points, offset=p)
            own = np.stack([ctx.query.body_shape_mask([link]).cpu().numpy() for link in links])
            self.groups = torch.cat([probes.sensor_of_probe, self.tracked.sensor_of_sample + len(opts)]).to(torch.int32)
            self.group_mask = torch.cat([probes.group_shape_mask, torch.as_tensor(own, device=dev)])
            self.group_exact = torch.cat([probes.group_exact, probes.group_exact])
            self.query_cutoff = torch.cat([self.cutoff, torch.full((n,), torch.inf, device=dev, dtype=dt)])
        self.result = QueryResult(*(torch.zeros((e, p + n) + tail, device=dev, dtype=kind) for tail, kind in (
            ((), dt), ((3,), dt), ((3,), dt), ((), torch.int32), ((), torch.int64))))
        if with_shear:
            self.shear = ShearAnchors(
                self.tracked, self.result.sd, p, [ctx.layouts[o.name] for o in opts], starts,
                [o.shear_scale for o in opts], [v * v for v in eps0], [o.lambda_s for o in opts],
                [o.contact_threshold for o in opts], [o.release_threshold for o in opts])

    def point_cloud(self, i: int) -> PointCloud:
        """The tracked cloud of sensor i (body frames, read-only)."""
        return self.clouds[i]

    def evaluate(self, state: WorldState) -> None:
        probes, p = self.probes, self.probes.n
        rot, pos = probes.link_pose(state)
        x = probes.world_positions(rot, pos)
        if self.shear is not None:
            self.tracked.pose(state)
            self.points[:, :p] = x
            x = self.points
        self.ctx.query.query(x, state.rot, state.pos, self.groups, self.group_mask, self.query_cutoff,
                             group_exact=self.group_exact, out=self.result)
        torch.clamp(self.result.sd[:, :p].neg(), min=0.0, out=self.depth)
        if self.square:
            torch.mul(self.depth, self.depth, out=self.depth_p)
        else:
            torch.pow(self.depth, self.exponent, out=self.depth_p)
        self.dilation(self.depth, self.depth_p)
        if self.shear is not None:
            self.shear(self.field)
        measured = self.branch.transform(self.field) * self.branch.gain[..., None]
        self.branch.push(self.branch.hardware(measured), self.field)

    def reset(self, env_mask) -> None:
        super().reset(env_mask)
        if self.shear is not None:
            self.shear.reset(env_mask)
