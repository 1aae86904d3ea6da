"""Timing shared by the benchmark scripts (imported as ``from timing import time_per_call``; the scripts run as
``python bench/<name>.py``, which puts this folder on sys.path)."""

from __future__ import annotations

import time


def time_per_call(fn, repeats: int, trials: int = 5, warmup: int = 5) -> float:
    """Best of ``trials`` mean call times, s, after at least ``warmup`` (and repeats/10) untimed calls.

    The machine is shared: the minimum over trials is the least disturbed measurement.
    """
    for _ in range(max(warmup, repeats // 10)):
        fn()
    best = float("inf")
    for _ in range(trials):
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        best = min(best, (time.perf_counter() - start) / repeats)
    return best
