"""``tactile-sim replay`` of many recordings: each output is byte for byte the output of replaying that recording
alone (recordings of different lengths, input rates and joint sets, one with a simulation reset inside), in one
process or in worker processes, as bags or arrays; inputs come as folders, patterns or a list file; a recording
that fails does not stop the others; bad options are refused naming the option before anything runs."""

import gc

import numpy as np
import pytest

from helpers_offline import run_cli, write_bag
from tactile_sim.offline import core_pool, corpus as corpus_module
from tactile_sim.demo_trajectory import JOINT_NAMES, OPEN, SQUEEZE
from test_cli_replay import PADS, closing, joints, pads_yaml, static_tf


def recordings(folder):
    """Three rosbag2 folders in ``folder``: long (0.6 s of 100 Hz joint states), slow (0.4 s at 25 Hz, the two
    finger joints only) and reset (the clock jumps back from 10.2 s to 0 s: the sensors restart)."""
    long = [joints(0.01 * k, [0.0, q, q]) for k, q in enumerate(np.linspace(0.015, SQUEEZE, 61))]
    slow = [joints(0.04 * k, [q, q], names=JOINT_NAMES[1:], velocity=(0.0, 0.0))
            for k, q in enumerate(np.linspace(0.02, SQUEEZE, 11))]
    reset = closing(10.0, 21, 10.0) + closing(0.0, 11, 10.3)
    for name, items in (("long", long), ("slow", slow), ("reset", reset)):
        write_bag(folder / name, [static_tf()] + items)
    return folder


def corpus(tmp_path, *inputs, out="out", extra=()):
    return run_cli("replay", *map(str, inputs), "--config", str(pads_yaml(tmp_path)), "-o", str(tmp_path / out),
                   "--rate", "100", "--no-progress", *extra)


def alone(tmp_path, recording, output):
    status, out, err = corpus(tmp_path, recording, out=output)
    assert status == 0, err
    return out


def test_each_output_equals_its_recording_replayed_alone(tmp_path):
    recs = recordings(tmp_path / "recs")
    status, out, err = corpus(tmp_path, recs)
    assert status == 0, err
    assert "3 recordings" in out and "aggregate" in out
    assert "time jumped backwards 1 time(s)" in alone(tmp_path, recs / "reset", "alone/reset.mcap")
    for name in ("long", "slow"):
        alone(tmp_path, recs / name, f"alone/{name}.mcap")
    ticks = {}
    for name in ("long", "slow", "reset"):
        for part in (f"{name}.mcap", "metadata.yaml"):
            assert (tmp_path / "out" / name / part).read_bytes() == (tmp_path / "alone" / name / part).read_bytes()
        ticks[name] = int(next(line.split()[1] for line in out.splitlines() if line.startswith(name)))
    assert ticks == {"long": 61, "slow": 41, "reset": 21 + 11}  # every recording keeps its own length and clock


def test_an_unplanned_lane_that_outlasts_every_planned_one_keeps_the_batch_going(tmp_path):
    """A recording replayed message by message (its clock jumps back once) that steps past the end of every
    planned lane: the planned inputs of a step no planned lane has are not looked
    up (an IndexError killed the corpus), and every output is its lone replay's."""
    recs = tmp_path / "recs"
    write_bag(recs / "flip", [static_tf()] + closing(10.0, 21, 10.0) + closing(0.0, 90, 10.3))
    write_bag(recs / "short", [static_tf()] + [joints(0.01 * k, [0.0, OPEN, OPEN]) for k in range(20)])
    config = pads_yaml(tmp_path, names=PADS + ("joint_torque",))

    def replay(inputs, out, *extra):
        return run_cli("replay", *map(str, inputs), "--config", str(config), "-o", str(tmp_path / out),
                       "--no-progress", *extra)  # at the configuration's 200 Hz: 39 planned ticks for "short"

    status, out, err = replay([recs], "out", "--batch", "4")
    assert "Traceback" not in err and status == 0, err
    for name in ("flip", "short"):
        replay([recs / name], f"alone/{name}.mcap")
        assert (tmp_path / "out" / name / f"{name}.mcap").read_bytes() == \
            (tmp_path / "alone" / name / f"{name}.mcap").read_bytes()


