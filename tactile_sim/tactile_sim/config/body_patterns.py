"""ContactSensor body patterns (``prim_path``, ``filter_prim_paths_expr``) against the body names of a scene
(robot links in URDF order, then objects): the matching the build does, here without the scene, so that
``tactile-sim check`` refuses what the build would."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import closest_names, option_error


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


def filter_bodies(patterns: Sequence[str], names: Sequence[str], matched: Sequence[int], where: str,
                  candidates: Sequence[int] | None = None) -> list[list[int]]:
    """The bodies (indices) each of a ContactSensor's ``filter_prim_paths_expr`` ``patterns`` matches, or the
    ConfigError of one that matches a sensor body (``matched``, its ``prim_path`` bodies) or no body the sensor can
    touch (``candidates``; None: any body, where the scene is not built)."""
    touchable = range(len(names)) if candidates is None else candidates
    out = []
    for f, pattern in enumerate(patterns):
        hit = match_bodies(pattern, names)
        clash = [names[b] for b in hit if b in matched]
        if clash:
            raise option_error(where, f"filter_prim_paths_expr[{f}]", f"matches the sensor body {clash[0]!r}",
                               pattern, "bodies other than those matched by prim_path")
        if not set(hit) & set(touchable):
            raise option_error(where, f"filter_prim_paths_expr[{f}]", "matches no candidate body", pattern,
                               f"a name or regular expression matching a body the sensor can touch; closest "
                               f"bodies: {closest_names(pattern, [names[b] for b in touchable])}")
        out.append(hit)
    return out
