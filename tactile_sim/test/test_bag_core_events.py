"""Inputs read a block at a time for a core (``BagInputs.core_blocks``, ``decode_block``): every decoded row against
rosbags' deserialiser (the independent truth), rows only where the bytes share the first message's layout; the events
and the samples a core gets equal those of the message-by-message reading (``BagInputs.events``) for mixed layouts,
out-of-order transforms, a time reset and block edges anywhere; a damaged bag stops after the same inputs with the same
error; a batched replay of recordings with out-of-order transforms and joint states, one with a time reset and one
with a forward jump (those two replayed alone) equals each one replayed alone."""

import math

import numpy as np
import pytest

from helpers_offline import write_bag
from helpers_ros import tf_msg
from tactile_sim.io.input_cdr import JOINT_STATE, TF_MESSAGE, JointStateDecoder, JointStateRow, TFMessageDecoder, TFRow
from tactile_sim.io.msg_types import deserialize_cdr, new_message, serialize_cdr
from tactile_sim.offline import bag_inputs
from tactile_sim.offline.bag_inputs import BagInputError, BagInputs, open_bag
from tactile_sim.offline.run_loop import InputEvent, input_handlers
from tactile_sim.ros.inputs import decode_joint_state, decode_tf_batch
from test_cli_replay import IDENTITY, closing, joints, ns, static_tf
from test_io_input_cdr import joint_state
from test_replay_batch import lone_replays, moving_base
from test_replay_corpus import alone, corpus


def tf_message(rng, frames, stamp_sec):
    items = [("/" + p if k % 2 else p, c, rng.standard_normal(3), q / np.linalg.norm(q), stamp_sec + 0.001 * k)
             for k, ((p, c), q) in enumerate(zip(frames, rng.standard_normal((len(frames), 4))))]
    return tf_msg(*items)


def test_joint_state_rows_equal_rosbags_where_the_layout_is_the_first_ones():
    rng = np.random.default_rng(3)
    msgs = [joint_state(rng, ["a", "bb", "c"], (3, 3, 0)) for _ in range(5)]
    msgs += [joint_state(rng, ["a", "bx", "c"], (3, 3, 0)),  # same size, other names
             joint_state(rng, ["a", "bb", "c"], (4, 2, 0)),  # same size, other counts
             joint_state(rng, ["a", "bb", "c"], (3, 3, 0), frame="odom")]  # same size, other frame
    datas = [bytes(serialize_cdr(m, JOINT_STATE)) for m in msgs]
    assert len({len(d) for d in datas}) == 1
    rows = JointStateDecoder().decode_block(datas)
    assert [r is None for r in rows] == [False] * 5 + [True] * 3
    for row, data in zip(rows[:5], datas):
        truth = deserialize_cdr(data, JOINT_STATE)
        assert row.stamp_ns == truth.header.stamp.sec * 10**9 + truth.header.stamp.nanosec
        assert row.names == tuple(truth.name)
        assert row.position.tobytes() == truth.position.tobytes() and row.velocity.tobytes() == truth.velocity.tobytes()


def test_joint_state_rows_say_whether_every_value_is_finite_and_samples_keep_it():
    rng = np.random.default_rng(4)
    msgs = [joint_state(rng, ["a", "bb", "c"], (3, 3, 0)) for _ in range(5)]
    msgs[2].position[1], msgs[3].velocity[2] = np.nan, -np.inf
    rows = JointStateDecoder().decode_block([bytes(serialize_cdr(m, JOINT_STATE)) for m in msgs])
    truth = [bool(np.isfinite(m.position).all() and np.isfinite(m.velocity).all()) for m in msgs]
    assert [r.finite for r in rows] == truth == [True, True, False, False, True]
    assert [decode_joint_state(r).finite for r in rows] == truth


