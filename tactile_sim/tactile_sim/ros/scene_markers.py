"""rviz markers of the declared objects (robot links are drawn by rviz's RobotModel from the URDF).

Each collision shape of an object becomes one marker in the world frame at the object's current pose: SPHERE,
CUBE, CYLINDER (axis z), a capsule as a CYLINDER plus two SPHEREs, a mesh as a TRIANGLE_LIST; planes (unbounded)
are not drawn. Namespace ``objects/<object name>``, ids numbered per object, translucent grey-blue.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from ..geometry.shapes import Shape, ShapeKind
from ..io.encode import header, pose, vector3
from ..io.markers import MARKER
from ..io.msg_types import message_class, new_message

OBJECT_RGBA = (0.6, 0.7, 0.9, 0.6)


def _shape_templates(shape: Shape) -> list[tuple[Any, np.ndarray]]:
    """Markers of one shape without header, pose and id, with each one's offset (3,) along the shape's z axis."""
    cls = message_class(MARKER)
    color = new_message("std_msgs/msg/ColorRGBA", r=OBJECT_RGBA[0], g=OBJECT_RGBA[1], b=OBJECT_RGBA[2],
                        a=OBJECT_RGBA[3])
    base = new_message(MARKER, action=cls.ADD, color=color)
    zero = np.zeros(3)
    if shape.kind == ShapeKind.SPHERE:
        return [(replace(base, type=cls.SPHERE, scale=vector3((2 * shape.size[0],) * 3)), zero)]
    if shape.kind == ShapeKind.BOX:
        return [(replace(base, type=cls.CUBE, scale=vector3([2 * h for h in shape.size])), zero)]
    if shape.kind in (ShapeKind.CYLINDER, ShapeKind.CAPSULE):
        r, length = shape.size
        out = [(replace(base, type=cls.CYLINDER, scale=vector3((2 * r, 2 * r, length))), zero)]
        if shape.kind == ShapeKind.CAPSULE:
            ball = replace(base, type=cls.SPHERE, scale=vector3((2 * r,) * 3))
            out += [(ball, np.array([0.0, 0.0, 0.5 * length])), (ball, np.array([0.0, 0.0, -0.5 * length]))]
        return out
    if shape.kind == ShapeKind.MESH:
        point = message_class("geometry_msgs/msg/Point")
        corners = shape.mesh.vertices[shape.mesh.faces].reshape(-1, 3)
        points = [point(x=x, y=y, z=z) for x, y, z in corners.tolist()]
        return [(replace(base, type=cls.TRIANGLE_LIST, scale=vector3((1.0, 1.0, 1.0)), points=points), zero)]
    return []


class ObjectMarkers:
    """Markers of a scene's declared objects; the static parts are built once, poses per call."""

    def __init__(self, scene, world_frame: str):
        self.world_frame = world_frame
        self.first_object = scene.n_links
        self.items = []  # (object index, shape, template, z offset, namespace, id)
        for k, obj in enumerate(scene.objects):
            ids = 0
            for shape in obj.shapes:
                for template, offset in _shape_templates(shape):
                    self.items.append((k, shape, template, offset, f"objects/{obj.name}", ids))
                    ids += 1

    def markers(self, rot: np.ndarray, pos: np.ndarray, stamp: float) -> list[Any]:
        """Markers at the body poses of a world state: rot (B, 3, 3), pos (B, 3) of every body (one env), m."""
        head = header(self.world_frame, stamp)
        out = []
        for k, shape, template, offset, ns, marker_id in self.items:
            r_obj, p_obj = rot[self.first_object + k], pos[self.first_object + k]
            r = r_obj @ shape.rot
            p = r_obj @ (shape.pos + shape.rot @ offset) + p_obj
            q = Rotation.from_matrix(r).as_quat()  # (x, y, z, w)
            out.append(replace(template, header=head, ns=ns, id=marker_id, pose=pose(p, q)))
        return out
