"""Declared objects: bodies that are not robot links (YAML ``objects:`` or the Python API).

An object has collision shapes (and optionally visual shapes and a thermal material name) and a pose source:

* fixed: ``frame`` is None (the world frame) — the pose (rot, pos) is constant, the twist zero;
* attached: ``frame`` or ``follow`` names a robot link — pose = link pose ∘ (rot, pos), exact twist of the link;
* TF: ``frame`` or ``follow`` names any other frame — pose = TF pose of that frame in the world frame ∘ (rot, pos);
* Python API: a pose passed to ``WorldModel.update(object_poses=…)`` overrides the source from then on.

``frame`` states that the object sits still in that frame; ``follow`` that it moves with a (usually tracked) frame.
Both resolve the same way; only one may be given.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import SceneError
from ..geometry.shapes import Shape
from ..geometry.transforms import check_rotation
from .tf_buffer import StampedTransform, TFBuffer


@dataclass(frozen=True, eq=False)
class DeclaredObject:
    """A non-robot body. rot (3, 3) / pos (3,) m: its pose in ``frame`` (or relative to ``follow``);
    material: thermal material name (docs/models/temperature_grid.md#temperature-grid) or None; source: where it was
    declared, for messages
    (e.g. ``"scene.yaml:objects[2]"``)."""

    name: str
    shapes: tuple[Shape, ...]
    visual_shapes: tuple[Shape, ...] = ()
    rot: np.ndarray = field(default_factory=lambda: np.eye(3))
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    frame: str | None = None
    follow: str | None = None
    material: str | None = None
    source: str = "Python API"

    def __post_init__(self):
        where = f"{self.source}: object {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise SceneError(f"{self.source}: object name must be a non-empty string; got {self.name!r}")
        if self.frame is not None and self.follow is not None:
            raise SceneError(f"{where}: give either 'frame' (fixed in that frame) or 'follow' (moves with that "
                             f"frame), not both; got frame={self.frame!r}, follow={self.follow!r}")
        object.__setattr__(self, "shapes", tuple(self.shapes))
        object.__setattr__(self, "visual_shapes", tuple(self.visual_shapes))
        for s in self.shapes + self.visual_shapes:
            if not isinstance(s, Shape):
                raise SceneError(f"{where}: shapes must be Shape instances; got {type(s).__name__}")
        try:
            rot = check_rotation(self.rot, f"{where}: rot")
        except ValueError as e:
            raise SceneError(str(e)) from None
        pos = np.asarray(self.pos, dtype=np.float64)
        if pos.shape != (3,) or not np.all(np.isfinite(pos)):
            raise SceneError(f"{where}: pos must be 3 finite numbers (m); got {pos.tolist()}")
        object.__setattr__(self, "rot", rot)
        object.__setattr__(self, "pos", pos)

    @property
    def parent_frame(self) -> str | None:
        """The frame the pose is given in (``follow`` or ``frame``; None for the world frame)."""
        return self.follow if self.follow is not None else self.frame


def object_pose_from_tf(obj: DeclaredObject, tf: TFBuffer, world_frame: str,
                        time: float | None = None) -> StampedTransform:
    """World pose of an object whose parent frame is a TF frame: T_world_frame(time) ∘ (obj.rot, obj.pos).

    time None: the latest time the TF chain has data. Raises TFError (unknown frame, disconnected, extrapolation).
    """
    t = tf.lookup(world_frame, obj.parent_frame, time)
    return StampedTransform(t.rot @ obj.rot, t.rot @ obj.pos + t.trans, t.stamp, t.static)
