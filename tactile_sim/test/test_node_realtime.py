"""Real-time scheduling of the node (parameter ``realtime_priority``): every thread under SCHED_FIFO and threads
started later inheriting it, a refusal that changes nothing and says how to allow it, and the live runtime warning
about a refused priority and reporting its scheduling in /diagnostics."""

import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from helpers_ros import demo_core
from test_node_runtime import RecordingTransport
from tactile_sim.ros import realtime
from tactile_sim.ros.node_runtime import DIAGNOSTICS_PERIOD, NodeRuntime
from tactile_sim.ros.realtime import Scheduling, set_realtime_priority

CHILD = textwrap.dedent("""
    import json, os, threading
    from tactile_sim.ros.realtime import set_realtime_priority

    go = threading.Event()
    before = threading.Thread(target=go.wait)
    before.start()
    result = set_realtime_priority(7)
    after = threading.Thread(target=go.wait)
    after.start()
    policies = {tid: (os.sched_getscheduler(int(tid)), os.sched_getparam(int(tid)).sched_priority)
                for tid in os.listdir("/proc/self/task")}
    go.set()
    print(json.dumps({"problem": result.problem, "text": result.text, "policies": policies,
                      "after": after.native_id}))
""")

needs_linux = pytest.mark.skipif(not hasattr(os, "sched_setscheduler"), reason="SCHED_FIFO is Linux-only")


@needs_linux
def test_every_thread_runs_under_fifo_and_threads_started_later_inherit_it():
    """In a child process (this one keeps its scheduling): with the permission, each thread is SCHED_FIFO at the
    asked priority, also one started afterwards; without it, none changed and the reason names the way to allow it."""
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    policies = {int(tid): tuple(p) for tid, p in found["policies"].items()}
    assert len(policies) >= 3 and found["after"] in policies  # main, the thread before, the thread after
    if found["problem"] is None:
        assert found["text"] == "SCHED_FIFO 7"
        assert set(policies.values()) == {(os.SCHED_FIFO, 7)}
    else:  # no CAP_SYS_NICE / rtprio limit here
        assert "not permitted" in found["problem"] and found["text"] == "normal"
        assert {p for p, _ in policies.values()} == {os.SCHED_OTHER}


@needs_linux
def test_a_refused_priority_changes_nothing_and_says_how_to_allow_it(monkeypatch):
    calls = []

    def refuse(tid, policy, param):
        calls.append((tid, policy, param.sched_priority))
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(realtime.os, "sched_setscheduler", refuse)
    result = set_realtime_priority(40)
    assert result.text == "normal" and len(calls) == 1 and calls[0][1:] == (os.SCHED_FIFO, 40)
    for part in ("realtime_priority 40", "not permitted", "CAP_SYS_NICE", "rtprio limit >= 40", "ulimit -r", "or 0"):
        assert part in result.problem
    assert set_realtime_priority(0) == Scheduling("normal") and len(calls) == 1  # 0: nothing is asked of the OS


def test_threads_that_end_meanwhile_are_skipped(monkeypatch, tmp_path):
    for tid in (11, 12, 13):
        (tmp_path / str(tid)).mkdir()
    seen = []

    def set_one(tid, policy, param):
        seen.append(tid)
        if tid == 12:
            raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr(realtime.os, "sched_setscheduler", set_one)
    assert set_realtime_priority(5, tasks=tmp_path) == Scheduling("SCHED_FIFO 5")
    assert seen == [11, 12, 13]


def diagnostics_values(t: RecordingTransport):
    """(message, key → value) of the newest /diagnostics status the runtime published."""
    t.clock_ns += round(DIAGNOSTICS_PERIOD * 1e9)
    (timer,) = [cb for period, cb, _ in t.timers if period == DIAGNOSTICS_PERIOD]
    timer()
    status = t.pubs["/diagnostics"][2].sent[-1].status[0]
    return status.message, {kv.key: kv.value for kv in status.values}


def test_the_runtime_warns_about_a_refused_priority_and_reports_its_scheduling(monkeypatch):
    monkeypatch.setattr(realtime.os, "sched_setscheduler",
                        lambda *a: (_ for _ in ()).throw(PermissionError(1, "Operation not permitted")))
    t = RecordingTransport()
    NodeRuntime(demo_core(log=t.log, realtime_priority=30), t)
    (warning,) = [text for level, text in t.lines if level == "warn"]
    assert "realtime_priority 30" in warning and "not permitted" in warning
    message, values = diagnostics_values(t)
    assert values["scheduling"] == "normal" and warning in message

    granted = []
    monkeypatch.setattr(realtime.os, "sched_setscheduler", lambda tid, policy, param: granted.append(tid))
    t = RecordingTransport()
    NodeRuntime(demo_core(log=t.log, realtime_priority=30), t)
    message, values = diagnostics_values(t)
    assert values["scheduling"] == "SCHED_FIFO 30" and "realtime_priority" not in message
    assert not [line for line in t.lines if line[0] == "warn"]
    assert threading.get_native_id() in granted  # this thread runs the runtime, as the node's main thread does

    t = RecordingTransport()
    NodeRuntime(demo_core(log=t.log), t)  # the default: normal scheduling, nothing asked
    assert diagnostics_values(t)[1]["scheduling"] == "normal"
