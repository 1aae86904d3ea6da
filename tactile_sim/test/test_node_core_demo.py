"""NodeCore on the demo gripper (no rclpy): contacts where the fingers touch the can and zeros elsewhere over a full
trajectory cycle, the closed-form force of a held squeeze, stamps and rates, every sensor's messages, markers and
diagnostics."""

import math
from xml.etree import ElementTree

import numpy as np
import pytest

from helpers_ros import (
    CAN_RADIUS,
    by_topic,
    demo_core,
    demo_dict,
    joint_state_msg,
    ns,
    pad_contact_truth,
)
from tactile_sim.constants import EPS_D
from tactile_sim.config import load_config
from tactile_sim.demo_trajectory import CYCLE, DEMO_CONFIG, DEMO_URDF, JOINT_NAMES, PHASES, SQUEEZE, gripper_trajectory
from tactile_sim.io.encode import decode_joint_torque, decode_link_contact, encode_taxel_array
from tactile_sim.io.markers import colour_ramp
from tactile_sim.io.msg_types import serialize_cdr
from tactile_sim.io.readings import TaxelReading
from tactile_sim.io.stamps import time_msg_to_ns
from tactile_sim.ros.inputs import decode_joint_state

PADS = ("pad_left", "pad_right")
PROBE_RADIUS = 0.0005
STIFFNESS = 500.0
NOISE = 0.005
MARGIN = 2e-5
"""m: taxels whose closed-form overlap lies within this of the contact threshold are not classified."""


@pytest.fixture(scope="module")
def cycle_run():
    """One trajectory cycle at 50 Hz with ground truth: per update (joint positions, outputs by topic)."""
    core = demo_core(update_rate=50.0, publish_ground_truth=True)
    runs = []
    for k in range(int(round(CYCLE * 50)) + 1):
        t = k / 50.0
        sample = gripper_trajectory(t)
        assert core.on_joint_state(decode_joint_state(joint_state_msg(sample.position, sample.velocity, stamp=t)))
        runs.append((t, sample, by_topic(core.update(ns(t)))))
    return core, runs


def test_pads_touch_exactly_where_the_fingers_meet_the_can_over_a_cycle(cycle_run):
    _, runs = cycle_run
    touched = {pad: 0 for pad in PADS}
    for t, sample, out in runs:
        for pad in PADS:
            gt = out[f"~/{pad}/ground_truth"][0]
            sd, _ = pad_contact_truth(gt, sample.position)
            overlap = PROBE_RADIUS - sd
            force = np.linalg.norm(np.asarray(gt.force).reshape(-1, 3), axis=1)
            inside, outside = overlap > EPS_D + MARGIN, overlap < EPS_D - MARGIN
            assert np.all(force[inside] > 0), (t, sample.phase, pad)
            assert np.all(force[outside] == 0), (t, sample.phase, pad)
            assert gt.valid and gt.ground_truth
            touched[pad] += int(inside.sum())
            measured = out[f"~/{pad}"][0]
            assert not measured.ground_truth
            # the measured branch adds white noise (sigma 5 mN) and quantisation only
            m_force = np.asarray(measured.force).reshape(-1, 3)
            assert np.all(np.abs(m_force[outside]) <= 6 * NOISE + 0.001)
    assert min(touched.values()) > 100  # both pads were in contact during the squeeze and slide


def test_contact_follows_the_phases(cycle_run):
    _, runs = cycle_run
    per_phase = {}
    for _, sample, out in runs:
        total = sum(np.abs(np.asarray(out[f"~/{p}/ground_truth"][0].force)).sum() for p in PADS)
        per_phase.setdefault(sample.phase, []).append(total)
    assert max(per_phase["open"]) == 0 and max(per_phase["returning"]) == 0
    assert min(per_phase["sliding"]) > 0
    assert max(per_phase["squeezing"]) > 0 and per_phase["squeezing"][0] < per_phase["squeezing"][-1]


