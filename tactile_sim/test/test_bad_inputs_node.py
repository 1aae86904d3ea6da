"""Floods of bad inputs into the node core cost bounded text, memory and work: a joint state with a million unknown
names logs one short line ("… and N more"), diagnostics report a count and a bounded sample however many distinct
names arrive, the names are not kept after the message (traced memory back to its baseline), and a TF message with
more transforms than the cap is dropped whole and counted (at the cap it is stored)."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

from helpers_ros import JOINT_NAMES, LogRecorder, demo_core, ns, tf_msg
from tactile_sim.io.msg_types import serialize_cdr
from tactile_sim.ros.inputs import JointStateSample
from tactile_sim.ros.name_tally import NAME_CHARS, NAMES_SHOWN, TRACKED_NAMES, NameTally, listed
from tactile_sim.ros.node_core import MAX_TRANSFORMS_PER_MESSAGE

Q = [0.0, 0.01, 0.01]


def flood(n: int, prefix: str = "ghost") -> JointStateSample:
    """The robot's joints followed by n unknown names."""
    names = tuple(JOINT_NAMES) + tuple(f"{prefix}_{k}" for k in range(n))
    return JointStateSample(0.0, names, np.concatenate([Q, np.zeros(n)]))


def diag_values(core) -> dict[str, str]:
    return {kv.key: kv.value for kv in core.diagnostics(ns(1.0)).status[0].values}


def test_listed_shows_a_few_names_and_counts_the_rest():
    assert listed(["a", "b"]) == "['a', 'b']"
    assert listed([f"n{k}" for k in range(8)]) == "['n0', 'n1', 'n2', 'n3', 'n4'] … and 3 more"
    assert listed(["a"], total=10**6) == "['a'] … and 999999 more"
    long = listed(["x" * 10_000])
    assert len(long) <= NAME_CHARS + 2 and long.endswith("...']")


def test_a_million_unknown_names_log_one_short_line_and_the_joints_still_apply():
    log = LogRecorder()
    core = demo_core(log=log)
    assert core.on_joint_state(flood(10**6))
    (_, line), = log.matching("ignoring joint names")
    assert "'ghost_0', 'ghost_1', 'ghost_2', 'ghost_3', 'ghost_4'] … and 999995 more" in line
    assert len(line) < 1000
    values = diag_values(core)
    assert values["ignored_joint_names_count"] == f"{TRACKED_NAMES}+"
    assert values["ignored_joint_names"].startswith("['ghost_0', ") and len(values["ignored_joint_names"]) < 500


def test_diagnostics_count_distinct_names_exactly_below_the_tracking_cap():
    core = demo_core()
    for k in range(30):  # 30 messages, 100 names each, half of them repeated from the message before
        names = tuple(JOINT_NAMES) + tuple(f"n{j}" for j in range(50 * k, 50 * k + 100))
        core.on_joint_state(JointStateSample(0.0, names, np.zeros(len(names))))
    values = diag_values(core)
    assert values["ignored_joint_names_count"] == str(50 * 29 + 100)
    assert values["ignored_joint_names"] == "['n0', 'n1', 'n2', 'n3', 'n4'] … and 1545 more"


def test_the_diagnostics_message_stays_small_after_200000_distinct_names():
    core = demo_core()
    for k in range(200):
        core.on_joint_state(flood(1000, prefix=f"g{k}"))
    size = len(serialize_cdr(core.diagnostics(ns(1.0))))
    assert size < 5000, size


def test_name_tally_memory_is_bounded():
    tally = NameTally()
    tally.add(f"{k}{'y' * 1000}" for k in range(TRACKED_NAMES + 10))
    assert len(tally) <= TRACKED_NAMES and tally.saturated
    assert all(len(name) <= NAME_CHARS for name in tally._seen)
    assert len(tally._first) == NAMES_SHOWN


def test_traced_memory_returns_to_its_baseline_after_a_flood():
    core = demo_core()
    core.on_joint_state(flood(10))  # warm the caches with a small message
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        sample = flood(200_000)
        core.on_joint_state(sample)
        del sample
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert kept < 2_000_000, kept  # the 200 000 names (> 12 MB as Python strings) are gone


def identity_tf(n: int, stamp: float = 0.0):
    return tf_msg(*[("world", f"frame_{k}", (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), stamp) for k in range(n)])


