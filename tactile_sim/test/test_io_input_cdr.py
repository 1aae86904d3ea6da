"""JointState and TFMessage straight from CDR bytes against rosbags' deserialiser (the independent truth): every
combination of empty and filled sequences, names and frames of any length (alignment), repeated and changing names;
bags hand joint states and transforms out this way."""

import itertools

import numpy as np
import pytest

from tactile_sim.io.bag import BagReader, BagWriter
from tactile_sim.io.input_cdr import JOINT_STATE, TF_LAYOUTS_KEPT, TF_MESSAGE, JointStateDecoder, TFMessageDecoder
from tactile_sim.io.msg_types import deserialize_cdr, new_message, serialize_cdr
from tactile_sim.io.wire_message import WireMessage
from tactile_sim.ros.inputs import (decode_joint_state, decode_tf_message, joint_state_stamp_ns, tf_stamps_ns,
                                   tf_transform_count)


def joint_state(rng, names, sizes, frame="base"):
    stamp = new_message("builtin_interfaces/msg/Time", sec=int(rng.integers(-2**31, 2**31)),
                        nanosec=int(rng.integers(0, 10**9)))
    values = [rng.standard_normal(n) for n in sizes]
    return new_message(JOINT_STATE, header=new_message("std_msgs/msg/Header", stamp=stamp, frame_id=frame),
                       name=names, position=values[0], velocity=values[1], effort=values[2])


def assert_same(decoded, expected):
    assert isinstance(decoded, WireMessage) and decoded.__msgtype__ == JOINT_STATE
    assert decoded.header.stamp.sec == expected.header.stamp.sec
    assert decoded.header.stamp.nanosec == expected.header.stamp.nanosec
    assert decoded.header.frame_id == expected.header.frame_id and decoded.name == expected.name
    for field in ("position", "velocity", "effort"):
        np.testing.assert_array_equal(getattr(decoded, field), getattr(expected, field))
        assert getattr(decoded, field).dtype == np.float64


@pytest.mark.parametrize("filled", list(itertools.product([False, True], repeat=3)))
@pytest.mark.parametrize("frame", ["", "b", "base_link", "wörld/x"])
def test_decoded_fields_equal_rosbags(filled, frame):
    rng = np.random.default_rng(len(frame))
    decoder = JointStateDecoder()
    for n in (0, 1, 3, 16):
        names = ["".join(rng.choice(list("abcjoint_é0"), size=int(rng.integers(0, 12)))) for _ in range(n)]
        msg = joint_state(rng, names, [n if f else 0 for f in filled], frame)
        data = serialize_cdr(msg)
        decoded = decoder.decode(data)
        assert_same(decoded, deserialize_cdr(data, JOINT_STATE))
        assert serialize_cdr(decoded) == data  # the bytes travel on as they are


def test_names_are_reused_while_they_repeat_and_re_read_when_they_change():
    rng = np.random.default_rng(3)
    decoder = JointStateDecoder()
    first = [joint_state(rng, ["a", "bb"], (2, 2, 0)) for _ in range(3)]
    changed = joint_state(rng, ["a", "bc"], (2, 0, 0))
    grown = joint_state(rng, ["a", "bb", "c"], (3, 3, 0))  # its name bytes begin like first's but for the count
    longer = joint_state(rng, ["a", "bbb"], (2, 2, 0), frame="base_link")  # a name grows, the block moves
    for msg in first + [changed, first[0], grown, first[1], longer, first[2]]:
        decoded = decoder.decode(serialize_cdr(msg))
        assert_same(decoded, msg)
    decoded.name.append("x")  # a caller's change does not leak into the next message
    assert decoder.decode(serialize_cdr(first[0])).name == ["a", "bb"]


def test_a_layout_is_reused_only_while_frame_names_and_sequence_lengths_repeat():
    """Messages of equal byte length and names whose sequence lengths trade places, a changed frame, names of equal
    length, in random order through one decoder: each decodes like rosbags."""
    rng = np.random.default_rng(6)
    variants = [("base", ["a", "bb"], sizes) for sizes in itertools.permutations((2, 2, 0))]
    variants += [("base", ["a", "bb"], (2, 0, 0)), ("base", ["a", "bb"], (0, 0, 0)), ("b", ["a", "bb"], (2, 2, 0)),
                 ("base", ["a", "bc"], (2, 2, 0)), ("base", ["a"], (1, 1, 1)), ("", [], (0, 0, 0))]
    decoder = JointStateDecoder()
    for k in rng.integers(0, len(variants), 200):
        frame, names, sizes = variants[k]
        msg = joint_state(rng, names, sizes, frame)
        decoded = decoder.decode(serialize_cdr(msg))
        assert_same(decoded, msg)
        assert decoded.names == tuple(names)
    with pytest.raises(ValueError, match="end inside the message"):  # cut after a message of its layout
        decoder.decode(serialize_cdr(msg)[:-9] if sum(sizes) else serialize_cdr(msg)[:-3])


