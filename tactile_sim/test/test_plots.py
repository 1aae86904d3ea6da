"""Digest, summary and pictures: per-sensor reductions equal independent NumPy sums over hand-made messages, the
drawn heat map and temperature slice hold exactly the values of the kept message on labelled axes in mm, joint
units follow the URDF, and ``tactile-sim plot`` draws the demo's bag."""

import numpy as np
import pytest

from helpers_offline import NODE, demo_bag, demo_run, run_cli, write_bag
from tactile_sim.demo_trajectory import DEMO_URDF
from tactile_sim.io.encode import encode_joint_torque, encode_taxel_array, encode_thermal_grid
from tactile_sim.io.msg_types import new_message
from tactile_sim.io.readings import JointTorqueReading, TaxelReading, ThermalReading
from tactile_sim.cli.plot import default_picture_folder
from tactile_sim.offline.digest import IN_RANGE, TOUCH_LEVEL, RunDigest, joint_units
from tactile_sim.offline.plots import (MAX_TORQUE_LINES, plane_axes, slice_axis, taxel_figure, thermal_figure,
                                      torque_figure, write_pictures)
from tactile_sim.offline.run_loop import RunStats
from tactile_sim.offline.summary import format_run, format_table, summary_rows

ROWS, COLS = 2, 3
RNG = np.random.default_rng(3)
GRID = np.array([[x, 0.0, z] for z in (0.004, 0.009) for x in (-0.005, 0.0, 0.005)])
"""2 × 3 taxels on the plane y = 0 of the link: columns along x, rows along z (m)."""


def taxel_msg(t, force, *, sensor_type="KinematicTaxel", channel="force", radii=0.001, truth=False, name="pad"):
    values = {channel: force} if channel != "force" else {"force": force, "torque": np.zeros((ROWS * COLS, 3))}
    reading = TaxelReading(name, sensor_type, "pad_link", t, ROWS, COLS, GRID, np.tile([0.0, -1.0, 0.0], (6, 1)),
                           np.full(ROWS * COLS, radii), values, ground_truth=truth)
    return encode_taxel_array(reading)


@pytest.fixture
def force_run():
    """Three KinematicTaxel messages at 0.1, 0.2, 0.3 s; the middle one carries the largest total |F|."""
    forces = [RNG.normal(0, 0.01, (6, 3)), RNG.normal(0, 0.3, (6, 3)), RNG.normal(0, 0.1, (6, 3))]
    forces[1][4] = [0.0, 2.0, 0.0]
    digest = RunDigest()
    for k, f in enumerate(forces):
        digest.add(f"{NODE}/pad", 0, taxel_msg(0.1 * (k + 1), f))
        digest.add(f"{NODE}/pad/ground_truth", 0, taxel_msg(0.1 * (k + 1), 10 * f, truth=True))
    return digest, [f.astype(np.float32).astype(np.float64) for f in forces]


def test_taxel_series_reduce_each_message(force_run):
    digest, forces = force_run
    series = digest.series["pad"]
    magnitudes = [np.linalg.norm(f, axis=1) for f in forces]
    assert series.times == pytest.approx([0.1, 0.2, 0.3])
    assert series.load == pytest.approx([m.sum() for m in magnitudes])
    assert series.peak == pytest.approx([m.max() for m in magnitudes])
    assert series.touch == [bool((m > TOUCH_LEVEL["force"]).any()) for m in magnitudes]
    assert series.peak_time == pytest.approx(0.2) and series.peak_index == 1
    truth = RunDigest(ground_truth=True)
    truth.add(f"{NODE}/pad/ground_truth", 0, taxel_msg(0.1, forces[0], truth=True))
    truth.add(f"{NODE}/pad", 0, taxel_msg(0.2, forces[1]))
    assert truth.series["pad"].times == pytest.approx([0.1])  # only the ground-truth branch


