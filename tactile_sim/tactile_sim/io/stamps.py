"""Time stamps: float64 seconds (the library's clock) ↔ integer nanoseconds ↔ ``builtin_interfaces/msg/Time``.

A stamp of t seconds becomes the integer number of nanoseconds nearest to the exact binary value of t (ties to
even), and ``Time`` holds it as (sec, nanosec) with sec = floor(ns / 1e9) and 0 ≤ nanosec < 1e9, so −1.7 s is
(−2, 300000000). Back to seconds, a stamp is the float64 nearest to ns / 1e9.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache
from typing import Any

from .msg_types import message_class

NS_PER_S = 1_000_000_000
SEC_MIN = -(2**31)
SEC_MAX = 2**31 - 1
"""Range of ``builtin_interfaces/msg/Time.sec`` (int32)."""


def seconds_to_ns(t: float) -> int:
    """Nanoseconds nearest to ``t`` seconds (exact rational arithmetic, ties to even)."""
    if not math.isfinite(t):
        raise ValueError(f"stamp: {t!r} s is not finite; allowed: finite seconds")
    return round(Fraction(t) * NS_PER_S)


def ns_to_seconds(ns: int) -> float:
    """The float64 nearest to ``ns`` nanoseconds in seconds (Python's true division of integers is correctly
    rounded)."""
    return int(ns) / NS_PER_S


def time_msg_from_ns(ns: int) -> Any:
    """``builtin_interfaces/msg/Time`` of ``ns`` nanoseconds (sec = floor, 0 ≤ nanosec < 1e9)."""
    sec, nanosec = divmod(int(ns), NS_PER_S)
    if not SEC_MIN <= sec <= SEC_MAX:
        raise ValueError(
            f"stamp: {ns} ns is outside builtin_interfaces/Time; allowed: sec in [{SEC_MIN}, {SEC_MAX}] "
            f"(about ±68 years from 0)"
        )
    return _time_class()(sec=sec, nanosec=nanosec)


@cache
def _time_class() -> type:
    """The ``builtin_interfaces/msg/Time`` class (its two int fields need no coercion: built directly, once per
    update of the node)."""
    return message_class("builtin_interfaces/msg/Time")


def time_msg(t: float) -> Any:
    """``builtin_interfaces/msg/Time`` of ``t`` seconds (see the module docstring for rounding)."""
    return time_msg_from_ns(seconds_to_ns(t))


def time_msg_to_ns(msg: Any) -> int:
    """Nanoseconds of a ``builtin_interfaces/msg/Time`` (any sec, nanosec; nanosec may carry past 1e9)."""
    return int(msg.sec) * NS_PER_S + int(msg.nanosec)


def time_msg_to_seconds(msg: Any) -> float:
    """Seconds (the nearest float64) of a ``builtin_interfaces/msg/Time``."""
    return ns_to_seconds(time_msg_to_ns(msg))