def test_joint_values_beyond_float32_are_dropped_alike_alone_and_in_a_batch(tmp_path):
    """1e300 is finite in a message's float64 but inf in the float32 world model: the lone replay dropped nothing
    and failed every world update, while a batch's lanes (which do not check their joints again) wrote sensor
    messages from inf joints. Both now drop those joint states."""
    recs = recordings(tmp_path / "recs")
    huge = [joints(0.01 * k, [0.0, 1e300 if k % 3 else SQUEEZE, SQUEEZE]) for k in range(30)]
    write_bag(recs / "huge", [static_tf()] + huge)
    status, out, err = corpus(tmp_path, recs, extra=("--batch", "4"))
    assert status == 0, err
    lone = alone(tmp_path, recs / "huge", "alone/huge.mcap")
    assert "joint_states.non_finite 20" in lone
    assert (tmp_path / "out" / "huge" / "huge.mcap").read_bytes() == \
        (tmp_path / "alone" / "huge" / "huge.mcap").read_bytes()


def test_a_step_whose_every_lane_goes_alone_ends_the_batch_and_each_replays_alone(tmp_path, monkeypatch):
    """JointTorque can send every lane left alone (the batch's last sample is another lane's): the batch then stops
    instead of writing an empty step (it raised ValueError), and each recording's output is its lone replay's."""
    from tactile_sim.offline import batch_replay

    def every_lane_alone_from_step_5(suite, state, stepped):
        if suite.steps < 5:
            return [(lane, tick) for lane, tick, _ in stepped]
        for lane, _, _ in stepped:
            lane.alone = "sent alone by the test"
        return []

    monkeypatch.setattr(batch_replay, "torque_agrees", every_lane_alone_from_step_5)
    recs = recordings(tmp_path / "recs")
    status, out, err = corpus(tmp_path, recs, extra=("--batch", "3"))
    assert status == 0 and "Traceback" not in err, err
    monkeypatch.undo()
    for name in ("long", "slow", "reset"):
        alone(tmp_path, recs / name, f"alone/{name}.mcap")
        assert (tmp_path / "out" / name / f"{name}.mcap").read_bytes() == \
            (tmp_path / "alone" / name / f"{name}.mcap").read_bytes()


def test_recordings_share_one_rewound_core_and_no_output_depends_on_the_recordings_before(tmp_path, monkeypatch):
    built = []

    class CountedCore(core_pool.NodeCore):
        def __init__(self, *args, **kwargs):
            built.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(core_pool, "NodeCore", CountedCore)
    recs = recordings(tmp_path / "recs")
    assert corpus(tmp_path, recs)[0] == 0  # long, reset, slow
    assert len(built) == 1  # the other two take it rewound
    (tmp_path / "list.txt").write_text("recs/slow\nrecs/reset\nrecs/long\n")
    status, _, err = corpus(tmp_path, "--input-list", tmp_path / "list.txt", out="reversed")
    assert status == 0, err
    for name in ("long", "slow", "reset"):
        for part in (f"{name}.mcap", "metadata.yaml"):
            assert (tmp_path / "reversed" / name / part).read_bytes() == (tmp_path / "out" / name / part).read_bytes()


def test_the_young_generation_is_collected_less_often_while_a_corpus_replays_and_as_before_after(tmp_path,
                                                                                                   monkeypatch):
    seen = []
    run_group = corpus_module.run_group

    def watched(*args):
        seen.append(gc.get_threshold())
        return run_group(*args)

    monkeypatch.setattr(corpus_module, "run_group", watched)
    before = gc.get_threshold()
    recs = recordings(tmp_path / "recs")
    assert corpus(tmp_path, recs, extra=("--batch", "1"))[0] == 0
    assert seen == [(corpus_module.YOUNG_COLLECTION_EVERY, *before[1:])] * 3
    assert gc.get_threshold() == before
    try:
        corpus_module.worker_setup()  # a worker process, spawned or forked
        assert gc.get_threshold() == (corpus_module.YOUNG_COLLECTION_EVERY, *before[1:])
    finally:
        gc.set_threshold(*before)


