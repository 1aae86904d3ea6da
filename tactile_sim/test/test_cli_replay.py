"""``tactile-sim replay``: the demo's bag replayed with the demo configuration reproduces its sensor messages byte for
byte; gaps are held, unknown joints ignored and counted, a backwards time jump restarts the sensors (the new time
line equals a fresh replay of it), small reordering is tolerated; bad, unstamped, damaged and partial bags give a
clear error or a counted skip; sqlite3 in and out; the robot description from the bag."""

import numpy as np
import pytest
import yaml

from helpers_offline import (
    DEMO_RATE,
    NODE,
    demo_bag,
    demo_config,
    demo_run,
    force_rows,
    read_bag,
    run_cli,
    write_bag,
)
from helpers_ros import joint_state_msg, pad_contact_truth, tf_msg
from tactile_sim.constants import EPS_D
from tactile_sim.demo_trajectory import DEMO_CONFIG, DEMO_URDF, JOINT_NAMES, OPEN, SQUEEZE
from tactile_sim.errors import ConfigError
from tactile_sim.io.msg_types import new_message
from tactile_sim.io.stamps import time_msg_to_ns
from tactile_sim.offline.bag_inputs import BagInputError
from tactile_sim.offline.replay import replay_bag

PADS = ("pad_left", "pad_right")
STIFFNESS = 500.0
PROBE_RADIUS = 0.0005
IDENTITY = (0.0, 0.0, 0.0, 1.0)


def ns(t: float) -> int:
    return round(t * 1e9)


def static_tf(stamp_ns: int = 0):
    return ("/tf_static", stamp_ns, tf_msg(("world", "base_link", (0.0, 0.0, 0.0), IDENTITY, 0.0)))


def joints(t: float, q, names=JOINT_NAMES, receive: float | None = None, velocity=(0.0, 0.0, 0.0)):
    """A /joint_states item stamped t (s), received at ``receive`` (default t)."""
    position = list(q) if len(q) == len(names) else [0.0, q[1], q[2]] + [0.3] * (len(names) - 3)
    vel = list(velocity) + [0.0] * (len(names) - 3)
    return ("/joint_states", ns(t if receive is None else receive),
            joint_state_msg(position, vel, names=names, stamp=t))


def pads_yaml(tmp_path, seed: int = 7, names=PADS, robot: bool = True):
    """The demo YAML with only the named sensors (and robot unless robot=False), written to tmp_path."""
    from tactile_sim.config.paths import resolve_package_uri

    data = yaml.safe_load(resolve_package_uri(DEMO_CONFIG).read_text())
    data["sensors"] = [s for s in data["sensors"] if s["name"] in names]
    data["suite"]["seed"] = seed
    if not robot:
        del data["robot"]
    path = tmp_path / f"sensors_{seed}_{len(names)}_{robot}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def replay(tmp_path, bag, config, *extra, out="out.mcap"):
    status, stdout, stderr = run_cli("replay", str(bag), "--config", str(config), "-o", str(tmp_path / out),
                                     "--no-progress", *extra)
    return status, stdout, stderr


def raw(topics, topic):
    return [data for _, data, _ in topics[topic]]


# ------------------------------------------------------------------ determinism
def test_replaying_the_demo_bag_reproduces_its_sensor_messages_bit_for_bit(tmp_path):
    assert demo_run()[0] == 0
    status, out, err = replay(tmp_path, demo_bag(), DEMO_CONFIG, "--rate", str(DEMO_RATE))
    assert status == 0, err
    original, replayed = read_bag(demo_bag()), read_bag(tmp_path / "out")
    sensor_topics = {t for t in original if t.startswith(NODE) and t != f"{NODE}/markers"}
    assert set(replayed) == sensor_topics  # inputs are not copied by default, markers only on request
    for topic in sensor_topics:
        assert raw(replayed, topic) == raw(original, topic), topic
        assert [s for s, _, _ in replayed[topic]] == [s for s, _, _ in original[topic]], topic
    assert f"50 steps at {DEMO_RATE:g} Hz" in out


def test_the_same_seed_repeats_the_noise_and_another_seed_changes_it(tmp_path):
    bag = write_bag(tmp_path / "in", [static_tf()] + [joints(0.01 * k, [0.0, SQUEEZE, SQUEEZE]) for k in range(5)])
    runs = {}
    for label, seed in (("a", 7), ("b", 7), ("c", 8)):
        assert replay(tmp_path, bag, pads_yaml(tmp_path, seed), "--rate", "100", out=f"{label}.mcap")[0] == 0
        runs[label] = read_bag(tmp_path / label)
    for pad in PADS:
        topic = f"{NODE}/{pad}"
        assert raw(runs["a"], topic) == raw(runs["b"], topic)
        assert all(x != y for x, y in zip(raw(runs["a"], topic), raw(runs["c"], topic)))