def test_held_squeeze_force_and_torque_match_the_closed_form():
    core = demo_core(publish_ground_truth=True)
    q = np.array([0.0025, SQUEEZE, SQUEEZE + 0.0002])
    for k in range(3):  # held joints: zero velocity, so only the spring term remains
        core.on_joint_state(decode_joint_state(joint_state_msg(q, np.zeros(3), stamp=0.01 * k)))
        out = by_topic(core.update(ns(0.01 * k)))
    for pad in PADS:
        gt = out[f"~/{pad}/ground_truth"][0]
        sd, normal = pad_contact_truth(gt, q)
        overlap = np.clip(PROBE_RADIUS - sd, 0.0, None)
        expected = np.where((overlap > EPS_D)[:, None], STIFFNESS * overlap[:, None] * normal, 0.0)
        force = np.asarray(gt.force, dtype=np.float64).reshape(-1, 3)
        np.testing.assert_allclose(force, expected, atol=2e-4)  # float32 sd: ~1e-7 m × 500 N/m, and rounding
        positions = np.asarray(gt.positions, dtype=np.float64).reshape(-1, 3)
        np.testing.assert_allclose(np.asarray(gt.torque).reshape(-1, 3), np.cross(positions, force), atol=1e-6)
        assert (gt.rows, gt.cols) == (6, 5) and gt.header.frame_id == pad.replace("pad", "fingertip")


def test_the_layout_in_the_messages_is_the_configured_grid():
    core = demo_core()
    core.on_joint_state(decode_joint_state(joint_state_msg([0.0, 0.03, 0.03])))
    out = by_topic(core.update(0))
    for pad, normal_y in (("pad_left", -1.0), ("pad_right", 1.0)):
        msg = out[f"~/{pad}"][0]
        pos = np.asarray(msg.positions).reshape(6, 5, 3)
        assert np.allclose(sorted(set(np.round(pos[..., 0].ravel(), 6))), np.linspace(-0.009, 0.009, 5))
        assert np.allclose(pos[:, 0, 2], np.linspace(0.004, 0.026, 6))  # rows along z
        assert np.all(pos[..., 1] == 0)
        assert np.allclose(np.asarray(msg.normals).reshape(-1, 3), [0.0, normal_y, 0.0])
        assert np.allclose(msg.radii, PROBE_RADIUS)


def test_template_messages_equal_the_io_encoding_of_the_same_reading():
    core = demo_core(publish_ground_truth=True)
    core.on_joint_state(decode_joint_state(joint_state_msg([0.001, SQUEEZE, SQUEEZE])))
    out = by_topic(core.update(ns(0.5)))
    suite = core.suite
    for pad in PADS:
        layout = suite.layouts[pad]
        for gt, topic in ((False, f"~/{pad}"), (True, f"~/{pad}/ground_truth")):
            value = suite.read_ground_truth(pad) if gt else suite.read(pad)
            reading = TaxelReading(pad, "KinematicTaxel", pad.replace("pad", "fingertip"), 0.5, 6, 5,
                                   layout.positions, layout.normals, layout.radius,
                                   {"force": value.force, "torque": value.torque}, ground_truth=gt)
            assert serialize_cdr(out[topic][0]) == serialize_cdr(encode_taxel_array(reading))


def test_outputs_are_stamped_with_the_update_time_at_the_update_rate():
    core = demo_core(update_rate=200.0)
    core.on_joint_state(decode_joint_state(joint_state_msg([0.0, SQUEEZE, SQUEEZE])))
    period_ns = 5_000_000
    t0 = 1_700_000_000_123_456_789  # an epoch-scale time: stamps must stay exact to the nanosecond
    stamps = {}
    for k in range(4):
        for topic, msg in core.update(t0 + k * period_ns):
            stamps.setdefault(topic, []).append(time_msg_to_ns(msg.header.stamp))
    for topic, values in stamps.items():
        assert values == [t0 + k * period_ns for k in range(4)], topic
    assert core.suite.dt == pytest.approx(0.005)


def test_a_slower_sensor_publishes_on_its_own_evaluation_steps():
    data = demo_dict()
    for s in data["sensors"]:
        if s["name"] == "pad_right":
            s["update_period"] = 0.03  # three engine steps at 100 Hz
    core = demo_core(data)
    core.on_joint_state(decode_joint_state(joint_state_msg([0.0, SQUEEZE, SQUEEZE])))
    published = []
    for k in range(7):
        out = by_topic(core.update(ns(0.01 * k)))
        published.append(("~/pad_right" in out, "~/pad_left" in out))
    assert published == [(k % 3 == 0, True) for k in range(7)]


