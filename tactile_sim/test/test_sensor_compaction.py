"""Per-(env, segment) compaction (:mod:`tactile_sim.sensors.points.compaction`): on the CPU a native partition per env
replaces the stable sort; both must give the order of a stable sort by (segment, not selected) and the counts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tactile_sim.sensors.points.compaction import SegmentCompaction


@pytest.mark.parametrize("lengths", [[37], [5, 64, 1, 30], [0, 12, 0]])
def test_partition_is_the_stable_sort_by_segment_then_unselected(lengths):
    # independent truth: numpy's stable argsort of the keys 2·segment + (not selected), per env; every element of
    # order is checked (the selected ones first per segment, then the others, each in element order)
    rng = np.random.default_rng(len(lengths))
    e, n = 4, sum(lengths)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    compaction = SegmentCompaction(starts.tolist(), lengths, e, "cpu")
    assert compaction._native                                       # the native path on the CPU
    segment = np.repeat(np.arange(len(lengths)), lengths)
    for density in (0.0, 0.3, 1.0):
        selected = rng.uniform(size=(e, n)) < density
        selected[0] = rng.uniform(size=n) < 0.5                    # envs of different selections in one call
        compaction(torch.as_tensor(selected))
        keys = 2 * segment[None] + ~selected
        expected = np.argsort(keys, axis=1, kind="stable")
        assert np.array_equal(compaction.order.numpy(), expected)
        counts = np.stack([np.bincount(segment[row], minlength=len(lengths)) for row in selected])
        assert np.array_equal(compaction.count.numpy(), counts)
