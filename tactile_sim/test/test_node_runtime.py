"""NodeRuntime on a recording transport (no middleware): the topics, QoS and timers both transports get, the
description subscription taken down once a description is used, the guard around callbacks, and run-time
parameter changes."""

import gc

import numpy as np
import pytest

from helpers_ros import demo_core, demo_dict, joint_state_msg, tf_msg
from tactile_sim.demo_trajectory import DEMO_URDF, SQUEEZE
from tactile_sim.io.msg_types import new_message
from tactile_sim.ros.node_runtime import DIAGNOSTICS_PERIOD, NodeRuntime
from tactile_sim.transport.base import DEFAULT, LATCHED, SENSOR_DATA, Publisher, QosProfile, Transport


class RecordingPublisher(Publisher):
    def __init__(self):
        self.sent = []

    def publish(self, msg):
        self.sent.append(msg)


class RecordingTransport(Transport):
    """Keeps every subscription, publisher and timer; the test calls the callbacks and sets the clock."""

    def __init__(self):
        self.subs, self.pubs, self.timers, self.lines = {}, {}, [], []
        self.clock_ns = 0

    stopped = False  # the test sets it, as a shutdown does

    @property
    def name(self):
        return "tactile_sim_node"

    def create_publisher(self, topic, message_type, qos):
        self.pubs[topic] = (message_type, qos, RecordingPublisher())
        return self.pubs[topic][2]

    def create_subscription(self, topic, message_type, callback, qos):
        self.subs[topic] = (message_type, callback, qos)
        return topic

    def destroy_subscription(self, handle):
        del self.subs[handle]

    def create_timer(self, period, callback, concurrent=False):
        timer = [period, callback, concurrent]
        self.timers.append(timer)
        return timer

    def destroy_timer(self, handle):
        self.timers.remove(handle)

    def now_ns(self):
        return self.clock_ns

    def log(self, level, text):
        self.lines.append((level, text))

    def timer(self, period):
        (found,) = [t for t in self.timers if t[0] == pytest.approx(period)]
        return found


def test_inputs_and_their_qos():
    t = RecordingTransport()
    NodeRuntime(demo_core(), t)
    assert {k: (v[0], v[2]) for k, v in t.subs.items()} == {
        "/joint_states": ("sensor_msgs/msg/JointState", QosProfile(reliable=False, depth=10)),
        "/tf": ("tf2_msgs/msg/TFMessage", QosProfile(depth=100)),
        "/tf_static": ("tf2_msgs/msg/TFMessage", QosProfile(depth=100, transient_local=True)),
    }  # the configuration names the robot: no /robot_description subscription


def test_publishers_use_the_sensor_data_profile_only_for_the_named_sensors():
    t = RecordingTransport()
    core = demo_core(sensor_data_qos=("pad_right",), publish_ground_truth=True)
    NodeRuntime(core, t)
    assert {s.name for s in core.topics()} == set(t.pubs)
    assert t.pubs["~/pad_right"][1] == SENSOR_DATA and t.pubs["~/pad_right/ground_truth"][1] == SENSOR_DATA
    assert t.pubs["~/pad_left"][1] == DEFAULT and t.pubs["/diagnostics"][1] == DEFAULT
    assert t.pubs["~/pad_left"][0] == "tactile_sim_msgs/msg/TaxelArray"


def test_timers_update_publish_and_markers_run_concurrently():
    t = RecordingTransport()
    core = demo_core(update_rate=50.0, viz_rate=5.0)
    NodeRuntime(core, t)
    update, viz, diag = t.timer(0.02), t.timer(0.2), t.timer(DIAGNOSTICS_PERIOD)
    assert not update[2] and viz[2] and not diag[2]
    t.subs["/joint_states"][1](joint_state_msg([0.0, SQUEEZE, SQUEEZE], np.zeros(3)))
    t.clock_ns = 20_000_000
    update[1]()
    pads = t.pubs["~/pad_left"][2].sent
    assert len(pads) == 1 and pads[0].header.stamp.nanosec == 20_000_000
    assert np.linalg.norm(pads[0].force) > 0
    viz[1]()
    assert t.pubs["~/markers"][2].sent
    diag[1]()
    (status,) = t.pubs["/diagnostics"][2].sent[0].status
    assert status.name == "tactile_sim_node: update loop"
    values = {kv.key: kv.value for kv in status.values}
    phases = [float(values[f"{k}_time_mean_ms"]) for k in ("decode", "world", "suite_step", "encode", "publish")]
    assert all(v > 0 for v in phases)  # the runtime times decoding and publishing, the core the rest


