"""Generated probe layouts: taxels covering a link's collision surface, and the urdf_tactile ``<sensor>`` extension.

Both produce layouts in the link frame that :class:`~.probe_layout.ProbeLayout` validates like any user layout.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.sparse import csr_matrix
from scipy.spatial import cKDTree

from ...constants import EPS_LEN, MAX_PROBES
from ...errors import ConfigError
from ...geometry.shapes import Shape, ShapeKind
from ...geometry.transforms import rpy_to_matrix_np
from .probe_layout import ProbeLayout

if TYPE_CHECKING:
    import trimesh

# ---------------------------------------------------------------------- mesh-conforming layout
CANDIDATES_PER_CELL = 20
"""Dense area-uniform candidates drawn per spacing² of surface before the Poisson-disk selection."""

MAX_CANDIDATES = 2_000_000
"""Refuse spacings that would need more candidates than this (a runaway guard, ~10⁵ taxels)."""


def _tessellate(shape: Shape) -> trimesh.Trimesh:
    """Triangle mesh of ``shape`` in its own frame (primitives are refined to exact surfaces after sampling)."""
    import trimesh  # only for conforming layouts: it costs seconds to import (through scipy)

    k, s = shape.kind, shape.size
    if k == ShapeKind.SPHERE:
        return trimesh.creation.icosphere(subdivisions=3, radius=s[0])
    if k == ShapeKind.BOX:
        return trimesh.creation.box(extents=2.0 * np.asarray(s))
    if k == ShapeKind.CYLINDER:
        return trimesh.creation.cylinder(radius=s[0], height=s[1], sections=64)
    if k == ShapeKind.CAPSULE:
        return trimesh.creation.capsule(height=s[1], radius=s[0], count=[32, 32])
    return trimesh.Trimesh(shape.mesh.vertices, shape.mesh.faces, process=False)


def _exact_surface(shape: Shape, pts: np.ndarray, face_normals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project samples of the tessellation onto the exact surface; return (points, outward unit normals), shape frame.

    Boxes and meshes are exact already (face normals; meshes follow their winding, counter-clockwise = outward).
    """
    k, s = shape.kind, shape.size
    if k == ShapeKind.SPHERE:
        n = pts / np.linalg.norm(pts, axis=1, keepdims=True)
        return s[0] * n, n
    if k == ShapeKind.CYLINDER:
        r, half = s[0], s[1] / 2
        cap = np.abs(face_normals[:, 2]) > 0.5
        radial = pts * np.array([1.0, 1.0, 0.0])
        rn = np.linalg.norm(radial, axis=1, keepdims=True)
        n_side = radial / np.where(rn > 0, rn, 1.0)
        n = np.where(cap[:, None], np.sign(face_normals[:, 2:3]) * np.array([0.0, 0.0, 1.0]), n_side)
        p = np.where(cap[:, None], pts, r * n_side + pts * np.array([0.0, 0.0, 1.0]))
        p[:, 2] = np.clip(p[:, 2], -half, half)
        return p, n
    if k == ShapeKind.CAPSULE:
        r, length = s
        axis_pt = np.zeros_like(pts)
        axis_pt[:, 2] = np.clip(pts[:, 2], -length / 2, length / 2)
        d = pts - axis_pt
        n = d / np.linalg.norm(d, axis=1, keepdims=True)
        return axis_pt + r * n, n
    return pts, face_normals


def _inside(shape: Shape, pts_body: np.ndarray, tol: float) -> np.ndarray:
    """(K,) bool: the body-frame points lie inside ``shape`` or on its surface (within ``tol`` m).

    Primitives are tested exactly; a watertight mesh by ray parity (trimesh, points on the surface may go either
    way); a mesh that is not watertight encloses nothing.
    """
    p = (pts_body - shape.pos) @ shape.rot
    k, s = shape.kind, shape.size
    if k == ShapeKind.SPHERE:
        return np.linalg.norm(p, axis=1) <= s[0] + tol
    if k == ShapeKind.BOX:
        return np.all(np.abs(p) <= np.asarray(s) + tol, axis=1)
    if k == ShapeKind.CYLINDER:
        return (np.hypot(p[:, 0], p[:, 1]) <= s[0] + tol) & (np.abs(p[:, 2]) <= s[1] / 2 + tol)
    if k == ShapeKind.CAPSULE:
        q = p.copy()
        q[:, 2] -= np.clip(p[:, 2], -s[1] / 2, s[1] / 2)
        return np.linalg.norm(q, axis=1) <= s[0] + tol
    if not shape.mesh.watertight:
        return np.zeros(len(p), dtype=bool)
    return _tessellate(shape).contains(p)


