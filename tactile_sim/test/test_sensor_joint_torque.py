"""JointTorque (docs/models/joint_torque.md#joint-torque): inverse dynamics of the observed motion plus the suite's
contact loads."""

import math
import re
import sysconfig
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers_dynamics import TREE_URDF, pinocchio_rates, tree_reference
from tactile_sim.errors import ConfigError
from tactile_sim.suite import SensorSuite

M, LC, I_C, G = 2.0, 0.4, 0.01, 9.81
I_TOT = I_C + M * LC**2


def pendulum_urdf(tmp_path: Path, joint_type="revolute", dynamics="") -> Path:
    """A pendulum hinged about x at the root origin: mass M at (0, 0, −LC) in the arm frame (θ = 0 hangs down,
    +θ lifts the mass); a 5 cm collision box centred at (0, 0, −0.5)."""
    limit = '<limit effort="100" velocity="10" lower="-3" upper="3"/>' if joint_type == "revolute" else ""
    text = f"""<robot name="pendulum">
  <link name="base"/>
  <link name="arm">
    <inertial><origin xyz="0 0 {-LC}"/><mass value="{M}"/>
      <inertia ixx="{I_C}" ixy="0" ixz="0" iyy="{I_C}" iyz="0" izz="{I_C}"/></inertial>
    <collision><origin xyz="0 0 -0.5"/><geometry><box size="0.05 0.05 0.05"/></geometry></collision>
  </link>
  <joint name="hinge" type="{joint_type}"><parent link="base"/><child link="arm"/><axis xyz="1 0 0"/>{limit}{dynamics}
  </joint>
</robot>"""
    path = tmp_path / f"pendulum_{joint_type}.urdf"
    path.write_text(text)
    return path


def make(urdf, sensors, objects=(), gravity=(0.0, 0.0, -G), dt=0.001, n_envs=0):
    return SensorSuite.from_yaml({"suite": {"dt": dt, "dtype": "float64", "gravity": list(gravity), "n_envs": n_envs},
                                  "robot": {"urdf": str(urdf)}, "objects": list(objects), "sensors": sensors})


def jt(name="jt", **extra):
    return {"type": "JointTorque", "name": name, **extra}


@pytest.mark.parametrize("theta", [0.0, 0.4, 1.3, -2.0])
def test_static_pendulum_reads_gravity_torque(tmp_path, theta):
    suite = make(pendulum_urdf(tmp_path), [jt()])
    for k in range(3):
        suite.update(k * 0.001, joint_pos=[theta])
    value, valid = suite.read("jt", with_valid=True)
    assert bool(valid)
    np.testing.assert_allclose(value.numpy(), [M * G * LC * math.sin(theta)], rtol=1e-12, atol=1e-12)


def test_prescribed_motion_given_acceleration_is_exact(tmp_path):
    a, w = 0.3, 5.0
    suite = make(pendulum_urdf(tmp_path), [jt()], gravity=(0, 0, 0))
    for k in range(20):
        t = k * 0.001
        suite.update(t, joint_pos=[a * math.sin(w * t)], joint_vel=[a * w * math.cos(w * t)],
                     joint_acc=[-a * w * w * math.sin(w * t)])
        value, valid = suite.read("jt", with_valid=True)
        assert bool(valid)
        np.testing.assert_allclose(value.numpy(), [I_TOT * -a * w * w * math.sin(w * t)], rtol=1e-12, atol=1e-14)


def test_finite_differences_without_filter_are_first_order(tmp_path):
    a, w, dt = 0.3, 5.0, 1e-3
    suite = make(pendulum_urdf(tmp_path), [jt(acceleration_cutoff_hz=None, velocity_source="finite_difference")],
                 gravity=(0, 0, 0), dt=dt)
    errors = []
    for k in range(200):
        t = k * dt
        suite.update(t, joint_pos=[a * math.sin(w * t)], joint_vel=[123.0])  # message velocity must be ignored
        value, valid = suite.read("jt", with_valid=True)
        if k >= 2:
            assert bool(valid)
            errors.append(abs(value.item() - I_TOT * -a * w * w * math.sin(w * t)))
    # the second difference is centred one step back: error ≤ I·max|θ⃛|·Δt·(1 + O(Δt))
    assert max(errors) <= 1.05 * I_TOT * a * w**3 * dt


