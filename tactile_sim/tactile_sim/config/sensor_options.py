"""Option models of every sensor type, one pydantic model per class, with the option names, defaults and
option-level rules of the model pages (docs/models/scene.md#common-options, docs/models/probes.md#probes and each
sensor's page).

Option-level means decidable from the options alone: ranges, enums, mutual exclusion and cross-field rules.
Rules that need the layout (array shapes against the layout), the scene (body, joint and sensor names) or the
engine step (``jitter < dt``) are checked later by ``sensors.layout``, the suite and :mod:`.suite_checks`.

Hierarchy (fields are inherited):
``SensorOptions`` (name, update_period, history_length) → ``PipelineOptions`` (+ docs/models/imperfections.md#hardware
noise chain, delay, jitter,
seed, draw_debug) → ``LinkOptions`` (+ link, pos_offset, euler_offset) → ``ProbeOptions`` (+
docs/models/layouts.md#layouts layout,
probe_radius_noise, debug_probe_*) → ``TactileOptions`` (+ docs/models/imperfections.md#probe-level gain/dead taxels,
docs/models/imperfections.md#hysteresis hysteresis,
contact_depth_query, ignore). Mixins: ``CrosstalkOptions`` (docs/models/imperfections.md#crosstalk),
``TrackedCloudOptions`` (track, clouds),
``CandidateOptions`` (ignore).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from .base import ConfigModel, Located
from .errors import OptionProblem
from .fields import (
    BodyPattern,
    Color3,
    Color4,
    FlatFloats,
    Length,
    Name,
    NameList,
    NestedFloats,
    NonNegFlat,
    NonNegFloat,
    NonNegInt,
    NonNegLength,
    PosFloat,
    PosInt,
    PositiveNested,
    UnitFloat,
    Vec3,
    int_vector,
    interval,
    nested_floats,
)
from .layouts import LayoutPositions
from .materials import AboveAbsoluteZero, MaterialRef
from .outputs import OutputProfile, check_outputs

AtLeastOne = Annotated[float, Field(ge=1.0)]


# ------------------------------------------------------------------------------------------------ helpers
def _shape(value: Any) -> tuple[int, ...] | None:
    """Shape of a nested list of floats; None when ragged."""
    if not isinstance(value, list):
        return ()
    inner = {_shape(v) for v in value}
    if len(inner) > 1 or None in inner:
        return None
    return (len(value),) + (inner.pop() if inner else ())


def _contact_depth_query(value: Any) -> Any:
    """None (Genesis default) → "sdf"; "exact" is an alias of "raycast"."""
    if value is None:
        return "sdf"
    if value not in ("sdf", "raycast", "exact"):
        raise OptionProblem("unknown mesh distance backend", value, "'sdf', 'raycast' or 'exact' (alias of 'raycast')")
    return "raycast" if value == "exact" else value


ContactDepthQuery = Annotated[Literal["sdf", "raycast"], BeforeValidator(_contact_depth_query)]
"""Mesh distance backend (docs/models/scene.md#signed-distance): "sdf" (default) or "raycast"; "exact" is stored as
"raycast"."""

KERNEL_ALLOWED = "a 2-D (h, w), or (2, h, w) / (3, h, w) per-channel-group, array of finite numbers; h, w odd"


def _kernel_shape(value: Any) -> Any:
    shape = _shape(value)
    if shape is None:
        raise OptionProblem("ragged kernel", value, KERNEL_ALLOWED)
    ok = (len(shape) == 2 or (len(shape) == 3 and shape[0] in (2, 3))) and all(n % 2 == 1 for n in shape[-2:])
    if not ok:
        raise OptionProblem(f"kernel shape {shape} not allowed", value, KERNEL_ALLOWED)
    return value


CrosstalkKernel = Annotated[nested_floats(None, KERNEL_ALLOWED, 3), AfterValidator(_kernel_shape)]

SAMPLES_ALLOWED = "an integer >= 1, or one integer >= 0 per tracked body with a positive total"


def _sample_counts(value: Any) -> int | list[int]:
    value = value.tolist() if hasattr(value, "tolist") else value
    if isinstance(value, bool):
        raise OptionProblem("not an integer", value, SAMPLES_ALLOWED)
    if isinstance(value, int):
        if value < 1:
            raise OptionProblem("sample budget below 1", value, SAMPLES_ALLOWED)
        return value
    if isinstance(value, (list, tuple)):
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise OptionProblem("not a list of integers", value, SAMPLES_ALLOWED)
        if any(v < 0 for v in value):
            raise OptionProblem("negative sample count", value, SAMPLES_ALLOWED)
        if sum(value) <= 0:
            raise OptionProblem("zero total sample count", value, SAMPLES_ALLOWED)
        return list(value)
    raise OptionProblem("not a sample budget", value, SAMPLES_ALLOWED)


SampleCounts = Annotated[Any, BeforeValidator(_sample_counts)]
"""``n_sample_points``: one int ≥ 1 split by area, or a list of ints ≥ 0 (one per tracked body) with total > 0."""

SOURCES_ALLOWED = "'auto', [] or a list of KinematicTaxel / ContactSensor names"


def _contact_sources(value: Any) -> str | list[str]:
    if value == "auto":
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) and v.strip() for v in value):
        if len(set(value)) != len(value):
            raise OptionProblem("a sensor listed twice", value, SOURCES_ALLOWED)
        return list(value)
    raise OptionProblem("not a contact source selection", value, SOURCES_ALLOWED)


ContactSources = Annotated[Any, BeforeValidator(_contact_sources)]

DOFS_ALLOWED = "a non-empty list of distinct integers >= 0 (indices into the movable joints, URDF order)"


def _dof_indices(value: Any) -> list[int]:
    value = value.tolist() if hasattr(value, "tolist") else value
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise OptionProblem("not a list of integers", value, DOFS_ALLOWED)
    if any(v < 0 for v in value):
        raise OptionProblem("negative joint index", value, DOFS_ALLOWED)
    if len(set(value)) != len(value):
        raise OptionProblem("a joint index listed twice", value, DOFS_ALLOWED)
    return list(value)


DofIndices = Annotated[Any, BeforeValidator(_dof_indices)]


def _check_release(contact: float, release: float | None) -> float:
    """The effective release threshold (None → contact) after checking release ≤ contact."""
    if release is None:
        return contact
    if release > contact:
        raise OptionProblem("release_threshold must be <= contact_threshold", release,
                            f"<= contact_threshold ({contact!r}); may be negative", "release_threshold")
    return release


def _require_zero_offsets(model: Any, reason: str) -> None:
    for option in ("pos_offset", "euler_offset"):
        value = getattr(model, option)
        if any(v != 0.0 for v in value):
            raise OptionProblem(f"non-zero {option} has no effect on {type(model).__name__} ({reason})", value,
                                "(0, 0, 0)", option)


def _reject(keys: tuple[str, ...], problem: str, allowed: str = "remove this option") -> dict[str, tuple[str, str]]:
    return {k: (problem, allowed) for k in keys}


CROSSTALK_KEYS = ("crosstalk_strength", "crosstalk_sigma", "crosstalk_kernel")
PROBE_KEYS = ("probe_local_pos", "probe_radius", "probe_local_normal", "probe_radius_noise")
TACTILE_KEYS = ("probe_gain", "probe_gain_resample_range", "dead_taxel_probability", "dead_taxel_value_range",
                "hysteresis_strength", "hysteresis_tau", "contact_depth_query")
PIPELINE_KEYS = ("noise", "bias", "resolution", "random_walk", "delay", "jitter")
MEASURED_CHANNELS = {"KinematicTaxel": 6, "ProximityTaxel": 6, "ElastomerTaxel": 3}
"""Values per probe of a probe sensor's measured output, by type, where more than one (force then torque; marker
displacement x, y, z); 1 for the others. Per-channel options (noise, bias, resolution, random_walk) hold one value,
or one per probe and channel."""
NO_OUTPUTS = _reject(("outputs",), "output profiles exist only on the taxel sensors",
                     "remove it (ContactProbe, ContactDepthProbe, KinematicTaxel, ElastomerTaxel, ProximityTaxel and "
                     "SurfaceDistanceProbe accept outputs)")


# ------------------------------------------------------------------------------------------------ bases
class SensorOptions(ConfigModel, Located):
    """Options every sensor has (docs/models/scene.md#common-options). ``where`` names it in errors.

    Build from Python with :func:`~tactile_sim.config.loader.config_from_python` (errors as ConfigError in the
    docs/models/scene.md#common-options format); direct construction works too but raises pydantic's ValidationError.
    """

    name: Name = Field(description="a unique non-empty sensor name")
    update_period: NonNegFloat = 0.0
    history_length: NonNegInt = 0

    def default_where(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class PipelineOptions(SensorOptions):
    """Generic hardware imperfections, delay/jitter and seeding (docs/models/imperfections.md#hardware,
    docs/models/imperfections.md#validity, docs/models/imperfections.md#seeding) — every sensor except
    ContactSensor. ``noise``/``bias``/``resolution``/``random_walk``: scalar or a flat list (one per channel; the
    length is checked at build)."""

    delay: NonNegFloat = 0.0
    jitter: NonNegFloat = 0.0
    noise: NonNegFlat = 0.0
    bias: FlatFloats = 0.0
    resolution: NonNegFlat = 0.0
    random_walk: NonNegFlat = 0.0
    seed: Annotated[int, Field(ge=0, lt=2**63)] | None = None
    draw_debug: bool = False

    @model_validator(mode="after")
    def _jitter_within_delay(self):
        if self.jitter > self.delay:
            raise OptionProblem("jitter must be <= delay", self.jitter, f"0 <= jitter <= delay ({self.delay!r})",
                                "jitter")
        return self


class LinkOptions(PipelineOptions):
    """A sensor mounted on one body (``link``); offsets move probe layouts and must be zero elsewhere."""

    link: Name = Field(description="the name of the sensor's robot link or object")
    pos_offset: Vec3 = (0.0, 0.0, 0.0)
    euler_offset: Vec3 = (0.0, 0.0, 0.0)


class CandidateOptions(ConfigModel):
    """``ignore``: bodies excluded from the candidates (docs/models/scene.md#candidates)."""

    ignore: NameList = []


class ProbeOptions(LinkOptions):
    """Layout options of the probe sensors (docs/models/probes.md#probes, docs/models/layouts.md#layouts): positions,
    radii, normals (link frame, m)."""

    probe_local_pos: LayoutPositions = [[0.0, 0.0, 0.0]]
    probe_radius: NestedFloats = 0.01
    probe_local_normal: NestedFloats = [0.0, 0.0, 1.0]
    probe_radius_noise: NonNegFloat = 0.0
    debug_probe_color: Color3 = (0.2, 0.4, 1.0)
    debug_probe_center_radius: NonNegFloat = 0.0008
    debug_probe_sphere_opacity: UnitFloat = 0.3
    outputs: list[OutputProfile] = []

    @model_validator(mode="after")
    def _outputs_fit_type(self):
        check_outputs(type(self).__name__, self.outputs)
        return self


class TactileOptions(ProbeOptions, CandidateOptions):
    """The five tactile sensors: probe-level imperfections (docs/models/imperfections.md#probe-level), hysteresis
    (docs/models/imperfections.md#hysteresis), mesh backend (docs/models/scene.md#signed-distance)."""

    probe_gain: PositiveNested = 1.0
    probe_gain_resample_range: interval(False, lambda x: x > 0, "(lo, hi) with 0 < lo <= hi") | None = None
    dead_taxel_probability: UnitFloat = 0.0
    dead_taxel_value_range: interval(False) = (0.0, 0.0)
    hysteresis_strength: NonNegFloat = 0.0
    hysteresis_tau: NonNegFloat = 0.0
    contact_depth_query: ContactDepthQuery = "sdf"
    debug_contact_color: Color3 = (1.0, 0.2, 0.0)

    rejected_options: ClassVar = _reject(
        CROSSTALK_KEYS, "spatial crosstalk is modelled only on KinematicTaxel and ProximityTaxel")

    @model_validator(mode="after")
    def _hysteresis_tau_positive(self):
        if self.hysteresis_strength > 0 and self.hysteresis_tau <= 0:
            raise OptionProblem("hysteresis_tau must be > 0 when hysteresis_strength > 0", self.hysteresis_tau,
                                "> 0 s", "hysteresis_tau")
        return self


class CrosstalkOptions(ConfigModel):
    """Spatial crosstalk (docs/models/imperfections.md#crosstalk): Gaussian (strength s, sigma σ) or an explicit
    kernel, not both."""

    crosstalk_strength: UnitFloat = 0.0
    crosstalk_sigma: NonNegFloat = 0.0
    crosstalk_kernel: CrosstalkKernel | None = None

    @model_validator(mode="after")
    def _crosstalk_mode(self):
        if self.crosstalk_strength > 0 and self.crosstalk_kernel is not None:
            raise OptionProblem("crosstalk_kernel and crosstalk_strength > 0 are exclusive", self.crosstalk_strength,
                                "either a Gaussian (crosstalk_strength, crosstalk_sigma) or crosstalk_kernel",
                                "crosstalk_kernel")
        if self.crosstalk_strength > 0 and self.crosstalk_sigma <= 0:
            raise OptionProblem("crosstalk_sigma must be > 0 when crosstalk_strength > 0", self.crosstalk_sigma,
                                "> 0 m", "crosstalk_sigma")
        return self


class TrackedCloudOptions(ConfigModel):
    """Point-cloud sensors (ElastomerTaxel, ProximityTaxel): tracked bodies and their sampled clouds
    (docs/models/scene.md#sampling)."""

    track: NameList = Field(description="a list of >= 1 tracked body names")
    n_sample_points: SampleCounts = 500
    use_visual_mesh: bool = False
    sample_seed: NonNegInt = 0
    debug_point_cloud_color: Color4 = (1.0, 0.8, 0.0, 1.0)
    debug_point_cloud_radius: NonNegFloat = 0.002

    @model_validator(mode="after")
    def _tracked_bodies(self):
        if not self.track:
            raise OptionProblem("empty track", self.track, "a list of >= 1 body names", "track")
        if self.link in self.track:
            raise OptionProblem("the sensor's own link cannot be tracked", self.track,
                                f"body names other than link ({self.link!r})", "track")
        if isinstance(self.n_sample_points, list) and len(self.n_sample_points) != len(self.track):
            raise OptionProblem(f"{len(self.n_sample_points)} sample counts for {len(self.track)} tracked bodies",
                                self.n_sample_points, SAMPLES_ALLOWED, "n_sample_points")
        if getattr(self, "ignore", None):  # accepted by the class hierarchy, but these sensors sense track alone
            raise OptionProblem(f"ignore has no effect on {type(self).__name__}: it senses only the bodies in "
                                "'track'", self.ignore, "[] (list only the bodies to sense in 'track')", "ignore")
        return self


# ------------------------------------------------------------------------------------------------ sensors
class ContactDepthProbe(TactileOptions):
    """docs/models/contact_depth_probe.md#model: per-probe overlap depth (m)."""

    type: Literal["ContactDepthProbe"] = "ContactDepthProbe"


class ContactProbe(TactileOptions):
    """docs/models/contact_probe.md#model: per-probe contact flag with a Schmitt trigger. ``release_threshold`` None is
    stored as
    ``contact_threshold`` (so after validation it is always a float)."""

    type: Literal["ContactProbe"] = "ContactProbe"
    contact_threshold: NonNegFloat = 1e-4
    release_threshold: float | None = None

    @model_validator(mode="after")
    def _release_below_contact(self):
        self.release_threshold = _check_release(self.contact_threshold, self.release_threshold)
        return self


class KinematicTaxel(TactileOptions, CrosstalkOptions):
    """docs/models/kinematic_taxel.md#model: per-taxel spring–damper force and torque."""

    type: Literal["KinematicTaxel"] = "KinematicTaxel"
    normal_stiffness: NonNegFloat = 1000.0
    normal_damping: NonNegFloat = 1.0
    normal_exponent: AtLeastOne = 1.0
    shear_scalar: NonNegFloat = 1.0
    twist_scalar: NonNegFloat = 1.0


class ElastomerTaxel(TactileOptions, TrackedCloudOptions):
    """docs/models/elastomer_taxel.md#elastomer-taxel: marker displacement field of a gel skin. ``release_threshold``
    None is stored as ``contact_threshold``."""

    type: Literal["ElastomerTaxel"] = "ElastomerTaxel"
    lambda_d: PosFloat = 700.0
    lambda_s: NonNegFloat = 300.0
    dilate_scale: NonNegFloat = 1.0
    shear_scale: NonNegFloat = 1.0
    normal_exponent: AtLeastOne = 2.0
    compressibility: UnitFloat = 1.0
    elastomer_thickness: NonNegLength = 0.0
    contact_threshold: NonNegFloat = 1e-5
    release_threshold: float | None = -1e-4

    rejected_options: ClassVar = _reject(
        CROSSTALK_KEYS, "crosstalk has no effect on ElastomerTaxel",
        "remove this option (crosstalk exists on KinematicTaxel and ProximityTaxel)")

    @model_validator(mode="after")
    def _elastomer_rules(self):
        if self.probe_radius_noise != 0.0:
            raise OptionProblem("probe_radius_noise has no effect on ElastomerTaxel (the radius does not enter its "
                                "depth)", self.probe_radius_noise, "0", "probe_radius_noise")
        self.release_threshold = _check_release(self.contact_threshold, self.release_threshold)
        return self


class ProximityTaxel(TactileOptions, CrosstalkOptions, TrackedCloudOptions):
    """docs/models/proximity_taxel.md#model: per-taxel force/torque from tracked samples inside the sensing sphere."""

    type: Literal["ProximityTaxel"] = "ProximityTaxel"
    stiffness: NonNegFloat = 100.0
    shear_coupling: NonNegFloat = 0.0
    twist_scalar: NonNegFloat = 1.0
    density_scalar: PosInt = 100


class SurfaceDistanceProbe(ProbeOptions):
    """docs/models/surface_distance_probe.md#model: capped unsigned distance to the tracked bodies. ``probe_radius`` is
    the range cap (> 0, no fillers)."""

    type: Literal["SurfaceDistanceProbe"] = "SurfaceDistanceProbe"
    probe_radius: NestedFloats = 0.5
    track: NameList = []

    rejected_options: ClassVar = {
        **_reject(TACTILE_KEYS + CROSSTALK_KEYS,
                  "not accepted by SurfaceDistanceProbe (distances are exact; no gain, dead taxels, hysteresis, "
                  "crosstalk or mesh backend)", "remove this option (probe_radius_noise is the only probe-level "
                  "imperfection)"),
        "ignore": ("not accepted by SurfaceDistanceProbe (it measures only the bodies in 'track')",
                   "remove it and list only the wanted bodies in 'track'"),
    }

    @model_validator(mode="after")
    def _own_link_not_tracked(self):
        if self.link in self.track:
            raise OptionProblem("the sensor's own link cannot be tracked", self.track,
                                f"body names other than link ({self.link!r})", "track")
        return self


HEAT_ALLOWED = "a number (W/m², every cell) or nested lists of shape (nx, ny, nz) matching grid_size"


class TemperatureGrid(LinkOptions, CandidateOptions):
    """docs/models/temperature_grid.md#temperature-grid: temperature field of the sensor link on a voxel grid.
    ``properties_dict``: body name (or "default")
    → material (a name from ``materials:`` or inline properties)."""

    type: Literal["TemperatureGrid"] = "TemperatureGrid"
    properties_dict: dict[Name, MaterialRef] = {}
    ambient_temperature: AboveAbsoluteZero | None = None
    convection_coefficient: NonNegFloat | None = None
    simulate_all_link_temperatures: bool = False
    grid_size: int_vector(3, 1, "three integers >= 1 (nx, ny, nz)") = (1, 1, 1)
    heat_generation: nested_floats(None, HEAT_ALLOWED, 3) | None = None
    sensor_time_constant: NonNegFloat = 0.0
    contact_band: NonNegFloat = 1e-4
    contact_conductance: PosFloat | None = None
    contact_sample_spacing: Length | None = None
    temperature_bounds: interval(True) = (-273.15, 1000.0)
    contact_depth_weight: float = 1.0
    debug_temperature_range: interval(True) = (0.0, 100.0)

    rejected_options: ClassVar = {**_reject(
        PROBE_KEYS + TACTILE_KEYS + CROSSTALK_KEYS,
        "not accepted by TemperatureGrid (it has no probes; its cells come from grid_size)"), **NO_OUTPUTS}

    @model_validator(mode="after")
    def _thermal_rules(self):
        _require_zero_offsets(self, "the grid follows the link's collision bounding box")
        if self.contact_depth_weight != 1.0:
            raise OptionProblem("contact_depth_weight is replaced: the contact area comes from geometry",
                                self.contact_depth_weight,
                                "1.0 (omit it); tune contact_band and contact_conductance instead",
                                "contact_depth_weight")
        q = self.heat_generation
        if isinstance(q, list) and _shape(q) != self.grid_size:
            raise OptionProblem(f"heat_generation shape {_shape(q) or 'ragged'} does not match grid_size "
                                f"{self.grid_size}", q, HEAT_ALLOWED, "heat_generation")
        return self


class JointTorque(PipelineOptions):
    """docs/models/joint_torque.md#joint-torque: link-side joint torques by inverse dynamics. ``joints`` (names) or
    ``dofs_idx_local`` (indices into
    the movable joints), not both; None = all movable joints."""

    type: Literal["JointTorque"] = "JointTorque"
    robot: Name | None = None
    joints: NameList | None = None
    dofs_idx_local: DofIndices | None = None
    contact_sources: ContactSources = "auto"
    include_motor_terms: bool = False
    armature: dict[Name, NonNegFloat] = {}
    friction_velocity_scale: PosFloat = 1e-3
    velocity_source: Literal["auto", "finite_difference"] = "auto"
    acceleration_cutoff_hz: PosFloat | None = 20.0
    pos_offset: Vec3 = (0.0, 0.0, 0.0)
    euler_offset: Vec3 = (0.0, 0.0, 0.0)

    replacements: ClassVar = {"entity_idx": "robot"}
    rejected_options: ClassVar = {
        **_reject(("link", "link_idx_local"), "not accepted by JointTorque (it measures joints, not a link)",
                  "remove it; select joints with 'joints' (names) or 'dofs_idx_local'"),
        **_reject(PROBE_KEYS + TACTILE_KEYS + CROSSTALK_KEYS + ("ignore",),
                  "not accepted by JointTorque (it has no probes)"),
        **NO_OUTPUTS,
    }

    @model_validator(mode="after")
    def _joint_selection(self):
        _require_zero_offsets(self, "it measures joints")
        if self.joints is not None and self.dofs_idx_local is not None:
            raise OptionProblem("joints and dofs_idx_local are exclusive", self.dofs_idx_local,
                                "either joints (names) or dofs_idx_local (indices), not both", "dofs_idx_local")
        for option in ("joints", "dofs_idx_local"):
            if getattr(self, option) == []:
                raise OptionProblem("empty joint selection", [], "omit it (all movable joints) or list >= 1 joint",
                                    option)
        return self


class ContactSensor(SensorOptions, CandidateOptions):
    """docs/models/contact_sensor.md#model: Isaac-Lab-style link contact sensor (kinematic penalty model; no
    imperfection pipeline)."""

    type: Literal["ContactSensor"] = "ContactSensor"
    prim_path: BodyPattern = Field(description="a body name or a regular expression over body names (full match)")
    filter_prim_paths_expr: list[BodyPattern] = []
    track_air_time: bool = False
    track_friction_forces: bool = False
    track_contact_points: bool = False
    track_pose: bool = False
    force_threshold: NonNegFloat = 1.0
    contact_stiffness: PosFloat = 1e7
    contact_exponent: AtLeastOne = 1.0
    contact_damping: NonNegFloat = 0.0
    friction_coefficient: NonNegFloat = 0.5
    slip_velocity: PosFloat = 1e-3
    surface_sample_spacing: Length = 3e-3
    sample_seed: NonNegInt = 0
    contact_depth_query: ContactDepthQuery = "sdf"
    debug_vis: bool = False

    replacements: ClassVar = {"entity_idx": "prim_path", "link_idx_local": "prim_path", "filter_link_idx": "ignore"}
    rejected_options: ClassVar = {
        **_reject(PIPELINE_KEYS + ("seed",), "not accepted by ContactSensor (no imperfection pipeline, as Isaac Lab)"),
        "max_contact_data_count_per_prim": ("not accepted by ContactSensor (no contact-data capacity limit)",
                                            "remove this option"),
        **_reject(("sensor_shape_prim_expr", "filter_shape_prim_expr"),
                  "not accepted by ContactSensor (shape-level sensing is not offered)",
                  "remove it; sense and filter whole bodies with prim_path / filter_prim_paths_expr"),
        "draw_debug": ("ContactSensor names this option debug_vis", "debug_vis (true/false)"),
        "link": ("ContactSensor selects its bodies with prim_path", "prim_path (a body name or regular expression)"),
        **NO_OUTPUTS,
    }

    @model_validator(mode="after")
    def _contact_points_need_filters(self):
        if self.track_contact_points and not self.filter_prim_paths_expr:
            raise OptionProblem("track_contact_points requires filters", self.filter_prim_paths_expr,
                                ">= 1 entry in filter_prim_paths_expr (or track_contact_points: false)",
                                "filter_prim_paths_expr")
        return self


SENSOR_CLASSES: tuple[type[SensorOptions], ...] = (
    ContactProbe, ContactDepthProbe, KinematicTaxel, ElastomerTaxel, ProximityTaxel, SurfaceDistanceProbe,
    TemperatureGrid, JointTorque, ContactSensor,
)
SENSOR_TYPES: dict[str, type[SensorOptions]] = {cls.__name__: cls for cls in SENSOR_CLASSES}
"""Sensor class name (the YAML ``type:``) → option model."""

SensorConfig = Annotated[Union[SENSOR_CLASSES], Field(discriminator="type")]
"""One entry of ``sensors:``, selected by its ``type:`` (the sensor class name)."""