# ------------------------------------------------------------------ time line
def test_gaps_are_held_at_the_configured_rate(tmp_path):
    items = [static_tf()] + [joints(0.01 * k, [0.0, SQUEEZE, SQUEEZE]) for k in range(11)]  # 0 … 0.10 s
    items += [joints(0.5 + 0.01 * k, [0.0, OPEN, OPEN]) for k in range(11)]  # gap to 0.50 s, then open
    bag = write_bag(tmp_path / "gap", items)
    status, out, err = replay(tmp_path, bag, pads_yaml(tmp_path), "--rate", "100", "--ground-truth")
    assert status == 0, err
    assert "inputs paused for up to 0.400 s" in out
    topics = read_bag(tmp_path / "out")
    for pad in PADS:
        messages = [m for _, _, m in topics[f"{NODE}/{pad}/ground_truth"]]
        assert [time_msg_to_ns(m.header.stamp) for m in messages] == [10_000_000 * k for k in range(61)]
        for k, msg in enumerate(messages):
            q = SQUEEZE if k < 50 else OPEN  # the squeeze holds through the gap until the 0.50 s input
            sd, normal = pad_contact_truth(msg, [0.0, q, q])
            overlap = np.clip(PROBE_RADIUS - sd, 0.0, None)
            expected = np.where((overlap > EPS_D)[:, None], STIFFNESS * overlap[:, None] * normal, 0.0)
            np.testing.assert_allclose(force_rows(msg), expected, atol=2e-4, err_msg=f"{pad} tick {k}")
        assert len({bytes(np.asarray(m.force).tobytes()) for m in messages[10:50]}) == 1  # held exactly


def test_unknown_joints_are_ignored_and_counted(tmp_path):
    q = [0.0, SQUEEZE, SQUEEZE]
    plain = write_bag(tmp_path / "plain", [static_tf()] + [joints(0.01 * k, q) for k in range(6)])
    names = JOINT_NAMES + ("elbow", "wrist")
    extra = write_bag(tmp_path / "extra", [static_tf()] + [joints(0.01 * k, q, names=names) for k in range(6)])
    config = pads_yaml(tmp_path)
    assert replay(tmp_path, plain, config, "--rate", "100", out="a.mcap")[0] == 0
    status, out, err = replay(tmp_path, extra, config, "--rate", "100", out="b.mcap")
    assert status == 0, err
    assert "joint_states.unknown_names 6" in out
    assert "ignoring joint names the robot does not have: ['elbow', 'wrist']" in err
    a, b = read_bag(tmp_path / "a"), read_bag(tmp_path / "b")
    for pad in PADS:
        assert raw(a, f"{NODE}/{pad}") == raw(b, f"{NODE}/{pad}")


def closing(t0: float, n: int, receive0: float):
    """n joint states from t0 at 100 Hz, received from receive0, fingers closing from touch to squeeze."""
    return [joints(t0 + 0.01 * k, [0.0, q, q], receive=receive0 + 0.01 * k)
            for k, q in enumerate(np.linspace(0.0205, SQUEEZE, n))]


def test_a_backwards_time_jump_restarts_the_sensors(tmp_path):
    first = closing(10.0, 21, 10.0)  # 10.00 … 10.20 s
    second = closing(0.0, 11, 10.3)  # the recording's clock restarts at 0 (a simulation reset), received later
    config = pads_yaml(tmp_path)
    status, out, err = replay(tmp_path, write_bag(tmp_path / "jump", [static_tf()] + first + second), config,
                              "--rate", "100")
    assert status == 0, err
    assert "time jumped backwards 1 time(s)" in out and "input time went backwards" in err
    fresh = write_bag(tmp_path / "second_only", [static_tf()] + second)
    assert replay(tmp_path, fresh, config, "--rate", "100", out="fresh.mcap")[0] == 0
    jumped, alone = read_bag(tmp_path / "out"), read_bag(tmp_path / "fresh")
    for pad in PADS:
        items = jumped[f"{NODE}/{pad}"]
        stamps = [time_msg_to_ns(m.header.stamp) for _, _, m in items]
        assert stamps == [ns(10.0) + 10_000_000 * k for k in range(21)] + [10_000_000 * k for k in range(11)]
        receive = [s for s, _, _ in items]
        assert receive == sorted(receive) and receive[21] >= ns(10.3)  # the bag keeps its recording order
        assert [d for _, d, _ in items[21:]] == raw(alone, f"{NODE}/{pad}")  # fresh sensors, same seed


