"""Unit and one-line meaning of every configuration option, for the generated option reference and JSON Schema.

Types, defaults and numeric ranges come from the option models themselves (:mod:`.reference` reads them); this
table adds what a model cannot say: the unit, the meaning and, for options whose type is a custom validator (nested
per-probe arrays, sample budgets, …), the allowed values in words. Keys are an option name, or
``"<Model>.<option>"`` where one model's option means something else. A test fails when an option of any model has
no entry here, so the reference cannot silently miss a new option.
"""

from __future__ import annotations

from typing import NamedTuple


class OptionDoc(NamedTuple):
    """unit ("" for none), meaning (one line), allowed (only where the model's type cannot state it)."""

    unit: str
    meaning: str
    allowed: str = ""


READING = "unit of the reading"
PER_CHANNEL = "a number, or a flat list with one value per channel"
PER_PROBE = "a number, or nested lists shaped like the layout (one value per probe)"

OPTION_DOCS: dict[str, OptionDoc] = {
    # ---- top level and suite
    "SuiteConfig.suite": OptionDoc("", "engine step, device, batching and shared settings of the whole suite"),
    "SuiteConfig.robot": OptionDoc("", "the robot description (URDF); omit for a scene of declared objects only"),
    "SuiteConfig.materials": OptionDoc("", "named thermal materials that objects and TemperatureGrid sensors refer to",
                                       "a mapping of material names to material sections"),
    "SuiteConfig.objects": OptionDoc("", "bodies besides the robot, with a fixed pose or posed by TF",
                                     "a list of object sections with distinct names"),
    "SuiteConfig.sensors": OptionDoc("", "the sensors, each selected by its `type`",
                                     "a list of sensor sections with distinct names"),
    "dt": OptionDoc("s", "engine step: the time between two suite steps (give `dt` or `rate`, not both)"),
    "rate": OptionDoc("Hz", "engine step rate, 1/`dt` (give `dt` or `rate`, not both)"),
    "device": OptionDoc("", "where tensors live and kernels run: `cpu`, `cuda`, `cuda:<i>` or `auto` (CUDA when "
                            "available)", "cpu, cuda, cuda:<i> or auto"),
    "dtype": OptionDoc("", "floating-point precision of every tensor"),
    "n_envs": OptionDoc("", "number of independent environments evaluated as one batch; 0 = unbatched (reads have "
                            "no env axis)"),
    "SuiteSettings.seed": OptionDoc("", "scene seed from which every sensor's random streams derive"),
    "world_frame": OptionDoc("", "name of the fixed world frame (TF frame of poses and world-frame outputs)"),
    "gravity": OptionDoc("m/s²", "gravity vector in the world frame (inverse dynamics of JointTorque)"),
    "sdf_cell_size": OptionDoc("m", "cell size of the signed-distance grids built for meshes"),
    "sdf_max_nodes": OptionDoc("", "largest number of grid nodes per axis of a mesh SDF grid (the cell grows to fit)"),
    "sdf_padding": OptionDoc("m", "margin around a mesh's bounding box covered by its SDF grid"),
    "sdf_cache_dir": OptionDoc("", "folder where mesh SDF grids are cached by content hash (default: the "
                                   "`TACTILE_SIM_CACHE` environment variable, else no cache)",
                             "a folder path (created when missing), or null"),
    "lumped_sample_spacing": OptionDoc("m", "surface sample spacing of bodies whose temperature is lumped (thermal)"),
    "max_memory": OptionDoc("bytes", "cap on the estimated memory of all sensors × n_envs, checked before anything "
                                     "is allocated (default: half of the machine's or the container's memory)",
                            "an integer > 0 or a text such as '8 GB' or '512 MiB', or null for the default"),
    # ---- robot
    "urdf": OptionDoc("", "the robot's URDF file (path relative to the YAML file, `file://` or `package://`)"),
    "inertia_check": OptionDoc("", "what a physically invalid URDF `<inertial>` is: an error naming file:line, or a "
                                   "warning (the values are used as given)"),
    "search_paths": OptionDoc("", "extra folders searched for `package://` meshes of the URDF",
                              "a list of existing folders"),
    # ---- materials
    "base_temperature": OptionDoc("°C", "initial temperature of bodies of this material"),
    "conductivity": OptionDoc("W/(m·K)", "thermal conductivity k"),
    "density": OptionDoc("kg/m³", "mass density ρ"),
    "specific_heat": OptionDoc("J/(kg·K)", "specific heat capacity c"),
    "emissivity": OptionDoc("", "emissivity ε of the surface for radiation to the ambient"),
    # ---- objects and shapes
    "ObjectConfig.name": OptionDoc("", "unique body name, used by sensors (`link`, `track`, `ignore`) and TF"),
    "geometry": OptionDoc("", "collision shapes of the object, each with an `origin` in the object frame",
                          "a list of shape sections"),
    "pose": OptionDoc("", "fixed pose of the object in `frame` (omit for an object posed by TF)"),
    "frame": OptionDoc("", "frame in which `pose` is given (default: the suite's world frame)"),
    "follow": OptionDoc("", "TF frame whose pose the object takes every step (instead of `pose`)"),
    "material": OptionDoc("", "thermal material of the object (TemperatureGrid contact)",
                          "a name from materials:, or a material section"),
    "velocity": OptionDoc("", "constant twist of a fixed-pose object (linear m/s, angular rad/s, world frame); "
                              "per-step twists come from `SensorSuite.update(object_twists=…)`"),
    "sphere": OptionDoc("", "a sphere: `radius` (m)"),
    "box": OptionDoc("", "a box centred on its origin: `size` = 3 edge lengths (m)"),
    "cylinder": OptionDoc("", "a cylinder along z centred on its origin: `radius`, `length` (m)"),
    "capsule": OptionDoc("", "a capsule along z: `radius`, `length` between the cap centres (m)"),
    "plane": OptionDoc("", "a half-space whose surface is z = 0 of the shape frame, solid below"),
    "mesh": OptionDoc("", "a triangle mesh file (`file`, optional `scale`)"),
    "origin": OptionDoc("", "pose of the shape in its body frame (`xyz` m, `rpy` rad)"),
    "radius": OptionDoc("m", "radius"),
    "size": OptionDoc("m", "edge lengths along x, y, z"),
    "length": OptionDoc("m", "length along z (capsule: between the cap centres)"),
    "MeshSpec.file": OptionDoc("", "mesh file (STL, OBJ, PLY, DAE …; path, `file://` or `package://`)"),
    "scale": OptionDoc("", "scale factor, one for all axes or one per axis"),
    "xyz": OptionDoc("m", "translation"),
    "rpy": OptionDoc("rad", "roll, pitch, yaw (fixed-axis x, y, z rotations, as URDF)"),
    "quat": OptionDoc("", "rotation as a unit quaternion (x, y, z, w); instead of `rpy`"),
    "linear": OptionDoc("m/s", "linear velocity of the body origin, world frame"),
    "angular": OptionDoc("rad/s", "angular velocity, world frame"),
    # ---- layouts
    "FileLayout.file": OptionDoc("", "layout file: a `.npy` array (N, C) or (M, N, C), or a `.csv` / `.txt` file with "
                                     "one probe per line; columns x, y, z [, radius [, nx, ny, nz]] (C = 3, 4 or 7), "
                                     "or in a CSV any order under a header line naming them (and `row`, `col` to "
                                     "place probes in a grid); link frame, m"),
    "grid": OptionDoc("", "a regular planar grid of probes"),
    "lo": OptionDoc("m", "one corner of the grid, link frame"),
    "hi": OptionDoc("m", "the opposite corner of the grid, link frame"),
    "PlanarGridSpec.normal": OptionDoc("", "outward normal shared by every probe of the grid, link frame"),
    "nx": OptionDoc("", "number of columns (along x of the grid)"),
    "ny": OptionDoc("", "number of rows (along y of the grid)"),
    "conforming": OptionDoc("", "taxels spread over the link's collision surface"),
    "spacing": OptionDoc("m", "target distance between neighbouring taxels"),
    "facing": OptionDoc("", "keep only surface where the outward normal points along this direction (link frame)",
                        "3 finite numbers, or null for every direction"),
    "min_cos": OptionDoc("", "smallest cosine between the surface normal and `facing` that is kept"),
    "ConformingSpec.box": OptionDoc("m", "keep only surface inside this (lo, hi) box, link frame",
                                    "two (x, y, z) corners, or null for no box"),
    "ConformingSpec.seed": OptionDoc("", "seed of the surface sampling that places the taxels"),
    "urdf_tactile": OptionDoc("", "name of a `<sensor>` of the URDF's `<tactile>` extension whose taxels are used"),
    # ---- options of every sensor
    "type": OptionDoc("", "the sensor model"),
    "name": OptionDoc("", "unique sensor name: used in errors, topics and the derivation of the sensor's seed"),
    "update_period": OptionDoc("s", "time between two evaluations; rounded to a whole number of engine steps, "
                                    "0 = every step"),
    "history_length": OptionDoc("", "number of past readings returned by a read, newest first (0 = the latest "
                                    "alone, without a history axis)"),
    "delay": OptionDoc("s", "latency of the measured reading"),
    "jitter": OptionDoc("s", "random extra latency, uniform in [0, jitter], drawn per evaluation (≤ delay)"),
    "noise": OptionDoc(READING, "standard deviation of white Gaussian noise added to each reading", PER_CHANNEL),
    "bias": OptionDoc(READING, "constant offset added to each reading", PER_CHANNEL),
    "resolution": OptionDoc(READING, "quantisation step of the reading (0 = none; rounds half to even)", PER_CHANNEL),
    "random_walk": OptionDoc(READING, "standard deviation per evaluation of a drift that accumulates until a reset",
                             PER_CHANNEL),
    "seed": OptionDoc("", "the sensor's own seed (default: derived from the scene seed and the sensor name)"),
    "draw_debug": OptionDoc("", "draw the sensor in the visualisation (never changes a reading)"),
    "link": OptionDoc("", "the robot link or object the sensor is mounted on"),
    "pos_offset": OptionDoc("m", "translation of the probe layout in the link frame (probe sensors; else zero)"),
    "euler_offset": OptionDoc("deg", "rotation of the probe layout, x-y-z Euler angles (probe sensors; else zero)"),
    "ignore": OptionDoc("", "bodies excluded from what the sensor senses"),
    "ElastomerTaxel.ignore": OptionDoc("", "must stay empty: the sensor senses only the bodies in `track`", "[]"),
    "ProximityTaxel.ignore": OptionDoc("", "must stay empty: the sensor senses only the bodies in `track`", "[]"),
    # ---- probe sensors
    "probe_local_pos": OptionDoc("m", "probe positions in the link frame: a list or nested lists of (x, y, z), or "
                                      "a layout (`file`, `grid`, `conforming`, `urdf_tactile`)",
                                 "(x, y, z) triples in a flat list or a grid of lists, or a layout mapping"),
    "probe_radius": OptionDoc("m", "sensing radius of each probe; 0 marks a filler probe that always reads 0",
                              PER_PROBE + " (>= 0)"),
    "SurfaceDistanceProbe.probe_radius": OptionDoc("m", "distance cap of each probe: farther surfaces read this value",
                                                   PER_PROBE + " (> 0)"),
    "probe_local_normal": OptionDoc("", "outward unit normal of each probe, link frame (normalised when read)",
                                    "(x, y, z) for all probes, or one per probe shaped like the layout"),
    "probe_radius_noise": OptionDoc("m", "half-width of a uniform perturbation of each probe radius, drawn per "
                                         "evaluation (measured branch)"),
    "probe_gain": OptionDoc("", "multiplicative gain of each probe on the measured branch", PER_PROBE + " (> 0)"),
    "probe_gain_resample_range": OptionDoc("", "redraw every probe gain uniformly in (lo, hi) at each reset"),
    "dead_taxel_probability": OptionDoc("", "probability that a probe is dead after a reset (it then reads a "
                                            "constant)"),
    "dead_taxel_value_range": OptionDoc(READING, "range of the constant a dead probe reads, drawn at each reset"),
    "hysteresis_strength": OptionDoc("", "strength of the viscoelastic hysteresis of the reading (0 = none)"),
    "hysteresis_tau": OptionDoc("s", "time constant of the hysteresis (> 0 when the strength is > 0)"),
    "contact_depth_query": OptionDoc("", "how distances to meshes are computed: `sdf` (cached grid) or `raycast` "
                                         "(exact; `exact` is accepted as its alias)", "sdf, raycast or exact"),
    "debug_probe_color": OptionDoc("", "RGB colour of the probes in the visualisation"),
    "debug_probe_center_radius": OptionDoc("m", "radius of the probe centre markers in the visualisation"),
    "debug_probe_sphere_opacity": OptionDoc("", "opacity of the sensing spheres in the visualisation"),
    "debug_contact_color": OptionDoc("", "RGB colour of probes in contact in the visualisation"),
    # ---- output profiles (taxel sensors)
    "outputs": OptionDoc("", "further messages published from each evaluation, shaped like other drivers' (a list "
                             "of profiles; the TaxelArray is always published)",
                         "a list of pointcloud, wrench or tactile_state mappings"),
    "profile": OptionDoc("", "which message the output publishes"),
    "topic": OptionDoc("", "topic of the output (default: the profile's); `~/x` is under the node, remappable",
                       "'~/a/b' or '/a/b' (ROS name tokens), or null for the default"),
    "channels": OptionDoc("", "per-taxel fields after x, y, z (default: every channel of the sensor type)",
                          "distinct channel names of the sensor type (see the message reference)"),
    "point": OptionDoc("m", "point of the link frame about which the summed torque is taken"),
    "value": OptionDoc("", "the per-taxel value in the channel (default by type: contact, depth, force_normal, "
                           "indentation or proximity)", "a channel name of the sensor type, or null"),
    "channel_name": OptionDoc("", "name of the sensor's ChannelFloat32 (default: the sensor name, as the URDF "
                                  "`<sensor>`)"),
    "raw": OptionDoc("", "encode the value as raw counts, as a real skin's ADC reports it"),
    "rest": OptionDoc("counts", "counts at value 0", "a finite number"),
    "RawCounts.gain": OptionDoc("counts per unit", "counts per unit of the value", "a finite number"),
    "saturation": OptionDoc("counts", "largest count; counts are rounded and clamped to [0, saturation]"),
    "invert": OptionDoc("", "counts fall as the value grows (rest − gain·value)"),
    # ---- per model
    "contact_threshold": OptionDoc("m", "overlap depth at which a probe switches to contact"),
    "release_threshold": OptionDoc("m", "overlap depth below which a probe in contact is released (≤ "
                                        "`contact_threshold`; default: equal to it)", "a number <= contact_threshold"),
    "ElastomerTaxel.contact_threshold": OptionDoc("m", "depth at which a tracked sample sticks to the gel (anchor)"),
    "ElastomerTaxel.release_threshold": OptionDoc("m", "depth below which a stuck sample lets go (≤ "
                                                       "`contact_threshold`)", "a number <= contact_threshold"),
    "crosstalk_strength": OptionDoc("", "fraction of each taxel's reading spread to its grid neighbours (Gaussian)"),
    "crosstalk_sigma": OptionDoc("m", "width of the Gaussian crosstalk kernel on the grid"),
    "crosstalk_kernel": OptionDoc("", "explicit crosstalk kernel over grid neighbours (instead of the Gaussian)",
                                  "a 2-D (h, w) array, or (2|3, h, w) per channel group; h, w odd"),
    "normal_stiffness": OptionDoc("N/m^e", "spring constant k_n of the normal force k_n·depth^e"),
    "normal_damping": OptionDoc("N·s/m^(e+1)", "damping c_n of the normal force, scaled by depth^e"),
    "normal_exponent": OptionDoc("", "exponent e of the normal force law (1 = linear, 1.5 ≈ Hertz)"),
    "ElastomerTaxel.normal_exponent": OptionDoc("", "exponent p of the depth in the dilation field"),
    "shear_scalar": OptionDoc("N·s/m", "viscous coefficient k_t of the tangential force"),
    "twist_scalar": OptionDoc("N·m·s/rad", "viscous coefficient k_tw of the torque about the probe normal"),
    "track": OptionDoc("", "bodies the sensor senses (point clouds are sampled on them)"),
    "SurfaceDistanceProbe.track": OptionDoc("", "bodies whose surfaces are measured (empty = every other body)"),
    "n_sample_points": OptionDoc("", "points sampled on the tracked bodies: a total split by area, or one count "
                                     "per tracked body", "an integer >= 1, or one integer >= 0 per tracked body "
                                                         "with a positive total"),
    "use_visual_mesh": OptionDoc("", "sample the tracked clouds from visual instead of collision geometry"),
    "sample_seed": OptionDoc("", "seed of the surface sampling"),
    "debug_point_cloud_color": OptionDoc("", "RGBA colour of the tracked point cloud in the visualisation"),
    "debug_point_cloud_radius": OptionDoc("m", "marker radius of the tracked point cloud in the visualisation"),
    "lambda_d": OptionDoc("m⁻²", "decay rate λ_d of the dilation (normal press) field"),
    "lambda_s": OptionDoc("m⁻²", "decay rate λ_s of the shear field"),
    "dilate_scale": OptionDoc("m", "scale of the in-plane marker displacement caused by pressing"),
    "shear_scale": OptionDoc("", "scale of the marker displacement caused by dragged (stuck) samples"),
    "compressibility": OptionDoc("", "1 = free in-plane dilation; 0 = incompressible gel (displacement follows the "
                                     "bonded layer profile)"),
    "elastomer_thickness": OptionDoc("m", "gel thickness h of the bonded layer (0 = thick gel, no layer profile)"),
    "stiffness": OptionDoc("N/m", "spring constant k of the proximity force per tracked sample inside a sphere"),
    "shear_coupling": OptionDoc("N·s/m²", "coefficient k_s of the shear channel (0 disables it)"),
    "density_scalar": OptionDoc("", "normalisation of the proximity force by the sample count inside a sphere"),
    "properties_dict": OptionDoc("", "body name → thermal material (`default` for bodies without an entry)",
                                 "a mapping of body names (or 'default') to a material name or properties"),
    "ambient_temperature": OptionDoc("°C", "ambient temperature for convection and radiation (shared; default 21)"),
    "convection_coefficient": OptionDoc("W/(m²·K)", "convection coefficient h to the ambient (shared; default 1)"),
    "simulate_all_link_temperatures": OptionDoc("", "also give every other body a lumped temperature"),
    "grid_size": OptionDoc("", "voxel grid (nx, ny, nz) over the link's bounding box"),
    "heat_generation": OptionDoc("W/m²", "heat generated per cell, per unit of the cell's x–y footprint",
                                 "a number or nested lists shaped (nx, ny, nz)"),
    "sensor_time_constant": OptionDoc("s", "first-order lag τ_s of the sensing element (0 = none)"),
    "contact_band": OptionDoc("m", "a surface sample touches a body whose signed distance there is below this"),
    "contact_conductance": OptionDoc("W/(m²·K)", "interface conductance in series with bulk conduction (default: a "
                                                 "perfect interface)"),
    "contact_sample_spacing": OptionDoc("m", "surface sample spacing of the grid link (default: a quarter of the "
                                             "smallest cell edge)"),
    "temperature_bounds": OptionDoc("°C", "final clamp of the reading (low < high)"),
    "contact_depth_weight": OptionDoc("", "replaced: must stay 1 (contact area comes from geometry; use "
                                          "`contact_band` / `contact_conductance`)", "1"),
    "debug_temperature_range": OptionDoc("°C", "colour range of the visualisation"),
    "JointTorque.robot": OptionDoc("", "name of the robot description (the only one today)"),
    "joints": OptionDoc("", "joints whose torque is reported, by name (default: every movable joint, URDF order)"),
    "dofs_idx_local": OptionDoc("", "joints by index into the movable joints (instead of `joints`)",
                                "a non-empty list of distinct integers >= 0"),
    "contact_sources": OptionDoc("", "KinematicTaxel / ContactSensor sensors whose forces load the links",
                                 "'auto', [] or a list of KinematicTaxel / ContactSensor names"),
    "include_motor_terms": OptionDoc("", "add armature, viscous and Coulomb friction terms"),
    "armature": OptionDoc("kg·m² or kg", "joint name → reflected rotor inertia (used with motor terms)",
                          "a mapping of joint names to numbers >= 0"),
    "friction_velocity_scale": OptionDoc("rad/s or m/s", "velocity that smooths the Coulomb friction sign"),
    "velocity_source": OptionDoc("", "joint velocities: `auto` (from the JointState when present) or "
                                     "`finite_difference`"),
    "acceleration_cutoff_hz": OptionDoc("Hz", "cut-off of the filter on estimated joint accelerations (null = "
                                              "none)"),
    "prim_path": OptionDoc("", "body name or regular expression (full match) selecting the sensor bodies"),
    "filter_prim_paths_expr": OptionDoc("", "bodies (names or regular expressions) that get their own force "
                                            "column", "a list of body names or regular expressions (full match)"),
    "track_air_time": OptionDoc("", "keep the air and contact timers"),
    "track_friction_forces": OptionDoc("", "expose the friction force buffers"),
    "track_contact_points": OptionDoc("", "expose the mean contact point per filter column"),
    "track_pose": OptionDoc("", "expose the pose of each sensor body"),
    "force_threshold": OptionDoc("N", "normal force above which a body counts as in contact (timers)"),
    "contact_stiffness": OptionDoc("N/m^(2+e)", "penalty pressure per penetration^e"),
    "contact_exponent": OptionDoc("", "exponent e of the penalty pressure law"),
    "contact_damping": OptionDoc("N·s/m^(3+e)", "damping of the penalty pressure"),
    "friction_coefficient": OptionDoc("", "Coulomb friction coefficient μ"),
    "slip_velocity": OptionDoc("m/s", "sliding speed at which friction reaches μ times the normal load"),
    "surface_sample_spacing": OptionDoc("m", "spacing of the surface samples on each sensor body"),
    "debug_vis": OptionDoc("", "draw the sensor in the visualisation (Isaac Lab's name for `draw_debug`)"),
}
"""Option name (or ``Model.option``) → its :class:`OptionDoc`."""


