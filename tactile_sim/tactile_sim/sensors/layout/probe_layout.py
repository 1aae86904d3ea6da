"""Probe layouts (docs/models/layouts.md#layouts, docs/models/probes.md#probes,
docs/models/elastomer_taxel.md#layout-scale): validated positions, radii and normals of a probe sensor in its link
frame.

A layout is flat ``(N, 3)`` or a grid ``(M, N, 3)`` indexed ``[row, col]`` (flat index ``r·N + c``). Everything is
float64 NumPy at build time; sensors turn it into tensors on their own device. Also here: the planar-grid helper of
docs/models/layouts.md#helper and the loader for layouts stored in CSV / NPY files.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from ...constants import EPS_LEN, EPS_NORMAL, GRID_FIT_ABS, GRID_FIT_REL, LENGTH_RANGE, MAX_PROBES
from ...errors import ConfigError
from ...text_files import read_text_file

DEFAULT_NORMAL = (0.0, 0.0, 1.0)
"""Default probe normal (link frame) when `probe_local_normal` is not given (docs/models/layouts.md#normals)."""


def _index(shape: tuple[int, ...], flat: int) -> str:
    """Layout index ``[r, c]`` / ``[i]`` of a flat probe index, as printed in error messages."""
    return str([int(i) for i in np.unravel_index(flat, shape)])


def _fmt(x: Any) -> str:
    """Compact text of a received value for an error message."""
    a = np.asarray(x)
    return repr(a.item()) if a.ndim == 0 else str(a.tolist())


def _as_float_array(value: Any, where: str, option: str, allowed: str) -> np.ndarray:
    """``value`` as a float64 array, or a ConfigError if it is ragged or not numeric."""
    try:
        return np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}.{option}: not a numeric array; got {value!r}; allowed: {allowed}") from None


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.float64)
    a.setflags(write=False)
    return a


def euler_offset_matrix(euler_deg: np.ndarray) -> np.ndarray:
    """R_off = Rz(yaw) Ry(pitch) Rx(roll) (3×3 float64) of a layout's ``euler_offset`` (roll, pitch, yaw) in degrees,
    fixed-axis X-Y-Z as Genesis; on Python floats (no torch: ``tactile-sim check`` rotates layouts as the build
    does)."""
    r, p, y = (math.radians(float(a)) for a in euler_deg)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


@dataclass(frozen=True, eq=False)
class GridInfo:
    """Lattice description of a grid layout (docs/models/layouts.md#planar-grids), link frame.

    t_u / t_v: (3,) unit mean column / row step (zeros when that axis has one entry or a step ≤ ε_len);
    du / dv: lengths of the mean steps (m); origin: p[0, 0] (3,); regular: the grid is regular planar;
    shared_normal: (3,) the common probe normal when all normals agree within ε_normal, else None.
    """

    t_u: np.ndarray
    t_v: np.ndarray
    du: float
    dv: float
    origin: np.ndarray
    regular: bool
    shared_normal: np.ndarray | None


def _mean_step(steps: np.ndarray) -> tuple[np.ndarray, float]:
    """Unit direction and length of the mean of ``steps`` (..., 3); zeros / 0 for no steps."""
    if steps.size == 0:
        return np.zeros(3), 0.0
    s = steps.reshape(-1, 3).mean(axis=0)
    d = float(np.linalg.norm(s))
    return (s / d if d > EPS_LEN else np.zeros(3)), d


def _shared_normal(normals: np.ndarray) -> np.ndarray | None:
    """The first probe's normal if every normal is within ε_normal of it (Euclidean), else None."""
    flat = normals.reshape(-1, 3)
    if np.all(np.linalg.norm(flat - flat[0], axis=1) <= EPS_NORMAL):
        return flat[0].copy()
    return None


