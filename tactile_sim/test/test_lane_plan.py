"""Planned lanes of a batch (``offline/lane_plan.py``): for recordings of whole joint states, with or without what
``robot_state_publisher`` sends on TF (static transforms first, link transforms on ``/tf``), the ticks, the world
lanes' samples, the root poses and the joint inputs and launch arguments that ``PlannedSteps`` stages for all lanes
of a step at once equal, bit for bit, what the per-message path (each lane's core fed message by message and posed)
leaves in the same buffers, on adversarial recordings (random stamps with duplicates, several or no messages between
ticks, small steps back, velocities present or not message by message, the receive clock; zero to three TF messages
between joint states, link transforms and a frame outside the robot in random subsets and orders, stamps out of
order, frames that appear late); recordings that are not whole joint states (other joint sets or order, unknown
names, a NaN), whose TF inputs could change what a lane sees (a static transform late, a moving root, no root pose)
or would be dropped (a second parent, a loop, too old, NaN, not unit, too many), whose time line restarts or that
cannot be read through get no plan and are fed message by message as without one; and a batched replay that follows
the plans writes each recording's lone replay byte for byte, with a JointTorque sensor too. The ticks of a whole
time line taken at once (``line_ticks``) are those the message loop takes (``fed_ticks`` with a ``TickClock``), with
the messages fed before each, on random clock inputs (steps back within the threshold, equal times, gaps, restarts:
None where the loop raises), near and past the range it computes in."""

import numpy as np
import pytest
import yaml

from helpers_offline import run_cli, write_bag
from helpers_ros import joint_state_msg, tf_msg
from tactile_sim.demo_trajectory import JOINT_NAMES
from tactile_sim.io.input_cdr import DecodedTFMessage, TFRow
from tactile_sim.io.stamps import time_msg_from_ns
from tactile_sim.offline import batch_replay, lane_plan
from tactile_sim.offline.bag_inputs import INPUT_BLOCK, BagInputs, open_bag
from tactile_sim.offline.corpus import _config
from tactile_sim.offline.lane_plan import PLAN_MAX_MESSAGES, GoAlone, PlannedSteps, fed_ticks, plan_lane
from tactile_sim.offline.tick_clock import LINE_TICKS_RANGE, TickClock, line_ticks
from tactile_sim.ros.node_params import NodeParams
from test_bag_core_events import damaged_bag
from test_cli_replay import IDENTITY, PADS, ns, pads_yaml

RATE = 100.0
NS = 10**9
JUMP, GAP = 500_000_000, 1_000_000_000


