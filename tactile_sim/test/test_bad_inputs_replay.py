"""Bad replay inputs cost no more than a clear answer: a clock gap longer than ``--gap-threshold`` is not ticked
through (a restart with a warning naming the option; the ticks are those of the two time lines replayed apart),
an empty bag exits 2, and numeric options of ``replay`` and ``demo`` are validated like configuration options
(finite, in range, the option named), through the command line (in process and as a subprocess) and the Python API.
A pipe where a bag (or a file of a bag folder) is expected, a loop of symbolic links as the input or the output, and
a link that leads nowhere as the output or its folder are refused with the path named instead of blocking, ending in
a traceback or replacing the link. A recording whose joint states set none
of the robot's joints (each one dropped, or naming other joints) is an error, not sensor data of the robot at its
zero configuration; joints that no joint state names are warned about, alone and in a batch.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time

import pytest

from helpers_offline import NODE, read_bag, run_cli, write_bag
from test_cli_replay import JOINT_NAMES, PADS, SQUEEZE, joints, pads_yaml, replay, static_tf
from tactile_sim.config import load_config
from tactile_sim.constants import GAP_THRESHOLD
from tactile_sim.io.bag import BagWriter
from tactile_sim.offline.replay import replay_bag

Q = [0.0, SQUEEZE, SQUEEZE]


def line(t0: float, n: int, rate: float = 100.0):
    """n joint states one period apart from t0 (s): a time line of exactly n ticks at ``rate``."""
    return [joints(t0 + k / rate, Q) for k in range(n)]


def pad_ticks(path) -> int:
    return len(read_bag(path)[f"{NODE}/{PADS[0]}"])


@pytest.mark.parametrize("far", [1e6, 2.0**31 - 10])  # the latter near the last representable stamp
def test_a_far_future_stamp_restarts_instead_of_ticking_through(tmp_path, far):
    bag = write_bag(tmp_path / "far", [static_tf()] + line(0.0, 11) + line(far, 3))
    start = time.perf_counter()
    status, out, err = replay(tmp_path, bag, pads_yaml(tmp_path), "--rate", "100")
    assert status == 0, err
    assert time.perf_counter() - start < 60  # ticking 1e8 steps through the gap would take hours
    # the two lines, nothing in between (near 2**31 s a float64 stamp is ~256 ns off: its last tick may fall after it)
    assert 11 + 3 - (far > 1e9) <= pad_ticks(tmp_path / "out") <= 11 + 3
    assert "--gap-threshold" in err and "not ticked through" in err
    assert "time jumped forward beyond the gap threshold 1 time(s)" in out


def test_a_gap_shorter_than_the_threshold_is_still_held(tmp_path):
    bag = write_bag(tmp_path / "gap", [static_tf()] + line(0.0, 11) + line(0.5, 11))
    status, _, err = replay(tmp_path, bag, pads_yaml(tmp_path), "--rate", "100", "--gap-threshold", "1")
    assert status == 0, err
    assert pad_ticks(tmp_path / "out") == 61  # 0 … 0.60 s held through the gap
    status, _, err = replay(tmp_path, bag, pads_yaml(tmp_path), "--rate", "100", "--gap-threshold", "0.2",
                            out="restarted.mcap")
    assert status == 0, err
    assert pad_ticks(tmp_path / "restarted") == 22 and "not ticked through" in err


def test_inputs_jumping_back_and_forth_stop_after_max_restarts(tmp_path):
    stamps = [100.0 * (k % 2) + 0.01 * k + 0.01 * j for k in range(6) for j in range(2)]  # 6 time lines,
    # 0, 100 (a jump forward beyond --gap-threshold 10), 0.02 (back), ...: 5 restarts; received in this order
    items = [static_tf()] + [joints(t, Q, receive=1.0 + 0.01 * i) for i, t in enumerate(stamps)]
    bag = write_bag(tmp_path / "zigzag", items)
    status, _, err = replay(tmp_path, bag, pads_yaml(tmp_path), "--rate", "100", "--max-restarts", "5")
    assert status == 0, err
    status, _, err = replay(tmp_path, bag, pads_yaml(tmp_path), "--rate", "100", "--max-restarts", "4",
                            out="stopped.mcap")
    assert status == 2 and "more than 4 restarts of the sensors" in err and "--max-restarts" in err, err


def test_an_empty_bag_exits_2(tmp_path):
    with BagWriter(tmp_path / "empty", "mcap") as writer:
        writer.add_topic("/joint_states", "sensor_msgs/msg/JointState")
    status, _, err = replay(tmp_path, tmp_path / "empty", pads_yaml(tmp_path))
    assert status == 2 and "produced no sensor messages" in err, err


@pytest.mark.parametrize("command, pipe", [("replay", "in.mcap"), ("replay", "bag/bag.mcap"), ("plot", "in.mcap"),
                                           ("plot", "bag/bag.mcap"), ("plot", "bag/metadata.yaml")])
def test_a_pipe_as_a_bag_or_a_bag_file_is_refused_without_reading_it(tmp_path, command, pipe):
    bag = write_bag(tmp_path / "bag", [static_tf()] + line(0.0, 3))
    target = tmp_path / pipe
    name = "in.mcap" if pipe == "in.mcap" else "bag"
    if target.exists():
        target.unlink()
    os.mkfifo(target)  # opened for reading, it would block until a writer comes: the test would hang
    args = (tmp_path, tmp_path / name, pads_yaml(tmp_path)) if command == "replay" else ()
    status, _, err = replay(*args) if command == "replay" else run_cli("plot", str(tmp_path / name))
    assert status == 2 and f"bag '{tmp_path / name}'" in err and "not a regular file" in err, err
    assert bag.exists() and (pipe == "in.mcap" or f"its '{target.name}'" in err)


@pytest.mark.parametrize("side", ["input", "output", "output folder"])
def test_a_loop_of_symbolic_links_is_named_not_a_traceback(tmp_path, side):
    bag = write_bag(tmp_path / "bag", [static_tf()] + line(0.0, 3))
    (tmp_path / "loop_a").symlink_to(tmp_path / "loop_b")
    (tmp_path / "loop_b").symlink_to(tmp_path / "loop_a")
    source = tmp_path / "loop_a" if side == "input" else bag
    out = {"input": "o.mcap", "output": "loop_a", "output folder": "loop_a/o.mcap"}[side]
    status, _, err = replay(tmp_path, source, pads_yaml(tmp_path), out=out)
    assert status == 2 and f"replay {side.split()[0]} '" in err and "loop of symbolic links" in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("out, named", [("gone.npz", "'gone.npz' is"), ("gone/o.mcap", "'gone' is"),
                                        ("gone", "'gone' is")])
def test_a_link_that_leads_nowhere_is_not_an_output(tmp_path, monkeypatch, out, named):
    """A dangling link as -o, or as its folder, is named; before, a bag folder failed on mkdir with "File exists"
    and an .npz output silently replaced the link with a file."""
    bag = write_bag(tmp_path / "bag", [static_tf()] + line(0.0, 3))
    monkeypatch.chdir(tmp_path)
    (tmp_path / out.split("/")[0]).symlink_to(tmp_path / "nowhere")
    status, _, err = run_cli("replay", str(bag), "--config", str(pads_yaml(tmp_path)), "-o", out, "--no-progress")
    assert status == 2 and f"{named} a symbolic link that leads nowhere (dangling, or a loop)" in err, err
    assert (tmp_path / out.split("/")[0]).is_symlink() and not (tmp_path / "nowhere").exists()


UNUSABLE_JOINT_STATES = {
    "non_finite": lambda t: joints(t, [float("nan"), SQUEEZE, SQUEEZE]),
    "unknown_names": lambda t: joints(t, [0.1, SQUEEZE, SQUEEZE], names=("a", "b", "c")),
    "length_mismatch": lambda t: ("/joint_states", round(t * 1e9),
                                  joint_states_with(joints(t, Q)[2], position=[0.0, SQUEEZE])),
}


def joint_states_with(msg, **fields):
    """``msg`` with ``fields`` replaced (a JointState whose arrays disagree in length)."""
    import dataclasses

    import numpy as np

    return dataclasses.replace(msg, **{k: np.asarray(v, dtype=np.float64) for k, v in fields.items()})


@pytest.mark.parametrize("reason", sorted(UNUSABLE_JOINT_STATES))
@pytest.mark.parametrize("out", ["out.mcap", "out.npz"])
def test_joint_states_that_set_no_joint_are_an_error_not_zero_configuration_data(tmp_path, reason, out):
    bag = write_bag(tmp_path / reason, [static_tf()] + [UNUSABLE_JOINT_STATES[reason](0.01 * k) for k in range(6)])
    status, stdout, err = replay(tmp_path, bag, pads_yaml(tmp_path), "--rate", "100", out=out)
    assert status == 2, err
    assert f"no joint state on '/joint_states' set any of the robot's 3 joints (6 dropped (joint_states.{reason}))" \
        in err and "zero configuration" in err and all(name in err for name in JOINT_NAMES), err
    assert f"joint_states.{reason} 6" in stdout and "its output was removed" in err and "wrote " not in stdout
    assert not list(tmp_path.glob("out*"))  # nothing left to mistake for data


def test_a_corpus_keeps_no_output_of_a_recording_whose_joint_states_set_no_joint(tmp_path):
    write_bag(tmp_path / "recs" / "good", [static_tf()] + line(0.0, 6))
    write_bag(tmp_path / "recs" / "nan", [static_tf()] + [UNUSABLE_JOINT_STATES["non_finite"](0.01 * k)
                                                          for k in range(6)])
    status, out, err = run_cli("replay", str(tmp_path / "recs"), "--config", str(pads_yaml(tmp_path)), "-o",
                               str(tmp_path / "out"), "--no-progress", "--rate", "100", "--batch", "2")
    assert status == 2 and "1 of 2 recordings failed (nan)" in err, err
    assert next(row for row in out.splitlines() if row.startswith("nan ")).split()[5:7] == ["nothing", "written;"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["good"]


@pytest.mark.parametrize("batch", [1, 2])
def test_joints_no_joint_state_names_are_warned_about(tmp_path, batch):
    names = JOINT_NAMES[:1]  # the slide only: the fingers stay at 0
    slide_only = [joints(0.01 * k, [0.0], names=names, velocity=()) for k in range(6)]
    partial = write_bag(tmp_path / "partial", [static_tf()] + slide_only)
    whole = write_bag(tmp_path / "whole", [static_tf()] + line(0.0, 6))
    status, _, err = run_cli("replay", str(partial), str(whole), "--config", str(pads_yaml(tmp_path)), "-o",
                             str(tmp_path / "out"), "--no-progress", "--rate", "100", "--batch", str(batch))
    assert status == 0, err
    unset = f"no joint state on '/joint_states' set {list(JOINT_NAMES[1:])}: held at 0"
    assert err.count(unset) == 1 and "partial: " in err.split(unset)[0].splitlines()[-1], err


BAD_NUMBERS = ["nan", "inf", "-inf", "-1", "0", "abc", "1e400"]
BAD_OPTIONS = ([(o, v, "a finite number") for o in ("--jump-threshold", "--gap-threshold", "--rate")
                for v in BAD_NUMBERS]
               + [("--rate", "0.5", "a finite number")]
               + [("--max-restarts", v, "an integer") for v in ("-1", "2.5", "abc", "nan", "1e3")])


@pytest.mark.parametrize("option, value, allowed", BAD_OPTIONS)
def test_numeric_replay_options_are_validated(tmp_path, option, value, allowed):
    status, _, err = replay(tmp_path, tmp_path / "never_read", pads_yaml(tmp_path), f"{option}={value}")
    assert status == 2
    assert f"argument {option}: " in err and f"got {value!r}; allowed: {allowed}" in err, err


@pytest.mark.parametrize("option, value", [("--rate", "1e9"), ("--rate", "0.99"), ("--duration", "1e9"),
                                           ("--duration", "nan"), ("--duration", "0"), ("--rate", "inf")])
def test_numeric_demo_options_are_validated(tmp_path, option, value):
    status, _, err = run_cli("demo", "-o", str(tmp_path), "--no-progress", option, value)
    assert status == 2 and f"argument {option}: " in err and f"got {value!r}" in err, err


BAD_API_VALUES = ([(n, v, "not a finite duration > 0") for n in ("jump_threshold", "gap_threshold")
                   for v in (math.nan, math.inf, -1.0, 0.0, "1", True)]
                  + [("max_restarts", v, "not an integer >= 0") for v in (-1, 2.5, "1", True, math.nan)])


@pytest.mark.parametrize("name, value, problem", BAD_API_VALUES)
def test_python_api_thresholds_are_validated(tmp_path, name, value, problem):
    config = load_config(pads_yaml(tmp_path))
    with pytest.raises(ValueError, match=f"^{name}: {problem}; got {value!r}"):
        replay_bag(tmp_path / "never_read", config, tmp_path / "out.mcap", **{name: value})


def test_the_default_gap_threshold_is_documented_in_the_help():
    status, out, _ = run_cli("replay", "--help")
    assert status == 0 and f"(default: {GAP_THRESHOLD:g} s)" in out


def test_subprocess_gap_and_bad_option_exit_codes(tmp_path):
    bag = write_bag(tmp_path / "far", [static_tf()] + line(0.0, 3) + line(1e6, 2))
    base = [sys.executable, "-m", "tactile_sim", "replay", str(bag), "--config", str(pads_yaml(tmp_path)),
            "--no-progress", "--rate", "100"]
    ok = subprocess.run(base + ["-o", str(tmp_path / "o.mcap")], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(base + ["-o", str(tmp_path / "p.mcap"), "--jump-threshold", "nan"], capture_output=True,
                         text=True, timeout=300)
    assert bad.returncode == 2 and "argument --jump-threshold: out of range; got 'nan'" in bad.stderr
