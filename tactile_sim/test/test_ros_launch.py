"""tactile_sim_node under ROS 2 (launch_pytest): started with the demo configuration, fed joint states, TF and the
robot description by a test node, it publishes taxel arrays with contacts where the fingers touch the can and zeros
elsewhere, at its update rate, with markers and diagnostics; it survives bad inputs and changes its rate at run
time. Skipped where ROS 2 is not importable.
"""

from helpers_ros_launch import edited_demo, node_action, require_ros

require_ros()

import threading  # noqa: E402
import time  # noqa: E402

import launch  # noqa: E402
import launch_pytest  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import rclpy  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import TransformStamped  # noqa: E402
from rcl_interfaces.msg import Parameter as ParameterMsg  # noqa: E402
from rcl_interfaces.msg import ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from tactile_sim_msgs.msg import TaxelArray  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402
from visualization_msgs.msg import MarkerArray  # noqa: E402

from helpers_ros import pad_contact_truth  # noqa: E402
from tactile_sim.constants import EPS_D  # noqa: E402
from tactile_sim.demo_trajectory import DEMO_URDF, JOINT_NAMES, SQUEEZE  # noqa: E402

RATE = 10.0
"""Hz of the node under test: the full demo configuration (10 sensors) steps in tens of ms on a small, shared CI
machine; the rate checks need a rate the machine sustains."""
SLOW_RATE = 5.0
SQUEEZED = [0.0, SQUEEZE, SQUEEZE]
NODE = "/tactile_sim_node"
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def config_without_robot():
    """The demo configuration without robot.urdf: the node must wait for /robot_description."""
    return edited_demo("demo_without_robot.yaml", lambda data: data.pop("robot"))


class Probe(Node):
    """Test-side node: plays robot_state_publisher and the controller (description, TF, joint states) and records
    what tactile_sim_node publishes, with the wall time of arrival."""

    def __init__(self):
        super().__init__("tactile_sim_test_probe")
        self.lock = threading.Lock()
        self.received: dict[str, list] = {}
        self.joints = list(SQUEEZED)
        self.description = self.create_publisher(String, "/robot_description", LATCHED)
        self.tf_static = self.create_publisher(TFMessage, "/tf_static", LATCHED)
        self.tf = self.create_publisher(TFMessage, "/tf", 10)
        self.joint_pub = self.create_publisher(JointState, "/joint_states", 10)
        for topic, cls in ((f"{NODE}/pad_left", TaxelArray), (f"{NODE}/pad_left/ground_truth", TaxelArray),
                           (f"{NODE}/pad_right/ground_truth", TaxelArray), (f"{NODE}/markers", MarkerArray),
                           ("/diagnostics", DiagnosticArray)):
            self.create_subscription(cls, topic, lambda msg, t=topic: self.record(t, msg), 100)
        self.create_timer(0.02, self.publish_joints)
        self.spinner = SingleThreadedExecutor()
        self.spinner.add_node(self)
        self.spinning = threading.Event()
        self.spinning.set()
        self.thread = threading.Thread(target=self.spin, daemon=True)
        self.thread.start()

    def spin(self):
        """Spin until close() clears ``spinning``: the executor is shut down only after this thread has left it (an
        executor shut down and a node destroyed while another thread still spins raised InvalidHandle there)."""
        while self.spinning.is_set():
            self.spinner.spin_once(timeout_sec=0.05)

    def record(self, topic, msg):
        with self.lock:
            self.received.setdefault(topic, []).append((time.monotonic(), msg))

    def messages(self, topic):
        with self.lock:
            return list(self.received.get(topic, []))

    def publish_world(self):
        self.description.publish(String(data=DEMO_URDF.read_text()))
        base = TransformStamped()
        base.header.frame_id, base.child_frame_id = "world", "base_link"
        base.transform.rotation.w = 1.0
        self.tf_static.publish(TFMessage(transforms=[base]))

    def publish_joints(self):
        msg = JointState()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.name = list(JOINT_NAMES)
        msg.position = [float(q) for q in self.joints]
        msg.velocity = [0.0, 0.0, 0.0]
        self.joint_pub.publish(msg)

    def wait_for(self, topic, count, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if len(self.messages(topic)) >= count:
                return self.messages(topic)
            time.sleep(0.05)
        raise AssertionError(f"{topic}: {len(self.messages(topic))} messages after {timeout} s, expected {count}")

    def close(self):
        self.spinning.clear()
        self.thread.join(timeout=60.0)
        assert not self.thread.is_alive(), "the probe's spinning thread did not stop within 60 s"
        self.spinner.shutdown()
        self.destroy_node()


@pytest.fixture(scope="module")
def probe():
    rclpy.init()
    p = Probe()
    p.publish_world()
    yield p
    p.close()
    rclpy.shutdown()


@launch_pytest.fixture(scope="module")
def running_node():
    return launch.LaunchDescription([
        node_action(config_without_robot(), update_rate=RATE, publish_ground_truth=True, viz_rate=5.0),
        launch_pytest.actions.ReadyToTest()])


def stamps_s(messages):
    return np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for _, m in messages])


