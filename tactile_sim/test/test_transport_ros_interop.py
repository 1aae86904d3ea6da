"""The DDS node seen by a real ROS 2 (Jazzy, rmw_cyclonedds) on loopback: ``ros2 node list`` shows it,
``ros2 topic echo`` decodes its messages to the values this process receives, ``ros2 topic info -v`` shows its
node, type hash and QoS, and an rclpy node both feeds it (joint states, latched static TF) and receives its outputs,
with no type-hash parse errors on the ROS side. Skipped unless pytest runs in a sourced ROS 2 environment."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml

from helpers_transport import isolated_domain_id, start_dds_node
from tactile_sim.demo_trajectory import JOINT_NAMES, SQUEEZE
from tactile_sim.io.msg_types import deserialize_cdr
from tactile_sim.io.stamps import time_msg_to_ns
from tactile_sim.transport.base import DEFAULT
from tactile_sim.transport.dds import LOOPBACK_CONFIG, DdsTransport
from tactile_sim.io.msg_types import type_hash



def missing_ros() -> str | None:
    """Why this process's environment is not a sourced ROS 2 installation, or None where it is: AMENT_PREFIX_PATH
    set (by a setup.bash) and the ``ros2`` command on PATH; rclpy itself is checked in the ROS environment below."""
    if not os.environ.get("AMENT_PREFIX_PATH"):
        return "AMENT_PREFIX_PATH is not set"
    if shutil.which("ros2") is None:
        return "AMENT_PREFIX_PATH is set but the ros2 command is not on PATH"
    return None


if missing_ros():
    pytest.skip(f"no sourced ROS 2 environment ({missing_ros()}): these tests need ros2 and rclpy with "
                "rmw_cyclonedds_cpp; source a ROS 2 Jazzy setup.bash before pytest", allow_module_level=True)
DOMAIN = isolated_domain_id(offset=2)
TORQUE = "/tactile_sim_node/joint_torque"
JOINT_STATE = "sensor_msgs/msg/JointState"

PROBE = '''
import json, sys, time
import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile
from geometry_msgs.msg import TransformStamped
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage
from diagnostic_msgs.msg import DiagnosticArray
from visualization_msgs.msg import MarkerArray

rclpy.init()
node = rclpy.create_node("ros_probe")
out = open(sys.argv[1], "w")
def log(topic, data):
    out.write(json.dumps({"topic": topic, "data": data}) + "\\n"); out.flush()
latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
base = TransformStamped()
base.header.frame_id, base.child_frame_id = "world", "base_link"
base.transform.rotation.w = 1.0
node.create_publisher(TFMessage, "/tf_static", latched).publish(TFMessage(transforms=[base]))
joints = node.create_publisher(JointState, "/joint_states", 10)
def tick():
    msg = JointState(name=sys.argv[2].split(","), position=[0.0, float(sys.argv[3]), float(sys.argv[3])],
                     velocity=[0.0, 0.0, 0.0])
    msg.header.stamp = node.get_clock().now().to_msg()
    joints.publish(msg)
node.create_timer(0.05, tick)
node.create_subscription(JointState, "/tactile_sim_node/joint_torque",
                         lambda m: log("torque", {"name": list(m.name), "effort": list(m.effort)}), 10)
node.create_subscription(MarkerArray, "/tactile_sim_node/markers",
                         lambda m: log("markers", {"types": [k.type for k in m.markers]}), 10)
node.create_subscription(DiagnosticArray, "/diagnostics",
                         lambda m: log("diagnostics", {"message": m.status[0].message, "name": m.status[0].name}), 10)
end = time.monotonic() + float(sys.argv[4])
while time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.05)
node.destroy_node()
rclpy.shutdown()
'''


def ros_env(tmp: Path) -> dict:
    """Environment of the ROS processes: this test's domain, rmw_cyclonedds on the loopback configuration."""
    config = tmp / "cyclonedds_loopback.xml"
    config.write_text(LOOPBACK_CONFIG)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(ROS_DOMAIN_ID=str(DOMAIN), CYCLONEDDS_URI=f"file://{config}", RMW_IMPLEMENTATION="rmw_cyclonedds_cpp",
               ROS_LOG_DIR=str(tmp / "ros_log"), PYTHONUNBUFFERED="1")
    return env


