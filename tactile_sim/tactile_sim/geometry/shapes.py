"""Shape descriptors: dimensions, pose in the owning body's frame, area, volume and bounds.

A shape is immutable description data (float64 NumPy); queries live in :mod:`.query`. Dimensions follow
docs/models/scene.md#bodies:
sphere radius r; box half-extents h; cylinder radius r and length l along local z; capsule radius r and distance l
between the cap centres along local z; plane = the half-space z ≤ 0 of its frame (objects only); mesh = triangles with
scale applied, in the shape frame.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

import numpy as np

from ..constants import LENGTH_RANGE
from ..errors import SceneError


class ShapeKind(enum.IntEnum):
    """Shape kind codes; the integer values are used inside the query kernels."""

    SPHERE = 0
    BOX = 1
    CAPSULE = 2
    CYLINDER = 3
    PLANE = 4
    MESH = 5


@dataclass(frozen=True, eq=False)
class MeshData:
    """A triangle mesh in its shape frame (scale already applied).

    vertices: (V, 3) float64 m; faces: (F, 3) int64; source: file it came from (for messages);
    content_hash: hex digest of the scaled vertices + faces (cache key); watertight: closed and consistently oriented.
    """

    vertices: np.ndarray
    faces: np.ndarray
    source: str = "<memory>"
    content_hash: str = ""
    watertight: bool = True

    @property
    def face_areas(self) -> np.ndarray:
        v = self.vertices[self.faces]
        return 0.5 * np.linalg.norm(np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0]), axis=1)

    @property
    def area(self) -> float:
        return float(self.face_areas.sum())

    @property
    def volume(self) -> float:
        """Enclosed volume (divergence theorem); meaningful only when watertight."""
        v = self.vertices[self.faces]
        return float(abs(np.einsum("ij,ij->i", v[:, 0], np.cross(v[:, 1], v[:, 2])).sum()) / 6.0)


@dataclass(frozen=True, eq=False)
class Shape:
    """One collision (or visual) shape of a body.

    kind: :class:`ShapeKind`; size: kind-specific dimensions in m — sphere (r,), box (hx, hy, hz) half-extents,
    capsule (r, l), cylinder (r, l), plane (), mesh (); mesh: :class:`MeshData` for meshes;
    rot (3, 3) / pos (3,): pose of the shape frame in the body frame; name: for messages and errors.
    """

    kind: ShapeKind
    size: tuple[float, ...] = ()
    mesh: MeshData | None = None
    rot: np.ndarray = field(default_factory=lambda: np.eye(3))
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    name: str = ""

    def __post_init__(self):
        expected = {ShapeKind.SPHERE: 1, ShapeKind.BOX: 3, ShapeKind.CAPSULE: 2, ShapeKind.CYLINDER: 2,
                    ShapeKind.PLANE: 0, ShapeKind.MESH: 0}[self.kind]
        where = f"shape {self.name!r} ({self.kind.name.lower()})"
        if len(self.size) != expected:
            raise SceneError(f"{where}: size needs {expected} values; got {tuple(self.size)}")
        if not all(math.isfinite(s) for s in self.size):
            raise SceneError(f"{where}: dimensions must be finite; got {tuple(self.size)}")
        low, high = LENGTH_RANGE
        if self.kind == ShapeKind.CAPSULE:
            if not (low <= self.size[0] <= high and 0 <= self.size[1] <= high):
                raise SceneError(f"{where}: capsule needs a radius of {low:g} to {high:g} m and a length of 0 to "
                                 f"{high:g} m; got {tuple(self.size)}")
        elif not all(low <= s * (2 if self.kind == ShapeKind.BOX else 1) <= high for s in self.size):  # box: edges
            raise SceneError(f"{where}: dimensions must be {low:g} to {high:g} m; got {tuple(self.size)}")
        if self.kind == ShapeKind.MESH:
            if self.mesh is None or len(self.mesh.faces) == 0 or not self.mesh.area > 0:
                raise SceneError(f"{where}: a mesh needs triangles with positive total area")
        object.__setattr__(self, "rot", np.asarray(self.rot, dtype=np.float64).reshape(3, 3))
        object.__setattr__(self, "pos", np.asarray(self.pos, dtype=np.float64).reshape(3))

    # ------------------------------------------------------------------ measures (shape frame)
    @property
    def area(self) -> float:
        """Surface area in m² (inf for a plane)."""
        k, s = self.kind, self.size
        if k == ShapeKind.SPHERE:
            return 4 * math.pi * s[0] ** 2
        if k == ShapeKind.BOX:
            hx, hy, hz = s
            return 8 * (hx * hy + hy * hz + hx * hz)
        if k == ShapeKind.CAPSULE:
            r, l_ = s
            return 4 * math.pi * r**2 + 2 * math.pi * r * l_
        if k == ShapeKind.CYLINDER:
            r, l_ = s
            return 2 * math.pi * r**2 + 2 * math.pi * r * l_
        if k == ShapeKind.PLANE:
            return math.inf
        return self.mesh.area

    @property
    def volume(self) -> float:
        """Enclosed volume in m³ (inf for a plane; mesh: divergence theorem, valid when watertight)."""
        k, s = self.kind, self.size
        if k == ShapeKind.SPHERE:
            return 4 / 3 * math.pi * s[0] ** 3
        if k == ShapeKind.BOX:
            return 8 * s[0] * s[1] * s[2]
        if k == ShapeKind.CAPSULE:
            r, l_ = s
            return 4 / 3 * math.pi * r**3 + math.pi * r**2 * l_
        if k == ShapeKind.CYLINDER:
            r, l_ = s
            return math.pi * r**2 * l_
        if k == ShapeKind.PLANE:
            return math.inf
        return self.mesh.volume

    def local_aabb(self) -> tuple[np.ndarray, np.ndarray]:
        """Axis-aligned bounds (lo, hi) in the shape frame (exact for primitives; vertices for meshes)."""
        k, s = self.kind, self.size
        if k == ShapeKind.SPHERE:
            h = np.full(3, s[0])
        elif k == ShapeKind.BOX:
            h = np.asarray(s, dtype=np.float64)
        elif k == ShapeKind.CAPSULE:
            h = np.array([s[0], s[0], s[0] + s[1] / 2])
        elif k == ShapeKind.CYLINDER:
            h = np.array([s[0], s[0], s[1] / 2])
        elif k == ShapeKind.PLANE:
            return np.array([-np.inf, -np.inf, -np.inf]), np.array([np.inf, np.inf, 0.0])
        else:
            return self.mesh.vertices.min(0), self.mesh.vertices.max(0)
        return -h, h

    def body_aabb(self) -> tuple[np.ndarray, np.ndarray]:
        """Axis-aligned bounds (lo, hi) in the owning body's frame (exact for primitives, vertices for meshes)."""
        if self.kind == ShapeKind.MESH:
            v = self.mesh.vertices @ self.rot.T + self.pos
            return v.min(0), v.max(0)
        if self.kind == ShapeKind.PLANE:
            return np.full(3, -np.inf), np.full(3, np.inf)
        if self.kind == ShapeKind.SPHERE:
            return self.pos - self.size[0], self.pos + self.size[0]
        if self.kind in (ShapeKind.CAPSULE, ShapeKind.CYLINDER):
            r, l_ = self.size
            axis = self.rot[:, 2]
            # a disc of radius r around each end point (cylinder) or a sphere at each cap centre (capsule)
            if self.kind == ShapeKind.CAPSULE:
                ext = np.full(3, r)
            else:
                ext = r * np.sqrt(np.clip(1.0 - axis**2, 0.0, None))
            ends = np.stack([self.pos + axis * l_ / 2, self.pos - axis * l_ / 2])
            return ends.min(0) - ext, ends.max(0) + ext
        lo, hi = self.local_aabb()
        corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        c = corners @ self.rot.T + self.pos
        return c.min(0), c.max(0)

    @property
    def bounding_radius(self) -> float:
        """Radius of a sphere about the shape-frame origin that contains the shape (inf for a plane)."""
        k, s = self.kind, self.size
        if k == ShapeKind.SPHERE:
            return s[0]
        if k == ShapeKind.BOX:
            return float(np.linalg.norm(s))
        if k == ShapeKind.CAPSULE:
            return s[0] + s[1] / 2
        if k == ShapeKind.CYLINDER:
            return math.hypot(s[0], s[1] / 2)
        if k == ShapeKind.PLANE:
            return math.inf
        return float(np.linalg.norm(self.mesh.vertices, axis=1).max())