@pytest.mark.parametrize("n", [0, 1, 3])
def test_tf_rows_equal_rosbags_where_the_frames_are_the_first_ones(n):
    rng = np.random.default_rng(n)
    frames = [("world", "base"), ("base", "tool"), ("tool", "cam")][:n]
    msgs = [tf_message(rng, frames, 100.0 * k - 50.0) for k in range(4)]
    if n:
        msgs.append(tf_message(rng, [("world", "basx")] + frames[1:], 7.0))  # same size, another child
    datas = [bytes(serialize_cdr(m, TF_MESSAGE)) for m in msgs]
    rows = TFMessageDecoder().decode_block(datas)
    assert [r is None for r in rows] == [False] * 4 + [True] * (len(msgs) - 4)
    for row, data in zip(rows[:4], datas):
        truth = deserialize_cdr(data, TF_MESSAGE)
        assert row.stamps_ns == [t.header.stamp.sec * 10**9 + t.header.stamp.nanosec for t in truth.transforms]
        assert row.parents == tuple(t.header.frame_id.lstrip("/") for t in truth.transforms)
        assert row.children == tuple(t.child_frame_id for t in truth.transforms)
        values = [(t.transform.translation.x, t.transform.translation.y, t.transform.translation.z,
                   t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z, t.transform.rotation.w)
                  for t in truth.transforms]
        assert row.values.tobytes() == np.array(values, dtype=np.float64).reshape(-1, 7).tobytes()


@pytest.mark.filterwarnings("error")
def test_tf_rows_of_a_block_of_mixed_layouts_are_decoded_without_a_floating_point_warning():
    # the bytes of another layout read as the first one's values can be any double; a huge one overflows squared
    rng = np.random.default_rng(5)
    frames = [("base_link", "palm"), ("palm", "finger_left"), ("palm", "finger_right"),
              ("finger_left", "fingertip_left"), ("world", "camera"), ("finger_right", "fingertip_right")]
    swapped = frames[:3] + [frames[4], frames[3], frames[5]]
    msgs = [tf_message(rng, frames, 1.0 + k) for k in range(3)] + [tf_message(rng, swapped, 4.0 + k) for k in range(20)]
    datas = [bytes(serialize_cdr(m, TF_MESSAGE)) for m in msgs]
    assert len({len(d) for d in datas}) == 1
    rows = TFMessageDecoder().decode_block(datas)
    assert [r is None for r in rows] == [False] * 3 + [True] * 20
    for row, msg in zip(rows[:3], msgs):
        quats = [np.array([t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z,
                           t.transform.rotation.w]) for t in msg.transforms]
        assert row.norms == [math.sqrt(float(q.dot(q))) for q in quats]  # check_quaternion's norm


def test_tf_rows_carry_the_norms_that_check_quaternion_divides_by_when_every_value_is_finite():
    rng = np.random.default_rng(9)
    frames = [("world", "base"), ("base", "tool"), ("tool", "cam")]
    msgs = [tf_message(rng, frames, 1.0 + k) for k in range(5)]
    msgs[2].transforms[1].transform.translation.x = float("nan")
    msgs[3].transforms[2].transform.rotation.w = float("inf")
    rows = TFMessageDecoder().decode_block([bytes(serialize_cdr(m, TF_MESSAGE)) for m in msgs])
    assert [r.norms is None for r in rows] == [False, False, True, True, False]
    for row, msg in zip(rows, msgs):
        if row.norms is not None:
            quats = [np.array([t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z,
                               t.transform.rotation.w]) for t in msg.transforms]
            assert row.norms == [math.sqrt(float(q.dot(q))) for q in quats]  # check_quaternion's norm


EXTREME_STAMPS = [(-2**31, 0), (-2**31, 10**9 - 1), (-1, 999_999_999), (0, 0), (2**31 - 1, 10**9 - 1),
                  (1_700_000_000, 123_456_789)]
"""(sec, nanosec) at the ends of builtin_interfaces/Time's range and between."""


def stamped(msg, stamps):
    """``msg`` with the header stamps (sec, nanosec) of ``stamps`` (one for a joint state, one per transform)."""
    heads = [t.header for t in msg.transforms] if msg.__msgtype__ == TF_MESSAGE else [msg.header]
    for head, (sec, nanosec) in zip(heads, stamps, strict=True):
        head.stamp = new_message("builtin_interfaces/msg/Time", sec=sec, nanosec=nanosec)
    return msg