def ros(command: str, env: dict) -> subprocess.Popen:
    """``command`` in a shell of the sourced ROS 2 environment (output captured)."""
    return subprocess.Popen(["bash", "-c", command], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout: float) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ros")
    env = ros_env(tmp)
    check = ros("python3 -c 'import rclpy, sensor_msgs, visualization_msgs, diagnostic_msgs, tf2_msgs'", env)
    finish(check, 120)
    if check.returncode != 0:
        pytest.skip(f"AMENT_PREFIX_PATH={os.environ['AMENT_PREFIX_PATH']}: rclpy or the standard messages are not importable; ROS tests need a complete build")
    probe_script = tmp / "probe.py"
    probe_script.write_text(PROBE)
    received = []
    t = DdsTransport("interop_recorder", domain_id=DOMAIN, config=LOOPBACK_CONFIG, log=lambda *a: None)
    t.create_subscription(TORQUE, JOINT_STATE, lambda raw: received.append(bytes(raw)), DEFAULT, raw=True)
    node = start_dds_node(DOMAIN, tmp / "node.log", "-p", "update_rate:=10", "-p", "viz_rate:=2")
    probe = ros(f"python3 {probe_script} {tmp / 'probe.jsonl'} {','.join(JOINT_NAMES)} {SQUEEZE} 40", env)
    try:
        assert t.spin(until=lambda: len(received) > 5, timeout=90), "the DDS node published no joint torques"
        cli = {name: ros(cmd, env) for name, cmd in {
            "nodes": "ros2 node list --no-daemon",
            "echo": f"ros2 topic echo --once --no-daemon {TORQUE} {JOINT_STATE}",
            "info": f"ros2 topic info -v --no-daemon {TORQUE}",
        }.items()}
        outputs = {}
        for name, proc in cli.items():
            while proc.poll() is None:
                t.spin(timeout=0.1)
            outputs[name] = finish(proc, 5)
        probe_out = finish(probe, 60)
    finally:
        node.terminate()
        node.wait(timeout=20)
        t.close()
    lines = [json.loads(x) for x in (tmp / "probe.jsonl").read_text().splitlines()] \
        if (tmp / "probe.jsonl").exists() else []
    return outputs, probe_out, lines, [deserialize_cdr(r, JOINT_STATE) for r in received], \
        (tmp / "node.log").read_text()


def test_ros2_node_list_shows_the_dds_node(scenario):
    outputs = scenario[0]
    assert "/tactile_sim_node" in outputs["nodes"][0].split()


def test_ros2_topic_echo_decodes_the_values_this_process_received(scenario):
    outputs, _, _, received, _ = scenario
    echoed = yaml.safe_load(outputs["echo"][0].split("---")[0])
    assert echoed["name"] == list(JOINT_NAMES)
    stamp = echoed["header"]["stamp"]["sec"] * 10**9 + echoed["header"]["stamp"]["nanosec"]
    (same,) = [m for m in received if time_msg_to_ns(m.header.stamp) == stamp]
    np.testing.assert_array_equal(np.asarray(echoed["effort"], dtype=np.float64), same.effort)


def test_ros2_topic_info_shows_node_type_hash_and_qos(scenario):
    info = scenario[0]["info"][0]
    assert "Node name: tactile_sim_node" in info and "Node namespace: /" in info
    assert f"Topic type hash: {type_hash(JOINT_STATE)}" in info
    assert "Reliability: RELIABLE" in info and "KEEP_LAST (10)" in info


def test_an_rclpy_node_feeds_the_dds_node_and_receives_its_outputs(scenario):
    _, _, lines, _, node_log = scenario
    torques = [x["data"] for x in lines if x["topic"] == "torque"]
    assert torques and all(t["name"] == list(JOINT_NAMES) and len(t["effort"]) == 3 for t in torques)
    assert [x for x in lines if x["topic"] == "markers"]
    ours = [x["data"]["message"] for x in lines if x["topic"] == "diagnostics"
            and x["data"]["name"] == "tactile_sim_node: update loop"]
    assert ours and "no joint state received yet" not in ours[-1] and "waiting for TF" not in ours[-1]
    assert "Traceback" not in node_log


def test_no_ros_process_complains_about_the_dds_endpoints(scenario):
    outputs, probe_out, _, _, _ = scenario
    for out, err in [*outputs.values(), probe_out]:
        assert "type hash" not in err.lower() and "Failed to parse" not in err, err
