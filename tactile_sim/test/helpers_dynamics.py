"""Shared fixtures of the inverse-dynamics tests: a branched tree robot with every joint kind and its pinocchio
reference."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tactile_sim.world.urdf import RobotModel

TREE_URDF = """<robot name="tree">
  <link name="base"><inertial><mass value="3.0"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
  </link>
  <link name="l1"><inertial><origin xyz="0.05 -0.02 0.1" rpy="0.2 0.1 -0.3"/><mass value="1.3"/>
    <inertia ixx="0.02" ixy="0.001" ixz="-0.002" iyy="0.03" iyz="0.003" izz="0.025"/></inertial></link>
  <link name="l2"><inertial><origin xyz="0.0 0.04 -0.03" rpy="-0.4 0.0 0.7"/><mass value="0.8"/>
    <inertia ixx="0.01" ixy="0" ixz="0.001" iyy="0.012" iyz="0" izz="0.008"/></inertial></link>
  <link name="l3"><inertial><origin xyz="0.1 0.0 0.0"/><mass value="0.6"/>
    <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.006" iyz="0" izz="0.005"/></inertial></link>
  <link name="l4"><inertial><origin xyz="0.0 0.0 0.12" rpy="0.5 0.5 0.5"/><mass value="0.9"/>
    <inertia ixx="0.009" ixy="0.0005" ixz="0" iyy="0.011" iyz="0" izz="0.007"/></inertial></link>
  <link name="l5"><inertial><origin xyz="0.03 0.03 0.03"/><mass value="0.4"/>
    <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.003"/></inertial></link>
  <link name="l6"><inertial><origin xyz="-0.02 0.01 0.05" rpy="0 0.3 0"/><mass value="0.5"/>
    <inertia ixx="0.003" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.002"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0.1 0 0.2" rpy="0.3 -0.2 0.5"/>
    <axis xyz="0 0 1"/><limit effort="1" velocity="1" lower="-3" upper="3"/></joint>
  <joint name="j2" type="prismatic"><parent link="l1"/><child link="l2"/><origin xyz="0.2 0.1 0.0" rpy="0 0.4 0"/>
    <axis xyz="0.6 0 0.8"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
  <joint name="j3" type="continuous"><parent link="l2"/><child link="l3"/><origin xyz="0 0.15 0.05" rpy="-0.6 0 0.2"/>
    <axis xyz="0 1 0"/></joint>
  <joint name="j4" type="revolute"><parent link="l1"/><child link="l4"/><origin xyz="-0.1 0 0.3" rpy="0 0 1.0"/>
    <axis xyz="1 0 0"/><limit effort="1" velocity="1" lower="-3" upper="3"/>
    <mimic joint="j1" multiplier="-0.7" offset="0.2"/></joint>
  <joint name="weld" type="fixed"><parent link="l3"/><child link="l5"/><origin xyz="0.2 0 0.1" rpy="0.1 0.2 0.3"/>
  </joint>
  <joint name="j5" type="prismatic"><parent link="l4"/><child link="l6"/><origin xyz="0 0.1 0.1"/>
    <axis xyz="0 0 1"/><limit effort="1" velocity="1" lower="-1" upper="1"/><mimic joint="j2" multiplier="1.5"/></joint>
</robot>"""


def tree_reference():
    """pinocchio model of the tree with every movable joint independent (mimic tags removed), its configuration
    from our movable positions and the v index of our movable joints."""
    pin = pytest.importorskip("pinocchio")
    model = pin.buildModelFromXML(re.sub(r"<mimic[^>]*/>", "", TREE_URDF))
    robot = RobotModel.from_urdf(TREE_URDF)
    joints = [model.joints[model.getJointId(n)] for n in robot.movable_joint_names]
    v_index = [j.idx_v for j in joints]

    def configuration(qm):
        """pinocchio q of our movable positions (a continuous joint is (cos, sin) there)."""
        pq = np.zeros(model.nq)
        for j, x in zip(joints, qm):
            pq[j.idx_q: j.idx_q + j.nq] = (math.cos(x), math.sin(x)) if j.nq == 2 else x
        return pq

    return pin, model, model.createData(), robot, configuration, v_index


def pinocchio_rates(model, v_index, x) -> np.ndarray:
    """pinocchio v (or a) from our movable rates x (1-D, movable-joint order)."""
    v = np.zeros(model.nv)
    v[v_index] = x
    return v
