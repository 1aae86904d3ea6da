"""The suite configuration schema: suite settings, robot, declared objects, materials and sensors.

A YAML file maps onto :class:`SuiteConfig`::

    suite:     {dt: 0.005 | rate: 200, device, dtype, n_envs, seed, world_frame, gravity, sdf_*, lumped_sample_spacing,
               max_memory}
    robot:     {urdf: path | package://pkg/rel, search_paths: [folders], inertia_check: error | warn}
    materials: {steel: {base_temperature, conductivity, density, specific_heat, emissivity}}
    objects:   [{name, geometry: [{sphere: {radius}, origin: {xyz, rpy}}, ...], pose | follow, frame, material,
                 velocity}]
    sensors:   [{type: KinematicTaxel, name, link, ...}]     (option models in :mod:`.sensor_options`)

Units: m, rad (``rpy``), s, Hz; quaternions (x, y, z, w). Paths are resolved at validation against the
``base_dir`` of the validation context (the YAML file's folder, see :mod:`.loader`).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, PrivateAttr, WithJsonSchema, model_validator

from ..constants import DEFAULT_GRAVITY, LENGTH_RANGE, MESH_SCALE_RANGE, QUAT_NORM_TOL, STEP_RANGE
from .base import ConfigModel, Located
from .budget import parse_memory
from .errors import OptionProblem
from .fields import AnyPath, DirPath, FilePath, Length, LENGTH_TEXT, Name, NonNegInt, NonNegLength, Vec3, vector
from .materials import MaterialRef, TemperatureProperties
from .sensor_options import SensorConfig, SensorOptions

DEVICE_ALLOWED = "'cpu', 'cuda', 'cuda:<index>' or 'auto' (cuda when available, else cpu)"
DEVICE_PATTERN = r"cpu|auto|cuda(:\d+)?"
"""The device names a configuration, ``--device`` and the ``device`` parameter accept (:data:`DEVICE_ALLOWED`)."""


def _device(value: Any) -> str:
    if not isinstance(value, str) or not re.fullmatch(DEVICE_PATTERN, value):
        raise OptionProblem("unknown device", value, DEVICE_ALLOWED)
    return value


Device = Annotated[str, BeforeValidator(_device)]


# ------------------------------------------------------------------------------------------------ shapes
class OriginConfig(ConfigModel):
    """Pose of a shape in its body frame: ``xyz`` (m) and ``rpy`` (rad, fixed-axis X-Y-Z, as URDF)."""

    xyz: Vec3 = (0.0, 0.0, 0.0)
    rpy: Vec3 = (0.0, 0.0, 0.0)


class SphereSpec(ConfigModel):
    radius: Length = Field(description=f"a radius of {LENGTH_TEXT}")


_EDGES = f"3 edge lengths of {LENGTH_TEXT} each"


class BoxSpec(ConfigModel):
    """``size``: full edge lengths (x, y, z) in m (half-extents are size/2)."""

    size: vector(3, lambda x: LENGTH_RANGE[0] <= x <= LENGTH_RANGE[1], _EDGES) = Field(description=_EDGES)


class CylinderSpec(ConfigModel):
    """Radius and length along local z, m."""

    radius: Length = Field(description=f"a radius of {LENGTH_TEXT}")
    length: Length = Field(description=f"a length of {LENGTH_TEXT}")


class CapsuleSpec(ConfigModel):
    """Radius and distance between the cap centres along local z, m."""

    radius: Length = Field(description=f"a radius of {LENGTH_TEXT}")
    length: NonNegLength = Field(description=f"a cap-centre distance of 0 or up to {LENGTH_RANGE[1]:g} m")


class PlaneSpec(ConfigModel):
    """The half-space z ≤ 0 of the shape frame (objects only)."""


def _mesh_scale(value: Any) -> Any:
    return [value] * 3 if isinstance(value, (int, float)) and not isinstance(value, bool) else value


class MeshSpec(ConfigModel):
    """A triangle mesh file (any format trimesh reads); ``scale``: one factor or (sx, sy, sz), > 0."""

    file: FilePath = Field(description="an existing mesh file (path, file:// or package://)")
    scale: Annotated[vector(3, lambda x: MESH_SCALE_RANGE[0] <= x <= MESH_SCALE_RANGE[1],
                            f"a factor of {MESH_SCALE_RANGE[0]:g} to {MESH_SCALE_RANGE[1]:g}, or 3 such factors"),
                     BeforeValidator(_mesh_scale)] = (1.0, 1.0, 1.0)


SHAPE_KINDS = ("sphere", "box", "cylinder", "capsule", "plane", "mesh")


class ShapeConfig(ConfigModel):
    """One collision shape: exactly one of the kinds, plus an optional ``origin`` in the body frame."""

    sphere: SphereSpec | None = None
    box: BoxSpec | None = None
    cylinder: CylinderSpec | None = None
    capsule: CapsuleSpec | None = None
    plane: PlaneSpec | None = None
    mesh: MeshSpec | None = None
    origin: OriginConfig = OriginConfig()

    @model_validator(mode="after")
    def _exactly_one_kind(self):
        given = [k for k in SHAPE_KINDS if getattr(self, k) is not None]
        if not given and "plane" in self.model_fields_set:  # YAML "plane:" with nothing after it
            self.plane, given = PlaneSpec(), ["plane"]
        if len(given) != 1:
            raise OptionProblem(f"a shape needs exactly one kind, found {len(given)}", given,
                                "one of " + ", ".join(SHAPE_KINDS))
        return self

    @property
    def kind(self) -> str:
        """"sphere", "box", "cylinder", "capsule", "plane" or "mesh"."""
        return next(k for k in SHAPE_KINDS if getattr(self, k) is not None)

    @property
    def spec(self) -> ConfigModel:
        """The kind's parameters (:class:`SphereSpec`, :class:`BoxSpec`, ...)."""
        return getattr(self, self.kind)