def test_big_endian_is_left_to_rosbags_and_cut_bytes_raise():
    rng = np.random.default_rng(4)
    data = serialize_cdr(joint_state(rng, ["a", "b"], (2, 2, 2)))
    assert JointStateDecoder().decode(b"\x00\x00\x00\x00" + data[4:]) is None
    with pytest.raises(ValueError, match="end inside the message"):
        JointStateDecoder().decode(data[:-9])


def test_bags_hand_out_joint_states_and_transforms_decoded_from_their_bytes(tmp_path):
    rng = np.random.default_rng(5)
    messages = [joint_state(rng, ["slide", "finger"], (2, 2, 0)) for _ in range(4)]
    transforms = tf_message(rng, 3)
    with BagWriter(tmp_path / "bag") as writer:
        writer.add_topic("/joint_states", JOINT_STATE)
        writer.add_topic("/tf", TF_MESSAGE)
        for k, msg in enumerate(messages):
            writer.write("/joint_states", k, msg)
        writer.write("/tf", 9, transforms)
    with BagReader(tmp_path / "bag") as reader:
        read = [msg for _, _, msg in reader]
    for decoded, msg in zip(read[:4], messages, strict=True):
        assert_same(decoded, msg)
    assert isinstance(read[4], WireMessage) and read[4].message == transforms


def tf_message(rng, n):
    items = []
    for k in range(n):
        stamp = new_message("builtin_interfaces/msg/Time", sec=int(rng.integers(-2**31, 2**31)),
                            nanosec=int(rng.integers(0, 10**9)))
        frames = ["".join(rng.choice(list("abl_/é0"), size=int(rng.integers(0, 10)))) for _ in range(2)]
        t, q = rng.standard_normal(3), rng.standard_normal(4)
        items.append(new_message(
            "geometry_msgs/msg/TransformStamped",
            header=new_message("std_msgs/msg/Header", stamp=stamp, frame_id=frames[0]), child_frame_id=frames[1],
            transform=new_message("geometry_msgs/msg/Transform",
                                  translation=new_message("geometry_msgs/msg/Vector3", x=t[0], y=t[1], z=t[2]),
                                  rotation=new_message("geometry_msgs/msg/Quaternion", x=q[0], y=q[1], z=q[2],
                                                       w=q[3]))))
    return new_message(TF_MESSAGE, transforms=items)


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_tf_messages_decode_like_rosbags(n):
    rng = np.random.default_rng(n)
    decoder = TFMessageDecoder()
    for _ in range(5):
        data = serialize_cdr(tf_message(rng, n))
        decoded = decoder.decode(data)
        expected = deserialize_cdr(data, TF_MESSAGE)
        assert isinstance(decoded, WireMessage) and serialize_cdr(decoded) == data
        assert decoded.message == expected  # dataclass equality: every stamp, frame and float
    assert decoder.decode(b"\x00\x00\x00\x00" + data[4:]) is None
    if n:
        with pytest.raises(ValueError, match="end inside the message"):
            decoder.decode(data[:-8])


@pytest.mark.parametrize("sizes", [(0, 0, 0), (3, 0, 0), (3, 3, 3)])
def test_joint_state_samples_from_decoded_messages_equal_those_of_rosbags_objects(sizes):
    rng = np.random.default_rng(sum(sizes))
    decoder = JointStateDecoder()
    for names in (["a", "bb", "c"][:max(sizes)], ["a", "bb", "c"][:max(sizes)], ["x", "y", "z"][:max(sizes)]):
        data = serialize_cdr(joint_state(rng, names, sizes))
        decoded, expected = decoder.decode(data), deserialize_cdr(data, JOINT_STATE)
        assert joint_state_stamp_ns(decoded) == joint_state_stamp_ns(expected)
        got, want = decode_joint_state(decoded), decode_joint_state(expected)
        assert got.stamp == want.stamp and got.names == want.names and type(got.names) is tuple
        assert got.position.dtype == np.float64 and got.position.tobytes() == want.position.tobytes()
        assert (got.velocity is None) == (want.velocity is None)
        if got.velocity is not None:
            assert got.velocity.dtype == np.float64 and got.velocity.tobytes() == want.velocity.tobytes()