def rooted_yaml(tmp_path):
    """The pads configuration with the robot's root as world frame (no TF poses anything)."""
    path = pads_yaml(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["suite"]["world_frame"] = "base_link"
    path.write_text(yaml.safe_dump(data))
    return path


def adversarial(rng, n: int, receive_shift: float = 0.0):
    """n joint states of every joint in order: stamps that mostly grow by 0–25 ms (some equal, a few 1–20 ms back),
    velocities in some messages only, received in stamp order plus a jitter."""
    t, items = 2.0 + rng.uniform(0, 0.01), []
    for k in range(n):
        step = rng.choice([0.0, 0.003, 0.01, 0.01, 0.01, 0.017, 0.025, -0.004])
        t = max(0.0, t + step)
        velocity = rng.standard_normal(3) if rng.random() < 0.5 else None
        position = [0.0, 0.0] + list(rng.uniform(0.0, 0.04, 1)) if rng.random() < 0.1 else rng.uniform(0, 0.04, 3)
        receive = 5.0 + 0.01 * k + receive_shift
        items.append(("/joint_states", ns(receive), joint_state_msg(position, velocity, stamp=t)))
    return items


MOVABLE = (("base_link", "palm"), ("palm", "finger_left"), ("palm", "finger_right"))
"""The demo gripper's movable joints as TF edges (parent link, child link)."""
FIXED = (("finger_left", "fingertip_left"), ("finger_right", "fingertip_right"))


def unit_quat(rng):
    q = rng.standard_normal(4)
    return tuple(q / np.linalg.norm(q))


def link_tf(rng, edges, t: float, back=(0.0,)):
    """A /tf message of random transforms of ``edges`` ((parent, child) pairs), each stamped t (s) less one of
    ``back``."""
    return tf_msg(*((parent, child, tuple(rng.uniform(-0.1, 0.1, 3)), unit_quat(rng), max(0.0, t - rng.choice(back)))
                    for parent, child in edges))


def statics(*edges, receive: int = 0):
    """A /tf_static item received at ``receive`` ns: world → base_link (10 cm along z) and ``edges`` (2 cm)."""
    return ("/tf_static", receive, tf_msg(("world", "base_link", (0.0, 0.0, 0.1), IDENTITY, 0.0),
                                          *((parent, child, (0.0, 0.0, 0.02), IDENTITY, 0.0)
                                            for parent, child in edges)))


def with_tf(rng, n: int):
    """:func:`adversarial`'s joint states after the static transforms (world → base_link, and the fixed joints' in
    some recordings), each received after zero to three /tf messages of link transforms (the movable joints', and the
    fixed ones' where they are not static) and world → camera: random subsets in random order, stamps the joint
    state's or up to 30 ms back; all but the first from a random joint state on."""
    fixed_static = rng.random() < 0.5
    edges = MOVABLE + (() if fixed_static else FIXED) + (("world", "camera"),)  # and a frame outside the robot
    late = int(rng.integers(0, n))
    items = [statics(*(FIXED if fixed_static else ()), receive=ns(4.9))]  # the receive clock's first input
    for k, (topic, receive, msg) in enumerate(adversarial(rng, n)):
        t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        shown = edges if k >= late else edges[:1]
        m = int(rng.integers(0, 4))
        for j in range(m):
            subset = [shown[i] for i in rng.permutation(len(shown))[:int(rng.integers(1, len(shown) + 1))]]
            items.append(("/tf", receive - 1_000_000 * (m - j), link_tf(rng, subset, t, (0.0, 0.0, 0.01, 0.03))))
        items.append((topic, receive, msg))
    return items


def one_layout(rng, n: int):
    """The demo's inputs with random values, one ``/tf`` layout throughout: the static transforms (world →
    base_link, and the fixed joints' in some recordings), then :func:`adversarial`'s joint states, each with zero to
    two /tf messages received just before or after it, every one of the link transforms that are not static and
    world → camera in one order, stamped the joint state's or up to 30 ms back."""
    fixed_static = rng.random() < 0.5
    edges = MOVABLE + (() if fixed_static else FIXED) + (("world", "camera"),)
    items = [statics(*(FIXED if fixed_static else ()), receive=ns(4.9))]
    for topic, receive, msg in adversarial(rng, n):
        t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        after = rng.random() < 0.5
        tfs = [("/tf", receive + (1 if after else -1) * 1_000_000 * (j + 1), link_tf(rng, edges, t, (0.0, 0.01, 0.03)))
               for j in range(int(rng.integers(0, 3)))]
        items += [(topic, receive, msg), *tfs] if after else [*tfs[::-1], (topic, receive, msg)]
    return items


def tf_ns(edges, stamps_ns):
    """A /tf message of identity transforms of ``edges``, stamped ``stamps_ns`` (ns each)."""
    msg = tf_msg(*((parent, child, (0.0, 0.0, 0.0), IDENTITY, 0.0) for parent, child in edges))
    for tr, stamp in zip(msg.transforms, stamps_ns):
        tr.header.stamp = time_msg_from_ns(stamp)
    return msg


@pytest.fixture
def row_reads(monkeypatch):
    """A list that grows by one whenever ``plan_lane`` reads a recording through as rows (its array path refused
    it)."""
    calls, read = [], lane_plan._read
    monkeypatch.setattr(lane_plan, "_read", lambda blocks, core: calls.append(None) or read(blocks, core))
    return calls


def plan_of(bag, clock, core):
    inputs = BagInputs(open_bag(bag), clock=clock)
    return plan_lane(inputs, inputs.core_blocks(), core, RATE, JUMP, GAP)[0]


def plan_bits(plan):
    """Every field of a LanePlan (None: none) as exact values: arrays as their dtype, shape and bytes, floats by repr,
    the prefix messages by their fields."""
    if plan is None:
        return None
    out = []
    for name, value in zip(plan._fields, plan):
        if isinstance(value, np.ndarray):
            out.append((name, value.dtype.str, value.shape, value.tobytes()))
        elif name == "prefix":
            out.append((name, [(kind, type(m).__name__, (m.stamps_ns, m.parents, m.children, m.values.tobytes(),
                                                          repr(m.norms)) if type(m) is TFRow else repr(m))
                               for kind, m in value]))
        else:
            out.append((name, repr(value)))
    return out


def lanes_of(cores, bags, plan):
    lanes = []
    for core, (bag, clock) in zip(cores, bags):
        inputs = BagInputs(open_bag(bag), clock=clock)
        lanes.append(batch_replay.Lane(None, core, inputs.core_blocks(), None, RATE, JUMP, GAP, False,
                                       inputs if plan else None))
    return lanes


def per_message(suite, cores, bags):
    """Per step: each stepped lane's (env, tick, LaneSample) and the staged inputs of those envs, fed message by
    message."""
    suite.rewind()  # first: the cores' world lanes are lanes of the rewound suite's world model
    for core in cores:
        core.rewind()
    live, steps = lanes_of(cores, bags, False), []
    while live:
        stepped = []
        for lane in live:
            tick = lane.next_tick()
            if tick is not None:
                stepped.append((lane, tick, lane.core.pose(tick.t_ns)))
        if not stepped:
            break
        steps.append(([(lane.core.env, tick, sample) for lane, tick, sample in stepped],
                      staged(suite, [lane.core.env for lane, _, _ in stepped])))
        live = [lane for lane, _, _ in stepped]
    return steps


def planned(suite, cores, bags):
    """:func:`per_message` by the lanes' plans."""
    suite.rewind()  # first: the cores' world lanes are lanes of the rewound suite's world model
    for core in cores:
        core.rewind()
    lanes = lanes_of(cores, bags, True)
    assert all(lane.follow_plan() for lane in lanes)
    plans = PlannedSteps(suite.world, [(lane.core.env, lane.plan) for lane in lanes])
    steps, step = [], 0
    while True:
        stepped = [lane for lane in lanes if step < len(lane.plan.ticks)]
        if not stepped:
            break
        plans.stage(step)
        steps.append(([(lane.core.env, lane.plan.ticks[step], lane.plan.sample(step)) for lane in stepped],
                      staged(suite, [lane.core.env for lane in stepped])))
        step += 1
    return steps


def staged(suite, envs):
    """The bytes of every input of update_envs of ``envs`` (the root poses too)."""
    return [x[envs].tobytes() for x in suite.world.host_env_inputs()] + \
        [x[envs].numpy().tobytes() for x in suite.world.root_pose]


def _six_cores(tmp, yaml_of):
    """(tmp, the shared suite, 6 env cores) of the configuration ``yaml_of(tmp)`` writes."""
    config = _config(str(yaml_of(tmp)))
    cores = batch_replay.BatchCores().take(config, NodeParams(update_rate=RATE, viz_rate=0.0),
                                           [batch_replay.kept_log([]) for _ in range(6)])
    return tmp, cores[0]._shared.suite, cores


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    return _six_cores(tmp_path_factory.mktemp("plan"), rooted_yaml)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_planned_steps_stage_what_the_per_message_path_stages(batch, seed):
    tmp, suite, cores = batch
    rng = np.random.default_rng(seed)
    bags = []
    for k in range(6):
        bag = write_bag(tmp / f"s{seed}_{k}", adversarial(rng, int(rng.integers(20, 120))))
        bags.append((bag, "receive" if k == 5 else "header"))
    expected, got = per_message(suite, cores, bags), planned(suite, cores, bags)
    assert len(got) == len(expected) > 20
    assert got == expected
    assert any(sample.joint_vel_measured for lanes, _ in got for _, _, sample in lanes)


@pytest.fixture(scope="module")
def tf_batch(tmp_path_factory):
    """:func:`batch` with the root link posed by TF (world frame ``world``)."""
    return _six_cores(tmp_path_factory.mktemp("tf_plan"), pads_yaml)


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_recordings_with_link_transforms_stage_what_the_per_message_path_stages(tf_batch, seed):
    tmp, suite, cores = tf_batch
    rng = np.random.default_rng(seed)
    bags = [(write_bag(tmp / f"s{seed}_{k}", with_tf(rng, int(rng.integers(20, 120)))),
             "receive" if k == 5 else "header") for k in range(6)]
    expected = per_message(suite, cores, bags)
    assert not any(core.stats.dropped for core in cores) and any(core.tf.has_frame("finger_left") for core in cores)
    got = planned(suite, cores, bags)
    assert len(got) == len(expected) > 20
    assert got == expected


@pytest.mark.parametrize("seed", [12, 13, 14])
def test_recordings_of_one_tf_layout_are_planned_from_arrays_as_from_their_rows(tf_batch, seed, row_reads,
                                                                                 monkeypatch):
    tmp, suite, cores = tf_batch
    rng = np.random.default_rng(seed)
    bags = [(write_bag(tmp / f"one{seed}_{k}", one_layout(rng, int(rng.integers(20, 300)))),
             "receive" if k == 5 else "header") for k in range(6)]
    expected = per_message(suite, cores, bags)
    assert not any(core.stats.dropped for core in cores)
    got = planned(suite, cores, bags)
    assert row_reads == []  # every recording planned from its arrays
    assert len(got) == len(expected) > 20
    assert got == expected
    arrays = [plan_bits(plan_of(bag, clock, core)) for core, (bag, clock) in zip(cores, bags)]
    monkeypatch.setattr(lane_plan, "_array_inputs", lambda inputs, core: None)
    assert arrays == [plan_bits(plan_of(bag, clock, core)) for core, (bag, clock) in zip(cores, bags)]
    assert len(row_reads) == 6


def seconds_too_old(oldest_ns: int, newest_ns: int, cache: float, f64: bool = False) -> bool:
    """Whether a stamp is older than the newest by more than ``cache`` s as the TF buffer compares seconds: those
    of the integer ns exactly rounded (or, ``f64``, of the ns as float64 first)."""
    if f64:
        oldest_ns, newest_ns = np.float64(oldest_ns), np.float64(newest_ns)
    return bool(oldest_ns / NS < newest_ns / NS - cache)


def test_reading_the_arrays_leaves_the_readers_decoders_as_they_were(tf_batch):
    """(core_blocks then decodes as without them: the layouts it keeps, and so which rows share them.)"""
    tmp, suite, cores = tf_batch
    inputs = BagInputs(open_bag(write_bag(tmp / "decoders", one_layout(np.random.default_rng(16), 40))))
    state = {name: dict(vars(decoder)) for name, decoder in inputs.reader.decoders.items()}
    assert inputs.input_arrays(PLAN_MAX_MESSAGES) is not None
    assert all(vars(decoder)[field] is value for name, decoder in inputs.reader.decoders.items()
               for field, value in state[name].items())


@pytest.mark.parametrize("base, old", [(20 * NS, None), (1_700_000_000_123_456_789, True),
                                       (1_234_567_890_987_654_321, False)])
def test_tf_ages_at_the_edge_of_the_buffer_window_are_judged_as_the_rows_judge_them(tf_batch, base, old, monkeypatch):
    """Message 15's oldest transform 1 ns before, at and after the window's edge behind the newest stamp before it;
    for stamps past 2⁵³ ns, where its seconds from float64 ns round otherwise than from the integers (``old``: too
    old by the integers' seconds, not by the others', or the other way round)."""
    tmp, suite, cores = tf_batch
    cache, cache_ns = cores[0].tf.cache_time, round(cores[0].tf.cache_time * NS)
    newest = base + 14 * 10_000_000
    offsets, expected = [-1, 0, 1], [False, True, True]  # planned: none too old (1 ns past the edge, it is)
    if old is not None:
        d = next(d for d in range(-1000, 1000) if seconds_too_old(newest - cache_ns + d, newest, cache) is old and
                 seconds_too_old(newest - cache_ns + d, newest, cache, f64=True) is not old)
        offsets, expected = [d], [not old]
    outcomes = []
    for d in offsets:
        items = [statics()]
        for k in range(30):
            t = 20.0 + 0.01 * k
            stamps = [base + 10_000_000 * k] * 3
            if k == 15:
                stamps[1] = newest - cache_ns + d
            items += [("/joint_states", ns(t), joint_state_msg([0.0, 0.01, 0.01], stamp=t)),
                      ("/tf", ns(t), tf_ns(MOVABLE, stamps))]
        bag = write_bag(tmp / f"edge_{base}_{d}", items)
        monkeypatch.undo()
        reads = []
        monkeypatch.setattr(lane_plan, "_read", lambda blocks, core, read=lane_plan._read: reads.append(None) or
                            read(blocks, core))
        got = plan_bits(plan_of(bag, "header", cores[0]))
        assert len(reads) == (got is None)  # a plan from the arrays, else the rows refused it too
        monkeypatch.setattr(lane_plan, "_array_inputs", lambda inputs, core: None)
        assert got == plan_bits(plan_of(bag, "header", cores[0]))
        outcomes.append(got is not None)
    assert outcomes == expected

def test_static_messages_of_more_than_a_block_are_taken_from_arrays_as_from_their_rows(tf_batch, row_reads,
                                                                                        monkeypatch):
    """300 static TF messages of one size first, those of the first block of rows in one layout, the others in
    another: the rows decode those of each block at once, each block in its first message's layout."""
    tmp, suite, cores = tf_batch
    rng = np.random.default_rng(15)
    items = [("/tf_static", 0, tf_msg(("world", "base_link", (0.0, 0.0, 0.1), IDENTITY, 0.0),
                                      ("world", camera, (0.0, 0.0, 0.0), IDENTITY, 0.0)))
             for camera in ["camera_a"] * INPUT_BLOCK + ["camera_b"] * 44]
    for k in range(40):
        t = 20.0 + 0.01 * k
        items += [("/joint_states", ns(t), joint_state_msg(rng.uniform(0, 0.04, 3), stamp=t)),
                  ("/tf", ns(t), link_tf(rng, MOVABLE + FIXED, t))]
    bag = write_bag(tmp / "statics", items)
    got = plan_of(bag, "header", cores[0])
    assert got is not None and len(got.ticks) > 20 and row_reads == []
    assert [type(m) for _, m in got.prefix] == [TFRow] * (INPUT_BLOCK + 44)
    monkeypatch.setattr(lane_plan, "_array_inputs", lambda inputs, core: None)
    assert plan_bits(got) == plan_bits(plan_of(bag, "header", cores[0]))


TF_CASES = ["late_static", "static_after_tf", "moving_root", "second_parent", "too_old", "nan", "nan_alone",
            "not_unit", "not_unit_alone", "too_many", "too_many_every", "too_many_static", "static_link", "loop",
            "no_root", "restart", "empty", "other_frame", "renamed", "static_of_tf_size", "short_quat"]
PLANNED = ("empty", "other_frame", "renamed", "static_of_tf_size")
"""Cases that change nothing a lane sees."""
DROPPING = ("second_parent", "too_old", "nan", "nan_alone", "not_unit", "not_unit_alone", "short_quat", "too_many",
            "too_many_every", "too_many_static", "static_link", "loop")
"""Cases whose TF inputs the core drops (counts, logs)."""
FROM_ARRAYS = ("late_static", "restart")
"""Cases whose inputs the array path of a plan takes (their ticks then refuse a plan); it leaves every other case to
the rows: /tf messages of several sizes or layouts, or of no transform, a static TF message after a /tf message or of
the /tf messages' size, any /tf message that the rows would not plan."""
UNREAD = ("moving_root", "second_parent", "nan_alone", "not_unit_alone", "too_many", "empty", "other_frame", "renamed",
          "static_of_tf_size")
"""Cases whose inputs ``BagInputs.input_arrays`` does not read at once: /tf messages of several sizes or layouts, a
static TF message of their size."""


@pytest.mark.parametrize("case", TF_CASES)
def test_recordings_whose_tf_could_change_what_a_lane_sees_get_no_plan(tf_batch, case, row_reads):
    tmp, suite, cores = tf_batch
    rng = np.random.default_rng(TF_CASES.index(case))
    items = [statics(("palm", "finger_left")) if case == "static_link" else
             statics(("finger_left", "world")) if case == "loop" else statics()]
    for k in range(30):
        t = 20.0 + 0.01 * k
        items += [("/tf", ns(t) - 1000, link_tf(rng, MOVABLE, t)),
                  ("/joint_states", ns(t), joint_state_msg([0.0, 0.01, 0.01], stamp=t))]
    if case == "late_static":  # after tick 0, before any /tf
        items = [item for item in items if item[0] != "/tf"]
        items.insert(8, ("/tf_static", ns(20.05), statics(*FIXED)[2]))
    elif case == "static_after_tf":
        items.insert(2, ("/tf_static", ns(20.0) - 500, statics(*FIXED)[2]))
    elif case == "moving_root":  # posed by /tf only
        items[0] = ("/tf", 0, link_tf(rng, [("world", "base_link")], 20.0))
        items.insert(15, ("/tf", ns(20.07) - 500, link_tf(rng, [("world", "base_link")], 20.07)))
    elif case == "second_parent":
        items.insert(15, ("/tf", ns(20.07) - 500, link_tf(rng, [("base_link", "finger_left")], 20.07)))
    elif case == "too_old":  # a row of its block, of the layout of the messages before it
        items[41] = ("/tf", ns(20.2) - 1000, link_tf(rng, MOVABLE, 20.2, (10.5,)))
    elif case == "too_many":
        items[15] = ("/tf", ns(20.07) - 1000, link_tf(rng, MOVABLE * 334, 20.07))
    elif case == "too_many_static":
        items[0] = ("/tf_static", 0, tf_msg(("world", "base_link", (0.0, 0.0, 0.1), IDENTITY, 0.0),
                                            *(("world", f"f{i}", (0.0, 0.0, 0.0), IDENTITY, 0.0) for i in range(1000))))
    elif case == "other_frame":
        items.insert(15, ("/tf", ns(20.07) - 500, link_tf(rng, [("world", "camera")], 20.07)))
    elif case == "nan":  # a row of its block
        items[15] = ("/tf", ns(20.07) - 1000, tf_msg(*((parent, child, (0.0, np.nan, 0.0), IDENTITY, 20.07)
                                                       for parent, child in MOVABLE)))
    elif case == "nan_alone":
        items.insert(15, ("/tf", ns(20.07) - 500, tf_msg(("palm", "finger_left", (0.0, np.nan, 0.0), IDENTITY, 20.07))))
    elif case.startswith("not_unit"):  # alone: of another size, not decoded with the rest of its block
        edges = MOVABLE[1:2] if case == "not_unit_alone" else MOVABLE
        items[15] = ("/tf", ns(20.07) - 1000, tf_msg(*((parent, child, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.01), 20.07)
                                                       for parent, child in edges)))
    elif case == "no_root":
        del items[0]
    elif case == "restart":  # the joint states' time line jumps back
        items[42] = ("/joint_states", ns(20.2), joint_state_msg([0.0, 0.01, 0.01], stamp=19.5))
    elif case == "too_many_every":  # /tf messages of one layout
        items = [item if item[0] != "/tf" else (item[0], item[1], link_tf(rng, MOVABLE * 334, item[1] / NS))
                 for item in items]
    elif case == "renamed":  # a /tf message of the others' size and offsets but a frame outside the robot
        items[15] = ("/tf", ns(20.07) - 1000, link_tf(rng, MOVABLE[:2] + (("palm", "finger_rigxt"),), 20.07))
    elif case == "short_quat":  # a row of its block
        items[15] = ("/tf", ns(20.07) - 1000, tf_msg(*((parent, child, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.99), 20.07)
                                                       for parent, child in MOVABLE)))
    elif case == "static_of_tf_size":  # a plan all the same
        items[0] = ("/tf_static", 0, tf_msg(*((parent, child, (0.0, 0.0, 0.1), IDENTITY, 0.0) for parent, child in
                                              (("world", "base_link"), ("world", "camera_a"), ("world", "camera_b")))))
    elif case == "empty":  # a plan all the same: these change nothing
        items.insert(15, ("/tf", ns(20.07) - 500, tf_msg()))
        items.insert(0, ("/tf", 0, tf_msg()))
    bag = write_bag(tmp / f"no_plan_{case}", items)
    if case in ("renamed", "static_of_tf_size"):  # one size
        topics = ["/tf", "/tf_static"] if case == "static_of_tf_size" else ["/tf"]
        assert len({len(data) for _, _, _, data in open_bag(bag).raw_messages(topics)}) == 1
    if case in ("nan", "not_unit", "not_unit_alone", "short_quat", "renamed"):  # its odd message decoded with the
        # others of its block, or alone
        odd = [type(m) for block in BagInputs(open_bag(bag)).core_blocks() for kind, _, log_ns, _, m in block
               if log_ns == ns(20.07) - 1000]
        assert odd == [DecodedTFMessage if case in ("not_unit_alone", "renamed") else TFRow]
    assert (BagInputs(open_bag(bag)).input_arrays(PLAN_MAX_MESSAGES) is None) is (case in UNREAD)
    fed = []
    for plan in (True, False):  # with a plan asked for, fed message by message from the messages it read
        suite.rewind()
        cores[0].rewind()
        lane = lanes_of(cores[:1], [(bag, "header")], plan)[0]
        assert not plan or lane.follow_plan() is (case in PLANNED)
        assert (lane.plan is not None) is (plan and case in PLANNED)
        assert len(row_reads) == (case not in FROM_ARRAYS)
        fed.append([])
        while (tick := lane.next_tick()) is not None:
            fed[-1].append((tick, lane.core.pose(tick.t_ns), lane.core.joint_positions()[1].tobytes()))
        fed[-1].append((lane.alone, dict(lane.core.stats.dropped)))
    if case not in PLANNED:
        assert fed[0] == fed[1] and len(fed[0]) >= 20
    assert bool(fed[1][-1][1]) is (case in DROPPING)