def test_distance_and_contact_series():
    digest = RunDigest()
    cap = 0.01
    distances = [np.full(6, cap), np.array([cap, 0.002, cap, 0.0095, cap, 0.004])]
    for k, d in enumerate(distances):
        digest.add("t", 0, taxel_msg(k, d, sensor_type="SurfaceDistanceProbe", channel="distance", radii=cap,
                                     name="range"))
    flags = [np.zeros(6, bool), np.array([1, 1, 0, 0, 1, 0], bool)]
    for k, f in enumerate(flags):
        digest.add("t", 0, taxel_msg(k, f, sensor_type="ContactProbe", channel="contact", name="touch"))
    rng = digest.series["range"]
    assert rng.load == pytest.approx([np.clip(cap - d, 0, None).sum() for d in distances])
    assert rng.peak == pytest.approx([d.min() for d in distances])
    assert rng.touch == [bool((d < IN_RANGE * cap).any()) for d in distances] == [False, True]
    touch = digest.series["touch"]
    assert touch.load == [0.0, 3.0] and touch.touch == [False, True] and touch.peak_index == 1


def test_heat_map_draws_the_kept_message_on_labelled_axes(force_run):
    digest, forces = force_run
    fig = taxel_figure(digest.series["pad"], t0=0.1)
    heat, right = fig.axes[0], fig.axes[1]
    mesh = heat.collections[0]
    np.testing.assert_allclose(np.asarray(mesh.get_array()).reshape(ROWS, COLS),
                               np.linalg.norm(forces[1], axis=1).reshape(ROWS, COLS), rtol=1e-6)
    assert mesh.get_clim() == pytest.approx((0.0, np.linalg.norm(forces[1], axis=1).max()))
    assert heat.get_xlabel() == "x in pad_link (mm)" and heat.get_ylabel() == "z in pad_link (mm)"
    assert "t = 0.10 s" in heat.get_title() and "pad (KinematicTaxel)" in heat.get_title()
    assert fig.axes[2].get_ylabel() == "|F| per taxel (N)"  # the colour bar
    np.testing.assert_allclose(heat.get_xlim(), [-7.5, 7.5])  # cells of 5 mm around x = −5, 0, 5 mm
    assert right.get_xlabel() == "time (s)" and right.get_ylabel() == "largest |F| per taxel (N)"


def test_distance_heat_map_uses_the_sensor_range():
    digest = RunDigest()
    digest.add("t", 0, taxel_msg(0.0, np.full(6, 0.004), sensor_type="SurfaceDistanceProbe", channel="distance",
                                 radii=0.01, name="range"))
    fig = taxel_figure(digest.series["range"], t0=0.0)
    assert fig.axes[0].collections[0].get_clim() == pytest.approx((0.0, 10.0))  # mm
    assert "closest approach" in fig.axes[0].get_title()


@pytest.mark.parametrize("plane, names", [((0, 1), ("x", "y")), ((0, 2), ("x", "z")), ((1, 2), ("y", "z")),
                                          ((2, 1), ("y", "z"))])
def test_layout_planes_perpendicular_to_a_link_axis_use_its_names(plane, names):
    points = np.zeros((12, 3))
    points[:, plane[0]] = np.repeat(np.arange(4), 3) * 0.004
    points[:, plane[1]] = np.tile(np.arange(3), 4) * 0.003
    e1, e2, n1, n2 = plane_axes(points + 0.1)
    assert (n1, n2) == names
    assert abs(np.cross(e1, e2)[3 - sum(plane)]) == pytest.approx(1.0)


def test_a_tilted_layout_uses_its_principal_axes():
    angle = np.radians(30)
    rot = np.array([[1, 0, 0], [0, np.cos(angle), -np.sin(angle)], [0, np.sin(angle), np.cos(angle)]])
    flat = np.array([[x, y, 0.0] for x in np.linspace(0, 0.02, 5) for y in np.linspace(0, 0.01, 3)])
    e1, e2, n1, n2 = plane_axes(flat @ rot.T)
    assert (n1, n2) == ("in-plane axis 1", "in-plane axis 2")
    np.testing.assert_allclose(abs(np.cross(e1, e2) @ (rot @ [0, 0, 1])), 1.0, atol=1e-9)


def thermal_msg(t, temps):
    reading = ThermalReading("warm", "tip", t, np.array([-0.01, 0.0, 0.0]), np.array([0.01, 0.005, 0.01]), temps)
    return encode_thermal_grid(reading)


