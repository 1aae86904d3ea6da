"""Point clouds of a sensor's tracked bodies (docs/models/scene.md#sampling; ElastomerTaxel
docs/models/elastomer_taxel.md#elastomer-taxel, ProximityTaxel docs/models/proximity_taxel.md#model).

Build: :func:`sample_tracked_cloud` samples the bodies named in ``track`` once — collision geometry, or visual
geometry with ``use_visual_mesh`` — with ``n_sample_points`` (one budget split by area over every tracked shape, or
one count per tracked body) and one NumPy generator seeded with ``sample_seed``, used body by body and shape by shape
in scene order. The result is a read-only :class:`PointCloud`, exposed as the sensor's ``point_cloud``.

Step: each sensor batch poses its samples inside its own fused kernel (ElastomerTaxel, ProximityTaxel).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import ConfigError
from ...geometry.sampling import sample_body_surface
from ...geometry.shapes import ShapeKind
from ...world.scene import Scene


@dataclass(frozen=True, eq=False)
class PointCloud:
    """One sensor's sampled tracked surface (read-only arrays, N = actual sample count).

    points: (N, 3) m and normals: (N, 3) outward unit vectors, both in the owning body's frame; areas: (N,) m² area
    shares (they sum to each shape's area); body: (N,) int64 scene index of the owning body; body_name: (N,) str.
    """

    points: np.ndarray
    normals: np.ndarray
    areas: np.ndarray
    body: np.ndarray
    body_name: np.ndarray

    def __len__(self) -> int:
        return len(self.points)


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def tracked_shape_mask(scene: Scene, bodies) -> np.ndarray:
    """[S] bool over the scene's collision shapes (scene order): True for the shapes owned by ``bodies`` (names)."""
    wanted = {scene.body_index(b) for b in bodies}
    return np.array([b in wanted for b, _ in scene.shape_table()], dtype=bool)


def sample_tracked_cloud(scene: Scene, options, where: str, *, require_collision: bool) -> PointCloud:
    """The cloud of one point-cloud sensor from its options (``track``, ``n_sample_points``, ``use_visual_mesh``,
    ``sample_seed``). require_collision: every tracked body must also own collision geometry (ElastomerTaxel's depth
    queries it). Raises ConfigError naming ``<where>.track`` for a tracked body without sampleable geometry."""
    source = "visual" if options.use_visual_mesh else "collision"
    indices = sorted(scene.body_index(name, f"{where}.track") for name in options.track)
    shapes_of = {}
    for b in indices:
        body = scene.body(b)
        shapes = body.visual_shapes if options.use_visual_mesh else body.shapes
        if not shapes:
            missing = "was not loaded" if shapes is None else "is empty"
            raise ConfigError(f"{where}.track: tracked body {body.name!r} has no {source} geometry to sample (its "
                              f"{source} geometry {missing}); got {body.name!r}; allowed: bodies with {source} "
                              "sphere, box, capsule, cylinder or mesh shapes")
        for shape in shapes:
            if shape.kind == ShapeKind.PLANE:
                raise ConfigError(f"{where}.track: tracked body {body.name!r} has a plane shape {shape.name!r}, "
                                  f"which cannot be sampled (infinite area); got {body.name!r}; allowed: bodies "
                                  f"whose {source} shapes are spheres, boxes, capsules, cylinders or meshes")
        if require_collision and not body.shapes:
            raise ConfigError(f"{where}.track: tracked body {body.name!r} has no collision geometry (the indentation "
                              f"depth is measured against it); got {body.name!r}; allowed: bodies with collision "
                              "shapes")
        shapes_of[b] = list(shapes)
    rng = np.random.default_rng(options.sample_seed)
    if isinstance(options.n_sample_points, list):
        count = dict(zip(options.track, options.n_sample_points))
        parts = [(b, sample_body_surface(shapes_of[b], n=count[scene.body(b).name], seed=rng)) for b in indices]
        owners = [np.full(len(s), b, np.int64) for b, s in parts]
        samples = [s for _, s in parts]
    else:
        shapes = [s for b in indices for s in shapes_of[b]]
        owner_of_shape = np.array([b for b in indices for _ in shapes_of[b]], np.int64)
        one = sample_body_surface(shapes, n=options.n_sample_points, seed=rng)
        samples, owners = [one], [owner_of_shape[one.shape_index]]
    body = np.concatenate(owners)
    names = np.array(scene.body_names, dtype=object)[body].astype(str) if len(body) else np.zeros(0, str)
    return PointCloud(points=_readonly(np.concatenate([s.points for s in samples])),
                      normals=_readonly(np.concatenate([s.normals for s in samples])),
                      areas=_readonly(np.concatenate([s.areas for s in samples])),
                      body=_readonly(body), body_name=_readonly(names))
