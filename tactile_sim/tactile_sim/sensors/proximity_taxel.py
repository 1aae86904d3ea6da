"""ProximityTaxel (spec §8): per-taxel force and torque from tracked surface samples inside each sensing sphere.

Probe i (link-frame position p_i, unit normal a_i, radius R — R̃ on the measured branch — gain g), samples j of the
sensor's cloud (N_pts samples, ρ = density_scalar / N_pts), world positions q_j on bodies B(j):

    J_i = { j : ‖q_j − x_i‖ < R },  P_j = R − ‖q_j − x_i‖,  ΣP = Σ_{J_i} P_j
    v_j = v_B(j)(q_j) − v_L(x_i),  v_t,j = v_j − (a·v_j) a,  ω̄ = Σ_{J_i} P_j (ω_B(j) − ω_L)·a / ΣP  (0 if ΣP = 0)
    F = −k ρ g ΣP a + k_s ρ g Σ_{J_i} P_j v_t,j ;   T = p_i × F + k_tw ω̄ a        (link frame, N and N·m)

Everything is evaluated in the sensor's link frame (distances are frame-independent). The samples of all envs are
bucketed each step in one warp hash grid, grouped by (env, sensor); one kernel thread per (env, probe) visits the
samples of its group near p_i and accumulates ΣP, Σ P_j v_j and Σ P_j ω_j for both branches. The velocity sums
are linear, so v_L(x_i), ω_L and the tangential projection are applied afterwards. Output ``(force, torque)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import warp as wp

from ..world.state import WorldState
from .kinematic_taxel import ForceTorque
from .probe_sensor import ProbeSensorBatch, per_probe
from .probe_set import ProbeSensorGeometry
from .tracked_cloud import PointCloud, TrackedClouds, sample_tracked_cloud, tracked_shape_mask
from .warp_launch import RecordedLaunch, vec3, warp_array, warp_stream

HASH_CELLS = 32
"""Hash grid dimension per axis (cells are hashed modulo it; the cell width is the largest sensing radius)."""


def dot3(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Σ_k a_k b_k over a last axis of 3 (broadcasting), as three products (faster than a reduction on CPU)."""
    ax, ay, az = a.unbind(-1)
    bx, by, bz = b.unbind(-1)
    return ax * bx + ay * by + az * bz