def test_block_row_stamps_are_exact_integers_across_the_whole_time_range():
    rng = np.random.default_rng(11)
    exact = [sec * 10**9 + nanosec for sec, nanosec in EXTREME_STAMPS]  # Python integers: no overflow, no rounding
    joint_states = [stamped(joint_state(rng, ["a", "bb"], (2, 2, 0)), [s]) for s in EXTREME_STAMPS]
    rows = JointStateDecoder().decode_block([bytes(serialize_cdr(m, JOINT_STATE)) for m in joint_states])
    assert [r.stamp_ns for r in rows] == exact and all(type(r.stamp_ns) is int for r in rows)
    frames = [("world", "base"), ("base", "tool")]
    shifted = EXTREME_STAMPS[1:] + EXTREME_STAMPS[:1]  # each message's two transforms carry different stamps
    transforms = [stamped(tf_message(rng, frames, 0.0), pair) for pair in zip(EXTREME_STAMPS, shifted)]
    rows = TFMessageDecoder().decode_block([bytes(serialize_cdr(m, TF_MESSAGE)) for m in transforms])
    assert [r.stamps_ns for r in rows] == [list(pair) for pair in zip(exact, exact[1:] + exact[:1])]
    assert all(type(ns) is int for r in rows for ns in r.stamps_ns)


def mixed_recording(folder, storage="mcap"):
    """Joint states of two name sets (one without velocities), transforms of changing frames with out-of-order
    stamps and receive times, a static transform and a time reset."""
    rng = np.random.default_rng(5)
    items = [static_tf()]
    for k in range(40):
        t, receive = (10.0 if k < 25 else 0.0) + 0.01 * k, 20.0 + 0.01 * k  # stamps start again at k = 25
        names = ("finger_left_joint", "finger_right_joint") if k % 7 == 3 else None
        items.append(joints(t, [0.0, 0.01 * k, 0.02], receive=receive, **({"names": names} if names else {}),
                            **({"velocity": ()} if k % 5 == 1 else {})))
        frames = [("world", "base_link"), ("base_link", "cam")][:1 + (k % 3 == 0)]
        late = 0.03 if k % 4 == 2 else 0.0  # stamped before the previous message's
        items.append(("/tf", ns(receive + 0.001), tf_message(rng, frames, t - late)))
    return write_bag(folder, items, storage)


def samples(event):
    """What a core gets of ``event``: (kind, topic, log_ns, clock_ns) and the sample's numbers as bytes."""
    head = (event.kind, event.topic, event.log_ns, event.clock_ns)
    if event.kind == "joint_states":
        s = decode_joint_state(event.message)
        return head + (s.stamp, s.names, s.position.tobytes(), None if s.velocity is None else s.velocity.tobytes())
    if event.kind in ("tf", "tf_static"):
        b = decode_tf_batch(event.message)
        return head + (tuple(b.parents), tuple(b.children), tuple(b.stamps), b.values.tobytes())
    return head + (event.message.data,)


@pytest.mark.parametrize("block", [1, 3, 256])
@pytest.mark.parametrize("clock", ["header", "receive"])
@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_core_blocks_give_a_core_what_events_give_it(tmp_path, monkeypatch, block, clock, storage):
    bag = mixed_recording(tmp_path / "rec", storage)
    monkeypatch.setattr(bag_inputs, "INPUT_BLOCK", block)
    with open_bag(bag) as reader:
        expected = [samples(e) for e in BagInputs(reader, clock=clock).events()]
    with open_bag(bag) as reader:
        blocks = list(BagInputs(reader, clock=clock).core_blocks())
        events = [InputEvent(*e) for b in blocks for e in b]
        got = [samples(e) for e in events]
    assert [len(b) for b in blocks] == [min(block, 81 - k) for k in range(0, 81, block)]
    assert len(expected) == 81 and got == expected
    rows = [type(e.message) for e in events if type(e.message) in (JointStateRow, TFRow)]
    assert rows.count(JointStateRow) == 40 and rows.count(TFRow) == 41  # every one decoded in a block


def damaged_bag(path, first, joint_states):
    """A bag of the items ``first`` and then ``joint_states`` (one every 10 ms), each followed by padding (several
    1 MiB MCAP chunks), the middle tenth of its data file overwritten."""
    padding = new_message("std_msgs/msg/String", data="x" * 10_000)
    items = list(first)
    for k, item in enumerate(joint_states):
        items += [item, ("/padding", ns(0.01 * k), padding)]
    bag = write_bag(path, items)
    data_file = next(bag.glob("*.mcap"))
    data = bytearray(data_file.read_bytes())
    data[int(0.55 * len(data)):int(0.65 * len(data))] = b"\xab" * (int(0.65 * len(data)) - int(0.55 * len(data)))
    data_file.write_bytes(bytes(data))
    return bag


