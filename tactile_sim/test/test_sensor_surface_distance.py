"""SurfaceDistanceProbe (docs/models/surface_distance_probe.md#model): exact capped distances and nearest points
(analytic primitives and a real mesh
against trimesh), inside/edge cases, switching bodies, imperfections on the distance only, and nearest points that
share read()'s delay and history."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import trimesh

from helpers_pointcloud import box, make_suite, numpy, sphere, step
from tactile_sim.suite import SensorSuite


def probe(name: str, positions, **kw) -> dict:
    return {"type": "SurfaceDistanceProbe", "name": name, "link": "pad",
            "probe_local_pos": np.asarray(positions).tolist(), **kw}


PROBES = np.array([[0.0, 0.0, 0.0], [0.01, -0.02, 0.0], [-0.03, 0.02, 0.001], [0.2, 0.2, 0.0]])


@pytest.mark.parametrize("dtype,tol,surface_tol", [("float64", 1e-12, 1e-12), ("float32", 1e-6, 1e-6)])
def test_in_range_distance_and_nearest_point_on_the_sphere(dtype, tol, surface_tol):
    centre, r = np.array([0.004, -0.003, 0.05]), 0.02
    suite = make_suite([probe("sd", PROBES, track=["ball"], probe_radius=0.1)], [sphere("ball", r)], dtype=dtype)
    step(suite, 0.0, {"ball": centre})
    d, nearest = numpy(suite.read_ground_truth("sd")), numpy(suite.nearest_points_ground_truth("sd"))
    world = PROBES                                                  # the pad sits at the origin
    inside = d < 0.1
    assert inside[:3].all() and not inside[3]
    assert np.abs(d[inside] - np.linalg.norm(nearest[inside] - world[inside], axis=1)).max() <= tol
    assert np.abs(np.linalg.norm(nearest[inside] - centre, axis=1) - r).max() <= surface_tol
    assert np.abs(d[inside] - (np.linalg.norm(world[inside] - centre, axis=1) - r)).max() <= max(tol, 1e-12)
    # (2) out of range: exactly the cap and the probe itself
    assert d[3] == np.asarray(0.1, dtype=np.float32 if dtype == "float32" else np.float64)
    assert np.array_equal(nearest[3], numpy(torch.as_tensor(PROBES[3]).to(getattr(torch, dtype))))


def test_matches_trimesh_on_a_real_mesh(tmp_path):
    mesh = trimesh.creation.capsule(height=0.03, radius=0.012, count=[16, 16])
    path = tmp_path / "capsule.stl"
    mesh.export(path)
    mesh = trimesh.load(path)                      # STL stores float32 vertices: compare against what was saved
    rng = np.random.default_rng(5)
    points = rng.uniform(-0.03, 0.03, (60, 3)) + [0.0, 0.0, 0.02]
    sensor = probe("sd", points, track=["ball"], probe_radius=0.05)
    obj = {"name": "ball", "geometry": [{"mesh": {"file": str(path)}}], "pose": {"xyz": [0.0, 0.0, 0.02]}}
    suite = make_suite([sensor], [obj])
    step(suite, 0.0)
    d, nearest = numpy(suite.read_ground_truth("sd")), numpy(suite.nearest_points_ground_truth("sd"))
    # brute force over every triangle (trimesh.proximity.closest_point culls candidates and can miss the nearest
    # triangle of a point inside the mesh)
    local = points - [0.0, 0.0, 0.02]
    tris = np.repeat(mesh.triangles[None], len(local), 0).reshape(-1, 3, 3)
    candidates = trimesh.triangles.closest_point(tris, np.repeat(local, len(mesh.faces), 0)).reshape(len(local), -1, 3)
    gaps = np.linalg.norm(candidates - local[:, None], axis=-1)
    closest = candidates[np.arange(len(local)), gaps.argmin(1)]
    dist = gaps.min(1)
    expected = np.minimum(dist, 0.05)
    assert (dist < 0.05).all() and mesh.contains(local).any()
    assert np.abs(d - expected).max() <= 1e-12
    assert np.abs(nearest - (closest + [0.0, 0.0, 0.02])).max() <= 1e-12


def test_inside_a_box_and_near_an_edge():
    half = np.array([0.02, 0.015, 0.01])
    centre = np.array([0.0, 0.0, 0.03])
    inside = centre + [0.02 - 0.003, 0.0, 0.0]                     # 3 mm from the +x face
    edge = centre + [0.02 + 0.002, 0.015 + 0.004, 0.0]             # outside, 2 mm / 4 mm from the faces
    suite = make_suite([probe("sd", [inside, edge], track=["ball"])], [box("ball", 2 * half, centre)])
    step(suite, 0.0)
    d, nearest = numpy(suite.read_ground_truth("sd")), numpy(suite.nearest_points_ground_truth("sd"))
    assert abs(d[0] - 0.003) < 1e-15 and np.allclose(nearest[0], centre + [0.02, 0.0, 0.0], rtol=0, atol=1e-15)
    assert abs(d[1] - np.hypot(0.002, 0.004)) < 1e-15
    assert np.allclose(nearest[1], centre + [0.02, 0.015, 0.0], rtol=0, atol=1e-15)


def test_moving_the_closest_sphere_away_switches_to_the_next():
    sensor = probe("sd", [[0.0, 0.0, 0.0]], track=["a", "b"], probe_radius=0.5)
    suite = make_suite([sensor], [sphere("a", 0.01, (0.0, 0.0, 0.05)), sphere("b", 0.02, (0.0, 0.1, 0.0))])
    step(suite, 0.0)
    assert abs(numpy(suite.read_ground_truth("sd"))[0] - 0.04) < 1e-15
    step(suite, 0.01, {"a": (0.0, 0.0, 0.2)})
    assert abs(numpy(suite.read_ground_truth("sd"))[0] - 0.08) < 1e-15
    assert np.allclose(numpy(suite.nearest_points_ground_truth("sd"))[0], [0.0, 0.08, 0.0], rtol=0, atol=1e-15)


def test_empty_track_reads_the_cap():
    suite = make_suite([probe("sd", PROBES[:2], probe_radius=[0.3, 0.4])], [sphere("ball", 0.01, (0, 0, 0.02))])
    step(suite, 0.0)
    assert np.array_equal(numpy(suite.read("sd")), [0.3, 0.4])
    assert np.array_equal(numpy(suite.nearest_points("sd")), PROBES[:2])


def test_noise_acts_on_the_distance_only_and_ground_truth_is_unchanged():
    noisy = dict(bias=0.1, noise=0.01, random_walk=0.01, resolution=1e-3)
    suite = make_suite([probe("noisy", PROBES, track=["ball"], probe_radius=0.1, **noisy),
                        probe("clean", PROBES, track=["ball"], probe_radius=0.1)], [sphere("ball", 0.02)])
    for k in range(3):
        step(suite, 0.01 * k, {"ball": (0.0, 0.0, 0.05)})
        gt = numpy(suite.read_ground_truth("noisy"))
        assert np.array_equal(gt, numpy(suite.read_ground_truth("clean")))
        measured = numpy(suite.read("noisy"))
        assert (measured != gt).all() and np.abs(measured - gt).mean() > 0.05     # bias 0.1 dominates
        assert np.allclose(measured / 1e-3, np.round(measured / 1e-3), rtol=0, atol=1e-9)
        assert np.array_equal(numpy(suite.nearest_points("noisy")), numpy(suite.nearest_points_ground_truth("noisy")))


def test_radius_noise_changes_only_the_measured_cap():
    suite = make_suite([probe("sd", PROBES[3:], track=["ball"], probe_radius=0.1, probe_radius_noise=0.05)],
                       [sphere("ball", 0.02)], n_envs=4)
    suite.update(0.0)
    measured, gt = numpy(suite.read("sd"))[:, 0], numpy(suite.read_ground_truth("sd"))[:, 0]
    assert (gt == 0.1).all() and (np.abs(measured - 0.1) <= 0.05).all() and len(np.unique(measured)) == 4


def test_nearest_points_share_the_delay_and_history_of_read():
    suite = make_suite([probe("sd", PROBES[:2], track=["ball"], probe_radius=0.2, delay=0.01, history_length=3)],
                       [sphere("ball", 0.01)])
    truth = []
    for k in range(4):
        step(suite, 0.01 * k, {"ball": (0.0, 0.0, 0.03 + 0.01 * k)})
        truth.append((numpy(suite.read_ground_truth("sd"))[0], numpy(suite.nearest_points_ground_truth("sd"))[0]))
    value, valid = suite.read("sd", with_valid=True)
    points, points_valid = suite.nearest_points("sd", with_valid=True)
    assert value.shape == (3, 2) and points.shape == (3, 2, 3)
    assert torch.equal(valid, points_valid) and valid.tolist() == [True, True, True]
    for slot, evaluation in enumerate((2, 1, 0)):               # newest first, one step late
        assert np.array_equal(numpy(value)[slot], truth[evaluation][0])
        assert np.array_equal(numpy(points)[slot], truth[evaluation][1])


def test_channel_reads_are_refused_on_other_sensor_types():
    suite = make_suite([probe("sd", PROBES[:1], track=["ball"]),
                        {"type": "ContactDepthProbe", "name": "depth", "link": "pad"}], [sphere("ball", 0.01)])
    step(suite, 0.0)
    with pytest.raises(TypeError, match="'depth' is a ContactDepthProbe, which has no read_nearest_points"):
        suite.nearest_points("depth")
    with pytest.raises(TypeError, match="has no point_cloud"):
        suite.point_cloud("sd")


URDF = """<robot name="finger">
  <link name="base"><collision><origin xyz="0 0 -0.01"/><geometry><box size="0.08 0.08 0.02"/></geometry></collision>
  </link>
  <link name="tip"><collision><geometry><sphere radius="0.01"/></geometry></collision></link>
  <joint name="slide" type="prismatic"><parent link="base"/><child link="tip"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>
