"""The node's per-update shortcuts keep what they shortcut: host views of a branch read are reused only for the same
tensor over the same memory; every template, moved into the node's shared memory, still gets its stamp and the
values its encoder copies (the thermal grid's lumped link temperatures among them); joint states with names in
any order, a subset of the joints and velocities given or not land where the general path puts them; a
ContactSensor over several bodies copies each body's rows of the batch's live buffers; places that form a grid of
runs, or fields of rows, are written through a strided or structured view, with what the indexed assignment
writes."""

import numpy as np
import pytest
import torch

from helpers_ros import by_topic, demo_core, demo_dict, joint_state_msg, ns, sensors_only
from test_node_core_wire import reference_link_contact
from tactile_sim.demo_trajectory import JOINT_NAMES, SQUEEZE
from tactile_sim.io.msg_types import deserialize_cdr, serialize_cdr
from tactile_sim.ros.inputs import decode_joint_state
from tactile_sim.ros.sensor_encoders import GRID_PLACES, BatchReads, HostGather, HostRows, Places, grid_of


def test_host_rows_reuse_a_view_only_for_the_same_tensor_over_the_same_memory():
    rows = HostRows()
    t = torch.arange(12.0).reshape(2, 3, 2)
    first = rows(t)
    np.testing.assert_array_equal(first, [0, 1, 2, 3, 4, 5])
    t[0, 0, 0] = 7.0  # a view: later writes show, and the same array comes back
    assert rows(t) is first and first[0] == 7.0
    t.set_(torch.full((2, 3, 2), 3.0))  # same object, new memory: a new view
    again = rows(t)
    assert again is not first and (again == 3.0).all()
    other = torch.arange(12.0).reshape(2, 3, 2)
    assert rows(other) is not rows(t)
    strided = torch.arange(24.0).reshape(2, 3, 4)[:, :, ::2]  # env 0 is not contiguous: a fresh copy each time
    a, b = rows(strided), rows(strided)
    np.testing.assert_array_equal(a, [0, 2, 4, 6, 8, 10])
    assert a is not b


def test_grid_of_finds_the_grid_of_runs_an_index_array_spells_and_nothing_else():
    # the same two fields (runs of 6 and 4, 9 apart) of two templates (40 apart) per row (100 apart), 3 rows
    index = np.array([r * 100 + t * 40 + f * 9 + i for r in range(3) for t in range(2) for f, n in ((0, 6), (1, 6))
                      for i in range(n)])
    offset, shape, steps = grid_of(index + 7)
    assert (offset, shape, steps) == (7, (3, 2, 2, 6), (100, 40, 9, 1))
    assert grid_of(np.arange(5, 9)) == (5, (4,), (1,)) and grid_of(np.array([3])) == (3, (1,), (1,))
    # a grid whose blocks interleave (each place once, not increasing), and one whose blocks overlap (places twice)
    assert grid_of(np.array([0, 1, 4, 5, 2, 3, 6, 7])) == (0, (2, 2, 2), (2, 4, 1))
    for not_grid in ([0, 1, 2, 10, 11], [0, 2, 4], [0, 1, 0, 1], [3, 2, 1], [0, 1, 5, 6, 7, 8], [], [0, 1, 2, 1, 2, 3]):
        assert grid_of(np.array(not_grid, dtype=np.intp)) is None, not_grid


def fields_of_rows(rows: int, row: int, fields: int, field: int, n: int) -> np.ndarray:
    """The places of ``fields`` fields of ``n`` values (``field`` apart) in each of ``rows`` rows (``row`` apart)."""
    return np.array([r * row + f * field + i for r in range(rows) for f in range(fields) for i in range(n)])


@pytest.mark.parametrize("index", [fields_of_rows(6, 90, 3, 29, 25), fields_of_rows(4, 50, 3, 11, 5),
                                   np.array([4, 9, 1, 30, 31, 2]), slice(10, 40)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.uint8, np.bool_])
def test_places_put_writes_what_the_indexed_assignment_writes(index, dtype):
    rng = np.random.default_rng(3)
    n = len(range(600)[index]) if isinstance(index, slice) else index.size
    values = np.abs(rng.normal(size=n)).astype(np.float32) * 3  # casts to uint8 of values in its range
    if dtype is np.bool_:
        values = values > 2
    expected = np.zeros(600, dtype)
    expected[index] = values
    view = np.zeros(600, dtype)
    Places(view, index).put(values)
    assert view.tobytes() == expected.tobytes()
    # a view for a slice and a grid of GRID_PLACES places or more; the small grid and the scattered places indexed
    assert (Places(view, index).target is None) == (isinstance(index, np.ndarray) and index.size < GRID_PLACES)


