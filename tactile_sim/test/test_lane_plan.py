"""Planned lanes of a batch (``offline/lane_plan.py``): for recordings of whole joint states only, the ticks, the
world lanes' samples and the joint inputs and launch arguments that ``PlannedSteps`` stages for all lanes of a step
at once equal, bit for bit, what the per-message path (each lane's core fed message by message and posed) leaves in
the same buffers, on adversarial recordings (random stamps with duplicates, several or no messages between ticks,
small steps back, velocities present or not message by message, the receive clock); recordings that are not whole
joint states (other joint sets or order, unknown names, a NaN, TF), whose time line restarts or that cannot be read
through get no plan and are fed message by message as without one; and a batched replay that follows the plans
writes each recording's lone replay byte for byte."""

import numpy as np
import pytest
import yaml

from helpers_offline import run_cli, write_bag
from helpers_ros import joint_state_msg
from tactile_sim.demo_trajectory import JOINT_NAMES
from tactile_sim.offline import batch_replay
from tactile_sim.offline.bag_inputs import BagInputs, open_bag
from tactile_sim.offline.corpus import _config
from tactile_sim.offline.lane_plan import PlannedSteps
from tactile_sim.ros.node_params import NodeParams
from test_bag_core_events import damaged_bag
from test_cli_replay import ns, pads_yaml, static_tf

RATE = 100.0
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


def lanes_of(cores, bags, plan):
    return [batch_replay.Lane(None, core, BagInputs(open_bag(bag), clock=clock).core_blocks(), None, RATE, JUMP, GAP,
                              False, plan) for core, (bag, clock) in zip(cores, bags)]  # plannable: plan


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
    """The bytes of every input of update_envs of ``envs``."""
    return [x[envs].tobytes() for x in suite.world.host_env_inputs()]


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plan")
    config = _config(str(rooted_yaml(tmp)))
    cores = batch_replay.BatchCores().take(config, NodeParams(update_rate=RATE, viz_rate=0.0),
                                           [batch_replay.kept_log([]) for _ in range(6)])
    return tmp, cores[0]._shared.suite, cores


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


@pytest.mark.parametrize("case", ["subset", "reversed", "unknown", "nan", "tf", "back"])
def test_recordings_that_are_not_whole_joint_states_or_restart_get_no_plan(batch, case):
    tmp, suite, cores = batch
    items = [("/joint_states", ns(0.01 * k), joint_state_msg([0.0, 0.01, 0.01], stamp=0.01 * k)) for k in range(30)]
    if case == "subset":
        items[7] = ("/joint_states", ns(0.07), joint_state_msg([0.01, 0.01], names=JOINT_NAMES[1:], stamp=0.07))
    elif case == "reversed":
        items[7] = ("/joint_states", ns(0.07), joint_state_msg([0.01, 0.01, 0.0], names=JOINT_NAMES[::-1], stamp=0.07))
    elif case == "unknown":
        items[7] = ("/joint_states", ns(0.07), joint_state_msg([0.0, 0.01, 0.01, 1.0], names=(*JOINT_NAMES, "x"),
                                                               stamp=0.07))
    elif case == "nan":
        items[7] = ("/joint_states", ns(0.07), joint_state_msg([0.0, np.nan, 0.01], stamp=0.07))
    elif case == "tf":
        items.insert(0, static_tf())
    else:
        items[20] = ("/joint_states", ns(0.2), joint_state_msg([0.0, 0.01, 0.01], stamp=0.19 - 0.6))
    bag = write_bag(tmp / f"no_plan_{case}", items)
    fed = []
    for plan in (True, False):  # with a plan asked for, fed message by message from the messages it read
        cores[0].rewind()
        lane = lanes_of(cores[:1], [(bag, "header")], plan)[0]
        assert not plan or lane.follow_plan() is False
        assert lane.plan is None
        fed.append([])
        while (tick := lane.next_tick()) is not None:
            fed[-1].append((tick, lane.core.pose(tick.t_ns), lane.core.joint_positions()[1].tobytes()))
        fed[-1].append(lane.alone)
    assert fed[0] == fed[1] and len(fed[0]) >= 20


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


def test_a_batch_following_plans_writes_each_recordings_lone_replay(tmp_path, monkeypatch):
    rng = np.random.default_rng(9)
    recs = tmp_path / "recs"
    for k in range(3):
        write_bag(recs / f"r{k}", adversarial(rng, 40 + 30 * k, receive_shift=0.001 * k))
    followed = []
    monkeypatch.setattr(batch_replay, "PlannedSteps", lambda world, lanes: followed.append(len(lanes)) or
                        PlannedSteps(world, lanes))
    config = rooted_yaml(tmp_path)

    def replay(source, out, *extra):
        status, _, err = run_cli("replay", str(source), "--config", str(config), "-o", str(tmp_path / out), "--rate",
                                 "100", "--no-progress", *extra)
        assert status == 0, err

    replay(recs, "out", "--batch", "3")
    assert followed == [3]
    for k in range(3):
        replay(recs / f"r{k}", f"alone/r{k}.mcap")
        for part in (f"r{k}.mcap", "metadata.yaml"):
            assert (tmp_path / "out" / f"r{k}" / part).read_bytes() == \
                (tmp_path / "alone" / f"r{k}" / part).read_bytes(), (k, part)
