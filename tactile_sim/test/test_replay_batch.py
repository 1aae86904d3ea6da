"""``tactile-sim replay --batch N``: recordings stepped as the envs of one suite give, byte for byte, the output of
replaying each alone — recordings of different lengths, input rates, time bases and joint sets and orders, one
with reordered inputs, one with a simulation reset and one with a forward gap (those two replayed alone); with a
JointTorque sensor, recordings whose joint samples it would see otherwise than alone go alone; recordings whose base
moves by /tf (each its own speed and TF rate) stay in the batch; the encoders of every env keep each sensor's own
layout values; with ground truth, copied inputs and sensors of several periods the bags are the lone ones too,
written as records built in place or (output profiles) by each core; array outputs (npz) are the lone ones too."""

import shutil
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from helpers_offline import write_bag
from tactile_sim.demo_trajectory import JOINT_NAMES, SQUEEZE
from tactile_sim.offline import batch_replay
from tactile_sim.world.lane_motion import LaneSample
from helpers_ros import tf_msg
from test_cli_replay import closing, joints, ns, pads_yaml, static_tf
from test_replay_corpus import alone, corpus


def recordings(folder):
    """Six rosbag2 folders in ``folder`` (see the module docstring)."""
    late = closing(1000.0, 31, 1000.5)  # another time base, received half a second after its stamps
    (_, r10, m10), (_, r11, m11) = late[10:12]
    late[10:12] = [("/joint_states", r10, m11), ("/joint_states", r11, m10)]  # one a step back: the clock holds
    items = {
        "long": [joints(0.01 * k, [0.0, q, q]) for k, q in enumerate(np.linspace(0.015, SQUEEZE, 61))],
        "slow": [joints(0.0, [0.0], names=JOINT_NAMES[:1], velocity=())]  # the slide once, then the fingers
        + [joints(0.04 * k, [q, q], names=JOINT_NAMES[1:], velocity=(0.0, 0.0))
           for k, q in enumerate(np.linspace(0.02, SQUEEZE, 11))],
        "fast": [joints(0.005 * k, [q, q, 0.0], names=JOINT_NAMES[::-1], velocity=(0.1, 0.1, 0.0))
                 for k, q in enumerate(np.linspace(0.018, SQUEEZE, 50))],
        "late": late,
        "reset": closing(10.0, 21, 10.0) + closing(0.0, 11, 10.3),
        "gap": closing(0.0, 11, 0.0) + closing(30.0, 11, 30.0),
    }
    for name, messages in items.items():
        write_bag(folder / name, [static_tf()] + messages)
    return folder


def lone_replays(monkeypatch):
    """The names of the recordings a batch hands to a replay alone, as they are handed."""
    names = []
    run_job = batch_replay.run_job

    def counted(config_source, options, verbose, job):
        names.append(job.name)
        return run_job(config_source, options, verbose, job)

    monkeypatch.setattr(batch_replay, "run_job", counted)
    return names


def test_each_batched_output_equals_its_recording_replayed_alone(tmp_path, monkeypatch):
    recs = recordings(tmp_path / "recs")
    went_alone = lone_replays(monkeypatch)
    status, out, err = corpus(tmp_path, recs, extra=("--batch", "6", "--gap-threshold", "5"))
    assert status == 0, err
    assert sorted(went_alone) == ["gap", "reset"]  # their sensors restart; the other four share one suite
    ticks = {}
    for name in ("long", "slow", "fast", "late", "reset", "gap"):
        alone(tmp_path, recs / name, f"alone/{name}.mcap")
        for part in (f"{name}.mcap", "metadata.yaml"):
            assert (tmp_path / "out" / name / part).read_bytes() == (tmp_path / "alone" / name / part).read_bytes(), \
                (name, part)
        ticks[name] = int(next(line.split()[1] for line in out.splitlines() if line.startswith(name)))
    assert ticks["long"] == 61 and ticks["slow"] == 41 and ticks["late"] == 31 and ticks["reset"] == 32


def moving_base(t0: float, n: int, speed: float, every: int):
    """/tf items world → base_link at t0 + 0.01 k (every ``every``-th tick, stamped 2 ms early): the gripper sliding
    along y at ``speed`` m/s while turning about z."""
    items = []
    for k in range(0, n, every):
        t = t0 + 0.01 * k - 0.002
        a = 0.5 * speed * (t - t0)
        transform = ("world", "base_link", (0.0, speed * (t - t0), 0.0), (0.0, 0.0, np.sin(a), np.cos(a)), t)
        items.append(("/tf", ns(t), tf_msg(transform)))
    return items