def _poisson_disk(pts: np.ndarray, spacing: float, rng: np.random.Generator) -> np.ndarray:
    """Indices (ascending) of a greedy Poisson-disk subset: visit candidates in a seeded random order, keep one
    unless a kept point lies within ``spacing`` (so kept points are more than ``spacing`` apart and every candidate
    is within ``spacing`` of a kept one)."""
    k = len(pts)
    pairs = cKDTree(pts).query_pairs(spacing, output_type="ndarray")
    both = np.concatenate([pairs, pairs[:, ::-1]]) if len(pairs) else np.zeros((0, 2), dtype=np.int64)
    adj = csr_matrix((np.ones(len(both), dtype=bool), (both[:, 0], both[:, 1])), shape=(k, k))
    indptr, indices = adj.indptr, adj.indices
    blocked = np.zeros(k, dtype=bool)
    kept = []
    for i in rng.permutation(k):
        if not blocked[i]:
            kept.append(i)
            blocked[indices[indptr[i]:indptr[i + 1]]] = True
    return np.sort(np.asarray(kept, dtype=np.int64))


def conforming_layout(
    shapes: Sequence[Shape],
    spacing: float,
    *,
    facing=None,
    min_cos: float = 0.0,
    box=None,
    radius: float | None = None,
    seed: int = 0,
    where: str = "conforming_layout",
) -> ProbeLayout:
    """Taxels covering a link's collision surface about ``spacing`` apart, with outward surface normals (flat (N, 3)).

    shapes: the link's collision shapes (poses in the link frame; planes are refused); spacing: m, > 0.
    facing: optional direction (3,) in the link frame — keep surface points whose outward normal n has
    n·f̂ > ``min_cos`` (default 0: the half facing that way); box: optional (lo, hi) corners in the link frame —
    keep points inside it (inclusive); radius: probe radius, m (default spacing / 2); seed: int ≥ 0.

    Method: each shape is tessellated (trimesh), sampled area-uniformly with about 20 candidates per spacing² (one
    seeded NumPy generator, shapes in the given order), candidates are moved onto the exact primitive surface with
    its exact normal, candidates inside or on another shape of the link are dropped (they are not on the outer
    surface), the filters apply, and a greedy Poisson-disk pass keeps points more than ``spacing`` apart. Every
    kept taxel is therefore > spacing from the others and every remaining surface point lies within about spacing
    of a taxel; deterministic for a given seed. Raises ConfigError naming ``where``.
    """
    if not (isinstance(spacing, (int, float)) and math.isfinite(spacing) and spacing > 0):
        raise ConfigError(f"{where}.spacing: must be a finite length > 0; got {spacing!r}; allowed: > 0 m")
    if not shapes:
        raise ConfigError(f"{where}.shapes: the link has no collision shapes; got []; allowed: >= 1 shape")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"{where}.seed: must be an integer >= 0; got {seed!r}; allowed: int >= 0")
    for s in shapes:
        if s.kind == ShapeKind.PLANE:
            raise ConfigError(f"{where}.shapes: shape {s.name!r} is a plane (infinite area); got kind 'plane'; "
                              "allowed: sphere, box, capsule, cylinder, mesh")
    f_hat = None
    if facing is not None:
        f = np.asarray(facing, dtype=np.float64)
        if f.shape != (3,) or not np.all(np.isfinite(f)) or np.linalg.norm(f) < EPS_LEN:
            raise ConfigError(f"{where}.facing: need a finite non-zero direction (3,); "
                              f"got {np.asarray(facing).tolist()}; "
                              f"allowed: (x, y, z) in the link frame with norm >= {EPS_LEN}")
        f_hat = f / np.linalg.norm(f)
        if not (math.isfinite(min_cos) and -1.0 <= min_cos < 1.0):
            raise ConfigError(f"{where}.min_cos: must lie in [-1, 1); got {min_cos!r}; allowed: -1 <= min_cos < 1")
    if box is not None:
        b = np.asarray(box, dtype=np.float64)
        if b.shape != (2, 3) or not np.all(np.isfinite(b)) or np.any(b[0] > b[1]):
            raise ConfigError(f"{where}.box: need (lo, hi) corners with lo <= hi; got {np.asarray(box).tolist()}; "
                              "allowed: ((x, y, z), (x, y, z)) in the link frame, m")
    r = spacing / 2 if radius is None else radius

    counts = [max(64, math.ceil(CANDIDATES_PER_CELL * s.area / spacing**2)) for s in shapes]
    if sum(counts) > MAX_CANDIDATES:
        raise ConfigError(f"{where}.spacing: too small for this link (about {sum(counts) // CANDIDATES_PER_CELL} "
                          f"taxels); got {spacing!r}; allowed: a spacing giving at most "
                          f"{MAX_CANDIDATES // CANDIDATES_PER_CELL} taxels")
    import trimesh

    rng = np.random.default_rng(seed)
    pts_all, nrm_all = [], []
    for i, (shape, count) in enumerate(zip(shapes, counts)):
        mesh = _tessellate(shape)
        pts, face = trimesh.sample.sample_surface(mesh, count, seed=rng)
        p, n = _exact_surface(shape, np.asarray(pts, dtype=np.float64), mesh.face_normals[face])
        p = p @ shape.rot.T + shape.pos
        n = n @ shape.rot.T
        keep = np.ones(len(p), dtype=bool)
        for j, other in enumerate(shapes):
            if j != i:
                keep &= ~_inside(other, p, EPS_LEN)
        pts_all.append(p[keep])
        nrm_all.append(n[keep])
    pts = np.concatenate(pts_all)
    nrm = np.concatenate(nrm_all)
    keep = np.ones(len(pts), dtype=bool)
    if f_hat is not None:
        keep &= nrm @ f_hat > min_cos
    if box is not None:
        keep &= np.all((pts >= b[0]) & (pts <= b[1]), axis=1)
    pts, nrm = pts[keep], nrm[keep]
    if len(pts) == 0:
        raise ConfigError(f"{where}: no surface point is left after the filters; got facing={facing!r}, "
                          f"min_cos={min_cos!r}, box={box!r}; allowed: filters that keep part of the link surface")
    sel = _poisson_disk(pts, spacing, rng)
    return ProbeLayout.from_options(pts[sel], r, nrm[sel], where=where)


