"""Inverse dynamics (docs/models/joint_torque.md#model): pinocchio RNEA with external forces, pendulum closed forms,
mass matrix."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from helpers_dynamics import TREE_URDF, pinocchio_rates, tree_reference
from helpers_world import PinocchioRef, robot_model
from tactile_sim.geometry.transforms import so3_exp
from tactile_sim.world.dynamics import InverseDynamics
from tactile_sim.world.kinematics import Kinematics
from tactile_sim.world.urdf import RobotModel


def dyn_for(robot, dtype=torch.float64):
    kin = Kinematics(robot, dtype=dtype)
    return kin, InverseDynamics(kin)


def pinocchio_fext(ref, robot, pos, wrench):
    """Our link-origin world wrenches [L, 6] → pinocchio per-joint forces in the joint frame."""
    pin = ref.pin
    fext = [pin.Force.Zero() for _ in range(ref.model.njoints)]
    for li, link in enumerate(robot.link_names):
        joint = ref.model.frames[ref.frame_id(link)].parentJoint
        m = ref.data.oMi[joint]
        f, t = wrench[li, :3], wrench[li, 3:]
        t_joint = t + np.cross(pos[li] - m.translation, f)
        fext[joint] += pin.Force(m.rotation.T @ f, m.rotation.T @ t_joint)
    return fext


@pytest.mark.parametrize("name", ["panda", "ur5"])
@pytest.mark.parametrize("with_wrench", [False, True])
def test_rnea_matches_pinocchio(name, with_wrench):
    robot = robot_model(name)
    ref = PinocchioRef(name)
    pin = ref.pin
    kin, dyn = dyn_for(robot)
    rng = np.random.default_rng(11)
    E = 4
    q, qd, qdd = (torch.as_tensor(rng.uniform(-1.5, 1.5, (E, robot.n_actuated))) for _ in range(3))
    wrench = torch.as_tensor(rng.normal(0, 5, (E, robot.n_links, 6))) if with_wrench else None
    tau = dyn.rnea(q, qd, qdd, f_ext=wrench).numpy()
    assert tau.shape == (E, robot.n_movable)
    _, pos = kin.fk(q)
    qm, qdm, qddm = (x.numpy() for x in (kin.movable_positions(q), kin.movable_rates(qd), kin.movable_rates(qdd)))
    for e in range(E):
        pq, pv, pa = ref.vectors(qm[e], qdm[e], qddm[e])
        if with_wrench:
            pin.forwardKinematics(ref.model, ref.data, pq)
            fext = pinocchio_fext(ref, robot, pos[e].numpy(), wrench[e].numpy())
            expected = pin.rnea(ref.model, ref.data, pq, pv, pa, fext)
        else:
            expected = pin.rnea(ref.model, ref.data, pq, pv, pa)
        np.testing.assert_allclose(tau[e], expected[ref.v_index], atol=1e-9, rtol=0)


def test_rnea_float32_close_to_float64():
    robot = robot_model("panda")
    _, d64 = dyn_for(robot, torch.float64)
    _, d32 = dyn_for(robot, torch.float32)
    rng = np.random.default_rng(12)
    args = [torch.as_tensor(rng.uniform(-1, 1, (3, robot.n_actuated))) for _ in range(3)]
    t64 = d64.rnea(*args)
    t32 = d32.rnea(*(a.float() for a in args))
    assert t32.dtype == torch.float32
    torch.testing.assert_close(t32.double(), t64, atol=1e-4 * float(t64.abs().max()), rtol=0)


@pytest.mark.parametrize("name", ["panda", "ur5"])
def test_mass_matrix_matches_crba(name):
    robot = robot_model(name)
    ref = PinocchioRef(name)
    kin, dyn = dyn_for(robot)
    qm = kin.movable_positions(torch.as_tensor(np.random.default_rng(13).uniform(-1, 1, (2, robot.n_actuated))))
    mm = dyn.mass_matrix_movable(qm).numpy()
    for e in range(2):
        pq, _, _ = ref.vectors(qm[e].numpy())
        m = ref.pin.crba(ref.model, ref.data, pq)
        m = np.triu(m) + np.triu(m, 1).T
        np.testing.assert_allclose(mm[e], m[np.ix_(ref.v_index, ref.v_index)], atol=1e-12)


# ---------------------------------------------------------------------------------------------- pendulum
M, LC, IXX, G = 1.7, 0.35, 0.021, 9.81


def pendulum() -> RobotModel:
    """Arm hanging along −z from a joint about +x: +θ lifts the COM (docs/models/joint_torque.md#joint-torque
    Checks)."""
    return RobotModel.from_urdf(f"""<robot name="pendulum">
      <link name="base"/>
      <link name="arm"><inertial><origin xyz="0 0 {-LC}"/><mass value="{M}"/>
        <inertia ixx="{IXX}" ixy="0" ixz="0" iyy="0.024" iyz="0" izz="0.004"/></inertial></link>
      <joint name="hinge" type="continuous"><parent link="base"/><child link="arm"/><axis xyz="1 0 0"/></joint>
    </robot>""")


@pytest.mark.parametrize("theta", [0.0, 0.4, math.pi / 2, 2.5, -1.2])
def test_pendulum_static_gravity_torque(theta, dtype):
    _, dyn = dyn_for(pendulum(), dtype)
    q = torch.tensor([[theta]], dtype=dtype)
    tau = dyn.rnea(q, torch.zeros_like(q), torch.zeros_like(q), gravity=(0.0, 0.0, -G))
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    assert float(tau[0, 0]) == pytest.approx(M * G * LC * math.sin(theta), abs=tol)


def test_pendulum_inertia_in_zero_gravity():
    _, dyn = dyn_for(pendulum())
    q = torch.tensor([[0.3], [1.1]], dtype=torch.float64)
    qd = torch.tensor([[0.7], [-2.0]], dtype=torch.float64)
    qdd = torch.tensor([[2.5], [-0.4]], dtype=torch.float64)
    tau = dyn.rnea(q, qd, qdd, gravity=(0.0, 0.0, 0.0))
    torch.testing.assert_close(tau, (IXX + M * LC**2) * qdd, atol=1e-12, rtol=0)


def test_pendulum_supported_by_upward_force():
    """Horizontal link (θ = 90°) with an upward load F at distance L: τ = m g l_c − F L."""
    _, dyn = dyn_for(pendulum())
    F, L = 3.0, 0.5
    q = torch.tensor([[math.pi / 2]], dtype=torch.float64)
    # the link lies along +y; the load point is (0, L, 0) in W, torque about the link origin = p × f
    f_ext = torch.zeros(1, 2, 6, dtype=torch.float64)
    f_ext[0, 1] = torch.tensor([0.0, 0.0, F, L * F, 0.0, 0.0])
    tau = dyn.rnea(q, torch.zeros_like(q), torch.zeros_like(q), f_ext=f_ext)
    assert float(tau[0, 0]) == pytest.approx(M * G * LC - F * L, abs=1e-12)


def test_root_orientation_rotates_gravity():
    robot = robot_model("ur5")
    _, dyn = dyn_for(robot)
    rng = np.random.default_rng(14)
    q, qd, qdd = (torch.as_tensor(rng.uniform(-1, 1, (2, 6))) for _ in range(3))
    r = so3_exp(torch.tensor([[0.4, -1.0, 0.3], [2.0, 0.1, -0.5]], dtype=torch.float64))
    g = torch.tensor([0.0, 0.0, -9.81], dtype=torch.float64)
    tau_rot = dyn.rnea(q, qd, qdd, gravity=g, root_rot=r)
    g_root = (r.transpose(1, 2) @ g)  # gravity seen from the root frame
    tau_ref = dyn.rnea(q, qd, qdd, gravity=g_root)
    torch.testing.assert_close(tau_rot, tau_ref, atol=1e-11, rtol=0)


def test_input_errors():
    robot = robot_model("ur5")
    _, dyn = dyn_for(robot)
    z = torch.zeros(2, 6, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"f_ext must have shape \[E, L, 6\] = \[2, 11, 6\]; got \(2, 11, 3\)"):
        dyn.rnea(z, z, z, f_ext=torch.zeros(2, 11, 3))
    with pytest.raises(ValueError, match=r"gravity must have shape \[3\] or \[E, 3\]"):
        dyn.rnea(z, z, z, gravity=(0.0, -9.81))
    with pytest.raises(ValueError, match=r"joint rates must have shape \[E, 6\]"):
        dyn.rnea(z, z[:, :5], z)


# ------------------------------------------------------------------------------------------- branched tree
def test_branched_tree_with_mimic_prismatic_fixed_joints_and_wrenches_matches_pinocchio():
    """Revolute, prismatic (oblique axis), continuous, fixed and mimic joints on two branches; a different state and
    external wrenches on several links in every env; inertial frames rotated against their links."""
    pin, model, data, robot, configuration, v_index = tree_reference()
    assert robot.actuated_joint_names == ("j1", "j2", "j3")
    kin, dyn = dyn_for(robot)
    rng = np.random.default_rng(21)
    E = 5
    q, qd, qdd = (torch.as_tensor(rng.uniform(-1.2, 1.2, (E, 3))) for _ in range(3))
    wrench = torch.as_tensor(rng.normal(0, 2, (E, robot.n_links, 6)))
    wrench[:, robot.link_index("l5")] = 0.0  # a loaded and an unloaded leaf
    g = torch.as_tensor(rng.normal(0, 5, (E, 3)))
    tau = dyn.rnea(q, qd, qdd, gravity=g, f_ext=wrench).numpy()
    qm, qdm, qddm = (x.numpy() for x in (kin.movable_positions(q), kin.movable_rates(qd), kin.movable_rates(qdd)))
    np.testing.assert_allclose(qm[:, 3], -0.7 * q[:, 0].numpy() + 0.2)  # the mimic joint follows its source
    np.testing.assert_allclose(qdm[:, 4], 1.5 * qd[:, 1].numpy())
    for e in range(E):
        pq = configuration(qm[e])
        pv, pa = pinocchio_rates(model, v_index, qdm[e]), pinocchio_rates(model, v_index, qddm[e])
        model.gravity.linear = g[e].numpy()
        pin.forwardKinematics(model, data, pq)
        fext = [pin.Force.Zero() for _ in range(model.njoints)]
        for li, link in enumerate(robot.link_names):
            frame = model.frames[model.getFrameId(link, pin.BODY)]
            joint = frame.parentJoint
            o_link = (data.oMi[joint] * frame.placement).translation
            f, t = wrench[e, li, :3].numpy(), wrench[e, li, 3:].numpy()
            t_joint = t + np.cross(o_link - data.oMi[joint].translation, f)
            fext[joint] += pin.Force(data.oMi[joint].rotation.T @ f, data.oMi[joint].rotation.T @ t_joint)
        expected = pin.rnea(model, data, pq, pv, pa, fext)[v_index]
        np.testing.assert_allclose(tau[e], expected, atol=1e-10, rtol=0)


def test_rows_are_independent():
    """Each env's τ is that of its own state alone (no leakage through the per-row workspace)."""
    robot = RobotModel.from_urdf(TREE_URDF)
    _, dyn = dyn_for(robot)
    rng = np.random.default_rng(22)
    q, qd, qdd = (torch.as_tensor(rng.uniform(-1, 1, (6, 3))) for _ in range(3))
    wrench = torch.as_tensor(rng.normal(0, 1, (6, robot.n_links, 6)))
    together = dyn.rnea(q, qd, qdd, f_ext=wrench)
    for e in (0, 3, 5):
        alone = dyn.rnea(q[e:e + 1], qd[e:e + 1], qdd[e:e + 1], f_ext=wrench[e:e + 1])
        torch.testing.assert_close(together[e:e + 1], alone, atol=0, rtol=0)


def test_tree_float32_close_to_float64():
    robot = RobotModel.from_urdf(TREE_URDF)
    _, d64 = dyn_for(robot, torch.float64)
    _, d32 = dyn_for(robot, torch.float32)
    rng = np.random.default_rng(23)
    args = [torch.as_tensor(rng.uniform(-1, 1, (4, 3))) for _ in range(3)]
    wrench = torch.as_tensor(rng.normal(0, 1, (4, robot.n_links, 6)))
    t64 = d64.rnea(*args, f_ext=wrench)
    t32 = d32.rnea(*(a.float() for a in args), f_ext=wrench.float())
    assert t32.dtype == torch.float32
    torch.testing.assert_close(t32.double(), t64, atol=1e-5 * float(t64.abs().max()), rtol=0)
