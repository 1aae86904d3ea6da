"""Configuration error messages in the format of docs/models/scene.md#common-options, and closest-name suggestions.

Every message reads ``<where>.<option>: <problem>; got <value>; allowed: <allowed>`` where ``where`` is
``<file>:<yaml.path>`` (YAML) or ``<SensorClass>(name='…')`` (Python API).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import ConfigError, closest_names

MAX_VALUE_CHARS = 120
"""Longer renderings of a received value are cut (with an ellipsis) so that one message stays readable."""


class OptionProblem(ConfigError):
    """One broken rule of one option, raised inside schema validators.

    pydantic turns it into an error at the validator's location; the loader then adds the file and YAML path.
    ``option`` is a path relative to that location ("" when the location already names the option), e.g.
    ``"release_threshold"`` from a model-level rule. Raised outside pydantic it reads as a plain message without
    ``where``.
    """

    def __init__(self, problem: str, got: Any, allowed: str, option: str = "", hint: str = ""):
        self.problem, self.got, self.allowed, self.option, self.hint = problem, got, allowed, option, hint
        super().__init__(format_problem("", option, problem, got, allowed, hint))


def _plain(value: Any) -> Any:
    """Arrays/tensors (``tolist``) and tuples → lists, recursively, so that every sequence prints alike."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def format_value(value: Any) -> str:
    """Short rendering of a received value: repr of scalars and strings, lists/tuples/arrays as nested lists."""
    text = repr(_plain(value))
    if len(text) > MAX_VALUE_CHARS:
        text = text[: MAX_VALUE_CHARS - 3] + "..."
    return text


def join_location(where: str, option: str) -> str:
    """``where`` + ``option`` as one location: ``file.yaml:`` + ``a.b`` → ``file.yaml:a.b``; ``X(name='n')`` +
    ``a`` → ``X(name='n').a``; ``sensors[2]`` + ``[1]`` → ``sensors[2][1]``."""
    if not option:
        return where.rstrip(":") if where.endswith(":") else where
    if not where or where.endswith(":") or option.startswith("["):
        return f"{where}{option}"
    return f"{where}.{option}"


class Got:
    """A received value already rendered as text (e.g. ``Got('nothing')`` for a missing option)."""

    def __init__(self, text: str):
        self.text = text


def format_problem(where: str, option: str, problem: str, got: Any, allowed: str, hint: str = "") -> str:
    """One problem line: ``<where>.<option>: <problem>; got <value>; allowed: <allowed>[; <hint>]``.

    ``got`` is rendered with :func:`format_value` unless it is already a :class:`Got` text.
    """
    location = join_location(where, option)
    got_text = got.text if isinstance(got, Got) else format_value(got)
    line = f"{problem}; got {got_text}; allowed: {allowed}"
    if hint:
        line += f"; {hint}"
    return f"{location}: {line}" if location else line


def config_error(where: str, option: str, problem: str, got: Any, allowed: str, hint: str = "") -> ConfigError:
    """A :class:`ConfigError` carrying one :func:`format_problem` line (``raise config_error(...)``)."""
    return ConfigError(format_problem(where, option, problem, got, allowed, hint))


def combined_error(lines: Sequence[str]) -> ConfigError:
    """One ConfigError for several problem lines: the line itself when there is one, else a count and the lines."""
    if len(lines) == 1:
        return ConfigError(lines[0])
    return ConfigError(f"{len(lines)} configuration problems:\n" + "\n".join(f"  {line}" for line in lines))


def suggest(name: str, candidates: Iterable[str], *, cutoff: float = 0.0, limit: int = 5) -> str:
    """``"did you mean 'a', 'b'?"`` for up to ``limit`` candidates closest to ``name`` (difflib ratio ≥ ``cutoff``),
    or ``""`` when none qualifies. The default cutoff 0 always lists the closest existing names
    (docs/models/scene.md#common-options: unknown
    body names list up to five closest existing names); option keys use 0.6 to avoid unrelated guesses."""
    close = closest_names(str(name), sorted(set(candidates)), limit, cutoff)
    if not close:
        return ""
    return "did you mean " + ", ".join(repr(c) for c in close) + "?"