def test_arrays_of_a_pattern_and_a_list_in_two_processes_equal_each_alone(tmp_path):
    recs = recordings(tmp_path / "recs")
    (tmp_path / "list.txt").write_text("# the reset recording, relative to this file\nrecs/reset\n\n")
    status, out, err = corpus(tmp_path, tmp_path / "recs" / "[ls]*", out="arrays",
                              extra=("--input-list", str(tmp_path / "list.txt"), "--format", "npz", "--workers", "2"))
    assert status == 0, err
    assert sorted(p.name for p in (tmp_path / "arrays").iterdir()) == ["long.npz", "reset.npz", "slow.npz"]
    for name in ("long", "slow", "reset"):
        alone(tmp_path, recs / name, f"alone/{name}.npz")
        assert (tmp_path / "arrays" / f"{name}.npz").read_bytes() == (tmp_path / "alone" / f"{name}.npz").read_bytes()
    with np.load(tmp_path / "arrays" / "slow.npz") as data:
        assert data["joints/position"][-1, 0] == 0.0  # the slide joint, absent from this recording, holds zero
        assert data["joints/position"][-1, 1] == pytest.approx(SQUEEZE)


def sized_jobs(folder, sizes):
    """A job per size: a .mcap file of that many bytes (a rosbag2 folder of that many for every third)."""
    jobs = []
    for i, size in enumerate(sizes):
        if i % 3 == 2:
            (folder / f"r{i}").mkdir()
            (folder / f"r{i}" / "metadata.yaml").write_bytes(b"m" * 10)
            (folder / f"r{i}" / f"r{i}.mcap").write_bytes(b"x" * (size - 10))
            source = folder / f"r{i}"
        else:
            source = folder / f"r{i}.mcap"
            source.write_bytes(b"x" * size)
        jobs.append(corpus_module.ReplayJob(f"r{i}", str(source), str(folder / "out" / f"r{i}")))
    return jobs


def group_work(groups, jobs, sizes):
    work = {job: size for job, size in zip(jobs, sizes)}
    return [sum(work[job] for job in group) for group in groups]


