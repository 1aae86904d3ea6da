"""The end of a ROS 2 node's process: its clean-up shielded from a second Ctrl-C.

A terminal's Ctrl-C sends SIGINT to every process of its group, and ``ros2 launch`` forwards one of its own to each
node it started, so a node usually gets a second SIGINT while it is destroying its node and context after the first.
Raised there as KeyboardInterrupt, it would break off the clean-up with a traceback and exit status -2.
"""

from __future__ import annotations

import signal


def ignore_further_interrupts() -> None:
    """Ignore SIGINT for the rest of the process (call it from the main thread, when the clean-up begins)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
