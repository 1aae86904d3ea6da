"""NodeCore never dies on bad input (no rclpy): joint states with unknown names, mismatched lengths or NaN, TF for
unknown or invalid frames, time going backwards, a missing robot description, invalid configurations and
parameters; each case is dropped or handled, counted and logged (throttled)."""

import re
import types
from array import array

import numpy as np
import pytest
import yaml

from helpers_ros import (
    PACKAGE_ROOT,
    LogRecorder,
    by_topic,
    config_of,
    demo_core,
    demo_dict,
    joint_state_msg,
    ns,
    tf_msg,
    world_to_base,
)
from tactile_sim.demo_trajectory import DEMO_URDF, SQUEEZE
from tactile_sim.errors import ConfigError
from tactile_sim.io.input_cdr import TFMessageDecoder
from tactile_sim.io.msg_types import serialize_cdr
from tactile_sim.io.stamps import time_msg
from tactile_sim.ros.inputs import JointStateSample, decode_joint_state, decode_tf_message
from tactile_sim.ros.node_core import NodeCore
from tactile_sim.ros.node_params import PARAMETERS, NodeParams

SQUEEZED = [0.0, SQUEEZE, SQUEEZE]


class FakeClock:
    """A monotonic clock the tests advance by hand (log throttling)."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def pad_bytes(core, t: float, topic: str = "~/pad_left/ground_truth") -> bytes:
    out = by_topic(core.update(ns(t)))
    return serialize_cdr(out[topic][0])


def squeezed_core(**params):
    core = demo_core(publish_ground_truth=True, **params)
    core.on_joint_state(decode_joint_state(joint_state_msg(SQUEEZED, [0.0, 0.0, 0.0])))
    return core


# ------------------------------------------------------------------ decoding
def test_decoders_read_rosbags_and_rclpy_style_messages_alike():
    msg = joint_state_msg([0.1, 0.2, 0.3], [1.0, 2.0, 3.0], stamp=12.5)
    rclpy_like = types.SimpleNamespace(header=types.SimpleNamespace(stamp=time_msg(12.5)), name=list(msg.name),
                                       position=array("d", [0.1, 0.2, 0.3]), velocity=array("d", [1.0, 2.0, 3.0]))
    for m in (msg, rclpy_like):
        s = decode_joint_state(m)
        assert s.stamp == 12.5 and s.names == tuple(msg.name)
        np.testing.assert_array_equal(s.position, [0.1, 0.2, 0.3])
        np.testing.assert_array_equal(s.velocity, [1.0, 2.0, 3.0])
    assert decode_joint_state(joint_state_msg([0.1, 0.2, 0.3])).velocity is None
    (tr,) = decode_tf_message(tf_msg(("/world", "/obj", (1, 2, 3), (0, 0, 0, 1), 4.25)))
    assert (tr.parent, tr.child, tr.stamp) == ("world", "obj", 4.25)
    np.testing.assert_array_equal(tr.translation, [1, 2, 3])


# ------------------------------------------------------------------ joint states
def test_unknown_joint_names_are_ignored_counted_and_logged_once_per_period():
    clock, log = FakeClock(), LogRecorder()
    reference = squeezed_core()
    core = demo_core(log=log, clock=clock, publish_ground_truth=True)
    msg = joint_state_msg(SQUEEZED + [1.0], [0.0] * 4, names=("slide", "finger_left_joint", "finger_right_joint",
                                                                   "elbow"))
    for _ in range(10):
        assert core.on_joint_state(decode_joint_state(msg))
    assert pad_bytes(core, 0.0) == pad_bytes(reference, 0.0)
    assert core.stats.dropped["joint_states.unknown_names"] == 10
    assert len(log.matching("'elbow'")) == 1
    clock.t = 10.0
    core.on_joint_state(decode_joint_state(msg))
    lines = log.matching("'elbow'")
    assert len(lines) == 2 and "(9 more like this" in lines[1][1]
    values = {kv.key: kv.value for kv in core.diagnostics(ns(1.0)).status[0].values}
    assert values["ignored_joint_names"] == "['elbow']" and values["ignored_joint_names_count"] == "1"
    assert values["dropped.joint_states.unknown_names"] == "11"


@pytest.mark.parametrize("bad, reason", [
    (JointStateSample(0.0, ("slide", "finger_left_joint"), np.array([0.0, 0.01, 0.02])),
     "joint_states.length_mismatch"),
    (JointStateSample(0.0, ("slide", "finger_left_joint"), np.array([0.0, 0.01]), np.array([0.0])),
     "joint_states.length_mismatch"),
    (JointStateSample(0.0, ("slide", "slide"), np.array([0.0, 0.01])), "joint_states.duplicate_names"),
    (JointStateSample(0.0, ("slide", "finger_left_joint"), np.array([0.0, np.nan])), "joint_states.non_finite"),
    (JointStateSample(0.0, ("slide",), np.array([0.0]), np.array([np.inf])), "joint_states.non_finite"),
])
def test_malformed_joint_states_are_dropped_and_change_nothing(bad, reason):
    log = LogRecorder()
    reference = squeezed_core()
    core = squeezed_core(log=log)
    assert core.on_joint_state(bad) is False
    assert core.stats.dropped[reason] == 1 and len(log.lines) == 1 and "dropped a joint state" in log.lines[0][1]
    assert pad_bytes(core, 0.0) == pad_bytes(reference, 0.0)
    out = by_topic(core.update(ns(0.01)))
    assert all(np.isfinite(np.asarray(m.force)).all() for m in out["~/pad_left"])


def test_a_partial_joint_state_moves_only_its_joints():
    core = squeezed_core()
    core.update(0)
    core.on_joint_state(decode_joint_state(joint_state_msg([0.003], names=("slide",), stamp=0.01)))
    core.update(ns(0.01))
    q = core.suite.world.state.joint_pos[0].numpy()
    np.testing.assert_allclose(q, [0.003, SQUEEZE, SQUEEZE], atol=1e-7)


def test_joints_no_joint_state_has_set_are_listed_and_reported_until_set():
    core = demo_core()
    assert core.unset_joints() == ["slide", "finger_left_joint", "finger_right_joint"]
    core.on_joint_state(decode_joint_state(joint_state_msg([0.01, 0.02], names=("finger_right_joint", "slide"))))
    assert core.unset_joints() == ["finger_left_joint"]
    core.update(0)
    status = core.diagnostics(ns(1.0)).status[0]
    assert status.level == 1 and "joints no joint state has set (held at 0): ['finger_left_joint']" in status.message
    core.on_joint_state(decode_joint_state(joint_state_msg([float("nan")], names=("finger_left_joint",))))
    assert core.unset_joints() == ["finger_left_joint"]  # a dropped joint state sets nothing
    core.on_joint_state(decode_joint_state(joint_state_msg([0.0], names=("finger_left_joint",))))
    assert core.unset_joints() == [] and "joints no joint state" not in core.diagnostics(ns(2.0)).status[0].message
    core.rewind()
    assert len(core.unset_joints()) == 3


def test_message_velocities_are_used_when_every_joint_has_one():
    core = demo_core()
    core.on_joint_state(decode_joint_state(joint_state_msg(SQUEEZED, [0.01, -0.02, 0.03])))
    core.update(0)
    state = core.suite.world.state
    assert state.joint_vel_measured
    np.testing.assert_allclose(state.joint_vel[0].numpy(), [0.01, -0.02, 0.03], atol=1e-7)
    core.on_joint_state(decode_joint_state(joint_state_msg([0.001], names=("slide",), stamp=0.01)))
    core.update(ns(0.01))
    assert not core.suite.world.state.joint_vel_measured  # one joint's latest sample had no velocity


def test_each_joint_takes_its_named_value_in_any_order_subset_or_with_unknown_names():
    core = demo_core()
    names = core.joint_positions()[0]
    held = dict.fromkeys(names, 0.0)
    messages = [(names, [0.01, 0.02, 0.03]),  # every joint in order (the whole message onto every joint)
                (names[::-1], [0.04, 0.05, 0.06]), (names[1:], [0.07, 0.08]), (names + ["ghost"], [0.1, 0.2, 0.3, 9.0]),
                (["ghost"] + names, [9.0, 0.4, 0.5, 0.6]), (names[:1], [0.11]), (names, [0.12, 0.13, 0.14])]
    for message_names, values in messages:
        assert core.on_joint_state(JointStateSample(0.0, tuple(message_names), np.array(values)))
        held.update((n, v) for n, v in zip(message_names, values) if n in held)
        assert core.joint_positions()[1].tolist() == [held[n] for n in names]


def test_velocities_are_measured_only_while_every_joint_latest_sample_had_one():
    core = demo_core()
    names = tuple(core.joint_positions()[0])
    zeros = np.zeros(len(names))
    steps = [(names, True, True), (names[:1], False, False), (names[1:2], False, False),  # two joints unmarked
             (names[:1], True, False),  # the second is still without: not measured
             (names[1:2], True, True), (names, False, False), (names, True, True)]
    for k, (subset, velocity, measured) in enumerate(steps):
        n = len(subset)
        velocities = np.full(n, 0.01) if velocity else None
        core.on_joint_state(JointStateSample(0.0, subset, np.full(n, 0.001 * k), velocities))
        core.update(ns(0.01 * k))
        assert core.suite.world.state.joint_vel_measured is measured, k
    core.rewind()  # nothing known after a rewind: velocities of some joints are not enough
    core.on_tf(world_to_base(), static=True)
    core.on_joint_state(JointStateSample(0.0, names, zeros))
    core.on_joint_state(JointStateSample(0.0, names[:2], zeros[:2], zeros[:2]))
    core.update(0)
    assert core.suite.world.state.joint_vel_measured is False


def test_joint_states_before_the_description_are_checked_but_wait():
    data = demo_dict()
    del data["robot"]
    core = NodeCore(config_of(data), NodeParams())
    assert core.on_joint_state(decode_joint_state(joint_state_msg(SQUEEZED))) is False
    assert core.on_joint_state(JointStateSample(0.0, ("a",), np.array([np.nan]))) is False
    assert core.stats.dropped["joint_states.non_finite"] == 1


# ------------------------------------------------------------------ TF
def test_tf_for_unknown_frames_is_stored_and_changes_nothing():
    reference = squeezed_core()
    core = squeezed_core()
    stored = core.on_tf(decode_tf_message(tf_msg(("map", "odom", (1, 2, 3), (0, 0, 0, 1), 0.0),
                                                 ("odom", "mystery", (0, 0, 1), (0, 0, 0.6, 0.8), 0.0))))
    assert stored == 2 and core.tf.has_frame("mystery")
    assert pad_bytes(core, 0.0) == pad_bytes(reference, 0.0)
    assert sum(core.stats.dropped.values()) == 0


@pytest.mark.parametrize("how", ["objects", "cdr", "cdr block"])
@pytest.mark.parametrize("x", [1e300, -3.5e38, float("inf")])
def test_a_translation_beyond_float32_is_dropped_on_every_tf_path(how, x):
    """A translation finite in the message's float64 but inf in a float32 world model is dropped as a NaN is, by
    the transform objects, the CDR decoder of one message and the block decoder of a replay."""
    core = squeezed_core()
    far = tf_msg(("world", "far", (0.0, x, 0.0), (0, 0, 0, 1), 0.0))
    if how == "objects":
        core.on_tf_message(far)
    elif how == "cdr":
        core.on_tf_cdr(serialize_cdr(far))
    else:
        (row,) = TFMessageDecoder().decode_block([serialize_cdr(far)])
        assert row is not None and row.norms is None  # not checked: the core checks it
        core.on_tf_message(row)
    assert core.stats.dropped["tf.invalid"] == 1 and not core.tf.has_frame("far")


def test_invalid_transforms_are_dropped_and_counted():
    log = LogRecorder()
    core = squeezed_core(log=log)
    bad = tf_msg(("world", "a", (0, 0, 0), (0, 0, 0, 2.0), 0.0),          # not a unit quaternion
                 ("world", "b", (np.nan, 0, 0), (0, 0, 0, 1), 0.0),       # NaN translation
                 ("a_parent", "base_link", (0, 0, 0), (0, 0, 0, 1), 0.0),  # base_link already has a parent
                 ("c", "c", (0, 0, 0), (0, 0, 0, 1), 0.0))                 # its own parent
    assert core.on_tf(decode_tf_message(bad)) == 0
    assert core.stats.dropped["tf.invalid"] == 4
    assert len(log.lines) == 1 and "dropped a transform" in log.lines[0][1]
    assert core.update(0)  # still steps with the valid static world -> base_link


def test_missing_base_transform_waits_then_steps():
    log = LogRecorder()
    core = NodeCore(config_of(demo_dict()), NodeParams(), log=log)
    core.on_joint_state(decode_joint_state(joint_state_msg(SQUEEZED)))
    assert core.update(0) == [] and "base_link" in core.waiting_for_tf
    # the world frame is no link of the gripper: the message says where it comes from (a mistyped option?)
    assert "the world frame 'world' is <dict>:suite.world_frame, not a link of the robot, so TF poses its root " \
           "'base_link'" in core.waiting_for_tf
    status = core.diagnostics(ns(0.005)).status[0]
    assert status.level == 1 and "waiting for TF" in status.message
    assert log.matching("waiting for TF")
    core.on_tf(decode_tf_message(tf_msg(("world", "base_link", (0, 0, 0), (0, 0, 0, 1), 0.0))), static=True)
    assert by_topic(core.update(ns(0.01)))["~/pad_left"]
    assert core.waiting_for_tf is None


def test_a_base_moved_by_tf_moves_the_gripper_and_stale_tf_is_reported():
    core = NodeCore(config_of(demo_dict()), NodeParams(publish_ground_truth=True, tf_stale_age=0.5))
    core.on_joint_state(decode_joint_state(joint_state_msg(SQUEEZED)))
    # the base 5 cm up: the fingertips leave the can's top (z 0.0905 m) for their upper rows only
    core.on_tf(decode_tf_message(tf_msg(("world", "base_link", (0, 0, 0.05), (0, 0, 0, 1), 0.0))))
    out = by_topic(core.update(0))
    force = np.linalg.norm(np.asarray(out["~/pad_left/ground_truth"][0].force).reshape(6, 5, 3), axis=2)
    z_world = 0.05 + 0.05 + np.linspace(0.004, 0.026, 6)
    assert np.all(force[z_world > 0.0905 + 1e-4] == 0) and np.all(force[z_world < 0.0905 - 1e-3].sum(axis=1) > 0)
    assert core.stale_frames(0.2) == []
    core.update(ns(2.0))
    values = {kv.key: kv.value for kv in core.diagnostics(ns(2.0)).status[0].values}
    assert values["stale_tf"] == "base_link"


# ------------------------------------------------------------------ time
def test_time_going_backwards_resets_the_sensors_and_keeps_static_tf():
    data = demo_dict()
    for s in data["sensors"]:
        if s["name"] == "pad_left":
            s["delay"] = 0.02  # two steps at 100 Hz: the first two reads after a reset are invalid
    log = LogRecorder()
    core = demo_core(data, log=log)
    core.on_tf(decode_tf_message(tf_msg(("world", "moving", (0, 0, 0), (0, 0, 0, 1), 5.0))))
    core.on_joint_state(decode_joint_state(joint_state_msg(SQUEEZED)))
    valid = [by_topic(core.update(ns(5.0 + 0.01 * k)))["~/pad_left"][0].valid for k in range(4)]
    assert valid == [False, False, True, True]
    out = by_topic(core.update(ns(1.0)))  # simulation reset: the clock jumps back
    assert core.stats.resets == 1 and log.matching("time went backwards")
    assert [out["~/pad_left"][0].valid] + [by_topic(core.update(ns(1.0 + 0.01 * k)))["~/pad_left"][0].valid
                                           for k in (1, 2)] == [False, False, True]
    assert core.tf.has_frame("base_link") and not core.tf.has_frame("moving")  # statics kept, dynamics gone
    q = core.suite.world.state.joint_pos[0].numpy()
    np.testing.assert_allclose(q, SQUEEZED, atol=1e-7)  # the latest joints carried over


def test_repeated_time_does_not_step_twice():
    core = squeezed_core()
    assert core.update(ns(1.0)) and core.update(ns(1.0)) == []
    assert core.stats.updates == 1


# ------------------------------------------------------------------ robot description
def test_missing_robot_description_waits_and_says_so():
    data = demo_dict()
    del data["robot"]
    log = LogRecorder()
    core = NodeCore(config_of(data), NodeParams(world_frame="base_link"), log=log)
    assert not core.ready and core.update(0) == []
    assert log.matching("waiting for the robot description on /robot_description")
    status = core.diagnostics(ns(1.0)).status[0]
    assert status.level == 1 and "robot description" in status.message
    assert core.set_robot_description(DEMO_URDF.read_text())
    core.on_joint_state(decode_joint_state(joint_state_msg(SQUEEZED)))
    assert by_topic(core.update(ns(1.0)))["~/pad_left"]
    assert core.set_robot_description("<robot/>") is False  # only the first description is used


def test_a_description_that_does_not_fit_is_reported_and_the_core_keeps_waiting():
    data = demo_dict()
    del data["robot"]
    log = LogRecorder()
    core = NodeCore(config_of(data), NodeParams(world_frame="base_link"), log=log)
    wrong = DEMO_URDF.read_text().replace("fingertip_left", "tip_l")
    assert core.set_robot_description(wrong) is False and not core.ready
    status = core.diagnostics(ns(1.0)).status[0]
    assert status.level == 2 and "fingertip_left" in status.message
    assert log.lines[-1][0] == "error"
    assert core.set_robot_description(DEMO_URDF.read_text()) and core.ready
    assert core.diagnostics(ns(2.0)).status[0].level in (0, 1)


def test_the_robot_description_parameter_wins_over_the_configuration():
    urdf = DEMO_URDF.read_text().replace('name="tactile_sim_demo_gripper"', 'name="from_parameter"')
    core = NodeCore(config_of(demo_dict()), NodeParams(robot_description=urdf))
    assert core.suite.robot.name == "from_parameter"


# ------------------------------------------------------------------ configuration and parameters
def test_start_up_errors_name_the_problem():
    data = demo_dict()
    data["sensors"][0]["name"] = "pad-left"
    with pytest.raises(ConfigError, match=r"sensors\[0\]\.name.*'pad-left'"):
        NodeCore(config_of(data), NodeParams())
    with pytest.raises(ConfigError, match="sensor_data_qos.*'pad_lft'.*pad_left"):
        NodeCore(config_of(demo_dict()), NodeParams(sensor_data_qos=("pad_lft",)))
    with pytest.raises(ConfigError, match="fingertip_left"):
        NodeCore(config_of(demo_dict()), NodeParams(robot_description=DEMO_URDF.read_text().replace(
            "fingertip_left", "tip_l")))
    data = demo_dict()
    data["sensors"][0]["noise"] = -1.0
    with pytest.raises(ConfigError, match="noise"):
        config_of(data)


def test_parameters_are_validated_against_their_ranges():
    with pytest.raises(ValueError, match="update_rate.*0.5.*1.0 <= value <= 10000.0"):
        NodeParams(update_rate=0.5)
    with pytest.raises(ValueError, match="device.*'gpu'"):
        NodeParams(device="gpu")
    with pytest.raises(ValueError, match="viz_rate"):
        NodeParams(viz_rate=float("nan"))
    with pytest.raises(ValueError, match="publish_ground_truth"):
        NodeParams(publish_ground_truth="yes")
    with pytest.raises(ValueError, match=re.escape("parameter 'step_on': got 'joint_state'; allowed: 'timer' or "
                                                   "'joint_states'")):
        NodeParams(step_on="joint_state")
    with pytest.raises(ValueError, match=re.escape("parameter 'executor': got 'event'; allowed: 'auto', 'events', "
                                                   "'single_threaded', 'multi_threaded'")):
        NodeParams(executor="event")
    for bad in (100, -1, 1.5, True, "50"):
        with pytest.raises(ValueError, match=re.escape(f"parameter 'realtime_priority': got {bad!r}; allowed: an "
                                                       "integer 0 <= value <= 99")):
            NodeParams(realtime_priority=bad)
    assert NodeParams(realtime_priority=99).realtime_priority == 99
    assert [p.name for p in PARAMETERS] == list(NodeParams.__dataclass_fields__)
    assert all(p.range is not None for p in PARAMETERS if isinstance(p.default, (int, float))
               and not isinstance(p.default, bool))


def test_the_shipped_params_file_lists_every_parameter_at_its_default():
    (node,) = yaml.safe_load((PACKAGE_ROOT / "config" / "params.yaml").read_text()).values()
    values = node["ros__parameters"]
    unwritable = {"sensor_data_qos"}  # an empty list cannot be written in a parameters file
    assert list(values) == [p.name for p in PARAMETERS if p.name not in unwritable]
    assert values == {p.name: p.default for p in PARAMETERS if p.name not in unwritable}


def test_update_rate_changes_at_run_time():
    log = LogRecorder()
    core = squeezed_core(log=log)
    core.update(0)
    core.update_params(update_rate=250.0)
    assert core.suite.dt == pytest.approx(0.004) and log.matching("sensors rebuilt")
    out = by_topic(core.update(ns(0.004)))
    assert out["~/pad_left"][0].valid
    with pytest.raises(ValueError, match="read-only"):
        core.update_params(config_file="other.yaml")
    with pytest.raises(ValueError, match="update_rate"):
        core.update_params(update_rate=0.0)
    assert core.params.update_rate == 250.0


def test_a_rate_that_breaks_a_sensor_rule_is_refused_and_the_old_one_kept():
    data = demo_dict()
    for s in data["sensors"]:
        if s["name"] == "pad_left":
            s.update(delay=0.02, jitter=0.004)  # jitter must stay below the engine step
    core = demo_core(data)
    with pytest.raises(ConfigError, match="jitter"):
        core.update_params(update_rate=500.0)
    assert core.params.update_rate == 100.0 and core.suite.dt == pytest.approx(0.01)


def test_sensor_data_qos_marks_topics():
    core = demo_core(sensor_data_qos=("pad_right",), publish_ground_truth=True)
    qos = {t.name: t.sensor_data for t in core.topics()}
    assert qos["~/pad_right"] and qos["~/pad_right/ground_truth"] and not qos["~/pad_left"]
    assert "/diagnostics" in qos and "~/markers" in qos


def test_world_frame_parameter_replaces_the_configuration():
    core = NodeCore(config_of(demo_dict()), NodeParams(world_frame="base_link"))
    core.on_joint_state(decode_joint_state(joint_state_msg(SQUEEZED)))
    assert by_topic(core.update(0))["~/pad_left"]  # the root is the world: no TF needed
    assert core.world_frame == "base_link" and not core.suite.world.root_from_tf
    assert core.tf.frames == [] and world_to_base()  # nothing was looked up