"""


def test_robot_links_are_tracked_like_objects(tmp_path):
    # all three tracked-geometry sensors: the same sphere as a robot link (posed by a prismatic joint, sensor on the
    # parent link — tracking ignores the candidate rule) and as an object: identical readings
    path = tmp_path / "finger.urdf"
    path.write_text(URDF)
    grid = {"grid": {"lo": [-0.01, -0.01, 0.0], "hi": [0.01, 0.01, 0.0], "nx": 5, "ny": 5}}
    readings = []
    for tracked, link in (("tip", "base"), ("ball", "pad")):
        sensors = [{"type": t, "name": t, "link": link, "track": [tracked], "probe_local_pos": grid, **kw}
                   for t, kw in (("ElastomerTaxel", {}), ("ProximityTaxel", {"probe_radius": 0.004}),
                                 ("SurfaceDistanceProbe", {"probe_radius": 0.05}))]
        if tracked == "tip":
            cfg = {"suite": {"dt": 0.01, "dtype": "float64"}, "robot": {"urdf": str(path)}, "sensors": sensors}
            suite = SensorSuite.from_yaml(cfg)
            suite.update(0.0, joint_pos=torch.tensor([[0.0085]], dtype=torch.float64))
        else:
            suite = make_suite(sensors, [sphere("ball", 0.01)])
            step(suite, 0.0, {"ball": (0.0, 0.0, 0.0085)})
        readings.append([numpy(suite.read_ground_truth("ElastomerTaxel")),
                         numpy(suite.read_ground_truth("ProximityTaxel").force),
                         numpy(suite.read_ground_truth("SurfaceDistanceProbe"))])
    for link_reading, object_reading in zip(*readings):
        assert np.abs(link_reading).max() > 0
        assert np.allclose(link_reading, object_reading, rtol=1e-12, atol=1e-15)


def _rotation(rng) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def _nearest_on_box(local: np.ndarray, half: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unsigned distance and closest surface point of box-frame points (K, 3) to a centred box (independent NumPy)."""
    q = np.abs(local) - half
    outside = (q > 0).any(axis=1)
    point = np.clip(local, -half, half)
    axis = np.argmax(q, axis=1)                       # inside: push the point onto the nearest face
    inner = local.copy()
    rows = np.arange(len(local))
    inner[rows, axis] = np.sign(local[rows, axis]) * half[axis]
    point = np.where(outside[:, None], point, inner)
    return np.linalg.norm(point - local, axis=1), point


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 2e-6)])
def test_two_links_two_bodies_and_envs_match_closed_forms(dtype, tol):
    """The fused kernel (probes placed on two moving links, several kernel threads, one pose per env) against the
    analytic unsigned distances to a sphere and a rotated box, with the nearest points; the measured cap R̃ only
    changes probes whose distance lies within the noise band of the cap."""
    rng = np.random.default_rng(8)
    many = np.column_stack([rng.uniform(-0.04, 0.04, (100, 2)), rng.uniform(0.0, 0.012, 100)])
    few = np.column_stack([rng.uniform(-0.02, 0.02, (7, 2)), rng.uniform(0.0, 0.01, 7)])
    cap = {"a": 0.015, "b": 0.006}
    noise = 0.004
    sensors = [probe("a", many, track=["ball", "cube"], probe_radius=cap["a"], probe_radius_noise=noise),
               {**probe("b", few, track=["cube"], probe_radius=cap["b"]), "link": "plate"}]
    half = np.array([0.012, 0.015, 0.006])
    objects = [box("plate", (0.05, 0.05, 0.004)), sphere("ball", 0.012), box("cube", 2 * half)]
    n_envs = 3
    suite = make_suite(sensors, objects, n_envs=n_envs, dtype=dtype)
    names = ("pad", "plate", "ball", "cube")
    rots = {n: np.stack([_rotation(rng) for _ in range(n_envs)]) for n in names}
    pad_pos = rng.uniform(-0.05, 0.05, (n_envs, 3))
    in_pad = {"plate": (0.0, 0.01, 0.005), "ball": (0.012, 0.0, 0.02), "cube": (-0.012, 0.006, 0.006)}
    pos = {"pad": pad_pos, **{n: pad_pos + np.einsum("eij,j->ei", rots["pad"], np.asarray(p) + rng.uniform(
        -0.002, 0.002, 3)) for n, p in in_pad.items()}}
    suite.update(0.0, object_poses={n: (torch.as_tensor(rots[n]), torch.as_tensor(pos[n])) for n in names})
    for name, link, probes, tracked in (("a", "pad", many, ("ball", "cube")), ("b", "plate", few, ("cube",))):
        d, nearest = numpy(suite.read_ground_truth(name)), numpy(suite.nearest_points_ground_truth(name))
        measured = numpy(suite.read(name))
        for e in range(n_envs):
            x = probes @ rots[link][e].T + pos[link][e]
            best, point = np.full(len(x), np.inf), x.copy()
            for body in tracked:                                         # scene order: ball before cube
                if body == "ball":
                    rel = x - pos["ball"][e]
                    gap = np.linalg.norm(rel, axis=1)
                    dist, closest = np.abs(gap - 0.012), pos["ball"][e] + 0.012 * rel / gap[:, None]
                else:
                    dist, local = _nearest_on_box((x - pos["cube"][e]) @ rots["cube"][e], half)
                    closest = local @ rots["cube"][e].T + pos["cube"][e]
                better = dist < best
                best, point = np.where(better, dist, best), np.where(better[:, None], closest, point)
            found = best < cap[name]
            assert 0 < found.sum() < len(x) or name == "b"
            expected = np.where(found, best, cap[name])
            assert np.abs(d[e] - expected).max(initial=0.0) <= tol * max(1.0, 100 * cap[name])
            assert np.abs(nearest[e][found] - point[found]).max(initial=0.0) <= tol * 10
            assert np.abs(nearest[e][~found] - x[~found]).max(initial=0.0) <= tol * 10          # the probe centre
            if name == "a":                                              # R̃ ∈ [R − a, R + a]
                sure = best < cap[name] - noise
                assert np.abs(measured[e][sure] - best[sure]).max(initial=0.0) <= tol * 100 * cap[name]
                assert (measured[e] <= cap[name] + noise * (1 + 1e-6)).all()
            else:
                assert np.array_equal(measured[e], d[e])