def test_passive_swing_reads_almost_zero(tmp_path):
    dt, sub = 1e-3, 20
    omega2 = M * G * LC / I_TOT
    th, v = 1.0, 0.0
    samples = []
    h = dt / sub
    for _ in range(400):
        samples.append(th)
        for _ in range(sub):  # RK4 of θ̈ = −ω² sin θ
            k1 = (v, -omega2 * math.sin(th))
            k2 = (v + h / 2 * k1[1], -omega2 * math.sin(th + h / 2 * k1[0]))
            k3 = (v + h / 2 * k2[1], -omega2 * math.sin(th + h / 2 * k2[0]))
            k4 = (v + h * k3[1], -omega2 * math.sin(th + h * k3[0]))
            th += h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
            v += h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    suite = make(pendulum_urdf(tmp_path), [jt(acceleration_cutoff_hz=None)], dt=dt)
    worst = 0.0
    for k, q in enumerate(samples):
        suite.update(k * dt, joint_pos=[q])
        if k >= 2:
            worst = max(worst, abs(suite.read("jt").item()))
    jerk_bound = omega2 * 1.0 * math.sqrt(2 * omega2 * (1 - math.cos(1.0)))  # max|θ⃛| ≤ ω² max|θ̇|
    assert worst <= 1.05 * I_TOT * jerk_bound * dt
    assert worst < 1e-2 * M * G * LC


def test_warm_up_flags_and_reset(tmp_path):
    urdf = pendulum_urdf(tmp_path)
    suite = make(urdf, [jt("fd", velocity_source="finite_difference"), jt("msg")])
    flags = {"fd": [], "msg": []}
    for episode in range(2):
        for k in range(3):
            t = episode + k * 0.001
            suite.update(t, joint_pos=[0.1 * k], joint_vel=[0.5])
            for name in flags:
                value, valid = suite.read(name, with_valid=True)
                flags[name].append(bool(valid))
                if not valid:  # docs/models/imperfections.md#validity: invalid reads are zeros, on both branches
                    assert torch.count_nonzero(value) == 0
                    assert torch.count_nonzero(suite.read_ground_truth(name)) == 0
        suite.reset()
    assert flags["fd"] == [False, False, True] * 2
    assert flags["msg"] == [False, True, True] * 2


def test_acceleration_filter_is_first_order(tmp_path):
    dt, fc = 1e-3, 20.0
    suite = make(pendulum_urdf(tmp_path), [jt(acceleration_cutoff_hz=fc)], gravity=(0, 0, 0), dt=dt)
    rng = np.random.default_rng(3)
    vel = np.cumsum(rng.normal(0, 0.01, 50))
    beta = 1 - math.exp(-2 * math.pi * fc * dt)
    ref = None
    for k, qd in enumerate(vel):
        suite.update(k * dt, joint_pos=[0.0], joint_vel=[qd])
        if k == 0:
            continue
        raw = (vel[k] - vel[k - 1]) / dt
        ref = raw if ref is None else ref + beta * (raw - ref)
        np.testing.assert_allclose(suite.read("jt").item(), I_TOT * ref, rtol=1e-10, atol=1e-12)


def test_continuous_joint_difference_wraps(tmp_path):
    dt = 1e-3
    suite = make(pendulum_urdf(tmp_path, "continuous"), [jt(acceleration_cutoff_hz=None)], gravity=(0, 0, 0), dt=dt)
    for k, q in enumerate([math.pi - 0.03, math.pi - 0.01, -math.pi + 0.01]):
        suite.update(k * dt, joint_pos=[q])
    value, valid = suite.read("jt", with_valid=True)
    assert bool(valid) and abs(value.item()) < 1e-9


def test_samples_without_new_stamp_are_dropped(tmp_path):
    suite = make(pendulum_urdf(tmp_path), [jt()], objects=[{"name": "ball", "geometry": [{"sphere": {"radius": 0.01}}],
                                                             "pose": {"xyz": [5, 5, 5]}}])
    suite.update(0.0, joint_pos=[0.2])
    suite.update(0.001)  # joints held: the same joint sample again
    batch = suite.locate("jt")[0]
    assert batch.dropped_samples == 1
    suite.update(0.002, joint_pos=[0.3])
    suite.update(0.003, joint_pos=[0.4])
    assert bool(suite.read("jt", with_valid=True)[1])


