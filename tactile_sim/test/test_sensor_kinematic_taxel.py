"""KinematicTaxel (docs/models/kinematic_taxel.md#model): spring–damper force and torque, closed-form checks on a
pad."""

import numpy as np
import pytest
import torch

from helpers_scenes import grid_layout, make_suite, pose, rot_z

R, K_N = 0.002, 1000.0
HALF = 0.0125  # half footprint of the pressing box, m


def taxel(**extra):
    return {"type": "KinematicTaxel", "name": "kt", "link": "pad", "probe_radius": R,
            "probe_local_pos": grid_layout(9, 0.02), **extra}


def block(size=(2 * HALF, 2 * HALF, 0.05)):
    return {"name": "block", "geometry": [{"box": {"size": list(size)}}], "pose": {"xyz": [0, 0, 1.0]}}


def probe_positions(n=9, half=0.02):
    u = np.linspace(-half, half, n)
    x, y = np.meshgrid(u, u, indexing="xy")
    return np.stack([x, y, np.zeros_like(x)], -1)


def covered_mask(d):
    p = probe_positions()
    inside = np.minimum(HALF - np.abs(p[..., 0]), HALF - np.abs(p[..., 1]))
    return inside > d


def press(suite, t, d, *, rot=None, lin=(0, 0, 0), ang=(0, 0, 0)):
    r, p = pose([0.0, 0.0, 0.025 - d], rot)
    twist = (torch.tensor(lin, dtype=torch.float64), torch.tensor(ang, dtype=torch.float64))
    suite.update(t, object_poses={"block": (r, p)}, object_twists={"block": twist})