def test_temperature_slice_cuts_across_the_flattest_axis_through_the_hottest_cell():
    y, z = np.meshgrid(np.arange(3.0), np.arange(4.0), indexing="ij")
    field = np.broadcast_to(30.0 + 2 * y + 0.5 * z, (2, 3, 4)).copy()  # varies along y and z only
    field[1, 2, 3] += 0.01  # the hottest cell: x index 1
    digest = RunDigest()
    for k, scale in enumerate((0.0, 1.0, 0.5)):
        digest.add("t", 0, thermal_msg(0.1 * k, 25.0 + scale * (field - 25.0)))
    series = digest.series["warm"]
    assert series.t_max == pytest.approx([25.0, field.max(), 25.0 + 0.5 * (field.max() - 25.0)], rel=1e-6)
    assert series.peak_time == pytest.approx(0.1) and slice_axis(field) == 0
    fig = thermal_figure(series, t0=0.0)
    mesh = fig.axes[0].collections[0]
    np.testing.assert_allclose(np.asarray(mesh.get_array()).reshape(4, 3), field[1].T, rtol=1e-6)
    assert fig.axes[0].get_xlabel() == "y in tip (mm)" and fig.axes[0].get_ylabel() == "z in tip (mm)"
    assert "slice x = 5.0 mm" in fig.axes[0].get_title()  # cell centre of x index 1: −10 + 10 × 1.5 mm
    assert fig.axes[1].get_ylabel() == "temperature (°C)"


def test_joint_units_follow_the_urdf():
    assert joint_units(DEMO_URDF.read_text(), ["slide", "nope"]) == ["N", "N·m or N"]
    revolute = DEMO_URDF.read_text().replace('type="prismatic"', 'type="revolute"')
    assert joint_units(revolute, ["slide"]) == ["N·m"]
    assert joint_units(None, ["slide"]) == joint_units("<robot", ["slide"]) == ["N·m or N"]


def test_a_torque_plot_of_many_joints_draws_those_of_largest_effort():
    n = 3 * MAX_TORQUE_LINES
    names = [f"j{k}" for k in range(n)]
    peaks = RNG.permutation(n).astype(float)  # joint k peaks at |effort| = peaks[k]
    peaks[5] = np.nan  # NaN counts as no effort
    digest = RunDigest()
    for t, sign in ((0.1, 0.5), (0.2, -1.0), (0.3, 0.25)):
        digest.add(f"{NODE}/jt", 0, encode_joint_torque(JointTorqueReading(t, names, sign * peaks)))
    fig = torque_figure(digest.series["jt"], 0.0, None)
    drawn = [line.get_label().split(" ")[0] for line in fig.axes[0].get_lines()]
    largest = sorted(np.argsort(-np.nan_to_num(peaks))[:MAX_TORQUE_LINES])
    assert drawn == [names[k] for k in largest]
    assert f"{MAX_TORQUE_LINES} of {n} joints" in fig.axes[0].get_title()
    few = RunDigest()
    few.add(f"{NODE}/jt", 0, encode_joint_torque(JointTorqueReading(0.1, names[:3], peaks[:3])))
    fig = torque_figure(few.series["jt"], 0.0, None)
    assert len(fig.axes[0].get_lines()) == 3 and "of" not in fig.axes[0].get_title().split(":")[1]


def test_summary_table_rows_and_run_line(force_run):
    digest, forces = force_run
    digest.add(f"{NODE}/torque", 0, encode_joint_torque(JointTorqueReading(0.1, ["a", "b"], [0.5, -3.0])))
    rows = {r[0]: r for r in summary_rows(digest, wall_s=2.0)}
    peak = max(np.linalg.norm(f, axis=1).max() for f in forces)
    touching = np.mean([(np.linalg.norm(f, axis=1) > 0.05).any() for f in forces])
    assert rows["pad"] == ("pad", "KinematicTaxel", "3", f"max |F| {peak:.3g} N", f"{100 * touching:.0f} %", "1.5")
    assert rows["torque"] == ("torque", "JointTorque", "1", "max |τ| 3 N·m or N (b)", "-", "0.5")
    table = format_table(digest).splitlines()
    assert table[0].split() == ["sensor", "type", "msgs", "peak", "touching", "eval/s"]
    assert len({len(line) for line in table[:4]}) == 1  # aligned columns
    stats = RunStats(ticks=50, wall_s=2.5, restarts=1, longest_gap_ns=400_000_000)
    text = format_run(stats, 100.0, {"joint_states.non_finite": 2})
    assert "50 steps at 100 Hz = 0.50 s simulated in 2.5 s wall (20.0 steps/s, 0.20x real time)" in text
    assert "paused for up to 0.400 s" in text and "backwards 1 time" in text and "non_finite 2" in text