@dataclass(frozen=True, eq=False)
class ProbeLayout:
    """Validated probe layout in the link frame, after offsets (docs/models/layouts.md#layouts).

    positions: layout shape + (3,) m — (N, 3) or (M, N, 3); radius: layout shape, m (0 marks a filler);
    normals: layout shape + (3,), unit, after the offset rotation; where: prefix of error messages
    (``<file>:<yaml.path>`` or ``<SensorClass>(name='…')``).
    Build it with :meth:`from_options`, which enforces every rule; the arrays are read-only.
    """

    positions: np.ndarray
    radius: np.ndarray
    normals: np.ndarray
    where: str = field(default="layout", compare=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_options(
        cls,
        probe_local_pos: Any = None,
        probe_radius: Any = None,
        probe_local_normal: Any = None,
        pos_offset: Any = (0.0, 0.0, 0.0),
        euler_offset: Any = (0.0, 0.0, 0.0),
        *,
        default_radius: float = 0.01,
        allow_fillers: bool = True,
        where: str = "SensorClass(name='x')",
    ) -> ProbeLayout:
        """Validate the layout options of a probe sensor (docs/models/probes.md#probes, docs/models/layouts.md#layouts)
        and apply the offsets (docs/models/layouts.md#normals).

        probe_local_pos: (N, 3) or (M, N, 3) m, default one probe at the link origin; probe_radius: scalar or layout
        shape, m, default ``default_radius`` (0.01 m; SurfaceDistanceProbe 0.5 m); probe_local_normal: (3,) or
        layout shape + (3,), default (0, 0, 1), normalised here; pos_offset t (3,) m and euler_offset (3,) degrees
        (fixed-axis X-Y-Z) map p ← R_off p + t, a ← R_off a. ``allow_fillers=False`` (SurfaceDistanceProbe) requires
        radius > 0 everywhere. Raises ConfigError (docs/models/scene.md#common-options format) naming ``where``, the
        option, the value and what is allowed.

        Probes must lie within :data:`~...constants.LENGTH_RANGE`'s largest length of the link (coordinates beyond
        it leave floating point in the sensors' cell grids).
        """
        pos_allowed = "(N, 3) or (M, N, 3) finite coordinates in m, N, M >= 1"
        if probe_local_pos is None:
            probe_local_pos = ((0.0, 0.0, 0.0),)
        pos = _as_float_array(probe_local_pos, where, "probe_local_pos", pos_allowed)
        if pos.size == 0:
            raise ConfigError(f"{where}.probe_local_pos: empty layout; got shape {pos.shape}; allowed: {pos_allowed}")
        if pos.ndim not in (2, 3) or pos.shape[-1] != 3:
            raise ConfigError(f"{where}.probe_local_pos: wrong shape; got {pos.shape}; allowed: {pos_allowed}")
        shape = pos.shape[:-1]
        bad = np.flatnonzero(~np.all(np.isfinite(pos.reshape(-1, 3)), axis=1))
        if bad.size:
            i = int(bad[0])
            raise ConfigError(f"{where}.probe_local_pos: non-finite coordinate at {_index(shape, i)}; "
                              f"got {_fmt(pos.reshape(-1, 3)[i])}; allowed: finite values in m")

        radius = cls._check_radius(probe_radius, default_radius, shape, allow_fillers, where)
        normals = cls._check_normals(probe_local_normal, shape, where)

        t = _as_float_array(pos_offset, where, "pos_offset", "3 finite values in m")
        if t.shape != (3,) or not np.all(np.isfinite(t)):
            raise ConfigError(f"{where}.pos_offset: need 3 finite values; got {_fmt(t)}; allowed: (x, y, z) in m")
        e = _as_float_array(euler_offset, where, "euler_offset", "3 finite angles in degrees")
        if e.shape != (3,) or not np.all(np.isfinite(e)):
            raise ConfigError(f"{where}.euler_offset: need 3 finite angles; got {_fmt(e)}; "
                              "allowed: (roll, pitch, yaw) in degrees, fixed-axis X-Y-Z")
        rot = euler_offset_matrix(e)
        pos = pos @ rot.T + t
        normals = normals @ rot.T
        far = np.flatnonzero(np.abs(pos.reshape(-1, 3)).max(axis=1) > LENGTH_RANGE[1])
        if far.size:
            i = int(far[0])
            raise ConfigError(f"{where}.probe_local_pos: probe at {_index(shape, i)} is over {LENGTH_RANGE[1]:g} m "
                              f"from its link (pos_offset and euler_offset applied); got "
                              f"{_fmt(pos.reshape(-1, 3)[i])}; allowed: link-frame coordinates within "
                              f"{LENGTH_RANGE[1]:g} m")
        return cls(_readonly(pos), _readonly(radius), _readonly(normals), where)

    @staticmethod
    def _check_radius(value, default, shape, allow_fillers, where) -> np.ndarray:
        opt = f"{where}.probe_radius"
        allowed = "a scalar or an array of the layout shape " + str(shape)
        r = _as_float_array(default if value is None else value, where, "probe_radius", allowed)
        if r.ndim == 0:
            r = np.full(shape, float(r))
        elif r.shape != shape:
            raise ConfigError(f"{opt}: shape {r.shape} does not match the layout shape {shape}; got {_fmt(r)}; "
                              f"allowed: {allowed}")
        flat = r.reshape(-1)
        bad = np.flatnonzero(~np.isfinite(flat))
        if bad.size:
            i = int(bad[0])
            raise ConfigError(f"{opt}: non-finite radius at {_index(shape, i)}; got {_fmt(flat[i])}; "
                              "allowed: finite >= 0 m")
        bad = np.flatnonzero(flat < 0)
        if bad.size:
            i = int(bad[0])
            raise ConfigError(f"{opt}: negative radius at {_index(shape, i)}; got {_fmt(flat[i])}; "
                              "allowed: >= 0 (0 marks a filler probe)")
        if not allow_fillers:
            bad = np.flatnonzero(flat == 0)
            if bad.size:
                i = int(bad[0])
                raise ConfigError(f"{opt}: filler probe (radius 0) at {_index(shape, i)}; got {_fmt(flat[i])}; "
                                  "allowed: > 0 for every probe (fillers are not allowed on this sensor)")
        if not np.any(flat > 0):
            raise ConfigError(f"{opt}: no positive radius at all; got {_fmt(r)}; "
                              "allowed: >= 0 with at least one probe > 0 (0 marks a filler probe)")
        return r

    @staticmethod
    def _check_normals(value, shape, where) -> np.ndarray:
        opt = f"{where}.probe_local_normal"
        allowed = f"one (3,) vector or layout shape + 3 = {shape + (3,)}, norm >= {EPS_LEN}"
        a = _as_float_array(DEFAULT_NORMAL if value is None else value, where, "probe_local_normal", allowed)
        if a.shape != (3,) and a.shape != shape + (3,):
            raise ConfigError(f"{opt}: shape {a.shape} is neither (3,) (one normal for every probe) nor the layout "
                              f"shape {shape} + 3; got {_fmt(a)}; allowed: {allowed}")
        per_probe = a.ndim > 1
        flat = a.reshape(-1, 3)
        bad = np.flatnonzero(~np.all(np.isfinite(flat), axis=1))
        if bad.size:
            i = int(bad[0])
            at = f" at {_index(shape, i)}" if per_probe else ""
            raise ConfigError(f"{opt}: non-finite normal{at}; got {_fmt(flat[i])}; allowed: {allowed}")
        norm = np.linalg.norm(flat, axis=1)
        bad = np.flatnonzero(norm < EPS_LEN)
        if bad.size:
            i = int(bad[0])
            at = f" at {_index(shape, i)}" if per_probe else ""
            raise ConfigError(f"{opt}: normal{at} has norm {_fmt(norm[i])} < {EPS_LEN}; got {_fmt(flat[i])}; "
                              f"allowed: {allowed}")
        unit = flat / norm[:, None]
        return np.broadcast_to(unit.reshape(a.shape), shape + (3,)).copy()

    # ------------------------------------------------------------------ views
    @property
    def shape(self) -> tuple[int, ...]:
        """Layout dims: (N,) or (M, N)."""
        return self.radius.shape

    @property
    def n(self) -> int:
        """Flat probe count (fillers included)."""
        return int(self.radius.size)

    @property
    def flat_positions(self) -> np.ndarray:
        """(n, 3) m, row-major flattening."""
        return self.positions.reshape(-1, 3)

    @property
    def flat_radius(self) -> np.ndarray:
        """(n,) m."""
        return self.radius.reshape(-1)

    @property
    def flat_normals(self) -> np.ndarray:
        """(n, 3) unit."""
        return self.normals.reshape(-1, 3)

    @property
    def active(self) -> np.ndarray:
        """(n,) bool: radius > 0 (fillers are False)."""
        return self.flat_radius > 0

    @property
    def is_grid(self) -> bool:
        """True for an (M, N, 3) layout."""
        return len(self.shape) == 2

    @property
    def shared_normal(self) -> np.ndarray | None:
        """(3,) common probe normal when all normals agree within ε_normal (fillers included), else None."""
        return _shared_normal(self.normals)

    @cached_property
    def grid(self) -> GridInfo | None:
        """Lattice description for a grid layout (docs/models/layouts.md#planar-grids); None for a flat layout."""
        if not self.is_grid:
            return None
        p = self.positions
        m, n = self.shape
        t_u, du = _mean_step(p[:, 1:] - p[:, :-1])
        t_v, dv = _mean_step(p[1:, :] - p[:-1, :])
        regular = (
            m >= 2 and n >= 2 and du > EPS_LEN and dv > EPS_LEN
            and float(np.linalg.norm(np.cross(t_u, t_v))) > EPS_NORMAL
        )
        if regular:
            r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
            ideal = p[0, 0] + c[..., None] * (du * t_u) + r[..., None] * (dv * t_v)
            dev = float(np.linalg.norm(p - ideal, axis=-1).max())
            regular = dev <= GRID_FIT_ABS + GRID_FIT_REL * min(du, dv)
        return GridInfo(t_u=t_u, t_v=t_v, du=du, dv=dv, origin=p[0, 0].copy(), regular=bool(regular),
                        shared_normal=_shared_normal(self.normals))

    def epsilon0(self) -> float:
        """Layout scale ε₀ (docs/models/elastomer_taxel.md#layout-scale), m: median over active probes of the distance
        to the nearest other active probe.

        One active probe: 2R. Raises ConfigError when ε₀ ≤ ε_len (coincident active probes).
        """
        act = self.active
        pts = self.flat_positions[act]
        if len(pts) == 1:
            eps0 = 2.0 * float(self.flat_radius[act][0])
        else:
            from scipy.spatial import cKDTree  # only here: scipy.spatial takes ~0.4 s to import

            d, _ = cKDTree(pts).query(pts, k=2)
            eps0 = float(np.median(d[:, 1]))
        if eps0 <= EPS_LEN:
            raise ConfigError(f"{self.where}.probe_local_pos: active probes coincide (layout scale ε₀ = median "
                              f"nearest-neighbour distance); got ε₀ = {eps0!r} m; allowed: ε₀ > {EPS_LEN} m")
        return eps0


# ---------------------------------------------------------------------- planar-grid helper
# (docs/models/layouts.md#helper)
def generate_grid_points_on_plane(lo, hi, normal, nx: int, ny: int) -> np.ndarray:
    """Planar grid of probe positions, (ny, nx, 3) float64 m: rows follow ny, columns nx
    (docs/models/layouts.md#helper, as Genesis).

    n̂ = normal/‖normal‖; in-plane axes t₁ = unit part of e_y orthogonal to n̂ (e_z when |n̂_y| ≥ 0.5), t₀ = t₁ × n̂;
    grid[r, c] = u_c t₀ + v_r t₁ + w̄ n̂ with u, v linspaced between lo and hi and w̄ their mean height (warns when
    lo and hi differ in height by more than ε_len). Raises ConfigError for ‖normal‖ < ε_len or bad counts.
    """
    where = "generate_grid_points_on_plane"
    lo_a, hi_a, n_a = (np.asarray(v, dtype=np.float64) for v in (lo, hi, normal))
    for name, v in (("lo", lo_a), ("hi", hi_a), ("normal", n_a)):
        if v.shape != (3,) or not np.all(np.isfinite(v)):
            raise ConfigError(f"{where}.{name}: need 3 finite values; got {_fmt(v)}; allowed: (x, y, z)")
    for name, k in (("nx", nx), ("ny", ny)):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ConfigError(f"{where}.{name}: need an integer >= 1; got {k!r}; allowed: int >= 1")
    norm = float(np.linalg.norm(n_a))
    if norm < EPS_LEN:
        raise ConfigError(f"{where}.normal: norm {norm!r} < {EPS_LEN}; got {_fmt(n_a)}; allowed: a non-zero vector")
    nh = n_a / norm
    ref = np.array([0.0, 1.0, 0.0]) if abs(nh[1]) < 0.5 else np.array([0.0, 0.0, 1.0])
    b = ref - np.dot(ref, nh) * nh
    t1 = b / np.linalg.norm(b)
    t0 = np.cross(t1, nh)
    lo_u, lo_v, lo_w = np.dot(lo_a, t0), np.dot(lo_a, t1), np.dot(lo_a, nh)
    hi_u, hi_v, hi_w = np.dot(hi_a, t0), np.dot(hi_a, t1), np.dot(hi_a, nh)
    if abs(hi_w - lo_w) > EPS_LEN:
        warnings.warn(f"{where}: lo and hi lie at different heights along the normal "
                      f"({float(lo_w)!r} vs {float(hi_w)!r} m); using their mean", UserWarning, stacklevel=2)
    u = np.linspace(lo_u, hi_u, nx)
    v = np.linspace(lo_v, hi_v, ny)
    w = 0.5 * (lo_w + hi_w)
    return u[None, :, None] * t0 + v[:, None, None] * t1 + w * nh


# ---------------------------------------------------------------------- layout files
@dataclass(frozen=True, eq=False)
class LayoutFileData:
    """Arrays read by :func:`load_layout_file`, ready for :meth:`ProbeLayout.from_options`.

    positions: (N, 3) or (M, N, 3) m; radius: layout shape m, or None; normals: layout shape + (3,), or None.
    """

    positions: np.ndarray
    radius: np.ndarray | None
    normals: np.ndarray | None


_CSV_COLUMNS = ("x", "y", "z", "radius", "nx", "ny", "nz", "row", "col")


def load_layout_file(path, where: str, max_probes: int = MAX_PROBES) -> LayoutFileData:
    """Read a probe layout stored in a file (positions in the link frame, m).

    **NPY** (``.npy``): a float array of shape (N, C) or (M, N, C), C ∈ {3, 4, 7}: x, y, z [, radius [, nx, ny, nz]].
    **CSV** (``.csv``, ``.txt``): one probe per line, fields separated by commas and/or whitespace, ``#`` starts a
    comment. Without a header the columns are ``x y z [radius [nx ny nz]]`` (3, 4 or 7 per line). With a header line
    (the first non-comment line, any non-numeric field) the columns are named, in any order, from
    ``x y z radius nx ny nz row col``: x, y, z are required, nx/ny/nz come together, and ``row`` + ``col`` (integers
    ≥ 0) place every probe in an (M, N) grid that they must fill exactly once; at most ``MAX_TEXT_FILE_BYTES``,
    UTF-8 with or without a byte order mark. Errors name ``where`` and the file; at most ``max_probes`` probes: a .npy
    header is checked (shape, dtype, data length, probe count) before its data is read, and a CSV is refused at the
    first probe line past the cap.
    """
    p = Path(path)
    if p.suffix.lower() == ".npy":
        return _load_npy(p, where, max_probes)
    if p.suffix.lower() in (".csv", ".txt"):
        return _load_csv(p, where, max_probes)
    raise ConfigError(f"{where}: layout file '{p}' has an unsupported extension; got '{p.suffix}'; "
                      "allowed: .csv, .txt, .npy")


def _split_columns(a: np.ndarray) -> LayoutFileData:
    """Columns x y z [radius [nx ny nz]] of an (..., C) array."""
    c = a.shape[-1]
    return LayoutFileData(positions=a[..., :3].copy(), radius=a[..., 3].copy() if c >= 4 else None,
                          normals=a[..., 4:7].copy() if c == 7 else None)


_NPY_ALLOWED = "(N, C) or (M, N, C) numbers with C = 3 (x y z), 4 (+ radius) or 7 (+ nx ny nz)"


def _check_npy_header(p: Path, src: str, max_probes: int) -> None:
    """Read only the .npy header and refuse, before any data is read, an array of the wrong shape or dtype, one
    whose data is shorter than the header claims, or one with more than ``max_probes`` probes."""
    try:
        with p.open("rb") as f:
            version = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(f)
            data_bytes = p.stat().st_size - f.tell()
    except (OSError, ValueError) as e:
        raise ConfigError(f"{src}: cannot be read ({e}); allowed: a NumPy .npy float array") from None
    if dtype.kind not in "fiu" or len(shape) not in (2, 3) or shape[-1] not in (3, 4, 7):
        raise ConfigError(f"{src}: wrong array; got shape {shape} dtype {dtype}; allowed: {_NPY_ALLOWED}")
    probes = math.prod(shape[:-1])
    if probes > max_probes:
        raise ConfigError(f"{src}: {probes} probes exceed the cap; got shape {shape}; "
                          f"allowed: at most {max_probes} probes per sensor")
    if math.prod(shape) * dtype.itemsize > data_bytes:
        raise ConfigError(f"{src}: truncated file, the header announces {math.prod(shape) * dtype.itemsize} bytes "
                          f"of data; got {data_bytes} bytes; allowed: a complete .npy file")


def _load_npy(p: Path, where: str, max_probes: int) -> LayoutFileData:
    src = f"{where}: layout file '{p}'"
    _check_npy_header(p, src, max_probes)
    try:
        a = np.load(p, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{src}: cannot be read ({e}); allowed: a NumPy .npy float array") from None
    a = a.astype(np.float64)
    bad = np.argwhere(~np.isfinite(a))
    if bad.size:
        raise ConfigError(f"{src}: non-finite value at index {bad[0].tolist()}; got {float(a[tuple(bad[0])])!r}; "
                          "allowed: finite numbers")
    return _split_columns(a)


_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_LINE = re.compile(f"[^{_BREAKS}]*(?:\r\n|[{_BREAKS}])|[^{_BREAKS}]+")
"""One line of a text with its line break (the breaks of ``str.splitlines``), matched one at a time."""


def _probe_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number from 1, text) of each line of ``text`` that is not blank once its ``#`` comment is cut."""
    for lineno, match in enumerate(_LINE.finditer(text), start=1):
        line = match.group().split("#", 1)[0].strip()
        if line:
            yield lineno, line


def _too_many_probes(src: str, max_probes: int) -> ConfigError:
    """The error for a CSV layout file of more than ``max_probes`` probe lines."""
    return ConfigError(f"{src}: too many probes; got more than {max_probes} probe lines; "
                       f"allowed: at most {max_probes} probes per sensor")


def _load_csv(p: Path, where: str, max_probes: int) -> LayoutFileData:
    src = f"{where}: layout file '{p}'"
    try:
        text = read_text_file(p, "layout file").removeprefix("\ufeff")
    except ValueError as e:
        raise ConfigError(f"{where}: {e}") from None
    except OSError as e:
        raise ConfigError(f"{src}: cannot be read ({e}); allowed: a readable text file") from None
    # more line breaks than a header and max_probes probes need: refuse a (max_probes + 2)-th probe line before
    # parsing any (counting stops there; no per-line objects are kept)
    if sum(map(text.count, _BREAKS)) > max_probes and any(islice(_probe_lines(text), max_probes + 1, None)):
        raise _too_many_probes(src, max_probes)
    rows = [(lineno, [f for f in re.split(r"[,\s]+", line) if f]) for lineno, line in _probe_lines(text)]
    if not rows:
        raise ConfigError(f"{src}: no probe lines; got an empty file; allowed: one 'x, y, z' line per probe")

    header: list[str] | None = None
    try:
        [float(f) for f in rows[0][1]]
    except ValueError:
        header = [f.strip().lower() for f in rows[0][1]]
        rows = rows[1:]
    if header is not None:
        unknown = [h for h in header if h not in _CSV_COLUMNS]
        if unknown or len(set(header)) != len(header) or not {"x", "y", "z"} <= set(header):
            raise ConfigError(f"{src}: bad header; got {header}; allowed: distinct names from "
                              f"{list(_CSV_COLUMNS)} including x, y, z")
        if len({"nx", "ny", "nz"} & set(header)) not in (0, 3) or len({"row", "col"} & set(header)) == 1:
            raise ConfigError(f"{src}: bad header; got {header}; allowed: nx, ny, nz together and row, col together")
    if not rows:
        raise ConfigError(f"{src}: no probe lines after the header; allowed: one line per probe")
    if len(rows) > max_probes:
        raise _too_many_probes(src, max_probes)

    width = len(header) if header is not None else len(rows[0][1])
    if header is None and width not in (3, 4, 7):
        raise ConfigError(f"{src}: line {rows[0][0]} has {width} columns; allowed: 3 (x y z), 4 (+ radius) or "
                          "7 (+ nx ny nz), or a header naming the columns")
    data = np.empty((len(rows), width))
    for k, (lineno, fields) in enumerate(rows):
        if len(fields) != width:
            raise ConfigError(f"{src}: line {lineno} has {len(fields)} columns; got {fields}; allowed: {width}")
        try:
            data[k] = [float(f) for f in fields]
        except ValueError:
            raise ConfigError(f"{src}: line {lineno} has a non-numeric field; got {fields}; allowed: numbers") from None
        if not np.all(np.isfinite(data[k])):
            raise ConfigError(f"{src}: line {lineno} has a non-finite value; got {fields}; allowed: finite numbers")
    if header is None:
        return _split_columns(data)

    col = {h: data[:, i] for i, h in enumerate(header)}
    out = np.stack([col["x"], col["y"], col["z"]], axis=1)
    radius = col.get("radius")
    normals = np.stack([col["nx"], col["ny"], col["nz"]], axis=1) if "nx" in col else None
    if "row" not in col:
        return LayoutFileData(out, radius, normals)
    r_idx, c_idx = col["row"], col["col"]
    if not (np.all(r_idx == np.round(r_idx)) and np.all(c_idx == np.round(c_idx)) and r_idx.min() >= 0
            and c_idx.min() >= 0):
        raise ConfigError(f"{src}: row/col must be integers >= 0; got rows {_fmt(r_idx)}, cols {_fmt(c_idx)}; "
                          "allowed: integers >= 0")
    ri, ci = r_idx.astype(np.int64), c_idx.astype(np.int64)
    m, n = int(ri.max()) + 1, int(ci.max()) + 1
    if m * n != len(out):  # (checked before the m x n count: a stray large index would make it huge)
        raise ConfigError(f"{src}: rows and cols up to {m - 1}, {n - 1} make a {m} x {n} grid of {m * n} cells for "
                          f"{len(out)} probe lines; allowed: every [row, col] of the grid exactly once (pad with "
                          "radius 0 fillers)")
    count = np.zeros((m, n), dtype=np.int64)
    np.add.at(count, (ri, ci), 1)
    if np.any(count != 1):
        bad = np.argwhere(count != 1)[0]
        raise ConfigError(f"{src}: grid cell {bad.tolist()} appears {int(count[tuple(bad)])} times; "
                          f"allowed: every [row, col] of the {m} x {n} grid exactly once (pad with radius 0 fillers)")
    order = np.argsort(ri * n + ci)
    return LayoutFileData(out[order].reshape(m, n, 3), None if radius is None else radius[order].reshape(m, n),
                          None if normals is None else normals[order].reshape(m, n, 3))