@pytest.mark.parametrize("n", [0, 1, 3, 7])
def test_tf_samples_from_decoded_records_equal_those_of_rosbags_objects(n):
    rng = np.random.default_rng(10 + n)
    for _ in range(5):
        data = serialize_cdr(tf_message(rng, n))
        decoded = TFMessageDecoder().decode(data)
        expected = deserialize_cdr(data, TF_MESSAGE)
        samples = decode_tf_message(decoded)
        assert tf_transform_count(decoded) == tf_transform_count(expected) == n
        assert tf_stamps_ns(decoded) == tf_stamps_ns(expected)
        assert object.__getattribute__(decoded, "_transforms") is None  # the node's reads built no objects
        for got, want in zip(samples, decode_tf_message(expected), strict=True):
            assert got[:3] == want[:3]  # frames (leading '/' dropped) and stamp, bit for bit
            for a, b in zip(got[3:], want[3:]):
                assert a.dtype == b.dtype == np.float64 and a.tobytes() == b.tobytes()
        assert decoded.transforms == expected.transforms


def test_decoded_fields_are_plain_attributes_and_others_are_missing():
    msg = joint_state(np.random.default_rng(1), ["a", "b"], (2, 2, 0))
    decoded = JointStateDecoder().decode(serialize_cdr(msg))
    for field in ("header", "name", "position", "velocity", "effort"):
        assert object.__getattribute__(decoded, field) is getattr(decoded, field)  # no field look-up behind it
    assert decoded.message.name == ["a", "b"]
    np.testing.assert_array_equal(decoded.message.position, msg.position)
    with pytest.raises(AttributeError, match="JointState message has no field 'transforms'"):
        decoded.transforms
    tf = TFMessageDecoder().decode(serialize_cdr(new_message(TF_MESSAGE, transforms=[])))
    assert tf.transforms == []
    with pytest.raises(AttributeError, match="TFMessage message has no field 'name'"):
        tf.name


def test_tf_decoder_reuses_the_layouts_of_recent_frames_and_walks_other_bytes():
    rng = np.random.default_rng(7)
    decoder = TFMessageDecoder()

    def message(frames, seed):
        msg = tf_message(np.random.default_rng(seed), len(frames))
        for tr, (parent, child) in zip(msg.transforms, frames):
            tr.header.frame_id, tr.child_frame_id = parent, child
        return serialize_cdr(msg)

    robot = [("world", "base"), ("base", "finger_1"), ("/base", "finger_2")]
    other = [("world", "base"), ("base", "finger_1"), ("/base", "finger_3")]  # other bytes, the same lengths
    longer = [("world", "base"), ("base", "finger_11"), ("/base", "finger_2")]
    seen = []
    for frames in (robot, robot, other, robot, other, robot[:2], longer, [("odom", "cam")], robot, other):
        data = message(frames, int(rng.integers(1 << 30)))
        decoded = decoder.decode(data)
        assert decoded.message == deserialize_cdr(data, TF_MESSAGE)  # every stamp, frame and float
        assert decoded.frames == tuple(frames) and decoded.values.shape == (len(frames), 7)
        assert decoded.parents == tuple(p.lstrip("/") for p, _ in frames)  # TF names: tf2 drops a leading '/'
        assert decoded.children == tuple(c for _, c in frames)
        seen.append(object.__getattribute__(decoder, "_layouts")[0])
    # the layout of robot is made once and reused while it is one of the latest TF_LAYOUTS_KEPT (4); that of other
    # too, until four other layouts came after it
    assert [seen[k] is seen[0] for k in (1, 3, 8)] == [True, True, False] and seen[4] is seen[2]
    assert seen[9] is not seen[2] and len(object.__getattribute__(decoder, "_layouts")) == TF_LAYOUTS_KEPT
    with pytest.raises(ValueError, match="end inside the message"):
        decoder.decode(data[:-8])  # a kept layout fits the frames, the bytes end early