def test_write_pictures_only_for_the_named_sensors(tmp_path, force_run):
    digest, _ = force_run
    assert [p.name for p in write_pictures(digest, tmp_path, ["pad"])] == ["pad_heatmap.png"]
    with pytest.raises(ValueError, match=r"no messages of sensors \['nope'\]; sensors with messages: \['pad'\]"):
        write_pictures(digest, tmp_path, ["nope"])


def test_default_picture_folder(tmp_path):
    bag = write_bag(tmp_path / "bags" / "run", [("/x", 0, new_message("std_msgs/msg/String", data=""))])
    data_file = next(bag.glob("*.mcap"))
    assert default_picture_folder(bag) == default_picture_folder(data_file) == tmp_path / "bags"
    lone = tmp_path / "lone.mcap"
    lone.write_bytes(data_file.read_bytes())
    assert default_picture_folder(lone) == tmp_path


def test_plot_command_draws_a_sensor_of_the_demo_bag(tmp_path):
    assert demo_run()[0] == 0
    status, out, err = run_cli("plot", str(demo_bag()), "-o", str(tmp_path), "--sensor", "pad_left", "--sensor",
                               "thermal_left")
    assert status == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pad_left_heatmap.png", "thermal_left_temperature.png"]
    assert "pad_left" in out and "range_right" in out  # the summary covers the whole bag
    status, _, err = run_cli("plot", str(demo_bag()), "-o", str(tmp_path / "new"), "--sensor", "nope")
    assert status == 2 and "no messages of sensors ['nope']" in err and not (tmp_path / "new").exists()
    (tmp_path / "afile").write_text("")
    status, _, err = run_cli("plot", str(demo_bag()), "-o", str(tmp_path / "afile" / "pictures"))
    assert status == 2 and f"(-o): {str(tmp_path / 'afile')!r} is a file, not a folder; allowed: a folder" in err, err


def test_plot_command_refuses_a_bag_without_sensor_messages(tmp_path):
    bag = write_bag(tmp_path / "inputs", [("/chatter", 0, new_message("std_msgs/msg/String", data="x"))])
    status, _, err = run_cli("plot", str(bag))
    assert status == 2 and "no sensor messages of this project (measured branch)" in err
    status, _, err = run_cli("plot", str(tmp_path / "missing"))
    assert status == 2 and "not found" in err


@pytest.mark.parametrize("forces, radii", [(np.zeros(7, np.float32), np.full(4, 0.01, np.float32)),  # 7 for 4 taxels
                                           (np.zeros(0, np.float32), np.zeros(0, np.float32))])   # no taxels
def test_plot_command_refuses_taxel_messages_whose_arrays_disagree(tmp_path, forces, radii):
    """A bag not written by this project (here: crafted) whose TaxelArray arrays do not fit together: an error
    naming the bag, not numpy's traceback from the reduction."""
    from tactile_sim.io.encode import TAXEL_ARRAY
    from tactile_sim.io.stamps import time_msg

    def taxels(k):
        head = new_message("std_msgs/msg/Header", stamp=time_msg(0.01 * k), frame_id="pad")
        return new_message(TAXEL_ARRAY, header=head, sensor_name="pad", sensor_type="KinematicTaxel", radii=radii,
                           ground_truth=False, force=forces)

    bag = write_bag(tmp_path / "crafted", [(f"/{NODE}/pad", k, taxels(k)) for k in range(3)])
    status, _, err = run_cli("plot", str(bag), "-o", str(tmp_path / "pictures"))
    assert status == 2 and f"bag {str(bag)!r}: a sensor message does not hold what its type says" in err, err
    assert "Traceback" not in err
