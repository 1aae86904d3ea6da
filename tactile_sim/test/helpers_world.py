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
