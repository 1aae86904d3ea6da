"""The one loop of the demo and of bag replay: time-ordered node inputs in, the node core stepped at a fixed rate,
its messages out.

Inputs are :class:`InputEvent` s in the order they were received. Some of them set the run's **clock** (the demo's
joint states; a replay's joint-state header stamps, or receive times). Ticks fall on ``t0 + round(k·1e9/rate)`` ns
from the first clock time t0 on, and a tick at time T runs once a clock input later than T has arrived, after every
input received before that one: each tick sees the latest input at or before it (sample and hold, also across
gaps in the inputs). When the inputs end, the ticks up to the last clock time run. So N clock inputs spaced exactly
one period apart give exactly N ticks.

A clock input more than ``jump_threshold`` earlier than the latest clock time starts a new time line (a simulation
reset in the recording): the remaining ticks of the old line run, the core restarts (fresh sensors, dynamic TF
forgotten) and ticks restart at the new time. A smaller step back is reordering jitter: the input is used, the
clock stays (counted in ``RunStats.reordered``). A clock input more than ``gap_threshold`` later than the latest one
is not ticked through either (a recording paused, or one wrong stamp far ahead): the old line ends, the core restarts
with a warning that names the threshold, and ticks restart at the new time (counted in ``RunStats.skipped_gaps``).
Each restart rewinds the sensors (:meth:`~..ros.node_core.NodeCore.restart`); more than ``max_restarts`` of them
raise :class:`TooManyRestarts` (inputs that jump back and forth would otherwise cost one restart per message).

Outputs are written with the tick time as header stamp (the core's doing) and, as bag receive time, the tick time
carried over to the receive clock of the latest clock input (``receive + (T − clock)``; equal to T when the bag's
receive times are its stamps), never earlier than a previous output. Inputs copied to the output keep their receive
time. These clock rules live in :class:`~.tick_clock.TickClock`; this loop adds the core, restarts and outputs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from ..constants import GAP_THRESHOLD, JUMP_THRESHOLD, MAX_RESTARTS
from ..io.stamps import NS_PER_S
from ..ros.inputs import decode_joint_state, decode_robot_description
from ..ros.node_core import MARKERS_TOPIC, NodeCore
from .tick_clock import TickClock

InputKind = Literal["joint_states", "tf", "tf_static", "robot_description"]
INPUT_KINDS: tuple[str, ...] = ("joint_states", "tf", "tf_static", "robot_description")


class TooManyRestarts(ValueError):
    """The inputs changed time line more often than the loop's ``max_restarts``."""


def check_threshold(name: str, value: float) -> float:
    """``value`` (s) as a float when it is a finite number > 0; ValueError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}: not a finite duration > 0; got {value!r}; allowed: a finite number of seconds > 0")
    return float(value)


def check_count(name: str, value: int) -> int:
    """``value`` when it is an integer >= 0; ValueError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name}: not an integer >= 0; got {value!r}; allowed: an integer >= 0")
    return value


class InputEvent(NamedTuple):
    """One input message: kind, topic it came on, bag receive time log_ns, clock_ns (the run time it sets; None:
    it does not drive the clock) and the message (rosbags or io-layer object; only its fields are read). A named
    tuple: immutable, and cheap to build for every message of a bag."""

    kind: InputKind
    topic: str
    log_ns: int
    clock_ns: int | None
    message: Any


@dataclass
class RunStats:
    """What a run did: ticks run, ticks that returned messages, restarts at backwards jumps, inputs used by kind,
    clock inputs that stepped back less than the jump threshold, the longest interval between clock inputs that was
    ticked through (ns), forward gaps longer than the gap threshold (each a restart too) and the wall time (s)."""

    ticks: int = 0
    productive_ticks: int = 0
    restarts: int = 0
    inputs: dict[str, int] = field(default_factory=dict)
    reordered: int = 0
    longest_gap_ns: int = 0
    skipped_gaps: int = 0
    wall_s: float = 0.0


class InputHandlers(dict):
    """Input kind (each of :data:`INPUT_KINDS`) → what gives a core an input message of that kind
    (:func:`input_handlers`); looking up another kind raises ValueError naming it."""

    def __missing__(self, kind: str) -> Callable[[Any], Any]:
        raise ValueError(f"RunLoop: unknown input kind {kind!r}; allowed: {INPUT_KINDS}")


def input_handlers(core: NodeCore) -> InputHandlers:
    """The :class:`InputHandlers` of ``core`` (made once per run: a dict lookup and one call per input)."""
    return InputHandlers({"joint_states": lambda msg: core.on_joint_state(decode_joint_state(msg)),
                          "tf": core.on_tf_message,
                          "tf_static": lambda msg: core.on_tf_message(msg, static=True),
                          "robot_description": lambda msg: core.set_robot_description(decode_robot_description(msg))})


