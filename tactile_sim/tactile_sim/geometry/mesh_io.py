"""Triangle-mesh loading (STL, OBJ, DAE and the other formats trimesh reads) into :class:`MeshData`.

A file holding a scene (several meshes, e.g. a COLLADA file) is merged into one mesh with each node's transform
applied. Scale is applied per axis in the mesh frame; a mirroring scale (odd number of negative factors) reverses
the triangle winding so that faces keep pointing outwards.
"""

from __future__ import annotations

import hashlib
import os
import warnings

import numpy as np

from ..constants import LENGTH_RANGE
from ..errors import SceneError
from .shapes import MeshData


def mesh_content_hash(vertices: np.ndarray, faces: np.ndarray) -> str:
    """sha256 hex digest of the float64 vertices (V, 3) followed by the int64 faces (F, 3) — the SDF cache key."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(vertices, dtype="<f8").tobytes())
    h.update(np.ascontiguousarray(faces, dtype="<i8").tobytes())
    return h.hexdigest()


def make_mesh_data(vertices, faces, source: str = "<memory>") -> MeshData:
    """MeshData from vertices (V, 3) in m and faces (F, 3) vertex indices, with content hash and watertight flag.

    Warns (``UserWarning`` naming ``source``) when the mesh is not watertight: it stays usable, its inside/outside
    sign comes from the generalised winding number (docs/models/scene.md#signed-distance).
    """
    mesh = _mesh_data(vertices, faces, source)
    _warn_if_open(mesh)
    return mesh


def load_mesh(path, scale=(1.0, 1.0, 1.0)) -> MeshData:
    """Load a mesh file and apply ``scale`` (3 factors, or one for all axes).

    Duplicate vertices are merged (so an STL's triangle soup becomes a connected surface). Raises
    :class:`SceneError` naming the path when the file is missing, unreadable, holds no triangles, or the scale
    has a zero or non-finite factor. Warns when the mesh is not watertight (see :func:`make_mesh_data`).
    """
    path = os.fspath(path)
    s = np.asarray(scale, dtype=np.float64).reshape(-1)
    if s.size == 1:
        s = np.repeat(s, 3)
    if s.size != 3 or not np.all(np.isfinite(s)) or np.any(s == 0):
        raise SceneError(f"{path}: mesh scale must be 1 or 3 finite non-zero factors; got {scale!r}")
    if not os.path.isfile(path):
        raise SceneError(f"{path}: mesh file not found")
    import trimesh  # only for meshes: it costs seconds to import (through scipy)

    try:
        with np.errstate(all="ignore"):  # overflows of absurd coordinates: the extent check below says what is wrong
            loaded = trimesh.load(path, force="mesh", process=True)
    except Exception as exc:  # trimesh raises many types for bad or unsupported files
        raise SceneError(f"{path}: cannot read mesh file ({type(exc).__name__}: {exc}); allowed: STL, OBJ, DAE, PLY, "
                         "GLB/GLTF, OFF files with triangles") from exc
    if not isinstance(loaded, trimesh.Trimesh) or len(loaded.faces) == 0:
        raise SceneError(f"{path}: mesh file holds no triangles")
    faces = np.asarray(loaded.faces, dtype=np.int64)
    if np.prod(np.sign(s)) < 0:
        faces = faces[:, ::-1]
    mesh = _mesh_data(np.asarray(loaded.vertices, dtype=np.float64) * s, faces, path)
    _warn_if_open(mesh)
    return mesh


def _mesh_data(vertices, faces, source: str) -> MeshData:
    v = np.ascontiguousarray(vertices, dtype=np.float64).reshape(-1, 3)
    f = np.ascontiguousarray(faces, dtype=np.int64).reshape(-1, 3)
    if len(f) == 0:
        raise SceneError(f"{source}: mesh has no triangles; allowed: a mesh with at least one triangle")
    if f.min() < 0 or f.max() >= len(v):
        raise SceneError(f"{source}: face vertex index out of range [0, {len(v)}); got {int(f.min())}..{int(f.max())}")
    if not np.all(np.isfinite(v)):
        raise SceneError(f"{source}: mesh vertices must be finite")
    low, high = LENGTH_RANGE
    extent = float(np.ptp(v[f.reshape(-1)], axis=0).max())
    if not low <= extent <= high:  # (before its area: a square of far larger coordinates overflows)
        raise SceneError(f"{source}: a mesh must be {low:g} to {high:g} m across (after its scale); got {extent:g} m")
    import trimesh

    tm = trimesh.Trimesh(vertices=v, faces=f, process=False)
    watertight = bool(tm.is_watertight and tm.is_winding_consistent)
    return MeshData(vertices=v, faces=f, source=source, content_hash=mesh_content_hash(v, f), watertight=watertight)


def _warn_if_open(mesh: MeshData) -> None:
    if not mesh.watertight:
        warnings.warn(f"{mesh.source}: mesh is not watertight (open or inconsistently oriented); it is used as is, "
                      "with inside/outside taken from the generalised winding number", UserWarning, stacklevel=3)
