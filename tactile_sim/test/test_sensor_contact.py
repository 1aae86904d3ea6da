"""ContactSensor (docs/models/contact_sensor.md#model): penalty contact over a body's collision surface, filters,
timers, frames and history."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

from tactile_sim.errors import ConfigError
from tactile_sim.suite import SensorSuite

K_C, MU, V_S = 1e7, 0.5, 1e-3
SIZE = (0.1, 0.06, 0.04)  # sensor box edges, m
SPACING = 0.01  # bottom face lattice: 10 × 6 cells of 1 cm², side samples start 5 mm above the bottom


def box(name="box", size=SIZE, xyz=(0.0, 0.0, 1.0), origin=(0.0, 0.0, 0.0)):
    return {"name": name, "geometry": [{"box": {"size": list(size)}, "origin": {"xyz": list(origin)}}],
            "pose": {"xyz": list(xyz)}}


def ground(name="ground"):
    return {"name": name, "geometry": [{"plane": {}}]}


def sensor(**extra):
    return {"type": "ContactSensor", "name": "cs", "prim_path": "box", "surface_sample_spacing": SPACING, **extra}


def make(sensors, objects, n_envs=0, dt=0.01, dtype="float64"):
    return SensorSuite.from_yaml({"suite": {"dt": dt, "n_envs": n_envs, "dtype": dtype},
                                  "objects": objects, "sensors": sensors})


def t64(x):
    return torch.as_tensor(np.asarray(x, dtype=np.float64))


def place(suite, t, d, *, rot=None, lin=(0, 0, 0), ang=(0, 0, 0), name="box", height=SIZE[2]):
    """Pose the sensor box so that its bottom face is d below z = 0 (its origin at the box centre)."""
    r = np.eye(3) if rot is None else rot
    suite.update(t, object_poses={name: (t64(r), t64(r @ [0, 0, height / 2 - d]))},
                 object_twists={name: (t64(lin), t64(ang))})


@pytest.mark.parametrize("exponent", [1.0, 1.5])
def test_resting_box_normal_force_is_k_d_to_the_e_times_area(exponent):
    d = 2e-4
    suite = make([sensor(contact_exponent=exponent, track_friction_forces=True)], [box(), ground()])
    place(suite, 0.0, d)
    data = suite.read("cs")
    area = SIZE[0] * SIZE[1]
    np.testing.assert_allclose(data.net_normal_forces_w.numpy(), [[0, 0, K_C * d**exponent * area]], rtol=1e-12,
                               atol=1e-9)
    assert torch.equal(data.net_friction_forces_w, torch.zeros(1, 3, dtype=torch.float64))
    np.testing.assert_allclose(data.net_forces_w.numpy(), data.net_normal_forces_w.numpy(), rtol=0, atol=0)
    np.testing.assert_allclose(data.net_torques_w.numpy(), 0.0, atol=1e-9)  # centred box: levers cancel


def test_torque_about_body_origin_is_lever_cross_force():
    d, shift = 1e-4, np.array([0.02, -0.01, 0.0])  # box shape offset from the body origin
    suite = make([sensor()], [box(origin=tuple(shift)), ground()])
    suite.update(0.0, object_poses={"box": (t64(np.eye(3)), t64([0, 0, SIZE[2] / 2 - d]) - t64(shift))})
    data = suite.read("cs")
    force = np.array([0.0, 0.0, K_C * d * SIZE[0] * SIZE[1]])
    lever = shift + [0.0, 0.0, -SIZE[2] / 2 + d]  # bottom-face centroid relative to the body origin
    np.testing.assert_allclose(data.net_torques_w.numpy()[0], np.cross(lever, force), rtol=1e-10, atol=1e-9)


def test_damping_adds_to_pressure_while_penetrating():
    d, w, c = 1e-4, 0.02, 3e8
    suite = make([sensor(contact_damping=c)], [box(), ground()])
    place(suite, 0.0, d, lin=(0, 0, -w))  # moving down: the plane enters faster
    expected = (K_C * d + c * d * w) * SIZE[0] * SIZE[1]
    np.testing.assert_allclose(suite.read("cs").net_forces_w.numpy()[0], [0, 0, expected], rtol=1e-12)


@pytest.mark.parametrize("u", [0.5, 4e-4])
def test_sliding_friction_drags_back_along_velocity(u):
    d = 1e-4
    suite = make([sensor(track_friction_forces=True)], [box(), ground()])
    place(suite, 0.0, d, lin=(u, 0, 0))
    fn = K_C * d * SIZE[0] * SIZE[1]
    expected = -MU * fn * (1.0 if u > V_S else u / V_S)
    data = suite.read("cs")
    np.testing.assert_allclose(data.net_friction_forces_w.numpy()[0], [expected, 0, 0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(data.friction_forces_w.numpy(), data.net_friction_forces_w.numpy())
    np.testing.assert_allclose(data.net_forces_w.numpy()[0], [expected, 0, fn], rtol=1e-12, atol=1e-12)


@given(st.floats(1e-6, 3e-3), st.lists(st.floats(-2.0, 2.0), min_size=6, max_size=6))
def test_friction_never_exceeds_mu_times_normal(d, twist):
    suite = _friction_suite()
    place(suite, 0.0, d, lin=twist[:3], ang=twist[3:])
    data = suite.read("cs")
    ft = torch.linalg.vector_norm(data.net_friction_forces_w).item()
    fn = torch.linalg.vector_norm(data.net_normal_forces_w).item()
    assert ft <= MU * fn * (1 + 1e-12) + 1e-12


_FRICTION_SUITE = []


def _friction_suite():
    if not _FRICTION_SUITE:
        _FRICTION_SUITE.append(make([sensor(track_friction_forces=True)], [box(), ground()]))
    return _FRICTION_SUITE[0]


def test_static_box_on_slope_reads_only_normal_force():
    tilt = 0.3
    c, s = math.cos(tilt), math.sin(tilt)
    rot = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    slope = {"name": "slope", "geometry": [{"plane": {}}], "pose": {"rpy": [0.0, tilt, 0.0]}}
    suite = make([sensor(track_friction_forces=True)], [box(), slope])
    place(suite, 0.0, 1e-4, rot=rot)
    data = suite.read("cs")
    assert torch.equal(data.net_friction_forces_w, torch.zeros(1, 3, dtype=torch.float64))
    np.testing.assert_allclose(data.net_forces_w.numpy()[0], K_C * 1e-4 * SIZE[0] * SIZE[1] * rot[:, 2], rtol=1e-10)


def plates(n=3):
    """Three plates under the box bottom (top at z = 0), split on lattice cell boundaries: x in [−.05, −.01],
    [−.01, .03], [.03, .05] → 24, 24 and 12 bottom samples of 1 cm²."""
    spans = [(-0.05, -0.01), (-0.01, 0.03), (0.03, 0.05)][:n]
    return [{"name": f"plate{i + 1}", "geometry": [{"box": {"size": [hi - lo, 0.2, 0.01]}}],
             "pose": {"xyz": [(lo + hi) / 2, 0.0, -0.005]}} for i, (lo, hi) in enumerate(spans)]


@pytest.mark.parametrize("filters, covered", [(["plate1", "plate2"], False), (["plate1", "plate[23]"], True)])
def test_force_matrix_columns_are_per_object_sums(filters, covered):
    d = 1e-4
    suite = make([sensor(filter_prim_paths_expr=filters, track_friction_forces=True)], [box()] + plates())
    place(suite, 0.0, d)
    data = suite.read("cs")
    per_sample = K_C * d * SPACING**2
    col = data.force_matrix_w.numpy()[0]
    np.testing.assert_allclose(col[0], [0, 0, 24 * per_sample], rtol=1e-12)
    np.testing.assert_allclose(col[1], [0, 0, (36 if covered else 24) * per_sample], rtol=1e-12)
    net = data.net_forces_w.numpy()[0]
    np.testing.assert_allclose(net, [0, 0, 60 * per_sample], rtol=1e-12)
    if covered:
        np.testing.assert_allclose(col.sum(0), net, rtol=1e-12)
    else:
        assert col.sum(0)[2] < net[2] * (1 - 1e-3)
    np.testing.assert_allclose(data.normal_force_matrix_w.numpy(), data.force_matrix_w.numpy())
    assert torch.equal(data.friction_force_matrix_w, torch.zeros_like(data.friction_force_matrix_w))


def test_contact_position_is_bottom_centroid_then_nan():
    suite = make([sensor(filter_prim_paths_expr=["ground"], track_contact_points=True)], [box(), ground()])
    place(suite, 0.0, 1e-4)
    data = suite.read("cs")
    np.testing.assert_allclose(data.contact_pos_w.numpy()[0, 0], [0.0, 0.0, -1e-4], atol=1e-12)
    np.testing.assert_allclose(data.contact_pos_b.numpy()[0, 0], [0.0, 0.0, -SIZE[2] / 2], atol=1e-12)
    place(suite, 0.01, -0.01)
    data = suite.read("cs")
    assert torch.isnan(data.contact_pos_w).all() and torch.isnan(data.contact_pos_b).all()
    assert torch.equal(data.force_matrix_w, torch.zeros_like(data.force_matrix_w))


def test_air_and_contact_timers_across_make_and_break():
    dt = 0.01
    suite = make([sensor(track_air_time=True)], [box(), ground()], dt=dt)
    t = 0.0
    for _ in range(30):  # 0.3 s in the air
        place(suite, t, -0.01)
        t += dt
    data = suite.read("cs")
    np.testing.assert_allclose(data.current_air_time.numpy(), [0.30], rtol=1e-12)
    assert not data.compute_first_air(dt).any()
    place(suite, t, 1e-4)
    t += dt
    data = suite.read("cs")
    np.testing.assert_allclose(data.last_air_time.numpy(), [0.31], rtol=1e-12)
    np.testing.assert_allclose(data.current_contact_time.numpy(), [0.01], rtol=1e-12)
    assert data.current_air_time.item() == 0.0
    assert data.compute_first_contact(dt).all()
    for _ in range(4):
        place(suite, t, 1e-4)
        t += dt
    assert not suite.read("cs").compute_first_contact(dt).any()
    place(suite, t, -0.01)  # break
    data = suite.read("cs")
    np.testing.assert_allclose(data.last_contact_time.numpy(), [0.06], rtol=1e-12)
    np.testing.assert_allclose(data.current_air_time.numpy(), [0.01], rtol=1e-12)
    assert data.compute_first_air(dt).all() and data.current_contact_time.item() == 0.0
    suite.reset()
    data, valid = suite.read("cs", with_valid=True)
    assert not valid
    for name in ("current_air_time", "current_contact_time", "last_air_time", "last_contact_time"):
        assert getattr(data, name).item() == 0.0


def test_timers_need_tracking():
    suite = make([sensor()], [box(), ground()])
    place(suite, 0.0, 1e-4)
    data = suite.read("cs")
    assert data.current_air_time is None and data.net_friction_forces_w is None and data.force_matrix_w is None
    with pytest.raises(RuntimeError, match="track_air_time"):
        data.compute_first_contact(0.01)


def test_force_threshold_decides_contact_state():
    d = 1e-4
    force = K_C * d * SIZE[0] * SIZE[1]
    suite = make([sensor(track_air_time=True, force_threshold=force * 1.01)], [box(), ground()])
    place(suite, 0.0, d)
    assert suite.read("cs").current_contact_time.item() == 0.0
    place(suite, 0.01, 2 * d)
    assert suite.read("cs").current_contact_time.item() == pytest.approx(0.01)


def test_rotating_the_scene_keeps_body_buffers_and_rotates_world_buffers():
    d, u = 2e-4, 0.3
    angle = 0.7
    axis = np.array([1.0, 2.0, 0.5]) / np.linalg.norm([1.0, 2.0, 0.5])
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    rot = np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k
    cfg = dict(filter_prim_paths_expr=["ground"], track_contact_points=True, track_friction_forces=True)
    results = []
    for r in (np.eye(3), rot):
        g = {"name": "ground", "geometry": [{"plane": {}}]}
        suite = make([sensor(**cfg)], [box(), g])
        suite.update(0.0, object_poses={"ground": (t64(r), t64([0, 0, 0])),
                                        "box": (t64(r), t64(r @ [0.01, 0, SIZE[2] / 2 - d]))},
                     object_twists={"box": (t64(r @ [u, 0.1, 0]), t64(r @ [0, 0, 0.5]))})
        results.append(suite.read("cs"))
    a, b = results
    for name in ("net_forces_b", "net_torques_b", "net_friction_forces_b", "force_matrix_b", "contact_pos_b"):
        np.testing.assert_allclose(getattr(b, name).numpy(), getattr(a, name).numpy(), rtol=1e-9, atol=1e-9)
    for name in ("net_forces_w", "net_torques_w", "net_normal_forces_w"):
        np.testing.assert_allclose(getattr(b, name).numpy(), getattr(a, name).numpy() @ rot.T, rtol=1e-9, atol=1e-9)
    assert torch.linalg.vector_norm(a.net_friction_forces_w) > 0


def test_history_is_newest_first():
    suite = make([sensor(history_length=3)], [box(), ground()])
    depths = [1e-4, 2e-4, 3e-4, 4e-4]
    for k, d in enumerate(depths):
        place(suite, 0.01 * k, d)
    hist = suite.read("cs").net_forces_w_history.numpy()
    assert hist.shape == (3, 1, 3)
    np.testing.assert_allclose(hist[:, 0, 2], [K_C * d * SIZE[0] * SIZE[1] for d in depths[::-1][:3]], rtol=1e-12)
    np.testing.assert_allclose(suite.read("cs").net_forces_b_history.numpy(), hist)


def test_env_axis_and_several_bodies_per_sensor():
    objects = [box("box_a", xyz=(0.0, 0, 1)), box("box_b", xyz=(1.0, 0, 1)), ground()]
    for n_envs in (0, 1, 2):
        suite = make([sensor(prim_path="box_.*", track_air_time=True, track_pose=True)], objects, n_envs=n_envs)
        e = max(n_envs, 1)
        poses = {"box_a": (t64(np.eye(3)), t64([0, 0, SIZE[2] / 2 - 1e-4])),
                 "box_b": (t64(np.eye(3)), t64([1.0, 0, SIZE[2] / 2 - 2e-4]))}
        suite.update(0.0, object_poses=poses)
        data, valid = suite.read("cs", with_valid=True)
        lead = () if n_envs == 0 else (e,)
        assert data.net_forces_w.shape == lead + (2, 3) and data.current_air_time.shape == lead + (2,)
        assert valid.shape == lead
        f = data.net_forces_w.reshape(-1, 2, 3)[0]
        np.testing.assert_allclose(f[:, 2].numpy(), [K_C * d * SIZE[0] * SIZE[1] for d in (1e-4, 2e-4)], rtol=1e-12)
        np.testing.assert_allclose(data.pos_w.reshape(-1, 2, 3)[0].numpy(),
                                   [[0, 0, SIZE[2] / 2 - 1e-4], [1.0, 0, SIZE[2] / 2 - 2e-4]])
        assert data.rot_w.shape == lead + (2, 3, 3)
        if n_envs == 2:
            np.testing.assert_allclose(data[1].net_forces_w.numpy(), f.numpy())


def test_float32_matches_float64():
    res = []
    for dtype in ("float64", "float32"):
        suite = make([sensor(track_friction_forces=True)], [box(), ground()], dtype=dtype)
        place(suite, 0.0, 1e-4, lin=(0.2, 0.1, 0.0))
        res.append(suite.read("cs").net_forces_w.double().numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-5)


@pytest.mark.parametrize("extra, objects, match", [
    ({"prim_path": "nothing_.*"}, [box(), ground()], "prim_path: matches no body"),
    ({"filter_prim_paths_expr": ["box"]}, [box(), ground()], r"filter_prim_paths_expr\[0\]: matches the sensor"),
    ({"filter_prim_paths_expr": ["gnd"]}, [box(), ground()], r"filter_prim_paths_expr\[0\]: matches no candidate"),
    ({"prim_path": "ground"}, [box(), ground()], "no sampleable collision geometry"),
    ({"surface_sample_spacing": 1e-4}, [box(), ground()], "exceed 200000"),
])
def test_build_errors_name_the_option(extra, objects, match):
    with pytest.raises(ConfigError, match=match):
        make([sensor(**extra)], objects)


def sphere_on_bottom_face(offsets, depths, radius):
    """Closed form of a sphere (radius R) pushed by d into the box bottom at a lateral offset, from the bottom
    lattice (cell centres of 1 cm², docs/models/scene.md#sampling box faces): per sample at depth δ = R − ‖p − c‖ > 0
    the force
    k_c δ a (p − c)/‖p − c‖ on the box; returns net force, torque about the box centre, contact area and the
    area-weighted mean contact point per env, in the box frame (origin at its centre)."""
    xs = np.arange(-SIZE[0] / 2 + SPACING / 2, SIZE[0] / 2, SPACING)
    ys = np.arange(-SIZE[1] / 2 + SPACING / 2, SIZE[1] / 2, SPACING)
    p = np.stack(np.meshgrid(xs, ys, indexing="ij"), -1).reshape(-1, 2)
    p = np.concatenate([p, np.full((len(p), 1), -SIZE[2] / 2)], 1)
    out = []
    for (cx, cy), d in zip(offsets, depths):
        c = np.array([cx, cy, -SIZE[2] / 2 - radius + d])
        r = np.linalg.norm(p - c, axis=1)
        depth = radius - r
        on = depth > 1e-9
        f = (K_C * depth[on] * SPACING**2)[:, None] * (p[on] - c) / r[on, None]
        area = on.sum() * SPACING**2
        mean = p[on].mean(0) if on.any() else np.full(3, np.nan)
        out.append((f.sum(0), np.cross(p[on], f).sum(0), area, mean))
    return out


@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-10), ("float32", 2e-4)])
def test_box_pressed_into_a_sphere_per_env_matches_the_lattice_closed_form(dtype, rtol):
    """Every env its own pose: off-centre indentations, a barely touching one and one lifted clear (zero, NaN)."""
    radius = 0.25
    offsets = [(0.013, -0.007), (-0.021, 0.004), (0.0, 0.0), (0.002, 0.001)]
    depths = [6e-4, 3e-4, -5e-3, 2e-5]
    ball = {"name": "ball", "geometry": [{"sphere": {"radius": radius}}], "pose": {"xyz": [0.0, 0.0, 0.0]}}
    suite = make([sensor(filter_prim_paths_expr=["ball"], track_contact_points=True)], [box(), ball],
                 n_envs=len(depths), dtype=dtype)
    shift = np.array([0.4, -0.2, 0.3])
    pos = np.stack([shift + [-cx, -cy, radius + SIZE[2] / 2 - d] for (cx, cy), d in zip(offsets, depths)])
    rot = np.tile(np.eye(3), (len(depths), 1, 1))
    suite.update(0.0, object_poses={"box": (t64(rot), t64(pos)), "ball": (t64(np.eye(3)), t64(shift))})
    data = suite.read("cs")
    for e, (force, torque, area, mean) in enumerate(sphere_on_bottom_face(offsets, depths, radius)):
        scale = max(np.linalg.norm(force), 1e-300)
        np.testing.assert_allclose(data.net_forces_w[e, 0].double().numpy(), force, rtol=rtol, atol=rtol * scale)
        np.testing.assert_allclose(data.force_matrix_w[e, 0, 0].double().numpy(), force, rtol=rtol,
                                   atol=rtol * scale)
        np.testing.assert_allclose(data.net_torques_w[e, 0].double().numpy(), torque, rtol=rtol,
                                   atol=rtol * scale * SIZE[0])
        if area == 0:
            assert torch.equal(data.net_forces_w[e], torch.zeros_like(data.net_forces_w[e]))
            assert torch.isnan(data.contact_pos_w[e]).all()
        else:
            np.testing.assert_allclose(data.contact_pos_b[e, 0, 0].double().numpy(), mean, atol=rtol * SIZE[0])
    areas = [a / SPACING**2 for _, _, a, _ in sphere_on_bottom_face(offsets, depths, radius)]
    assert areas[0] >= 5 and areas[1] >= 3 and areas[2] == 0  # several contact samples, one env clear


_CULL_SUITES = {}
_PRIMITIVES = {"ball": {"sphere": {"radius": 0.03}}, "rod": {"capsule": {"radius": 0.01, "length": 0.08}},
               "can": {"cylinder": {"radius": 0.02, "length": 0.05}}, "brick": {"box": {"size": [0.03, 0.05, 0.02]}}}


def _cull_suite(kind):
    if kind not in _CULL_SUITES:
        obj = {"name": "obj", "geometry": [_PRIMITIVES[kind]]}
        _CULL_SUITES[kind] = make([sensor(filter_prim_paths_expr=["obj"])], [box(), obj], n_envs=3)
    return _CULL_SUITES[kind]


def _rotation(v):
    angle = float(np.linalg.norm(v))
    if angle == 0.0:
        return np.eye(3)
    k = np.asarray(v) / angle
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * kx + (1 - math.cos(angle)) * kx @ kx


def _unculled_net_force(suite, exact=False):
    """The static penetration force of sensor "cs" from the generic nearest-shape query of every sample against
    body "obj" (no broad phase, no culls; a mesh by BVH when ``exact``, else by its SDF grid), in the suite's dtype:
    (k_c·depth·area per sample [E, N] float64, net force [E, 3] as a NumPy float64 array)."""
    batch = suite.locate("cs")[0]
    state = suite.world.update(0.0)
    smp = batch.samples
    owner = smp.owner_body[smp.owner]
    x = (state.rot[:, owner] @ smp.local_pos[:, :, None])[..., 0] + state.pos[:, owner]
    query = batch.ctx.query
    mask = query.body_shape_mask([suite.scene.body_index("obj")])[None]
    q = query.query(x.contiguous(), state.rot, state.pos, torch.zeros(smp.n, dtype=torch.int32), mask,
                    torch.full((smp.n,), -1e-9, dtype=state.pos.dtype), group_exact=torch.tensor([exact]))
    depth = torch.where(q.body >= 0, -q.sd, torch.zeros_like(q.sd)).double()
    per_sample = K_C * depth * smp.area.double()
    return per_sample, (per_sample[..., None] * q.normal.double()).sum(1).numpy()


@given(st.sampled_from(sorted(_PRIMITIVES)),
       st.lists(st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6), min_size=3, max_size=3))
def test_culled_kernel_equals_the_unculled_query_sum(kind, envs):
    """Static penetration (e = 1, no damping): net force = Σ k_c·(−sd)·a·n over the samples with sd < −ε_d, with sd
    and n from the generic nearest-shape query of every sample (no broad phase). Random object poses around the box
    surface, one per env, so that cells and blocks sit on both sides of the culling bounds."""
    suite = _cull_suite(kind)
    rots, centres = [], []
    for v in envs:
        rots.append(_rotation(np.array(v[:3]) * 3.0))
        face = np.array(v[3:]) * np.array(SIZE) / 2 * 1.1  # near the box surface, sometimes outside
        centres.append(face)
    box_pos = np.array([0.0, 0.0, 1.0])
    suite.update(0.0, object_poses={"box": (t64(np.tile(np.eye(3), (3, 1, 1))), t64(np.tile(box_pos, (3, 1)))),
                                    "obj": (t64(np.stack(rots)), t64(box_pos + np.stack(centres)))})
    data = suite.read("cs")
    per_sample, expected = _unculled_net_force(suite)
    got = data.net_forces_w[:, 0].numpy()
    scale = max(per_sample.sum(1).max().item(), 1e-6)  # round-off of sums that may cancel
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-11 * scale)
    np.testing.assert_allclose(data.force_matrix_w[:, 0, 0].numpy(), expected, rtol=0, atol=1e-11 * scale)


@pytest.mark.parametrize("depth_query", ["sdf", "raycast"])
def test_culled_kernel_equals_the_unculled_query_sum_for_a_mesh(tmp_path, depth_query):
    """The cell cull drops a mesh from a cell's candidates when its bounding sphere cannot reach the cell: a mesh
    object (an icosphere, by its SDF grid or its BVH) at random poses around the box surface gives the sum over the
    generic query of every sample, as the primitives above do."""
    trimesh = pytest.importorskip("trimesh")
    path = tmp_path / "rock.stl"
    trimesh.creation.icosphere(subdivisions=2, radius=0.03).export(path)
    obj = {"name": "obj", "geometry": [{"mesh": {"file": str(path)}}]}
    suite = SensorSuite.from_yaml({
        "suite": {"dt": 0.01, "n_envs": 3, "dtype": "float64", "sdf_cache_dir": str(tmp_path)},
        "objects": [box(), obj], "sensors": [sensor(filter_prim_paths_expr=["obj"], contact_depth_query=depth_query)]})
    rng = np.random.default_rng(11)
    box_pos = np.array([0.0, 0.0, 1.0])
    touching = 0
    for _ in range(4):
        rots = np.stack([_rotation(rng.uniform(-3.0, 3.0, 3)) for _ in range(3)])
        centres = rng.uniform(-1.0, 1.0, (3, 3)) * np.array(SIZE) / 2 * 1.1  # near the box surface
        suite.update(0.0, object_poses={"box": (t64(np.tile(np.eye(3), (3, 1, 1))), t64(np.tile(box_pos, (3, 1)))),
                                        "obj": (t64(rots), t64(box_pos + centres))})
        got = suite.read("cs").net_forces_w[:, 0].numpy()
        per_sample, expected = _unculled_net_force(suite, exact=depth_query == "raycast")
        touching += int((per_sample.sum(1) > 0).sum())
        scale = max(per_sample.sum(1).max().item(), 1e-6)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-11 * scale)
    assert touching >= 4


def test_live_view_follows_the_buffers_and_read_is_a_copy_of_it():
    d = 2e-4
    suite = make([sensor(filter_prim_paths_expr=["ground"], track_air_time=True, track_friction_forces=True,
                         track_contact_points=True)], [box(), ground()], n_envs=2)
    batch, i = suite.locate("cs")
    view, evaluations = batch.live_view(i)
    assert torch.equal(evaluations, torch.zeros(2, dtype=evaluations.dtype))
    place(suite, 0.0, d)
    read, valid = suite.read("cs", with_valid=True)
    assert valid.tolist() == [True, True] and evaluations.tolist() == [1, 1]  # the view saw the evaluation
    area = SIZE[0] * SIZE[1]
    np.testing.assert_allclose(view.net_normal_forces_w[:, 0, 2].numpy(), K_C * d * area, rtol=1e-12)
    for name in ("net_forces_b", "net_torques_b", "force_matrix_b", "contact_pos_b", "current_contact_time"):
        assert torch.equal(getattr(view, name), getattr(read, name)), name
        assert getattr(view, name).data_ptr() != getattr(read, name).data_ptr(), name  # read owns its copy
    place(suite, 0.01, -0.01)  # lifted: the live buffers change, the earlier read does not
    assert torch.isnan(view.contact_pos_b).all() and not torch.isnan(read.contact_pos_b).any()
    assert torch.equal(view.net_forces_b, torch.zeros_like(view.net_forces_b))
    np.testing.assert_allclose(read.net_normal_forces_w[:, 0, 2].numpy(), K_C * d * area, rtol=1e-12)


_CULL_SUITES_F32: dict = {}


@given(st.sampled_from(sorted(_PRIMITIVES)),
       st.lists(st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6), min_size=3, max_size=3))
def test_float32_culled_kernel_equals_the_unculled_query_sum(kind, envs):
    """The float32 kernel (support-plane culls of cells and samples, single-shape queries) against the float32
    generic query of every sample: the same net force up to float32 round-off of depths at z ≈ 1 m (a sample's
    depth is exact to ~1e-7 m, i.e. k_c·a·1e-7 N), random object poses around the box surface as above."""
    if kind not in _CULL_SUITES_F32:
        obj = {"name": "obj", "geometry": [_PRIMITIVES[kind]]}
        _CULL_SUITES_F32[kind] = make([sensor(filter_prim_paths_expr=["obj"])], [box(), obj], n_envs=3,
                                      dtype="float32")
    suite = _CULL_SUITES_F32[kind]
    rots = [_rotation(np.array(v[:3]) * 3.0) for v in envs]
    centres = [np.array(v[3:]) * np.array(SIZE) / 2 * 1.1 for v in envs]
    box_pos = np.array([0.0, 0.0, 1.0])
    f32 = lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float32)  # noqa: E731
    suite.update(0.0, object_poses={"box": (f32(np.tile(np.eye(3), (3, 1, 1))), f32(np.tile(box_pos, (3, 1)))),
                                    "obj": (f32(np.stack(rots)), f32(box_pos + np.stack(centres)))})
    got = suite.read("cs").net_forces_w[:, 0].double().numpy()
    per_sample, expected = _unculled_net_force(suite)
    area = suite.locate("cs")[0].samples.area.double()
    tol = 1e-4 * per_sample.sum(1).max().item() + K_C * 2e-7 * area.sum().item()
    np.testing.assert_allclose(got, expected, rtol=0, atol=tol)