def test_the_latched_description_is_taken_once_then_unsubscribed():
    data = demo_dict()
    del data["robot"]
    t = RecordingTransport()
    core = demo_core(data)
    NodeRuntime(core, t)
    assert t.subs["/robot_description"][0] == "std_msgs/msg/String" and t.subs["/robot_description"][2] == LATCHED
    assert not t.pubs
    t.subs["/robot_description"][1](new_message("std_msgs/msg/String", data=DEMO_URDF.read_text()))
    assert core.ready and "/robot_description" not in t.subs
    assert "~/pad_left" in t.pubs


def test_a_failing_callback_is_counted_and_logged_not_raised():
    t = RecordingTransport()
    core = demo_core(log=t.log)  # as both transports build it: the core logs through the transport
    NodeRuntime(core, t)
    t.subs["/tf"][1](object())  # not a TFMessage: decoding raises inside the guard
    assert core.stats.dropped["tf.error"] == 1
    assert any("tf callback failed" in text for _, text in t.lines)
    t.subs["/tf"][1](tf_msg(("world", "obj", (0, 0, 0), (0, 0, 0, 1), 0.0)))
    assert core.stats.dropped["tf.error"] == 1


class ClosedContextPublisher(Publisher):
    """A publisher whose context is gone, as rclpy's is once SIGINT has shut it down."""

    def publish(self, msg):
        raise RuntimeError("Failed to publish: publisher's context is invalid")


def test_a_callback_failing_while_the_transport_stops_is_neither_counted_nor_logged():
    t = RecordingTransport()
    core = demo_core(log=t.log, viz_rate=10.0, step_on="joint_states")
    runtime = NodeRuntime(core, t)
    runtime._pubs["~/markers"] = ClosedContextPublisher()
    (markers,) = [callback for _, callback, concurrent in t.timers if concurrent]
    t.clock_ns = 10_000_000
    t.subs["/joint_states"][1](joint_state_msg([0.0, SQUEEZE, SQUEEZE], np.zeros(3)))  # one update: markers to send
    markers()  # running: a failed publish is an error
    assert core.stats.dropped["markers.error"] == 1 and any("markers callback failed" in x for _, x in t.lines)
    t.stopped = True  # shutting down (SIGINT): the same failure is part of the shutdown
    markers()
    assert core.stats.dropped["markers.error"] == 1 and len(t.lines) == 1


def test_the_heap_is_settled_once_the_sensors_are_built():
    """Everything alive once the suite is built goes to the collector's permanent generation (no full collection
    walks it during the run); a core still waiting for its robot description settles when the description arrives."""
    gc.unfreeze()
    try:
        data = demo_dict()
        del data["robot"]
        t = RecordingTransport()
        core = demo_core(data)
        NodeRuntime(core, t)
        assert not core.ready and gc.get_freeze_count() == 0
        t.subs["/robot_description"][1](new_message("std_msgs/msg/String", data=DEMO_URDF.read_text()))
        assert core.ready and gc.get_freeze_count() > 100_000
        assert gc.get_count()[2] == 0  # the collection before freezing left nothing for gen 2
    finally:
        gc.unfreeze()


def test_parameter_changes_restart_the_timers_at_the_new_rates():
    t = RecordingTransport()
    core = demo_core(update_rate=50.0, viz_rate=5.0)
    runtime = NodeRuntime(core, t)
    core.update_params(update_rate=100.0, viz_rate=0.0, publish_ground_truth=True)
    runtime.parameters_changed({"update_rate", "viz_rate", "publish_ground_truth"})
    assert sorted(p for p, _, _ in t.timers) == sorted([0.01, DIAGNOSTICS_PERIOD])
    assert "~/pad_left/ground_truth" in t.pubs


def test_joint_states_step_the_core_when_step_on_is_joint_states():
    t = RecordingTransport()
    core = demo_core(update_rate=50.0, viz_rate=5.0, step_on="joint_states")
    runtime = NodeRuntime(core, t)
    assert sorted(timer[0] for timer in t.timers) == [0.2, DIAGNOSTICS_PERIOD]  # no update timer
    pads = t.pubs["~/pad_left"][2].sent
    arrivals = [3_000_000, 7_500_000, 8_000_001]  # ns, node clock: not on a 1/update_rate grid
    for k, clock in enumerate(arrivals):
        t.clock_ns = clock
        t.subs["/joint_states"][1](joint_state_msg([0.0, SQUEEZE, SQUEEZE], np.zeros(3), stamp=100.0 + k))
        assert len(pads) == k + 1
    assert [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in pads] == arrivals
    assert all(np.linalg.norm(m.force) > 0 for m in pads)
    t.clock_ns += 1_000_000
    t.subs["/joint_states"][1](joint_state_msg([0.0, SQUEEZE], np.zeros(2)))  # 2 positions for 3 names: dropped
    assert len(pads) == 3 and core.stats.dropped["joint_states.length_mismatch"] == 1
    core.update_params(update_rate=100.0)
    runtime.parameters_changed({"update_rate"})
    assert sorted(timer[0] for timer in t.timers) == [0.2, DIAGNOSTICS_PERIOD]
