"""Stamp conversion float64 s ↔ ns ↔ builtin_interfaces/Time, against exact decimal arithmetic."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, localcontext

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tactile_sim.io.msg_types import deserialize_cdr, new_message, serialize_cdr
from tactile_sim.io.stamps import (
    ns_to_seconds,
    seconds_to_ns,
    time_msg,
    time_msg_from_ns,
    time_msg_to_ns,
    time_msg_to_seconds,
)

TIME_RANGE_S = 2**31


def decimal_ns(t: float) -> int:
    """Nearest integer ns of the exact binary value of t (Decimal(float) is exact)."""
    with localcontext() as ctx:
        ctx.prec = 80
        return int((Decimal(t) * 10**9).to_integral_value(rounding=ROUND_HALF_EVEN))


@pytest.mark.parametrize(
    ("t", "sec", "nanosec"),
    [
        (0.0, 0, 0),
        (-0.0, 0, 0),
        (1.5, 1, 500_000_000),
        (-1.7, -2, 300_000_000),  # the builtin_interfaces/Time documentation example
        (1e-9, 0, 1),
        (-1e-9, -1, 999_999_999),
        (0.9999999999, 1, 0),  # 999999999.9 ns rounds up and carries into sec
        (-0.9999999999, -1, 0),
        (-1e-10, 0, 0),
        (-6e-10, -1, 999_999_999),
        (1_700_000_000.123456789, 1_700_000_000, 123_456_717),  # the float is ...123456716.54 ns
        (float(-(2**31)), -(2**31), 0),
    ],
)
def test_seconds_to_time_edge_cases(t, sec, nanosec):
    msg = time_msg(t)
    assert (msg.sec, msg.nanosec) == (sec, nanosec)
    assert seconds_to_ns(t) == decimal_ns(t)


@given(st.floats(min_value=-(2.0**31), max_value=2.0**31 - 1.0, allow_nan=False))
def test_seconds_to_ns_is_the_nearest_integer_nanosecond(t):
    ns = seconds_to_ns(t)
    assert ns == decimal_ns(t)
    msg = time_msg_from_ns(ns)
    assert 0 <= msg.nanosec < 10**9
    assert msg.sec * 10**9 + msg.nanosec == ns
    assert time_msg_to_ns(msg) == ns


@given(st.integers(min_value=-(2**31) * 10**9, max_value=2**31 * 10**9 - 1))
def test_ns_to_seconds_is_the_nearest_float(ns):
    with localcontext() as ctx:
        ctx.prec = 80
        assert ns_to_seconds(ns) == float(Decimal(ns) / 10**9)
    # the float nearest to ns/1e9 maps back to the same ns wherever float64 resolves a nanosecond
    if abs(ns) < 2**52:
        assert seconds_to_ns(ns_to_seconds(ns)) == ns


@pytest.mark.parametrize("t", [0.001 * k for k in (0, 1, 7, 1000, 123457)] + [12.345, -3.25, 1e6 + 0.5])
def test_decimal_stamps_round_trip_through_a_time_message(t):
    data = serialize_cdr(time_msg(t))
    assert time_msg_to_seconds(deserialize_cdr(data, "builtin_interfaces/msg/Time")) == float(f"{t:.9f}")


def test_time_message_with_nanosec_past_one_second_still_converts():
    msg = new_message("builtin_interfaces/msg/Time", sec=1, nanosec=1_500_000_000)
    assert time_msg_to_ns(msg) == 2_500_000_000
    assert time_msg_to_seconds(msg) == 2.5


@pytest.mark.parametrize("t", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_stamps_are_rejected(t):
    with pytest.raises(ValueError, match="not finite"):
        time_msg(t)


@pytest.mark.parametrize("t", [float(TIME_RANGE_S), TIME_RANGE_S + 0.5, -float(TIME_RANGE_S) - 1e-3])
def test_stamps_outside_the_int32_seconds_range_are_rejected(t):
    with pytest.raises(ValueError, match=r"outside builtin_interfaces/Time.*\[-2147483648, 2147483647\]"):
        time_msg(t)
