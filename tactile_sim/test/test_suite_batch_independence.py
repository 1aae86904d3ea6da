"""Envs of one suite do not mix: env e of a 3-env suite driven along three different stretches of the demo trajectory
reads, bit for bit, the ground truth that a 1-env suite driven along env e's stretch alone reads, for every sensor
type of the demo configuration over the squeeze and slide (no kernel reduces across envs or depends on the batch
size). Measured reads too when every env draws from noise stream 0 (``noise_streams``); with the default streams (the
env indices) envs draw their own noise. Bad streams are refused naming the argument."""

import pytest

from test_suite_rewind import demo_with_reset_draws, reads_of, step

from tactile_sim.config import load_config
from tactile_sim.demo_trajectory import DEMO_CONFIG
from tactile_sim.suite import SensorSuite

OFFSETS = (3.0, 3.7, 5.1)
"""s: where on the demo trajectory each env starts (closing, squeezing, sliding)."""


def assert_each_env_reads_as_a_suite_of_its_own(config, steps: int, ground_truth: bool, noise_streams=None):
    """Step a batch of len(OFFSETS) envs and one 1-env suite per offset alike; every read of env e equals, bit for
    bit, that of the suite of offset e."""
    batch = SensorSuite(config, n_envs=len(OFFSETS), noise_streams=noise_streams)
    alone = [SensorSuite(config, n_envs=1) for _ in OFFSETS]
    for k in range(steps):
        t = k * batch.dt
        step(batch, t, OFFSETS)
        for suite, offset in zip(alone, OFFSETS):
            step(suite, t, (offset,))
        for e, suite in enumerate(alone):
            for (name, a), (_, b) in zip(reads_of(batch, e, ground_truth=ground_truth),
                                         reads_of(suite, 0, ground_truth=ground_truth), strict=True):
                assert a == b, f"{name} of env {e} differs at step {k}"


def test_each_env_of_a_batch_reads_the_ground_truth_of_a_suite_of_its_own():
    assert_each_env_reads_as_a_suite_of_its_own(load_config(DEMO_CONFIG), steps=100, ground_truth=True)


def test_envs_of_noise_stream_0_read_what_suites_of_one_env_read(tmp_path):
    config = demo_with_reset_draws(tmp_path)  # gains and dead taxels drawn per env and reset too
    assert_each_env_reads_as_a_suite_of_its_own(config, steps=60, ground_truth=False,
                                                 noise_streams=[0] * len(OFFSETS))


def test_envs_of_their_own_streams_draw_their_own_noise():
    config = load_config(DEMO_CONFIG)
    suite = SensorSuite(config, n_envs=2)  # default streams 0, 1
    for k in range(3):
        step(suite, k * suite.dt, (4.0, 4.0))  # the same inputs in both envs
    measured = suite.read("pad_left").force
    assert not measured[0].equal(measured[1])
    assert suite.read_ground_truth("pad_left").force[0].equal(suite.read_ground_truth("pad_left").force[1])


@pytest.mark.parametrize("streams", [[0], [0, -1], [0, 2**32], [0, 1.0], [0, True]])
def test_bad_noise_streams_are_refused_naming_the_argument(streams):
    with pytest.raises(ValueError, match=r"noise_streams=.*allowed: 2 integer\(s\) in \[0, 2\*\*32\)"):
        SensorSuite(load_config(DEMO_CONFIG), n_envs=2, noise_streams=streams)