def test_recordings_whose_base_moves_by_tf_each_keep_their_own_root_motion(tmp_path, monkeypatch):
    specs = {"still": (1.0, 0.0, 1), "slide": (5.0, 0.004, 1), "sparse": (7.5, -0.006, 2), "fast": (20.0, 0.01, 1)}
    for name, (t0, speed, every) in specs.items():
        items = sorted(closing(t0, 21, t0) + moving_base(t0, 21, speed, every), key=lambda item: item[1])
        write_bag(tmp_path / "recs" / name, items)
    went_alone = lone_replays(monkeypatch)
    status, _, err = corpus(tmp_path, tmp_path / "recs", extra=("--batch", "4"))
    assert status == 0, err
    assert went_alone == []  # each lane's root follows its own TF buffer in the shared world model
    outputs = {}
    for name in specs:
        alone(tmp_path, tmp_path / "recs" / name, f"alone/{name}.mcap")
        outputs[name] = (tmp_path / "out" / name / f"{name}.mcap").read_bytes()
        assert outputs[name] == (tmp_path / "alone" / name / f"{name}.mcap").read_bytes(), name
    assert len(set(outputs.values())) == len(specs)


def test_batches_of_a_corpus_reuse_one_suite_and_keep_the_outputs_also_in_worker_processes(tmp_path, monkeypatch):
    recs = recordings(tmp_path / "recs")
    for name in ("reset", "gap"):
        (recs / name / f"{name}.mcap").unlink()
        (recs / name / "metadata.yaml").unlink()
        (recs / name).rmdir()
    status, _, err = corpus(tmp_path, recs, out="one", extra=("--batch", "1"))
    assert status == 0, err
    built = []
    shared = batch_replay.SharedSuite

    class Counted(shared):
        def __init__(self, n_envs):
            built.append(n_envs)
            super().__init__(n_envs)

    monkeypatch.setattr(batch_replay, "SharedSuite", Counted)
    status, _, err = corpus(tmp_path, recs, out="two", extra=("--batch", "2"))
    assert status == 0, err
    assert built == [2]  # two batches of two: the second takes the first's suite and cores rewound
    status, _, err = corpus(tmp_path, recs, out="workers", extra=("--batch", "2", "--workers", "2"))
    assert status == 0, err  # a batch per worker process
    status, _, err = corpus(tmp_path, recs, out="default")
    assert status == 0, err
    assert built == [2, 4]  # without --batch: the four recordings are one batch
    for name in ("long", "slow", "fast", "late"):
        for out in ("two", "workers", "default"):
            assert (tmp_path / out / name / f"{name}.mcap").read_bytes() == \
                (tmp_path / "one" / name / f"{name}.mcap").read_bytes(), (out, name)


def test_with_joint_torque_recordings_whose_joint_samples_the_batch_cannot_follow_go_alone(tmp_path, monkeypatch):
    recs = recordings(tmp_path / "recs")
    went_alone = lone_replays(monkeypatch)
    config = pads_yaml(tmp_path, names=("pad_left", "pad_right", "joint_torque"))
    extra = ("--batch", "6", "--gap-threshold", "5", "--config", str(config))
    status, _, err = corpus(tmp_path, recs, extra=extra)
    assert status == 0, err
    for name in ("long", "fast", "slow", "late"):
        status, _, err = corpus(tmp_path, recs / name, out=f"alone/{name}.mcap", extra=("--config", str(config)))
        assert status == 0, err
        assert (tmp_path / "out" / name / f"{name}.mcap").read_bytes() == \
            (tmp_path / "alone" / name / f"{name}.mcap").read_bytes(), name
    # slow: a new joint sample every 4th tick (held stamps); late: another time base (other Δt bits); both differ from
    # long's and fast's in what the torque estimator sees; reset and gap restart
    assert sorted(went_alone) == ["gap", "late", "reset", "slow"]


