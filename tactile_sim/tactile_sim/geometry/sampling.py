"""Surface point clouds with area shares (docs/models/scene.md#sampling).

``sample_body_surface(shapes, n=None, spacing=None, seed=0) -> SurfaceSamples`` samples the surface of a list of
shapes (one body's, or several bodies' in scene order) with either a total budget ``n`` or a spacing ``s``:

1. The budget is split over the shapes in proportion to area (largest remainder, ties to the earlier shape, at least
   1 per shape when n > 0). With a spacing, shape i gets ceil(area_i / s²) samples (boxes: their lattice count).
2. Boxes: a lattice of cell centres on each face, faces in the order +x, −x, +y, −y, +z, −z; area share = cell area.
   Spacing form: ceil(L_u/s) × ceil(L_v/s) cells per face. Count form m: faces get area-proportional shares m_f
   (as step 1) and face f gets max(1, ⌊L_u/s_f + ½⌋) × max(1, ⌊L_v/s_f + ½⌋) cells, s_f = sqrt(L_u L_v / m_f).
   Other primitives and meshes: max(256, 4n) area-uniform candidates from the generator, farthest-point
   down-sampled to n (start index from the same generator); area share = shape area / n.
3. One ``numpy.random.default_rng(seed)`` per cloud, used shape by shape in order: the cloud is deterministic and
   identical for CPU and GPU runs. Pass a ``numpy.random.Generator`` as ``seed`` to continue one stream over
   several calls (e.g. one call per tracked body).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Sequence

import numpy as np
import scipy
from scipy.spatial import cKDTree

from ..constants import int_ceil, int_floor
from ..derived_cache import cache_dir, key_name, read_payload, write_payload
from ..errors import SceneError, option_error
from .shapes import Shape, ShapeKind

MIN_CANDIDATES = 256
"""Fewest area-uniform candidates drawn before farthest-point down-sampling (docs/models/scene.md#sampling: max(256,
4n))."""

FPS_CACHE_MIN_PICKS = 128
"""Farthest-point orders of at least this many picks (some ms each) are cached (:func:`farthest_point_indices`);
smaller ones cost less than reading a file."""


@dataclass(frozen=True, eq=False)
class SurfaceSamples:
    """A surface point cloud in the frame the shapes' poses refer to (their owning body's).

    points: (K, 3) float64 m; normals: (K, 3) float64 outward unit normals; areas: (K,) float64 m² area shares;
    shape_index: (K,) int64 index of the sampled shape in the input sequence.
    """

    points: np.ndarray
    normals: np.ndarray
    areas: np.ndarray
    shape_index: np.ndarray

    def __len__(self) -> int:
        return len(self.points)


def apportion(total: int, weights: Sequence[float]) -> np.ndarray:
    """Split ``total`` in proportion to ``weights``: largest remainder (ties → earlier entry), then ≥ 1 each.

    With total = 0 every share is 0. The "at least 1" rule can raise the sum above ``total`` when an entry's
    proportional share rounds to 0 (docs/models/scene.md#sampling: every count used later is the actual one).
    """
    w = np.asarray(weights, dtype=np.float64)
    if total == 0:
        return np.zeros(len(w), np.int64)
    quota = total * w / w.sum()
    base = np.floor(quota).astype(np.int64)
    remainder = quota - base
    extra = total - int(base.sum())
    order = np.lexsort((np.arange(len(w)), -remainder))  # largest remainder first, earlier entry on ties
    base[order[:extra]] += 1
    return np.maximum(base, 1)


MAX_SAMPLES_PER_BODY = 200_000
"""Most surface samples one body may get from a sample spacing (ContactSensor, TemperatureGrid contact and lumped
samples); a finer spacing is refused before sampling."""


def surface_sample_count(shapes: Sequence[Shape], spacing: float) -> int:
    """Samples that :func:`sample_body_surface` draws for ``shapes`` at ``spacing`` m (docs/models/scene.md#sampling
    counts)."""
    total = 0
    for s in shapes:
        if s.kind == ShapeKind.BOX:
            lx, ly, lz = (2 * h for h in s.size)
            total += 2 * sum(int_ceil(a / spacing) * int_ceil(b / spacing) for a, b in ((ly, lz), (lx, lz), (lx, ly)))
        else:
            total += int_ceil(s.area / spacing**2)
    return total


def check_sample_spacing(shapes: Sequence[Shape], spacing: float, where: str, option: str, body: str) -> None:
    """ConfigError naming ``where``.``option`` when ``spacing`` (m) gives body ``body`` more than
    :data:`MAX_SAMPLES_PER_BODY` samples."""
    n = surface_sample_count(shapes, spacing)
    if n > MAX_SAMPLES_PER_BODY:
        raise option_error(where, option, f"{n} samples on body {body!r} exceed {MAX_SAMPLES_PER_BODY}", spacing,
                           f"a spacing giving at most {MAX_SAMPLES_PER_BODY} samples per body")


def sample_body_surface(shapes: Sequence[Shape], n: int | None = None, spacing: float | None = None,
                        seed: int | np.random.Generator = 0) -> SurfaceSamples:
    """Sample the surfaces of ``shapes`` with a total budget ``n`` or a spacing ``spacing`` (m); see the module doc.

    Raises ``SceneError`` for a plane (infinite area) and ``ValueError`` unless exactly one of n ≥ 0 (int) and
    spacing > 0 is given.
    """
    if (n is None) == (spacing is None):
        raise ValueError(f"sample_body_surface: give exactly one of n (sample budget) and spacing (m); "
                         f"got n={n!r}, spacing={spacing!r}")
    if n is not None and (int(n) != n or n < 0):
        raise ValueError(f"sample_body_surface: n must be an integer >= 0; got {n!r}")
    if spacing is not None and not (math.isfinite(spacing) and spacing > 0):
        raise ValueError(f"sample_body_surface: spacing must be finite and > 0 m; got {spacing!r}")
    for i, shape in enumerate(shapes):
        if shape.kind == ShapeKind.PLANE:
            raise SceneError(f"shape {shape.name!r} (index {i}): a plane cannot be sampled (infinite area); "
                             "allowed: sphere, box, capsule, cylinder, mesh")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if spacing is None:
        counts = apportion(int(n), [s.area for s in shapes]) if len(shapes) else np.zeros(0, np.int64)
    else:
        counts = [0 if s.kind == ShapeKind.BOX else int_ceil(s.area / spacing**2) for s in shapes]
    parts = []
    for i, (shape, count) in enumerate(zip(shapes, counts)):
        if shape.kind == ShapeKind.BOX:
            pts, nrm, area = _box_lattice(np.asarray(shape.size), int(count), spacing)
        elif count == 0:
            continue
        else:
            pts, nrm = _draw_uniform(shape, max(MIN_CANDIDATES, 4 * int(count)), rng)
            keep = farthest_point_indices(pts, int(count), int(rng.integers(len(pts))))
            pts, nrm = pts[keep], nrm[keep]
            area = np.full(len(keep), shape.area / len(keep))
        parts.append((pts @ shape.rot.T + shape.pos, nrm @ shape.rot.T, area, np.full(len(pts), i, np.int64)))
    if not parts:
        return SurfaceSamples(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0, np.int64))
    return SurfaceSamples(*(np.concatenate(column) for column in zip(*parts)))


def farthest_point_indices(points: np.ndarray, n: int, start: int) -> np.ndarray:
    """Greedy farthest-point order: ``start``, then repeatedly the point farthest from those chosen (ties → lowest
    index). Returns n indices (int64) into ``points`` (M, 3), n ≤ M.

    Orders of at least :data:`FPS_CACHE_MIN_PICKS` picks are kept in the ``fps`` cache of
    :mod:`~tactile_sim.derived_cache`, keyed by the points' dtype, shape and bytes, n, start, this module's source
    and the numpy and scipy versions: a fresh process reads them instead of computing them again.
    """
    m = len(points)
    if n > m:
        raise ValueError(f"farthest_point_indices: cannot pick {n} of {m} points")
    if n < FPS_CACHE_MIN_PICKS:
        return _farthest_point_order(points, n, start)
    path = cache_dir("fps") / key_name(_module_source(), np.__version__, scipy.__version__, points.dtype.str,
                                       repr(points.shape), points.tobytes(), repr(int(n)), repr(int(start)))
    payload = read_payload(path)
    if payload is not None and len(payload) == 8 * n:
        return np.frombuffer(payload, dtype="<i8").astype(np.int64)
    chosen = _farthest_point_order(points, n, start)
    write_payload(path, chosen.astype("<i8").tobytes())
    return chosen


@cache
def _module_source() -> bytes:
    return Path(__file__).read_bytes()


def _farthest_point_order(points: np.ndarray, n: int, start: int) -> np.ndarray:
    """:func:`farthest_point_indices` computed: the same result as the O(n·M) textbook loop, but a point's distance
    is only updated when it lies within the current selection radius (a k-d tree ball query) and the maximum is found
    through per-block maxima."""
    m = len(points)
    block = max(1, int(math.isqrt(m)))
    n_blocks = -(-m // block)
    dist = np.full(n_blocks * block, -np.inf)
    dist[:m] = np.inf
    blocks = dist.reshape(n_blocks, block)
    block_max = blocks.max(axis=1)
    tree = cKDTree(points)
    chosen = np.empty(n, np.int64)
    index = start
    radius = np.inf
    for k in range(n):
        chosen[k] = index
        q = points[index]
        if math.isinf(radius):
            near = np.arange(m)
        else:
            near = np.asarray(tree.query_ball_point(q, radius), dtype=np.int64)
        d = points[near] - q
        d = np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2])
        dist[near] = np.minimum(dist[near], d)
        dist[index] = -np.inf
        touched = np.unique(near // block)  # ``near`` always holds ``index`` itself (distance 0)
        block_max[touched] = blocks[touched].max(axis=1)
        b = int(np.argmax(block_max))
        index = b * block + int(np.argmax(blocks[b]))
        radius = float(dist[index])
    return chosen


def _box_lattice(half: np.ndarray, count: int, spacing: float | None):
    """Cell-centre lattice on the six faces (+x, −x, +y, −y, +z, −z) of a box with half-extents ``half``."""
    faces = []  # (normal axis, sign, in-plane axes u, v)
    for axis in range(3):
        u, v = [a for a in range(3) if a != axis]
        faces += [(axis, 1.0, u, v), (axis, -1.0, u, v)]
    sizes = [(2 * half[u], 2 * half[v]) for _, _, u, v in faces]
    if spacing is None:
        shares = apportion(count, [lu * lv for lu, lv in sizes]) if count else np.zeros(6, np.int64)
    pts, nrm, area = [], [], []
    for f, ((axis, sign, u, v), (lu, lv)) in enumerate(zip(faces, sizes)):
        if spacing is not None:
            nu, nv = int_ceil(lu / spacing), int_ceil(lv / spacing)
        elif shares[f] == 0:
            continue
        else:
            s_f = math.sqrt(lu * lv / shares[f])
            nu, nv = max(1, int_floor(lu / s_f + 0.5)), max(1, int_floor(lv / s_f + 0.5))
        cu = -half[u] + (np.arange(nu) + 0.5) * (lu / nu)
        cv = -half[v] + (np.arange(nv) + 0.5) * (lv / nv)
        grid_u, grid_v = np.meshgrid(cu, cv, indexing="ij")
        p = np.zeros((nu * nv, 3))
        p[:, axis] = sign * half[axis]
        p[:, u], p[:, v] = grid_u.reshape(-1), grid_v.reshape(-1)
        normal = np.zeros(3)
        normal[axis] = sign
        pts.append(p)
        nrm.append(np.tile(normal, (len(p), 1)))
        area.append(np.full(len(p), lu * lv / (nu * nv)))
    if not pts:
        return np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0)
    return np.concatenate(pts), np.concatenate(nrm), np.concatenate(area)


def _draw_uniform(shape: Shape, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``count`` area-uniform surface points and outward normals of a sphere, capsule, cylinder or mesh (shape frame)."""
    k = shape.kind
    if k == ShapeKind.MESH:
        v = shape.mesh.vertices[shape.mesh.faces]
        cum = np.cumsum(shape.mesh.face_areas)
        tri = np.minimum(np.searchsorted(cum, rng.random(count) * cum[-1], side="right"), len(cum) - 1)
        r1, r2 = np.sqrt(rng.random(count)), rng.random(count)
        a, b, c = v[tri, 0], v[tri, 1], v[tri, 2]
        pts = a * (1 - r1)[:, None] + b * (r1 * (1 - r2))[:, None] + c * (r1 * r2)[:, None]
        nrm = np.cross(b - a, c - a)
        return pts, nrm / np.linalg.norm(nrm, axis=1, keepdims=True)
    if k == ShapeKind.SPHERE:
        u = _unit_vectors(rng, count)
        return shape.size[0] * u, u
    r, length = shape.size
    theta = 2 * math.pi * rng.random(count)
    side_n = np.stack([np.cos(theta), np.sin(theta), np.zeros(count)], axis=1)
    side_p = r * side_n + np.stack([np.zeros(count), np.zeros(count), (rng.random(count) - 0.5) * length], axis=1)
    if k == ShapeKind.CAPSULE:
        # the two hemispherical caps together form one sphere: its upper half sits on the upper cap centre
        u = _unit_vectors(rng, count)
        cap_p = r * u + np.outer(np.where(u[:, 2] >= 0, length / 2, -length / 2), [0.0, 0.0, 1.0])
        cap_n = u
        cap_share = 4 * math.pi * r**2 / shape.area
    else:  # cylinder: flat discs at z = ±l/2
        rho, phi = r * np.sqrt(rng.random(count)), 2 * math.pi * rng.random(count)
        top = rng.random(count) < 0.5
        z = np.where(top, length / 2, -length / 2)
        cap_p = np.stack([rho * np.cos(phi), rho * np.sin(phi), z], axis=1)
        cap_n = np.outer(np.where(top, 1.0, -1.0), [0.0, 0.0, 1.0])
        cap_share = 2 * math.pi * r**2 / shape.area
    on_cap = rng.random(count) < cap_share
    return np.where(on_cap[:, None], cap_p, side_p), np.where(on_cap[:, None], cap_n, side_n)


def _unit_vectors(rng: np.random.Generator, count: int) -> np.ndarray:
    g = rng.standard_normal((count, 3))
    return g / np.linalg.norm(g, axis=1, keepdims=True)