def test_a_damaged_bag_stops_core_blocks_after_the_same_inputs_with_the_same_error(tmp_path):
    bag = damaged_bag(tmp_path / "damaged", [static_tf()], [joints(0.01 * k, [0.0, 0.02, 0.02]) for k in range(400)])
    outcomes = []
    for read in (BagInputs.events, lambda inputs: (InputEvent(*e) for b in inputs.core_blocks() for e in b)):
        got = []
        with open_bag(bag) as reader, pytest.raises(BagInputError) as error:
            for event in read(BagInputs(reader)):
                got.append(samples(event))
        outcomes.append((got, str(error.value)))
    assert outcomes[0] == outcomes[1] and 0 < len(outcomes[0][0]) < 400


def out_of_order(t0, speed, shift=0.0):
    """Joint states and /tf of the base moving at ``speed`` from t0 (s), received ``shift`` s after their stamps, with
    three transforms and one joint state received after the next one (stamps out of order, a clock step back)."""
    items = sorted(closing(t0, 21, t0) + moving_base(t0, 21, speed, 1), key=lambda item: item[1])
    items = [(topic, receive + ns(shift), msg) for topic, receive, msg in items]
    tf_at = [i for i, item in enumerate(items) if item[0] == "/tf"]
    js_at = [i for i, item in enumerate(items) if item[0] == "/joint_states"]
    for i in tf_at[3:18:5] + [js_at[10]]:
        j = next(k for k in tf_at + js_at if k > i and items[k][0] == items[i][0])
        (ti, ri, mi), (tj, rj, mj) = items[i], items[j]
        items[i], items[j] = (tj, ri, mj), (ti, rj, mi)
    return items


def test_batched_recordings_with_out_of_order_inputs_equal_their_lone_replays(tmp_path, monkeypatch):
    recordings = {"a": out_of_order(1.0, 0.004), "b": out_of_order(3.0, -0.006), "c": out_of_order(5.0, 0.01),
                  "reset": out_of_order(2.0, 0.004) + out_of_order(0.5, 0.008, shift=1.8),  # stamps start again
                  "gap": out_of_order(1.0, 0.004) + out_of_order(40.0, 0.008)}  # stamps jump 39 s ahead
    cam = tf_msg(("world", "cam", (0.0, 0.0, 1.0), IDENTITY, 0.0))
    for name, items in recordings.items():
        write_bag(tmp_path / "recs" / name, [("/tf_static", 0, cam)] + items)
    went_alone = lone_replays(monkeypatch)
    status, _, err = corpus(tmp_path, tmp_path / "recs", extra=("--batch", "5", "--gap-threshold", "5"))
    assert status == 0, err
    assert sorted(went_alone) == ["gap", "reset"]  # their time lines restart: replayed alone, as the batch does
    for name in recordings:
        alone(tmp_path, tmp_path / "recs" / name, f"alone/{name}.mcap")
        assert (tmp_path / "out" / name / f"{name}.mcap").read_bytes() == \
            (tmp_path / "alone" / name / f"{name}.mcap").read_bytes(), name


def test_input_handlers_give_each_kind_to_its_core_method_and_refuse_other_kinds():
    calls = []

    class Core:
        def on_joint_state(self, sample):
            calls.append(("joint_state", sample.names))

        def on_tf_message(self, msg, static=False):
            calls.append(("tf", static))

        def set_robot_description(self, text):
            calls.append(("description", text))

    handlers = input_handlers(Core())
    rng = np.random.default_rng(1)
    handlers["joint_states"](joint_state(rng, ["a", "b"], (2, 0, 0)))
    handlers["tf"](None)
    handlers["tf_static"](None)
    handlers["robot_description"](new_message("std_msgs/msg/String", data="<robot/>"))
    assert calls == [("joint_state", ("a", "b")), ("tf", False), ("tf", True), ("description", "<robot/>")]
    with pytest.raises(ValueError, match="unknown input kind 'odometry'"):
        handlers["odometry"]