def test_batches_over_workers_are_balanced_by_recording_size(tmp_path):
    sizes = [750 + 500 * i // 15 for i in range(16)]  # 16 recordings of 0.75 to 1.25 times a length, shortest first
    jobs = sized_jobs(tmp_path, sizes)
    groups = corpus_module.job_groups(jobs, 8, workers=2)
    assert [len(g) for g in groups] == [8, 8]
    assert sorted(job.name for g in groups for job in g) == sorted(job.name for job in jobs)
    assert all(g == sorted(g, key=jobs.index) for g in groups)  # each batch keeps the order given
    first, second = group_work(groups, jobs, sizes)
    assert abs(first - second) <= max(sizes)  # cut in order: 6931 and 9064 bytes
    assert abs(first - second) <= 0.02 * (first + second)


def test_more_batches_than_workers_hold_recordings_of_similar_size_longest_first(tmp_path):
    sizes = [300, 900, 100, 700, 500, 1100, 200, 1000, 600, 400, 800, 1200]
    jobs = sized_jobs(tmp_path, sizes)
    groups = corpus_module.job_groups(jobs, 4, workers=1)
    assert [sorted(sizes[jobs.index(j)] for j in g) for g in groups] == [
        [900, 1000, 1100, 1200], [500, 600, 700, 800], [100, 200, 300, 400]]
    assert all(g == sorted(g, key=jobs.index) for g in groups)
    assert [len(g) for g in corpus_module.job_groups(jobs[:10], 4, workers=1)] == [4, 3, 3]  # sizes differ by ≤ 1
    # one process replaying one at a time: the order given; one at a time in processes: the longest first
    assert corpus_module.job_groups(jobs, 1, workers=1) == [[job] for job in jobs]
    assert [g[0] for g in corpus_module.job_groups(jobs, 1, workers=2)] == \
        [jobs[i] for i in sorted(range(len(jobs)), key=lambda i: -sizes[i])]


def test_a_recording_that_cannot_be_read_is_grouped_as_empty(tmp_path):
    jobs = sized_jobs(tmp_path, [100, 200])
    jobs.append(corpus_module.ReplayJob("gone", str(tmp_path / "gone.mcap"), str(tmp_path / "out" / "gone")))
    assert corpus_module.recording_bytes(jobs[-1].source) == 0
    assert corpus_module.job_groups(jobs, 1, workers=4) == [[jobs[1]], [jobs[0]], [jobs[2]]]


def test_a_folder_entry_that_looks_like_a_bag_without_metadata_is_named_not_skipped_silently(tmp_path):
    recs = recordings(tmp_path / "recs")
    (recs / "long" / "metadata.yaml").unlink()  # a copy without its metadata, or a recording cut short
    status, out, err = corpus(tmp_path, recs)
    assert status == 0 and "2 recordings" in out
    assert f"[warn] replay: {str(recs / 'long')!r} holds a .mcap / .db3 file but no metadata.yaml: not replayed" in err


def test_a_failing_recording_does_not_stop_the_others(tmp_path):
    recs = recordings(tmp_path / "recs")
    write_bag(recs / "empty", [static_tf()])  # no joint states, no /tf: cannot be replayed
    status, out, err = corpus(tmp_path, recs)
    assert status == 2
    assert "1 of 4 recordings failed (empty)" in err
    assert next(line for line in out.splitlines() if line.startswith("empty")).count("nothing written")
    assert all((tmp_path / "out" / name / f"{name}.mcap").is_file() for name in ("long", "slow", "reset"))


@pytest.mark.parametrize("batch", ["1", "4"])
def test_a_recording_whose_output_the_file_system_refuses_fails_alone(tmp_path, batch):
    recs = recordings(tmp_path / "recs")
    long_name = "r" * 255  # a folder name the file system takes, but not the output bag's file named after it
    (recs / "long").rename(recs / long_name)
    status, out, err = corpus(tmp_path, recs, extra=("--batch", batch))
    assert status == 2 and f"1 of 3 recordings failed ({long_name})" in err, err
    assert "Traceback" not in err and "File name too long" in out
    assert all((tmp_path / "out" / name / f"{name}.mcap").is_file() for name in ("slow", "reset"))


@pytest.mark.parametrize("inputs, extra, named", [
    (("recs",), ("--workers", "0"), "--workers"),
    (("recs",), ("--workers", "1.5"), "--workers"),
    (("recs",), ("--workers", "many"), "--workers"),
    (("recs",), ("--batch", "0"), "argument --batch: out of range; got '0'; allowed: an integer >= 1 and <= 4096"),
    (("recs",), ("--batch", "2.5"), "argument --batch: not a number; got '2.5'; allowed: an integer >= 1"),
    (("recs",), ("--batch", "5000"), "argument --batch: out of range; got '5000'"),
    (("recs/long", "recs/slow"), ("-o", "x.mcap"), "-o 'x.mcap': the inputs name 2 recording(s) ("),
    (("",), (), "replay input '': an empty name"),
    (("recs", "other"), (), "both would be written as 'long'"),
    (("recs/z*",), (), "matches nothing"),
    (("nowhere",), ("--input-list", "missing.txt"), "--input-list"),
    ((), ("--input-list", "/dev/zero"), "--input-list '/dev/zero': not a regular file"),  # read without end
    ((), (), "no input"),
    (("recs",), ("--format", "npz", "--markers"), "--markers"),
])
def test_bad_corpus_options_exit_2_before_anything_runs(tmp_path, monkeypatch, inputs, extra, named):
    monkeypatch.chdir(tmp_path)
    recordings(tmp_path / "recs")
    write_bag(tmp_path / "other" / "long", [static_tf()])
    status, _, err = corpus(tmp_path, *inputs, extra=extra)
    assert status == 2 and named in err, err
    assert not (tmp_path / "out").exists() and not (tmp_path / "x").exists()


def test_existing_outputs_are_refused_before_anything_runs_unless_overwritten(tmp_path):
    recs = recordings(tmp_path / "recs")
    assert corpus(tmp_path, recs / "long", recs / "slow")[0] == 0
    before = (tmp_path / "out" / "long" / "long.mcap").stat().st_mtime_ns
    status, _, err = corpus(tmp_path, recs)
    assert status == 2 and "exist already" in err and "long" in err
    assert not (tmp_path / "out" / "reset").exists()
    assert corpus(tmp_path, recs, extra=("--overwrite",))[0] == 0
    assert (tmp_path / "out" / "long" / "long.mcap").stat().st_mtime_ns != before


def test_input_limits_apply_to_every_recording(tmp_path):
    recs = recordings(tmp_path / "recs")
    status, out, err = corpus(tmp_path, recs, extra=("--max-restarts", "0"))
    assert status == 2 and "1 of 3 recordings failed (reset)" in err
    row = next(line for line in out.splitlines() if line.startswith("reset"))
    assert "--max-restarts" in row and "reset.mcap (up to the error)" in row  # as a replay alone keeps it
    status, out, err = corpus(tmp_path, recs, out="gaps", extra=("--gap-threshold", "0.02", "--max-restarts", "10"))
    assert status == 0, err
    assert "[warn] slow:" in err and "--gap-threshold" in err  # 25 Hz inputs: each 40 ms step is a gap of its own
    assert "[warn] long:" not in err