def test_a_slightly_older_input_is_used_without_moving_the_clock(tmp_path):
    q = [0.0, SQUEEZE, SQUEEZE]
    items = [static_tf(), joints(0.0, q), joints(0.01, q), joints(0.008, q, receive=0.011), joints(0.02, q)]
    status, out, err = replay(tmp_path, write_bag(tmp_path / "jitter", items), pads_yaml(tmp_path), "--rate", "100")
    assert status == 0, err
    assert "1 clock input(s) slightly out of order" in out and "backwards" not in out
    stamps = [time_msg_to_ns(m.header.stamp) for _, _, m in read_bag(tmp_path / "out")[f"{NODE}/pad_left"]]
    assert stamps == [0, 10_000_000, 20_000_000]


def test_unstamped_joint_states_need_the_receive_clock(tmp_path):
    items = [static_tf(ns(1.0))]
    for k in range(5):
        topic, _, msg = joints(0.0, [0.0, SQUEEZE, SQUEEZE])
        items.append((topic, ns(1.0 + 0.01 * k), msg))  # header stamp 0, received at 1.00 … 1.04 s
    bag = write_bag(tmp_path / "unstamped", items)
    status, _, err = replay(tmp_path, bag, pads_yaml(tmp_path), "--rate", "100")
    assert status == 2 and "carry no header stamp (0); replay them with --clock receive" in err
    status, _, err = replay(tmp_path, bag, pads_yaml(tmp_path), "--rate", "100", "--clock", "receive",
                            out="receive.mcap")
    assert status == 0, err
    stamps = [time_msg_to_ns(m.header.stamp) for _, _, m in read_bag(tmp_path / "receive")[f"{NODE}/pad_left"]]
    assert stamps == [ns(1.0) + 10_000_000 * k for k in range(5)]


# ------------------------------------------------------------------ bad and partial bags
def test_bad_joint_states_are_skipped_and_counted(tmp_path):
    q = [0.0, SQUEEZE, SQUEEZE]
    items = [static_tf()] + [joints(0.01 * k, [0.0, float("nan"), SQUEEZE] if k in (2, 3) else q) for k in range(6)]
    status, out, err = replay(tmp_path, write_bag(tmp_path / "nan", items), pads_yaml(tmp_path), "--rate", "100")
    assert status == 0, err
    assert "joint_states.non_finite 2" in out
    assert len(read_bag(tmp_path / "out")[f"{NODE}/pad_left"]) == 6


def test_a_bag_without_inputs_names_its_topics(tmp_path):
    bag = write_bag(tmp_path / "chatter", [("/chatter", 0, new_message("std_msgs/msg/String", data="hi"))])
    status, _, err = replay(tmp_path, bag, pads_yaml(tmp_path))
    assert status == 2
    assert "neither joint states '/joint_states' nor transforms '/tf' are in the bag" in err
    assert "/chatter (std_msgs/msg/String)" in err


def test_an_input_topic_of_the_wrong_type_is_refused(tmp_path):
    bag = write_bag(tmp_path / "wrong", [("/joint_states", 0, new_message("std_msgs/msg/String", data="x"))])
    status, _, err = replay(tmp_path, bag, pads_yaml(tmp_path))
    assert status == 2
    assert "topic '/joint_states' has type std_msgs/msg/String" in err and "--joint-states-topic" in err


def test_input_topic_names_are_configurable(tmp_path):
    items = [static_tf()] + [joints(0.01 * k, [0.0, SQUEEZE, SQUEEZE]) for k in range(3)]
    items = [("/arm/joint_states" if t == "/joint_states" else t, s, m) for t, s, m in items]
    bag = write_bag(tmp_path / "arm_bag", items)
    assert replay(tmp_path, bag, pads_yaml(tmp_path), "--rate", "100")[0] == 2
    status, _, err = replay(tmp_path, bag, pads_yaml(tmp_path), "--rate", "100", "--joint-states-topic",
                            "/arm/joint_states", out="renamed.mcap")
    assert status == 0, err
    assert len(read_bag(tmp_path / "renamed")[f"{NODE}/pad_left"]) == 3