@pytest.mark.parametrize("tf", [False, True])  # joint states only (decoded as arrays), or after a static transform
@pytest.mark.parametrize("case", ["subset", "reversed", "renamed", "unknown", "nan", "back"])
def test_recordings_that_are_not_whole_joint_states_or_restart_get_no_plan(batch, tf_batch, case, tf):
    tmp, suite, cores = tf_batch if tf else batch
    items = [("/joint_states", ns(0.01 * k), joint_state_msg([0.0, 0.01, 0.01], stamp=0.01 * k)) for k in range(30)]
    if case == "subset":
        items[7] = ("/joint_states", ns(0.07), joint_state_msg([0.01, 0.01], names=JOINT_NAMES[1:], stamp=0.07))
    elif case == "reversed":
        items[7] = ("/joint_states", ns(0.07), joint_state_msg([0.01, 0.01, 0.0], names=JOINT_NAMES[::-1], stamp=0.07))
    elif case == "renamed":  # with velocities, of another size: the first of its own layout
        items[7] = ("/joint_states", ns(0.07), joint_state_msg([0.01, 0.01, 0.0], [0.0, 0.0, 0.0],
                                                               names=JOINT_NAMES[::-1], stamp=0.07))
    elif case == "unknown":
        items[7] = ("/joint_states", ns(0.07), joint_state_msg([0.0, 0.01, 0.01, 1.0], names=(*JOINT_NAMES, "x"),
                                                               stamp=0.07))
    elif case == "nan":
        items[7] = ("/joint_states", ns(0.07), joint_state_msg([0.0, np.nan, 0.01], stamp=0.07))
    else:
        items[20] = ("/joint_states", ns(0.2), joint_state_msg([0.0, 0.01, 0.01], stamp=0.19 - 0.6))
    bag = write_bag(tmp / f"no_plan_{case}_{tf}", [statics()] * tf + items)
    fed = []
    for plan in (True, False):  # with a plan asked for, fed message by message from the messages it read
        suite.rewind()
        cores[0].rewind()
        lane = lanes_of(cores[:1], [(bag, "header")], plan)[0]
        assert not plan or lane.follow_plan() is False
        assert lane.plan is None
        fed.append([])
        while (tick := lane.next_tick()) is not None:
            fed[-1].append((tick, lane.core.pose(tick.t_ns), lane.core.joint_positions()[1].tobytes()))
        fed[-1].append(lane.alone)
    assert fed[0] == fed[1] and len(fed[0]) >= 20


