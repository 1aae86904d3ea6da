"""Shared fixtures for the world-layer tests: example-robot-data URDFs and pinocchio reference helpers."""

from __future__ import annotations

import sysconfig
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest


def erd_share() -> Path:
    """The ``share`` folder that holds ``example-robot-data/robots/…`` (package:// URIs resolve against it)."""
    for key in ("purelib", "platlib"):
        share = Path(sysconfig.get_paths()[key]) / "cmeel.prefix" / "share"
        if (share / "example-robot-data" / "robots").is_dir():
            return share
    pytest.skip("example-robot-data is not installed (pip install example-robot-data)")


def erd_urdf(name: str) -> Path:
    """Path of a robot URDF: 'panda' or 'ur5'."""
    rel = {"panda": "panda_description/urdf/panda.urdf", "ur5": "ur_description/urdf/ur5_robot.urdf"}[name]
    return erd_share() / "example-robot-data" / "robots" / rel


@lru_cache(maxsize=None)
def robot_model(name: str):
    """RobotModel without geometry (kinematics and dynamics only), cached per robot."""
    from tactile_sim.world.urdf import RobotModel

    return RobotModel.from_urdf(erd_urdf(name), geometry=())


class PinocchioRef:
    """pinocchio model of a URDF, with our movable-joint vectors mapped onto its q / v layout by joint name."""

    def __init__(self, name: str):
        pin = pytest.importorskip("pinocchio")
        self.pin = pin
        self.model = pin.buildModelFromUrdf(str(erd_urdf(name)))
        self.data = self.model.createData()
        robot = robot_model(name)
        self.v_index = [self.model.joints[self.model.getJointId(n)].idx_v for n in robot.movable_joint_names]
        self.q_index = [self.model.joints[self.model.getJointId(n)].idx_q for n in robot.movable_joint_names]

    def vectors(self, qm, qdm=None, qddm=None):
        """pinocchio (q, v, a) from our movable vectors (1-D arrays in movable_joint_names order)."""
        q = np.zeros(self.model.nq)
        v, a = np.zeros(self.model.nv), np.zeros(self.model.nv)
        q[self.q_index] = qm
        if qdm is not None:
            v[self.v_index] = qdm
        if qddm is not None:
            a[self.v_index] = qddm
        return q, v, a

    def frame_id(self, link: str) -> int:
        return self.model.getFrameId(link, self.pin.BODY)


# ------------------------------------------------------------------ an independent reference for link motion
TREE_URDF = """<robot name="tree">
  <link name="hand"/><link name="wheel"/><link name="base"/><link name="tool"/><link name="slider"/>
  <link name="arm"/><link name="forearm"/><link name="finger_a"/><link name="finger_b"/><link name="thumb"/>
  <joint name="wrist" type="revolute"><parent link="forearm"/><child link="hand"/>
    <origin xyz="0.2 0 0" rpy="0 0 0.2"/><axis xyz="1 0 0"/>
    <mimic joint="elbow" multiplier="-1.5" offset="0.2"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="slide" type="prismatic"><parent link="base"/><child link="slider"/>
    <origin xyz="0.1 0 0.2" rpy="0.1 0 0.3"/><axis xyz="1 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="spin" type="continuous"><parent link="tool"/><child link="wheel"/>
    <origin xyz="0 0 0.03" rpy="0 0.4 0"/><axis xyz="0.6 0 0.8"/></joint>
  <joint name="shoulder" type="revolute"><parent link="slider"/><child link="arm"/>
    <origin xyz="0 0.05 0.3" rpy="0.2 -0.1 0.4"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="tool_mount" type="fixed"><parent link="hand"/><child link="tool"/>
    <origin xyz="0.05 0.01 0.02" rpy="0.3 0.2 0.1"/></joint>
  <joint name="elbow" type="revolute"><parent link="arm"/><child link="forearm"/>
    <origin xyz="0.25 0 0" rpy="0 0.3 0"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="finger_a" type="prismatic"><parent link="hand"/><child link="finger_a"/>
    <origin xyz="0.1 0.02 0" rpy="0 0 0"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="0.05" effort="1" velocity="1"/></joint>
  <joint name="finger_b" type="prismatic"><parent link="hand"/><child link="finger_b"/>
    <origin xyz="0.1 -0.02 0" rpy="0 0 0"/><axis xyz="0 1 0"/>
    <mimic joint="finger_a" multiplier="-1" offset="0.01"/>
    <limit lower="-0.05" upper="0.05" effort="1" velocity="1"/></joint>
  <joint name="thumb" type="revolute"><parent link="hand"/><child link="thumb"/>
    <origin xyz="0.05 0 0.04" rpy="0.5 0 0"/><axis xyz="0 0 1"/>
    <mimic joint="wrist" multiplier="2" offset="-0.1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>"""
"""A tree listed children-first, with prismatic, continuous and fixed joints and mimic joints (of a revolute, of a
prismatic, and of a mimic joint)."""


def tree_robot():
    from tactile_sim.world.urdf import RobotModel

    return RobotModel.from_urdf(TREE_URDF)


def reference_movable(robot, q: np.ndarray) -> np.ndarray:
    """Movable joint values from actuated ones [..., n_act], following the URDF <mimic> chains directly."""
    q = np.asarray(q, dtype=np.float64)
    act = {n: i for i, n in enumerate(robot.actuated_joint_names)}

    def value(name):
        j = robot.joint(name)
        if j.mimic is None:
            return q[..., act[name]]
        return j.mimic.multiplier * value(j.mimic.joint) + j.mimic.offset

    return np.stack([value(n) for n in robot.movable_joint_names], axis=-1)


def reference_fk(robot, qm: np.ndarray, root_rot: np.ndarray, root_pos: np.ndarray):
    """Link poses (rot (L, 3, 3), pos (L, 3)) of one env in float64, by walking each link's parent joints (joint
    origin, then a rotation about / a translation along the axis by the joint value)."""
    from scipy.spatial.transform import Rotation

    mov = {n: i for i, n in enumerate(robot.movable_joint_names)}
    poses: dict[str, tuple[np.ndarray, np.ndarray]] = {robot.root_link: (np.asarray(root_rot), np.asarray(root_pos))}

    def pose(link):
        if link not in poses:
            j = robot.parent_joint(link)
            r_p, o_p = pose(j.parent)
            r, o = r_p @ j.rot, o_p + r_p @ j.pos
            if j.type.movable:
                x = qm[mov[j.name]]
                axis = np.asarray(j.axis) / np.linalg.norm(j.axis)
                if j.type.rotational:
                    r = r @ Rotation.from_rotvec(axis * x).as_matrix()
                else:
                    o = o + r @ axis * x
            poses[link] = (r, o)
        return poses[link]

    out = [pose(n) for n in robot.link_names]
    return np.stack([p[0] for p in out]), np.stack([p[1] for p in out])


def central_twists(pose_at, h: float = 1e-6):
    """Twists (lin (..., 3), ang (..., 3)) at t = 0 by central differences of pose_at(t) → (rot (..., 3, 3),
    pos (..., 3)): v = (o(h) − o(−h)) / 2h, ω = Log(R(h) R(−h)ᵀ) / 2h."""
    from scipy.spatial.transform import Rotation

    (rp, pp), (rm, pm) = pose_at(h), pose_at(-h)
    rel = rp @ np.swapaxes(rm, -1, -2)
    ang = Rotation.from_matrix(rel.reshape(-1, 3, 3)).as_rotvec().reshape(pp.shape) / (2 * h)
    return (pp - pm) / (2 * h), ang