def cross3(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a × b over a last axis of 3 (broadcasting), component by component (torch.cross is slow on CPU)."""
    ax, ay, az = a.unbind(-1)
    bx, by, bz = b.unbind(-1)
    return torch.stack([ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx], dim=-1)


@wp.kernel(enable_backward=False)
def _proximity_sums(grid: wp.uint64, local: wp.array(dtype=Any), velocity: wp.array(dtype=Any),
                    angular: wp.array(dtype=Any), n_sensors: int, near_lo: wp.array(dtype=Any),
                    near_hi: wp.array(dtype=Any), pos: wp.array(dtype=Any),
                    sensor: wp.array(dtype=wp.int32), radius: wp.array(dtype=Any),
                    radius_measured: wp.array2d(dtype=Any), sum_p: wp.array3d(dtype=Any),
                    sum_v: wp.array3d(dtype=Any), sum_w: wp.array3d(dtype=Any)):
    """Penetration-weighted sums over the samples within R (branch 0) and R̃ (branch 1) of probe i in env e."""
    e, i = wp.tid()
    p = pos[i]
    r0 = radius[i]
    r1 = radius_measured[e, i]
    zero = r0 - r0
    s0 = zero
    s1 = zero
    v0 = p - p
    v1 = p - p
    w0 = p - p
    w1 = p - p
    reach = wp.max(r0, r1)
    group = e * n_sensors + sensor[i]
    lo = near_lo[group]
    hi = near_hi[group]
    # broad phase: the box of this (env, sensor)'s samples near the probes, grown by the reach
    if reach > zero and wp.min(p - lo) > -reach and wp.max(p - hi) < reach:
        query = wp.hash_grid_query(grid, p, reach, group)
        k = int(0)
        while wp.hash_grid_query_next(query, k):
            d = wp.length(local[k] - p)
            if d < r0:
                pen = r0 - d
                s0 = s0 + pen
                v0 = v0 + pen * velocity[k]
                w0 = w0 + pen * angular[k]
            if d < r1:
                pen = r1 - d
                s1 = s1 + pen
                v1 = v1 + pen * velocity[k]
                w1 = w1 + pen * angular[k]
    sum_p[0, e, i] = s0
    sum_p[1, e, i] = s1
    sum_v[0, e, i] = v0
    sum_v[1, e, i] = v1
    sum_w[0, e, i] = w0
    sum_w[1, e, i] = w1


class ProximityTaxelBatch(ProbeSensorBatch):
    """Near-touch force/torque taxels; both branches are evaluated together along a leading axis [2, E, P]."""

    sensor_type = "ProximityTaxel"
    channels = 6

    def probe_geometry(self, options, layout) -> ProbeSensorGeometry:
        link = self.ctx.scene.body_index(options.link)
        return ProbeSensorGeometry(link, layout, tracked_shape_mask(self.ctx.scene, options.track))

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        opts, probes, scene = self.options, self.probes, ctx.scene
        e, p, dev, dt = ctx.n_envs, probes.n, ctx.device, ctx.dtype
        self.clouds = [sample_tracked_cloud(scene, o, ctx.where.get(o.name, o.where), require_collision=False)
                       for o in opts]
        density = [o.density_scalar / len(c) for o, c in zip(opts, self.clouds)]
        stiffness = np.array([o.stiffness for o in opts]) * density
        coupling = np.array([o.shear_coupling for o in opts]) * density
        self.normal_coef = ctx.tensor(np.repeat(stiffness, self.counts))
        self.shear_coef = ctx.tensor(np.repeat(coupling, self.counts))
        self.k_tw = per_probe(opts, self.counts, "twist_scalar", ctx)
        links = [scene.body_index(o.link) for o in opts]
        self.tracked = TrackedClouds(self.clouds, links, e, scene.n_bodies, dev, dt, velocities=True)
        n = self.tracked.n
        kw = dict(device=dev, dtype=dt)
        self.radius_measured = torch.zeros((e, p), **kw)
        self.sum_p = torch.zeros((2, e, p), **kw)
        self.sum_v = torch.zeros((2, e, p, 3), **kw)
        self.sum_w = torch.zeros((2, e, p, 3), **kw)
        reach = probes.radius + per_probe(opts, self.counts, "probe_radius_noise", ctx)
        self.cell = float(reach.max())
        # broad phase: per sensor, the box of its active probes grown by its largest reach (link frame)
        grown_lo, grown_hi = [], []
        for a, b in probes.slices:
            active = probes.active[a:b]
            box = probes.local_pos[a:b][active]
            r = reach[a:b][active].max()
            grown_lo.append(box.amin(0) - r)
            grown_hi.append(box.amax(0) + r)
        sample_sensor = self.tracked.sensor_of_sample
        self._grown_lo = torch.stack(grown_lo)[sample_sensor]                      # [N, 3]
        self._grown_hi = torch.stack(grown_hi)[sample_sensor]
        self._sample_group = sample_sensor[None, :, None].expand(e, -1, 3)
        self.near_lo = torch.zeros((e, len(opts), 3), **kw)
        self.near_hi = torch.zeros((e, len(opts), 3), **kw)
        wp_device = wp.device_from_torch(self.tracked.local.device)
        self.grid = wp.HashGrid(HASH_CELLS, HASH_CELLS, HASH_CELLS, device=wp_device,
                                dtype=wp.float32 if dt == torch.float32 else wp.float64)
        flat = self.tracked.local.view(e * n, 3)
        self._grid_points = warp_array(vec3(flat))
        groups = torch.arange(e, device=dev, dtype=torch.int32)[:, None] * len(opts) \
            + self.tracked.sensor_of_sample.to(torch.int32)
        self._grid_groups = warp_array(groups.reshape(-1).contiguous())
        self._sums = RecordedLaunch(_proximity_sums, (e, p), [
            wp.uint64(self.grid.id), vec3(flat), vec3(self.tracked.local_velocity.view(e * n, 3)),
            vec3(self.tracked.local_angular.view(e * n, 3)), len(opts), vec3(self.near_lo.view(-1, 3)),
            vec3(self.near_hi.view(-1, 3)), vec3(probes.local_pos),
            probes.sensor_of_probe.to(torch.int32), probes.radius, self.radius_measured, self.sum_p,
            vec3(self.sum_v), vec3(self.sum_w)], dev)

    def point_cloud(self, i: int) -> PointCloud:
        """The tracked cloud of sensor i (body frames, read-only)."""
        return self.clouds[i]

    def evaluate(self, state: WorldState) -> None:
        probes = self.probes
        rot, _ = probes.link_pose(state)
        self.radius_measured.copy_(self.branch.radius(probes.radius))
        self.tracked.pose(state)
        q = self.tracked.local
        near = ((q >= self._grown_lo) & (q <= self._grown_hi)).all(-1, keepdim=True)
        self.near_lo.fill_(torch.inf).scatter_reduce_(1, self._sample_group, torch.where(near, q, torch.inf), "amin")
        self.near_hi.fill_(-torch.inf).scatter_reduce_(1, self._sample_group, torch.where(near, q, -torch.inf),
                                                       "amax")
        with wp.ScopedStream(warp_stream(q.device)):
            self.grid.build(self._grid_points, self.cell, self._grid_groups)
        self._sums()

        a, lever = probes.local_normal, probes.local_pos
        spin = probes.to_link_frame(rot, probes.at_probes(state.ang_vel))              # R_Lᵀ ω_L  [E, 1|P, 3]
        own = probes.to_link_frame(rot, probes.at_probes(state.lin_vel)) + cross3(spin, lever)   # R_Lᵀ v_L(x_i)
        sp = self.sum_p                                                                  # [2, E, P]
        slip = self.sum_v - sp[..., None] * own
        gain = torch.stack([torch.ones_like(self.branch.gain), self.branch.gain])
        normal_part = -self.normal_coef * sp - self.shear_coef * dot3(slip, a)
        force = gain[..., None] * (normal_part[..., None] * a + self.shear_coef[:, None] * slip)
        touched = sp > 0
        spin_n = dot3(self.sum_w, a) - sp * dot3(spin, a)
        twist = torch.where(touched, spin_n / torch.where(touched, sp, torch.ones_like(sp)), torch.zeros_like(sp))
        torque = cross3(lever, force) + (self.k_tw * twist)[..., None] * a
        out = torch.cat([force, torque], dim=-1)
        self.branch.push(self.branch.hardware(self.branch.transform(out[1])), out[0])

    def output(self, value: torch.Tensor) -> ForceTorque:
        return ForceTorque(value[..., :3], value[..., 3:])