def test_a_tf_message_over_the_cap_is_dropped_whole_and_counted():
    log = LogRecorder()
    core = demo_core(log=log)
    assert core.on_tf_message(identity_tf(MAX_TRANSFORMS_PER_MESSAGE + 1)) == 0
    assert core.stats.dropped["tf.too_many_transforms"] == 1
    assert not core.tf.has_frame("frame_0")
    assert log.matching(f"dropped a TF message with {MAX_TRANSFORMS_PER_MESSAGE + 1} transforms")
    assert diag_values(core)["dropped.tf.too_many_transforms"] == "1"
    assert core.on_tf_message(identity_tf(MAX_TRANSFORMS_PER_MESSAGE)) == MAX_TRANSFORMS_PER_MESSAGE
    assert core.tf.has_frame(f"frame_{MAX_TRANSFORMS_PER_MESSAGE - 1}")


def test_bounded_lines_for_the_other_joint_state_drops():
    log = LogRecorder()
    core = demo_core(log=log)
    n = 100_000
    names = tuple(f"j{k}" for k in range(n))
    core.on_joint_state(JointStateSample(0.0, names, np.zeros(n + 1)))
    core.on_joint_state(JointStateSample(0.0, names + ("j0",), np.zeros(n + 1)))
    core.on_joint_state(JointStateSample(0.0, names, np.full(n, np.nan)))
    assert [core.stats.dropped[r] for r in ("joint_states.length_mismatch", "joint_states.duplicate_names",
                                             "joint_states.non_finite")] == [1, 1, 1]
    assert len(log.lines) >= 3 and all(len(text) < 1000 for _, text in log.lines)
    assert any("… and 99995 more" in text for _, text in log.lines)


def test_tf_bytes_over_the_cap_are_dropped_without_decoding(monkeypatch):
    core = demo_core()
    monkeypatch.setattr(core._tf_decoder, "decode", lambda data: pytest.fail("decoded an oversized message"))
    assert core.on_tf_cdr(serialize_cdr(identity_tf(MAX_TRANSFORMS_PER_MESSAGE + 1))) == 0
    assert core.stats.dropped["tf.too_many_transforms"] == 1


def test_tf_bytes_within_the_cap_are_stored_as_the_decoded_message_is():
    by_bytes, by_message = demo_core(), demo_core()
    msg = identity_tf(3, stamp=0.5)
    assert by_bytes.on_tf_cdr(serialize_cdr(msg)) == by_message.on_tf_message(msg) == 3
    assert by_bytes.tf_frames() == by_message.tf_frames()
    assert by_bytes.tf.has_frame("frame_2")
    assert by_bytes.on_tf_cdr(serialize_cdr(msg)[:20]) == 0  # cut short
    assert by_bytes.stats.dropped["tf.invalid_cdr"] == 1


def test_new_frames_beyond_the_buffer_cap_are_dropped_and_counted():
    core = demo_core()
    core.tf.max_frames = 3  # the demo's world -> base_link edge, then room for 2 more
    assert core.on_tf_message(identity_tf(5)) == 2
    assert [f for f in core.tf.frames if core.tf.parent(f) is not None] == ["base_link", "frame_0", "frame_1"]
    assert core.stats.dropped["tf.too_many_frames"] == 3
    assert core.on_tf_message(identity_tf(1, stamp=1.0)) == 1  # a known frame still updates


def test_a_dynamic_edge_keeps_at_most_max_samples():
    from tactile_sim.world.tf_buffer import TFBuffer

    tf = TFBuffer(cache_time=1e9, max_samples=100)
    for k in range(1000):
        tf.set_transform("world", "x", (k, 0.0, 0.0), float(k), quat=(0.0, 0.0, 0.0, 1.0))
    assert tf.lookup("world", "x", 950.5).trans[0] == pytest.approx(950.5)  # interpolated in the kept span
    assert not tf.can_transform("world", "x", 899.0)  # older than the 100 kept samples
    with pytest.raises(ValueError, match="max_samples and max_frames must be >= 2"):
        TFBuffer(max_samples=1)


def test_log_lines_are_cut_whatever_the_input_names():
    from tactile_sim.ros.throttled_log import MAX_LINE_CHARS

    log = LogRecorder()
    core = demo_core(log=log)
    core.on_tf_message(tf_msg(("world", "w" * 100_000, (0.0, 0.0, float("nan")), (0.0, 0.0, 0.0, 1.0), 0.0)))
    (_, line), = log.matching("dropped a transform")
    assert len(line) <= MAX_LINE_CHARS + 40 and line.endswith("more characters)")
