"""The scene: every body (robot links, then declared objects) in scene order, and the candidate rules
(docs/models/scene.md#bodies, docs/models/scene.md#candidates)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import SceneError, closest_names
from ..geometry.shapes import Shape
from .objects import DeclaredObject
from .urdf import RobotModel


@dataclass(frozen=True, eq=False)
class Body:
    """One body. kind: "link" (robot link) or "object"; shapes: collision shapes (body frame, document order);
    visual_shapes: visual shapes, or None when the robot was loaded without them; material: thermal material name
    or None; source: where it was declared (URDF file or object source), for messages."""

    name: str
    kind: Literal["link", "object"]
    shapes: tuple[Shape, ...]
    visual_shapes: tuple[Shape, ...] | None
    material: str | None = None
    source: str = ""


class Scene:
    """Bodies in scene order: robot links in URDF document order, then objects in declaration order.

    Body index i < n_links is robot link i; object k is body n_links + k.
    """

    def __init__(self, robot: RobotModel | None = None, objects: Sequence[DeclaredObject] = ()):
        self.robot = robot
        self.objects = tuple(objects)
        bodies: list[Body] = []
        if robot is not None:
            src = f"robot {robot.name!r} ({robot.source})"
            bodies += [Body(link.name, "link", link.collision or (), link.visual, None, src) for link in robot.links]
        bodies += [Body(o.name, "object", o.shapes, o.visual_shapes, o.material, o.source) for o in self.objects]
        seen: dict[str, Body] = {}
        for b in bodies:
            if b.name in seen:
                first = seen[b.name]
                raise SceneError(f"body name {b.name!r} is used twice: {first.kind} from {first.source} and "
                                 f"{b.kind} from {b.source}; body names are unique across links and objects")
            seen[b.name] = b
        self.bodies = tuple(bodies)
        self.body_names = tuple(b.name for b in bodies)
        self._index = {b.name: i for i, b in enumerate(bodies)}
        self.n_links = robot.n_links if robot is not None else 0
        neighbours: list[set[int]] = [set() for _ in bodies]
        if robot is not None:
            for j in robot.joints:
                p, c = self._index[j.parent], self._index[j.child]
                neighbours[p].add(c)
                neighbours[c].add(p)
        self._neighbours = tuple(tuple(sorted(s)) for s in neighbours)

    @property
    def n_bodies(self) -> int:
        return len(self.bodies)

    def body_index(self, name: str, where: str = "") -> int:
        """Index of the body called ``name``; SceneError listing up to five closest names otherwise."""
        try:
            return self._index[name]
        except (KeyError, TypeError):
            prefix = f"{where}: " if where else ""
            raise SceneError(f"{prefix}unknown body {name!r}; closest existing bodies: "
                             f"{closest_names(str(name), self.body_names)}") from None

    def _as_index(self, body: str | int, where: str = "") -> int:
        if isinstance(body, str):
            return self.body_index(body, where)
        i = int(body)
        if not 0 <= i < self.n_bodies:
            raise SceneError(f"{where + ': ' if where else ''}body index {i} out of range [0, {self.n_bodies})")
        return i

    def body(self, body: str | int) -> Body:
        return self.bodies[self._as_index(body)]

    def neighbours(self, body: str | int) -> tuple[int, ...]:
        """Indices of the bodies joined to ``body`` by one joint (its parent and children, any joint type)."""
        return self._neighbours[self._as_index(body)]

    def candidate_mask(self, sensor_body: str | int, ignore: Iterable[str] = (), where: str = "") -> np.ndarray:
        """Candidates of a sensor on ``sensor_body`` (docs/models/scene.md#candidates): bool [B], True for every body
        except the sensor body,
        its neighbours and the bodies named in ``ignore`` (each must exist)."""
        s = self._as_index(sensor_body, where)
        mask = np.ones(self.n_bodies, dtype=bool)
        mask[s] = False
        mask[list(self._neighbours[s])] = False
        for name in ignore:
            mask[self.body_index(name, f"{where}: ignore" if where else "ignore")] = False
        return mask

    def shape_table(self, source: Literal["collision", "visual"] = "collision") -> list[tuple[int, Shape]]:
        """(body index, shape) for every shape in scene order (bodies in order, each body's shapes in order)."""
        if source not in ("collision", "visual"):
            raise ValueError(f"Scene.shape_table: source must be 'collision' or 'visual'; got {source!r}")
        table = []
        for i, b in enumerate(self.bodies):
            shapes = b.shapes if source == "collision" else b.visual_shapes
            if shapes is None:
                raise SceneError(f"body {b.name!r}: visual geometry was not loaded; load the robot with "
                                 "geometry=('collision', 'visual')")
            table += [(i, s) for s in shapes]
        return table

    def __repr__(self) -> str:
        return f"Scene(links={self.n_links}, objects={len(self.objects)})"
