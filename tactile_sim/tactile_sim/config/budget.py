"""The resource budget: what a configuration would allocate, estimated from its options before anything is built.

Two kinds of limit, both refused with the usual ``<file>:<yaml.path>: problem; got …; allowed: …`` error:

* a cap per option (:data:`CAPS`): probes per sensor, sampled points per sensor, TemperatureGrid cells, ring slots
  (``history_length`` and ``delay`` in engine steps), ``n_envs`` and ``sdf_max_nodes``;
* a total: the estimated bytes of every sensor per env (:data:`BYTES`) times the number of envs, plus the tables a
  sensor keeps once for all envs (an ElastomerTaxel's pair tables: :data:`ELASTOMER_PAIR_ELEMENTS`), against
  ``suite.max_memory`` (default :data:`DEFAULT_MEMORY_FRACTION` of this machine's memory, or of a container's limit).

The estimate is an upper-side guess of the engine's working set (state, readings, imperfection rings, point
clouds, cells), not an exact account; it exists to turn an absurd size into an error in milliseconds. Layout sizes
that only a file or the robot description knows (``{file: …}``, ``{urdf_tactile: …}``, ``{conforming: …}``)
count as one probe here; the suite repeats the check with the real counts once the layouts are read
(:func:`check_budget` with ``probe_counts``), before any sensor is built. Pure Python: importable without torch,
warp or numpy.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..constants import MAX_PROBES
from .errors import Got, OptionProblem, combined_error, format_problem
from .layouts import declared_probe_count

CAPS: Mapping[str, int] = {
    "probes": MAX_PROBES,
    "samples": 4_000_000,
    "cells": 16_777_216,
    "ring_slots": 100_000,
    "n_envs": 1_000_000,
    "sdf_max_nodes": 512,
    "sensors": 1000,
    "objects": 1000,
}
"""Per-option caps: probes per sensor (layout), sampled points per sensor (``n_sample_points`` summed over the
tracked bodies), cells per TemperatureGrid (nx·ny·nz), ring slots per sensor (``history_length``, ``delay``/dt),
``suite.n_envs``, ``suite.sdf_max_nodes`` (nodes per axis of one mesh SDF grid), entries of ``sensors`` and of
``objects`` (each is built on its own)."""

BYTES: Mapping[str, int] = {
    "probe": 1024,
    "sample": 64,
    "cell": 128,
    "value": 8,
    "sensor": 4096,
}
"""Estimated bytes per env: per probe (state, readings, pipeline buffers, and where a node or a replay publishes them
its message templates and encoders: ~400 B for the sensors, ~900 B with the node core, 1 M probes measured), per
sampled point (world-frame copy and
anchors), per grid cell (temperature, stencil, readings), per reading value and ring slot, and a fixed share per
sensor."""

ELASTOMER_PAIR_ELEMENTS = 2**24
"""Most elements an ElastomerTaxel batch keeps for its direct path, shared by the envs: the dense pair tables (4 per
probe pair, up to this many: ``sensors.elastomer.dilation.DENSE_LIMIT``) or, for larger layouts, the CPU's cache
of source rows (``sensors.elastomer.source_rows.ROW_CACHE_LIMIT``). A sensor whose layout is not declared as a grid
counts min(4·P², this) elements of 8 bytes; a declared grid takes the lattice or FFT path, which keeps none."""

RING_SLOT_HOST_BYTES = 2048
"""Host bytes per slot of a delay ring, shared by the envs: the views and launch arguments kept for each slot
(measured 1.6 kB: a delay of 100 000 steps holds 160 MB and takes 2.4 s to build)."""

VALUES_PER_PROBE = 8
"""Reading channels counted per probe for the imperfection rings (the widest model, KinematicTaxel, has 6)."""

FIXED_VALUES = 64
"""Reading values counted for a sensor without probes or cells (JointTorque joints, ContactSensor bodies)."""

DEFAULT_MEMORY_FRACTION = 0.5
"""Default ``suite.max_memory``: this fraction of the machine's physical memory."""

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
MEMORY_ALLOWED = "a number of bytes > 0, or a number with a unit (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. '8 GB'"