def rows_of_fields(rows: int, step: int, fields: list[tuple[int, int]]) -> np.ndarray:
    """The places of ``fields`` ((start, length) in a row) in each of ``rows`` rows (``step`` apart), row by row."""
    return np.array([r * step + start + i for r in range(rows) for start, n in fields for i in range(n)])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.uint8, np.bool_])
def test_places_of_the_fields_of_rows_write_what_the_indexed_assignment_writes(dtype):
    # sensors of 15 and 21 taxels, force and torque fields of 45 and 63 values, in 12 rows of 400 (a template memory)
    rng = np.random.default_rng(4)
    fields = [(2, 45), (51, 45), (130, 63), (197, 63)]
    cases = {"fields": (rows_of_fields(12, 400, fields), True),
             "one row": (rows_of_fields(1, 0, [(5, 600), (700, 900)]), True),
             "rows overlap": (rows_of_fields(12, 200, fields), False),  # a row's fields reach into the next row
             "fields out of order": (rows_of_fields(12, 400, fields[::-1]), False),
             "rows not alike": (np.concatenate([rows_of_fields(11, 400, fields), 4401 + np.arange(216)]), False),
             "short fields": (rows_of_fields(12, 400, [(k * 10 + k % 3, 5) for k in range(20)]), False),
             "few rows": (rows_of_fields(4, 400, fields), False),  # fields of 216 places: the indexed copy is cheaper
             "rows apart unequally": (np.concatenate([rows_of_fields(6, 400, fields), 2500 + rows_of_fields(6, 400,
                                                                                                        fields)]),
                                      False)}
    for name, (index, by_fields) in cases.items():
        values = np.abs(rng.normal(size=index.size)).astype(np.float32) * 3  # cast as the indexed assignment casts
        if dtype is np.bool_:
            values = values > 2
        expected = np.zeros(5000, dtype)
        expected[index] = values
        places = Places(np.zeros(5000, dtype), index, rows={"one row": 1, "few rows": 4}.get(name, 12))
        places.put(values)
        assert places.view.tobytes() == expected.tobytes(), name
        assert (places.fields is not None) == by_fields and places.target is None, name


def test_host_rows_forget_old_tensors_when_full():
    rows = HostRows()
    kept = [torch.zeros(1, 2) for _ in range(HostRows.LIMIT)]
    views = [rows(t) for t in kept]
    assert rows(kept[-1]) is views[-1]
    rows(torch.ones(1, 2))  # the cache was full: emptied, then this one kept
    assert rows(kept[-1]) is not views[-1]


def test_lumped_link_temperatures_and_stamps_reach_the_thermal_messages():
    data = sensors_only(demo_dict(), {"thermal_left", "pad_left"})
    for s in data["sensors"]:
        if s["type"] == "TemperatureGrid":
            s["simulate_all_link_temperatures"] = True
    core = demo_core(data, update_rate=1000.0)
    batch = core.suite.locate("thermal_left")[0]
    for k in range(1, 40):
        core.on_joint_state(decode_joint_state(joint_state_msg([0.0, SQUEEZE, SQUEEZE])))
        out = by_topic(core.update(ns(k * 1e-3)))
        truth = batch.system.t_lump[0].double().numpy()
        (msg,) = out["~/thermal_left"]
        decoded = deserialize_cdr(msg.cdr, msg.__msgtype__)
        assert len(decoded.link_names) == truth.size > 0
        np.testing.assert_array_equal(decoded.link_temperatures, truth.astype(np.float32))
        for topic in ("~/thermal_left", "~/pad_left"):
            stamp = deserialize_cdr(out[topic][0].cdr, out[topic][0].__msgtype__).header.stamp
            assert stamp.sec * 10**9 + stamp.nanosec == ns(k * 1e-3)