def option_doc(model: str, option: str) -> OptionDoc | None:
    """The entry for ``option`` of the model named ``model``: its own override, else the shared one."""
    return OPTION_DOCS.get(f"{model}.{option}") or OPTION_DOCS.get(option)


SENSOR_PURPOSE: dict[str, tuple[str, str]] = {
    "ContactDepthProbe": ("how deep each probe's sensing sphere overlaps the nearest geometry (m)",
                          "contact_depth_probe.md"),
    "ContactProbe": ("a per-probe contact flag with separate contact and release thresholds",
                     "contact_probe.md"),
    "KinematicTaxel": ("per-taxel spring-damper force and torque from overlap and relative motion (N, N·m)",
                       "kinematic_taxel.md"),
    "ElastomerTaxel": ("marker displacement of a soft gel skin, as a vision-based tactile sensor sees it (m)",
                       "elastomer_taxel.md"),
    "ProximityTaxel": ("per-taxel force and torque from tracked surface samples inside each sensing sphere",
                       "proximity_taxel.md"),
    "SurfaceDistanceProbe": ("distance from each probe to the nearest tracked surface, capped (m)",
                             "surface_distance_probe.md"),
    "TemperatureGrid": ("temperature field of a link on a voxel grid, read through a sensing element (°C)",
                        "temperature_grid.md"),
    "JointTorque": ("link-side joint torques by inverse dynamics of the observed motion plus contacts (N·m, N)",
                    "joint_torque.md"),
    "ContactSensor": ("net contact force of whole bodies from a penalty model, Isaac Lab style (N)",
                      "contact_sensor.md"),
}
"""Sensor type → (what it measures, its model page under docs/models/)."""
