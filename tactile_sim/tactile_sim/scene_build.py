"""From a validated configuration to the scene: robot model, declared objects and probe layouts.

This is the one place where config models are turned into geometry and world objects (the config layer knows no
geometry, the sensors know no YAML).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .config.budget import CAPS
from .config.layouts import UrdfTactileLayout
from .config.schema import ObjectConfig, RobotConfig, ShapeConfig
from .errors import ConfigError, SceneError
from .geometry.mesh_io import load_mesh
from .geometry.shapes import Shape, ShapeKind
from .geometry.transforms import pose_from_xyz_rpy, quat_to_matrix_np, rpy_to_matrix_np
from .sensors.layout.declared import declared_layout, given_options, layout_defaults
from .sensors.layout.probe_layout import ProbeLayout
from .sensors.layout.sources import conforming_layout, urdf_tactile_layouts
from .sensors.thermal.materials import declared_material
from .world.objects import DeclaredObject
from .world.scene import Scene
from .world.urdf import RobotModel


def shape_from_config(cfg: ShapeConfig, name: str) -> Shape:
    """One YAML shape → :class:`Shape` (box size → half-extents; origin xyz/rpy → pose in the body frame)."""
    rot, pos = pose_from_xyz_rpy(cfg.origin.xyz, cfg.origin.rpy)
    spec, kind = cfg.spec, cfg.kind
    if kind == "sphere":
        return Shape(ShapeKind.SPHERE, (spec.radius,), rot=rot, pos=pos, name=name)
    if kind == "box":
        return Shape(ShapeKind.BOX, tuple(s / 2 for s in spec.size), rot=rot, pos=pos, name=name)
    if kind == "cylinder":
        return Shape(ShapeKind.CYLINDER, (spec.radius, spec.length), rot=rot, pos=pos, name=name)
    if kind == "capsule":
        return Shape(ShapeKind.CAPSULE, (spec.radius, spec.length), rot=rot, pos=pos, name=name)
    if kind == "plane":
        return Shape(ShapeKind.PLANE, (), rot=rot, pos=pos, name=name)
    return Shape(ShapeKind.MESH, (), mesh=load_mesh(spec.file, spec.scale), rot=rot, pos=pos, name=name)


def object_from_config(cfg: ObjectConfig, world_frame: str) -> DeclaredObject:
    """A declared object: shapes, fixed pose in ``frame`` or the TF frame it follows, material name."""
    shapes = []
    for i, shape in enumerate(cfg.geometry):
        try:
            shapes.append(shape_from_config(shape, f"{cfg.name}[{i}]"))
        except SceneError as exc:  # a mesh file that cannot be read: named by its YAML path too
            raise SceneError(f"{cfg.where}.geometry[{i}]{'.mesh.file' if shape.kind == 'mesh' else ''}: {exc}") \
                from None
    rot, pos = np.eye(3), np.zeros(3)
    if cfg.pose is not None:
        pos = np.asarray(cfg.pose.xyz, dtype=np.float64)
        if cfg.pose.quat is not None:
            rot = quat_to_matrix_np(cfg.pose.quat)
        elif cfg.pose.rpy is not None:
            rot = rpy_to_matrix_np(cfg.pose.rpy)
    frame = None if cfg.frame in (None, world_frame) else cfg.frame
    return DeclaredObject(cfg.name, tuple(shapes), rot=rot, pos=pos, frame=frame, follow=cfg.follow,
                          material=declared_material(cfg), source=cfg.where)


def load_robot(robot: RobotConfig | None, description: str | None = None) -> tuple[RobotModel | None, str | None]:
    """The robot model and its URDF text: from a description string (ROS ``robot_description``) when given,
    else the configured URDF file. Returns (None, None) for a scene without a robot."""
    search = [Path(p) for p in robot.search_paths] if robot is not None else []
    check = robot.inertia_check if robot is not None else "error"
    if description is not None:
        return RobotModel.from_urdf(description, search_paths=search, inertia_check=check), description
    if robot is None:
        return None, None
    path = Path(robot.urdf)
    return RobotModel.from_urdf(path, search_paths=search, inertia_check=check), path.read_text()


def build_scene(objects: list[ObjectConfig], robot: RobotModel | None, world_frame: str) -> Scene:
    """Bodies in scene order: robot links, then the declared objects."""
    return Scene(robot, [object_from_config(o, world_frame) for o in objects])


def probe_layout(options, scene: Scene, urdf_text: str | None, *,
                 urdf_source: str = "robot description") -> ProbeLayout:
    """The resolved probe layout of one probe sensor: those the configuration declares
    (:func:`~.sensors.layout.declared.declared_layout`), a conforming layout on its link or a urdf_tactile one.

    ``urdf_source`` names the robot description (its file) in errors; ``<tactile>`` arrays larger than the probe cap
    of :mod:`.config.budget` are refused before they are built."""
    declared = declared_layout(options)
    if declared is not None:
        return declared
    where = options.where
    src = options.probe_local_pos
    radius, normal, common = given_options(options)
    defaults = layout_defaults(options.type)
    if isinstance(src, UrdfTactileLayout):
        decls = (urdf_tactile_layouts(urdf_text, source=urdf_source, max_probes=CAPS["probes"]) if urdf_text
                 else {})
        if src.urdf_tactile not in decls:
            raise ConfigError(f"{where}.probe_local_pos.urdf_tactile: no <sensor> with a <tactile> child named "
                              f"{src.urdf_tactile!r} in {urdf_source}; got {src.urdf_tactile!r}; allowed: "
                              f"{', '.join(decls) or 'none declared'}")
        decl = decls[src.urdf_tactile]
        if decl.link != options.link:
            raise ConfigError(f"{where}.link: the urdf_tactile sensor {decl.name!r} is mounted on {decl.link!r}; "
                              f"got {options.link!r}; allowed: {decl.link!r}")
        return decl.layout(radius, **defaults, **common)
    spec = src.conforming
    body = scene.body(scene.body_index(options.link, where))
    lay = conforming_layout(body.shapes, spec.spacing, facing=spec.facing, min_cos=spec.min_cos, box=spec.box,
                            seed=spec.seed, where=f"{where}.probe_local_pos.conforming")
    return ProbeLayout.from_options(lay.positions, radius if radius is not None else lay.radius,
                                    normal if normal is not None else lay.normals, **defaults, **common)
