"""Bounded reports of names that come from inputs (unknown joints, bad entries): a log line or a diagnostics value
lists a few of them and counts the rest, so that one message with a million names costs a short line, not megabytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

NAMES_SHOWN = 5
"""Names a log line or a diagnostics value lists before "… and N more"."""

NAME_CHARS = 64
"""Longer names are cut (with an ellipsis) where they are shown."""

TRACKED_NAMES = 10_000
"""Distinct names a :class:`NameTally` remembers; beyond it, new names are counted as "at least"."""


def short_name(name: str) -> str:
    """``name`` as shown: its repr, cut to about :data:`NAME_CHARS` characters."""
    text = repr(name)
    return text if len(text) <= NAME_CHARS else text[: NAME_CHARS - 4] + "...'"


def listed(names: Sequence[str], total: int | None = None, limit: int = NAMES_SHOWN) -> str:
    """``['a', 'b', 'c'] … and 7 more``: the first ``limit`` names, and how many of ``total`` (default
    ``len(names)``) are not shown."""
    total = len(names) if total is None else total
    shown = [short_name(n) for n in names[:limit]]
    more = total - len(shown)
    return "[" + ", ".join(shown) + "]" + (f" … and {more} more" if more > 0 else "")


class NameTally:
    """Distinct names seen so far (told apart by their first :data:`NAME_CHARS` characters): how many (exact up to
    :data:`TRACKED_NAMES`, then a lower bound) and the first :data:`NAMES_SHOWN` of them. Memory stays bounded
    whatever the inputs."""

    def __init__(self):
        self._seen: set[str] = set()
        self._first: list[str] = []
        self.saturated = False

    def add(self, names: Iterable[str]) -> None:
        for name in names:
            key = name[:NAME_CHARS]
            if key in self._seen:
                continue
            if len(self._seen) >= TRACKED_NAMES:
                self.saturated = True
                return
            self._seen.add(key)
            if len(self._first) < NAMES_SHOWN:
                self._first.append(name)

    def __len__(self) -> int:
        return len(self._seen)

    def count_text(self) -> str:
        """The number of distinct names ("10000+" once saturated)."""
        return f"{len(self._seen)}+" if self.saturated else str(len(self._seen))

    def sample_text(self) -> str:
        """The first names seen, and how many more."""
        return listed(self._first, len(self._seen))
