"""Error types shared by every layer."""

import difflib
import os
from collections.abc import Iterable


class ConfigError(ValueError):
    """A configuration or scene-description error.

    The message states, in this order: where (``<file>:<yaml.path>`` or ``<SensorClass>(name='…')``),
    the option, what is wrong, the value received and what is allowed (docs/models/scene.md#common-options).
    """


class SceneError(ConfigError):
    """An inconsistent scene: duplicate body names, invalid shape dimensions, unresolvable meshes."""


def option_error(where: str, option: str, problem: str, got, allowed: str) -> ConfigError:
    """A :class:`ConfigError` in the docs/models/scene.md#common-options format: ``<where>.<option>: <problem>; got
    <got!r>; allowed: <allowed>``."""
    return ConfigError(f"{where}.{option}: {problem}; got {got!r}; allowed: {allowed}")


def os_error_text(exc: OSError) -> str:
    """What the file system refused, and where: ``<path>: <reason>`` (``<path> -> <path>: <reason>`` for a rename;
    the reason alone when no path is known)."""
    reason = exc.strerror or str(exc)
    paths = [os.fsdecode(p) for p in (exc.filename, exc.filename2) if p is not None]
    return f"{' -> '.join(paths)}: {reason}" if paths else reason


def closest_names(name: str, names: Iterable[str], n: int = 5, cutoff: float = 0.0) -> list[str]:
    """Up to ``n`` names most similar to ``name`` (difflib ratio ≥ ``cutoff``; 0: the closest whatever they are),
    best first: what an error about an unknown name lists."""
    return difflib.get_close_matches(name, list(names), n=n, cutoff=cutoff)
