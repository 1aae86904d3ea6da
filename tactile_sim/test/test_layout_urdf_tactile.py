"""Import of ubi-agni urdf_tactile ``<sensor><tactile>`` declarations; expected values worked out by hand."""

import math

import numpy as np
import pytest

from helpers_layout import raises_config_error
from tactile_sim.sensors.layout.sources import urdf_tactile_layouts

HALF_PI = repr(math.pi / 2)

URDF = f"""<?xml version="1.0"?>
<robot name="hand" xmlns="http://www.ros.org">
  <link name="hand"/>
  <link name="finger"/>
  <sensor name="palm" update_rate="100" group="palm_group">
    <parent link="hand"/>
    <origin xyz="0.01 0.02 0.03" rpy="0 0 {HALF_PI}"/>
    <tactile channel="palm_data">
      <array rows="2" cols="3" size="0.004 0.006" offset="0.002 0.003"/>
    </tactile>
  </sensor>
  <sensor name="camera" update_rate="30">
    <parent link="hand"/>
    <camera/>
  </sensor>
  <sensor name="back">
    <parent link="hand"/>
    <tactile>
      <array rows="2" cols="3" size="0.004 0.004" spacing="-0.005 0.005" order="col-major"/>
    </tactile>
  </sensor>
  <sensor name="tip">
    <parent link="finger"/>
    <origin xyz="0 0 0.1" rpy="{HALF_PI} 0 0"/>
    <tactile channel="tips">
      <taxel idx="3" xyz="0.01 0 0" rpy="0 0 0">
        <geometry><box size="0.004 0.002 0.001"/></geometry>
      </taxel>
      <taxel idx="0" xyz="0 0.02 0" rpy="0 {HALF_PI} 0">
        <geometry><mesh filename="package://x/taxel.stl"/></geometry>
      </taxel>
      <taxel idx="7" xyz="0 0 0.005">
        <geometry><sphere radius="0.003"/></geometry>
      </taxel>
    </tactile>
  </sensor>
</robot>
"""


def test_sensors_found_and_non_tactile_ignored():
    decls = urdf_tactile_layouts(URDF)
    assert list(decls) == ["palm", "back", "tip"]
    palm = decls["palm"]
    assert (palm.link, palm.channel, palm.group, palm.update_rate, palm.order) == \
        ("hand", "palm_data", "palm_group", 100.0, "row-major")
    assert decls["tip"].update_rate is None and decls["tip"].order is None and decls["tip"].channel == "tips"


