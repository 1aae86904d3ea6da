"""rviz markers: types, counts, namespaces/ids, frames and colours on the fixed scales."""

from __future__ import annotations

import numpy as np
import pytest
from helpers_io import assert_messages_equal, sample_link_contact_reading, sample_taxel_reading, sample_thermal_reading

from tactile_sim.io import markers
from tactile_sim.io.msg_types import deserialize_cdr, message_class, serialize_cdr
from tactile_sim.io.readings import TaxelReading

Marker = message_class(markers.MARKER)


def rgba(colour):
    return (colour.r, colour.g, colour.b, colour.a)


def flat_force_reading(forces, radii=None, valid=True):
    n = len(forces)
    return TaxelReading(
        "pad", "KinematicTaxel", "pad_link", 1.25, 0, 0,
        positions=np.column_stack([np.arange(n) * 0.01, np.zeros(n), np.zeros(n)]),
        normals=np.tile([0.0, 0.0, 1.0], (n, 1)),
        radii=np.full(n, 0.004) if radii is None else radii,
        channels={"force": np.asarray(forces, dtype=np.float64), "torque": np.zeros((n, 3))},
        valid=valid,
    )


def test_colour_ramp_stops_and_clipping():
    u = np.array([-1.0, 0.0, 0.25, 0.5, 0.75, 1.0, 3.0, 0.125])
    expected = [(0, 0, 1), (0, 0, 1), (0, 1, 1), (0, 1, 0), (1, 1, 0), (1, 0, 0), (1, 0, 0), (0, 0.5, 1)]
    assert np.allclose(markers.colour_ramp(u), expected, rtol=0, atol=1e-15)


def test_taxel_spheres_are_coloured_by_force_magnitude_on_the_fixed_scale():
    forces = [[0, 0, 0], [0, 0, -2.0], [3.0, 0, -4.0], [0, 100.0, 0]]  # |F| = 0, 2, 5, 100
    result = markers.taxel_markers(flat_force_reading(forces), max_value=10.0, sphere_diameter=0.008)
    spheres = result[0]
    assert (spheres.type, spheres.action, spheres.ns, spheres.id) == (Marker.SPHERE_LIST, Marker.ADD, "pad/taxels", 0)
    assert spheres.header.frame_id == "pad_link" and spheres.header.stamp.nanosec == 250_000_000
    assert (spheres.scale.x, spheres.scale.y, spheres.scale.z) == (0.008, 0.008, 0.008)
    assert len(spheres.points) == len(spheres.colors) == 4
    assert [p.x for p in spheres.points] == pytest.approx([0.0, 0.01, 0.02, 0.03])
    expected = [(0, 0, 1, 1), (0, 0.8, 1, 1), (0, 1, 0, 1), (1, 0, 0, 1)]  # u = 0, 0.2, 0.5, 1 (clipped)
    assert np.allclose([rgba(c) for c in spheres.colors], expected, rtol=0, atol=1e-7)  # ColorRGBA is float32


def test_force_arrows_end_at_the_taxel_and_zero_forces_are_deleted():
    forces = [[0, 0, 0], [0, 0, -5.0], [0, 10.0, 0]]
    result = markers.taxel_markers(flat_force_reading(forces), max_value=10.0, sphere_diameter=0.008,
                                   arrow_length=0.05)
    arrows = result[1:]
    assert len(arrows) == 3
    assert all(a.type == Marker.ARROW and a.ns == "pad/forces" for a in arrows)
    assert [a.id for a in arrows] == [0, 1, 2]
    assert [a.action for a in arrows] == [Marker.DELETE, Marker.ADD, Marker.ADD]
    start, tip = arrows[1].points
    assert (tip.x, tip.y, tip.z) == pytest.approx((0.01, 0.0, 0.0))
    assert (start.x, start.y, start.z) == pytest.approx((0.01, 0.0, 0.025))  # F/max·length = 0.025 m, along −F
    start, tip = arrows[2].points
    assert (start.y, tip.y) == pytest.approx((-0.05, 0.0))
    assert np.allclose(rgba(arrows[2].color), (1, 0, 0, 1))
    assert np.allclose(rgba(arrows[1].color), (0, 1, 0, 1))


def test_fillers_are_translucent_grey_and_invalid_readings_all_grey_without_arrows():
    forces = [[0, 0, -5.0], [0, 0, -5.0]]
    spheres = markers.taxel_markers(flat_force_reading(forces, radii=np.array([0.0, 0.004])), max_value=10.0,
                                    sphere_diameter=0.008)[0]
    assert rgba(spheres.colors[0]) == pytest.approx(markers.FILLER_RGBA)
    assert rgba(spheres.colors[1]) == pytest.approx((0, 1, 0, 1))
    invalid = markers.taxel_markers(flat_force_reading(forces, valid=False), max_value=10.0, sphere_diameter=0.008)
    assert all(rgba(c) == pytest.approx(markers.INVALID_RGBA) for c in invalid[0].colors)
    assert all(a.action == Marker.DELETE for a in invalid[1:])


