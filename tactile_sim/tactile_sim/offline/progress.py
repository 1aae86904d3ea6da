"""A progress bar over simulated time (tqdm on stderr), shown only for runs that last longer than a second."""

from __future__ import annotations

from types import TracebackType

from tqdm import tqdm

from ..io.stamps import NS_PER_S

SHOW_AFTER_S = 1.0
"""Wall seconds before the bar appears (shorter runs print nothing)."""


class ClockProgress:
    """Progress of a run over ``total_s`` simulated seconds starting at ``start_ns`` (None: at the first update);
    :meth:`update` with the current run time (ns). enabled=False shows nothing; nor does a stderr that is not a
    terminal (logs stay clean)."""

    def __init__(self, total_s: float, *, description: str, enabled: bool = True, start_ns: int | None = None):
        self.start_ns = start_ns
        self._bar = tqdm(total=round(max(total_s, 0.0), 3), desc=description, unit="s", delay=SHOW_AFTER_S,
                         disable=None if enabled else True, leave=False, dynamic_ncols=True,
                         bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.2f}/{total:.2f} s simulated "
                                    "[{elapsed}<{remaining}]")

    @property
    def active(self) -> bool:
        """False when nothing is shown (not enabled, or stderr is not a terminal): :meth:`update` need not be
        called."""
        return not self._bar.disable

    def update(self, t_ns: int) -> None:
        """Set the bar to run time t_ns (ns)."""
        if self.start_ns is None:
            self.start_ns = t_ns
        done = round(min((t_ns - self.start_ns) / NS_PER_S, self._bar.total), 3)
        if done > self._bar.n:
            self._bar.update(done - self._bar.n)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> ClockProgress:
        return self

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
