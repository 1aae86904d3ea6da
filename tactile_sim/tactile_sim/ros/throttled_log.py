"""Throttled logging for the node: each kind of problem is logged at most once per period, with a count of the
messages held back in between, so that a flood of bad inputs cannot flood the log."""

from __future__ import annotations

import time
from collections.abc import Callable

MAX_LINE_CHARS = 1000
"""A longer log line is cut (inputs may carry names of any length)."""

LogSink = Callable[[str, str], None]
"""(level, text) → None; levels "debug", "info", "warn", "error" (the rclpy node maps them to its logger)."""


def cut(text: str) -> str:
    """``text`` cut to :data:`MAX_LINE_CHARS` characters, saying how many were left out."""
    if len(text) <= MAX_LINE_CHARS:
        return text
    return f"{text[:MAX_LINE_CHARS]} … ({len(text) - MAX_LINE_CHARS} more characters)"


class ThrottledLog:
    """Log through ``sink`` at most once per ``period`` seconds of ``clock`` for each key.

    ``sink`` None discards everything (tests that only look at counters). ``clock`` is monotonic wall time by
    default (throttling must also work while simulated time stands still).
    """

    def __init__(self, sink: LogSink | None, period: float = 5.0, clock: Callable[[], float] = time.monotonic):
        self.sink = sink
        self.period = float(period)
        self.clock = clock
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def __call__(self, level: str, key: str, text: str) -> bool:
        """Log ``text`` unless ``key`` was logged less than a period ago; True when it was logged."""
        now = self.clock()
        last = self._last.get(key)
        if last is not None and now - last < self.period:
            self._held[key] = self._held.get(key, 0) + 1
            return False
        held = self._held.pop(key, 0)
        self._last[key] = now
        if self.sink is not None:
            suffix = f" ({held} more like this in the last {now - last:.1f} s)" if held else ""
            self.sink(level, cut(text) + suffix)
        return True

    def always(self, level: str, text: str) -> None:
        """Log once, unthrottled (state changes such as a rebuild)."""
        if self.sink is not None:
            self.sink(level, cut(text))