def test_a_recording_of_joint_states_only_is_planned_from_its_arrays_without_reading_its_rows(batch):
    tmp, suite, cores = batch
    bag = write_bag(tmp / "arrays", adversarial(np.random.default_rng(7), 50))

    def unread():
        raise AssertionError("the rows were read")
        yield

    blocks = unread()
    plan, feed = plan_lane(BagInputs(open_bag(bag)), blocks, cores[0], RATE, JUMP, GAP)
    assert plan is not None and len(plan.ticks) > 20 and feed is blocks


def test_a_recording_that_cannot_be_read_through_gets_no_plan_and_stops_where_it_stops_unplanned(batch):
    tmp, suite, cores = batch
    bag = damaged_bag(tmp / "damaged", [], [("/joint_states", ns(0.01 * k),
                                             joint_state_msg([0.0, 0.01, 0.01], stamp=0.01 * k)) for k in range(400)])
    fed = []
    for plan in (True, False):
        cores[0].rewind()
        lane = lanes_of(cores[:1], [(bag, "header")], plan)[0]
        assert not plan or lane.follow_plan() is False
        assert lane.plan is None
        ticks = []
        while (tick := lane.next_tick()) is not None:
            ticks.append(tick)
        fed.append((ticks, lane.alone))
    assert fed[0] == fed[1] and 0 < len(fed[0][0]) < 399 and "reading stopped" in fed[0][1]


