"""Benchmark: ProximityTaxel and SurfaceDistanceProbe batch evaluation against their session-1 paths (same
process).

Scene: a fixed 8×8×2 cm box pad, an n×n probe grid (n = 3, 8, 32 → 9, 64, 1024 probes) over 7×7 cm of its top
face, a sphere r = 2 cm whose surface is 1 mm above the pad centre; ProximityTaxel: probe radius 4 mm, 1000 cloud
samples (the demo gripper's sensor); SurfaceDistanceProbe: range 12 mm (the demo's). 1 and 16 envs, one torch
thread, the ground truth plus a typical imperfection set (noise, bias, delay). Each row times one
``evaluate(state)`` of the batch (best of 5 rounds) for the fused warp kernel and for the session-1 path kept below
as the baseline (ProximityTaxel: sample posing kernel + torch broad phase + warp hash grid + per-probe query kernel;
SurfaceDistanceProbe: torch probe placement + ShapeQuery.query + torch capping), and checks that both give the same
ground truth (max |difference|).

    python bench/pointcloud.py [--repeat N] [--device cpu|cuda] [--sizes 3 8 32] [--envs 1 16]
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import torch
import warp as wp

from timing import time_per_call
from tactile_sim.suite import SensorSuite
from tactile_sim.sensors.points.probe_sensor import per_probe
from tactile_sim.sensors.proximity_taxel import _wrench

TYPICAL = {"noise": 1e-4, "bias": 1e-5, "delay": 0.01}
SENSORS = {"ProximityTaxel": {"probe_radius": 0.004, "track": ["ball"], "n_sample_points": 1000},
           "SurfaceDistanceProbe": {"probe_radius": 0.012, "track": ["ball"]}}


def pad_scene(sensor_type: str, n: int, n_envs: int, device: str) -> dict:
    grid = {"lo": [-0.035, -0.035, 0.0], "hi": [0.035, 0.035, 0.0], "nx": n, "ny": n}
    sensor = {"type": sensor_type, "name": "pad", "link": "pad", "probe_local_pos": {"grid": grid},
              **SENSORS[sensor_type], **TYPICAL}
    return {"suite": {"dt": 0.01, "n_envs": n_envs, "device": device},
            "objects": [{"name": "pad", "geometry": [{"box": {"size": [0.08, 0.08, 0.02]},
                                                      "origin": {"xyz": [0, 0, -0.01]}}]},
                        {"name": "ball", "geometry": [{"sphere": {"radius": 0.02}}], "pose": {"xyz": [0, 0, 0.021]}}],
            "sensors": [sensor]}


# ---------------------------------------------------------------------------------------------------------------------
# Baselines: the session-1 evaluation paths (reference for speed and results; not used by the library)

_VEC3 = {torch.float32: wp.vec3f, torch.float64: wp.vec3d}
_MAT33 = {torch.float32: wp.mat33f, torch.float64: wp.mat33d}


def vec3(t: torch.Tensor) -> wp.array:
    """A warp array of 3-vectors aliasing ``t`` [..., 3] (contiguous)."""
    return wp.from_torch(t, dtype=_VEC3[t.dtype])


def mat33(t: torch.Tensor) -> wp.array:
    """A warp array of 3×3 matrices aliasing ``t`` [..., 3, 3] (contiguous)."""
    return wp.from_torch(t, dtype=_MAT33[t.dtype])


class Recorded:
    """warp's recorded launch of ``kernel`` with fixed ``inputs``, replayed on the current torch stream by calling;
    ``inputs`` stay referenced (warp arrays hold their torch tensors), so the memory the launch aliases lives on."""

    def __init__(self, kernel, dim, inputs: list, device):
        self.inputs, self.device = inputs, torch.device(device)
        self.cmd = wp.launch(kernel, dim=dim, inputs=inputs, device=wp.device_from_torch(self.device),
                             record_cmd=True)

    def __call__(self) -> None:
        self.cmd.launch(torch_stream(self.device))


def torch_stream(device: torch.device):
    """The warp stream of the current torch stream on ``device`` (None on CPU)."""
    return wp.stream_from_torch(torch.cuda.current_stream(device)) if device.type == "cuda" else None

@wp.kernel(enable_backward=False)
def _pose_samples(points: wp.array(dtype=Any), owner: wp.array(dtype=wp.int32), sensor: wp.array(dtype=wp.int32),
                  link_of_sensor: wp.array(dtype=wp.int32), body_rot: wp.array2d(dtype=Any),
                  body_pos: wp.array2d(dtype=Any), body_lin: wp.array2d(dtype=Any), body_ang: wp.array2d(dtype=Any),
                  local: wp.array2d(dtype=Any), local_vel: wp.array2d(dtype=Any), local_ang: wp.array2d(dtype=Any)):
    e, j = wp.tid()
    b = owner[j]
    origin = body_pos[e, b]
    q = body_rot[e, b] @ points[j] + origin
    link = link_of_sensor[sensor[j]]
    to_link = wp.transpose(body_rot[e, link])
    local[e, j] = to_link @ (q - body_pos[e, link])
    w = body_ang[e, b]
    local_vel[e, j] = to_link @ (body_lin[e, b] + wp.cross(w, q - origin))
    local_ang[e, j] = to_link @ w


@wp.func
def _force_torque(out: wp.array4d(dtype=Any), b: int, e: int, i: int, s: Any, v: Any, w: Any, gain: Any, own: Any,
                  spin: Any, a: Any, lever: Any, normal_coef: Any, shear_coef: Any, k_tw: Any):
    """The library's wrench formula (``proximity_taxel._wrench``) written into out[b, e, i, 0:6]."""
    ft = _wrench(wp.vector(s, s, s, s, s, s), s, v, w, gain, own, spin, a, lever, normal_coef, shear_coef, k_tw)
    for k in range(6):
        out[b, e, i, k] = ft[k]


