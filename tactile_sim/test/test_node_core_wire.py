"""The node's messages are WireMessages whose bytes are rosbags' serialisation of their fields (every type of the
demo, measured and ground truth, invalid first evaluations included), and a ContactSensor's LinkContact and
WrenchStamped equal the general io encoding of the sensor's read."""

import numpy as np
import pytest

from helpers_ros import by_topic, demo_core, joint_state_msg, ns
from tactile_sim.demo_trajectory import SQUEEZE
from tactile_sim.io.encode import encode_link_contact, encode_wrench_stamped
from tactile_sim.io.msg_types import message_class, serialize_cdr, typestore
from tactile_sim.io.readings import AirTimes, LinkContactReading
from tactile_sim.io.wire_message import WireMessage
from tactile_sim.ros.inputs import decode_joint_state


@pytest.fixture(scope="module")
def outputs():
    core = demo_core(publish_ground_truth=True)
    runs = []
    for k, q in enumerate([0.03, SQUEEZE, SQUEEZE]):
        core.on_joint_state(decode_joint_state(joint_state_msg([0.0, q, q], stamp=0.01 * k)))
        runs.append(by_topic(core.update(ns(1.0 + 0.01 * k))))
    return core, runs


def test_every_message_is_the_serialisation_of_its_fields(outputs):
    _, runs = outputs
    types = set()
    for out in runs:
        for topic, msgs in out.items():
            for msg in msgs:
                assert isinstance(msg, WireMessage), topic
                types.add(msg.__msgtype__)
                reference = message_class(msg.__msgtype__)(**{f: getattr(msg, f) for f in msg.message.__dataclass_fields__})
                assert bytes(typestore().serialize_cdr(reference, msg.__msgtype__)) == msg.cdr, topic
    assert len(types) == 5
    assert [out["~/pad_left"][0].valid for out in runs] == [True] * 3


def reference_link_contact(core, name, stamp):
    """The LinkContact and WrenchStamped messages of each body through LinkContactReading and the io encoders."""
    suite = core.suite
    value, valid = suite.read(name, with_valid=True)
    batch, i = suite.locate(name)
    bodies = [suite.scene.body_names[b] for b in batch.sensor_bodies[i]]
    filters = list(batch.filter_names[i])
    out = []
    for k, body in enumerate(bodies):
        def row(tensor, shape):
            return np.zeros(shape) if tensor is None else tensor[k].numpy()
        timers = None if value.current_air_time is None else \
            AirTimes(*(float(getattr(value, f)[k]) for f in AirTimes._fields))
        reading = LinkContactReading(
            name, body, body, 0.0, value.net_forces_b[k].numpy(), value.net_torques_b[k].numpy(),
            value.net_normal_forces_b[k].numpy(), row(value.net_friction_forces_b, 3), filters,
            row(value.force_matrix_b, (len(filters), 3)), row(value.normal_force_matrix_b, (len(filters), 3)),
            row(value.friction_force_matrix_b, (len(filters), 3)),
            None if value.contact_pos_b is None else value.contact_pos_b[k].numpy(), timers, bool(valid))
        head = message_class("std_msgs/msg/Header")(stamp=stamp, frame_id=body)
        link = encode_link_contact(reading)
        wrench = encode_wrench_stamped(reading.wrench())
        link.header = wrench.header = head
        out += [link, wrench]
    return out


def test_the_contact_sensor_messages_equal_the_io_encoding_of_its_read(outputs):
    core, runs = outputs
    sent = runs[-1]["~/palm_contact"] + runs[-1]["~/palm_contact/palm/wrench"]
    expected = reference_link_contact(core, "palm_contact", sent[0].header.stamp)
    assert [serialize_cdr(m) for m in sent] == [serialize_cdr(m) for m in expected]
    assert sent[0].wrench.force.z < 0.0 and sent[0].valid  # the can presses the palm down