def test_a_damaged_bag_stops_with_the_last_good_time_and_keeps_what_it_wrote(tmp_path):
    q = [0.0, SQUEEZE, SQUEEZE]
    padding = new_message("std_msgs/msg/String", data="x" * 10_000)  # 4 MB: several 1 MiB MCAP chunks
    items = [static_tf()]
    for k in range(400):
        items += [joints(0.01 * k, q), ("/padding", ns(0.01 * k), padding)]
    bag = write_bag(tmp_path / "damaged", items)
    data_file = next(bag.glob("*.mcap"))
    data = bytearray(data_file.read_bytes())
    start, stop = int(0.55 * len(data)), int(0.65 * len(data))  # inside a chunk in the middle
    data[start:stop] = b"\xab" * (stop - start)
    data_file.write_bytes(bytes(data))
    status, out, err = replay(tmp_path, bag, pads_yaml(tmp_path, names=("pad_left",)), "--rate", "100")
    assert status == 1 and "reading stopped after" in err and "the output holds everything before that" in err
    written = read_bag(tmp_path / "out")[f"{NODE}/pad_left"]
    assert 0 < len(written) < 400


def test_a_file_cut_short_cannot_be_opened_and_says_so(tmp_path):
    bag = write_bag(tmp_path / "cut", [static_tf()] + [joints(0.01 * k, [0.0, OPEN, OPEN]) for k in range(50)])
    data_file = next(bag.glob("*.mcap"))
    data_file.write_bytes(data_file.read_bytes()[:-200])
    status, _, err = replay(tmp_path, data_file, pads_yaml(tmp_path))
    assert status == 2 and "cannot be opened as a rosbag2 bag" in err and "mcap recover" in err


@pytest.mark.parametrize("name, hint", [("arrays.npz", "replay's array output"), ("text.db3", None)])
def test_an_unreadable_file_gets_only_the_repair_hint_that_applies(tmp_path, name, hint):
    bad = tmp_path / name
    bad.write_bytes(b"PK\x03\x04 not a bag at all" * 4)
    status, _, err = replay(tmp_path, bad, pads_yaml(tmp_path))
    assert status == 2 and "cannot be opened as a rosbag2 bag" in err
    assert "mcap recover" not in err and "reindex" not in err
    assert hint is None or hint in err


def test_a_record_longer_than_memory_reads_as_a_damaged_file(tmp_path, monkeypatch):
    """rosbags reads a record's length before its bytes: a damaged length asks for more memory than there is."""
    from tactile_sim.offline import bag_inputs

    def too_long(path):
        raise MemoryError()

    bag = write_bag(tmp_path / "in", [static_tf(), joints(0.0, [0.0, OPEN, OPEN])])
    monkeypatch.setattr(bag_inputs, "BagReader", too_long)
    status, _, err = replay(tmp_path, bag, pads_yaml(tmp_path))
    assert status == 2 and "(a record claims more bytes than memory holds: the file is damaged)" in err, err


def test_a_missing_bag_and_an_existing_output_are_refused(tmp_path):
    status, _, err = replay(tmp_path, tmp_path / "nothing", pads_yaml(tmp_path))
    assert status == 2 and "not found" in err
    bag = write_bag(tmp_path / "in", [static_tf(), joints(0.0, [0.0, OPEN, OPEN])])
    assert replay(tmp_path, bag, pads_yaml(tmp_path))[0] == 0
    status, _, err = replay(tmp_path, bag, pads_yaml(tmp_path))
    assert status == 2 and "already exists" in err
    assert replay(tmp_path, bag, pads_yaml(tmp_path), "--overwrite")[0] == 0
    status, _, err = replay(tmp_path, bag, pads_yaml(tmp_path), "--overwrite", out="in")
    assert status == 2 and "would replace or write into the input bag" in err
    assert (bag / "metadata.yaml").is_file()
    status, _, err = replay(tmp_path, bag, pads_yaml(tmp_path), out="in/inner.mcap")
    assert status == 2 and "would replace or write into the input bag" in err and not (bag / "inner").exists()
    (tmp_path / "afile").write_text("")
    status, _, err = replay(tmp_path, bag, pads_yaml(tmp_path), out="afile/x.mcap")
    assert status == 2 and f"{str(tmp_path / 'afile')!r} is a file, not a folder" in err, err
    stopped = tmp_path / "stopped"  # what a run stopped before its end leaves: the data file, no metadata.yaml yet
    stopped.mkdir()
    (stopped / "stopped.mcap").write_bytes(b"\x89MCAP0\r\n")
    assert replay(tmp_path, bag, pads_yaml(tmp_path), "--overwrite", out="stopped.mcap")[0] == 0
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("not ours")
    status, _, err = replay(tmp_path, bag, pads_yaml(tmp_path), "--overwrite", out="other.mcap")
    assert status == 2 and "exists and is not a rosbag2 bag" in err and (tmp_path / "other" / "notes.txt").is_file()


