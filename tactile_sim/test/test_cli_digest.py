"""The run digest reduces messages in chunks: its series equal a message-by-message reduction written out here
(norms, sums, peaks, touches, the first message of largest load) across chunk boundaries and taxel-count changes;
what it reads straight from the CDR bytes (stamps, forces, whole chunks of one template's messages) equals the
message fields."""

import struct

import numpy as np
import pytest
from helpers_io import sample_link_contact_reading

from tactile_sim.io.cdr_template import CdrTemplate
from tactile_sim.io.encode import TAXEL_ARRAY, THERMAL_GRID, encode_link_contact
from tactile_sim.io.msg_types import deserialize_cdr, new_message, serialize_cdr
from tactile_sim.io.stamps import time_msg, time_msg_to_seconds
from tactile_sim.io.wire_message import WireMessage
from tactile_sim.offline import digest as digest_module
from tactile_sim.offline.digest import IN_RANGE, TOUCH_LEVEL, RunDigest, equal_size_runs


def taxels(t, channel, values, radii, ground_truth=False):
    head = new_message("std_msgs/msg/Header", stamp=time_msg(t), frame_id="pad")
    return new_message(TAXEL_ARRAY, header=head, sensor_name="pad", sensor_type="KinematicTaxel", radii=radii,
                       ground_truth=ground_truth, **{channel: values})


@pytest.mark.parametrize("channel, width", [("force", 3), ("distance", 1), ("contact", 1)])
def test_chunked_taxel_series_equal_the_per_message_reduction(monkeypatch, channel, width):
    monkeypatch.setattr(digest_module, "CHUNK", 7)
    rng = np.random.default_rng(width)
    digest, expected = RunDigest(), []
    for k in range(40):
        n = 4 if k < 23 else 6  # the sensor's layout changes mid-run
        radii = np.full(n, 0.01, np.float32)
        if channel == "contact":
            values = rng.random(n) < 0.3
        else:
            values = (rng.random(n * width) * (0.02 if channel == "distance" else 0.2)).astype(np.float32)
        if k in (5, 30):
            values = values * 0 + (values.max() if channel != "contact" else True)  # ties for the peak
        msg = taxels(0.01 * k, channel, values, radii)
        digest.add("/node/pad", k, msg)
        digest.add("/node/pad/ground_truth", k, taxels(0.01 * k, channel, values, radii, ground_truth=True))
        v = np.asarray(values, np.float64).reshape(n, -1)
        m = np.sqrt((v * v).sum(axis=1)) if width == 3 else v[:, 0]
        if channel == "distance":
            r = radii.astype(np.float64)
            expected.append((float(np.clip(r - m, 0.0, None).sum()), float(m.min()), bool((m < IN_RANGE * r).any()),
                             msg))
        else:
            expected.append((float(m.sum()), float(m.max()), bool((m > TOUCH_LEVEL[channel]).any()), msg))
    (series,) = digest.series.values()
    assert series.times == pytest.approx([0.01 * k for k in range(40)])
    np.testing.assert_allclose(series.load, [e[0] for e in expected], rtol=1e-12)
    np.testing.assert_allclose(series.peak, [e[1] for e in expected], rtol=1e-12)
    assert series.touch == [e[2] for e in expected]
    best = int(np.argmax([e[0] for e in expected]))  # the first message of largest load
    assert series.peak_index == best and series.peak_message is expected[best][3]
    assert series.peak_time == pytest.approx(0.01 * best)


def test_a_series_holds_a_bounded_number_of_bytes_of_large_messages(monkeypatch):
    """A sensor of many taxels: the messages waiting to be reduced stay under CHUNK_BYTES (plus one message), not
    CHUNK messages (256 messages of 160 000 taxels would be 2 GB), and the reduction is the same."""
    monkeypatch.setattr(digest_module, "CHUNK_BYTES", 10_000)
    n, held, digest = 300, [], RunDigest()  # 300 taxels: 3600 bytes of forces and 1200 of radii per message
    reduce_all = digest_module.TaxelSeries._reduce_all
    monkeypatch.setattr(digest_module.TaxelSeries, "_reduce_all",
                        lambda self, items, *a: (held.append(len(items)), reduce_all(self, items, *a)))
    forces = [np.full(3 * n, 0.01 * (k + 1), np.float32) for k in range(10)]
    for k, force in enumerate(forces):
        digest.add("/node/pad", k, taxels(0.01 * k, "force", force, np.full(n, 0.01, np.float32)))
    (series,) = digest.series.values()
    assert held == [3, 3, 3, 1]  # flushed once 3 messages (14 400 bytes) were held; the last at the end
    np.testing.assert_allclose(series.load, [n * float(np.linalg.norm(f[:3])) for f in forces], rtol=1e-6)


