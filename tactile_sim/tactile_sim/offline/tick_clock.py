"""The clock rules of a replay (:mod:`.run_loop`'s docstring), apart from any node core: where the ticks of a time
line fall, what a clock input does to the line, and the receive time each tick's output gets.

One :class:`TickClock` per recording being replayed; the loop that drives a core asks it what a clock input means
(:meth:`TickClock.change`), which ticks are due (:meth:`TickClock.due`), and takes the ticks it runs from it
(:meth:`TickClock.take`). Times are integer nanoseconds. :func:`line_ticks` gives the ticks of a whole time line
of known clock inputs at once, as such a loop takes them.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np

from ..io.stamps import NS_PER_S

Change = Literal["start", "back", "gap", "reordered", "ahead"]
"""What a clock input does: starts the first line; jumps back more than the jump threshold (a new line); jumps
forward more than the gap threshold (a new line); steps back less than the jump threshold (reordering jitter: the
clock stays); or moves the clock ahead (or not at all), the ticks before it running first."""


def tick_time_ns(t0_ns: int, k: int, rate: float) -> int:
    """Time of tick k of a time line that starts at t0_ns, ns (no accumulated rounding)."""
    return t0_ns + round(k * NS_PER_S / rate)


class Tick(NamedTuple):
    """A tick taken from the clock: its index k on its line, its time t_ns and the receive time log_ns of its
    output."""

    k: int
    t_ns: int
    log_ns: int


class TickClock:
    """Ticks at ``rate`` Hz on the time line of the latest clock input; jump_threshold_ns, gap_threshold_ns: how far
    a clock input may step back / ahead of the clock and stay on the line (ns, > 0)."""

    def __init__(self, rate: float, jump_threshold_ns: int, gap_threshold_ns: int):
        self.rate = rate
        self.jump_threshold_ns = jump_threshold_ns
        self.gap_threshold_ns = gap_threshold_ns
        self.t0: int | None = None
        self.k = 0
        self.next_ns: int | None = None
        """Time of the next tick of the line (tick k), ns (asked for several times per tick: made once)."""
        self.clock: int | None = None
        """Latest clock time, ns (None before the first clock input)."""
        self.receive: int | None = None
        """Receive time of the input that set :attr:`clock`, ns."""
        self._last_out = -(2**63)

    def change(self, c: int) -> Change:
        """What clock input time ``c`` (ns) does to the line (:data:`Change`); nothing is changed here."""
        if self.clock is None:
            return "start"
        if c < self.clock - self.jump_threshold_ns:
            return "back"
        if c > self.clock + self.gap_threshold_ns:
            return "gap"
        return "reordered" if c < self.clock else "ahead"

    def start_line(self, t0: int) -> None:
        """A new time line from t0 (ns): its tick 0 falls on t0."""
        self.t0, self.k, self.next_ns = t0, 0, tick_time_ns(t0, 0, self.rate)

    def set(self, c: int, receive: int) -> None:
        """The clock is at ``c`` (ns), set by an input received at ``receive`` (ns)."""
        self.clock, self.receive = c, receive

    def due(self, before: int | None = None) -> bool:
        """Whether the next tick runs before clock time ``before`` (ns; an input moving the clock ahead there), or,
        with None, at or before the clock (the rest of a line that ends)."""
        if before is not None:
            return self.next_ns < before
        return self.clock is not None and self.next_ns <= self.clock

    def take(self) -> Tick:
        """The next tick, counted as run: its output's receive time is its time carried over to the receive clock of
        the latest clock input, never earlier than a previous output's."""
        t = self.next_ns
        log_ns = max(self._last_out, self.receive + (t - self.clock))
        self._last_out = log_ns
        tick = Tick(self.k, t, log_ns)
        self.k += 1
        self.next_ns = tick_time_ns(self.t0, self.k, self.rate)
        return tick


LINE_TICKS_RANGE = 1 << 62
"""Bound (exclusive) of the times and thresholds :func:`line_ticks` takes (ns): sums of two stay within int64."""


def line_ticks(clock_ns: np.ndarray, receive_ns: np.ndarray, rate: float, jump_threshold_ns: int,
               gap_threshold_ns: int) -> tuple[list[Tick], np.ndarray] | None:
    """The ticks a :class:`TickClock` of ``rate`` Hz and those thresholds (ns) takes over M clock inputs fed in order
    (clock_ns: the time each sets, receive_ns: its receive time; int64 [M]) as the loop of
    :func:`~.lane_plan.fed_ticks` takes them (those due before each input, then those at or before the last clock),
    with the number of inputs fed before each tick (int [K]); None when the time line restarts (an input steps back
    beyond the jump threshold or ahead beyond the gap threshold: the loop would raise) or a time or threshold is out
    of ±:data:`LINE_TICKS_RANGE`. The clock after each input is the largest time so far (a step back within the
    threshold leaves it), and a tick's receive time is that of the latest input fed before it (:meth:`TickClock.take`).
    """
    if not len(clock_ns):
        return [], np.zeros(0, dtype=np.intp)
    bound = LINE_TICKS_RANGE
    if max(jump_threshold_ns, gap_threshold_ns, *(int(x.max()) for x in (clock_ns, receive_ns)),
           *(-int(x.min()) for x in (clock_ns, receive_ns))) >= bound:
        return None
    clock = np.maximum.accumulate(clock_ns)
    ahead = clock_ns[1:] - clock[:-1]
    if ((ahead < -jump_threshold_ns) | (ahead > gap_threshold_ns)).any():
        return None
    t0, end = int(clock_ns[0]), int(clock[-1])
    count = int((end - t0) * rate / NS_PER_S) + 2  # one past the last tick at or before the end, or more
    while tick_time_ns(t0, count - 1, rate) <= end:
        count *= 2
    if count * NS_PER_S >= bound or tick_time_ns(t0, count - 1, rate) >= bound:  # each sum below within int64
        return None
    t_ns = t0 + np.rint(np.arange(count, dtype=np.int64) * NS_PER_S / rate).astype(np.int64)  # tick_time_ns of each k
    t_ns = t_ns[:np.searchsorted(t_ns, end, side="right")]
    fed = np.searchsorted(clock, t_ns, side="right")
    latest = fed - 1
    log_ns = np.maximum.accumulate(receive_ns[latest] + (t_ns - clock[latest]))
    return list(map(Tick, range(len(t_ns)), t_ns.tolist(), log_ns.tolist())), fed
