"""ProximityTaxel (spec §8): replay against an independent NumPy sum over the exposed cloud, the flat-face closed form,
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
    """§8 from the exposed cloud for a pad fixed at the origin (link frame = world frame), one tracked body."""
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