def test_array_positions_normals_radius_by_hand():
    palm = urdf_tactile_layouts(URDF)["palm"]
    # sensor frame [r, c] = (0.004 r − 0.002, 0.006 c − 0.003, 0); Rz(90°)(x, y, z) = (−y, x, z); + (0.01, 0.02, 0.03)
    # → link frame (0.013 − 0.006 c, 0.018 + 0.004 r, 0.03)
    expected = np.array([[[0.013 - 0.006 * c, 0.018 + 0.004 * r, 0.03] for c in range(3)] for r in range(2)])
    assert palm.positions.shape == (2, 3, 3)
    np.testing.assert_allclose(palm.positions, expected, atol=1e-15)
    np.testing.assert_allclose(palm.normals, np.broadcast_to([0, 0, 1], (2, 3, 3)), atol=1e-15)
    np.testing.assert_array_equal(palm.radius, np.full((2, 3), 0.002))
    np.testing.assert_array_equal(palm.data_index, [[0, 1, 2], [3, 4, 5]])

    lay = palm.layout()
    assert lay.shape == (2, 3) and lay.grid.regular
    np.testing.assert_allclose(lay.grid.t_u, [-1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(lay.grid.t_v, [0, 1, 0], atol=1e-12)
    assert lay.grid.du == pytest.approx(0.006) and lay.grid.dv == pytest.approx(0.004)
    np.testing.assert_allclose(lay.grid.shared_normal, [0, 0, 1], atol=1e-15)


def test_array_negative_spacing_and_column_major_order():
    back = urdf_tactile_layouts(URDF)["back"]
    expected = np.array([[[-0.005 * r, 0.005 * c, 0.0] for c in range(3)] for r in range(2)])
    np.testing.assert_allclose(back.positions, expected, atol=1e-15)
    np.testing.assert_array_equal(back.data_index, [[0, 2, 4], [1, 3, 5]])
    assert back.order == "col-major"


def test_taxel_list_by_hand():
    tip = urdf_tactile_layouts(URDF)["tip"]
    # sensor: Rx(90°)(x, y, z) = (x, −z, y), then + (0, 0, 0.1)
    np.testing.assert_allclose(tip.positions, [[0.01, 0.0, 0.1], [0.0, 0.0, 0.12], [0.0, -0.005, 0.1]], atol=1e-15)
    # normals: Rx(90°) e_z = −e_y; Rx(90°) Ry(90°) e_z = Rx(90°) e_x = e_x
    np.testing.assert_allclose(tip.normals, [[0, -1, 0], [1, 0, 0], [0, -1, 0]], atol=1e-15)
    np.testing.assert_array_equal(tip.data_index, [3, 0, 7])
    assert tip.radius[0] == 0.001 and math.isnan(tip.radius[1]) and tip.radius[2] == 0.003
    lay = tip.layout(default_radius=0.01)
    assert lay.shape == (3,)
    np.testing.assert_array_equal(lay.radius, [0.001, 0.01, 0.003])
    np.testing.assert_array_equal(tip.layout(probe_radius=0.002).radius, [0.002] * 3)
    moved = tip.layout(pos_offset=(0, 0, 1))
    np.testing.assert_allclose(moved.positions[:, 2], tip.positions[:, 2] + 1, atol=1e-15)


def sensor(body, name="s", parent='<parent link="l"/>'):
    return f'<robot name="r"><link name="l"/><sensor name="{name}">{parent}<tactile>{body}</tactile></sensor></robot>'


ARRAY = '<array rows="2" cols="2" size="0.01 0.01"/>'
SRC = "robot_description:sensor[name='s']"


@pytest.mark.parametrize("xml, parts", [
    ("<robot><sensor", ("robot_description: not well-formed XML",)),
    ("<model/>", ("robot_description: root element is <model>", "allowed: <robot>")),
    (sensor(ARRAY, parent=""), (f"{SRC}.parent: missing", "got nothing", "allowed:")),
    (sensor(ARRAY, parent="<parent/>"), (f"{SRC}.parent: missing", "got <parent />", "allowed:")),
    (sensor(ARRAY + '<taxel idx="0"/>'), (f"{SRC}.tactile: both <array> and <taxel>", "allowed:")),
    (sensor(ARRAY + ARRAY), (f"{SRC}.tactile.array: more than one <array>", "got 2", "allowed: exactly one")),
    (sensor(""), (f"{SRC}.tactile: no <array> and no <taxel>", "allowed:")),
    (sensor('<array rows="0" cols="2" size="0.01 0.01"/>'),
     (f"{SRC}.tactile.array.rows: need an integer >= 1", "got '0'", "allowed:")),
    (sensor('<array rows="2" cols="2" size="0.01"/>'),
     (f"{SRC}.tactile.array.size: need 2 finite numbers", "got '0.01'", "allowed:")),
    (sensor('<array rows="2" cols="2"/>'), (f"{SRC}.tactile.array.size: missing", "allowed:")),
    (sensor('<array rows="2" cols="2" size="0.01 -0.01"/>'), (f"{SRC}.tactile.array.size: must be > 0",)),
    (sensor('<array rows="2" cols="2" size="0.01 0.01" spacing="0 0.01"/>'),
     (f"{SRC}.tactile.array.spacing: must be non-zero", "allowed:")),
    (sensor('<array rows="2" cols="2" size="0.01 0.01" order="diagonal"/>'),
     (f"{SRC}.tactile.array.order: unknown data order", "got 'diagonal'", "allowed: 'row-major', 'col-major'")),
    (sensor('<taxel xyz="0 0 0"/>'), (f"{SRC}.tactile.taxel[0].idx: missing", "got nothing", "allowed: integer >= 0")),
    (sensor('<taxel idx="0" xyz="0 0 x"/>'), (f"{SRC}.tactile.taxel[0].xyz: need 3 finite numbers", "got '0 0 x'")),
    (sensor('<taxel idx="0"><geometry><cylinder radius="0" length="1"/></geometry></taxel>'),
     (f"{SRC}.tactile.taxel[0].geometry.cylinder.radius: must be > 0", "got 0.0")),
    (sensor(ARRAY).replace('<sensor name="s">', '<sensor>'), ("robot_description:sensor[0].name: missing",)),
    (sensor(ARRAY).replace('<sensor name="s">', '<sensor name="s" update_rate="fast">'),
     (f"{SRC}.update_rate: must be a number > 0", "got 'fast'")),
    (sensor(ARRAY).replace("</robot>", '<sensor name="s"><parent link="l"/><tactile>' + ARRAY
                           + "</tactile></sensor></robot>"),
     (f"{SRC}.name: duplicate tactile sensor name", "got 's'")),
])
def test_malformed_elements(xml, parts):
    raises_config_error(lambda: urdf_tactile_layouts(xml), *parts)


def test_origin_errors_name_the_sensor():
    xml = sensor(ARRAY).replace('<parent link="l"/>', '<parent link="l"/><origin xyz="0 0 0" rpy="0 0"/>')
    raises_config_error(lambda: urdf_tactile_layouts(xml, source="hand.urdf"),
                        "hand.urdf:sensor[name='s'].origin.rpy: need 3 finite numbers", "got '0 0'")