@pytest.mark.parametrize(
    ("sensor_type", "channel", "count"),
    [("ContactProbe", "contact", 1), ("ContactDepthProbe", "depth", 1), ("ElastomerTaxel", "displacement", 1),
     ("SurfaceDistanceProbe", "distance", 1), ("ProximityTaxel", "force", 1 + 6)],
)
def test_default_channel_and_marker_count_per_sensor_type(sensor_type, channel, count):
    reading = sample_taxel_reading(sensor_type, rows=2, cols=3)
    result = markers.taxel_markers(reading, max_value=1.0, sphere_diameter=0.01)
    assert len(result) == count
    expected = markers.taxel_magnitude(reading, channel)
    ramp = markers.colour_ramp(expected)
    active = reading.radii > 0
    got = np.array([rgba(c)[:3] for c in result[0].colors])
    assert np.allclose(got[active], ramp[active], rtol=0, atol=1e-7)  # ColorRGBA is float32


def test_contact_flags_colour_red_when_true_and_blue_when_false():
    reading = sample_taxel_reading("ContactProbe", rows=2, cols=3)
    spheres = markers.taxel_markers(reading, max_value=1.0, sphere_diameter=0.01)[0]
    for k, flag in enumerate(reading.channels["contact"]):
        if reading.radii[k] > 0:
            assert rgba(spheres.colors[k]) == pytest.approx((1, 0, 0, 1) if flag else (0, 0, 1, 1))


def test_thermal_cubes_sit_at_cell_centres_in_the_grid_pose_with_a_fixed_range():
    reading = sample_thermal_reading((3, 2, 4), temperatures=np.full((3, 2, 4), 50.0, np.float32))
    temperatures = reading.temperatures.copy()
    temperatures[0, 0, 0], temperatures[2, 1, 3] = -10.0, 75.0
    reading = sample_thermal_reading((3, 2, 4), temperatures=temperatures)
    (cubes,) = markers.thermal_markers(reading, temperature_range=(0.0, 100.0), alpha=0.5)
    assert (cubes.type, cubes.ns, cubes.id) == (Marker.CUBE_LIST, "palm_thermal/thermal", 0)
    assert cubes.header.frame_id == "palm_link"
    assert (cubes.pose.position.x, cubes.pose.position.y, cubes.pose.orientation.w) == (-0.05, -0.04, 1.0)
    assert (cubes.scale.x, cubes.scale.y, cubes.scale.z) == tuple(reading.cell_size)
    assert len(cubes.points) == len(cubes.colors) == 24
    last = cubes.points[-1]  # cell [2, 1, 3]
    assert (last.x, last.y, last.z) == pytest.approx(tuple((np.array([2, 1, 3]) + 0.5) * reading.cell_size))
    assert rgba(cubes.colors[0]) == pytest.approx((0, 0, 1, 0.5))  # below the range: clipped to blue
    assert rgba(cubes.colors[1]) == pytest.approx((0, 1, 0, 0.5))  # 50 °C: middle of (0, 100)
    assert rgba(cubes.colors[-1]) == pytest.approx((1, 1, 0, 0.5))  # 75 °C


def test_link_contact_arrow():
    reading = sample_link_contact_reading(1, force=np.array([0.0, 0.0, 20.0]))
    (arrow,) = markers.link_contact_markers(reading, max_force=40.0, arrow_length=0.2)
    assert (arrow.type, arrow.action, arrow.ns, arrow.id) == (Marker.ARROW, Marker.ADD, "feet/left_foot/force", 0)
    start, tip = arrow.points
    assert (start.z, tip.z) == pytest.approx((-0.1, 0.0))
    assert rgba(arrow.color) == pytest.approx((0, 1, 0, 1))
    (zero,) = markers.link_contact_markers(sample_link_contact_reading(1, force=np.zeros(3)), max_force=40.0)
    assert zero.action == Marker.DELETE


def test_marker_array_round_trips_through_cdr():
    reading = sample_taxel_reading("KinematicTaxel", rows=2, cols=3)
    array = markers.marker_array(markers.taxel_markers(reading, max_value=5.0, sphere_diameter=0.01)
                                 + markers.thermal_markers(sample_thermal_reading()))
    assert len(array.markers) == 1 + 6 + 1
    back = deserialize_cdr(serialize_cdr(array), markers.MARKER_ARRAY)
    assert_messages_equal(back, array)


def test_default_sphere_diameter():
    grid = np.stack(np.meshgrid(np.arange(4) * 0.005, np.arange(3) * 0.004, [0.0], indexing="ij"), -1).reshape(-1, 3)
    assert markers.default_sphere_diameter(grid, np.full(12, 0.001)) == pytest.approx(0.8 * 0.004)
    assert markers.default_sphere_diameter(np.zeros((1, 3)), np.array([0.003])) == pytest.approx(0.006)
    assert markers.default_sphere_diameter(np.zeros((2, 3)), np.zeros(2)) == 0.01


def test_marker_argument_errors():
    reading = sample_taxel_reading("ContactDepthProbe", rows=1, cols=2)
    with pytest.raises(ValueError, match=r"max_value must be > 0; got 0"):
        markers.taxel_markers(reading, max_value=0, sphere_diameter=0.01)
    with pytest.raises(ValueError, match=r"channel 'force' is not in the reading; allowed: \['depth'\]"):
        markers.taxel_markers(reading, max_value=1.0, sphere_diameter=0.01, channel="force")
    with pytest.raises(ValueError, match="temperature_range"):
        markers.thermal_markers(sample_thermal_reading(), temperature_range=(10.0, 10.0))


def test_force_arrows_can_be_left_out():
    reading = sample_taxel_reading("KinematicTaxel", rows=2, cols=3)
    result = markers.taxel_markers(reading, max_value=5.0, sphere_diameter=0.01, force_arrows=False)
    assert [m.type for m in result] == [Marker.SPHERE_LIST]