@pytest.mark.parametrize("where", ["input", "output"])
def test_a_path_the_file_system_refuses_exits_2_naming_it(tmp_path, where):
    too_long = "y" * 300  # one name past the 255 bytes of a file system's names
    bag = write_bag(tmp_path / "in", [static_tf(), joints(0.0, [0.0, OPEN, OPEN])])
    inputs = (tmp_path / too_long, tmp_path / "out") if where == "input" else (bag, tmp_path / too_long)
    status, _, err = run_cli("replay", str(inputs[0]), "--config", str(pads_yaml(tmp_path)), "-o", str(inputs[1]),
                             "--no-progress")
    assert status == 2 and "Traceback" not in err
    assert err.startswith(f"tactile-sim replay: error: {tmp_path / too_long}: File name too long"), err


def test_a_configured_cuda_device_this_machine_lacks_exits_2_before_the_build(tmp_path, monkeypatch):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    from tactile_sim.offline import replay as replay_module

    monkeypatch.setattr(replay_module, "replay_bag", lambda *a, **k: pytest.fail("replayed on a device it lacks"))
    config = pads_yaml(tmp_path)
    data = yaml.safe_load(config.read_text())
    data["suite"]["device"] = "cuda"
    config.write_text(yaml.safe_dump(data))
    bag = write_bag(tmp_path / "in", [static_tf(), joints(0.0, [0.0, OPEN, OPEN])])
    status, _, err = replay(tmp_path, bag, config)
    assert status == 2 and f"{config}:suite.device: CUDA is not available on this machine; got 'cuda'" in err, err
    monkeypatch.undo()
    assert replay(tmp_path, bag, config, "--device", "cpu")[0] == 0  # the override is the device used


# ------------------------------------------------------------------ storage, description, copies
def test_sqlite3_in_and_out_with_the_inputs_copied(tmp_path):
    items = [static_tf()] + [joints(0.01 * k, [0.0, SQUEEZE, SQUEEZE]) for k in range(4)]
    bag = write_bag(tmp_path / "sq", items, storage="sqlite3")
    data_file = next(bag.glob("*.db3"))
    status, _, err = replay(tmp_path, data_file, pads_yaml(tmp_path), "--rate", "100", "--copy-inputs",
                            out="result.db3")
    assert status == 0, err
    assert (tmp_path / "result" / "result.db3").is_file()
    topics = read_bag(tmp_path / "result")
    assert len(topics["/joint_states"]) == 4 and len(topics["/tf_static"]) == 1
    assert len(topics[f"{NODE}/pad_right"]) == 4


def test_the_robot_description_can_come_from_the_bag(tmp_path):
    config = pads_yaml(tmp_path, robot=False)
    items = [static_tf()] + [joints(0.01 * k, [0.0, SQUEEZE, SQUEEZE]) for k in range(3)]
    status, _, err = replay(tmp_path, write_bag(tmp_path / "bare", items), config)
    assert status == 2 and "no robot description" in err
    description = ("/robot_description", 0, new_message("std_msgs/msg/String", data=DEMO_URDF.read_text()))
    status, _, err = replay(tmp_path, write_bag(tmp_path / "described", [description] + items), config, "--rate",
                            "100", out="from_bag.mcap")
    assert status == 0, err
    assert len(read_bag(tmp_path / "from_bag")[f"{NODE}/pad_left"]) == 3
    status, _, err = replay(tmp_path, write_bag(tmp_path / "bare2", items), config, "--rate", "100", "--robot",
                            str(DEMO_URDF), out="robot.mcap")
    assert status == 0, err


def test_the_python_api_reports_what_it_did(tmp_path):
    items = [static_tf()] + [joints(0.01 * k, [0.0, SQUEEZE, SQUEEZE]) for k in range(5)]
    result = replay_bag(write_bag(tmp_path / "api", items), demo_config(set(PADS)), tmp_path / "api_out",
                        rate=100.0, progress=False)
    assert result.error is None and result.stats.ticks == 5 and result.rate == 100.0
    assert result.counts == {f"{NODE}/pad_left": 5, f"{NODE}/pad_right": 5}
    assert result.data_file == tmp_path / "api_out" / "api_out.mcap" and result.data_file.is_file()
    with pytest.raises(BagInputError, match="not found"):
        replay_bag(tmp_path / "missing", demo_config(set(PADS)), tmp_path / "x", progress=False)
    with pytest.raises(ConfigError, match="^--robot: file not found"):
        replay_bag(tmp_path / "api", demo_config(set(PADS)), tmp_path / "y", robot=tmp_path / "no.urdf")