def batch_and_lone_replays(tmp_path, monkeypatch, recs, config, count):
    """Replay the ``count`` recordings r0, r1, … of ``recs`` with ``config`` as one batch and each alone; assert that
    the batch followed a plan for every one, replayed none alone, and wrote each lone replay's bag byte for byte."""
    followed, alone = [], []
    monkeypatch.setattr(batch_replay, "PlannedSteps", lambda world, lanes: followed.append(len(lanes)) or
                        PlannedSteps(world, lanes))
    run_job = batch_replay.run_job
    monkeypatch.setattr(batch_replay, "run_job", lambda *args: alone.append(args) or run_job(*args))

    def replay(source, out, *extra):
        status, _, err = run_cli("replay", str(source), "--config", str(config), "-o", str(tmp_path / out), "--rate",
                                 "100", "--no-progress", *extra)
        assert status == 0, err

    replay(recs, "out", "--batch", str(count))
    assert followed == [count] and alone == []
    for k in range(count):
        replay(recs / f"r{k}", f"alone/r{k}.mcap")
        for part in (f"r{k}.mcap", "metadata.yaml"):
            assert (tmp_path / "out" / f"r{k}" / part).read_bytes() == \
                (tmp_path / "alone" / f"r{k}" / part).read_bytes(), (k, part)