def test_joint_states_in_any_order_and_subsets_land_on_their_joints():
    core = demo_core(update_rate=1000.0)
    order = core.suite.robot.actuated_joint_names
    names = tuple(reversed(order))
    q = np.array([0.01, 0.02, -0.03])
    assert core.on_joint_state(decode_joint_state(joint_state_msg(q, q * 10, names=names)))
    for name, value in zip(names, q):
        assert core._q[order.index(name)] == value and core._qd[order.index(name)] == 10 * value
    assert core._all_qd_known
    # a subset without velocities: those joints move, their velocities become unknown (finite differences)
    assert core.on_joint_state(decode_joint_state(joint_state_msg([0.5], names=(names[1],))))
    assert core._q[order.index(names[1])] == 0.5 and core._q[order.index(names[0])] == q[0]
    assert not core._all_qd_known and not core._qd_known[order.index(names[1])]
    # the same subset with a velocity again: every joint has one again
    assert core.on_joint_state(decode_joint_state(joint_state_msg([0.25], [1.5], names=(names[1],))))
    assert core._all_qd_known and core._qd[order.index(names[1])] == 1.5
    # a bad value in a message with the cached names is still dropped and changes nothing
    before = core._q.copy()
    assert not core.on_joint_state(decode_joint_state(joint_state_msg([0.1, np.inf, 0.1], names=names)))
    np.testing.assert_array_equal(core._q, before)
    assert set(JOINT_NAMES) == set(order)


def test_host_gather_copies_strided_views_of_several_storages_by_value_with_the_casts_of_numpy():
    net = torch.arange(24.0, dtype=torch.float32).reshape(1, 2, 4, 3)  # [E, B, 4, 3]
    timers = torch.tensor([[0.5, 1.5]], dtype=torch.float32)  # [E, B]
    target = np.zeros(16)
    gather = HostGather()
    gather.add(net[0, 1, 2], target, np.array([0, 1, 2]))  # (3,), a strided row of a body
    gather.add(net[0, :, 3, 1], target, np.array([5, 4]))  # a column across bodies, written in reverse
    gather.add(timers[0, 1], target, np.array([9]))  # 0-d
    array, index = gather.source(timers[:, 0])
    gather.write()
    np.testing.assert_array_equal(target[:3], [18.0, 19.0, 20.0])
    assert (target[4], target[5], target[9]) == (22.0, 10.0, 1.5) and array[index[0]] == 0.5
    net.mul_(-1.0)  # live buffers: the next write copies the new values
    timers[0, 1] = 2.25
    gather.write()
    np.testing.assert_array_equal(target[:3], [-18.0, -19.0, -20.0])
    assert target[9] == 2.25 and target[[3, 6, 7, 8]].tolist() == [0.0] * 4


def test_host_gather_writes_once_per_update_and_flags_values_above_a_threshold():
    """One gather serves every env of a batch: given an update it writes once for it; ``above`` writes whether each
    value is greater than it (a contact sensor's valid flags: evaluated since the reset)."""
    evaluations = torch.tensor([0, 3])  # [E]
    flags = np.zeros(4, np.bool_)
    gather = HostGather()
    for env in (0, 1):  # an env's flag for each of its 2 bodies
        gather.add(evaluations[env].expand(2), flags, np.array([2 * env, 2 * env + 1]), above=0)
    reads = BatchReads()
    gather.write(reads)
    assert flags.tolist() == [False, False, True, True]
    evaluations[0] = 1
    gather.write(reads)  # the same update: written already
    assert flags.tolist() == [False, False, True, True]
    gather.write(BatchReads())
    assert flags.tolist() == [True] * 4


def test_a_contact_sensor_over_several_bodies_sends_each_body_its_own_rows():
    data = sensors_only(demo_dict(), {"palm_contact"})
    (palm,) = data["sensors"]
    palm.update(prim_path="fingertip_.*", track_friction_forces=False, track_contact_points=False)
    core = demo_core(data, update_rate=1000.0)
    for k in range(1, 6):
        core.on_joint_state(decode_joint_state(joint_state_msg([0.0, SQUEEZE, SQUEEZE])))
        out = by_topic(core.update(ns(k * 1e-3)))
    bodies = ("fingertip_left", "fingertip_right")
    sent = [m for body in bodies for m in (out["~/palm_contact"][bodies.index(body)],
                                           out[f"~/palm_contact/{body}/wrench"][0])]
    expected = reference_link_contact(core, "palm_contact", sent[0].header.stamp)
    assert [serialize_cdr(m) for m in sent] == [serialize_cdr(m) for m in expected]
    assert [m.body_name for m in out["~/palm_contact"]] == list(bodies)
    assert all(abs(m.wrench.force.y) > 0 for m in out["~/palm_contact"])  # both fingertips squeeze the can