@wp.kernel(enable_backward=False)
def _proximity_taxels(grid: wp.uint64, local: wp.array(dtype=Any), velocity: wp.array(dtype=Any),
                      angular: wp.array(dtype=Any), n_sensors: int, near_lo: wp.array(dtype=Any),
                      near_hi: wp.array(dtype=Any), pos: wp.array(dtype=Any), normal: wp.array(dtype=Any),
                      sensor: wp.array(dtype=wp.int32), radius: wp.array(dtype=Any),
                      radius_measured: wp.array2d(dtype=Any), link_velocity: wp.array2d(dtype=Any),
                      link_spin: wp.array2d(dtype=Any), gain: wp.array2d(dtype=Any), normal_coef: wp.array(dtype=Any),
                      shear_coef: wp.array(dtype=Any), k_tw: wp.array(dtype=Any), out: wp.array4d(dtype=Any)):
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
    own = link_velocity[e, i] + wp.cross(spin, p)
    a = normal[i]
    _force_torque(out, 0, e, i, s0, v0, w0, zero + type(zero)(1.0), own, spin, a, p, normal_coef[i], shear_coef[i],
                  k_tw[i])
    _force_torque(out, 1, e, i, s1, v1, w1, gain[e, i], own, spin, a, p, normal_coef[i], shear_coef[i], k_tw[i])