def test_a_batch_following_plans_writes_each_recordings_lone_replay(tmp_path, monkeypatch):
    rng = np.random.default_rng(9)
    recs = tmp_path / "recs"
    for k in range(3):
        write_bag(recs / f"r{k}", adversarial(rng, 40 + 30 * k, receive_shift=0.001 * k))
    batch_and_lone_replays(tmp_path, monkeypatch, recs, rooted_yaml(tmp_path), 3)


def test_a_batch_following_plans_of_link_transforms_with_joint_torque_writes_each_recordings_lone_replay(
        tmp_path, monkeypatch):
    rng = np.random.default_rng(11)
    recs = tmp_path / "recs"
    for k in range(3):  # the demo's inputs: static transforms, then per tick a joint state and the link transforms
        items = [statics(*FIXED)]
        for i in range(40 + 15 * k):
            t = 0.01 * i
            items += [("/joint_states", ns(t), joint_state_msg(rng.uniform(0, 0.04, 3), rng.standard_normal(3),
                                                                stamp=t)),
                      ("/tf", ns(t), link_tf(rng, MOVABLE, t))]
        write_bag(recs / f"r{k}", items)
    batch_and_lone_replays(tmp_path, monkeypatch, recs, pads_yaml(tmp_path, names=(*PADS, "joint_torque")), 3)
    assert "joint_torque" in (tmp_path / "out" / "r0" / "metadata.yaml").read_text()