def parse_memory(value: Any) -> int:
    """``suite.max_memory`` in bytes: a positive finite number of bytes or a string ``'<number> <unit>'``."""
    if isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([A-Za-z]*)\s*", value)
        unit = m.group(2).lower() if m else None
        if m is None or unit not in _UNITS:
            raise OptionProblem("not a memory size", value, MEMORY_ALLOWED)
        try:
            number = float(m.group(1)) * _UNITS[unit]
        except ValueError:
            raise OptionProblem("not a memory size", value, MEMORY_ALLOWED) from None
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    else:
        raise OptionProblem("not a memory size", value, MEMORY_ALLOWED)
    if not (math.isfinite(number) and number >= 1):
        raise OptionProblem("memory size must be finite and >= 1 byte", value, MEMORY_ALLOWED)
    return int(number)


CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
"""Files holding a container's memory limit (cgroup v2, v1); "max" or a huge number means none."""


def machine_memory() -> int:
    """Memory this process may use, bytes: the machine's physical memory, or a smaller container (cgroup) limit;
    0 when the OS does not tell."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        total = 0
    for path in CGROUP_LIMITS:
        try:
            with open(path) as f:
                limit = int(f.read().strip())
        except (OSError, ValueError):  # absent, or "max"
            continue
        if 0 < limit < total or total == 0:
            total = limit
    return total


def default_max_memory() -> int:
    """:data:`DEFAULT_MEMORY_FRACTION` of :func:`machine_memory` (16 GiB when unknown)."""
    total = machine_memory()
    return int(DEFAULT_MEMORY_FRACTION * total) if total > 0 else 16 * 2**30


def format_bytes(n: float) -> str:
    """``n`` bytes as a short decimal text: ``'1.5 GB'``."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


@dataclass
class Item:
    """One sensor option's share of the estimate: its location, value, bytes per env and, for a capped count,
    the count and the cap key; ``shared``: bytes kept once for all envs."""

    where: str
    option: str
    got: Any
    per_env: int
    count: int = 0
    cap: str = ""
    shared: int = 0


def _probe_count(opt: Any, probe_counts: Mapping[str, int]) -> tuple[int, str, Any]:
    """(probes, option, value) of a probe sensor: the read layout when known, else what the options tell."""
    src = opt.probe_local_pos
    if opt.name in probe_counts:
        return probe_counts[opt.name], "probe_local_pos", Got(f"{probe_counts[opt.name]} probes")
    grid = getattr(src, "grid", None)
    if grid is not None:
        return grid.nx * grid.ny, "probe_local_pos.grid", [grid.nx, grid.ny]
    count = declared_probe_count(src)
    if count is not None:
        return count, "probe_local_pos", Got(f"{count} probes")
    return 1, "probe_local_pos", src


def sensor_items(opt: Any, engine_dt: float, probe_counts: Mapping[str, int]) -> list[Item]:
    """The estimated shares of one sensor's options (bytes per env), duck-typed on the option model's fields."""
    where = opt.where
    items = [Item(where, "type", opt.type, BYTES["sensor"])]
    values = FIXED_VALUES
    if hasattr(opt, "probe_local_pos"):
        n, option, got = _probe_count(opt, probe_counts)
        items.append(Item(where, option, got, n * BYTES["probe"], n, "probes"))
        values = n * VALUES_PER_PROBE
        if hasattr(opt, "compressibility") and option != "probe_local_pos.grid":   # ElastomerTaxel's direct path
            pair_tables = 8 * min(4 * n * n, ELASTOMER_PAIR_ELEMENTS)
            items.append(Item(where, option, got, 0, shared=pair_tables))
    if hasattr(opt, "grid_size"):
        cells = math.prod(opt.grid_size)
        items.append(Item(where, "grid_size", list(opt.grid_size), cells * BYTES["cell"], cells, "cells"))
        values = cells
    if hasattr(opt, "n_sample_points"):
        spec = opt.n_sample_points
        samples = sum(spec) if isinstance(spec, list) else spec * len(opt.track)
        items.append(Item(where, "n_sample_points", spec, samples * BYTES["sample"], samples, "samples"))
    slot = values * BYTES["value"]
    items.append(Item(where, "history_length", opt.history_length, opt.history_length * slot, opt.history_length,
                      "ring_slots"))
    delay = getattr(opt, "delay", 0.0)
    if delay > 0:
        steps = math.ceil(delay / engine_dt)
        items.append(Item(where, "delay", delay, steps * slot, steps, "ring_slots",
                          shared=steps * RING_SLOT_HOST_BYTES))
    return items