def test_every_sensor_type_of_the_demo_publishes_its_message():
    core = demo_core(publish_ground_truth=True)
    q = [0.0, SQUEEZE, SQUEEZE]
    for k in range(3):
        core.on_joint_state(decode_joint_state(joint_state_msg(q, [0.0, 0.0, 0.0], stamp=0.01 * k)))
        out = by_topic(core.update(ns(0.01 * k)))
    types = {topic: msgs[0].__msgtype__ for topic, msgs in out.items()}
    assert types["~/thermal_left"] == "tactile_sim_msgs/msg/ThermalGrid"
    assert types["~/thermal_left/ground_truth"] == "tactile_sim_msgs/msg/ThermalGrid"
    assert types["~/joint_torque"] == "sensor_msgs/msg/JointState"
    assert types["~/palm_contact"] == "tactile_sim_msgs/msg/LinkContact"
    assert types["~/palm_contact/palm/wrench"] == "geometry_msgs/msg/WrenchStamped"
    assert "~/palm_contact/ground_truth" not in out  # no imperfection pipeline: the topic is the ground truth

    thermal = out["~/thermal_left"][0]
    assert (thermal.nx, thermal.ny, thermal.nz) == (2, 2, 3) and thermal.header.frame_id == "fingertip_left"
    # the grid spans the fingertip's collision box (0.02 x 0.01 x 0.03 m centred at (0, 0.005, 0.015))
    np.testing.assert_allclose([thermal.origin.position.x, thermal.origin.position.y, thermal.origin.position.z],
                               [-0.01, 0.0, 0.0], atol=1e-9)
    np.testing.assert_allclose([thermal.cell_size.x, thermal.cell_size.y, thermal.cell_size.z],
                               [0.01, 0.005, 0.01], atol=1e-9)
    assert np.all(np.asarray(out["~/thermal_left/ground_truth"][0].temperatures) >= 25.0 - 1e-4)

    torque = decode_joint_torque(out["~/joint_torque"][0])
    assert list(torque.names) == list(JOINT_NAMES)
    # held fingers pressed by the can: each finger joint carries the pad's normal load, opposing its axis
    for pad, joint in (("pad_left", "finger_left_joint"), ("pad_right", "finger_right_joint")):
        load = np.asarray(out[f"~/{pad}/ground_truth"][0].force).reshape(-1, 3)[:, 1].sum()
        axis_load = load if pad == "pad_left" else -load
        effort = decode_joint_torque(out["~/joint_torque/ground_truth"][0]).effort[list(JOINT_NAMES).index(joint)]
        assert effort == pytest.approx(-axis_load, rel=1e-3, abs=1e-4)

    palm = decode_link_contact(out["~/palm_contact"][0])
    assert palm.body_name == "palm" and palm.frame_id == "palm" and palm.valid
    # the can stands 0.5 mm deep in the palm: normal force on the palm points down, p = k_c·d on the can's base
    area = math.pi * CAN_RADIUS**2
    assert palm.force[2] == pytest.approx(-1e7 * 5e-4 * area, rel=0.1)
    assert palm.filter_names == ("can",) and palm.air_times is not None
    wrench = out["~/palm_contact/palm/wrench"][0].wrench
    assert wrench.force.z == pytest.approx(palm.force[2])


def test_markers_colour_taxels_on_a_fixed_scale_and_draw_the_can():
    core = demo_core(marker_max_force=1.0)
    core.on_joint_state(decode_joint_state(joint_state_msg([0.0, SQUEEZE, SQUEEZE], [0.0, 0.0, 0.0])))
    out = by_topic(core.update(0))
    markers = {(m.ns, m.id): m for m in core.markers().markers}
    for pad in PADS:
        spheres = markers[(f"{pad}/taxels", 0)]
        assert spheres.type == spheres.SPHERE_LIST and len(spheres.points) == 30
        force = np.linalg.norm(np.asarray(out[f"~/{pad}"][0].force, dtype=np.float64).reshape(-1, 3), axis=1)
        colours = np.array([[c.r, c.g, c.b] for c in spheres.colors])
        np.testing.assert_allclose(colours, colour_ramp(force / 1.0), atol=1e-6)
        arrows = [markers[(f"{pad}/forces", k)] for k in range(30)]
        assert [a.action == a.DELETE for a in arrows] == list(force == 0)
    can = markers[("objects/can", 0)]
    assert can.type == can.CYLINDER and can.header.frame_id == "world"
    np.testing.assert_allclose([can.scale.x, can.scale.y, can.scale.z], [0.04, 0.04, 0.091])
    np.testing.assert_allclose([can.pose.position.x, can.pose.position.y, can.pose.position.z], [0, 0, 0.045],
                               atol=1e-7)
    assert markers[("thermal_left/thermal", 0)].type == can.CUBE_LIST
    assert len(markers[("thermal_left/thermal", 0)].points) == 12
    assert markers[("palm_contact/palm/force", 0)].type == can.ARROW


