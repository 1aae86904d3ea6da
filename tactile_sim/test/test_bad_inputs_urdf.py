"""Physically invalid URDF inertias are refused with file:line (or, with ``robot.inertia_check: warn``, warned
about); URDF ``<tactile>`` errors name the URDF file. Independent truth: the inertia of any box, rotated at random,
is a rigid body's (accepted), and the classic violations (a negative moment, the triangle inequality broken by a
margin, an inertia without mass, a non-definite product of inertia) are refused."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tactile_sim.config import load_config
from tactile_sim.errors import ConfigError, SceneError
from tactile_sim.geometry.transforms import rpy_to_matrix_np
from tactile_sim.suite import SensorSuite
from tactile_sim.world.urdf import RobotModel, inertia_problem


def urdf_with_inertia(mass: float, ixx, iyy, izz, ixy=0.0, ixz=0.0, iyz=0.0) -> str:
    return ('<robot name="r">\n<link name="base"/>\n<link name="arm"><inertial><mass value="%r"/>\n'
            '<inertia ixx="%r" ixy="%r" ixz="%r" iyy="%r" iyz="%r" izz="%r"/></inertial>\n'
            '<collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>\n'
            '<joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="1 0 0"/>'
            '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>\n</robot>\n'
            % (mass, ixx, ixy, ixz, iyy, iyz, izz))


def box_inertia(m: float, size, rot) -> np.ndarray:
    a, b, c = size
    diag = np.diag([m / 12 * (b * b + c * c), m / 12 * (a * a + c * c), m / 12 * (a * a + b * b)])
    return rot @ diag @ rot.T


def test_every_rotated_box_is_accepted_and_a_stretched_one_refused():
    rng = np.random.default_rng(3)
    for _ in range(200):
        m, size, rpy = rng.uniform(0.01, 10), rng.uniform(1e-3, 1.0, 3), rng.uniform(-np.pi, np.pi, 3)
        inertia = box_inertia(m, size, rpy_to_matrix_np(rpy))
        assert inertia_problem(m, inertia) == ""
        moments = np.linalg.eigvalsh(inertia)
        broken = np.diag([moments[0], moments[1], 1.01 * (moments[0] + moments[1])])
        assert "triangle inequality" in inertia_problem(m, broken)


def test_a_flat_plate_meets_the_triangle_inequality_with_equality():
    assert inertia_problem(1.0, box_inertia(1.0, (0.3, 0.2, 0.0), np.eye(3))) == ""


@pytest.mark.parametrize("args, problem", [
    ((1.0, -0.1, 1.0, 1.0), "inertia not positive definite"),
    ((1.0, 1.0, 1.0, 1.0, 2.0), "inertia not positive definite"),
    ((1.7, 0.021, 0.03, 0.004), "principal moments break the triangle inequality"),
    ((0.0, 1.0, 1.0, 1.0), "an inertia without mass"),
])
def test_invalid_inertias_are_errors_naming_file_and_line(tmp_path, args, problem):
    path = tmp_path / "arm.urdf"
    path.write_text(urdf_with_inertia(*args))
    with pytest.raises(SceneError) as info:
        RobotModel.from_urdf(path)
    msg = str(info.value)
    assert msg.startswith(f"{path}:4: <link name='arm'> <inertial> <inertia>: {problem}"), msg
    assert "robot.inertia_check: warn" in msg


def test_zero_inertia_stays_a_point_mass_or_massless_link(tmp_path):
    for mass in (0.0, 2.0):
        RobotModel.from_urdf(urdf_with_inertia(mass, 0.0, 0.0, 0.0))


def suite_config(tmp_path, urdf_text: str, **robot) -> dict:
    path = tmp_path / "arm.urdf"
    path.write_text(urdf_text)
    return {"suite": {"dt": 0.01}, "robot": {"urdf": str(path), **robot},
            "sensors": [{"type": "JointTorque", "name": "tau"}]}


def test_the_warn_option_builds_the_suite_with_a_warning_naming_the_line(tmp_path):
    cfg = suite_config(tmp_path, urdf_with_inertia(1.0, -0.1, 1.0, 1.0), inertia_check="warn")
    with pytest.warns(UserWarning, match=r"arm.urdf:4: <link name='arm'> <inertial> <inertia>: inertia not positive"):
        SensorSuite(load_config(cfg))
    with pytest.raises(SceneError, match="inertia not positive definite"):
        SensorSuite(load_config(suite_config(tmp_path, urdf_with_inertia(1.0, -0.1, 1.0, 1.0))))


def test_a_valid_inertia_gives_no_warning(tmp_path):
    cfg = suite_config(tmp_path, urdf_with_inertia(1.0, 1.0, 1.0, 1.0), inertia_check="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SensorSuite(load_config(cfg))


@pytest.mark.parametrize("value", ["ignore", True, 1, None])
def test_bad_inertia_check_values_name_the_option(tmp_path, value):
    cfg = suite_config(tmp_path, urdf_with_inertia(1.0, 1.0, 1.0, 1.0), inertia_check=value)
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert str(info.value).startswith("<dict>:robot.inertia_check: "), str(info.value)


@pytest.mark.parametrize("tactile, part", [
    ('<array rows="x" cols="2" size="0.01 0.01"/>', "tactile.array.rows"),
    ('<array rows="2" cols="2" size="0.01"/>', "tactile.array.size"),
    ("", "tactile: no <array> and no <taxel>"),
])
def test_tactile_errors_name_the_urdf_file(tmp_path, tactile, part):
    text = urdf_with_inertia(1.0, 1.0, 1.0, 1.0).replace(
        "</robot>", f'<sensor name="s"><parent link="arm"/><tactile>{tactile}</tactile></sensor></robot>')
    cfg = suite_config(tmp_path, text)
    cfg["sensors"] = [{"type": "ContactProbe", "name": "p", "link": "arm", "probe_local_pos": {"urdf_tactile": "s"}}]
    with pytest.raises(ConfigError) as info:
        SensorSuite(load_config(cfg))
    assert str(info.value).startswith(f"{tmp_path / 'arm.urdf'}:sensor[name='s'].{part}"), str(info.value)