# ------------------------------------------------------------------------------------------------ objects
class PoseConfig(ConfigModel):
    """A fixed pose: ``xyz`` (m) and a rotation as ``rpy`` (rad, fixed-axis X-Y-Z) or ``quat`` (x, y, z, w),
    not both (identity when neither). A quaternion within 1e-3 of unit norm is normalised, others rejected."""

    xyz: Vec3 = (0.0, 0.0, 0.0)
    rpy: Vec3 | None = None
    quat: vector(4, allowed="4 finite numbers (x, y, z, w) of unit norm") | None = None

    @model_validator(mode="after")
    def _one_rotation(self):
        if self.rpy is not None and self.quat is not None:
            raise OptionProblem("rpy and quat are exclusive", self.quat, "either rpy or quat (x, y, z, w)", "quat")
        if self.quat is not None:
            norm = math.sqrt(sum(q * q for q in self.quat))
            if abs(norm - 1.0) > QUAT_NORM_TOL:
                raise OptionProblem(f"quaternion norm {norm:.6g} is not 1", self.quat,
                                    f"(x, y, z, w) with | |q| - 1 | <= {QUAT_NORM_TOL}", "quat")
            self.quat = tuple(q / norm for q in self.quat)
        return self


class TwistConfig(ConfigModel):
    """A given twist in the world frame: ``linear`` velocity of the body origin (m/s), ``angular`` (rad/s)."""

    linear: Vec3 = (0.0, 0.0, 0.0)
    angular: Vec3 = (0.0, 0.0, 0.0)


class ObjectConfig(ConfigModel, Located):
    """A declared object (docs/models/scene.md#bodies). Posed either by a fixed ``pose`` in ``frame`` (default: the
    suite's world
    frame) or by following the TF frame ``follow``; ``velocity`` (optional) is used as its twist."""

    name: Name = Field(description="a unique non-empty body name")
    geometry: list[ShapeConfig] = []
    pose: PoseConfig | None = None
    frame: Name | None = None
    follow: Name | None = None
    material: MaterialRef | None = None
    velocity: TwistConfig | None = None

    @model_validator(mode="after")
    def _one_pose_source(self):
        if self.follow is not None:
            for option in ("pose", "frame"):
                if getattr(self, option) is not None:
                    raise OptionProblem(f"{option} and follow are exclusive", getattr(self, option),
                                        "either a fixed pose (pose, frame) or a TF frame to follow", option)
        return self

    def default_where(self) -> str:
        return f"object {self.name!r}"


