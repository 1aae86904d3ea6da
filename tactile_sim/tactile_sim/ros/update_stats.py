"""Counters and timing of the node's update loop, summarised per diagnostics window.

Rates are measured in node time (the clock that stamps the outputs, simulated under ``use_sim_time``); step times
in wall time (``time.perf_counter``), because they are the cost of an update on this machine.

The update is also timed by phase (wall time, ms means per window, see :data:`PHASES`): ``decode`` (a joint state
decoded and taken, per joint state), ``world`` (forward kinematics and TF), ``suite_step`` (the sensor models),
``encode`` (the messages) and ``publish`` (handing them to the transport), the last four per update. On a CUDA
device the ``world`` and ``suite_step`` phases time the kernel launches; the wait for the results falls in ``encode``.

A **deadline miss** is an update whose wall-clock duration exceeded the update period, or, when a timer drives the
updates, that came more than 1.5 periods (node time) after the previous update (a late or skipped timer tick).
When joint states drive them, a gap between updates is the sender's, not a miss of the node.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

PHASES = ("decode", "world", "suite_step", "encode", "publish")
"""The timed phases of an update, in order (see the module docstring)."""

LATE_TICK_FACTOR = 1.5
"""An update more than this many periods after the previous one counts as a deadline miss."""


@dataclass(frozen=True)
class WindowSummary:
    """One diagnostics window: updates, achieved rate (Hz, NaN without two updates), step wall time mean / max
    (ms, NaN without updates), deadline misses and dropped inputs in the window, and the mean wall time (ms) of each
    of :data:`PHASES` (NaN for a phase not timed in the window)."""

    updates: int
    rate: float
    step_mean_ms: float
    step_max_ms: float
    deadline_misses: int
    dropped: int
    phase_mean_ms: dict[str, float]


class UpdateStats:
    """Running totals (``updates``, ``deadline_misses``, ``resets``, ``dropped`` by reason) and the current window."""

    def __init__(self):
        self.updates = 0
        self.deadline_misses = 0
        self.resets = 0
        self.dropped: Counter[str] = Counter()
        self._last_t: float | None = None
        self._window_start: float | None = None
        self._window_updates = 0
        self._window_first: float | None = None
        self._wall_sum = 0.0
        self._wall_max = 0.0
        self._window_misses = 0
        self._window_dropped = 0
        self._phase_sum = dict.fromkeys(PHASES, 0.0)
        self._phase_count = dict.fromkeys(PHASES, 0)

    def record_phase(self, phase: str, wall: float) -> None:
        """Add one timing of ``phase`` (one of :data:`PHASES`) that took ``wall`` s to the window."""
        self._phase_sum[phase] += wall
        self._phase_count[phase] += 1

    def record_update(self, t: float, wall: float, period: float, ticked: bool = True) -> bool:
        """Count an update at node time t (s) that took ``wall`` s for a period of ``period`` s; ``ticked``: a timer
        drove it (so a late one is a miss); True on a miss."""
        late = ticked and self._last_t is not None and t - self._last_t > LATE_TICK_FACTOR * period
        miss = wall > period or late
        self._last_t = t
        self.updates += 1
        self.deadline_misses += miss
        self._window_updates += 1
        self._window_misses += miss
        if self._window_first is None:
            self._window_first = t
        self._wall_sum += wall
        self._wall_max = max(self._wall_max, wall)
        return miss

    def restart_timing(self) -> None:
        """Forget the previous update time (after a reset or a rate change the next tick is not late)."""
        self._last_t = None

    def drop(self, reason: str) -> None:
        """Count one dropped input under ``reason`` (a short key such as ``joint_states.non_finite``)."""
        self.dropped[reason] += 1
        self._window_dropped += 1

    def close_window(self, now: float) -> WindowSummary:
        """Summary of the window that ends at node time ``now`` (s); a new window starts."""
        n = self._window_updates
        start = self._window_start if self._window_start is not None else self._window_first
        span = (now - start) if start is not None else 0.0
        # a window that opened with this node's first update counts the updates after it
        counted = n - 1 if self._window_start is None else n
        rate = counted / span if span > 0 and counted > 0 else math.nan
        summary = WindowSummary(
            updates=n,
            rate=rate,
            step_mean_ms=1e3 * self._wall_sum / n if n else math.nan,
            step_max_ms=1e3 * self._wall_max if n else math.nan,
            deadline_misses=self._window_misses,
            dropped=self._window_dropped,
            phase_mean_ms={k: 1e3 * self._phase_sum[k] / n if n else math.nan for k, n in self._phase_count.items()},
        )
        self._window_start = now
        self._window_updates = self._window_misses = self._window_dropped = 0
        self._window_first = None
        self._wall_sum = self._wall_max = 0.0
        self._phase_sum = dict.fromkeys(PHASES, 0.0)
        self._phase_count = dict.fromkeys(PHASES, 0)
        return summary