def test_markers_without_arrows_and_off():
    core = demo_core(marker_force_arrows=False)
    core.on_joint_state(decode_joint_state(joint_state_msg([0.0, SQUEEZE, SQUEEZE])))
    core.update(0)
    assert not any(m.ns.endswith("/forces") for m in core.markers().markers)
    core.update_params(viz_rate=0.0)
    assert core.markers() is None
    assert "~/markers" not in [t.name for t in core.topics()]


def test_diagnostics_report_rate_step_time_and_misses():
    core = demo_core(update_rate=100.0)
    core.on_joint_state(decode_joint_state(joint_state_msg([0.0, 0.03, 0.03])))
    for k in range(5):
        core.update(ns(0.01 * k))
    core.update(ns(0.08))  # four ticks late: a deadline miss
    diag = core.diagnostics(ns(0.1))
    (status,) = diag.status
    values = {kv.key: kv.value for kv in status.values}
    assert status.name == "tactile_sim_node: update loop" and time_msg_to_ns(diag.header.stamp) == ns(0.1)
    assert values["updates"] == "6" and values["update_rate_target_hz"] == "100"
    assert float(values["update_rate_achieved_hz"]) == pytest.approx(5 / 0.1)
    assert int(values["deadline_misses"]) >= 1 and status.level == 1
    assert float(values["step_time_max_ms"]) >= float(values["step_time_mean_ms"]) > 0
    assert "deadline misses" in status.message and values["dropped_inputs"] == "0"
    phases = [float(values[f"{k}_time_mean_ms"]) for k in ("world", "suite_step", "encode")]
    assert all(v > 0 for v in phases)  # they partition the update: their means add up to the step time's
    assert sum(phases) == pytest.approx(float(values["step_time_mean_ms"]), abs=0.002)
    assert values["decode_time_mean_ms"] == values["publish_time_mean_ms"] == "nan"  # the runtime's phases


def test_gaps_between_joint_states_are_no_deadline_misses_when_they_drive_the_updates():
    core = demo_core(update_rate=1.0, step_on="joint_states")  # a 1 s period: no update takes longer
    for t in (0.0, 1.0, 8.0, 50.0):  # the sender paused twice: not the node's lateness
        core.on_joint_state(decode_joint_state(joint_state_msg([0.0, 0.03, 0.03])))
        core.update(ns(t))
    assert core.stats.updates == 4 and core.stats.deadline_misses == 0


@pytest.mark.parametrize("phase", [p.name for p in PHASES])
def test_trajectory_is_continuous_and_its_velocity_is_the_derivative(phase):
    start = sum(p.duration for p in PHASES[:[p.name for p in PHASES].index(phase)])
    duration = next(p.duration for p in PHASES if p.name == phase)
    h = 1e-6
    for u in (0.0, 0.3, 0.999999):
        t = start + u * duration
        a, b = gripper_trajectory(t - h), gripper_trajectory(t + h)
        np.testing.assert_allclose((b.position - a.position) / (2 * h), gripper_trajectory(t).velocity, atol=1e-6)
    np.testing.assert_allclose(gripper_trajectory(start - 1e-12).position, gripper_trajectory(start).position,
                               atol=1e-9)
    assert gripper_trajectory(start + 0.5 * duration).phase == phase
    np.testing.assert_allclose(gripper_trajectory(0.3).position, gripper_trajectory(0.3 + CYCLE).position)


def test_the_demo_files_resolve_as_package_data():
    config = load_config(DEMO_CONFIG)
    assert config.robot.urdf == DEMO_URDF and DEMO_URDF.is_file()
    assert [s.type for s in config.sensors] == ["KinematicTaxel", "KinematicTaxel", "ContactSensor",
                                                "TemperatureGrid", "JointTorque", "ContactProbe",
                                                "ContactDepthProbe", "ElastomerTaxel", "ProximityTaxel",
                                                "SurfaceDistanceProbe"]


def test_the_demo_root_link_is_massless():
    """KDL (robot_state_publisher) does not support an inertia on the root link: the demo's root has none, every
    other link has one (JointTorque needs them)."""
    robot = ElementTree.parse(DEMO_URDF).getroot()
    children = {j.find("child").get("link") for j in robot.iter("joint")}
    inertial = {link.get("name"): link.find("inertial") is not None for link in robot.iter("link")}
    roots = [name for name in inertial if name not in children]
    assert roots == ["base_link"]
    assert {name: has for name, has in inertial.items() if has != (name not in roots)} == {}
