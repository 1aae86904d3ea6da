"""``tactile-sim demo`` end to end (5 s at 10 Hz): the bag read back with rosbags alone has every topic with its
stored definition, duration × rate messages stamped on the ticks, contact exactly where the closed-form geometry of
the trajectory puts the pads on the can, link transforms that place the fingertips where the URDF says; the
summary names every sensor and the pictures are written."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers_offline import DEMO_DURATION, DEMO_RATE, DEMO_SENSORS, NODE, bag_types, demo_bag, demo_run, force_rows, \
    read_bag, run_cli
from helpers_ros import CAN_RADIUS, pad_contact_truth
from tactile_sim.demo_trajectory import gripper_trajectory
from tactile_sim.io.stamps import time_msg_to_ns

N_TICKS = round(DEMO_DURATION * DEMO_RATE)
PERIOD_NS = round(1e9 / DEMO_RATE)
PROBE_RADIUS = 0.0005
TAXEL_TOPICS = ("pad_left", "pad_right", "touch_right", "depth_left", "gel_right", "prox_left", "range_right")


@pytest.fixture(scope="module")
def bag():
    status, _, err, _ = demo_run()
    assert status == 0, err
    return read_bag(demo_bag())


def test_the_demo_succeeds_and_prints_a_summary_of_every_sensor():
    status, out, err, folder = demo_run()
    assert status == 0, err
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("sensor "))
    assert lines[header].split() == ["sensor", "type", "msgs", "peak", "touching", "eval/s"]
    rows = {line.split()[0]: line.split() for line in lines[header + 2:header + 2 + len(DEMO_SENSORS)]}
    assert set(rows) == set(DEMO_SENSORS) - {"palm_contact"} | {"palm_contact/palm"}
    assert all(row[2] == str(N_TICKS) for row in rows.values())
    assert f"{N_TICKS} steps at {DEMO_RATE:g} Hz = {DEMO_DURATION:.2f} s simulated" in out
    assert str(folder / "gripper_demo" / "gripper_demo.mcap") in out


def test_every_topic_is_in_the_bag_with_its_stored_definition():
    types = bag_types(demo_bag())
    expected = {
        "/joint_states": "sensor_msgs/msg/JointState", "/tf": "tf2_msgs/msg/TFMessage",
        "/tf_static": "tf2_msgs/msg/TFMessage", "/robot_description": "std_msgs/msg/String",
        f"{NODE}/markers": "visualization_msgs/msg/MarkerArray",
        f"{NODE}/thermal_left": "tactile_sim_msgs/msg/ThermalGrid",
        f"{NODE}/joint_torque": "sensor_msgs/msg/JointState",
        f"{NODE}/palm_contact": "tactile_sim_msgs/msg/LinkContact",
        f"{NODE}/palm_contact/palm/wrench": "geometry_msgs/msg/WrenchStamped",
        **{f"{NODE}/{name}": "tactile_sim_msgs/msg/TaxelArray" for name in TAXEL_TOPICS},
    }
    assert {topic: kind for topic, (kind, _) in types.items()} == expected
    assert all(definition.strip() for _, definition in types.values())  # readers need no installed types


def test_message_counts_are_duration_times_rate(bag):
    counts = {topic: len(items) for topic, items in bag.items()}
    per_tick = [f"{NODE}/{name}" for name in TAXEL_TOPICS + ("thermal_left", "joint_torque", "palm_contact",
                                                              "palm_contact/palm/wrench")]
    assert {t: counts[t] for t in per_tick + ["/joint_states", "/tf"]} == {t: N_TICKS for t in per_tick +
                                                                           ["/joint_states", "/tf"]}
    assert counts["/tf_static"] == counts["/robot_description"] == 1
    assert counts[f"{NODE}/markers"] == N_TICKS  # 10 Hz markers: every tick at a 10 Hz update rate


def test_sensor_messages_are_stamped_on_the_ticks(bag):
    for name in TAXEL_TOPICS + ("thermal_left", "joint_torque"):
        stamps = [time_msg_to_ns(msg.header.stamp) for _, _, msg in bag[f"{NODE}/{name}"]]
        assert stamps == [k * PERIOD_NS for k in range(N_TICKS)], name
        assert [t for t, _, _ in bag[f"{NODE}/{name}"]] == stamps  # receive time = stamp


def test_contact_appears_when_the_fingers_close_and_disappears_when_they_open(bag):
    touching, clear = [], []
    for pad in ("pad_left", "pad_right"):
        for _, _, msg in bag[f"{NODE}/{pad}"]:
            t = time_msg_to_ns(msg.header.stamp) / 1e9
            sd, _ = pad_contact_truth(msg, gripper_trajectory(t).position)
            overlap = PROBE_RADIUS - sd.min()
            force = np.linalg.norm(force_rows(msg), axis=1).max()
            if overlap > 3e-4:  # ≥ 0.3 mm deep: at least 500 N/m × 0.3 mm less noise
                assert force > 0.1, (pad, t)
                touching.append(t)
            elif overlap < -1e-4:  # every sensing sphere 0.1 mm clear of the can: noise only (σ 5 mN)
                assert force < 0.05, (pad, t)
                clear.append(t)
    assert len(touching) > 20 and len(clear) > 20
    phase = [gripper_trajectory(t).phase for t in (min(touching), max(touching), min(clear), max(clear))]
    assert phase == ["squeezing", "opening", "open", "opening"]
    assert max(touching) < max(clear)


def test_contact_flags_follow_the_overlap_threshold(bag):
    for _, _, msg in bag[f"{NODE}/touch_right"]:
        t = time_msg_to_ns(msg.header.stamp) / 1e9
        sd, _ = pad_contact_truth(msg, gripper_trajectory(t).position)
        overlap = PROBE_RADIUS - sd
        flags = np.asarray(msg.contact, dtype=bool)
        sure = np.abs(overlap - 1e-4) > 2e-5  # contact_threshold 0.1 mm, no noise on this sensor
        np.testing.assert_array_equal(flags[sure], (overlap > 1e-4)[sure], err_msg=f"t = {t}")


def test_link_transforms_place_the_fingertips_where_the_urdf_says(bag):
    static = {tr.child_frame_id: tr for _, _, msg in bag["/tf_static"] for tr in msg.transforms}
    assert static["base_link"].header.frame_id == "world"
    for _, _, msg in bag["/tf"][::17]:
        t = time_msg_to_ns(msg.transforms[0].header.stamp) / 1e9
        edges = {**static, **{tr.child_frame_id: tr for tr in msg.transforms}}
        frame, position = "fingertip_left", np.zeros(3)
        while frame != "world":  # prismatic joints only: every rotation is the identity
            tr = edges[frame]
            q = tr.transform.rotation
            assert (q.x, q.y, q.z, q.w) == pytest.approx((0.0, 0.0, 0.0, 1.0))
            position += [tr.transform.translation.x, tr.transform.translation.y, tr.transform.translation.z]
            frame = tr.header.frame_id
        slide, q_left, _ = gripper_trajectory(t).position
        np.testing.assert_allclose(position, [slide, q_left, 0.05], atol=1e-12)


def test_the_palm_feels_the_standing_can_and_the_thermal_finger_warms(bag):
    forces = [msg.wrench.force.z for _, _, msg in bag[f"{NODE}/palm_contact"]]
    # 0.5 mm deep on the palm, 1e7 Pa/m over the can's base: the can presses the palm down by about 6.3 N
    assert np.median(forces) == pytest.approx(-1e7 * 5e-4 * np.pi * CAN_RADIUS**2, rel=0.15)
    temperatures = [np.max(msg.temperatures) for _, _, msg in bag[f"{NODE}/thermal_left"]]
    assert temperatures[0] < 25.5 and max(temperatures) > 35.0  # the 50 °C can warms the fingertip on contact


def test_the_pictures_are_written():
    folder = demo_run()[3]
    names = {p.name for p in folder.glob("*.png")}
    assert names == {"overview.png", "thermal_left_temperature.png", "joint_torque_torque.png",
                     *(f"{name}_heatmap.png" for name in TAXEL_TOPICS)}
    for name in names:
        data = (folder / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and 10_000 < len(data) < 400_000, name


@pytest.mark.parametrize("args, message", [
    (("--duration", "-1"), "argument --duration: out of range; got '-1'; allowed: a finite number > 0"),
    (("--rate", "0.5"), "argument --rate: out of range; got '0.5'; allowed: a finite number >= 1 and <= 10000 (Hz)"),
])
def test_bad_options_exit_2_with_the_reason(tmp_path, args, message):
    status, _, err = run_cli("demo", "-o", str(tmp_path), "--no-progress", *args)
    assert status == 2 and message in err


def test_an_output_the_file_system_refuses_exits_2_before_the_build(tmp_path, monkeypatch):
    from tactile_sim.offline import demo

    monkeypatch.setattr(demo, "NodeCore", lambda *args, **kwargs: pytest.fail("built before the output was checked"))
    too_long = tmp_path / ("y" * 300)  # one name past the 255 bytes of a file system's names
    status, _, err = run_cli("demo", "-o", str(too_long), "--no-progress", "--no-pictures")
    assert status == 2 and err.startswith(f"tactile-sim demo: error: {too_long}: File name too long"), err
    (tmp_path / "afile").write_text("")
    status, _, err = run_cli("demo", "-o", str(tmp_path / "afile" / "out"), "--no-progress", "--no-pictures")
    assert status == 2 and f"{str(tmp_path / 'afile')!r} is a file, not a folder" in err, err
    (tmp_path / "loop").symlink_to(tmp_path / "loop")  # mkdir would say only "File exists"
    status, _, err = run_cli("demo", "-o", str(tmp_path / "loop"), "--no-progress", "--no-pictures")
    assert status == 2 and f"{str(tmp_path / 'loop')!r} is a symbolic link that leads nowhere" in err, err


def test_an_unavailable_device_is_refused(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    status, _, err = run_cli("demo", "-o", str(tmp_path), "--device", "cuda")
    assert status == 2 and "CUDA is not available" in err


def test_module_and_console_entry_points(tmp_path):
    # run outside the repository: from its root, `python -m` would see the ROS package folder tactile_sim/ first
    done = subprocess.run([sys.executable, "-m", "tactile_sim", "demo", "--help"], capture_output=True, text=True,
                          check=True, cwd=tmp_path)
    assert "--duration" in done.stdout and "gripper_demo" in done.stdout
    script = Path(sys.executable).parent / "tactile-sim"
    if script.is_file():
        done = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=True, cwd=tmp_path)
        assert all(command in done.stdout for command in ("demo", "replay", "plot"))