class RobotConfig(ConfigModel):
    """The robot description: a URDF file, and folders searched for ``package://`` meshes inside it.
    ``inertia_check``: a physically invalid ``<inertial>`` is an error (default) or, with ``warn``, a warning."""

    urdf: FilePath = Field(description="an existing URDF file (path, file:// or package://)")
    search_paths: list[DirPath] = []
    inertia_check: Literal["error", "warn"] = "error"


# ------------------------------------------------------------------------------------------------ suite
class SuiteSettings(ConfigModel):
    """Engine-wide settings. Exactly one of ``dt`` (s) and ``rate`` (Hz) sets the engine step. ``max_memory``
    (bytes, or a text such as ``'8 GB'``; default half the machine's memory) bounds the estimated allocation
    (:mod:`.budget`)."""

    dt: Annotated[float, Field(ge=STEP_RANGE[0], le=STEP_RANGE[1])] | None = None
    rate: Annotated[float, Field(ge=1 / STEP_RANGE[1], le=1 / STEP_RANGE[0])] | None = None
    device: Device = "cpu"
    dtype: Literal["float32", "float64"] = "float32"
    n_envs: NonNegInt = 0
    seed: NonNegInt = 0
    world_frame: Name = "world"
    gravity: Vec3 = DEFAULT_GRAVITY
    sdf_cell_size: Length = 2e-3
    sdf_max_nodes: Annotated[int, Field(ge=2)] = 128
    sdf_padding: NonNegLength = 0.01
    sdf_cache_dir: AnyPath | None = None
    lumped_sample_spacing: Length = 5e-3
    max_memory: Annotated[int, BeforeValidator(parse_memory),
                          WithJsonSchema({"anyOf": [{"type": "integer", "exclusiveMinimum": 0}, {"type": "string"}]})] \
        | None = None

    @model_validator(mode="after")
    def _dt_or_rate(self):
        if (self.dt is None) == (self.rate is None):
            given = {k: getattr(self, k) for k in ("dt", "rate") if getattr(self, k) is not None}
            raise OptionProblem("exactly one of dt and rate is required", given or "neither",
                                f"dt (s, {STEP_RANGE[0]:g} to {STEP_RANGE[1]:g}) or rate (Hz, "
                                f"{1 / STEP_RANGE[1]:g} to {1 / STEP_RANGE[0]:g}), not both", "dt")
        return self

    @property
    def step_dt(self) -> float:
        """The engine step in s (``dt``, or 1/``rate``)."""
        return self.dt if self.dt is not None else 1.0 / self.rate


def _unique_names(values: list, what: str) -> list:
    seen: dict[str, int] = {}
    for i, v in enumerate(values):
        if v.name in seen:
            raise OptionProblem(f"duplicate {what} name (also at [{seen[v.name]}])", v.name,
                                f"a {what} name used once", f"[{i}].name")
        seen[v.name] = i
    return values


class SuiteConfig(ConfigModel):
    """A whole configuration: see the module docstring. ``source`` is the file it came from (or a label)."""

    suite: SuiteSettings = Field(description="a mapping with dt or rate (and other suite settings)")
    robot: RobotConfig | None = None
    materials: dict[Name, TemperatureProperties] = {}
    objects: Annotated[list[ObjectConfig], AfterValidator(lambda v: _unique_names(v, "object"))] = []
    sensors: Annotated[list[SensorConfig], AfterValidator(lambda v: _unique_names(v, "sensor"))] = []

    _source: str = PrivateAttr(default="")

    @property
    def source(self) -> str:
        """The YAML file this configuration was loaded from ("" when built in Python)."""
        return self._source

    def material(self, ref: str | TemperatureProperties) -> TemperatureProperties:
        """A material reference resolved against ``materials`` (KeyError for an unknown name)."""
        return self.materials[ref] if isinstance(ref, str) else ref

    def sensors_of(self, cls: type[SensorOptions]) -> list[SensorOptions]:
        """The sensors of one class, in declaration order."""
        return [s for s in self.sensors if isinstance(s, cls)]