def test_torque_agreement_compares_acceptance_time_step_and_measured_velocities():
    """docs/models/joint_torque.md#velocity, per lane against the batch's one JointTorque batch (previous accepted
    stamp 0.99 s; this step: stamp 1.0 s, accepted, Δt 0.01 s, velocities measured)."""
    torque = SimpleNamespace(sensor_type="JointTorque", t_prev=0.99)
    suite = SimpleNamespace(batches=[(2, torque)], steps=4)
    cases = {  # name: (previous accepted stamp of the lane, what its world lane took, kept in the batch)
        "same": (0.99, LaneSample(1.0, 1.0, True), True),
        "stamp from t": (0.99, LaneSample(1.0, None, True), True),
        "held stamp": (1.0, LaneSample(1.0, 1.0, True), False),  # not accepted
        "other step": (0.98, LaneSample(1.0, 1.0, True), False),  # Δt 0.02 s
        "estimated velocities": (0.99, LaneSample(1.0, 1.0, False), False),
    }
    for velocities, unmeasured_kept in ((np.zeros((1, 3)), False), (None, True)):
        state = SimpleNamespace(t=1.0, joint_stamp=1.0, joint_vel=velocities, joint_vel_measured=True)
        lanes = {name: SimpleNamespace(torque_stamps={id(torque): prev}, alone=None)
                 for name, (prev, _, _) in cases.items()}
        stepped = [(lanes[name], name, taken) for name, (_, taken, _) in cases.items()]
        kept = [name for _, name in batch_replay.torque_agrees(suite, state, stepped)]
        expected = [name for name, (_, _, ok) in cases.items() if ok or (name == "estimated velocities"
                                                                         and unmeasured_kept)]
        assert kept == expected, velocities
        for name in cases:  # a kept lane's accepted stamp moves on to the step's; the others go alone
            assert (lanes[name].torque_stamps[id(torque)], lanes[name].alone is None) == \
                ((1.0, True) if name in expected else (cases[name][0], False)), name
    suite.steps = 5  # the batch is not due on this step: every lane is kept
    assert [name for _, name in batch_replay.torque_agrees(suite, state, stepped)] == list(cases)


def test_batched_array_outputs_equal_the_lone_ones_byte_for_byte(tmp_path, monkeypatch):
    recs = recordings(tmp_path / "recs")
    went_alone = lone_replays(monkeypatch)
    extra = ("--batch", "6", "--gap-threshold", "5", "--format", "npz", "--ground-truth")
    status, _, err = corpus(tmp_path, recs, extra=extra)
    assert status == 0, err
    assert sorted(went_alone) == ["gap", "reset"]  # the other four are written by the batch
    for name in ("long", "slow", "fast", "late", "reset", "gap"):
        status, _, err = corpus(tmp_path, recs / name, out=f"alone/{name}.npz", extra=extra[2:])
        assert status == 0, err
        batched, lone = tmp_path / "out" / f"{name}.npz", tmp_path / "alone" / f"{name}.npz"
        assert batched.read_bytes() == lone.read_bytes(), name
    with np.load(tmp_path / "out" / "long.npz") as arrays:     # joints and a sensor of every tick, with truth
        assert arrays["joints/position"].shape == (61, 3) and len(arrays["pad_left/stamps"]) == 61
        assert arrays["pad_left/ground_truth/force"].shape == arrays["pad_left/force"].shape


@pytest.mark.parametrize("options, why", [({"markers": True}, "--markers")])
def test_options_that_a_shared_suite_cannot_give_are_named(tmp_path, options, why):
    from tactile_sim.config import load_config

    config = load_config(pads_yaml(tmp_path))
    assert batch_replay.batch_problem(config, {"robot": None}) is None
    assert batch_replay.batch_problem(config, {"robot": None, "output_format": "npz"}) is None
    assert batch_replay.batch_problem(config, {"robot": None, **options}) == why
    assert "robot description" in batch_replay.batch_problem(load_config(pads_yaml(tmp_path, robot=False)),
                                                              {"robot": None})


def test_batches_differ_in_size_by_at_most_one():
    from tactile_sim.offline.corpus import ReplayJob, job_groups

    jobs = [ReplayJob(f"r{i}", f"in/r{i}.mcap", f"out/r{i}") for i in range(17)]
    assert [len(g) for g in job_groups(jobs, 16, workers=1)] == [9, 8]
    assert job_groups(jobs[:5], 16, workers=1) == [jobs[:5]]


def test_batches_are_cut_so_that_every_worker_process_gets_one(tmp_path):
    from tactile_sim.offline.corpus import ReplayJob, groups_of

    jobs = [ReplayJob(f"r{i}", f"in/r{i}.mcap", f"out/r{i}") for i in range(20)]
    config = str(pads_yaml(tmp_path))
    sizes = {workers: [len(g) for g in groups_of(jobs, config, {}, 16, workers)] for workers in (1, 2, 3, 4, 40)}
    assert sizes == {1: [10, 10], 2: [10, 10], 3: [7, 7, 6], 4: [5, 5, 5, 5], 40: [1] * 20}
    assert [len(g) for g in groups_of(jobs, config, {"markers": True}, 16, 1)] == [1] * 20   # cannot be batched


