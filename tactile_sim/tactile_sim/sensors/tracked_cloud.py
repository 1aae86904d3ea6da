"""Point clouds of a sensor's tracked bodies (spec §2.5; ElastomerTaxel §7, ProximityTaxel §8).

Build: :func:`sample_tracked_cloud` samples the bodies named in ``track`` once — collision geometry, or visual
geometry with ``use_visual_mesh`` — with ``n_sample_points`` (one budget split by area over every tracked shape, or
one count per tracked body) and one NumPy generator seeded with ``sample_seed``, used body by body and shape by shape
in scene order. The result is a read-only :class:`PointCloud`, exposed as the sensor's ``point_cloud``.

Step: :class:`TrackedClouds` concatenates the clouds of a batch (N samples) and poses them with one kernel: world
positions q [E, N, 3] and, in the frame of the sample's sensor link L, positions q̃ = R_Lᵀ(q − o_L)
(ElastomerTaxel; ProximityTaxel poses its samples inside its own kernel).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
import warp as wp

from ..errors import ConfigError
from ..geometry.sampling import sample_body_surface
from ..geometry.shapes import ShapeKind
from ..geometry.struct_launch import StructLaunch
from ..world.scene import Scene
from ..world.state import WorldState
from .probe_set import WP_TYPES


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


def _pose_kernel(dtype: torch.dtype):
    """(kernel, call struct type) posing sample j of env e: world q = R_B u_j + o_B into ``world[e, offset + j]``,
    link frame q̃ = R_Lᵀ(q − o_L) into ``local[e, j]``."""
    f, v, m = WP_TYPES[dtype]
    i32 = wp.array(dtype=wp.int32)
    name = f"PoseSamplesCall_{f.__name__}"
    call_type = wp.struct(type(name, (), {"__module__": __name__, "__qualname__": name, "__annotations__": {
        "points": wp.array(dtype=v), "owner": i32, "sensor": i32, "link_of_sensor": i32,
        "body_rot": wp.array2d(dtype=m), "body_pos": wp.array2d(dtype=v), "world": wp.array2d(dtype=v),
        "local": wp.array2d(dtype=v)}}))

    def kernel(call: Any, offset: int):
        e, j = wp.tid()
        b = call.owner[j]
        q = call.body_rot[e, b] @ call.points[j] + call.body_pos[e, b]
        call.world[e, offset + j] = q
        link = call.link_of_sensor[call.sensor[j]]
        call.local[e, j] = wp.transpose(call.body_rot[e, link]) @ (q - call.body_pos[e, link])

    kernel.__name__ = f"pose_samples_{f.__name__}"
    kernel.__annotations__ = {"call": call_type, "offset": int}
    return wp.kernel(kernel, enable_backward=False, module="unique"), call_type


_POSE_KERNELS = {dt: _pose_kernel(dt) for dt in WP_TYPES}


class TrackedClouds:
    """The clouds of a batch's sensors, concatenated in sensor order (N samples), posed once per step.

    clouds: one PointCloud per sensor; links: [S] body index of each sensor's link; world: a persistent
    ``[E, M, 3]`` tensor whose columns ``offset … offset + N`` receive the world positions (None: an own buffer).
    Attributes (tensors on the batch device): ``points`` [N, 3] m (body frames), ``areas`` [N] m²,
    ``sensor_of_sample`` [N] long, ``slices`` per sensor (start, stop); per step (after :meth:`pose`): ``world``
    [E, M, 3] m, ``local`` q̃ [E, N, 3] m (link frames).
    """

    def __init__(self, clouds: Sequence[PointCloud], links: Sequence[int], n_envs: int, n_bodies: int, device,
                 dtype: torch.dtype, *, world: torch.Tensor | None = None, offset: int = 0):
        counts = [len(c) for c in clouds]
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        self.slices = [(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]
        self.n = n = int(starts[-1])
        self.n_envs = e = n_envs
        kw = dict(device=device, dtype=dtype)

        def cat(key):
            return np.concatenate([getattr(c, key) for c in clouds])

        self.points = torch.as_tensor(cat("points"), **kw).reshape(n, 3).contiguous()
        self.areas = torch.as_tensor(cat("areas"), **kw)
        sensor = np.repeat(np.arange(len(clouds)), counts)
        self.sensor_of_sample = torch.as_tensor(sensor, device=device, dtype=torch.int64)
        self.world = torch.zeros(e, n, 3, **kw) if world is None else world
        self.local = torch.zeros(e, n, 3, **kw)
        kernel, call_type = _POSE_KERNELS[dtype]
        fields = {"points": self.points, "owner": torch.as_tensor(cat("body"), device=device, dtype=torch.int32),
                  "sensor": self.sensor_of_sample.to(torch.int32),
                  "link_of_sensor": torch.as_tensor(np.asarray(links), device=device, dtype=torch.int32),
                  "body_rot": torch.zeros(e, n_bodies, 3, 3, **kw), "body_pos": torch.zeros(e, n_bodies, 3, **kw),
                  "world": self.world, "local": self.local}
        self._launch = StructLaunch(kernel, (e, n), call_type, fields, [offset], device)

    def pose(self, state: WorldState) -> None:
        """Pose every sample for this step's world state (fills ``world`` and ``local``; the state's pose tensors
        are read in place)."""
        self._launch.bind("body_rot", _contiguous(state.rot))
        self._launch.bind("body_pos", _contiguous(state.pos))
        self._launch()


def _contiguous(t: torch.Tensor) -> torch.Tensor:
    return t if t.is_contiguous() else t.contiguous()
