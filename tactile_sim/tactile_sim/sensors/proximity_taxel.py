"""ProximityTaxel (spec §8): per-taxel force and torque from tracked surface samples inside each sensing sphere.

Probe i (link-frame position p_i, unit normal a_i, radius R — R̃ on the measured branch — gain g), samples j of the
sensor's cloud (N_pts samples, ρ = density_scalar / N_pts), world positions q_j on bodies B(j):

    J_i = { j : ‖q_j − x_i‖ < R },  P_j = R − ‖q_j − x_i‖,  ΣP = Σ_{J_i} P_j
    v_j = v_B(j)(q_j) − v_L(x_i),  v_t,j = v_j − (a·v_j) a,  ω̄ = Σ_{J_i} P_j (ω_B(j) − ω_L)·a / ΣP  (0 if ΣP = 0)
    F = −k ρ g ΣP a + k_s ρ g Σ_{J_i} P_j v_t,j ;   T = p_i × F + k_tw ω̄ a        (link frame, N and N·m)

Everything is evaluated in the sensor's link frame (distances are frame-independent). The samples of all envs are
bucketed each step in one warp hash grid, grouped by (env, sensor); one kernel thread per (env, probe) visits the
samples of its group near p_i, accumulates ΣP, Σ P_j v_j and Σ P_j ω_j for both branches and — the velocity sums
being linear — applies v_L(x_i), ω_L and the tangential projection to them. Output ``(force, torque)``.
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
"""Hash grid dimension per axis (cells are hashed modulo it; the cell width is twice the largest sensing radius, so
a query visits 2 cells per axis instead of 3)."""


@wp.func
def _force_torque(out: wp.array4d(dtype=Any), b: int, e: int, i: int, s: Any, v: Any, w: Any, gain: Any, own: Any,
                  spin: Any, a: Any, lever: Any, normal_coef: Any, shear_coef: Any, k_tw: Any):
    """(F, T) of branch b from the sums ΣP = s, Σ P_j v_j = v, Σ P_j ω_j = w (link frame) into out[b, e, i, 0:6]."""
    slip = v - s * own
    force = gain * ((-normal_coef * s - shear_coef * wp.dot(slip, a)) * a + shear_coef * slip)
    zero = s - s
    twist = zero
    if s > zero:
        twist = (wp.dot(w, a) - s * wp.dot(spin, a)) / s
    torque = wp.cross(lever, force) + (k_tw * twist) * a
    for k in range(3):
        out[b, e, i, k] = force[k]
        out[b, e, i, 3 + k] = torque[k]


@wp.kernel(enable_backward=False)
def _proximity_taxels(grid: wp.uint64, local: wp.array(dtype=Any), velocity: wp.array(dtype=Any),
                      angular: wp.array(dtype=Any), n_sensors: int, near_lo: wp.array(dtype=Any),
                      near_hi: wp.array(dtype=Any), pos: wp.array(dtype=Any), normal: wp.array(dtype=Any),
                      sensor: wp.array(dtype=wp.int32), radius: wp.array(dtype=Any),
                      radius_measured: wp.array2d(dtype=Any), link_velocity: wp.array2d(dtype=Any),
                      link_spin: wp.array2d(dtype=Any), gain: wp.array2d(dtype=Any), normal_coef: wp.array(dtype=Any),
                      shear_coef: wp.array(dtype=Any), k_tw: wp.array(dtype=Any), out: wp.array4d(dtype=Any)):
    """Probe i in env e: penetration-weighted sums over the samples within R (branch 0, ground truth) and R̃
    (branch 1, measured, times the probe gain), then F and T of both branches into out [2, E, P, 6]."""
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
    spin = link_spin[e, i]
    own = link_velocity[e, i] + wp.cross(spin, p)                  # R_Lᵀ v_L(x_i)
    a = normal[i]
    _force_torque(out, 0, e, i, s0, v0, w0, zero + type(zero)(1.0), own, spin, a, p, normal_coef[i], shear_coef[i],
                  k_tw[i])
    _force_torque(out, 1, e, i, s1, v1, w1, gain[e, i], own, spin, a, p, normal_coef[i], shear_coef[i], k_tw[i])


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
        self.link_velocity = torch.zeros((e, p, 3), **kw)      # R_Lᵀ v_L, R_Lᵀ ω_L at each probe
        self.link_spin = torch.zeros((e, p, 3), **kw)
        self.gain = torch.ones((e, p), **kw)
        self.out = torch.zeros((2, e, p, 6), **kw)             # (F, T) of the ground truth and measured branches
        reach = probes.radius + per_probe(opts, self.counts, "probe_radius_noise", ctx)
        self.cell = 2.0 * float(reach.max())
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
        self._taxels = RecordedLaunch(_proximity_taxels, (e, p), [
            wp.uint64(self.grid.id), vec3(flat), vec3(self.tracked.local_velocity.view(e * n, 3)),
            vec3(self.tracked.local_angular.view(e * n, 3)), len(opts), vec3(self.near_lo.view(-1, 3)),
            vec3(self.near_hi.view(-1, 3)), vec3(probes.local_pos), vec3(probes.local_normal.contiguous()),
            probes.sensor_of_probe.to(torch.int32), probes.radius, self.radius_measured, vec3(self.link_velocity),
            vec3(self.link_spin), self.gain, self.normal_coef.contiguous(), self.shear_coef.contiguous(),
            self.k_tw.contiguous(), self.out], dev)

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
        self.link_spin.copy_(probes.to_link_frame(rot, probes.at_probes(state.ang_vel)))
        self.link_velocity.copy_(probes.to_link_frame(rot, probes.at_probes(state.lin_vel)))
        self.gain.copy_(self.branch.gain)
        self._taxels()
        self.branch.push(self.branch.hardware(self.branch.transform(self.out[1])), self.out[0])

    def output(self, value: torch.Tensor) -> ForceTorque:
        return ForceTorque(value[..., :3], value[..., 3:])
