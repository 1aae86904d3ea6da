"""Body names and patterns (``prim_path``, ``filter_prim_paths_expr``, ``properties_dict`` keys) against the bodies
of a scene (robot links in URDF order, then objects): the matching the build does, without the scene, so that
``tactile-sim check`` refuses what the build would."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence

from ..errors import option_error


def closest_names(name: str, names: Iterable[str], n: int = 5) -> list[str]:
    """Up to ``n`` names most similar to ``name`` (difflib ratio), best first."""
    return difflib.get_close_matches(name, list(names), n=n, cutoff=0.0)


def match_bodies(pattern: str, names: Sequence[str]) -> list[int]:
    """Indices (scene order) of the bodies whose name equals ``pattern`` or matches it in full as a regex."""
    try:
        regex = re.compile(pattern)
    except re.error:
        return [i for i, n in enumerate(names) if n == pattern]
    return [i for i, n in enumerate(names) if n == pattern or regex.fullmatch(n)]


def prim_path_bodies(prim_path: str, names: Sequence[str], where: str) -> list[int]:
    """:func:`match_bodies` of a ContactSensor's ``prim_path`` (``where``: the sensor's location), or the
    ConfigError of one that matches no body."""
    matched = match_bodies(prim_path, names)
    if not matched:
        raise option_error(where, "prim_path", "matches no body", prim_path,
                           f"a body name or a regular expression matching one in full; closest bodies: "
                           f"{closest_names(prim_path, names)}")
    return matched