def estimated_bytes(items: list[Item], n_envs: int) -> int:
    """The estimated total in bytes: the items' bytes per env times max(1, ``n_envs``), plus their shared bytes."""
    return max(1, n_envs) * sum(it.per_env for it in items) + sum(it.shared for it in items)


_CAP_TEXT = {"probes": "probes per sensor", "samples": "sampled points per sensor", "cells": "grid cells",
             "ring_slots": "ring slots (engine steps)"}


def entry_problems(label: str, sections: Mapping[str, Any]) -> list[str]:
    """Problem lines for ``sensors`` / ``objects`` lists longer than their caps, in a raw mapping (checked before
    validation, which would build every entry) or a validated configuration's."""
    lines = []
    for section in ("sensors", "objects"):
        entries = sections.get(section)
        if isinstance(entries, (list, tuple)) and len(entries) > CAPS[section]:
            lines.append(format_problem(f"{label}:{section}", "", f"too many {section}", Got(f"{len(entries)} entries"),
                                        f"at most {CAPS[section]} entries"))
    return lines


def _shared_text(shared: int) -> str:
    """`` + <bytes> shared by the envs`` for a positive count of shared bytes, else nothing."""
    return f" + {format_bytes(shared)} shared by the envs" if shared else ""


def budget_problems(config: Any, *, n_envs: int | None = None, probe_counts: Mapping[str, int] | None = None,
                    n_envs_where: str = "") -> list[str]:
    """Problem lines of a :class:`~.schema.SuiteConfig` against :data:`CAPS` and ``suite.max_memory``.

    n_envs: overrides ``suite.n_envs`` (Python API), named ``n_envs_where`` in errors; probe_counts: sensor name →
    probes of an already read layout. Returns [] when the configuration fits.
    """
    s = config.suite
    label = config.source or "<config>"
    envs = s.n_envs if n_envs is None else n_envs
    envs_where = n_envs_where or f"{label}:suite.n_envs"
    if isinstance(envs, bool) or not isinstance(envs, numbers.Integral) or envs < 0:
        return [format_problem(envs_where, "", "not an integer >= 0", envs, "an integer >= 0 (0: unbatched)")]
    lines = []
    if envs > CAPS["n_envs"]:
        lines.append(format_problem(envs_where, "", "too many envs", envs, f"0 <= n_envs <= {CAPS['n_envs']}"))
    if s.sdf_max_nodes > CAPS["sdf_max_nodes"]:
        lines.append(format_problem(f"{label}:suite.sdf_max_nodes", "", "SDF grid too fine", s.sdf_max_nodes,
                                    f"2 <= sdf_max_nodes <= {CAPS['sdf_max_nodes']} nodes per axis"))
    lines += entry_problems(label, {"sensors": config.sensors, "objects": config.objects})
    items = [it for opt in config.sensors for it in sensor_items(opt, s.step_dt, probe_counts or {})]
    for it in items:
        if it.cap and it.count > CAPS[it.cap]:
            lines.append(format_problem(it.where, it.option, f"{it.count} {_CAP_TEXT[it.cap]} exceed the cap",
                                        it.got, f"at most {CAPS[it.cap]} {_CAP_TEXT[it.cap]}"))
    if lines:
        return lines
    limit = s.max_memory if s.max_memory is not None else default_max_memory()
    per_env, shared = sum(it.per_env for it in items), sum(it.shared for it in items)
    total = estimated_bytes(items, envs)
    if total > limit:
        top = max(items, key=lambda it: max(1, envs) * it.per_env + it.shared)
        default = "" if s.max_memory is not None else f" (default: {DEFAULT_MEMORY_FRACTION:g} of the machine's memory)"
        lines.append(format_problem(
            top.where, top.option,
            f"the configuration would allocate about {format_bytes(total)} ({max(1, envs)} env(s) x "
            f"{format_bytes(per_env)}{_shared_text(shared)}; this option {format_bytes(top.per_env)} per env"
            f"{_shared_text(top.shared)}), above suite.max_memory",
            top.got, f"an estimated total <= {format_bytes(limit)}{default}; reduce this option or n_envs, or raise "
            "suite.max_memory"))
    return lines


def check_budget(config: Any, **kwargs: Any) -> None:
    """Raise one ConfigError listing :func:`budget_problems` (nothing when the configuration fits)."""
    lines = budget_problems(config, **kwargs)
    if lines:
        raise combined_error(lines)