def test_the_encoders_of_every_env_of_a_batch_keep_the_layout_values_of_a_lone_cores():
    """Values of a sensor's layout made once per batch (SensorEncoder.shared: the marker sphere size) are each
    sensor's own, as a lone core makes them."""
    from tactile_sim.config import load_config
    from tactile_sim.demo_trajectory import DEMO_CONFIG
    from tactile_sim.ros.node_core import NodeCore
    from tactile_sim.ros.node_params import NodeParams

    config, params = load_config(DEMO_CONFIG), NodeParams(update_rate=100.0, viz_rate=0.0)

    def sizes(core):
        return {s.encoder.name: s.encoder.sphere_diameter for s in core.schedule
                if hasattr(s.encoder, "sphere_diameter")}

    lone = sizes(NodeCore(config, params))
    assert len(set(lone.values())) > 1  # one value for every sensor would show
    shared = batch_replay.SharedSuite(2)
    assert [sizes(batch_replay.EnvCore(shared, env, config, params)) for env in range(2)] == [lone, lone]


def test_a_batch_makes_the_marker_sphere_size_only_when_asked_and_once_per_sensor(monkeypatch):
    """A replay draws no markers: building a batch's encoders makes no marker sphere size; asking every env's encoder
    makes it once per sensor (shared by the envs)."""
    from tactile_sim.config import load_config
    from tactile_sim.demo_trajectory import DEMO_CONFIG
    from tactile_sim.ros import sensor_encoders
    from tactile_sim.ros.node_params import NodeParams

    made = []
    real = sensor_encoders.default_sphere_diameter
    monkeypatch.setattr(sensor_encoders, "default_sphere_diameter", lambda *a: made.append(1) or real(*a))
    config, params = load_config(DEMO_CONFIG), NodeParams(update_rate=100.0, viz_rate=0.0)
    shared = batch_replay.SharedSuite(3)
    cores = [batch_replay.EnvCore(shared, env, config, params) for env in range(3)]
    assert made == []
    taxels = [[s.encoder for s in core.schedule if isinstance(s.encoder, sensor_encoders.TaxelEncoder)]
              for core in cores]
    sizes = [[e.sphere_diameter for e in encoders] for encoders in taxels]
    assert len(made) == len(taxels[0]) > 1 and sizes[0] == sizes[1] == sizes[2]


def test_a_batchs_branch_copies_write_every_envs_fields_by_rows_as_the_indexed_copy_writes_them(monkeypatch):
    """The values of a batch's branch read reach every env's templates through fields of the memory's rows
    (sensor_encoders.Places: one structured copy) where they are many, with the bytes that the indexed copy of the
    same places writes (random reads, measured and ground truth)."""
    import torch

    from helpers_ros import config_of, demo_dict
    from tactile_sim.ros.node_params import NodeParams
    from tactile_sim.ros.sensor_encoders import BatchReads
    from test_node_core_batches import sensor

    data = demo_dict()  # pads of several sizes (a hand's), probes whose flags cross a threshold, distance probes
    data["sensors"] = [sensor("KinematicTaxel", f"pad_{side}{nx}", side, nx, probe_radius=0.0005, noise=0.01)
                       for side in ("left", "right") for nx in (8, 9, 10)] + \
        [sensor("ContactProbe", f"touch_{side}", side, 4, probe_radius=0.0005) for side in ("left", "right")] + \
        [sensor("SurfaceDistanceProbe", f"dist_{side}", side, 3, track=["can"], probe_radius=0.05)
         for side in ("left", "right")]
    config = config_of(data)
    params = NodeParams(update_rate=100.0, viz_rate=0.0, publish_ground_truth=True)
    shared = batch_replay.SharedSuite(8)
    cores = [batch_replay.EnvCore(shared, env, config, params) for env in range(8)]
    memory = cores[0]._templates.memory
    copies = {id(c): c for s in cores[0].schedule for c in getattr(s.encoder, "copies", None) or ()}.values()
    rng = np.random.default_rng(8)
    by_fields = 0
    for copy in copies:
        branch = copy.batch.branch
        value, valid = branch.read_ground_truth_batch() if copy.ground_truth else branch.read_batch()
        read = (torch.from_numpy(rng.normal(size=tuple(value.shape)).astype(np.float32)).to(value.dtype),
                torch.from_numpy(rng.random(tuple(valid.shape)) > 0.5))
        monkeypatch.setattr(branch, "read_ground_truth_batch" if copy.ground_truth else "read_batch", lambda: read)
        memory[:] = bytes(len(memory))
        copy.write(BatchReads())
        written = bytes(memory)
        for core in cores:  # each env's sensors: their rows and columns of the read
            for e in (s.encoder for s in core.schedule if getattr(s.encoder, "copies", None)):
                if e.copies[copy.ground_truth] is copy:
                    for field, first, end, threshold in e.columns:
                        view, at = core._templates.elements(e.templates[copy.ground_truth], field)
                        rows = read[0][core.env, e.rows, first:end].reshape(-1).numpy()
                        expected = rows if threshold is None else rows > threshold
                        assert np.array_equal(view[at], expected.astype(view.dtype)), (e.name, field)
        for _, _, places in copy.values:
            by_fields += places.fields is not None and places.fields[0].shape == (len(cores),)  # a field per row
            places.fields = None  # the indexed copy of the same places
        memory[:] = bytes(len(memory))
        copy.write(BatchReads())
        assert bytes(memory) == written, copy.batch.sensor_type
    assert by_fields >= 2  # measured and ground truth of a sensor type of many values


