"""URDF reading: structure vs yourdfpy, geometry conversion, mesh URI resolution and every error path."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from helpers_world import erd_share, erd_urdf, robot_model
from tactile_sim.errors import SceneError
from tactile_sim.geometry.shapes import ShapeKind
from tactile_sim.world.resources import candidate_paths, resolve_resource
from tactile_sim.world.urdf import JointType, RobotModel


def urdf(body: str, name: str = "r") -> str:
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n{body}\n</robot>\n'


LINK = '<link name="{}"/>'
REV = ('<joint name="{n}" type="revolute"><parent link="{p}"/><child link="{c}"/>'
       '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')


# ---------------------------------------------------------------------------------------------- structure
@pytest.mark.parametrize("name", ["panda", "ur5"])
def test_structure_matches_yourdfpy(name):
    yourdfpy = pytest.importorskip("yourdfpy")
    ref = yourdfpy.URDF.load(str(erd_urdf(name)), build_scene_graph=False, load_meshes=False).robot
    robot = robot_model(name)
    assert robot.link_names == tuple(link.name for link in ref.links)
    assert robot.joint_names == tuple(j.name for j in ref.joints)
    for j, rj in zip(robot.joints, ref.joints):
        assert j.type.value == rj.type and (j.parent, j.child) == (rj.parent, rj.child)
        t = np.eye(4) if rj.origin is None else rj.origin
        np.testing.assert_allclose(j.rot, t[:3, :3], atol=1e-12)
        np.testing.assert_allclose(j.pos, t[:3, 3], atol=1e-12)
        if j.type.movable:
            np.testing.assert_allclose(j.axis, rj.axis / np.linalg.norm(rj.axis), atol=1e-12)
        if j.type in (JointType.REVOLUTE, JointType.PRISMATIC):
            assert (j.lower, j.upper, j.effort, j.velocity) == (rj.limit.lower, rj.limit.upper, rj.limit.effort,
                                                                 rj.limit.velocity)
        if rj.dynamics is not None:
            assert j.damping == float(rj.dynamics.damping or 0.0)
            assert j.friction == float(rj.dynamics.friction or 0.0)
        assert (j.mimic is None) == (rj.mimic is None)
    for link, rl in zip(robot.links, ref.links):
        if rl.inertial is None:
            assert link.inertial.mass == 0.0
            continue
        assert link.inertial.mass == rl.inertial.mass
        t = np.eye(4) if rl.inertial.origin is None else rl.inertial.origin
        np.testing.assert_allclose(link.inertial.com, t[:3, 3], atol=1e-12)
        np.testing.assert_allclose(link.inertial.inertia_link_axes, t[:3, :3] @ rl.inertial.inertia @ t[:3, :3].T,
                                   atol=1e-12)


def test_panda_dofs_and_mimic():
    robot = robot_model("panda")
    assert robot.root_link == "panda_link0"
    assert robot.movable_joint_names[-2:] == ("panda_finger_joint1", "panda_finger_joint2")
    assert robot.actuated_joint_names == robot.movable_joint_names[:-1]
    assert robot.movable_source.tolist() == list(range(8)) + [7]
    assert robot.movable_multiplier.tolist() == [1.0] * 9 and robot.movable_offset.tolist() == [0.0] * 9
    assert set(robot.child_links("panda_hand")) == {"panda_leftfinger", "panda_rightfinger", "panda_hand_tcp"}
    assert robot.parent_joint("panda_link0") is None
    order = [robot.link_names[i] for i in robot.topological_order]
    for j in robot.joints:
        assert order.index(j.parent) < order.index(j.child)


def test_ur5_root_listed_last():
    robot = robot_model("ur5")
    assert robot.root_link == "world" and robot.link_names[-1] == "world"
    assert robot.topological_order[0] == robot.link_index("world")


def test_mimic_chain_and_continuous():
    body = "\n".join([LINK.format(n) for n in "abcd"] + [
        REV.format(n="j1", p="a", c="b"),
        '<joint name="j2" type="continuous"><parent link="b"/><child link="c"/><axis xyz="0 2 0"/>'
        '<mimic joint="j1" multiplier="2" offset="0.5"/></joint>',
        '<joint name="j3" type="prismatic"><parent link="c"/><child link="d"/><axis xyz="1 0 0"/>'
        '<limit effort="1" velocity="1"/><mimic joint="j2" multiplier="-3" offset="1"/>'
        '<dynamics damping="0.7" friction="0.2"/></joint>'])
    robot = RobotModel.from_urdf(urdf(body))
    assert robot.actuated_joint_names == ("j1",)
    assert robot.movable_joint_names == ("j1", "j2", "j3")
    # j3 = −3 (2 q + 0.5) + 1 = −6 q − 0.5
    np.testing.assert_allclose(robot.movable_multiplier, [1, 2, -6])
    np.testing.assert_allclose(robot.movable_offset, [0, 0.5, -0.5])
    j2, j3 = robot.joint("j2"), robot.joint("j3")
    np.testing.assert_allclose(j2.axis, [0, 1, 0])
    assert (j2.lower, j2.upper) == (-math.inf, math.inf)
    assert (j3.lower, j3.upper, j3.damping, j3.friction) == (0.0, 0.0, 0.7, 0.2)


# ---------------------------------------------------------------------------------------------- geometry
def test_primitive_geometry():
    body = """
    <link name="a">
      <collision><origin xyz="0.1 0.2 0.3" rpy="0 0 1.5707963267948966"/><geometry><box size="0.2 0.4 0.6"/></geometry></collision>
      <collision><geometry><cylinder radius="0.05" length="0.3"/></geometry></collision>
      <collision name="tip"><geometry><sphere radius="0.02"/></geometry></collision>
      <collision><geometry><capsule radius="0.03" length="0.1"/></geometry></collision>
      <visual><geometry><sphere radius="0.5"/></geometry></visual>
    </link>"""
    link = RobotModel.from_urdf(urdf(body)).link("a")
    kinds = [s.kind for s in link.collision]
    assert kinds == [ShapeKind.BOX, ShapeKind.CYLINDER, ShapeKind.SPHERE, ShapeKind.CAPSULE]
    box = link.collision[0]
    assert box.size == (0.1, 0.2, 0.3)
    np.testing.assert_allclose(box.pos, [0.1, 0.2, 0.3])
    np.testing.assert_allclose(box.rot, [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-12)
    assert link.collision[1].size == (0.05, 0.3) and link.collision[3].size == (0.03, 0.1)
    assert link.collision[0].name == "a:collision[0]"
    assert [s.size for s in link.visual] == [(0.5,)]
    no_visual = RobotModel.from_urdf(urdf(body), geometry=("collision",)).link("a")
    assert no_visual.visual is None and len(no_visual.collision) == 4


def test_panda_collision_meshes_load():
    pytest.importorskip("tactile_sim.geometry.mesh_io")
    trimesh = pytest.importorskip("trimesh")
    robot = RobotModel.from_urdf(erd_urdf("panda"), search_paths=[erd_share()], geometry=("collision",))
    shape = robot.link("panda_link3").collision[0]
    assert shape.kind == ShapeKind.MESH
    ref = trimesh.load(erd_share() / "example-robot-data/robots/panda_description/meshes/collision/link3.stl",
                       force="mesh")
    assert shape.mesh.area == pytest.approx(ref.area, rel=1e-9)


def test_mesh_scale_and_relative_path(tmp_path):
    pytest.importorskip("tactile_sim.geometry.mesh_io")
    trimesh = pytest.importorskip("trimesh")
    (tmp_path / "meshes").mkdir()
    trimesh.creation.box(extents=(1, 1, 1)).export(tmp_path / "meshes" / "cube.stl")
    body = ('<link name="a"><collision><geometry><mesh filename="meshes/cube.stl" scale="0.1 0.2 0.3"/>'
            '</geometry></collision></link>')
    f = tmp_path / "robot.urdf"
    f.write_text(urdf(body))
    shape = RobotModel.from_urdf(f).link("a").collision[0]
    lo, hi = shape.local_aabb()
    np.testing.assert_allclose(hi - lo, [0.1, 0.2, 0.3], atol=1e-12)


# ---------------------------------------------------------------------------------------------- URIs
def test_candidate_paths_order(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    tried = candidate_paths("package://pkg/meshes/x.stl", search_paths=[a, b],
                            package_resolver=lambda p: tmp_path / "share" / p)
    assert tried == [tmp_path / "share/pkg/meshes/x.stl", a / "pkg/meshes/x.stl", a / "meshes/x.stl",
                     b / "pkg/meshes/x.stl", b / "meshes/x.stl"]
    assert candidate_paths("file:///abs/m%20x.stl") == [Path("/abs/m x.stl")]
    assert candidate_paths("m.stl", base_dir=a, search_paths=[b]) == [a / "m.stl", b / "m.stl"]


def test_resolve_resource_finds_second_search_path(tmp_path):
    target = tmp_path / "b" / "meshes" / "x.stl"
    target.parent.mkdir(parents=True)
    target.write_text("solid")
    assert resolve_resource("package://pkg/meshes/x.stl", search_paths=[tmp_path / "a", tmp_path / "b"]) == target
    with pytest.raises(SceneError, match="unsupported URI scheme"):
        resolve_resource("http://example.invalid/x.stl")


@pytest.mark.parametrize("mesh", ["/dev/zero", "folder"])
def test_a_mesh_path_that_is_not_a_regular_file_says_what_it_is(tmp_path, mesh):
    (tmp_path / "folder").mkdir()
    body = f'<link name="a"><collision><geometry><mesh filename="{mesh}"/></geometry></collision></link>'
    with pytest.raises(SceneError) as e:
        RobotModel.from_urdf(urdf(body), search_paths=[tmp_path])
    assert f"{mesh!r} is not a regular file (a folder, a device or a pipe)" in str(e.value), str(e.value)
    assert "<link name='a'> <collision> <mesh>" in str(e.value) and "file not found" not in str(e.value)


def test_missing_mesh_names_uri_and_every_path(tmp_path):
    body = ('<link name="a"><collision><geometry><mesh filename="package://ghost/meshes/m.stl"/></geometry>'
            '</collision></link>')
    with pytest.raises(SceneError) as e:
        RobotModel.from_urdf(urdf(body), search_paths=[tmp_path / "s1", tmp_path / "s2"])
    msg = str(e.value)
    assert "package://ghost/meshes/m.stl" in msg and "<link name='a'> <collision> <mesh>" in msg
    for p in ["s1/ghost/meshes/m.stl", "s1/meshes/m.stl", "s2/ghost/meshes/m.stl", "s2/meshes/m.stl"]:
        assert str(tmp_path / p) in msg
    # without the geometry group, the file is not needed
    assert RobotModel.from_urdf(urdf(body), geometry=()).link("a").collision is None


# ---------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("text, pattern", [
    ('<robot name="r"><link name="a"></robot>', r"malformed XML"),
    ('<robt name="r"/>', r"root element must be <robot>"),
    (urdf(LINK.format("a") + LINK.format("b") + REV.format(n="j", p="a", c="b").replace("revolute", "spherical")),
     r"<joint name='j'>: unknown joint type 'spherical'; allowed: revolute, continuous, prismatic, fixed"),
    (urdf(LINK.format("a") + LINK.format("b") + REV.format(n="j", p="a", c="b").replace("revolute", "floating")),
     r"joint type 'floating' is unsupported"),
    (urdf(LINK.format("a") + LINK.format("b") + REV.format(n="j", p="a", c="b").replace("revolute", "planar")),
     r"joint type 'planar' is unsupported"),
    (urdf(LINK.format("a") + REV.format(n="j", p="a", c="b")),
     r"child link 'b' is not defined; links: \['a'\]"),
    (urdf(LINK.format("a") + LINK.format("b")), r"several root links \['a', 'b'\]"),
    (urdf(LINK.format("a") + LINK.format("a")), r"duplicate link name"),
    (urdf(LINK.format("a") + LINK.format("b") + REV.format(n="j", p="a", c="b") + REV.format(n="k", p="b", c="a")),
     r"no root link: the joints form a closed loop"),
    (urdf("".join(LINK.format(n) for n in "abc") + REV.format(n="j", p="a", c="b") + REV.format(n="k", p="c", c="b")),
     r"link 'b' already has parent joint 'j'"),
    (urdf(LINK.format("a") + LINK.format("b") + REV.format(n="j", p="a", c="b").replace('xyz="0 0 1"', 'xyz="0 nan 1"')),
     r":\d+: <joint name='j'> <axis>: attribute 'xyz' must be finite; got '0 nan 1'"),
    (urdf(LINK.format("a") + LINK.format("b") + REV.format(n="j", p="a", c="b").replace('xyz="0 0 1"', 'xyz="0 0 0"')),
     r"axis must be non-zero"),
    (urdf(LINK.format("a") + LINK.format("b")
          + '<joint name="j" type="revolute"><parent link="a"/><child link="b"/></joint>'),
     r"a revolute joint needs <limit"),
    (urdf(LINK.format("a") + LINK.format("b") + REV.format(n="j", p="a", c="b").replace('lower="-1"', 'lower="2"')),
     r"lower 2.0 > upper 1.0"),
    (urdf(LINK.format("a") + LINK.format("b")
          + REV.format(n="j", p="a", c="b").replace("</joint>", '<mimic joint="zz"/></joint>')),
     r"source joint 'zz' is not defined"),
    (urdf('<link name="a"><inertial><mass value="-1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
          '</inertial></link>'), r"negative mass; got -1.0"),
    (urdf('<link name="a"><inertial><mass value="1"/><inertia ixx="inf" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
          '</inertial></link>'), r"attribute 'ixx' must be finite"),
    (urdf('<link name="a"><inertial><mass value="1"/><inertia ixx="1"/></inertial></link>'),
     r"missing attribute 'ixy'"),
    (urdf('<link name="a"><collision><geometry><box size="1 1"/></geometry></collision></link>'),
     r"attribute 'size' needs 3 number\(s\)"),
    (urdf('<link name="a"><collision><geometry><sphere radius="-1"/></geometry></collision></link>'),
     r"<link name='a'> <collision> <sphere>: shape 'a:collision\[0\]' \(sphere\): dimensions must be 1e-06 to 10000 m"),
    (urdf('<link name="a"><collision><geometry><cylinder radius="1e300" length="1"/></geometry></collision></link>'),
     r"\(cylinder\): dimensions must be 1e-06 to 10000 m; got \(1e\+300, 1.0\)"),
    (urdf('<link name="a"><collision><geometry><box size="1 1 1e-300"/></geometry></collision></link>'),
     r"\(box\): dimensions must be 1e-06 to 10000 m"),
    (urdf('<link name="a"><collision><geometry><mesh filename="m.stl" scale="1e300"/></geometry></collision>'
          '</link>'), r"mesh scale factors must be 1e-06 to 1e\+06 in size"),
    (urdf('<link name="a"><collision><geometry><cone radius="1"/></geometry></collision></link>'),
     r"unknown geometry; allowed: box, cylinder, sphere, capsule, mesh"),
    (urdf('<link name="a"><collision><geometry/></collision></link>'), r"<geometry> must hold exactly one of"),
])
def test_errors(text, pattern):
    with pytest.raises(SceneError, match=pattern):
        RobotModel.from_urdf(text)


def test_mimic_loop_and_fixed_source():
    links = "".join(LINK.format(n) for n in "abc")
    loop = (REV.format(n="j", p="a", c="b").replace("</joint>", '<mimic joint="k"/></joint>')
            + REV.format(n="k", p="b", c="c").replace("</joint>", '<mimic joint="j"/></joint>'))
    with pytest.raises(SceneError, match="mimic chain loops back"):
        RobotModel.from_urdf(urdf(links + loop))
    fixed = ('<joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint>'
             + REV.format(n="k", p="b", c="c").replace("</joint>", '<mimic joint="j"/></joint>'))
    with pytest.raises(SceneError, match="source joint 'j' is fixed"):
        RobotModel.from_urdf(urdf(links + fixed))


def test_missing_file_and_error_location(tmp_path):
    with pytest.raises(SceneError, match="not found"):
        RobotModel.from_urdf(tmp_path / "nope.urdf")
    f = tmp_path / "bad.urdf"
    f.write_text(urdf(LINK.format("a") + LINK.format("b") + "\n"
                      + REV.format(n="j", p="a", c="b").replace("revolute", "ball")))  # the joint is on line 4
    with pytest.raises(SceneError, match=rf"{f}:4: <joint name='j'>"):
        RobotModel.from_urdf(f)


def test_unknown_geometry_group_and_lookups():
    with pytest.raises(ValueError, match="unknown group"):
        RobotModel.from_urdf(urdf(LINK.format("a")), geometry=("collisions",))
    robot = RobotModel.from_urdf(urdf(LINK.format("a")))
    with pytest.raises(SceneError, match=r"no link 'b'; links: \['a'\]"):
        robot.link_index("b")
    with pytest.raises(SceneError, match="no joint 'j'"):
        robot.joint("j")
    assert robot.n_movable == 0 and robot.link("a").inertial.mass == 0.0
