"""LaneWorldModel (world/lane_motion.py): the envs of one world model, each taking its inputs on a clock of its own
(time, joint samples, TF buffer), stepped by one launch (WorldModel.update_envs): each env's state is bit for bit the
state a lone one-env WorldModel returns for the same inputs — joint samples every step, every other step, repeated
stamps, measured velocities, a continuous joint wrapping, a root and an object posed by TF, envs that end early, an
env that sits out a step, a lane started afresh mid-way."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from helpers_world import tree_robot
from tactile_sim.geometry.shapes import Shape, ShapeKind
from tactile_sim.world.lane_motion import LaneSample, LaneWorldModel
from tactile_sim.world.motion import WorldModel
from tactile_sim.world.objects import DeclaredObject
from tactile_sim.world.scene import Scene
from tactile_sim.world.tf_buffer import TFBuffer

FIELDS = ("rot", "pos", "lin_vel", "ang_vel", "joint_pos", "joint_vel")
N_ENVS = 4


def scene() -> Scene:
    sphere = (Shape(ShapeKind.SPHERE, (0.02,)),)
    objects = [DeclaredObject("cup", sphere, follow="tracker", pos=[0.0, 0.0, 0.1]),
               DeclaredObject("ring", sphere, frame="hand", pos=[0.01, 0.0, 0.0]),
               DeclaredObject("table", sphere, pos=[0.0, 0.0, -0.5])]
    return Scene(tree_robot(), objects)


def env_inputs(env: int, step: int, n_act: int, rng: np.random.Generator):
    """Time (s) and update keywords of env ``env`` at ``step``, and the transforms to publish before it: each env
    its own time base and rate; env 1 samples its joints every other step, env 2 with measured velocities, env 3
    repeats a stamp; the continuous joint spins past ±π."""
    dt = (0.01, 0.02, 0.005, 0.01)[env]
    t = 100.0 * env + dt * (step // 2 * 2 if env == 3 else step)  # env 3: every stamp twice
    keywords = {}
    if env != 1 or step % 2 == 0:
        q = rng.uniform(-1.0, 1.0, n_act)
        q[0] = math.remainder(2.9 * step + env, 2 * math.pi)  # the continuous joint, wrapped by the publisher
        keywords["joint_pos"] = q
        if env == 2:
            keywords["joint_vel"] = rng.uniform(-1.0, 1.0, n_act)
    transforms = []
    if step % 3 != 2:  # TF at its own rate, stamped a little before the update
        a = 0.3 * step + env
        quat = [0.0, 0.0, math.sin(a / 2), math.cos(a / 2)]
        transforms = [("base", [0.1 * env, 0.02 * step, 0.0], t - 0.001, quat),
                      ("tracker", [0.3, 0.01 * step * step, 0.2 * env], t - 0.002, [0.0, 0.0, 0.0, 1.0])]
    return t, keywords, transforms


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_each_env_of_a_batch_step_is_its_lone_models_state(dtype):
    batch = WorldModel(scene(), n_envs=N_ENVS, dtype=dtype, tf=TFBuffer(), root_from_tf=True)
    tfs = [TFBuffer() for _ in range(N_ENVS)]
    lanes = [LaneWorldModel(batch, e, tf=tfs[e]) for e in range(N_ENVS)]
    lones = [WorldModel(batch.scene, dtype=dtype, tf=tfs[e], root_from_tf=True) for e in range(N_ENVS)]
    rngs = [np.random.default_rng(e) for e in range(N_ENVS)]
    n_act = batch.kinematics.n_actuated
    ends = {0: 12, 1: 9, 2: 12, 3: 5}  # envs 1 and 3 end early: the others step on without them
    moved = []
    for step in range(12):
        envs = [e for e in range(N_ENVS) if step < ends[e] and (e, step) != (0, 4)]  # env 0 sits out step 4
        if step == 7:  # env 2 starts afresh (a lane of a new time line), as does its lone model
            tfs[2].clear()
            lanes[2] = LaneWorldModel(batch, 2, tf=tfs[2])
            lones[2] = WorldModel(batch.scene, dtype=dtype, tf=tfs[2], root_from_tf=True)
        expected, samples = {}, {}
        for e in envs:
            t, keywords, transforms = env_inputs(e, step, n_act, rngs[e])
            for child, trans, stamp, quat in transforms:
                tfs[e].set_transform("world", child, trans, stamp, quat=quat)
            samples[e] = lanes[e].update(t, **keywords)
            expected[e] = lones[e].update(t, **keywords)
        first = samples[envs[0]]
        state = batch.update_envs(envs, first.t, first.joint_vel_measured, first.joint_stamp)
        for e in envs:
            lone = expected[e]
            assert samples[e] == LaneSample(lone.t, lone.joint_stamp, lone.joint_vel_measured)
            for name in FIELDS:
                assert torch.equal(getattr(state, name)[e:e + 1], getattr(lone, name)), (step, e, name)
            moved.append(bool(lone.lin_vel[0, batch.scene.body_index("cup")].abs().max() > 0))
        assert (state.t, state.joint_vel_measured, state.joint_stamp) == (first.t, first.joint_vel_measured,
                                                                          first.joint_stamp)
        assert state.joint_acc is None
    assert sum(moved) > 20  # the twists came from moving TF samples, not only from zeros


def test_a_lane_refuses_what_the_batch_launch_does_not_see():
    batch = WorldModel(scene(), n_envs=2, tf=TFBuffer(), root_from_tf=True)
    lane = LaneWorldModel(batch, 1, tf=TFBuffer())
    n_act = batch.kinematics.n_actuated
    for keywords in ({"joint_pos": np.zeros(n_act), "joint_acc": np.zeros(n_act)},
                     {"object_poses": {"table": (np.eye(3), np.zeros(3))}},
                     {"object_twists": {"table": (np.zeros(3), np.zeros(3))}}):
        with pytest.raises(ValueError, match="not taken by a lane"):
            lane.update(0.0, **keywords)
    with pytest.raises(ValueError, match=r"env must be in \[0, 2\)"):
        LaneWorldModel(batch, 2)