def loop_ticks(clock_ns, receive_ns, rate, jump, gap):
    """(ticks, messages fed before each) of the message loop over inputs of those clock and receive times; None where
    it raises GoAlone."""
    clock, fed, ticks = TickClock(rate, jump, gap), [], []
    block = [("joint_states", "/joint_states", r, c, None) for c, r in zip(clock_ns, receive_ns)]
    try:
        for _ in fed_ticks(clock, [block], {"joint_states": lambda message: fed.append(None)}):
            ticks.append((clock.take(), len(fed)))
    except GoAlone:
        return None
    return [t for t, _ in ticks], [n for _, n in ticks]


def random_line(rng, restart: bool):
    """(clock ns, receive ns) of 0–150 inputs: steps of 0–25 ms (some 0, some 4 ms back), one exactly the jump
    threshold back and one exactly the gap threshold ahead of the clock; with ``restart``, then one just past a
    threshold."""
    m = int(rng.integers(0, 150))
    steps = rng.choice([0, 1, 3_000_000, 10_000_000, 17_000_000, 25_000_000, -4_000_000], m,
                       p=[0.1, 0.05, 0.1, 0.45, 0.1, 0.1, 0.1])
    t0 = int(rng.choice([0, 2_000_000_123, -7_000_000_001, 1_700_000_000_123_456_789, LINE_TICKS_RANGE // 2]))
    clock = t0 + np.cumsum(steps).astype(np.int64)
    past = int(rng.choice([-JUMP - 1, GAP + 1, -3 * JUMP, 2 * GAP]))
    edges = [(-JUMP, False), (GAP, True)] + [(past, True)] * restart
    for at, (edge, shift) in zip(sorted(rng.choice(np.arange(1, m), len(edges), replace=False)) if m > 3 else [],
                                 edges):
        moved = np.maximum.accumulate(clock)[at - 1] + edge - clock[at]
        clock[at:at + 1 if not shift else m] += moved  # a step back alone, or the line from there on moved
    receive = int(rng.integers(0, 10**18)) + np.cumsum(rng.integers(0, 30_000_000, m))
    return clock, receive.astype(np.int64)


@pytest.mark.parametrize("seed", range(30))
def test_line_ticks_are_the_ticks_the_message_loop_takes(seed):
    rng = np.random.default_rng(seed)
    for trial in range(20):
        clock_ns, receive_ns = random_line(rng, restart=trial % 4 == 0)
        rate = float(rng.choice([100.0, 33.0, 1000.0, 7.3, 250.5, 0.4]))
        expected = loop_ticks(clock_ns.tolist(), receive_ns.tolist(), rate, JUMP, GAP)
        got = line_ticks(clock_ns, receive_ns, rate, JUMP, GAP)
        if expected is None:
            assert got is None
        else:
            assert got is not None and got[0] == expected[0] and got[1].tolist() == expected[1]


def test_line_ticks_near_and_past_their_range():  # in range up to the tick after the last one
    clock_ns = np.array([0, 10, 10, 7, 30, 44, 41, 60, 75], dtype=np.int64) * 1_000_000
    receive_ns = np.arange(len(clock_ns), dtype=np.int64) * 10_000_000 + 5
    slow = (np.array([0, NS]), np.array([0, 0]))  # at 1e-9 Hz the tick after the first at 10¹⁸ ns, at 1e-10 Hz 10¹⁹
    near = [(clock_ns + LINE_TICKS_RANGE - NS - int(clock_ns.max()), receive_ns, 100.0),
            (clock_ns - LINE_TICKS_RANGE + 1 - int(clock_ns.min()), receive_ns, 100.0), (*slow, 1e-9)]
    for clock, receive, rate in near:
        assert line_ticks(clock, receive, rate, JUMP, GAP)[0] == \
            loop_ticks(clock.tolist(), receive.tolist(), rate, JUMP, GAP)[0] != []
    past = [(clock_ns + LINE_TICKS_RANGE - int(clock_ns.max()), receive_ns, 100.0, JUMP, GAP),
            (clock_ns, receive_ns - int(receive_ns.min()) - LINE_TICKS_RANGE, 100.0, JUMP, GAP),
            (clock_ns, receive_ns, 100.0, LINE_TICKS_RANGE, GAP), (clock_ns, receive_ns, 100.0, JUMP, LINE_TICKS_RANGE),
            (*slow, 1e-10, JUMP, GAP)]
    for clock, receive, rate, jump, gap in past:
        assert line_ticks(clock, receive, rate, jump, gap) is None
