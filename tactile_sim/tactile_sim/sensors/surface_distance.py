"""SurfaceDistanceProbe (docs/models/surface_distance_probe.md#model): unsigned distance from each probe to the nearest
tracked surface, capped.

    d_i = min(R_i, min over tracked shapes c of |sd_c(x_i)|)          (measured: cap R̃_i)
    nearest_i = closest surface point of the minimising shape if that minimum < cap, else x_i      (world frame)

Distances are always exact (analytic primitives, BVH closest triangle for meshes); a probe inside a body reports
the distance to its surface; ties go to scene order. The batch carries four channels per probe — the distance and
the nearest point — through one measured branch, so ``nearest_points`` comes from the same evaluation (same delay,
jitter sample and history slots) as ``read()``; noise, bias, random walk and quantisation act on the distance only.
``read()`` → ``[E, (H,) *layout]`` m; nearest points → ``[E, (H,) *layout, 3]`` m (world frame).

One warp kernel per evaluation places the probes in the world, finds their nearest tracked shape
(:func:`~..geometry.query.nearest_shape`, unsigned) and writes both branches — (d, nearest) capped at R and at R̃ —
straight into the measured branch's staging buffers.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
import torch
import warp as wp

from ..geometry.query import POINTS_PER_CPU_THREAD, nearest_shape, tables_type
from ..geometry.struct_launch import warp_struct
from ..geometry.warp_kernels import unique_kernel
from ..imperfections.spec import PER_CHANNEL_OPTIONS, SensorImperfections
from ..world.state import WorldState
from .base import imperfections_of
from .points.probe_sensor import ProbeSensorBatch
from .points.probe_set import WP_TYPES, ProbeSensorGeometry
from .points.tracked_cloud import tracked_shape_mask
from .warp_launch import SlotLaunches, bind_state


def _distance_channel_only(value, n: int):
    """A per-channel option of the scalar distance output as one for the 4-channel batch (0 on the point channels;
    flat channel-major order of :meth:`SensorImperfections.per_channel` for K = 4)."""
    if not isinstance(value, np.ndarray) and value == 0:
        return 0.0
    return np.concatenate([np.broadcast_to(np.asarray(value, np.float64), (n,)), np.zeros(3 * n)])


@wp.func
def _capped(out: Any, sd: Any, closest: Any, x: Any, cap: Any):
    """(d, nearest) of one branch, as ``out``'s 4-vector type: the query's (|sd|, closest) if |sd| < cap, else
    (cap, x)."""
    if sd < cap:
        return type(out)(sd, closest[0], closest[1], closest[2])
    return type(out)(cap, x[0], x[1], x[2])


def _distance_kernel(dtype: torch.dtype):
    """(kernel, call struct type) of the fused distance kernel over (E, runs of ``points_per_thread`` probes)."""
    f, v, m = WP_TYPES[dtype]
    i32, v4 = wp.array(dtype=wp.int32), wp.array2d(dtype=wp.types.vector(4, f))
    name = f"SurfaceDistanceCall_{f.__name__}"
    call_type = warp_struct(name, {
        "local_pos": wp.array(dtype=v), "link_of_probe": i32, "group_of_probe": i32, "cutoff": wp.array(dtype=f),
        "radius": wp.array(dtype=f), "radius_measured": wp.array2d(dtype=f),
        "group_shape_mask": wp.array2d(dtype=wp.bool), "group_exact": wp.array(dtype=wp.bool),
        "body_rot": wp.array2d(dtype=m), "body_pos": wp.array2d(dtype=v), "world_rot": wp.array2d(dtype=m),
        "world_pos": wp.array2d(dtype=v), "world_center": wp.array2d(dtype=v), "ground_truth": v4,
        "measured": v4}, __name__)

    def kernel(call: Any, tables: Any, points_per_thread: int):
        e, t = wp.tid()
        first = t * points_per_thread
        for i in range(first, wp.min(first + points_per_thread, call.local_pos.shape[0])):
            link = call.link_of_probe[i]
            x = call.body_rot[e, link] @ call.local_pos[i] + call.body_pos[e, link]
            g = call.group_of_probe[i]
            sd, s, normal, closest = nearest_shape(x, e, g, call.cutoff[i], call.group_exact[g], 1,
                                                   call.group_shape_mask, call.world_rot, call.world_pos,
                                                   call.world_center, tables)
            call.ground_truth[e, i] = _capped(call.ground_truth[e, i], sd, closest, x, call.radius[i])
            call.measured[e, i] = _capped(call.measured[e, i], sd, closest, x, call.radius_measured[e, i])

    kernel.__name__ = f"surface_distance_{f.__name__}"
    kernel.__annotations__ = {"call": call_type, "tables": tables_type(dtype), "points_per_thread": int}
    return unique_kernel(kernel), call_type


_KERNELS = {dt: _distance_kernel(dt) for dt in WP_TYPES}


class SurfaceDistanceProbeBatch(ProbeSensorBatch):
    """Capped exact distances to the tracked bodies, with the nearest points (channels: distance, x, y, z)."""

    sensor_type = "SurfaceDistanceProbe"
    channels = 4
    kernel_tables = (_KERNELS,)

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

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        probes, query = self.probes, ctx.query
        # R̃ [E, P]: redrawn per evaluation only when a sensor has radius noise
        self.radius_measured = self.branch.radius(probes.radius).contiguous()
        kernel, call_type = _KERNELS[ctx.dtype]
        per_thread = POINTS_PER_CPU_THREAD if torch.device(ctx.device).type == "cpu" else 1
        poses = query.pose_buffers(ctx.n_envs)
        fields = {"local_pos": probes.local_pos, "link_of_probe": probes.link_of_probe.to(torch.int32),
                  "group_of_probe": probes.sensor_of_probe.to(torch.int32), "cutoff": self.cutoff,
                  "radius": probes.radius, "radius_measured": self.radius_measured,
                  "group_shape_mask": probes.group_shape_mask, "group_exact": probes.group_exact,
                  "body_rot": torch.zeros(ctx.n_envs, ctx.scene.n_bodies, 3, 3, dtype=ctx.dtype, device=ctx.device),
                  "body_pos": torch.zeros(ctx.n_envs, ctx.scene.n_bodies, 3, dtype=ctx.dtype, device=ctx.device),
                  "world_rot": poses.rot, "world_pos": poses.pos, "world_center": poses.cull_center}
        self.launches = SlotLaunches(kernel, (ctx.n_envs, -(-probes.n // per_thread)), call_type, fields,
                                     [query.tables, per_thread], ctx.device, outputs=("measured", "ground_truth"))

    def evaluate(self, state: WorldState) -> None:
        self.draw_radius()
        branch = self.branch
        self.ctx.query.world_poses(state.rot, state.pos)
        launch = self.launches.select(branch.staging())
        bind_state(launch, state)
        launch()
        branch.push_staged()

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