Writer = Callable[[int, list[tuple[str, Any]]], None]
"""(receive time ns, [(topic, message), ...]) → None: where the loop's messages go, those of one tick (or one
copied input) in one call (``OutputBag.write_all``)."""


class RunLoop:
    """Drive ``core`` from inputs (see the module docstring) at its ``update_rate`` (Hz; the suite's engine step is
    its inverse). write: the output; copy_inputs: also write every input. jump_threshold, gap_threshold: s, finite
    and > 0; max_restarts: an integer >= 0 (ValueError naming them otherwise). on_tick(clock_ns): called after
    every tick (progress).

    Markers are written every round(update_rate / viz_rate) ticks when the core's ``viz_rate`` > 0, as the node's
    visualisation timer does.
    """

    def __init__(self, core: NodeCore, write: Writer, *, copy_inputs: bool = False,
                 jump_threshold: float = JUMP_THRESHOLD, gap_threshold: float = GAP_THRESHOLD,
                 max_restarts: int = MAX_RESTARTS, on_tick: Callable[[int], None] | None = None):
        self.core = core
        self.rate = core.params.update_rate
        self.write = write
        self.copy_inputs = copy_inputs
        self.clock = TickClock(self.rate, round(check_threshold("jump_threshold", jump_threshold) * NS_PER_S),
                               round(check_threshold("gap_threshold", gap_threshold) * NS_PER_S))
        self.max_restarts = check_count("max_restarts", max_restarts)
        self.on_tick = on_tick
        viz = core.params.viz_rate
        self.markers_every = max(1, round(self.rate / viz)) if viz > 0 else 0
        self.stats = RunStats()
        self._wall_start: float | None = None
        self._handlers = input_handlers(core)

    # ------------------------------------------------------------------ inputs
    def run(self, events: Iterable[InputEvent]) -> RunStats:
        """Feed every event, then :meth:`finish`; returns the stats."""
        for event in events:
            self.feed(event)
        return self.finish()

    def feed(self, event: InputEvent) -> None:
        """Take one input: advance the clock (running the ticks before it), then hand the input to the core."""
        if self._wall_start is None:
            self._wall_start = time.perf_counter()
        c = event.clock_ns
        if c is not None:
            clock = self.clock
            change = clock.change(c)
            if change == "start":
                clock.start_line(c)
            elif change == "back":
                self._new_line(c, f"input time went backwards from {clock.clock / NS_PER_S:.6f} s to "
                                  f"{c / NS_PER_S:.6f} s ({event.topic})")
            elif change == "gap":
                self.stats.skipped_gaps += 1
                self._new_line(c, f"input time jumped forward by {(c - clock.clock) / NS_PER_S:.6g} s from "
                                  f"{clock.clock / NS_PER_S:.6f} s ({event.topic}), more than the gap threshold "
                                  f"{clock.gap_threshold_ns / NS_PER_S:g} s (--gap-threshold); not ticked through")
            elif change == "reordered":
                self.stats.reordered += 1
                c = clock.clock
            else:
                self.stats.longest_gap_ns = max(self.stats.longest_gap_ns, c - clock.clock)
                while clock.due(c):
                    self._tick()
            clock.set(c, event.log_ns)
        self._apply(event)

    def finish(self) -> RunStats:
        """Run the ticks up to the last clock time; returns the stats (wall time included)."""
        self._flush()
        if self._wall_start is not None:
            self.stats.wall_s = time.perf_counter() - self._wall_start
        return self.stats

    def _apply(self, event: InputEvent) -> None:
        self._handlers[event.kind](event.message)
        self.stats.inputs[event.kind] = self.stats.inputs.get(event.kind, 0) + 1
        if self.copy_inputs:
            self.write(event.log_ns, [(event.topic, event.message)])

    # ------------------------------------------------------------------ ticks
    def _new_line(self, t0: int, reason: str) -> None:
        """Run the rest of the current time line, restart the core (logging ``reason``) and start one at t0."""
        self._flush()
        if self.stats.restarts >= self.max_restarts:
            raise TooManyRestarts(f"{reason}: more than {self.max_restarts} restarts of the sensors; allowed: "
                                  f"max_restarts (--max-restarts) = {self.max_restarts}, raise it for a recording "
                                  "with more resets; the output holds everything before this input")
        if self.core.ready:
            self.core.restart(reason)
        self.stats.restarts += 1
        self.clock.start_line(t0)

    def _flush(self) -> None:
        while self.clock.due():
            self._tick()

    def _tick(self) -> None:
        k, t, log_ns = self.clock.take()
        outputs = self.core.update(t)
        stats = self.stats
        stats.ticks += 1
        stats.productive_ticks += bool(outputs)
        if self.markers_every and k % self.markers_every == 0:
            markers = self.core.markers()
            if markers is not None:
                outputs = [*outputs, (MARKERS_TOPIC, markers)]
        if outputs:
            self.write(log_ns, outputs)
        if self.on_tick is not None:
            self.on_tick(t)