@pytest.mark.launch(fixture=running_node)
def test_taxel_arrays_show_the_squeeze_at_the_update_rate(probe):
    probe.wait_for(f"{NODE}/pad_left/ground_truth", 1, timeout=120)  # start-up: imports, description, build
    start = len(probe.messages(f"{NODE}/pad_left"))
    time.sleep(3.0)
    measured = probe.messages(f"{NODE}/pad_left")[start:]
    arrivals = np.array([t for t, _ in measured])
    assert len(measured) >= 0.7 * RATE * 3.0, f"{len(measured)} messages in 3 s at {RATE} Hz"
    assert np.median(np.diff(stamps_s(measured))) == pytest.approx(1.0 / RATE, rel=0.1)
    assert (len(measured) - 1) / (arrivals[-1] - arrivals[0]) == pytest.approx(RATE, rel=0.3)
    for pad in ("pad_left", "pad_right"):
        _, gt = probe.messages(f"{NODE}/{pad}/ground_truth")[-1]
        sd, _ = pad_contact_truth(gt, SQUEEZED)
        overlap = 0.0005 - sd
        force = np.linalg.norm(np.asarray(gt.force).reshape(-1, 3), axis=1)
        assert np.all(force[overlap > EPS_D + 2e-5] > 0) and np.all(force[overlap < EPS_D - 2e-5] == 0)
        assert (overlap > EPS_D + 2e-5).sum() >= 6 and (overlap < EPS_D - 2e-5).sum() >= 6
        assert gt.header.frame_id == pad.replace("pad", "fingertip") and gt.valid and gt.ground_truth


@pytest.mark.launch(fixture=running_node)
def test_markers_and_diagnostics_are_published(probe):
    _, markers = probe.wait_for(f"{NODE}/markers", 1, timeout=60)[-1]
    by_ns = {(m.ns, m.id): m for m in markers.markers}
    assert len(by_ns[("pad_left/taxels", 0)].points) == 30 and by_ns[("pad_left/taxels", 0)].type == 7
    assert ("objects/can", 0) in by_ns and ("thermal_left/thermal", 0) in by_ns
    probe.wait_for("/diagnostics", 2, timeout=30)
    ours = [s for _, d in probe.messages("/diagnostics") for s in d.status if s.name.startswith("tactile_sim_node")]
    values = {kv.key: kv.value for kv in ours[-1].values}
    assert values["update_rate_target_hz"] == f"{RATE:g}" and int(values["updates"]) > 0
    assert float(values["update_rate_achieved_hz"]) == pytest.approx(RATE, rel=0.3)


@pytest.mark.launch(fixture=running_node)
def test_bad_inputs_are_survived_and_counted(probe):
    probe.wait_for(f"{NODE}/pad_left", 1, timeout=120)
    bad = []
    for names, position in ((["slide", "finger_left_joint"], [0.0, float("nan")]),
                            (["slide", "finger_left_joint"], [0.0]),
                            (["slide", "elbow"], [0.0, 1.0])):
        msg = JointState(name=names, position=position)
        bad.append(msg)
    for msg in bad:
        probe.joint_pub.publish(msg)
    weird = TransformStamped()
    weird.header.frame_id, weird.child_frame_id = "nowhere", "base_link"  # a second parent for base_link
    weird.transform.rotation.w = 1.0
    probe.tf.publish(TFMessage(transforms=[weird]))
    time.sleep(2.5)
    before = len(probe.messages(f"{NODE}/pad_left"))
    time.sleep(1.0)
    assert len(probe.messages(f"{NODE}/pad_left")) > before  # still publishing
    ours = [s for _, d in probe.messages("/diagnostics") for s in d.status if s.name.startswith("tactile_sim_node")]
    values = {kv.key: kv.value for kv in ours[-1].values}
    assert int(values.get("dropped.joint_states.non_finite", 0)) >= 1
    assert int(values.get("dropped.joint_states.length_mismatch", 0)) >= 1
    assert "elbow" in values.get("ignored_joint_names", "")
    assert int(values.get("dropped.tf.invalid", 0)) >= 1


@pytest.mark.launch(fixture=running_node)
def test_update_rate_changes_at_run_time(probe):
    probe.wait_for(f"{NODE}/pad_left", 1, timeout=120)
    client = probe.create_client(SetParameters, f"{NODE}/set_parameters")
    assert client.wait_for_service(timeout_sec=10.0)
    value = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=SLOW_RATE)
    future = client.call_async(SetParameters.Request(parameters=[ParameterMsg(name="update_rate", value=value)]))
    end = time.monotonic() + 20
    while not future.done() and time.monotonic() < end:
        time.sleep(0.05)
    assert future.done() and future.result().results[0].successful
    time.sleep(1.0)
    start = len(probe.messages(f"{NODE}/pad_left"))
    time.sleep(3.0)
    measured = probe.messages(f"{NODE}/pad_left")[start:]
    assert np.median(np.diff(stamps_s(measured))) == pytest.approx(1.0 / SLOW_RATE, rel=0.1)
    out_of_range = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=0.0)
    future = client.call_async(SetParameters.Request(parameters=[ParameterMsg(name="update_rate",
                                                                              value=out_of_range)]))
    end = time.monotonic() + 20
    while not future.done() and time.monotonic() < end:
        time.sleep(0.05)
    assert future.done() and not future.result().results[0].successful