@pytest.mark.parametrize("exponent", [1.0, 1.5])
def test_static_box_face(exponent):
    d = 0.001
    suite = make_suite([taxel(normal_exponent=exponent)], [block()])
    press(suite, 0.0, d)
    force, torque = (v.numpy() for v in suite.read_ground_truth("kt"))
    cov = covered_mask(d)
    expected_f = np.zeros(3)
    expected_f[2] = -K_N * (R + d) ** exponent
    np.testing.assert_allclose(force[cov], np.broadcast_to(expected_f, force[cov].shape), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(torque, np.cross(probe_positions(), force), atol=1e-15)
    far = ~covered_mask(-R)  # beyond the sensing radius of every face
    assert np.all(force[far] == 0) and np.all(torque[far] == 0)


def test_sphere_force_field_is_radial_and_balanced():
    r, d = 0.02, 0.002
    ball = {"name": "ball", "geometry": [{"sphere": {"radius": r}}], "pose": {"xyz": [0, 0, r - d]}}
    suite = make_suite([taxel()], [ball])
    suite.update(0.0)
    force, torque = (v.numpy() for v in suite.read_ground_truth("kt"))
    c = np.array([0.0, 0.0, r - d])
    rel = probe_positions() - c
    dist = np.linalg.norm(rel, axis=-1)
    mag = np.maximum(0.0, R + r - dist)
    expected = np.where((mag > 0)[..., None], K_N * mag[..., None] * rel / dist[..., None], 0.0)
    np.testing.assert_allclose(force, expected, atol=1e-12)
    assert abs(force[..., 0].sum()) < 1e-12 and abs(force[..., 1].sum()) < 1e-12
    assert abs(torque[..., 2].sum()) < 1e-12
    assert force[..., 2].sum() < 0


def test_pressing_speed_adds_damping():
    d, w, c_n = 0.001, 0.05, 3.0
    suite = make_suite([taxel(normal_damping=c_n)], [block()])
    press(suite, 0.0, d, lin=(0, 0, -w))
    force = suite.read_ground_truth("kt").force.numpy()
    s = R + d
    np.testing.assert_allclose(np.linalg.norm(force[covered_mask(d)], axis=-1), K_N * s + c_n * s * w, rtol=1e-12)


def test_sliding_drags_the_skin_along():
    d, u, k_t = 0.001, 0.2, 2.5
    suite = make_suite([taxel(shear_scalar=k_t)], [block()])
    press(suite, 0.0, d, lin=(u, 0, 0))
    force = suite.read_ground_truth("kt").force.numpy()[covered_mask(d)]
    np.testing.assert_allclose(force[:, 0], k_t * u, rtol=1e-12)
    np.testing.assert_allclose(force[:, 2], -K_N * (R + d), rtol=1e-12)


@pytest.mark.parametrize("k_tw", [0.0, 1.0, 3.0])
def test_spin_about_the_normal(k_tw):
    d, omega = 0.001, 2.0
    suite = make_suite([taxel(twist_scalar=k_tw)], [block()])
    press(suite, 0.0, d, rot=rot_z(0.3), ang=(0, 0, omega))
    force, torque = (v.numpy() for v in suite.read_ground_truth("kt"))
    p = probe_positions()
    inside = np.linalg.norm(p[..., :2], axis=-1) < HALF - d  # covered whatever the box's yaw
    twist = torque[..., 2] - np.cross(p, force)[..., 2]
    np.testing.assert_allclose(twist[inside], k_tw * omega, atol=1e-12)


def test_hover_and_gain():
    gap = 0.0005
    suite = make_suite([taxel(probe_gain=1.5)], [block()])
    press(suite, 0.0, -gap)
    gt = suite.read_ground_truth("kt").force
    meas = suite.read("kt").force
    cov = torch.as_tensor(covered_mask(gap))
    np.testing.assert_allclose(gt[cov][:, 2].numpy(), -K_N * (R - gap), rtol=1e-12)
    torch.testing.assert_close(meas[..., 2], 1.5 * gt[..., 2], rtol=1e-15, atol=0)


def test_grid_sensor_in_world_and_link_frames_agree_under_rotation():
    """Rotating the pad and the block together leaves the link-frame outputs unchanged."""
    d = 0.001
    ref = make_suite([taxel()], [block()])
    press(ref, 0.0, d, lin=(0.1, 0.05, -0.02))
    f_ref, t_ref = ref.read_ground_truth("kt")

    angle = 0.7
    c, s = np.cos(angle), np.sin(angle)
    rx = np.array([[1, 0, 0], [0, c, -s], [0, s, c]]) @ rot_z(0.4)
    rot = torch.as_tensor(rx)
    suite = make_suite([taxel()], [block()])
    block_pos = rot @ torch.tensor([0.0, 0.0, 0.025 - d], dtype=torch.float64)
    twist = (rot @ torch.tensor([0.1, 0.05, -0.02], dtype=torch.float64), torch.zeros(3, dtype=torch.float64))
    suite.update(0.0, object_poses={"block": (rot, block_pos), "pad": (rot, torch.zeros(3, dtype=torch.float64))},
                 object_twists={"block": twist})
    f, t = suite.read_ground_truth("kt")
    torch.testing.assert_close(f, f_ref, atol=1e-12, rtol=0)
    torch.testing.assert_close(t, t_ref, atol=1e-12, rtol=0)


@pytest.mark.parametrize("n, gain", [(9, 1.5), (20, 1.5), (20, 1.0)])
def test_contact_list_none_all_and_one_env(n, gain):
    """The kernel lists the probes that found a shape and evaluates the model over that list: a step without any
    contact reads zeros everywhere (nothing stale of the step before), a block covering every probe (each block's
    list full) gives every probe the closed-form force on both branches, and a press in one env only leaves the
    other envs at zero. n = 9: 243 (env, probe) pairs, the kernel writes the zeros itself; n = 20: a fill before the
    launch; gain 1: no imperfection, one buffer holds both branches."""
    d, envs = 0.001, 3
    suite = make_suite([taxel(probe_local_pos=grid_layout(n, 0.02), probe_gain=gain)],
                       [block(size=(0.2, 0.2, 0.05))], n_envs=envs)
    batch = suite.batches[0][1]
    assert batch.fill_before == (n == 20)
    if gain == 1.0:
        measured, truth = batch.branch.staging()
        assert measured is truth
    far, pressed = 1.0, 0.025 - d

    def step(t, heights):
        rot = torch.eye(3, dtype=torch.float64).expand(envs, 3, 3)
        pos = torch.tensor([[0.0, 0.0, h] for h in heights], dtype=torch.float64)
        rest = torch.zeros(envs, 3, dtype=torch.float64)
        suite.update(t, object_poses={"block": (rot, pos)}, object_twists={"block": (rest, rest)})
        return [torch.cat(v, -1) for v in (suite.read_ground_truth("kt"), suite.read("kt"))]

    expected = torch.zeros(envs, n, n, 6, dtype=torch.float64)
    expected[..., 2] = -K_N * (R + d)
    arms = torch.as_tensor(probe_positions(n)).expand(envs, n, n, 3)
    expected[..., 3:] = torch.cross(arms, expected[..., :3], dim=-1)
    for t, heights in enumerate([(pressed,) * envs, (far,) * envs, (pressed,) * envs, (far, pressed, far)]):
        truth, measured = step(0.01 * t, heights)
        touched = torch.tensor([h == pressed for h in heights])[:, None, None, None]
        torch.testing.assert_close(truth, torch.where(touched, expected, 0.0), rtol=1e-12, atol=1e-15)
        torch.testing.assert_close(measured, torch.where(touched, gain * expected, 0.0), rtol=1e-12, atol=1e-15)


def rotation(axis, angle):
    """Rotation matrix about the unit ``axis`` by ``angle`` rad (Rodrigues)."""
    k = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    skew = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * skew + (1.0 - np.cos(angle)) * skew @ skew


PRIMITIVES = {  # object geometry → per env (rotation, position): tilted, shifted, pressed about 1 mm into the pad
    "sphere": ({"sphere": {"radius": 0.02}},
               [(rotation((1, 2, 3), 0.7), (0.003, -0.002, 0.021)), (np.eye(3), (-0.011, 0.006, 0.0215)),
                (rotation((0, 0, 1), 2.0), (0.0, 0.0, 0.0205))]),
    "capsule": ({"capsule": {"radius": 0.008, "length": 0.03}},
                [(rotation((1, 0.3, 0), np.pi / 2), (0.002, 0.001, 0.009)),   # lying: its side on the pad
                 (rotation((1, -1, 0), 0.4), (0.001, -0.004, 0.0225)),         # tilted: a cap on the pad
                 (rotation((1, 0, 0), 0.5) @ rotation((0, 1, 0), np.pi / 2), (0.0, 0.0, 0.0))]),  # axis on row y = 0
    "plane": ({"plane": {}, "origin": {"rpy": [np.pi, 0.0, 0.0]}},          # solid side above the plane
              [(rotation((1, 0, 0), 0.05), (0.0, 0.0, 0.0011)), (rotation((1, 1, 0), -0.08), (0.004, 0.0, 0.0005)),
               (np.eye(3), (0.0, 0.0, 0.003))]),                                 # out of reach: no contact
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", sorted(PRIMITIVES))
def test_single_primitive_cells_follow_the_scene_query(kind, dtype):
    """A cell whose only candidate is a sphere, capsule or plane is queried as lanes of one native loop
    (:func:`~tactile_sim.sensors.points.cell_kernel.cell_kernel`, listed): every probe's ground truth is the model
    of the scene query (:meth:`ShapeQuery.query`, a second implementation of the nearest shape) at the probe,
    F = k_n (R − sd) n and T = p × F for an object at rest (0 where R − sd ≤ ε_d), for tilted and shifted objects
    in three envs, including probes on a capsule's axis (the query's fallback direction) and an env without
    contact."""
    geometry, poses = PRIMITIVES[kind]
    envs = len(poses)
    suite = make_suite([taxel(probe_local_pos=grid_layout(21, 0.02))], [{"name": "obj", "geometry": [geometry]}],
                       n_envs=envs, dtype=dtype)
    rot = torch.as_tensor(np.stack([r for r, _ in poses]), dtype=torch.float64)
    pos = torch.as_tensor(np.array([p for _, p in poses]), dtype=torch.float64)
    rest = torch.zeros(envs, 3, dtype=torch.float64)
    state = suite.update(0.0, object_poses={"obj": (rot, pos)}, object_twists={"obj": (rest, rest)})
    force, torque = (t.reshape(envs, -1, 3).double() for t in suite.read_ground_truth("kt"))

    batch = suite.batches[0][1]
    probes = batch.probes
    link_rot, link_pos = probes.link_pose(state)
    x = probes.world_positions(link_rot, link_pos)
    hit = probes.query(x, state, batch.cutoff)
    depth = R - hit.sd
    touching = (hit.shape >= 0) & (depth > 1e-9)
    world_force = torch.where(touching[..., None], K_N * depth[..., None] * hit.normal, 0.0)
    expected_force = probes.to_link_frame(link_rot, world_force).double()
    expected_torque = torch.cross(probes.local_pos.double().expand_as(expected_force), expected_force, dim=-1)
    contacts = touching.sum(-1).tolist()
    assert min(contacts[:2]) >= 10 and (contacts[2] == 0 if kind == "plane" else contacts[2] >= 10), contacts
    tol = {"rtol": 1e-9, "atol": 1e-12} if dtype == "float64" else {"rtol": 1e-4, "atol": 2e-5}
    torch.testing.assert_close(force, expected_force, **tol)
    torch.testing.assert_close(torque, expected_torque, **tol)