def test_thermal_series_keep_the_first_hottest_message():
    digest = RunDigest()
    maxima = [30.0, 35.0, 35.0, 31.0]
    for k, hottest in enumerate(maxima):
        head = new_message("std_msgs/msg/Header", stamp=time_msg(k), frame_id="tip")
        temps = np.array([20.0, hottest, 25.0], np.float32)
        digest.add("/node/thermal", k, new_message(THERMAL_GRID, header=head, sensor_name="thermal", nx=3, ny=1,
                                                   nz=1, temperatures=temps))
    (series,) = digest.series.values()
    assert series.t_max == maxima and series.t_min == [20.0] * 4 and series.peak_index == 1
    assert series.t_mean == pytest.approx([(45.0 + m) / 3 for m in maxima])


def test_equal_size_runs_split_where_the_size_changes():
    assert equal_size_runs([np.zeros(n) for n in (3, 3, 5, 5, 5, 3)]) == [(0, 2), (2, 5), (5, 6)]
    assert equal_size_runs([]) == [] and equal_size_runs(np.zeros((4, 2))) == [(0, 4)]


def test_thermal_series_of_a_grid_that_changes_size_keep_every_message():
    digest = RunDigest()
    grids = [[20.0, 30.0], [21.0, 31.0], [22.0, 40.0, 23.0], [24.0, 25.0]]
    for k, temps in enumerate(grids):
        head = new_message("std_msgs/msg/Header", stamp=time_msg(k), frame_id="tip")
        digest.add("/node/thermal", k, new_message(THERMAL_GRID, header=head, sensor_name="thermal", nx=len(temps),
                                                   ny=1, nz=1, temperatures=np.array(temps, np.float32)))
    (series,) = digest.series.values()
    assert series.t_max == [max(g) for g in grids] and series.t_min == [min(g) for g in grids]
    assert series.t_mean == pytest.approx([sum(g) / len(g) for g in grids]) and series.peak_index == 2
    assert series.times == pytest.approx([0.0, 1.0, 2.0, 3.0])


@pytest.mark.parametrize("frame, sensor, body", [("", "f", "left_foot"), ("l", "feet", "ab"), ("link_2", "s_123", "")])
def test_stamps_and_net_forces_read_from_the_bytes_equal_the_message_fields(frame, sensor, body):
    """Strings of every length modulo 4 before the 8-aligned wrench; a stamp with nanoseconds."""
    msg = encode_link_contact(sample_link_contact_reading(frame_id=frame, sensor_name=sensor, body_name=body,
                                                          stamp=12.345678901))
    wire = WireMessage(type(msg), serialize_cdr(msg), {}, {})  # nothing but the bytes
    f = msg.wrench.force
    assert digest_module.link_contact_force(wire) == digest_module.link_contact_force(msg) == (f.x, f.y, f.z)
    assert digest_module.header_seconds(wire) == digest_module.header_seconds(msg) == \
        time_msg_to_seconds(msg.header.stamp)


def test_declared_topics_are_routed_without_reading_name_and_flag():
    """A digest told what its topics carry (as replay and demo tell it for the node's topics) reduces the same
    series as one that reads every message's sensor name and branch flag."""
    rng = np.random.default_rng(5)
    routed, read = RunDigest(), RunDigest()
    routed.expect("/node/pad", "pad", False)
    routed.expect("/node/pad/ground_truth", "pad", True)
    for k in range(12):
        values = (rng.random(12) * 0.2).astype(np.float32)
        for digest in (routed, read):
            digest.add("/node/pad", k, taxels(0.01 * k, "force", values, np.full(4, 0.01, np.float32)))
            digest.add("/node/pad/ground_truth", k, taxels(0.01 * k, "force", 2 * values, np.full(4, 0.01, np.float32),
                                                           ground_truth=True))
    (a,), (b,) = routed.series.values(), read.series.values()
    assert (a.times, a.load, a.peak, a.touch, a.peak_index) == (b.times, b.load, b.peak, b.touch, b.peak_index)
    assert len(a.times) == 12
    mislabelled = taxels(1.0, "force", np.ones(12, np.float32), np.full(4, 0.01, np.float32))  # flag: measured
    routed.add("/node/pad/ground_truth", 0, mislabelled)  # the topic says ground truth: not this digest's branch
    read.add("/node/pad/ground_truth", 0, mislabelled)
    assert len(routed.series["pad"].times) == 12 and len(read.series["pad"].times) == 13


@pytest.mark.parametrize("channel, changing_radii", [("force", False), ("distance", True), ("distance", False),
                                                     ("contact", False)])