# ---------------------------------------------------------------------- urdf_tactile import
@dataclass(frozen=True, eq=False)
class TactileSensorDecl:
    """One ``<sensor>`` with a ``<tactile>`` child of a robot description (ubi-agni urdf_tactile format).

    name / link (``<parent link>``) / channel / group: as declared; update_rate: Hz or None.
    positions: parent-link frame, m — (rows, cols, 3) for an ``<array>``, (N, 3) for a ``<taxel>`` list in document
    order; normals: same shape, unit (the taxel frame's z axis); radius: layout shape, m, NaN where the description
    gives no size; data_index: layout shape, int64 — position of each taxel in the sensor's data vector
    (``<array>``: from ``order``; ``<taxel>``: its ``idx``); order: 'row-major' / 'col-major' for arrays, else None.
    """

    name: str
    link: str
    channel: str
    group: str
    update_rate: float | None
    positions: np.ndarray
    normals: np.ndarray
    radius: np.ndarray
    data_index: np.ndarray
    order: str | None

    def layout(self, probe_radius=None, pos_offset=(0.0, 0.0, 0.0), euler_offset=(0.0, 0.0, 0.0), *,
               default_radius: float = 0.01, allow_fillers: bool = True, where: str | None = None) -> ProbeLayout:
        """The validated :class:`ProbeLayout`: radii from ``probe_radius`` when given, else the description's sizes
        with ``default_radius`` (m) where it gives none; offsets as in :meth:`ProbeLayout.from_options`."""
        if probe_radius is None:
            probe_radius = np.where(np.isnan(self.radius), default_radius, self.radius)
        return ProbeLayout.from_options(self.positions, probe_radius, self.normals, pos_offset, euler_offset,
                                        default_radius=default_radius, allow_fillers=allow_fillers,
                                        where=where or f"urdf_tactile:sensor[name={self.name!r}]")


def _tag(e: ET.Element) -> str:
    return e.tag.rsplit("}", 1)[-1]


def _children(e: ET.Element, tag: str) -> list[ET.Element]:
    return [c for c in e if _tag(c) == tag]


def _vec(e: ET.Element, attr: str, n: int, where: str, default=None) -> np.ndarray:
    """Attribute ``attr`` of ``e`` as n finite floats (or ``default`` when absent)."""
    text = e.get(attr)
    if text is None:
        if default is None:
            raise ConfigError(f"{where}.{attr}: missing; got nothing; allowed: {n} numbers separated by spaces")
        return np.asarray(default, dtype=np.float64)
    try:
        v = np.array([float(t) for t in text.split()], dtype=np.float64)
    except ValueError:
        v = None
    if v is None or v.shape != (n,) or not np.all(np.isfinite(v)):
        raise ConfigError(f"{where}.{attr}: need {n} finite numbers; got {text!r}; allowed: {n} numbers "
                          "separated by spaces")
    return v


