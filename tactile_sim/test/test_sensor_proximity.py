"""ProximityTaxel (docs/models/proximity_taxel.md#model): replay against an independent NumPy sum over the exposed
cloud, the flat-face closed form,
range cut-off, shear, twist, gain, per-probe normals, crosstalk, fillers and batched envs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from helpers_pointcloud import box, centred_lattice, make_suite, numpy, rot_z, sphere, step


def proximity(name: str, positions, **kw) -> dict:
    return {"type": "ProximityTaxel", "name": name, "link": "pad", "track": ["ball"],
            "probe_local_pos": np.asarray(positions).tolist(), **kw}


def replay(cloud, rot, origin, lin, ang, probes, normals, radius, k, k_s, k_tw, density):
    """docs/models/proximity_taxel.md#model from the exposed cloud for a pad fixed at the origin (link frame = world
    frame), one tracked body."""
    q = cloud.points @ np.asarray(rot).T + origin
    v = lin + np.cross(ang, q - origin)
    rho = density / len(cloud)
    force, torque = np.zeros_like(probes), np.zeros_like(probes)
    for i, (p, a) in enumerate(zip(probes, normals)):
        d = np.linalg.norm(q - p, axis=1)
        inside = d < radius
        pen = radius - d[inside]
        vt = v[inside] - (v[inside] @ a)[:, None] * a
        total = pen.sum()
        f = -k * rho * total * a + k_s * rho * (pen[:, None] * vt).sum(0)
        twist = (pen * (ang @ a)).sum() / total if total > 0 else 0.0
        force[i], torque[i] = f, np.cross(p, f) + k_tw * twist * a
    return force, torque


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-6), ("float32", 1e-4)])
def test_replay_matches_an_independent_sum(dtype, tol):
    rng = np.random.default_rng(11)
    probes = np.column_stack([rng.uniform(-0.02, 0.02, (30, 2)), rng.uniform(-0.002, 0.0, 30)])
    normals = np.column_stack([rng.uniform(-0.3, 0.3, (30, 2)), np.ones(30)])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    k, k_s, k_tw, density, radius = 150.0, 40.0, 0.7, 250, 0.008
    suite = make_suite([proximity("px", probes, probe_local_normal=normals.tolist(), probe_radius=radius,
                                  stiffness=k, shear_coupling=k_s, twist_scalar=k_tw, density_scalar=density,
                                  n_sample_points=700)], [sphere("ball", 0.015)], dtype=dtype)
    rot, origin = rot_z(0.4), np.array([0.004, -0.003, 0.017])
    lin, ang = np.array([0.05, -0.02, -0.01]), np.array([0.3, -0.5, 2.0])
    step(suite, 0.0, {"ball": (rot, origin)}, {"ball": (lin, ang)})
    force, torque = (numpy(x) for x in suite.read_ground_truth("px"))
    f_ref, t_ref = replay(suite.point_cloud("px"), rot, origin, lin, ang, probes, normals, radius, k, k_s, k_tw,
                          density)
    assert np.abs(f_ref).max() > 0 and (np.abs(f_ref).sum(1) == 0).any()
    assert np.abs(force - f_ref).max() <= tol * np.abs(f_ref).max()
    assert np.abs(torque - t_ref).max() <= tol * np.abs(t_ref).max()
    assert (force[np.abs(f_ref).sum(1) == 0] == 0).all()


@pytest.mark.parametrize("gap_ratio", [0.0, 0.3, 0.7])
def test_large_flat_face_closed_form(gap_ratio):
    radius, k, density = 0.01, 100.0, 100
    size = np.array([0.06, 0.06, 0.01])
    area = 2 * (size[0] * size[1] + size[1] * size[2] + size[0] * size[2])
    n = int(area / (radius / 10) ** 2) + 1                      # sample spacing ≤ R/10
    suite = make_suite([proximity("px", [[0.0, 0.0, 0.0]], probe_radius=radius, stiffness=k,
                                  density_scalar=density, n_sample_points=n)], [box("ball", size)])
    gap = gap_ratio * radius
    step(suite, 0.0, {"ball": (0.0, 0.0, gap + size[2] / 2)})
    force = numpy(suite.read_ground_truth("px").force)[0]
    expected = -k * density / area * math.pi / 3 * (radius - gap) ** 2 * (radius + 2 * gap)
    assert abs(force[2] / expected - 1) < 0.05
    assert np.abs(force[:2]).max() <= 1e-9 * abs(expected)


def test_beyond_the_radius_is_exactly_zero():
    suite = make_suite([proximity("px", centred_lattice(4, 0.01), probe_radius=0.005, n_sample_points=3000)],
                       [box("ball", (0.05, 0.05, 0.01))])
    step(suite, 0.0, {"ball": (0.0, 0.0, 0.0051 + 0.005)})
    for value in (*suite.read("px"), *suite.read_ground_truth("px")):
        assert torch.count_nonzero(value) == 0
    step(suite, 0.01, {"ball": (0.0, 0.0, 0.0049 + 0.005)})
    assert numpy(suite.read_ground_truth("px").force)[..., 2].min() < 0    # the face is back within reach


def test_shear_follows_sliding_and_twist_is_linear_in_twist_scalar():
    sensors = [proximity(f"px{k}", centred_lattice(3, 0.005), probe_radius=0.006, shear_coupling=50.0,
                         twist_scalar=tw) for k, tw in enumerate((1.0, 2.5, 0.0))]
    suite = make_suite(sensors, [box("ball", (0.05, 0.05, 0.01))])
    at = (0.0, 0.0, 0.002 + 0.005)
    step(suite, 0.0, {"ball": at})
    still = numpy(suite.read_ground_truth("px0").force)
    step(suite, 0.01, {"ball": at}, {"ball": ((0.02, 0.0, 0.0), (0.0, 0.0, 0.0))})
    sliding = numpy(suite.read_ground_truth("px0").force)
    assert np.abs(still[..., :2]).max() <= 1e-12 * np.abs(still).max()
    assert (sliding[..., 0] > 0).all() and np.allclose(sliding[..., 2], still[..., 2], rtol=1e-12, atol=0)
    step(suite, 0.02, {"ball": at}, {"ball": ((0.0, 0.0, 0.0), (0.0, 0.0, 4.0))})
    for k, tw in enumerate((1.0, 2.5, 0.0)):
        force, torque = (numpy(x) for x in suite.read_ground_truth(f"px{k}"))
        lever = centred_lattice(3, 0.005)
        twist = torque[..., 2] - np.cross(lever, force)[..., 2]
        assert np.allclose(twist, tw * 4.0, rtol=1e-12, atol=1e-15)


def test_gain_scales_the_force_not_the_twist():
    suite = make_suite([proximity("px", centred_lattice(3, 0.005), probe_radius=0.006, probe_gain=1.5,
                                  shear_coupling=20.0)], [box("ball", (0.05, 0.05, 0.01))])
    step(suite, 0.0, {"ball": (0.0, 0.0, 0.007)}, {"ball": ((0.01, 0.0, 0.0), (0.0, 0.0, 3.0))})
    gt, measured = suite.read_ground_truth("px"), suite.read("px")
    assert torch.equal(measured.force, 1.5 * gt.force)
    lever = torch.as_tensor(centred_lattice(3, 0.005))
    twist = measured.torque - torch.cross(lever, measured.force, dim=-1)
    assert torch.allclose(twist[..., 2], torch.full_like(twist[..., 2], 3.0), rtol=1e-12, atol=0)


def test_crosstalk_fillers_radius_noise_and_envs():
    grid = centred_lattice(5, 0.005)
    radius = np.full((5, 5), 0.006)
    radius[0, 0] = 0.0
    sensors = [proximity("px", grid, probe_radius=radius.tolist(), crosstalk_strength=1.0, crosstalk_sigma=0.005),
               proximity("plain", grid, probe_radius=radius.tolist(), probe_radius_noise=0.002)]
    suite = make_suite(sensors, [box("ball", (0.05, 0.05, 0.01))], n_envs=2)
    rot = torch.eye(3, dtype=torch.float64).expand(2, 3, 3)
    pos = torch.tensor([[0.0, 0.0, 0.008], [0.0, 0.0, 0.02]], dtype=torch.float64)
    suite.update(0.0, object_poses={"ball": (rot, pos)})
    gt, blurred = numpy(suite.read_ground_truth("px").force), numpy(suite.read("px").force)
    assert np.array_equal(gt, numpy(suite.read_ground_truth("plain").force))
    assert (gt[1] == 0).all() and (blurred[1] == 0).all() and gt[0, 2, 2, 2] < 0
    assert (gt[0, 0, 0] == 0).all() and (blurred[0, 0, 0] == 0).all()
    assert np.abs(blurred[0] - gt[0]).max() > 1e-3 * np.abs(gt[0]).max()
    noisy = numpy(suite.read("plain").force)
    assert not np.array_equal(noisy[0], gt[0]) and (noisy[0, 0, 0] == 0).all()


def random_rotation(rng) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def replay_moving(cloud, poses, twists, link_pose, link_twist, probes, normals, radius, k, k_s, k_tw, density):
    """docs/models/proximity_taxel.md#model in the world frame for a moving link (independent of the library's
    link-frame formulation): poses / twists
    map body index → (R, o) / (v, ω); link_pose = (R_L, o_L), link_twist = (v_L, ω_L). Returns link-frame F, T."""
    rl, ol = link_pose
    vl, wl = link_twist
    q = np.empty((len(cloud), 3))
    v = np.empty((len(cloud), 3))
    w = np.empty((len(cloud), 3))
    for b in np.unique(cloud.body):
        on = cloud.body == b
        rot, origin = poses[b]
        q[on] = cloud.points[on] @ rot.T + origin
        v[on] = twists[b][0] + np.cross(twists[b][1], q[on] - origin)
        w[on] = twists[b][1]
    rho = density / len(cloud)
    force, torque = np.zeros_like(probes), np.zeros_like(probes)
    for i, (p, a_link) in enumerate(zip(probes, normals)):
        x, a = rl @ p + ol, rl @ a_link
        d = np.linalg.norm(q - x, axis=1)
        inside = d < radius
        pen = radius - d[inside]
        rel = v[inside] - (vl + np.cross(wl, x - ol))
        vt = rel - (rel @ a)[:, None] * a
        total = pen.sum()
        f = rl.T @ (-k * rho * total * a + k_s * rho * (pen[:, None] * vt).sum(0))
        twist = (pen * ((w[inside] - wl) @ a)).sum() / total if total > 0 else 0.0
        force[i], torque[i] = f, np.cross(p, f) + k_tw * twist * a_link
    return force, torque


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-9), ("float32", 1e-4)])
def test_moving_pad_two_bodies_many_probes_and_envs_match_the_world_frame_sum(dtype, tol):
    """The fused kernel (sample chunks and probe cells culled by bounding spheres, several blocks per sensor, link
    frame) against the docs/models/proximity_taxel.md#model sum in the world frame, per env, for a moving and rotated
    pad and two tracked bodies."""
    rng = np.random.default_rng(3)
    grid = centred_lattice(18, 0.002)                                  # 324 probes: several cells and blocks
    few = np.column_stack([rng.uniform(-0.015, 0.015, (12, 2)), rng.uniform(-0.002, 0.002, 12)])
    few_normals = np.column_stack([rng.uniform(-0.4, 0.4, (12, 2)), np.ones(12)])
    few_normals /= np.linalg.norm(few_normals, axis=1, keepdims=True)
    coef = {"a": dict(k=120.0, k_s=30.0, k_tw=0.5, density=150, radius=0.006),
            "b": dict(k=80.0, k_s=10.0, k_tw=1.5, density=60, radius=0.009)}
    sensors = [
        {"type": "ProximityTaxel", "name": "a", "link": "pad", "track": ["ball", "cube"],
         "probe_local_pos": grid.tolist(), "probe_radius": coef["a"]["radius"], "probe_radius_noise": 0.002,
         "stiffness": coef["a"]["k"], "shear_coupling": coef["a"]["k_s"], "twist_scalar": coef["a"]["k_tw"],
         "density_scalar": coef["a"]["density"], "n_sample_points": [900, 700]},
        {"type": "ProximityTaxel", "name": "b", "link": "pad", "track": ["cube"], "probe_local_pos": few.tolist(),
         "probe_local_normal": few_normals.tolist(), "probe_radius": coef["b"]["radius"], "probe_gain": 1.25,
         "stiffness": coef["b"]["k"], "shear_coupling": coef["b"]["k_s"], "twist_scalar": coef["b"]["k_tw"],
         "density_scalar": coef["b"]["density"], "n_sample_points": 800, "sample_seed": 4}]
    n_envs = 3
    suite = make_suite(sensors, [sphere("ball", 0.012), box("cube", (0.02, 0.03, 0.015))], n_envs=n_envs,
                       dtype=dtype)
    rots = {name: np.stack([random_rotation(rng) for _ in range(n_envs)]) for name in ("pad", "ball", "cube")}
    pad_pos = rng.uniform(-0.05, 0.05, (n_envs, 3))
    offsets = {"ball": np.array([0.004, -0.003, 0.016]), "cube": np.array([-0.006, 0.005, 0.012])}
    pos = {"pad": pad_pos, **{name: pad_pos + np.einsum("eij,j->ei", rots["pad"], off + rng.uniform(-0.003, 0.003))
                              for name, off in offsets.items()}}
    twists = {name: (rng.normal(0, 0.05, (n_envs, 3)), rng.normal(0, 2.0, (n_envs, 3))) for name in rots}
    suite.update(0.0, object_poses={n: (torch.as_tensor(rots[n]), torch.as_tensor(pos[n])) for n in rots},
                 object_twists={n: tuple(torch.as_tensor(x) for x in tw) for n, tw in twists.items()})
    index = {name: suite.world.scene.body_index(name) for name in rots}
    active = {}
    for name, probes, normals in (("a", grid.reshape(-1, 3), np.tile([0.0, 0.0, 1.0], (324, 1))),
                                  ("b", few, few_normals)):
        force, torque = (numpy(x).reshape(n_envs, -1, 3) for x in suite.read_ground_truth(name))
        c = coef[name]
        for e in range(n_envs):
            poses = {index[n]: (rots[n][e], pos[n][e]) for n in rots}
            tw = {index[n]: (twists[n][0][e], twists[n][1][e]) for n in rots}
            f_ref, t_ref = replay_moving(suite.point_cloud(name), poses, tw, poses[index["pad"]], tw[index["pad"]],
                                         probes, normals, c["radius"], c["k"], c["k_s"], c["k_tw"], c["density"])
            active[name, e] = int((np.abs(f_ref).sum(1) > 0).sum())
            assert np.abs(force[e] - f_ref).max() <= tol * np.abs(f_ref).max()
            assert np.abs(torque[e] - t_ref).max() <= tol * np.abs(t_ref).max()
            assert (force[e][np.abs(f_ref).sum(1) == 0] == 0).all()
    # the scene exercises culled and visited probes in every env
    assert all(0 < n < 324 for (name, _), n in active.items() if name == "a"), active
    assert all(n > 0 for n in active.values()), active
    measured, gt = suite.read("b"), suite.read_ground_truth("b")
    assert torch.allclose(measured.force, 1.25 * gt.force, rtol=1e-6 if dtype == "float32" else 1e-12, atol=0)


def test_cloud_chunks_partition_the_cloud_into_compact_single_body_runs():
    from tactile_sim.sensors.proximity_taxel import cloud_chunks
    rng = np.random.default_rng(2)
    points = rng.normal(size=(1000, 3))
    body = rng.choice([4, 9, 7], size=1000)
    order, runs = cloud_chunks(points, body, size=16)
    assert np.array_equal(np.sort(order), np.arange(1000))                 # every sample exactly once
    assert runs[0][0] == 0 and runs[-1][1] == 1000
    assert all(a1 == b0 for (_, a1, _), (b0, _, _) in zip(runs[:-1], runs[1:]))
    for a, b, owner in runs:
        assert 0 < b - a <= 16 and (body[order[a:b]] == owner).all()
    owners = [owner for _, _, owner in runs]
    first_seen = list(dict.fromkeys(body.tolist()))
    assert owners == sorted(owners, key=first_seen.index)                  # one body after the other
    # compact: the median split keeps chunks far smaller than the cloud
    spans = [np.ptp(points[order[a:b]], axis=0).max() for a, b, _ in runs]
    assert np.median(spans) < 0.5 * np.ptp(points, axis=0).max()



def test_chunk_clusters_group_at_most_eight_consecutive_chunks_of_one_body():
    from tactile_sim.sensors.proximity_taxel import chunk_clusters, cloud_chunks
    rng = np.random.default_rng(5)
    points = rng.normal(size=(1500, 3))
    body = np.repeat([4, 9, 7], [1000, 30, 470])
    order, runs = cloud_chunks(points, body, size=16)
    clusters = chunk_clusters(runs, size=8)
    assert clusters[0][0] == 0 and clusters[-1][1] == len(runs)
    assert all(a1 == b0 for (_, a1), (b0, _) in zip(clusters[:-1], clusters[1:]))   # consecutive, no gap
    for a, b in clusters:
        assert 0 < b - a <= 8 and len({runs[k][2] for k in range(a, b)}) == 1
    per_body = {}
    for a, b in clusters:
        per_body.setdefault(runs[a][2], []).append(b - a)
    chunks = {owner: sum(r[2] == owner for r in runs) for owner in (4, 9, 7)}
    assert chunks[4] > 8 and chunks[7] > 8 and chunks[9] < 8
    assert per_body == {owner: [8] * (n // 8) + [n % 8] * (n % 8 > 0) for owner, n in chunks.items()}

def rest_wrench(probes, normals, gain, k, k_tw, dtype):
    """[F, T] of a taxel no sample reaches, statement by statement as the model evaluates it (ΣP = +0,
    Σ P v = Σ P ω = +0), in ``dtype``: signed zeros whose signs follow the probe's position, normal and gain."""
    t = np.dtype(dtype).type
    p, a = probes.astype(dtype), normals.astype(dtype)
    s, g, k, k_s, k_tw = t(0), t(gain), t(k), t(0), t(k_tw)
    slip = np.zeros_like(p) - s * np.ones_like(p)                       # v − s·own with v = +0
    dot = slip[:, 0] * a[:, 0] + slip[:, 1] * a[:, 1] + slip[:, 2] * a[:, 2]
    force = g * ((-k * s - k_s * dot)[:, None] * a + k_s * slip)
    twist = s - s
    cross = np.stack([p[:, 1] * force[:, 2] - p[:, 2] * force[:, 1], p[:, 2] * force[:, 0] - p[:, 0] * force[:, 2],
                      p[:, 0] * force[:, 1] - p[:, 1] * force[:, 0]], axis=1)
    return force, cross + (k_tw * twist) * a


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_taxel_out_of_reach_reads_the_zero_sum_wrench_bit_for_bit_while_the_link_moves(dtype):
    """A taxel that no sample reaches reads the wrench of zero sums, signed zeros included, whatever the link's
    motion, on both branches and with a gain (the kernel copies one rest wrench per probe, computed at build)."""
    rng = np.random.default_rng(5)
    probes = np.column_stack([rng.uniform(-0.02, 0.02, (24, 2)), rng.uniform(-0.003, 0.003, 24)])
    normals = rng.uniform(-1.0, 1.0, (24, 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    k, k_tw, gain = 150.0, 0.7, 1.3
    suite = make_suite([proximity("px", probes, probe_local_normal=normals.tolist(), probe_radius=0.004,
                                  stiffness=k, twist_scalar=k_tw, probe_gain=gain, noise=0.0)],
                       [sphere("ball", 0.015)], dtype=dtype)
    for n, t in enumerate((0.0, 0.01, 0.02)):
        ball = np.array([0.0, 0.0, 0.0165 if n == 1 else 0.5])    # step 1: the ball touches some taxels
        step(suite, t, {"ball": (rot_z(0.1), ball), "pad": (rot_z(0.2 * n), np.array([0.001, -0.002, 0.0]))},
             {"pad": (np.array([0.3, -0.2, 0.1]), np.array([1.5, -2.0, 0.7]))})
        for read, g in ((suite.read_ground_truth, 1.0), (suite.read, gain)):
            force, torque = (x.cpu().numpy() for x in read("px"))
            f_ref, t_ref = rest_wrench(probes, normals, g, k, k_tw, dtype)
            rest = (force == 0).all(1) if n == 1 else np.ones(len(probes), bool)
            assert rest.any() and (n != 1 or not rest.all())
            assert np.signbit(t_ref[rest]).any() and not np.signbit(t_ref[rest]).all()
            assert np.array_equal(force[rest].view(np.uint8), f_ref[rest].view(np.uint8))
            assert np.array_equal(torque[rest].view(np.uint8), t_ref[rest].view(np.uint8))


def test_probe_grid_bins_every_active_probe_once_in_the_cell_of_its_position():
    from tactile_sim.sensors.points.probe_grid import CELLS_PER_PROBE, ProbeGrid
    rng = np.random.default_rng(8)
    points = np.concatenate([rng.uniform(-0.03, 0.03, (200, 3)), centred_lattice(6, 0.004).reshape(-1, 3),
                             rng.uniform(-1.0, 1.0, (50, 3))])
    slices = [(0, 200), (200, 236), (236, 286)]
    cutoff = np.concatenate([np.full(200, 0.005), np.full(36, 0.004), np.full(50, 0.001)])
    cutoff[[3, 210, 211]] = -np.inf                                          # fillers
    per_probe = {k: v.numpy() for k, v in ProbeGrid(points, slices, [2, 2, 5], cutoff, "cpu", torch.float64,
                                                     whole_groups=False).fields().items()}
    active = np.isfinite(cutoff)
    assert np.array_equal(per_probe["block_first"], np.arange(286)) and (per_probe["grid_dims"] == 1).all()
    assert np.array_equal(per_probe["cell_probe"], np.flatnonzero(active))  # one cell per block: its probe or none
    assert np.array_equal(np.diff(per_probe["cell_start"]), active.astype(int))
    assert np.array_equal(per_probe["block_cut"], cutoff)
    assert np.array_equal(per_probe["block_link"][[0, 236]], [2, 5])
    assert np.array_equal(per_probe["block_lo"][active], points[active])
    grid = ProbeGrid(points, slices, [2, 2, 5], cutoff, "cpu", torch.float64, whole_groups=True)
    assert grid.n_blocks == 3
    f = {k: v.numpy() for k, v in grid.fields().items()}
    binned = []
    for k, (a, b) in enumerate(slices):
        active = [i for i in range(a, b) if np.isfinite(cutoff[i])]
        h, dims, lo = f["grid_cell"][k], f["grid_dims"][k], f["block_lo"][k]
        assert h >= cutoff[active].max() and np.prod(dims) <= CELLS_PER_PROBE * len(active) + 8
        assert np.allclose(lo, points[active].min(0)) and np.allclose(f["block_hi"][k], points[active].max(0))
        assert f["block_cut"][k] == cutoff[active].max() and f["block_link"][k] == [2, 2, 5][k]
        for i in active:
            x, y, z = np.minimum(np.floor((points[i] - lo) / h).astype(int), dims - 1)
            c = f["grid_first_cell"][k] + (z * dims[1] + y) * dims[0] + x
            assert i in f["cell_probe"][f["cell_start"][c]:f["cell_start"][c + 1]]
        binned += active
    assert sorted(f["cell_probe"].tolist()) == binned                   # each active probe once, no filler
    assert np.array_equal(f["cell_pos"], points[f["cell_probe"]])


@pytest.mark.parametrize("spacing", [1.0, 0.9])
@pytest.mark.parametrize("dtype,tol", [("float64", 1e-9), ("float32", 1e-4)])
def test_probes_on_grid_cell_boundaries_and_box_faces_match_the_independent_sum(dtype, tol, spacing):
    """A 3-D lattice of probes spaced by the probe radius (the grid's cell edge: probes on cell boundaries and on
    the faces of the grid's box) or by 0.9 of it (the last cell reaches beyond the box), the ball over a corner so
    that samples reach the box from outside and across cells: every probe's sum against the independent replay."""
    radius = 0.004
    layers = [centred_lattice(7, spacing * radius) + [0.0, 0.0, z] for z in (0.0, -radius, -2 * radius)]
    probes = np.concatenate([p.reshape(-1, 3) for p in layers])
    normals = np.tile([0.0, 0.0, 1.0], (len(probes), 1))
    suite = make_suite([proximity("px", probes, probe_radius=radius, n_sample_points=3000)],
                       [sphere("ball", 0.01)], dtype=dtype)
    for origin in ([0.012, 0.012, 0.009], [-0.013, 0.0, 0.006], [0.0, 0.0, -0.004]):
        step(suite, 0.0, {"ball": (rot_z(0.3), np.array(origin))})
        force, torque = (numpy(x) for x in suite.read_ground_truth("px"))
        f_ref, t_ref = replay(suite.point_cloud("px"), rot_z(0.3), np.array(origin), np.zeros(3), np.zeros(3),
                              probes, normals, radius, 100.0, 0.0, 1.0, 100)
        touched = np.abs(f_ref).sum(1) > 0
        assert 0 < touched.sum() < len(probes)
        assert np.abs(force - f_ref).max() <= tol * np.abs(f_ref).max()
        assert (force[~touched] == 0).all()
