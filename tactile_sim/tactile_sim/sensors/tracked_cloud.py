"""Point clouds of a sensor's tracked bodies (spec §2.5; ElastomerTaxel §7, ProximityTaxel §8).

Build: :func:`sample_tracked_cloud` samples the bodies named in ``track`` once — collision geometry, or visual
geometry with ``use_visual_mesh`` — with ``n_sample_points`` (one budget split by area over every tracked shape, or
one count per tracked body) and one NumPy generator seeded with ``sample_seed``, used body by body and shape by shape
in scene order. The result is a read-only :class:`PointCloud`, exposed as the sensor's ``point_cloud``.

Step: :class:`TrackedClouds` concatenates the clouds of a batch (N samples) and poses them with one kernel: world
positions q [E, N, 3] and, in the frame of the sample's sensor link L, positions q̃ = R_Lᵀ(q − o_L), material-point
velocities R_Lᵀ(v_B + ω_B × (q − o_B)) and body angular velocities R_Lᵀ ω_B.
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
from ..world.scene import Scene
from ..world.state import WorldState
from .warp_launch import RecordedLaunch, mat33, vec3


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


@wp.kernel(enable_backward=False)
def _pose_samples(points: wp.array(dtype=Any), owner: wp.array(dtype=wp.int32), sensor: wp.array(dtype=wp.int32),
                  link_of_sensor: wp.array(dtype=wp.int32), body_rot: wp.array2d(dtype=Any),
                  body_pos: wp.array2d(dtype=Any), body_lin: wp.array2d(dtype=Any), body_ang: wp.array2d(dtype=Any),
                  world: wp.array2d(dtype=Any), offset: int, local: wp.array2d(dtype=Any),
                  local_vel: wp.array2d(dtype=Any), local_ang: wp.array2d(dtype=Any), with_velocity: int):
    e, j = wp.tid()
    b = owner[j]
    origin = body_pos[e, b]
    q = body_rot[e, b] @ points[j] + origin
    world[e, offset + j] = q
    link = link_of_sensor[sensor[j]]
    to_link = wp.transpose(body_rot[e, link])
    local[e, j] = to_link @ (q - body_pos[e, link])
    if with_velocity != 0:
        w = body_ang[e, b]
        local_vel[e, j] = to_link @ (body_lin[e, b] + wp.cross(w, q - origin))
        local_ang[e, j] = to_link @ w


class TrackedClouds:
    """The clouds of a batch's sensors, concatenated in sensor order (N samples), posed once per step.

    clouds: one PointCloud per sensor; links: [S] body index of each sensor's link; world: a persistent
    ``[E, M, 3]`` tensor whose columns ``offset … offset + N`` receive the world positions (None: an own buffer);
    velocities: also compute the link-frame velocities. Attributes (tensors on the batch device): ``areas`` [N] m²,
    ``sensor_of_sample`` [N] long, ``slices`` per sensor (start, stop); per step (after :meth:`pose`):
    ``world`` [E, M, 3] m, ``local`` q̃ [E, N, 3] m, ``local_velocity`` [E, N, 3] m/s, ``local_angular`` [E, N, 3]
    rad/s (link frames).
    """

    def __init__(self, clouds: Sequence[PointCloud], links: Sequence[int], n_envs: int, n_bodies: int, device,
                 dtype: torch.dtype, *, world: torch.Tensor | None = None, offset: int = 0, velocities: bool = False):
        counts = [len(c) for c in clouds]
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        self.slices = [(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]
        self.n = n = int(starts[-1])
        self.n_envs = e = n_envs
        self.velocities = velocities
        kw = dict(device=device, dtype=dtype)

        def cat(key):
            return np.concatenate([getattr(c, key) for c in clouds])

        self.points = torch.as_tensor(cat("points"), **kw).reshape(n, 3).contiguous()
        self.areas = torch.as_tensor(cat("areas"), **kw)
        sensor = np.repeat(np.arange(len(clouds)), counts)
        self.sensor_of_sample = torch.as_tensor(sensor, device=device, dtype=torch.int64)
        owner = torch.as_tensor(cat("body"), device=device, dtype=torch.int32)
        self._sensor32 = self.sensor_of_sample.to(torch.int32)
        self._links = torch.as_tensor(np.asarray(links), device=device, dtype=torch.int32)
        self._rot = torch.zeros(e, n_bodies, 3, 3, **kw)
        self._pos = torch.zeros(e, n_bodies, 3, **kw)
        self._lin = torch.zeros(e, n_bodies, 3, **kw) if velocities else self._pos
        self._ang = torch.zeros(e, n_bodies, 3, **kw) if velocities else self._pos
        self.world = torch.zeros(e, n, 3, **kw) if world is None else world
        self.local = torch.zeros(e, n, 3, **kw)
        self.local_velocity = torch.zeros(e, n, 3, **kw) if velocities else self.local
        self.local_angular = torch.zeros(e, n, 3, **kw) if velocities else self.local
        self._launch = RecordedLaunch(_pose_samples, (e, n), [
            vec3(self.points), owner, self._sensor32, self._links, mat33(self._rot), vec3(self._pos),
            vec3(self._lin), vec3(self._ang), vec3(self.world), offset, vec3(self.local), vec3(self.local_velocity),
            vec3(self.local_angular), int(velocities)], device)

    def pose(self, state: WorldState) -> None:
        """Pose every sample for this step's world state (fills ``world``, ``local`` and the velocities)."""
        self._rot.copy_(state.rot)
        self._pos.copy_(state.pos)
        if self.velocities:
            self._lin.copy_(state.lin_vel)
            self._ang.copy_(state.ang_vel)
        self._launch()