class SessionOneProximity:
    """The session-1 ProximityTaxel evaluation on a built batch: pose every sample (link frame, with velocities),
    bound the samples near each sensor's probes with torch scatter reductions, bucket them in a warp hash grid and
    query it per probe; F and T of both branches into ``out`` [2, E, P, 6], then the measured branch."""

    HASH_CELLS = 32

    def __init__(self, batch):
        self.batch = batch
        probes, ctx, opts = batch.probes, batch.ctx, batch.options
        e, p, dev, dt = ctx.n_envs, probes.n, ctx.device, ctx.dtype
        kw = dict(device=dev, dtype=dt)
        clouds = batch.clouds
        counts = [len(c) for c in clouds]
        n = sum(counts)
        sensor = torch.as_tensor(np.repeat(np.arange(len(clouds)), counts), device=dev)
        links = torch.as_tensor([ctx.scene.body_index(o.link) for o in opts], device=dev, dtype=torch.int32)
        n_bodies = ctx.scene.n_bodies
        self.rot, self.pos = torch.zeros(e, n_bodies, 3, 3, **kw), torch.zeros(e, n_bodies, 3, **kw)
        self.lin, self.ang = torch.zeros(e, n_bodies, 3, **kw), torch.zeros(e, n_bodies, 3, **kw)
        self.local, self.velocity, self.angular = (torch.zeros(e, n, 3, **kw) for _ in range(3))
        points = torch.as_tensor(np.concatenate([c.points for c in clouds]), **kw).contiguous()
        owner = torch.as_tensor(np.concatenate([c.body for c in clouds]), device=dev, dtype=torch.int32)
        self._pose = Recorded(_pose_samples, (e, n), [
            vec3(points), wp.from_torch(owner), wp.from_torch(sensor.to(torch.int32)), wp.from_torch(links),
            mat33(self.rot), vec3(self.pos), vec3(self.lin), vec3(self.ang), vec3(self.local), vec3(self.velocity),
            vec3(self.angular)], dev)
        density = [o.density_scalar / c for o, c in zip(opts, counts)]
        normal_coef = batch.ctx.tensor(np.repeat(np.array([o.stiffness for o in opts]) * density, batch.counts))
        shear_coef = batch.ctx.tensor(np.repeat(np.array([o.shear_coupling for o in opts]) * density, batch.counts))
        k_tw = batch.ctx.tensor(np.repeat([o.twist_scalar for o in opts], batch.counts))
        self.radius_measured = torch.zeros((e, p), **kw)
        self.link_velocity, self.link_spin = torch.zeros((e, p, 3), **kw), torch.zeros((e, p, 3), **kw)
        self.gain = torch.ones((e, p), **kw)
        self.out = torch.zeros((2, e, p, 6), **kw)
        reach = probes.radius + per_probe(opts, batch.counts, "probe_radius_noise", ctx)
        self.cell = 2.0 * float(reach.max())
        lo, hi = [], []
        for a, b in probes.slices:
            active = probes.active[a:b]
            box = probes.local_pos[a:b][active]
            r = reach[a:b][active].max()
            lo.append(box.amin(0) - r)
            hi.append(box.amax(0) + r)
        self.grown_lo, self.grown_hi = torch.stack(lo)[sensor], torch.stack(hi)[sensor]
        self.sample_group = sensor[None, :, None].expand(e, -1, 3)
        self.near_lo = torch.zeros((e, len(opts), 3), **kw)
        self.near_hi = torch.zeros((e, len(opts), 3), **kw)
        self.grid = wp.HashGrid(self.HASH_CELLS, self.HASH_CELLS, self.HASH_CELLS, device=wp.device_from_torch(
            torch.device(dev)), dtype=wp.float32 if dt == torch.float32 else wp.float64)
        flat = self.local.view(e * n, 3)
        self.grid_points = vec3(flat)
        groups = torch.arange(e, device=dev, dtype=torch.int32)[:, None] * len(opts) + sensor.to(torch.int32)
        self.grid_groups = wp.from_torch(groups.reshape(-1).contiguous())
        self._taxels = Recorded(_proximity_taxels, (e, p), [
            wp.uint64(self.grid.id), vec3(flat), vec3(self.velocity.view(e * n, 3)), vec3(self.angular.view(e * n, 3)),
            len(opts), vec3(self.near_lo.view(-1, 3)), vec3(self.near_hi.view(-1, 3)), vec3(probes.local_pos),
            vec3(probes.local_normal.contiguous()), wp.from_torch(probes.sensor_of_probe.to(torch.int32)),
            wp.from_torch(probes.radius), wp.from_torch(self.radius_measured), vec3(self.link_velocity),
            vec3(self.link_spin), wp.from_torch(self.gain), wp.from_torch(normal_coef.contiguous()),
            wp.from_torch(shear_coef.contiguous()), wp.from_torch(k_tw.contiguous()), wp.from_torch(self.out)], dev)

    def evaluate(self, state) -> None:
        batch = self.batch
        probes, branch = batch.probes, batch.branch
        rot, _ = probes.link_pose(state)
        self.radius_measured.copy_(branch.radius(probes.radius))
        self.rot.copy_(state.rot)
        self.pos.copy_(state.pos)
        self.lin.copy_(state.lin_vel)
        self.ang.copy_(state.ang_vel)
        self._pose()
        q = self.local
        near = ((q >= self.grown_lo) & (q <= self.grown_hi)).all(-1, keepdim=True)
        self.near_lo.fill_(torch.inf).scatter_reduce_(1, self.sample_group, torch.where(near, q, torch.inf), "amin")
        self.near_hi.fill_(-torch.inf).scatter_reduce_(1, self.sample_group, torch.where(near, q, -torch.inf), "amax")
        with wp.ScopedStream(torch_stream(q.device)):
            self.grid.build(self.grid_points, self.cell, self.grid_groups)
        self.link_spin.copy_(probes.to_link_frame(rot, probes.at_probes(state.ang_vel)))
        self.link_velocity.copy_(probes.to_link_frame(rot, probes.at_probes(state.lin_vel)))
        self.gain.copy_(branch.gain)
        self._taxels()
        branch.push(branch.hardware(branch.transform(self.out[1])), self.out[0])


