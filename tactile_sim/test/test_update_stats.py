"""UpdateStats' per-phase timing: the mean of each phase over a diagnostics window, NaN for a phase not timed in it,
and a fresh start in the next window."""

import math

import pytest

from tactile_sim.ros.update_stats import PHASES, UpdateStats


def test_phase_means_are_per_window():
    stats = UpdateStats()
    stats.record_phase("world", 0.001)
    stats.record_phase("world", 0.003)
    stats.record_phase("publish", 0.0005)
    first = stats.close_window(1.0).phase_mean_ms
    assert list(first) == list(PHASES)
    assert first["world"] == pytest.approx(2.0) and first["publish"] == pytest.approx(0.5)
    assert all(math.isnan(first[k]) for k in ("decode", "suite_step", "encode"))
    stats.record_phase("decode", 0.002)
    second = stats.close_window(2.0).phase_mean_ms
    assert second["decode"] == pytest.approx(2.0) and math.isnan(second["world"])
