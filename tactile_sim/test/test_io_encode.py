"""Readings → messages → CDR → messages → readings: exact round trips, field layout and input errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers_io import (
    assert_readings_equal,
    sample_link_contact_reading,
    sample_taxel_reading,
    sample_thermal_reading,
)

from tactile_sim.io import encode
from tactile_sim.io.msg_types import deserialize_cdr, serialize_cdr
from tactile_sim.io.readings import (
    DiagnosticStatusReading,
    JointTorqueReading,
    TaxelReading,
    WrenchReading,
    taxel_sensor_types,
)

SENSOR_TYPES = ("ContactProbe", "ContactDepthProbe", "KinematicTaxel", "ElastomerTaxel", "ProximityTaxel",
                "SurfaceDistanceProbe")


def through_cdr(msg, typename):
    return deserialize_cdr(serialize_cdr(msg, typename), typename)


def test_sensor_types_come_from_the_msg_constants():
    assert sorted(taxel_sensor_types()) == sorted(SENSOR_TYPES)


@pytest.mark.parametrize("sensor_type", SENSOR_TYPES)
@pytest.mark.parametrize(("rows", "cols"), [(2, 3), (0, 0)])
@pytest.mark.parametrize("valid", [True, False])
def test_taxel_reading_round_trips_exactly(sensor_type, rows, cols, valid):
    reading = sample_taxel_reading(sensor_type, rows=rows or 1, cols=cols or 5, valid=valid, ground_truth=not valid)
    if not rows:
        reading = TaxelReading(**{**reading.__dict__, "rows": 0, "cols": 0})
    msg = encode.encode_taxel_array(reading)
    assert_readings_equal(encode.decode_taxel_array(through_cdr(msg, encode.TAXEL_ARRAY)), reading)


def test_taxel_message_fields_are_flat_row_major_with_empty_absent_channels():
    reading = sample_taxel_reading("KinematicTaxel", rows=2, cols=3)
    msg = through_cdr(encode.encode_taxel_array(reading), encode.TAXEL_ARRAY)
    force = reading.channels["force"]
    for k in range(6):
        for j in range(3):
            assert msg.force[3 * k + j] == force[k, j]
            assert msg.positions[3 * k + j] == reading.positions[k, j]
    assert msg.force.dtype == np.float32 and msg.radii.dtype == np.float32
    for name in ("contact", "depth", "displacement", "distance", "nearest_points"):
        assert len(getattr(msg, name)) == 0, name
    assert msg.contact.dtype == np.bool_
    assert (msg.header.frame_id, msg.header.stamp.sec, msg.header.stamp.nanosec) == ("finger_link", 12, 345_000_000)
    assert (msg.rows, msg.cols, msg.sensor_type, msg.world_frame_id) == (2, 3, "KinematicTaxel", "")


def test_grid_shaped_inputs_flatten_row_major_and_torch_inputs_are_accepted():
    rows, cols = 3, 4
    grid = np.arange(rows * cols * 3, dtype=np.float64).reshape(rows, cols, 3)
    contact = np.arange(rows * cols).reshape(rows, cols) % 3 == 0
    reading = TaxelReading(
        "pad", "ContactProbe", "L", 0.5, rows, cols,
        positions=torch.tensor(grid), normals=grid, radii=torch.full((rows, cols), 0.01),
        channels={"contact": torch.tensor(contact)},
    )
    for r in range(rows):
        for c in range(cols):
            k = r * cols + c
            assert np.array_equal(reading.positions[k], grid[r, c].astype(np.float32))
            assert reading.channels["contact"][k] == contact[r, c]
    assert reading.positions.dtype == np.float32 and reading.channels["contact"].dtype == np.bool_
    msg = through_cdr(encode.encode_taxel_array(reading), encode.TAXEL_ARRAY)
    assert msg.contact.tolist() == contact.reshape(-1).tolist()


def test_float64_inputs_are_rounded_to_the_float32_of_the_message():
    reading = sample_taxel_reading("ContactDepthProbe", rows=1, cols=3)
    depth64 = np.array([0.1, 1.0 / 3.0, 2e-7])
    rounded = TaxelReading(**{**reading.__dict__, "channels": {"depth": depth64}})
    back = encode.decode_taxel_array(through_cdr(encode.encode_taxel_array(rounded), encode.TAXEL_ARRAY))
    assert back.channels["depth"].tolist() == depth64.astype(np.float32).tolist()


def test_thermal_reading_round_trips_and_indexes_ix_iy_iz():
    reading = sample_thermal_reading((3, 2, 4))
    msg = through_cdr(encode.encode_thermal_grid(reading), encode.THERMAL_GRID)
    assert (msg.nx, msg.ny, msg.nz) == (3, 2, 4)
    for ix in range(3):
        for iy in range(2):
            for iz in range(4):
                assert msg.temperatures[ix * 2 * 4 + iy * 4 + iz] == reading.temperatures[ix, iy, iz]
    assert (msg.origin.orientation.w, msg.cell_size.z) == (1.0, 0.005)
    assert msg.link_names == ["cup", "table"]
    assert_readings_equal(encode.decode_thermal_grid(msg), reading)


def test_thermal_reading_without_lumped_bodies_round_trips():
    reading = sample_thermal_reading((1, 1, 1), link_names=(), link_temperatures=[], valid=False)
    msg = through_cdr(encode.encode_thermal_grid(reading), encode.THERMAL_GRID)
    assert len(msg.link_names) == 0 and len(msg.link_temperatures) == 0 and not msg.valid
    assert_readings_equal(encode.decode_thermal_grid(msg), reading)


def test_joint_torque_round_trips_through_joint_state_effort():
    reading = JointTorqueReading(stamp=-1.7, names=["j1", "j2", "j3"], effort=torch.tensor([1.5, -2.25, 1e-300]))
    msg = through_cdr(encode.encode_joint_torque(reading), encode.JOINT_STATE)
    assert msg.name == ["j1", "j2", "j3"] and len(msg.position) == 0 and len(msg.velocity) == 0
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (-2, 300_000_000)
    assert_readings_equal(encode.decode_joint_torque(msg), reading)


def test_wrench_round_trips_through_wrench_stamped():
    reading = WrenchReading("tool0", 2.0, [1.0, -2.0, 3.5], np.array([0.1, 0.2, -0.3]))
    msg = through_cdr(encode.encode_wrench_stamped(reading), encode.WRENCH_STAMPED)
    assert (msg.wrench.force.y, msg.wrench.torque.z) == (-2.0, -0.3)
    assert_readings_equal(encode.decode_wrench_stamped(msg), reading)


@pytest.mark.parametrize("n_filters", [0, 1, 3])
@pytest.mark.parametrize("tracked", [True, False])
def test_link_contact_round_trips(n_filters, tracked):
    extra = {} if tracked else {"air_times": None, "contact_positions": None}
    reading = sample_link_contact_reading(n_filters, **extra)
    msg = through_cdr(encode.encode_link_contact(reading), encode.LINK_CONTACT)
    assert len(msg.force_matrix) == n_filters and msg.air_time_tracked == tracked
    assert len(msg.contact_positions) == (n_filters if tracked else 0)
    if tracked and n_filters:
        assert np.isnan(msg.contact_positions[-1].x)
    assert_readings_equal(encode.decode_link_contact(msg), reading)


def test_link_contact_wrench_is_the_net_force_and_torque():
    reading = sample_link_contact_reading(2)
    wrench = encode.decode_wrench_stamped(encode.encode_wrench_stamped(reading.wrench()))
    assert np.array_equal(wrench.force, reading.force) and np.array_equal(wrench.torque, reading.torque)
    assert wrench.frame_id == "left_foot"


def test_diagnostics_round_trip():
    statuses = [
        DiagnosticStatusReading("tactile_sim: pad", 0, "ok", "tactile_sim", {"rate_hz": "100.0"}),
        DiagnosticStatusReading("tactile_sim: inputs", 1, "3 joint states dropped", "", {}),
    ]
    msg = through_cdr(encode.encode_diagnostics(4.5, statuses), encode.DIAGNOSTIC_ARRAY)
    assert [s.level for s in msg.status] == [0, 1]
    stamp, back = encode.decode_diagnostics(msg)
    assert stamp == 4.5
    for a, b in zip(back, statuses, strict=True):
        assert_readings_equal(a, b)


def test_diagnostic_level_must_be_a_ros_level():
    with pytest.raises(ValueError, match=r"level: got 7; allowed: 0 \(OK\), 1 \(WARN\), 2 \(ERROR\), 3 \(STALE\)"):
        DiagnosticStatusReading("x", 7, "")


def test_taxel_reading_errors_name_the_field_value_and_allowed():
    good = sample_taxel_reading("KinematicTaxel", rows=2, cols=3).__dict__
    with pytest.raises(ValueError, match=r"sensor_type: unknown; got 'Kinematic'; allowed: .*'KinematicTaxel'"):
        TaxelReading(**{**good, "sensor_type": "Kinematic"})
    with pytest.raises(ValueError, match=r"channels: unknown names \['pressure'\]; allowed: \['contact'"):
        TaxelReading(**{**good, "channels": {"pressure": np.zeros(6)}})
    with pytest.raises(ValueError, match=r"channels\['force'\]: shape \(6, 2\); expected \(6, 3\)"):
        TaxelReading(**{**good, "channels": {"force": np.zeros((6, 2))}})
    with pytest.raises(ValueError, match=r"positions: shape \(3, 2, 3\); expected \(6, 3\)"):
        TaxelReading(**{**good, "positions": np.zeros((3, 2, 3))})
    with pytest.raises(ValueError, match=r"rows/cols: got \(2, 0\)"):
        TaxelReading(**{**good, "cols": 0})
    with pytest.raises(ValueError, match=r"world_frame_id: got 'world' with nearest_points absent"):
        TaxelReading(**{**good, "world_frame_id": "world"})
    distance = sample_taxel_reading("SurfaceDistanceProbe").__dict__
    with pytest.raises(ValueError, match=r"world_frame_id: got '' with nearest_points present"):
        TaxelReading(**{**distance, "world_frame_id": ""})
    with pytest.raises(ValueError, match="no taxels"):
        TaxelReading(**{**good, "rows": 0, "cols": 0, "positions": np.zeros((0, 3)), "normals": np.zeros((0, 3)),
                        "radii": np.zeros(0), "channels": {}})


def test_decoding_a_message_with_inconsistent_lengths_names_the_field():
    msg = encode.encode_taxel_array(sample_taxel_reading("KinematicTaxel", rows=2, cols=3))
    msg.torque = msg.torque[:-1]
    with pytest.raises(ValueError, match=r"TaxelArray\(sensor_name='kinematictaxel_pad'\)\.torque: 17 values; "
                                         r"expected 18"):
        encode.decode_taxel_array(msg)
    grid = encode.encode_thermal_grid(sample_thermal_reading((2, 2, 2)))
    grid.nz = 3
    with pytest.raises(ValueError, match=r"temperatures: 8 values; expected nx\*ny\*nz = 12"):
        encode.decode_thermal_grid(grid)


def test_link_contact_errors():
    with pytest.raises(ValueError, match=r"force_matrix: shape \(1, 3\); expected \(2, 3\)"):
        sample_link_contact_reading(2, force_matrix=np.zeros((1, 3)))
    with pytest.raises(ValueError, match="contact_positions: given without filters"):
        sample_link_contact_reading(0, contact_positions=np.zeros((0, 3)))
