"""Benchmark of the geometry hot path: ShapeQuery on analytic primitives, a mesh SDF grid and the exact mesh BVH.

Work sizes 1e3, 1e4 and 1e5 query points (one env), one torch thread. Baseline in the same process:
``trimesh.proximity.signed_distance`` on the same mesh (exact, ≤ 1e4 points: it is slow and memory hungry). Also
prints the fixed cost of one small query (call overhead) and the SDF grid build time (cold cache, then cached).

    python bench/geometry.py
"""

from __future__ import annotations

import math
import tempfile
import time

import numpy as np
import torch
import trimesh

from tactile_sim.geometry.mesh_io import make_mesh_data
from tactile_sim.geometry.query import ShapeQuery
from tactile_sim.geometry.sdf_grid import build_sdf_grid
from tactile_sim.geometry.shapes import Shape, ShapeKind

SIZES = (1_000, 10_000, 100_000)
TRIMESH_MAX = 10_000


def timed(fn, min_time=0.3, min_reps=3) -> float:
    """Seconds per call, the fastest of ≥ ``min_reps`` timed calls spread over ≥ ``min_time`` (after a warm-up call):
    on a shared machine the minimum is the stable statistic."""
    fn()
    best, reps, start = math.inf, 0, time.perf_counter()
    while reps < min_reps or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        reps += 1
    return best


def primitives_scene() -> list[tuple[int, Shape]]:
    """Five primitives on three bodies plus a floor plane, within ±0.15 m of the origin."""
    rot = trimesh.transformations.rotation_matrix(0.4, [1, 1, 0])[:3, :3]
    return [(0, Shape(ShapeKind.SPHERE, (0.03,), pos=[0.08, 0.0, 0.05])),
            (0, Shape(ShapeKind.BOX, (0.04, 0.02, 0.03), rot=rot, pos=[-0.06, 0.04, 0.02])),
            (1, Shape(ShapeKind.CAPSULE, (0.02, 0.08), rot=rot, pos=[0.0, -0.07, 0.0])),
            (1, Shape(ShapeKind.CYLINDER, (0.025, 0.06), pos=[0.0, 0.08, -0.04])),
            (2, Shape(ShapeKind.PLANE, (), pos=[0.0, 0.0, -0.12]))]


def main() -> None:
    torch.set_num_threads(1)
    capsule = trimesh.creation.capsule(height=0.1, radius=0.03, count=[32, 32])
    mesh = make_mesh_data(capsule.vertices, capsule.faces, "capsule mesh")
    rng = np.random.default_rng(0)
    dtype = torch.float32
    rot = torch.eye(3, dtype=dtype).expand(1, 3, 3, 3).contiguous()
    pos = torch.zeros(1, 3, 3, dtype=dtype)

    with tempfile.TemporaryDirectory() as cache:
        t0 = time.perf_counter()
        grid = build_sdf_grid(mesh, cache_dir=cache)
        cold = time.perf_counter() - t0
        warm = timed(lambda: build_sdf_grid(mesh, cache_dir=cache), min_time=0.1)
        analytic = ShapeQuery(primitives_scene(), dtype=dtype)
        meshq = ShapeQuery([(0, Shape(ShapeKind.MESH, mesh=mesh))], dtype=dtype, cache_dir=cache)

    print(f"mesh: {len(mesh.faces)} triangles; SDF grid {grid.dims} nodes, spacing {grid.spacing.max() * 1e3:.2f} mm; "
          f"build {cold:.2f} s cold, {warm * 1e3:.1f} ms from the cache")

    def query_fn(sq, n, exact):
        pts = torch.as_tensor(rng.uniform(-0.15, 0.15, (1, n, 3)), dtype=dtype)
        group = torch.zeros(n, dtype=torch.int32)
        mask = torch.ones(1, sq.n_shapes, dtype=torch.bool)
        cutoff = torch.full((n,), math.inf, dtype=dtype)
        ex = torch.tensor([exact])
        return lambda: sq.query(pts, rot, pos, group, mask, cutoff, ex), pts

    small, _ = query_fn(analytic, 16, False)
    print(f"call overhead (16 points, 5 primitives): {timed(small, min_time=0.5) * 1e6:.1f} µs per query\n")

    header = f"{'backend':<28}{'points':>9}{'ms/query':>12}{'points/s':>13}{'trimesh/this':>14}"
    print(header)
    print("-" * len(header))
    for n in SIZES:
        rows = []
        fn, _ = query_fn(analytic, n, False)
        rows.append(("analytic (5 prims + plane)", timed(fn)))
        fn, _ = query_fn(meshq, n, False)
        rows.append(("mesh SDF grid", timed(fn)))
        fn, pts = query_fn(meshq, n, True)
        rows.append(("mesh exact BVH (warp)", timed(fn)))
        baseline = None
        if n <= TRIMESH_MAX:
            p = pts[0].double().numpy()
            baseline = timed(lambda: trimesh.proximity.signed_distance(capsule, p), min_time=0.5, min_reps=1)
            rows.append(("trimesh signed_distance", baseline))
        for name, t in rows:
            ratio = f"{baseline / t:13.1f}×" if baseline is not None and "mesh" in name else f"{'':>14}"
            print(f"{name:<28}{n:>9}{t * 1e3:>12.3f}{n / t:>13.3g}{ratio}")


if __name__ == "__main__":
    main()
