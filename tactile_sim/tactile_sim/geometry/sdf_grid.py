"""Mesh SDF grids: the ``"sdf"`` backend of docs/models/scene.md#signed-distance, built once per mesh and cached on
disk.

The node lattice covers the mesh AABB (shape frame) grown on every side by ``pad = max(0.1·largest extent,
padding)``; axis a has ``n_a = min(max_nodes, max(8, ceil(extent_a / cell_size) + 1))`` nodes over the padded
extent. Node values are exact signed distances (closest triangle through a warp BVH, negative iff the generalised
winding number is ≥ 0.5); node gradients are central differences of the node values, one-sided on the lattice
boundary. Sampling (trilinear inside, clamped extension outside) happens in the query kernel
(:func:`.sdf_funcs.grid_sd`).

Cache: one ``.npz`` file per (mesh content hash, cell_size, max_nodes, padding) in ``cache_dir`` (default
``$TACTILE_SIM_CACHE`` or ``~/.cache/tactile_sim/sdf``), written atomically (temporary file + rename).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import warp as wp

from ..constants import int_ceil
from .mesh_io import mesh_content_hash
from .sdf_funcs import BVH_UNBOUNDED, mesh_exact_sd
from .shapes import MeshData
from .warp_kernels import init_warp, unique_kernel

CACHE_FORMAT = 1
"""Bumped whenever the node values of a given key would change, so stale cache files are never read."""


@dataclass(frozen=True, eq=False)
class SdfGrid:
    """Node lattice of one mesh in its shape frame.

    lo: (3,) float64 lattice corner, m; spacing: (3,) node spacing per axis, m; values: (nx, ny, nz) float64 signed
    distances at the nodes, m (node (i, j, k) sits at lo + (i, j, k)·spacing); gradients: (nx, ny, nz, 3) float64
    central-difference gradients (one-sided on the boundary).
    """

    lo: np.ndarray
    spacing: np.ndarray
    values: np.ndarray
    gradients: np.ndarray

    @property
    def dims(self) -> tuple[int, int, int]:
        return tuple(int(n) for n in self.values.shape)

    @property
    def hi(self) -> np.ndarray:
        """(3,) far lattice corner, m."""
        return self.lo + (np.asarray(self.dims) - 1) * self.spacing


def lattice(mesh: MeshData, cell_size: float, max_nodes: int, padding: float) -> tuple[np.ndarray, np.ndarray, tuple]:
    """(lo, spacing, dims) of the padded node lattice of ``mesh`` (docs/models/scene.md#signed-distance)."""
    if not (cell_size > 0 and padding >= 0 and int(max_nodes) >= 2):
        raise ValueError(f"SDF grid of {mesh.source}: need sdf_cell_size > 0, sdf_padding >= 0, sdf_max_nodes >= 2; "
                         f"got {cell_size}, {padding}, {max_nodes}")
    v_lo, v_hi = mesh.vertices.min(0), mesh.vertices.max(0)
    pad = max(0.1 * float((v_hi - v_lo).max()), padding)
    lo, hi = v_lo - pad, v_hi + pad
    extent = hi - lo
    dims = tuple(min(int(max_nodes), max(8, int_ceil(float(e) / cell_size) + 1)) for e in extent)
    return lo, extent / (np.asarray(dims) - 1), dims


def default_cache_dir() -> Path:
    """``$TACTILE_SIM_CACHE`` if set, else ``~/.cache/tactile_sim/sdf``."""
    env = os.environ.get("TACTILE_SIM_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "tactile_sim" / "sdf"


def cache_path(mesh: MeshData, cell_size: float, max_nodes: int, padding: float, cache_dir=None) -> Path:
    """File that holds (or will hold) the grid of ``mesh`` for these options."""
    content = mesh.content_hash or mesh_content_hash(mesh.vertices, mesh.faces)
    key = f"{CACHE_FORMAT}|{content}|{float(cell_size)!r}|{int(max_nodes)}|{float(padding)!r}"
    name = hashlib.sha256(key.encode()).hexdigest()[:32] + ".npz"
    return Path(cache_dir if cache_dir is not None else default_cache_dir()) / name


def build_sdf_grid(mesh: MeshData, cell_size: float = 2e-3, max_nodes: int = 128, padding: float = 0.01,
                   cache_dir=None) -> SdfGrid:
    """The SDF grid of ``mesh`` (shape frame), read from the cache when present, else computed and cached.

    A cache file that cannot be read, or whose lattice does not match, is recomputed and replaced; a cache folder
    that cannot be written (a file in its place, no permission) gives a warning naming it, and the grid is used
    uncached.
    """
    lo, spacing, dims = lattice(mesh, cell_size, max_nodes, padding)
    path = cache_path(mesh, cell_size, max_nodes, padding, cache_dir)
    values = _read_cache(path, lo, spacing, dims)
    if values is None:
        values = node_values(mesh, lo, spacing, dims)
        try:
            _write_cache(path, lo, spacing, values)
        except OSError as exc:
            warnings.warn(f"SDF cache folder {str(path.parent)!r} cannot be written ({exc.strerror or exc}); the grid "
                          "is computed again next time; set suite.sdf_cache_dir or $TACTILE_SIM_CACHE to a writable "
                          "folder", stacklevel=2)
    gradients = np.stack(np.gradient(values, *spacing, edge_order=1), axis=-1)
    return SdfGrid(lo=lo, spacing=spacing, values=values, gradients=gradients)


def node_values(mesh: MeshData, lo: np.ndarray, spacing: np.ndarray, dims: tuple) -> np.ndarray:
    """Exact signed distances (float64, m) at the lattice nodes, shape ``dims``.

    Computed with warp on one CPU core, a few µs per node (a full 128³ lattice takes some seconds; then cached).
    """
    device = "cpu"
    init_warp()
    wp_mesh = wp.Mesh(points=wp.array(mesh.vertices, dtype=wp.vec3f, device=device),
                      indices=wp.array(mesh.faces.astype(np.int32).reshape(-1), dtype=wp.int32, device=device),
                      support_winding_number=True)
    out = wp.empty(shape=dims, dtype=wp.float64, device=device)
    wp.launch(_node_values_kernel, dim=dims, device=device,
              inputs=[wp_mesh.id, wp.array(mesh.vertices, dtype=wp.vec3d, device=device),
                      wp.array(mesh.faces.astype(np.int32).reshape(-1), dtype=wp.int32, device=device),
                      wp.vec3d(*lo), wp.vec3d(*spacing)],
              outputs=[out])
    return out.numpy()


def _node_values_kernel(mesh_id: wp.uint64, vertices: wp.array(dtype=wp.vec3d), faces: wp.array(dtype=wp.int32),
                        lo: wp.vec3d, spacing: wp.vec3d, out: wp.array3d(dtype=wp.float64)):
    i, j, k = wp.tid()
    p = lo + wp.cw_mul(wp.vec3d(wp.float64(i), wp.float64(j), wp.float64(k)), spacing)
    found, sd, grad, closest = mesh_exact_sd(mesh_id, vertices, faces, 0, 0, p, BVH_UNBOUNDED)
    out[i, j, k] = sd


_node_values_kernel = unique_kernel(_node_values_kernel, "mesh_sdf_grid_float64")


def _read_cache(path: Path, lo, spacing, dims):
    try:
        with np.load(path) as data:
            values = data["values"]
            ok = (values.shape == tuple(dims) and np.array_equal(data["lo"], lo)
                  and np.array_equal(data["spacing"], spacing))
            return np.array(values, dtype=np.float64) if ok else None
    except (OSError, KeyError, ValueError):
        return None


def _write_cache(path: Path, lo, spacing, values) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.stem, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, lo=lo, spacing=spacing, values=values)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
