"""``tactile-sim node --transport dds -p step_on:=joint_states`` end to end over real DDS on loopback: no output
without input (there is no update timer), then, driven in a closed loop (the next joint state when the previous
answer arrived), every joint state gives exactly one sensor message, in order, stamped with the node time of that
joint state's arrival (node clock = this machine's wall clock: between sending and receiving) and carrying that
joint state's contact (open: no force; squeezed: force)."""

import time

import numpy as np
import pytest

from helpers_ros import tf_msg
from helpers_transport import isolated_domain_id, start_dds_node
from tactile_sim.demo_trajectory import JOINT_NAMES, SQUEEZE, gripper_trajectory
from tactile_sim.io.msg_types import deserialize_cdr, new_message
from tactile_sim.io.stamps import time_msg, time_msg_to_ns
from tactile_sim.ros.node_runtime import TF_STATIC_QOS
from tactile_sim.transport.base import DEFAULT
from tactile_sim.transport.dds import LOOPBACK_CONFIG, DdsTransport

DOMAIN = isolated_domain_id(offset=3)
PAD = "/tactile_sim_node/pad_left/ground_truth"
TAXEL_ARRAY = "tactile_sim_msgs/msg/TaxelArray"
JOINT_STATE = "sensor_msgs/msg/JointState"
N = 40
START_TIMEOUT = 90.0
ANSWER_TIMEOUT = 5.0
OPEN = np.array(gripper_trajectory(0.0).position)
SQUEEZED = np.array([0.0, SQUEEZE, SQUEEZE])


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(answers before any input, [(send wall ns, receive wall ns, message)] per joint state, node log)."""
    tmp = tmp_path_factory.mktemp("step_on")
    t = DdsTransport("step_on_probe", domain_id=DOMAIN, config=LOOPBACK_CONFIG, log=lambda *a: None)
    received = []
    sub = t.create_subscription(PAD, TAXEL_ARRAY, lambda raw: received.append((time.time_ns(), bytes(raw))),
                                DEFAULT, raw=True)
    t.create_publisher("/tf_static", "tf2_msgs/msg/TFMessage", TF_STATIC_QOS).publish(
        tf_msg(("world", "base_link", (0, 0, 0), (0, 0, 0, 1), time.time())))
    joints = t.create_publisher("/joint_states", JOINT_STATE, DEFAULT)
    node = start_dds_node(DOMAIN, tmp / "node.log", "-p", "step_on:=joint_states", "-p", "viz_rate:=0",
                          "-p", "publish_ground_truth:=true")
    try:
        assert t.spin(until=lambda: joints.subscription_count == 1 and sub.reader.get_matched_publications(),
                      timeout=START_TIMEOUT), "the node did not come up"
        t.spin(timeout=1.0)
        idle = len(received)
        sent = []
        for k in range(N):
            q = SQUEEZED if k % 2 else OPEN
            sent.append(time.time_ns())
            joints.publish(new_message(JOINT_STATE, header=new_message("std_msgs/msg/Header", stamp=time_msg(0.0)),
                                       name=list(JOINT_NAMES), position=q, velocity=np.zeros(3)))
            assert t.spin(until=lambda n=k + 1: len(received) >= n, timeout=ANSWER_TIMEOUT), f"no answer to #{k}"
        t.spin(timeout=0.5)  # an extra answer would arrive now
    finally:
        node.terminate()
        node.wait(timeout=20)
        t.close()
    answers = [(s, r, deserialize_cdr(raw, TAXEL_ARRAY)) for s, (r, raw) in zip(sent, received)]
    return idle, answers, len(received), (tmp / "node.log").read_text()


def test_nothing_is_published_before_a_joint_state_arrives(run):
    idle, *_ = run
    assert idle == 0


def test_each_joint_state_gives_one_answer_stamped_at_its_arrival(run):
    _, answers, count, log = run
    assert count == N, log
    stamps = [time_msg_to_ns(m.header.stamp) for _, _, m in answers]
    assert all(send <= stamp <= receive for (send, receive, _), stamp in zip(answers, stamps))
    assert np.all(np.diff(stamps) > 0)


def test_each_answer_carries_its_joint_states_contact(run):
    _, answers, _, _ = run
    force = [np.abs(np.asarray(m.force)).max() for _, _, m in answers]
    assert all((f > 0) == bool(k % 2) for k, f in enumerate(force)), force