def sensors_yaml(tmp_path, periods, outputs=None):
    """The demo YAML with the sensors of ``periods`` (name → update_period s) and ``outputs`` (name → their
    outputs list)."""
    path = pads_yaml(tmp_path, names=tuple(periods))
    data = yaml.safe_load(path.read_text())
    for s in data["sensors"]:
        s["update_period"] = periods[s["name"]]
        if outputs and s["name"] in outputs:
            s["outputs"] = outputs[s["name"]]
    path.write_text(yaml.safe_dump(data))
    return path


def records_in_place(monkeypatch):
    """Whether each batch wrote its messages as records built in place (batch_records.applies), as batches ran."""
    used = []
    applies = batch_replay.applies

    def spied(cores, bags):
        used.append(applies(cores, bags))
        return used[-1]

    monkeypatch.setattr(batch_replay, "applies", spied)
    return used


@pytest.mark.parametrize("outputs, in_place", [
    (None, True),
    ({"pad_left": [{"profile": "wrench"}]}, False),  # a profile's message is no template: each core publishes
])
def test_batched_outputs_with_ground_truth_copied_inputs_and_sensors_of_several_periods_equal_the_lone_ones(
        tmp_path, monkeypatch, outputs, in_place):
    """Steps that publish every sensor, some, or none (periods of 2 and 3 steps at 100 Hz), measured and ground-truth
    messages interleaved, the input topics declared and written between them, a ContactSensor (two messages per
    body) and a TemperatureGrid (lumped temperatures gathered per env): each batched bag is its lone replay's."""
    recs = recordings(tmp_path / "recs")
    for name in ("reset", "gap"):
        shutil.rmtree(recs / name)
    config = sensors_yaml(tmp_path, {"pad_left": 0.02, "pad_right": 0.03, "palm_contact": 0.02,
                                     "thermal_left": 0.03}, outputs)
    used = records_in_place(monkeypatch)
    flags = ("--config", str(config), "--ground-truth", "--copy-inputs")
    status, _, err = corpus(tmp_path, recs, extra=("--batch", "4", *flags))
    assert status == 0, err
    assert used == [in_place]
    for name in ("long", "slow", "fast", "late"):
        status, _, err = corpus(tmp_path, recs / name, out=f"alone/{name}.mcap", extra=flags)
        assert status == 0, err
        for part in (f"{name}.mcap", "metadata.yaml"):
            assert (tmp_path / "out" / name / part).read_bytes() == (tmp_path / "alone" / name / part).read_bytes(), \
                (name, part)
    topics = yaml.safe_load((tmp_path / "out" / "long" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    counts = {t["topic_metadata"]["name"]: t["message_count"] for t in topics["topics_with_message_count"]}
    assert counts["/joint_states"] == 61 and counts["/tactile_sim_node/pad_left/ground_truth"] == 31
    assert counts["/tactile_sim_node/pad_right"] == 21 and counts["/tactile_sim_node/palm_contact"] == 31


def test_non_finite_joint_states_are_dropped_in_a_batch_as_alone(tmp_path, monkeypatch):
    """The lanes' world models take the joints their cores checked without checking them again: joint states with
    NaN positions or infinite velocities are dropped by each core, and each batched output equals its recording
    replayed alone."""
    qs = np.linspace(0.015, SQUEEZE, 31)
    items = {"nan": [joints(0.01 * k, [0.0, np.nan if k in (7, 8) else q, q]) for k, q in enumerate(qs)],
             "inf": [joints(0.01 * k, [0.0, q, q], velocity=(0.0, np.inf if k == 12 else 0.1, 0.0))
                     for k, q in enumerate(qs)],
             "clean": [joints(0.01 * k, [0.0, q, q]) for k, q in enumerate(qs)]}
    for name, messages in items.items():
        write_bag(tmp_path / "recs" / name, [static_tf()] + messages)
    went_alone = lone_replays(monkeypatch)
    status, out, err = corpus(tmp_path, tmp_path / "recs", extra=("--batch", "3"))
    assert status == 0, err
    assert went_alone == []
    for name in items:
        alone(tmp_path, tmp_path / "recs" / name, f"alone/{name}.mcap")
        for part in (f"{name}.mcap", "metadata.yaml"):
            assert (tmp_path / "out" / name / part).read_bytes() == (tmp_path / "alone" / name / part).read_bytes(), \
                (name, part)


def test_batched_bags_whose_chunks_are_rows_of_one_array_equal_the_lone_ones_across_chunks(tmp_path, monkeypatch):
    """Lanes in lockstep write their bags' open chunks as the rows of one array (mcap_file.ChunkRows): with chunks of
    4 KiB (closed from the rows every few steps) and lanes ending at different steps (their chunks handed back
    mid-chunk, the others kept), each batched bag is its lone replay's, and the rows wrote every lane's steps."""
    from tactile_sim.io import mcap_file

    monkeypatch.setattr(mcap_file, "CHUNK_BYTES", 4096)
    recs = recordings(tmp_path / "recs")
    for name in ("reset", "gap"):
        shutil.rmtree(recs / name)
    lanes_written, kept = [], []
    write, keep = mcap_file.ChunkRows.write, mcap_file.ChunkRows.keep

    def spied_write(self, layouts, log_ns, parts):
        lanes_written.append(len(self.files))
        return write(self, layouts, log_ns, parts)

    def spied_keep(self, rows):
        kept.append(len(rows))
        return keep(self, rows)

    monkeypatch.setattr(mcap_file.ChunkRows, "write", spied_write)
    monkeypatch.setattr(mcap_file.ChunkRows, "keep", spied_keep)
    status, out, err = corpus(tmp_path, recs, extra=("--batch", "4"))
    assert status == 0, err
    ticks = {name: int(next(line.split()[1] for line in out.splitlines() if line.startswith(name)))
             for name in ("long", "slow", "fast", "late")}
    assert sum(lanes_written) == sum(ticks.values()) and {3, 2, 1} <= set(kept)  # every lane-step, lanes ending
    for name in ticks:
        alone(tmp_path, recs / name, f"alone/{name}.mcap")
        assert (tmp_path / "out" / name / f"{name}.mcap").stat().st_size > 3 * 4096  # several chunks
        for part in (f"{name}.mcap", "metadata.yaml"):
            assert (tmp_path / "out" / name / part).read_bytes() == (tmp_path / "alone" / name / part).read_bytes(), \
                (name, part)


def test_a_batchs_stamp_words_are_each_stamps_and_a_stamp_outside_time_raises_what_a_lone_replay_raises():
    from tactile_sim.io.stamps import time_msg_from_ns
    from tactile_sim.offline.batch_records import stamp_words
    from tactile_sim.ros.sensor_encoders import stamp_word
    from test_bag_core_events import EXTREME_STAMPS

    rng = np.random.default_rng(2)
    stamps = [sec * 10**9 + nanosec for sec, nanosec in EXTREME_STAMPS] + \
        [int(x) for x in rng.integers(-2**31 * 10**9, 2**31 * 10**9, 20)]
    words = stamp_words(stamps)
    assert words.tolist() == [stamp_word(*divmod(ns, 10**9)) for ns in stamps]
    assert words.view("<u8").tobytes() == b"".join(  # the CDR bytes of each Time
        np.array([t.sec], "<i4").tobytes() + np.array([t.nanosec], "<u4").tobytes()
        for t in map(time_msg_from_ns, stamps))
    for outside in (-2**31 * 10**9 - 1, 2**31 * 10**9, 2**70, -2**70):
        with pytest.raises(ValueError) as alone:
            time_msg_from_ns(outside)
        with pytest.raises(ValueError) as batched:
            stamp_words([0, outside, 5])
        assert str(batched.value) == str(alone.value)