class SessionOneSurfaceDistance:
    """The session-1 SurfaceDistanceProbe evaluation: torch probe placement, ShapeQuery.query (unsigned), torch
    capping of both branches, then the measured branch."""

    def __init__(self, batch):
        self.batch = batch

    def evaluate(self, state) -> None:
        batch = self.batch
        probes = batch.probes
        rot, pos = probes.link_pose(state)
        x = probes.world_positions(rot, pos)
        q = probes.query(x, state, batch.cutoff, unsigned=True)
        cap = torch.stack([probes.radius.expand_as(q.sd), batch.branch.radius(probes.radius)])
        found = q.sd < cap
        distance = torch.where(found, q.sd, cap)
        nearest = torch.where(found[..., None], q.closest, x)
        out = torch.cat([distance[..., None], nearest], dim=-1)
        batch.branch.push(batch.branch.hardware(batch.branch.transform(out[1])), out[0])


BASELINES = {"ProximityTaxel": SessionOneProximity, "SurfaceDistanceProbe": SessionOneSurfaceDistance}


def ground_truth(suite: SensorSuite) -> torch.Tensor:
    value = suite.read_ground_truth("pad")
    return torch.cat([value.force, value.torque], -1) if isinstance(value, tuple) else value


def bench_row(sensor_type: str, n: int, n_envs: int, device: str, repeat: int) -> tuple[float, float, float]:
    """(fused s/evaluate, baseline s/evaluate, max |ground-truth difference|) for one scene."""
    suite = SensorSuite.from_yaml(pad_scene(sensor_type, n, n_envs, device))
    state = suite.world.update(0.0)
    batch = next(b for _, b in suite.batches if b.sensor_type == sensor_type)
    baseline = BASELINES[sensor_type](batch)
    batch.evaluate(state)
    fused_gt = ground_truth(suite).clone()
    baseline.evaluate(state)
    diff = float((ground_truth(suite) - fused_gt).abs().max())

    def timed(evaluate):
        def call():
            evaluate(state)
            if suite.device.type == "cuda":
                torch.cuda.synchronize()
        return time_per_call(call, repeat)

    return timed(batch.evaluate), timed(baseline.evaluate), diff


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 8, 32])
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--sensors", nargs="+", default=list(SENSORS))
    args = parser.parse_args()
    torch.set_num_threads(1)
    wp.config.quiet = True
    print(f"{'sensor':<21} {'probes':>6} {'envs':>4} {'ms/eval':>9} {'probe-upd/s':>12} {'baseline ms':>11} "
          f"{'speed-up':>8} {'max |GT diff|':>13}")
    for sensor in args.sensors:
        for envs in args.envs:
            for n in args.sizes:
                fused, base, diff = bench_row(sensor, n, envs, args.device, args.repeat)
                probes = n * n
                print(f"{sensor:<21} {probes:>6} {envs:>4} {fused * 1e3:9.4f} {probes * envs / fused:12.3e} "
                      f"{base * 1e3:11.4f} {base / fused:7.1f}x {diff:13.2e}")


if __name__ == "__main__":
    main()
