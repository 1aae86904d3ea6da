"""Envs of one suite do not mix: env e of a 3-env suite driven along three different stretches of the demo trajectory
reads, bit for bit, the ground truth that a 1-env suite driven along env e's stretch alone reads, for every sensor
type of the demo configuration over the squeeze and slide (no kernel reduces across envs or depends on the batch
size). Measured reads differ by design: their noise lanes are keyed by the env index
(docs/models/imperfections.md#seeding)."""

from test_suite_rewind import reads_of, step

from tactile_sim.config import load_config
from tactile_sim.demo_trajectory import DEMO_CONFIG
from tactile_sim.suite import SensorSuite

OFFSETS = (3.0, 3.7, 5.1)
"""s: where on the demo trajectory each env starts (closing, squeezing, sliding)."""


def test_each_env_of_a_batch_reads_the_ground_truth_of_a_suite_of_its_own():
    config = load_config(DEMO_CONFIG)
    batch = SensorSuite(config, n_envs=len(OFFSETS))
    alone = [SensorSuite(config, n_envs=1) for _ in OFFSETS]
    for k in range(100):
        t = k * batch.dt
        step(batch, t, OFFSETS)
        for suite, offset in zip(alone, OFFSETS):
            step(suite, t, (offset,))
        for e, suite in enumerate(alone):
            for (name, a), (_, b) in zip(reads_of(batch, e, ground_truth=True), reads_of(suite, 0, ground_truth=True),
                                         strict=True):
                assert a == b, f"{name} of env {e} differs at step {k}"
