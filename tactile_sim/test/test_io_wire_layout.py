"""WireMessage.byte_layout and byte_span: messages of one CdrTemplate share a layout token, and byte_span names the
bytes of a changing array field (its values read from that place equal rosbags' deserialisation); other messages and
fields have none."""

import numpy as np

from tactile_sim.io.cdr_template import CdrTemplate
from tactile_sim.io.encode import TAXEL_ARRAY
from tactile_sim.io.input_cdr import JointStateDecoder
from tactile_sim.io.msg_types import deserialize_cdr, new_message, serialize_cdr


def pad(n):
    head = new_message("std_msgs/msg/Header", frame_id="pad_link")
    return new_message(TAXEL_ARRAY, header=head, sensor_name="pad", sensor_type="KinematicTaxel", rows=n, cols=1,
                       positions=np.zeros(3 * n, np.float32), radii=np.full(n, 0.002, np.float32),
                       force=np.zeros(3 * n, np.float32), depth=np.zeros(n, np.float32))


def test_template_messages_share_a_layout_and_name_the_bytes_of_their_array_fields():
    rng = np.random.default_rng(3)
    template = CdrTemplate(pad(5), ("header.stamp", "force", "depth"))
    other = CdrTemplate(pad(5), ("header.stamp", "force", "depth"))
    messages = []
    for _ in range(3):
        template.view("force")[:] = rng.standard_normal(15).astype(np.float32)
        template.view("depth")[:] = rng.random(5).astype(np.float32)
        messages.append(template.wire())
    assert all(m.byte_layout is messages[0].byte_layout for m in messages) and messages[0].byte_layout is not None
    assert other.wire().byte_layout is not messages[0].byte_layout
    for msg in messages:
        truth = deserialize_cdr(msg.cdr, TAXEL_ARRAY)
        for name, size in (("force", 15), ("depth", 5)):
            start, dtype, count = msg.byte_span(name)
            assert (dtype, count) == (np.dtype("<f4"), size)
            assert start == messages[0].byte_span(name)[0]
            read = np.frombuffer(msg.cdr, dtype, count, start)
            np.testing.assert_array_equal(read, getattr(truth, name))
        assert msg.byte_span("radii") is None  # not a changing field: the template's value
        assert msg.byte_span("sensor_name") is None


def test_messages_with_values_outside_their_bytes_have_no_layout():
    template = CdrTemplate(pad(2), ("header.stamp", "force"))
    assert template.wire({"force": np.ones(6, np.float32)}).byte_layout is None
    joints = new_message("sensor_msgs/msg/JointState", name=["a"], position=np.array([0.5]))
    decoded = JointStateDecoder().decode(serialize_cdr(joints))
    assert decoded.byte_layout is None and decoded.byte_span("position") is None