def test_a_template_memory_of_several_envs_keeps_each_template_aligned_after_room_for_its_record_head():
    """Rows of the same layout, one per env; each template's bytes are its message's, its CDR fields aligned in
    memory, after ``head`` bytes no other template uses; a stamp per row reaches only that row's messages."""
    from helpers_io import sample_link_contact_reading, sample_taxel_reading
    from tactile_sim.io import encode
    from tactile_sim.io.cdr_template import CdrTemplate
    from tactile_sim.io.stamps import time_msg_from_ns
    from tactile_sim.ros.sensor_encoders import TemplateMemory, stamp_word

    messages = [encode.encode_taxel_array(sample_taxel_reading()),
                encode.encode_wrench_stamped(sample_link_contact_reading().wrench())]
    changing = [("header.stamp", "force", "valid"), ("header.stamp", "wrench")]
    rows = [[CdrTemplate(m, c) for m, c in zip(messages, changing)] for _ in range(3)]
    memory = TemplateMemory(rows, head=31)
    assert memory.rows.shape == (3, memory.row_bytes) and memory.row_bytes % 8 == 0
    spans = []
    for t, m in zip(rows[1], messages):
        assert t.cdr() == serialize_cdr(m)
        start = memory.head_start(t) + 31
        assert start % 8 == 4 and memory.rows[1, start:start + len(t.buffer)].tobytes() == t.cdr()
        spans.append((memory.head_start(t), start + len(t.buffer)))
        view, _ = memory.elements(t, "wrench" if "wrench" in t.fields else "force")
        assert view.flags.aligned
    assert spans[0][0] >= 0 and spans[0][1] <= spans[1][0] and spans[1][1] <= memory.row_bytes
    stamps = [time_msg_from_ns(n) for n in (-ns(2.25), ns(1.5) + 1, (2**31 - 1) * 10**9 + 999_999_999)]  # sec < 0, max
    memory.write_stamps(np.array([stamp_word(s.sec, s.nanosec) for s in stamps], np.uint64))
    assert [deserialize_cdr(t.cdr(), t.msgtype).header.stamp for t in rows[2]] == [stamps[2]] * 2
    memory.write_stamp(time_msg_from_ns(ns(9.0)), env=2)
    got = [[deserialize_cdr(t.cdr(), t.msgtype).header.stamp for t in row] for row in rows]
    assert got == [[stamps[0]] * 2, [stamps[1]] * 2, [time_msg_from_ns(ns(9.0))] * 2]
    with pytest.raises(ValueError, match="same sizes"):
        TemplateMemory([rows[0], rows[1][:1]])


def test_each_ground_truth_template_is_its_measured_message_flagged_as_ground_truth():
    """The ground-truth template of a branch sensor is a copy of the measured one (not located again) with bytes of
    its own: read back by rosbags, it is the measured message with ground_truth set, for a lone core and for env 1
    of a batch (whose templates are copies of env 0's); the measured templates keep ground_truth unset."""
    import dataclasses

    from tactile_sim.config import load_config
    from tactile_sim.demo_trajectory import DEMO_CONFIG
    from tactile_sim.offline import batch_replay
    from tactile_sim.ros.node_params import NodeParams
    from tactile_sim.ros.sensor_encoders import BranchEncoder

    params = NodeParams(update_rate=100.0, viz_rate=0.0, publish_ground_truth=True)
    shared = batch_replay.SharedSuite(2)
    batch_cores = [batch_replay.EnvCore(shared, env, load_config(DEMO_CONFIG), params) for env in range(2)]
    checked = 0
    for core in (demo_core(publish_ground_truth=True), batch_cores[1]):
        for encoder in (s.encoder for s in core.schedule if isinstance(s.encoder, BranchEncoder)):
            measured, truth = (deserialize_cdr(t.buffer.tobytes(), t.msgtype) for t in encoder.templates)
            if hasattr(measured, "ground_truth"):
                assert measured.ground_truth is False and truth.ground_truth is True
                truth = dataclasses.replace(truth, ground_truth=False)
            assert serialize_cdr(truth) == encoder.templates[0].buffer.tobytes()
            checked += 1
    assert checked >= 8
