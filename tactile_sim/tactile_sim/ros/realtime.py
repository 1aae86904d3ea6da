"""Real-time scheduling of the node's threads (parameter ``realtime_priority``), for hardware-in-the-loop timing.

Under Linux's default scheduler a node that sleeps between updates competes with every other process when it wakes:
on a loaded machine the update timer fires late now and then (a deadline miss although the update itself is short).
With ``SCHED_FIFO`` at priority p (1–99) the node's threads run as soon as they are ready, ahead of every ordinary
process. :func:`set_realtime_priority` puts every thread of this process under it; threads started afterwards (an
executor's workers, the markers timer) inherit it. It needs ``CAP_SYS_NICE`` (root) or an ``RLIMIT_RTPRIO`` of at
least p (``ulimit -r``, ``/etc/security/limits.conf``); without them nothing changes and the reason is returned.
The kernel keeps ~5 % of each second for ordinary processes (``sched_rt_runtime_us``), so a busy node cannot lock
the machine up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TASKS = Path("/proc/self/task")
"""One entry per thread of this process (Linux)."""


@dataclass(frozen=True)
class Scheduling:
    """What the node runs under: ``text`` for diagnostics (``SCHED_FIFO 50`` or ``normal``) and ``problem``: why the
    asked priority is not in force (None when it is, or when none was asked)."""

    text: str
    problem: str | None = None


def set_realtime_priority(priority: int, tasks: Path = TASKS) -> Scheduling:
    """Every thread of this process (the entries of ``tasks``) under ``SCHED_FIFO`` at ``priority`` (1–99; 0: leave
    the scheduling as it is). On refusal (no permission, no such policy on this platform) the threads keep their
    scheduling and the returned :class:`Scheduling` says why (the first thread is refused, so none changed)."""
    if priority == 0:
        return Scheduling("normal")
    if not hasattr(os, "sched_setscheduler"):
        return Scheduling("normal", f"realtime_priority {priority}: this platform has no SCHED_FIFO (Linux only); "
                                    "running with normal scheduling")
    try:
        for tid in sorted(int(entry.name) for entry in tasks.iterdir()):
            try:
                os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(priority))
            except ProcessLookupError:
                continue  # the thread ended meanwhile
    except OSError as exc:
        why = "not permitted" if isinstance(exc, PermissionError) else exc.strerror or repr(exc)
        return Scheduling("normal", f"realtime_priority {priority}: SCHED_FIFO {why}; allowed: CAP_SYS_NICE or an "
                                    f"rtprio limit >= {priority} (ulimit -r, /etc/security/limits.conf), or 0; "
                                    "running with normal scheduling")
    return Scheduling(f"SCHED_FIFO {priority}")