def test_motor_terms_add_exactly(tmp_path):
    damping, friction, arm, vf = 0.2, 0.5, 0.05, 0.01
    urdf = pendulum_urdf(tmp_path, dynamics=f'<dynamics damping="{damping}" friction="{friction}"/>')
    suite = make(urdf, [jt("link"), jt("motor", include_motor_terms=True, armature={"hinge": arm},
                                      friction_velocity_scale=vf)])
    for k in range(6):
        t = k * 0.001
        qd, qdd = 0.02 * math.cos(7 * t), -0.14 * math.sin(7 * t) + 0.3
        suite.update(t, joint_pos=[0.3 + 0.01 * k], joint_vel=[qd], joint_acc=[qdd])
        diff = suite.read("motor").item() - suite.read("link").item()
        np.testing.assert_allclose(diff, arm * qdd + damping * qd + friction * math.tanh(qd / vf), rtol=1e-12,
                                   atol=1e-15)


def support(d):
    """A plane whose solid side reaches d above the bottom of the arm's collision box at θ = 90°."""
    return {"name": "support", "geometry": [{"plane": {}}], "pose": {"xyz": [0.0, 0.0, -0.025 + d]}}


def test_horizontal_link_supported_by_a_contact_sensor(tmp_path):
    d, length = 1e-4, 0.5
    sensors = [{"type": "ContactSensor", "name": "cs", "prim_path": "arm"}, jt()]
    suite = make(pendulum_urdf(tmp_path), sensors, objects=[support(d)])
    for k in range(3):
        suite.update(k * 0.001, joint_pos=[math.pi / 2])
    force = suite.read("cs").net_forces_w.numpy()[0]
    np.testing.assert_allclose(force, [0, 0, 1e7 * d * 0.05**2], rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(suite.read("jt").item(), M * G * LC - force[2] * length, rtol=1e-10)
    pin = pytest.importorskip("pinocchio")
    model = pin.buildModelFromUrdf(str(pendulum_urdf(tmp_path)))
    data = model.createData()
    q = np.array([math.pi / 2])
    pin.forwardKinematics(model, data, q)
    torque = suite.read("cs").net_torques_w.numpy()[0]
    fext = [pin.Force.Zero() for _ in range(model.njoints)]
    fext[1] = data.oMi[1].actInv(pin.Force(force, torque))  # joint frame = arm frame, origin at the hinge
    tau = pin.rnea(model, data, q, np.zeros(1), np.zeros(1), fext)
    np.testing.assert_allclose(suite.read("jt").numpy(), tau, rtol=1e-10)


def test_auto_sources_skip_taxels_on_links_with_a_contact_sensor(tmp_path):
    d = 1e-4
    # at θ = 90° the arm's −y face of the box is its bottom (world z = −0.025), 0.5 m from the hinge
    taxel = {"type": "KinematicTaxel", "name": "kt", "link": "arm", "probe_local_pos": [[0.0, -0.025, -0.5]],
             "probe_radius": 0.002, "probe_local_normal": [0.0, -1.0, 0.0]}
    cs = {"type": "ContactSensor", "name": "cs", "prim_path": "arm"}
    sensors = [taxel, cs, jt("auto"), jt("taxel_only", contact_sources=["kt"]), jt("none", contact_sources=[])]
    suite = make(pendulum_urdf(tmp_path), sensors, objects=[support(d)])
    for k in range(3):
        suite.update(k * 0.001, joint_pos=[math.pi / 2])
    gravity = M * G * LC
    f_cs = suite.read("cs").net_forces_w.numpy()[0, 2]
    f_kt = suite.read_ground_truth("kt").force.numpy()[0]  # link frame
    np.testing.assert_allclose(suite.read("none").item(), gravity, rtol=1e-12)
    np.testing.assert_allclose(suite.read("auto").item(), gravity - f_cs * 0.5, rtol=1e-10)
    rot = np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]])  # Rx(90°)
    f_w = rot @ f_kt
    assert f_w[2] > 0
    np.testing.assert_allclose(f_w, [0, 0, 1000.0 * (0.002 + d)], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(suite.read("taxel_only").item(), gravity - f_w[2] * 0.5, rtol=1e-10)


# ------------------------------------------------------------------ Panda against pinocchio
@pytest.fixture(scope="module")
def panda_robot(tmp_path_factory) -> dict:
    """Robot section for the Panda of example-robot-data with primitive collision shapes (its visual meshes are
    dropped: they play no part here and take seconds to load)."""
    for key in ("purelib", "platlib"):
        share = Path(sysconfig.get_paths()[key]) / "cmeel.prefix" / "share"
        path = share / "example-robot-data" / "robots" / "panda_description" / "urdf" / "panda_collision.urdf"
        if path.is_file():
            urdf = tmp_path_factory.mktemp("panda") / "panda_collision_only.urdf"
            urdf.write_text(re.sub(r"<visual>.*?</visual>", "", path.read_text(), flags=re.S))
            return {"urdf": str(urdf), "search_paths": [str(share)]}
    pytest.skip("example-robot-data is not installed")


CONTACT_LINKS = ("panda_link3", "panda_link4", "panda_link5", "panda_link6")


def test_panda_matches_pinocchio_with_contact_wrenches(panda_robot):
    pin = pytest.importorskip("pinocchio")
    robot_cfg = panda_robot
    urdf = robot_cfg["urdf"]
    balls = [{"name": f"ball{i}", "geometry": [{"sphere": {"radius": 0.03}}], "pose": {"xyz": [5.0 + i, 5, 5]}}
             for i in range(len(CONTACT_LINKS))]
    balls.append({"name": "pusher", "geometry": [{"sphere": {"radius": 0.02}}], "pose": {"xyz": [9, 9, 9]}})
    taxel = {"type": "KinematicTaxel", "name": "kt", "link": "panda_link7", "probe_local_pos": [[0.0, 0.0, 0.0]],
             "probe_radius": 0.02}
    sensors = [{"type": "ContactSensor", "name": "cs", "prim_path": "panda_link[3-6]", "surface_sample_spacing": 0.01,
                "contact_stiffness": 1e5}, taxel, jt()]
    suite = SensorSuite.from_yaml({"suite": {"dt": 0.01, "dtype": "float64"},
                                   "robot": robot_cfg, "objects": balls, "sensors": sensors})
    model = pin.buildModelFromUrdf(urdf)
    data = model.createData()
    robot = suite.robot
    names = robot.movable_joint_names
    q_index = [model.joints[model.getJointId(n)].idx_q for n in names]
    v_index = [model.joints[model.getJointId(n)].idx_v for n in names]
    cs_batch = suite.locate("cs")[0]
    rng = np.random.default_rng(7)
    kin = suite.world.kinematics
    checked_contacts = 0
    for trial in range(6):
        q_act = rng.uniform(-1.5, 1.5, robot.n_actuated)
        q_act[-1] = rng.uniform(0, 0.04)
        qd_act, qdd_act = rng.normal(0, 1, robot.n_actuated), rng.normal(0, 3, robot.n_actuated)
        rot, pos = (t[0].numpy() for t in kin.fk(torch.as_tensor(q_act[None])))
        poses = {}
        for i, link in enumerate(CONTACT_LINKS):  # a ball centred near a random surface sample of each link
            b = robot.link_index(link)
            k = cs_batch.body_slices[0].start + i
            a, z = cs_batch.samples.slices[k]
            p = cs_batch.samples.local_pos[rng.integers(a, z)].numpy()
            centre = rot[b] @ p + pos[b] + rng.normal(0, 0.01, 3)
            poses[f"ball{i}"] = (torch.eye(3, dtype=torch.float64), torch.as_tensor(centre))
        b7 = robot.link_index("panda_link7")
        poses["pusher"] = (torch.eye(3, dtype=torch.float64), torch.as_tensor(pos[b7] + rot[b7] @ [0.01, 0.0, 0.025]))
        suite.update(float(trial), joint_pos=q_act, joint_vel=qd_act, joint_acc=qdd_act, object_poses=poses)
        qm = suite.world.state.joint_pos[0].numpy()
        vm, am = suite.world.state.joint_vel[0].numpy(), suite.world.state.joint_acc[0].numpy()
        qp, vp, ap = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
        qp[q_index], vp[v_index], ap[v_index] = qm, vm, am
        pin.forwardKinematics(model, data, qp)
        fext = [pin.Force.Zero() for _ in range(model.njoints)]
        cs = suite.read("cs")
        checked_contacts += int((cs.net_forces_w.norm(dim=-1) > 0).sum())
        wrenches = [(link, cs.net_forces_w[i].numpy(), cs.net_torques_w[i].numpy())
                    for i, link in enumerate(CONTACT_LINKS)]
        kt = suite.read_ground_truth("kt")
        wrenches.append(("panda_link7", rot[b7] @ kt.force.numpy()[0], rot[b7] @ kt.torque.numpy()[0]))
        for link, f, t in wrenches:
            o = pos[robot.link_index(link)]
            j = model.getJointId(robot.parent_joint(link).name)
            fext[j] += data.oMi[j].actInv(pin.Force(f, t + np.cross(o, f)))  # about the world origin first
        tau = pin.rnea(model, data, qp, vp, ap, fext)[v_index]
        value, valid = suite.read("jt", with_valid=True)
        assert bool(valid)
        np.testing.assert_allclose(value.numpy(), tau, rtol=1e-9, atol=1e-9)
    assert checked_contacts >= 12  # the balls really load the links


def test_static_panda_reads_gravity_torque(panda_robot):
    pin = pytest.importorskip("pinocchio")
    robot_cfg = panda_robot
    urdf = robot_cfg["urdf"]
    suite = SensorSuite.from_yaml({"suite": {"dt": 0.01, "dtype": "float64", "n_envs": 3},
                                   "robot": robot_cfg, "sensors": [jt(joints=["panda_joint2",
                                                                                       "panda_joint4"])]})
    model = pin.buildModelFromUrdf(urdf)
    data = model.createData()
    rng = np.random.default_rng(1)
    q = rng.uniform(-1, 1, (3, suite.robot.n_actuated))
    for k in range(3):
        suite.update(0.01 * k, joint_pos=q)
    value = suite.read("jt").numpy()
    assert value.shape == (3, 2)
    names = suite.robot.movable_joint_names
    for e in range(3):
        qm = suite.world.state.joint_pos[e].numpy()
        qp = np.zeros(model.nq)
        qp[[model.joints[model.getJointId(n)].idx_q for n in names]] = qm
        g = pin.computeGeneralizedGravity(model, data, qp)
        idx = [model.joints[model.getJointId(n)].idx_v for n in ("panda_joint2", "panda_joint4")]
        np.testing.assert_allclose(value[e], g[idx], rtol=1e-10, atol=1e-10)


def test_panda_pressed_against_a_wall_reads_gravity_minus_jacobian_transpose_load(panda_robot):
    pin = pytest.importorskip("pinocchio")
    robot_cfg = panda_robot
    link = "panda_link6"
    normal = np.array([0.6, -0.8, 0.0])  # wall normal (out of the wall, towards the arm), world
    sensors = [{"type": "ContactSensor", "name": "cs", "prim_path": link, "surface_sample_spacing": 0.005}, jt()]
    wall = {"name": "wall", "geometry": [{"plane": {}}], "pose": {"xyz": [9.0, 9.0, 9.0]}}
    suite = SensorSuite.from_yaml({"suite": {"dt": 0.01, "dtype": "float64"}, "robot": robot_cfg,
                                   "objects": [wall], "sensors": sensors})
    q = np.array([0.3, -0.4, 0.2, -2.0, 0.1, 1.6, 0.5, 0.02])
    kin, robot = suite.world.kinematics, suite.robot
    rot, pos = (t[0].numpy() for t in kin.fk(torch.as_tensor(q[None])))
    b = robot.link_index(link)
    cs = suite.locate("cs")[0]
    x = cs.samples.local_pos.numpy() @ rot[b].T + pos[b]
    surface = (x @ normal).min() + 0.002  # the wall reaches 2 mm into the link
    z = normal
    x_axis = np.cross([0.0, 0.0, 1.0], z)
    x_axis /= np.linalg.norm(x_axis)
    wall_rot = np.stack([x_axis, np.cross(z, x_axis), z], axis=1)
    for k in range(3):
        suite.update(0.01 * k, joint_pos=q, object_poses={"wall": (torch.as_tensor(wall_rot),
                                                                   torch.as_tensor(surface * normal))})
    data = suite.read("cs")
    force, torque = data.net_forces_w.numpy()[0], data.net_torques_w.numpy()[0]
    assert force @ normal > 1.0  # the wall pushes the link away
    model = pin.buildModelFromUrdf(robot_cfg["urdf"])
    pdata = model.createData()
    names = robot.movable_joint_names
    qp = np.zeros(model.nq)
    qp[[model.joints[model.getJointId(n)].idx_q for n in names]] = suite.world.state.joint_pos[0].numpy()
    v_index = [model.joints[model.getJointId(n)].idx_v for n in names]
    gravity = pin.computeGeneralizedGravity(model, pdata, qp)
    pin.computeJointJacobians(model, pdata, qp)
    pin.updateFramePlacements(model, pdata)
    jac = pin.getFrameJacobian(model, pdata, model.getFrameId(link), pin.LOCAL_WORLD_ALIGNED)
    expected = (gravity - jac[:3].T @ force - jac[3:].T @ torque)[v_index]
    np.testing.assert_allclose(suite.read("jt").numpy(), expected, rtol=1e-9, atol=1e-9)


def test_massless_subtree_warns(tmp_path):
    urdf = tmp_path / "massless.urdf"
    urdf.write_text(pendulum_urdf(tmp_path).read_text().replace(
        "</robot>", '<link name="flag"/><joint name="flap" type="revolute"><parent link="arm"/><child link="flag"/>'
        '<axis xyz="0 0 1"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint></robot>'))
    with pytest.warns(UserWarning, match="subtree of joint 'flap' has no mass"):
        make(urdf, [jt()])


# ------------------------------------------------------------------ selection and errors
def test_dofs_idx_local_selects_movable_joints(tmp_path):
    suite = make(pendulum_urdf(tmp_path), [jt(dofs_idx_local=[0])])
    assert suite.locate("jt")[0].joint_names(0) == ["hinge"]


@pytest.mark.parametrize("extra, match", [
    ({"joints": ["hinj"]}, r"jt'\)\.joints: unknown joint|sensors\[0\]\.joints: unknown joint"),
    ({"dofs_idx_local": [3]}, r"dofs_idx_local: index out of range"),
    ({"armature": {"nope": 0.1}}, r"armature\.nope: not a movable joint"),
    ({"robot": "other"}, r"robot: unknown robot"),
])
def test_option_errors_name_the_option(tmp_path, extra, match):
    with pytest.raises(ConfigError, match=match):
        make(pendulum_urdf(tmp_path), [jt(**extra)])


def test_fixed_joint_and_foreign_contact_source_are_errors(tmp_path):
    urdf = tmp_path / "fixed.urdf"
    urdf.write_text(pendulum_urdf(tmp_path).read_text().replace(
        "</robot>", '<link name="tip"/><joint name="weld" type="fixed"><parent link="arm"/><child link="tip"/>'
        "</joint></robot>"))
    with pytest.raises(ConfigError, match="joints: joint 'weld' is fixed"):
        make(urdf, [jt(joints=["weld"])])
    pad = {"name": "pad", "geometry": [{"box": {"size": [0.1, 0.1, 0.1]}}], "pose": {"xyz": [3, 3, 3]}}
    cs = {"type": "ContactSensor", "name": "cs", "prim_path": "pad"}
    with pytest.raises(ConfigError, match="contact_sources: sensor 'cs' is not on robot"):
        make(urdf, [cs, jt(contact_sources=["cs"])], objects=[pad])


def test_robot_without_movable_joints_is_an_error(tmp_path):
    urdf = tmp_path / "rigid.urdf"
    urdf.write_text('<robot name="rigid"><link name="a"/><link name="b"/><joint name="w" type="fixed">'
                    '<parent link="a"/><child link="b"/></joint></robot>')
    with pytest.raises(ConfigError, match="empty joint selection"):
        make(urdf, [jt()])


# ------------------------------------------------------------------ several envs and lanes
def test_envs_and_lanes_match_pinocchio_on_a_branched_tree(tmp_path):
    """3 envs with different states, two sensors (lanes) with different selections on a tree with mimic, prismatic
    and continuous joints: every env reads pinocchio's τ of its own state, in each sensor's joint order."""
    pin, model, data, robot, configuration, v_index = tree_reference()
    urdf = tmp_path / "tree.urdf"
    urdf.write_text(TREE_URDF)
    sensors = [jt("all"), jt("some", joints=["j5", "j1", "j3"])]
    suite = make(urdf, sensors, gravity=(0.3, -1.0, -G), n_envs=3)
    rng = np.random.default_rng(31)
    for k in range(2):
        q, qd, qdd = (rng.uniform(-1, 1, (3, 3)) for _ in range(3))
        state = suite.update(0.01 * k, joint_pos=q, joint_vel=qd, joint_acc=qdd)
        model.gravity.linear = np.array([0.3, -1.0, -G])
        expected = np.stack([pin.rnea(model, data, configuration(state.joint_pos[e].numpy()),
                                      pinocchio_rates(model, v_index, state.joint_vel[e].numpy()),
                                      pinocchio_rates(model, v_index, state.joint_acc[e].numpy()))[v_index]
                             for e in range(3)])
        names = list(robot.movable_joint_names)
        value, valid = suite.read("all", with_valid=True)
        assert valid.tolist() == [True] * 3
        np.testing.assert_allclose(value.numpy(), expected, rtol=1e-10, atol=1e-10)
        some = [names.index(n) for n in ("j5", "j1", "j3")]
        np.testing.assert_allclose(suite.read("some").numpy(), expected[:, some], rtol=1e-10, atol=1e-10)


def test_reset_of_one_env_restarts_only_its_warm_up(tmp_path):
    suite = make(pendulum_urdf(tmp_path), [jt(velocity_source="finite_difference")], n_envs=2)
    for k in range(3):
        suite.update(k * 0.001, joint_pos=[[0.1 * k], [0.2 - 0.05 * k]])
    assert suite.read("jt", with_valid=True)[1].tolist() == [True, True]
    suite.reset([0])
    for k in range(3, 6):
        suite.update(k * 0.001, joint_pos=[[0.1 * k], [0.2 - 0.05 * k]])
        value, valid = suite.read("jt", with_valid=True)
        assert valid.tolist() == [k == 5, True]
        if k < 5:
            assert value[0].item() == 0.0 and suite.read_ground_truth("jt")[0].item() == 0.0
    # env 1 saw a constant velocity throughout: its torque is the static gravity torque
    np.testing.assert_allclose(value[1].item(), M * G * LC * math.sin(0.2 - 0.05 * 5), rtol=1e-9)


def test_float32_matches_float64(tmp_path):
    """The default float32 path (estimator from message velocities and from differences, RNEA, motor terms) against
    the float64 suite on the same samples."""
    urdf = pendulum_urdf(tmp_path, dynamics='<dynamics damping="0.2" friction="0.5"/>')
    sensors = [jt("messages", include_motor_terms=True, armature={"hinge": 0.05}),
               jt("differences", velocity_source="finite_difference", acceleration_cutoff_hz=None)]
    values = {}
    for dtype in ("float32", "float64"):
        suite = SensorSuite.from_yaml({"suite": {"dt": 0.01, "dtype": dtype, "gravity": [0.0, 0.0, -G]},
                                       "robot": {"urdf": str(urdf)}, "sensors": sensors})
        for k in range(4):
            t = 0.01 * k
            suite.update(t, joint_pos=[0.8 * math.sin(3 * t)], joint_vel=[2.4 * math.cos(3 * t)])
        assert suite.read("messages", with_valid=True)[1] and suite.read("differences", with_valid=True)[1]
        values[dtype] = torch.cat([suite.read("messages"), suite.read("differences")]).double()
    # finite differences of float32 positions: ~ulp(q)/Δt² of q̈ error
    torch.testing.assert_close(values["float32"], values["float64"], rtol=1e-5, atol=1e-7 / 0.01**2 * I_TOT)