def test_template_messages_are_reduced_as_their_rosbags_messages(monkeypatch, channel, changing_radii):
    """Chunks of WireMessages of one template (read as byte rows) give the series of the same messages
    deserialised by rosbags (read field by field), across chunk boundaries and a chunk mixing both kinds."""
    monkeypatch.setattr(digest_module, "CHUNK", 7)
    n, width = 5, 3 if channel == "force" else 1
    rng = np.random.default_rng(11)
    zeros = np.zeros(n * width, bool if channel == "contact" else np.float32)
    template = CdrTemplate(taxels(0.0, channel, zeros, np.full(n, 0.01, np.float32)),
                           ("header.stamp", channel, *(("radii",) if changing_radii else ())))
    wired, read = RunDigest(), RunDigest()
    for k in range(30):
        view = template.view(channel)
        view[:] = rng.random(view.size) < 0.3 if channel == "contact" else rng.random(view.size) * 0.02
        if changing_radii:
            template.view("radii")[:] = rng.uniform(0.005, 0.015, n)
        template.view("header.stamp")[:] = np.frombuffer(struct.pack("<iI", k // 3, 123_456_789 * k % 10**9), np.uint8)
        msg = template.wire()
        wired.add("/node/pad", k, msg if k != 17 else msg.message)
        read.add("/node/pad", k, deserialize_cdr(msg.cdr, TAXEL_ARRAY))
    (a,), (b,) = wired.series.values(), read.series.values()
    assert (a.times, a.load, a.peak, a.touch, a.peak_index, a.peak_time) == \
        (b.times, b.load, b.peak, b.touch, b.peak_index, b.peak_time)
    assert len(a.times) == 30 and len(set(a.load)) > 3  # values that vary from message to message


def test_template_thermal_grids_are_reduced_as_their_rosbags_messages():
    rng = np.random.default_rng(4)
    head = new_message("std_msgs/msg/Header", frame_id="tip")
    template = CdrTemplate(new_message(THERMAL_GRID, header=head, sensor_name="thermal", nx=2, ny=2, nz=1,
                                       temperatures=np.zeros(4, np.float32)), ("header.stamp", "temperatures"))
    wired, read = RunDigest(), RunDigest()
    for k in range(9):
        template.view("temperatures")[:] = rng.normal(30.0, 3.0, 4)
        template.view("header.stamp")[:] = np.frombuffer(struct.pack("<iI", k, 0), np.uint8)
        wired.add("/node/thermal", k, template.wire())
        read.add("/node/thermal", k, deserialize_cdr(template.cdr(), THERMAL_GRID))
    (a,), (b,) = wired.series.values(), read.series.values()
    assert (a.times, a.t_min, a.t_mean, a.t_max, a.peak_index) == (b.times, b.t_min, b.t_mean, b.t_max, b.peak_index)


def test_template_messages_are_routed_as_their_rosbags_messages():
    """Messages of several templates on one undeclared topic, one template flipping its branch flag (a field a
    template may change), joint positions and torques: the digest sorts them as it sorts rosbags messages."""
    rng = np.random.default_rng(8)
    pads = {}
    for name in ("left", "right"):
        msg = taxels(0.0, "force", np.zeros(6, np.float32), np.full(2, 0.01, np.float32))
        msg.sensor_name = name
        pads[name] = CdrTemplate(msg, ("header.stamp", "force", "ground_truth"))
    torques = CdrTemplate(new_message("sensor_msgs/msg/JointState", name=["a", "b"], effort=np.zeros(2)),
                          ("header.stamp", "effort"))
    positions = CdrTemplate(new_message("sensor_msgs/msg/JointState", name=["a"], position=np.zeros(1)),
                            ("header.stamp", "position"))
    for ground_truth in (False, True):
        wired, read = RunDigest(ground_truth), RunDigest(ground_truth)
        for k in range(20):
            for name, template in pads.items():
                template.view("force")[:] = rng.random(6)
                template.view("ground_truth")[0] = name == "right" and k % 3 == 0
                template.view("header.stamp")[:] = np.frombuffer(struct.pack("<iI", k, 0), np.uint8)
            torques.view("effort")[:] = rng.standard_normal(2)
            for topic, template, kind in [("/node/pads", pads["left"], TAXEL_ARRAY),
                                          ("/node/pads", pads["right"], TAXEL_ARRAY),
                                          ("/node/torque", torques, "sensor_msgs/msg/JointState"),
                                          ("/joint_states", positions, "sensor_msgs/msg/JointState")]:
                wired.add(topic, k, template.wire())
                read.add(topic, k, deserialize_cdr(template.cdr(), kind))
        a, b = wired.series, read.series
        assert sorted(a) == sorted(b) and len(a) == (1 if ground_truth else 3)
        for name in a:
            assert a[name].times == b[name].times and len(a[name].times) > 0
            for field in ("load", "efforts"):
                if hasattr(b[name], field):
                    np.testing.assert_array_equal(getattr(a[name], field), getattr(b[name], field))