def _int(e: ET.Element, attr: str, where: str, minimum: int) -> int:
    text = e.get(attr)
    if text is None:
        raise ConfigError(f"{where}.{attr}: missing; got nothing; allowed: integer >= {minimum}")
    try:
        v = int(text.strip())
    except ValueError:
        v = None
    if v is None or v < minimum:
        raise ConfigError(f"{where}.{attr}: need an integer >= {minimum}; got {text!r}; allowed: integer >= {minimum}")
    return v


def _pose(e: ET.Element | None, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(R, t) from ``xyz`` (m) / ``rpy`` (rad, fixed-axis X-Y-Z) attributes; identity when ``e`` is None."""
    if e is None:
        return np.eye(3), np.zeros(3)
    return rpy_to_matrix_np(_vec(e, "rpy", 3, where, (0, 0, 0))), _vec(e, "xyz", 3, where, (0, 0, 0))


def _taxel_radius(taxel: ET.Element, where: str) -> float:
    """Radius from the taxel's ``<geometry>``: box → half its smaller in-plane side (x, y), cylinder/sphere →
    radius; mesh or no geometry → NaN."""
    geos = _children(taxel, "geometry")
    if not geos:
        return math.nan
    for g in geos[0]:
        kind, w = _tag(g), f"{where}.geometry.{_tag(g)}"
        if kind == "box":
            size = _vec(g, "size", 3, w)
            if np.any(size <= 0):
                raise ConfigError(f"{w}.size: must be > 0; got {size.tolist()}; allowed: 3 lengths > 0 m")
            return float(min(size[0], size[1]) / 2)
        if kind in ("cylinder", "sphere"):
            r = float(_vec(g, "radius", 1, w)[0])
            if r <= 0:
                raise ConfigError(f"{w}.radius: must be > 0; got {r!r}; allowed: > 0 m")
            return r
    return math.nan


def _parse_array(arr: ET.Element, where: str, max_probes: int):
    """rows × cols grid in the sensor frame: taxel [r, c] at (r·dx − ox, c·dy − oy, 0) (spacing dx dy, offset ox oy).

    Returns (positions (rows, cols, 3), radius (rows, cols), data_index (rows, cols), order). More than
    ``max_probes`` taxels are refused before anything is allocated.
    """
    rows, cols = _int(arr, "rows", where, 1), _int(arr, "cols", where, 1)
    if rows * cols > max_probes:
        raise ConfigError(f"{where}: {rows} x {cols} taxels exceed the cap; got rows={rows}, cols={cols}; "
                          f"allowed: at most {max_probes} taxels per sensor")
    size = _vec(arr, "size", 2, where)
    if np.any(size <= 0):
        raise ConfigError(f"{where}.size: must be > 0; got {arr.get('size')!r}; allowed: 2 lengths > 0 m")
    spacing = _vec(arr, "spacing", 2, where, size)
    if np.any(spacing == 0):
        raise ConfigError(f"{where}.spacing: must be non-zero; got {arr.get('spacing')!r}; "
                          "allowed: 2 non-zero lengths in m (negative flips the axis)")
    offset = _vec(arr, "offset", 2, where, (0, 0))
    order = arr.get("order", "row-major").strip()
    if order not in ("row-major", "col-major", "column-major"):
        raise ConfigError(f"{where}.order: unknown data order; got {order!r}; allowed: 'row-major', 'col-major'")
    order = "row-major" if order == "row-major" else "col-major"
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    q = np.stack([r * spacing[0] - offset[0], c * spacing[1] - offset[1], np.zeros(r.shape)], axis=-1)
    data_index = r * cols + c if order == "row-major" else c * rows + r
    return q, np.full((rows, cols), min(size) / 2), data_index.astype(np.int64), order


def urdf_tactile_layouts(urdf_xml: str, source: str = "robot_description",
                         max_probes: int = MAX_PROBES) -> dict[str, TactileSensorDecl]:
    """Tactile sensors declared with ubi-agni's urdf_tactile extension, by sensor name (document order).

    Reads every ``<sensor>`` child of ``<robot>`` that has a ``<tactile>`` child (other sensors are ignored):

    * ``<sensor name update_rate? group?>`` with ``<parent link>`` (required) and ``<origin xyz? rpy?>`` (the sensor
      frame in the parent link frame; identity when absent);
    * ``<tactile channel?>`` holding either one ``<array rows cols size="sx sy" spacing?="dx dy" offset?="ox oy"
      order?="row-major|col-major">`` (spacing defaults to size, offset to 0; taxel [r, c] lies at
      (r·dx − ox, c·dy − oy, 0) in the sensor frame with normal +z; radius = min(sx, sy)/2) or a list of
      ``<taxel idx xyz? rpy?>`` (pose in the sensor frame; normal = the taxel frame's z axis; radius from an optional
      ``<geometry>`` box (half its smaller x/y side), cylinder or sphere (radius), else unset).

    Other attributes and elements are ignored. Errors (ConfigError, naming ``source`` and the sensor): XML that does
    not parse, no ``<robot>`` root, a missing name or parent link, duplicate sensor names, malformed numbers, both
    an array and taxels, more than one array, no taxel at all, or an array of more than ``max_probes`` taxels.
    """
    try:
        root = ET.fromstring(urdf_xml)
    except ET.ParseError as e:
        raise ConfigError(f"{source}: not well-formed XML ({e}); allowed: a URDF document") from None
    if _tag(root) != "robot":
        raise ConfigError(f"{source}: root element is <{_tag(root)}>; allowed: <robot>")
    out: dict[str, TactileSensorDecl] = {}
    for k, sensor in enumerate(_children(root, "sensor")):
        tactiles = _children(sensor, "tactile")
        if not tactiles:
            continue
        name = sensor.get("name")
        if not name:
            raise ConfigError(f"{source}:sensor[{k}].name: missing; got nothing; allowed: a unique sensor name")
        where = f"{source}:sensor[name={name!r}]"
        if name in out:
            raise ConfigError(f"{where}.name: duplicate tactile sensor name; got {name!r}; allowed: unique names")
        parents = _children(sensor, "parent")
        link = parents[0].get("link") if parents else None
        if not link:
            raise ConfigError(f"{where}.parent: missing <parent link=\"...\"/>; got "
                              f"{ET.tostring(parents[0], encoding='unicode').strip() if parents else 'nothing'}; "
                              "allowed: the name of the link that carries the sensor")
        rate = sensor.get("update_rate")
        try:
            update_rate = None if rate is None else float(rate)
        except ValueError:
            update_rate = math.nan
        if update_rate is not None and not (math.isfinite(update_rate) and update_rate > 0):
            raise ConfigError(f"{where}.update_rate: must be a number > 0; got {rate!r}; allowed: Hz > 0")
        origins = _children(sensor, "origin")
        rot_s, pos_s = _pose(origins[0] if origins else None, f"{where}.origin")

        tactile = tactiles[0]
        tw = f"{where}.tactile"
        arrays, taxels = _children(tactile, "array"), _children(tactile, "taxel")
        if arrays and taxels:
            raise ConfigError(f"{tw}: both <array> and <taxel> elements; got {len(arrays)} array(s) and "
                              f"{len(taxels)} taxel(s); allowed: one <array> or a list of <taxel>")
        if len(arrays) > 1:
            raise ConfigError(f"{tw}.array: more than one <array>; got {len(arrays)}; allowed: exactly one")
        if arrays:
            q, radius, data_index, order = _parse_array(arrays[0], f"{tw}.array", max_probes)
            pos = q @ rot_s.T + pos_s
            normals = np.broadcast_to(rot_s[:, 2], pos.shape).copy()
        elif taxels:
            order = None
            pos, normals, radius, data_index = [], [], [], []
            for j, tx in enumerate(taxels):
                w = f"{tw}.taxel[{j}]"
                data_index.append(_int(tx, "idx", w, 0))
                rot_t, pos_t = _pose(tx, w)
                pos.append(rot_s @ pos_t + pos_s)
                normals.append((rot_s @ rot_t)[:, 2])
                radius.append(_taxel_radius(tx, w))
            pos, normals = np.array(pos), np.array(normals)
            radius, data_index = np.array(radius), np.array(data_index, dtype=np.int64)
        else:
            raise ConfigError(f"{tw}: no <array> and no <taxel>; got an empty <tactile>; "
                              "allowed: one <array> or a list of <taxel>")
        out[name] = TactileSensorDecl(name=name, link=link, channel=tactile.get("channel", ""),
                                      group=sensor.get("group", ""), update_rate=update_rate, positions=pos,
                                      normals=normals, radius=radius, data_index=data_index, order=order)
    return out
