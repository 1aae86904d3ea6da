"""Scene order, name clashes, body look-up, neighbours and the candidate rule of docs/models/scene.md#candidates."""

from __future__ import annotations

import numpy as np
import pytest

from helpers_world import robot_model
from tactile_sim.errors import SceneError
from tactile_sim.geometry.shapes import Shape, ShapeKind
from tactile_sim.world.objects import DeclaredObject
from tactile_sim.world.scene import Scene
from tactile_sim.world.urdf import RobotModel

ARM = """<robot name="arm">
  <link name="base"><collision><geometry><box size="0.2 0.2 0.1"/></geometry></collision></link>
  <link name="upper"><collision><geometry><capsule radius="0.04" length="0.3"/></geometry></collision>
                     <collision><geometry><sphere radius="0.05"/></geometry></collision></link>
  <link name="lower"><collision><geometry><cylinder radius="0.03" length="0.25"/></geometry></collision></link>
  <link name="tool"/>
  <joint name="shoulder" type="continuous"><parent link="base"/><child link="upper"/></joint>
  <joint name="elbow" type="continuous"><parent link="upper"/><child link="lower"/></joint>
  <joint name="flange" type="fixed"><parent link="lower"/><child link="tool"/></joint>
</robot>"""


def ball(name, **kw):
    return DeclaredObject(name, (Shape(ShapeKind.SPHERE, (0.05,), name=f"{name}:0"),), **kw)


@pytest.fixture
def scene():
    plane = DeclaredObject("floor", (Shape(ShapeKind.PLANE, name="floor:0"),), source="scene.yaml:objects[0]")
    return Scene(RobotModel.from_urdf(ARM), [plane, ball("cup", source="scene.yaml:objects[1]")])


def test_scene_order_and_shape_table(scene):
    assert scene.body_names == ("base", "upper", "lower", "tool", "floor", "cup")
    assert scene.n_links == 4 and scene.n_bodies == 6
    assert [b.kind for b in scene.bodies] == ["link"] * 4 + ["object"] * 2
    table = scene.shape_table()
    assert [b for b, _ in table] == [0, 1, 1, 2, 4, 5]
    assert [s.kind for _, s in table] == [ShapeKind.BOX, ShapeKind.CAPSULE, ShapeKind.SPHERE, ShapeKind.CYLINDER,
                                          ShapeKind.PLANE, ShapeKind.SPHERE]
    assert scene.shape_table("visual") == []


def test_name_clash_names_both_sources():
    with pytest.raises(SceneError, match=r"body name 'elbow_ball' is used twice: object from a.yaml:objects\[0\] "
                                         r"and object from b.yaml:objects\[3\]"):
        Scene(None, [ball("elbow_ball", source="a.yaml:objects[0]"), ball("elbow_ball", source="b.yaml:objects[3]")])
    with pytest.raises(SceneError, match=r"'upper' is used twice: link from robot 'arm' \(<urdf string>\) and "
                                         r"object from scene.yaml:objects\[0\]"):
        Scene(RobotModel.from_urdf(ARM), [ball("upper", source="scene.yaml:objects[0]")])


def test_body_index_did_you_mean(scene):
    assert scene.body_index("cup") == 5 and scene.body("cup").kind == "object"
    with pytest.raises(SceneError, match=r"sensors\[1\].link: unknown body 'uper'; closest existing bodies: "
                                         r"\['upper', .*\]") as e:
        scene.body_index("uper", "sensors[1].link")
    listed = str(e.value).split("closest existing bodies: ")[1]
    assert listed.count("'") == 10  # five names
    with pytest.raises(SceneError, match="body index 9 out of range"):
        scene.neighbours(9)


def test_neighbours_include_fixed_joints(scene):
    assert scene.neighbours("upper") == (0, 2)
    assert scene.neighbours("lower") == (1, 3)  # tool is attached by a fixed joint
    assert scene.neighbours("tool") == (2,)
    assert scene.neighbours("cup") == ()
    ur5 = Scene(robot_model("ur5"))
    names = {ur5.body_names[i] for i in ur5.neighbours("base_link")}
    assert names == {"world", "shoulder_link", "base"}


def test_candidate_mask(scene):
    np.testing.assert_array_equal(scene.candidate_mask("upper"), [False, False, False, True, True, True])
    np.testing.assert_array_equal(scene.candidate_mask("tool", ["floor"]), [True, True, False, False, False, True])
    np.testing.assert_array_equal(scene.candidate_mask("cup"), [True, True, True, True, True, False])
    with pytest.raises(SceneError, match=r"sensors\[0\]: ignore: unknown body 'flor'; closest existing bodies: "
                                         r"\['floor'"):
        scene.candidate_mask("cup", ["flor"], where="sensors[0]")


def test_visual_geometry_not_loaded():
    robot = RobotModel.from_urdf(ARM, geometry=("collision",))
    with pytest.raises(SceneError, match="visual geometry was not loaded"):
        Scene(robot).shape_table("visual")
    with pytest.raises(ValueError, match="source must be 'collision' or 'visual'"):
        Scene(robot).shape_table("mesh")


def test_declared_object_validation():
    with pytest.raises(SceneError, match="give either 'frame'.*or 'follow'"):
        ball("x", frame="a", follow="b")
    with pytest.raises(SceneError, match=r"object .x.: rot: not a rotation"):
        ball("x", rot=np.diag([1.0, 1.0, -1.0]))
    with pytest.raises(SceneError, match="pos must be 3 finite numbers"):
        ball("x", pos=[0, np.nan, 0])
    with pytest.raises(SceneError, match="object name must be a non-empty string"):
        ball("")
    with pytest.raises(SceneError, match="shapes must be Shape instances"):
        DeclaredObject("x", ("sphere",))
    assert ball("x", follow="tracker").parent_frame == "tracker"
    assert ball("x", frame="table").parent_frame == "table" and ball("x").parent_frame is None
