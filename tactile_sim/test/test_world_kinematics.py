"""Forward kinematics, link twists and Jacobians against pinocchio and finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from helpers_world import PinocchioRef, central_twists, reference_fk, reference_movable, robot_model, tree_robot
from tactile_sim.geometry.transforms import so3_exp, so3_log
from tactile_sim.world.kinematics import Kinematics

TOL = {torch.float64: 1e-12, torch.float32: 2e-5}


def random_states(robot, n, seed):
    rng = np.random.default_rng(seed)
    lo = np.array([max(robot.joint(j).lower, -2.5) for j in robot.actuated_joint_names])
    hi = np.array([min(robot.joint(j).upper, 2.5) for j in robot.actuated_joint_names])
    q = rng.uniform(lo, hi, (n, len(lo)))
    qd = rng.uniform(-1.5, 1.5, q.shape)
    return q, qd


@pytest.mark.parametrize("name", ["panda", "ur5"])
def test_fk_and_twists_match_pinocchio(name, dtype):
    robot = robot_model(name)
    ref = PinocchioRef(name)
    pin = ref.pin
    kin = Kinematics(robot, dtype=dtype)
    q, qd = random_states(robot, 4, seed=1)
    rot, pos, lin, ang = kin.motion(torch.as_tensor(q, dtype=dtype), torch.as_tensor(qd, dtype=dtype))
    qm = kin.movable_positions(torch.as_tensor(q)).double().numpy()
    qdm = kin.movable_rates(torch.as_tensor(qd)).double().numpy()
    tol = TOL[dtype]
    for e in range(len(q)):
        pq, pv, _ = ref.vectors(qm[e], qdm[e])
        pin.forwardKinematics(ref.model, ref.data, pq, pv)
        pin.updateFramePlacements(ref.model, ref.data)
        for li, link in enumerate(robot.link_names):
            fid = ref.frame_id(link)
            m = ref.data.oMf[fid]
            np.testing.assert_allclose(rot[e, li].double().numpy(), m.rotation, atol=tol)
            np.testing.assert_allclose(pos[e, li].double().numpy(), m.translation, atol=tol)
            v = pin.getFrameVelocity(ref.model, ref.data, fid, pin.LOCAL_WORLD_ALIGNED)
            np.testing.assert_allclose(lin[e, li].double().numpy(), v.linear, atol=5 * tol)
            np.testing.assert_allclose(ang[e, li].double().numpy(), v.angular, atol=5 * tol)


def test_mimic_joint_follows_source():
    robot = robot_model("panda")
    kin = Kinematics(robot, dtype=torch.float64)
    q = torch.zeros(1, robot.n_actuated, dtype=torch.float64)
    q[0, -1] = 0.03
    rot, pos = kin.fk(q)
    left, right = robot.link_index("panda_leftfinger"), robot.link_index("panda_rightfinger")
    hand = robot.link_index("panda_hand")
    y_hand = rot[0, hand, :, 1]
    # both fingers open by 0.03 m along ±y of the hand (axes 0 1 0 and 0 −1 0)
    assert float((pos[0, left] - pos[0, hand]) @ y_hand) == pytest.approx(0.03, abs=1e-12)
    assert float((pos[0, right] - pos[0, hand]) @ y_hand) == pytest.approx(-0.03, abs=1e-12)


@pytest.mark.parametrize("name", ["panda", "ur5"])
def test_jacobian_matches_pinocchio(name):
    robot = robot_model(name)
    ref = PinocchioRef(name)
    pin = ref.pin
    kin = Kinematics(robot, dtype=torch.float64)
    q, _ = random_states(robot, 3, seed=2)
    qt = torch.as_tensor(q)
    rot, pos = kin.fk(qt)
    qm = kin.movable_positions(qt).numpy()
    for e in range(len(q)):
        pq, _, _ = ref.vectors(qm[e])
        pin.computeJointJacobians(ref.model, ref.data, pq)
        pin.updateFramePlacements(ref.model, ref.data)
        for link in robot.link_names:
            jp = pin.getFrameJacobian(ref.model, ref.data, ref.frame_id(link), pin.LOCAL_WORLD_ALIGNED)[:, ref.v_index]
            jm = kin.jacobian_movable_from_fk(rot, pos, link)[e].numpy()
            np.testing.assert_allclose(jm, jp, atol=1e-12)
            ja = kin.jacobian_from_fk(rot, pos, link)[e].numpy()
            np.testing.assert_allclose(ja, jp @ kin.mimic_matrix.numpy(), atol=1e-12)


@pytest.mark.parametrize("name, link", [("panda", "panda_leftfinger"), ("panda", "panda_hand_tcp"),
                                        ("ur5", "tool0")])
def test_jacobian_of_offset_point_vs_finite_differences(name, link):
    robot = robot_model(name)
    kin = Kinematics(robot, dtype=torch.float64)
    q, _ = random_states(robot, 1, seed=3)
    q = torch.as_tensor(q)
    point = torch.tensor([0.03, -0.02, 0.05], dtype=torch.float64)
    root_rot = so3_exp(torch.tensor([[0.3, -0.2, 0.5]], dtype=torch.float64))
    root_pos = torch.tensor([[0.5, 1.0, -0.2]], dtype=torch.float64)
    jac = kin.jacobian(q, link, point, root_rot, root_pos)[0]
    li = robot.link_index(link)
    h = 1e-6
    for k in range(robot.n_actuated):
        dq = torch.zeros_like(q)
        dq[0, k] = h
        rp, pp = kin.fk(q + dq, root_rot, root_pos)
        rm, pm = kin.fk(q - dq, root_rot, root_pos)
        xp, xm = rp[0, li] @ point + pp[0, li], rm[0, li] @ point + pm[0, li]
        np.testing.assert_allclose(jac[:3, k].numpy(), ((xp - xm) / (2 * h)).numpy(), atol=1e-8)
        w = so3_log(rp[0, li] @ rm[0, li].T) / (2 * h)
        np.testing.assert_allclose(jac[3:, k].numpy(), w.numpy(), atol=1e-8)


def test_root_pose_composes(dtype):
    robot = robot_model("ur5")
    kin = Kinematics(robot, dtype=dtype)
    q, _ = random_states(robot, 2, seed=4)
    q = torch.as_tensor(q, dtype=dtype)
    r0 = so3_exp(torch.tensor([[0.1, 0.2, 0.3], [-1.0, 0.5, 2.0]], dtype=dtype))
    p0 = torch.tensor([[1.0, 2.0, 3.0], [-0.5, 0.0, 0.25]], dtype=dtype)
    rot, pos = kin.fk(q)
    rot_r, pos_r = kin.fk(q, r0, p0)
    tol = 10 * TOL[dtype]
    torch.testing.assert_close(rot_r, r0[:, None] @ rot, atol=tol, rtol=0)
    torch.testing.assert_close(pos_r, (r0[:, None] @ pos[..., None])[..., 0] + p0[:, None], atol=tol, rtol=0)
    assert torch.equal(rot[:, robot.link_index("world")], torch.eye(3, dtype=dtype).expand(2, 3, 3))


def test_twists_with_moving_root_vs_finite_differences():
    """Exact twists equal central differences of FK poses along q(t), root(t) (f64)."""
    robot = robot_model("panda")
    kin = Kinematics(robot, dtype=torch.float64)
    rng = np.random.default_rng(5)
    q0, qd = (torch.as_tensor(rng.uniform(-1, 1, (1, robot.n_actuated))) for _ in range(2))
    w_root = torch.tensor([[0.4, -0.3, 0.8]], dtype=torch.float64)
    v_root = torch.tensor([[0.2, 0.1, -0.5]], dtype=torch.float64)
    r_base = so3_exp(torch.tensor([[0.2, 0.1, -0.4]], dtype=torch.float64))

    def pose(t):
        return kin.fk(q0 + qd * t, so3_exp(w_root * t) @ r_base, v_root * t + 0.3)

    rot, pos = pose(0.0)
    rot_m, pos_m, lin, ang = kin.motion(q0, qd, so3_exp(w_root * 0.0) @ r_base, v_root * 0.0 + 0.3, v_root, w_root)
    assert torch.equal(rot_m, rot) and torch.equal(pos_m, pos)
    h = 1e-6
    (rp, pp), (rm, pm) = pose(h), pose(-h)
    np.testing.assert_allclose(lin[0].numpy(), ((pp - pm) / (2 * h))[0].numpy(), atol=1e-8)
    np.testing.assert_allclose(ang[0].numpy(), (so3_log(rp @ rm.transpose(-1, -2)) / (2 * h))[0].numpy(), atol=1e-8)


def test_shape_errors():
    kin = Kinematics(robot_model("ur5"))
    with pytest.raises(ValueError, match=r"joint positions must have shape \[E, 6\]; got \(6,\)"):
        kin.fk(torch.zeros(6))
    with pytest.raises(ValueError, match=r"joint rates must have shape \[E, 6\]"):
        kin.motion(torch.zeros(2, 6), torch.zeros(2, 5))
    with pytest.raises(ValueError, match=r"same number of envs; got 2 and 3"):
        kin.motion(torch.zeros(2, 6), torch.zeros(3, 6))


def test_robot_without_movable_joints():
    from tactile_sim.world.dynamics import InverseDynamics
    from tactile_sim.world.urdf import RobotModel

    robot = RobotModel.from_urdf("""<robot name="f"><link name="a"/><link name="b"/>
      <joint name="j" type="fixed"><parent link="a"/><child link="b"/><origin xyz="1 0 0" rpy="0 0 0.5"/></joint>
    </robot>""")
    kin = Kinematics(robot, dtype=torch.float64)
    q = torch.zeros(2, 0, dtype=torch.float64)
    rot, pos = kin.fk(q, root_pos=torch.tensor([[0.0, 0.0, 1.0]] * 2, dtype=torch.float64))
    assert pos[:, 1].tolist() == [[1.0, 0.0, 1.0]] * 2
    np.testing.assert_allclose(rot[0, 1].numpy(), so3_exp(torch.tensor([0.0, 0.0, 0.5], dtype=torch.float64)),
                               atol=1e-15)
    _, _, lin, ang = kin.motion(q, q, root_pos=torch.tensor([[0.0, 0.0, 1.0]] * 2, dtype=torch.float64),
                                root_ang_vel=torch.tensor([[0.0, 0.0, 2.0]] * 2, dtype=torch.float64))
    assert lin[:, 1].tolist() == [[0.0, 2.0, 0.0]] * 2 and ang[:, 1].tolist() == [[0.0, 0.0, 2.0]] * 2
    assert kin.jacobian(q, "b").shape == (2, 6, 0)
    assert InverseDynamics(kin).rnea(q, q, q).shape == (2, 0)


def _random_roots(n, rng):
    """Per-env root poses and twists (f64 NumPy): rot (n, 3, 3), pos, lin, ang (n, 3)."""
    from scipy.spatial.transform import Rotation

    return (Rotation.from_rotvec(rng.normal(size=(n, 3))).as_matrix(), rng.normal(size=(n, 3)),
            rng.normal(size=(n, 3)), rng.normal(size=(n, 3)))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_motion_of_tree_with_mimic_and_prismatic_joints_vs_reference(dtype):
    """Poses against an independent FK (mimic chains read from the URDF) and twists against central differences of
    it along q(t) = q + q̇ t with a moving root, per env with different joints, root poses and root twists."""
    from scipy.spatial.transform import Rotation

    robot = tree_robot()
    kin = Kinematics(robot, dtype=dtype)
    rng = np.random.default_rng(7)
    E = 3
    q, qd = rng.uniform(-2.0, 2.0, (E, robot.n_actuated)), rng.uniform(-1.5, 1.5, (E, robot.n_actuated))
    r0, p0, v0, w0 = _random_roots(E, rng)
    t = lambda x: torch.as_tensor(x, dtype=dtype)  # noqa: E731
    rot, pos, lin, ang = kin.motion(t(q), t(qd), t(r0), t(p0), t(v0), t(w0))
    pose_tol, twist_tol = (1e-12, 1e-7) if dtype == torch.float64 else (5e-6, 5e-5)
    for e in range(E):
        def pose_at(dt, e=e):
            root = Rotation.from_rotvec(w0[e] * dt).as_matrix() @ r0[e]
            return reference_fk(robot, reference_movable(robot, q[e] + qd[e] * dt), root, p0[e] + v0[e] * dt)

        ref_rot, ref_pos = pose_at(0.0)
        np.testing.assert_allclose(rot[e].double().numpy(), ref_rot, atol=pose_tol, rtol=0)
        np.testing.assert_allclose(pos[e].double().numpy(), ref_pos, atol=pose_tol, rtol=0)
        ref_lin, ref_ang = central_twists(pose_at)
        np.testing.assert_allclose(lin[e].double().numpy(), ref_lin, atol=twist_tol, rtol=0)
        np.testing.assert_allclose(ang[e].double().numpy(), ref_ang, atol=twist_tol, rtol=0)
    # the same poses from fk and from movable-joint inputs
    rot_f, pos_f = kin.fk(t(q), t(r0), t(p0))
    assert torch.equal(rot_f, rot) and torch.equal(pos_f, pos)
    qm, qdm = kin.movable_positions(t(q)), kin.movable_rates(t(qd))
    np.testing.assert_allclose(qm.double().numpy(), reference_movable(robot, q), atol=pose_tol, rtol=0)
    rot_m, pos_m, lin_m, ang_m = kin.motion_movable(qm, qdm, t(r0), t(p0), t(v0), t(w0))
    tol = 0.0 if dtype == torch.float64 else 1e-5
    for a, b in ((rot_m, rot), (pos_m, pos), (lin_m, lin), (ang_m, ang)):
        torch.testing.assert_close(a, b, atol=tol, rtol=0)


def test_motion_twists_equal_jacobian_times_rates():
    """Link twists (no root motion) equal J(q) q̇ from the geometric Jacobians, per link and env (f64)."""
    robot = tree_robot()
    kin = Kinematics(robot, dtype=torch.float64)
    rng = np.random.default_rng(8)
    q, qd = (torch.as_tensor(rng.uniform(-2.0, 2.0, (4, robot.n_actuated))) for _ in range(2))
    rot, pos, lin, ang = kin.motion(q, qd)
    for li in range(robot.n_links):
        tw = (kin.jacobian_from_fk(rot, pos, li) @ qd[..., None])[..., 0]
        torch.testing.assert_close(lin[:, li], tw[:, :3], atol=1e-13, rtol=0)
        torch.testing.assert_close(ang[:, li], tw[:, 3:], atol=1e-13, rtol=0)


def test_motion_outputs_are_fresh_and_envs_independent():
    """Each call returns new tensors; env e depends only on row e of the inputs."""
    robot = tree_robot()
    kin = Kinematics(robot, dtype=torch.float64)
    rng = np.random.default_rng(9)
    q, qd = (torch.as_tensor(rng.uniform(-1.0, 1.0, (5, robot.n_actuated))) for _ in range(2))
    first = kin.motion(q, qd)
    kept = [x.clone() for x in first]
    flipped = kin.motion(q.flip(0), qd.flip(0))
    single = kin.motion(q[2:3], qd[2:3])
    for a, b, c, d in zip(first, kept, flipped, single):
        assert torch.equal(a, b)
        torch.testing.assert_close(c, a.flip(0), atol=0, rtol=0)
        torch.testing.assert_close(d, a[2:3], atol=0, rtol=0)
