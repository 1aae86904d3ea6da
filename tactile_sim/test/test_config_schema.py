"""Config schema: a full valid YAML with every sensor type parses with the documented option names and defaults
(the option tables of docs/models/), layouts/shapes/poses take their typed forms, and the Python API agrees."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from helpers_config import write_yaml
from tactile_sim.config import (
    SENSOR_TYPES,
    ConformingLayout,
    ContactDepthProbe,
    ContactProbe,
    ContactSensor,
    ElastomerTaxel,
    FileLayout,
    GridLayout,
    JointTorque,
    KinematicTaxel,
    ProximityTaxel,
    SurfaceDistanceProbe,
    TemperatureGrid,
    TemperatureProperties,
    SuiteConfig,
    SuiteSettings,
    UrdfTactileLayout,
    check_suite,
    config_from_python,
    evaluation_period,
    evaluation_steps,
    load_config,
)
from tactile_sim.errors import ConfigError

URDF = """<robot name="r"><link name="base"/></robot>"""
MESH = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"

FULL_YAML = """
suite:
  rate: 200
  device: auto
  dtype: float64
  n_envs: 4
  seed: 7
robot:
  urdf: robot.urdf
  search_paths: [meshes]
materials:
  steel: {conductivity: 16, specific_heat: 500}
objects:
  - name: ball
    geometry:
      - sphere: {radius: 0.02}
        origin: {xyz: [0, 0, 0.01], rpy: [0, 0, 1.5707963]}
      - box: {size: [0.1, 0.2, 0.3]}
      - cylinder: {radius: 0.01, length: 0.05}
      - capsule: {radius: 0.01, length: 0}
      - mesh: {file: meshes/tri.obj, scale: 0.5}
    pose: {xyz: [0, 0, 0.1], quat: [0, 0, 0.0, 1.0004]}
    material: steel
    velocity: {linear: [0.1, 0, 0]}
  - name: floor
    geometry: [{plane: }]
    frame: table
  - name: cup
    follow: cup_frame
    material: {base_temperature: 80}
sensors:
  - {type: ContactProbe, name: cp, link: pad}
  - {type: ContactDepthProbe, name: cdp, link: pad}
  - {type: KinematicTaxel, name: kt, link: pad}
  - {type: ElastomerTaxel, name: et, link: pad, track: [ball]}
  - {type: ProximityTaxel, name: pt, link: pad, track: [ball, cup]}
  - {type: SurfaceDistanceProbe, name: sdp, link: pad}
  - {type: TemperatureGrid, name: tg, link: pad}
  - {type: JointTorque, name: jt}
  - {type: ContactSensor, name: cs, prim_path: "finger_.*"}
"""

# --- independent truth: the option tables of the model specification (and the seeds' debug options), typed by hand ------
COMMON = {"name", "update_period", "history_length"}
PIPELINE = COMMON | {"delay", "jitter", "noise", "bias", "resolution", "random_walk", "seed", "draw_debug"}
LINK = PIPELINE | {"link", "pos_offset", "euler_offset"}
PROBE = LINK | {"probe_local_pos", "probe_radius", "probe_local_normal", "probe_radius_noise", "debug_probe_color",
                "debug_probe_center_radius", "debug_probe_sphere_opacity", "outputs"}
TACTILE = PROBE | {"ignore", "probe_gain", "probe_gain_resample_range", "dead_taxel_probability",
                   "dead_taxel_value_range", "hysteresis_strength", "hysteresis_tau", "contact_depth_query",
                   "debug_contact_color"}
CROSSTALK = {"crosstalk_strength", "crosstalk_sigma", "crosstalk_kernel"}
CLOUD = {"track", "n_sample_points", "use_visual_mesh", "sample_seed", "debug_point_cloud_color",
         "debug_point_cloud_radius"}
EXPECTED_OPTIONS = {
    "ContactProbe": TACTILE | {"contact_threshold", "release_threshold"},
    "ContactDepthProbe": TACTILE,
    "KinematicTaxel": TACTILE | CROSSTALK | {"normal_stiffness", "normal_damping", "normal_exponent", "shear_scalar",
                                              "twist_scalar"},
    "ElastomerTaxel": TACTILE | CLOUD | {"lambda_d", "lambda_s", "dilate_scale", "shear_scale", "normal_exponent",
                                         "compressibility", "elastomer_thickness", "contact_threshold",
                                         "release_threshold"},
    "ProximityTaxel": TACTILE | CROSSTALK | CLOUD | {"stiffness", "shear_coupling", "twist_scalar", "density_scalar"},
    "SurfaceDistanceProbe": PROBE | {"track"},
    "TemperatureGrid": LINK | {"ignore", "properties_dict", "ambient_temperature", "convection_coefficient",
                               "simulate_all_link_temperatures", "grid_size", "heat_generation",
                               "sensor_time_constant", "contact_band", "contact_conductance",
                               "contact_sample_spacing", "temperature_bounds", "contact_depth_weight",
                               "debug_temperature_range"},
    "JointTorque": PIPELINE | {"robot", "joints", "dofs_idx_local", "contact_sources", "include_motor_terms",
                               "armature", "friction_velocity_scale", "velocity_source", "acceleration_cutoff_hz",
                               "pos_offset", "euler_offset"},
    "ContactSensor": COMMON | {"prim_path", "filter_prim_paths_expr", "ignore", "track_air_time",
                               "track_friction_forces", "track_contact_points", "track_pose", "force_threshold",
                               "contact_stiffness", "contact_exponent", "contact_damping", "friction_coefficient",
                               "slip_velocity", "surface_sample_spacing", "sample_seed", "contact_depth_query",
                               "debug_vis"},
}

PIPELINE_DEFAULTS = dict(update_period=0.0, history_length=0, delay=0.0, jitter=0.0, noise=0.0, bias=0.0,
                         resolution=0.0, random_walk=0.0, seed=None, draw_debug=False)
LINK_DEFAULTS = dict(PIPELINE_DEFAULTS, pos_offset=(0.0, 0.0, 0.0), euler_offset=(0.0, 0.0, 0.0))
TACTILE_DEFAULTS = dict(LINK_DEFAULTS, ignore=[], outputs=[], probe_local_pos=[[0.0, 0.0, 0.0]], probe_radius=0.01,
                        probe_local_normal=[0.0, 0.0, 1.0], probe_radius_noise=0.0, probe_gain=1.0,
                        probe_gain_resample_range=None, dead_taxel_probability=0.0, dead_taxel_value_range=(0.0, 0.0),
                        hysteresis_strength=0.0, hysteresis_tau=0.0, contact_depth_query="sdf",
                        debug_probe_color=(0.2, 0.4, 1.0), debug_probe_center_radius=0.0008,
                        debug_probe_sphere_opacity=0.3, debug_contact_color=(1.0, 0.2, 0.0))
CROSSTALK_DEFAULTS = dict(crosstalk_strength=0.0, crosstalk_sigma=0.0, crosstalk_kernel=None)
CLOUD_DEFAULTS = dict(n_sample_points=500, use_visual_mesh=False, sample_seed=0,
                      debug_point_cloud_color=(1.0, 0.8, 0.0, 1.0), debug_point_cloud_radius=0.002)
EXPECTED_DEFAULTS = {
    "cp": dict(TACTILE_DEFAULTS, contact_threshold=1e-4, release_threshold=1e-4),  # None → = contact_threshold
    "cdp": TACTILE_DEFAULTS,
    "kt": dict(TACTILE_DEFAULTS, **CROSSTALK_DEFAULTS, normal_stiffness=1000.0, normal_damping=1.0,
               normal_exponent=1.0, shear_scalar=1.0, twist_scalar=1.0),
    "et": dict(TACTILE_DEFAULTS, **CLOUD_DEFAULTS, lambda_d=700.0, lambda_s=300.0, dilate_scale=1.0,
               shear_scale=1.0, normal_exponent=2.0, compressibility=1.0, elastomer_thickness=0.0,
               contact_threshold=1e-5, release_threshold=-1e-4),
    "pt": dict(TACTILE_DEFAULTS, **CROSSTALK_DEFAULTS, **CLOUD_DEFAULTS, stiffness=100.0, shear_coupling=0.0,
               twist_scalar=1.0, density_scalar=100),
    "sdp": dict(LINK_DEFAULTS, probe_local_pos=[[0.0, 0.0, 0.0]], probe_radius=0.5, probe_local_normal=[0.0, 0.0, 1.0],
                probe_radius_noise=0.0, track=[], outputs=[]),
    "tg": dict(LINK_DEFAULTS, ignore=[], properties_dict={}, ambient_temperature=None, convection_coefficient=None,
               simulate_all_link_temperatures=False, grid_size=(1, 1, 1), heat_generation=None,
               sensor_time_constant=0.0, contact_band=1e-4, contact_conductance=None, contact_sample_spacing=None,
               temperature_bounds=(-273.15, 1000.0), contact_depth_weight=1.0, debug_temperature_range=(0.0, 100.0)),
    "jt": dict(PIPELINE_DEFAULTS, robot=None, joints=None, dofs_idx_local=None, contact_sources="auto",
               include_motor_terms=False, armature={}, friction_velocity_scale=1e-3, velocity_source="auto",
               acceleration_cutoff_hz=20.0, pos_offset=(0.0, 0.0, 0.0), euler_offset=(0.0, 0.0, 0.0)),
    "cs": dict(update_period=0.0, history_length=0, filter_prim_paths_expr=[], ignore=[], track_air_time=False,
               track_friction_forces=False, track_contact_points=False, track_pose=False, force_threshold=1.0,
               contact_stiffness=1e7, contact_exponent=1.0, contact_damping=0.0, friction_coefficient=0.5,
               slip_velocity=1e-3, surface_sample_spacing=3e-3, sample_seed=0, contact_depth_query="sdf",
               debug_vis=False),
}


@pytest.fixture
def full_config(tmp_path):
    (tmp_path / "robot.urdf").write_text(URDF)
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "tri.obj").write_text(MESH)
    return load_config(write_yaml(tmp_path, FULL_YAML, "full.yaml")), tmp_path


def test_every_sensor_type_exposes_exactly_the_spec_option_names():
    assert set(SENSOR_TYPES) == set(EXPECTED_OPTIONS)
    for name, cls in SENSOR_TYPES.items():
        assert set(cls.model_fields) - {"type"} == EXPECTED_OPTIONS[name], name


def test_full_yaml_parses_with_spec_defaults(full_config):
    config, _ = full_config
    types = [type(s) for s in config.sensors]
    assert types == [ContactProbe, ContactDepthProbe, KinematicTaxel, ElastomerTaxel, ProximityTaxel,
                     SurfaceDistanceProbe, TemperatureGrid, JointTorque, ContactSensor]
    for sensor in config.sensors:
        expected = EXPECTED_DEFAULTS[sensor.name]
        got = {k: getattr(sensor, k) for k in expected}
        assert got == expected, sensor.name
    et = config.sensors[3]
    assert et.track == ["ball"] and config.sensors[4].track == ["ball", "cup"]
    assert config.sensors[8].prim_path == "finger_.*"


def test_full_yaml_suite_robot_objects_and_materials(full_config):
    config, folder = full_config
    s = config.suite
    assert (s.dt, s.rate, s.step_dt) == (None, 200.0, 1.0 / 200.0)
    assert (s.device, s.dtype, s.n_envs, s.seed, s.world_frame) == ("auto", "float64", 4, 7, "world")
    assert s.gravity == (0.0, 0.0, -9.81)
    assert (s.sdf_cell_size, s.sdf_max_nodes, s.sdf_padding, s.sdf_cache_dir, s.lumped_sample_spacing) == (
        2e-3, 128, 0.01, None, 5e-3)
    assert config.robot.urdf == (folder / "robot.urdf").resolve()
    assert config.robot.search_paths == [(folder / "meshes").resolve()]
    steel = config.materials["steel"]
    assert (steel.base_temperature, steel.conductivity, steel.density, steel.specific_heat, steel.emissivity) == (
        21.0, 16.0, 1000.0, 500.0, 0.9)

    ball, floor, cup = config.objects
    assert [g.kind for g in ball.geometry] == ["sphere", "box", "cylinder", "capsule", "mesh"]
    sphere, box, cyl, cap, mesh = (g.spec for g in ball.geometry)
    assert sphere.radius == 0.02 and box.size == (0.1, 0.2, 0.3)
    assert (cyl.radius, cyl.length, cap.radius, cap.length) == (0.01, 0.05, 0.01, 0.0)
    assert mesh.file == (folder / "meshes" / "tri.obj").resolve() and mesh.scale == (0.5, 0.5, 0.5)
    assert ball.geometry[0].origin.xyz == (0.0, 0.0, 0.01) and ball.geometry[0].origin.rpy == (0.0, 0.0, 1.5707963)
    assert ball.geometry[1].origin.xyz == (0.0, 0.0, 0.0)
    # a quaternion within 1e-3 of unit norm is normalised
    assert ball.pose.quat == pytest.approx((0.0, 0.0, 0.0, 1.0), abs=1e-15)
    assert ball.pose.xyz == (0.0, 0.0, 0.1) and ball.pose.rpy is None
    assert ball.velocity.linear == (0.1, 0.0, 0.0) and ball.velocity.angular == (0.0, 0.0, 0.0)
    assert config.material(ball.material) == steel
    assert [g.kind for g in floor.geometry] == ["plane"] and floor.frame == "table" and floor.pose is None
    assert cup.follow == "cup_frame" and cup.geometry == []
    assert config.material(cup.material) == TemperatureProperties(base_temperature=80.0)
    assert cup.material.specific_heat == 1000.0  # spec default (Genesis: 1.0)


def test_where_names_file_and_yaml_path(full_config):
    config, folder = full_config
    label = str(folder / "full.yaml")
    assert config.source == label
    assert [s.where for s in config.sensors][:2] == [f"{label}:sensors[0]", f"{label}:sensors[1]"]
    assert config.objects[2].where == f"{label}:objects[2]"
    assert KinematicTaxel(name="pad", link="l").where == "KinematicTaxel(name='pad')"


def test_python_api_matches_yaml():
    options = dict(name="pad", link="finger", probe_radius=[[0.002, 0.0], [0.002, 0.002]], probe_gain=1.5,
                   crosstalk_strength=0.2, crosstalk_sigma=0.004, noise=[0.1, 0.2, 0.3, 0.0, 0.0, 0.0])
    direct = KinematicTaxel(**options)
    via_name = config_from_python("KinematicTaxel", **options)
    via_yaml = load_config({"suite": {"dt": 0.01}, "sensors": [dict(type="KinematicTaxel", **options)]}).sensors[0]
    assert direct == via_name
    assert direct.model_dump() == via_yaml.model_dump()  # via_yaml also remembers where it was declared
    assert direct.probe_radius == [[0.002, 0.0], [0.002, 0.002]] and direct.noise == [0.1, 0.2, 0.3, 0.0, 0.0, 0.0]


def test_arrays_from_numpy_are_kept_as_nested_float_lists():
    pos = np.arange(18, dtype=np.float32).reshape(2, 3, 3) * 0.001
    s = ContactDepthProbe(name="a", link="l", probe_local_pos=pos, probe_radius=np.float64(0.003),
                          probe_local_normal=np.array([0.0, 0.0, 1.0]))
    assert s.probe_local_pos == pos.tolist() and s.probe_radius == 0.003
    assert all(isinstance(v, float) for row in s.probe_local_pos for p in row for v in p)


@pytest.mark.parametrize("given, stored", [(None, "sdf"), ("sdf", "sdf"), ("raycast", "raycast"),
                                           ("exact", "raycast")])
def test_contact_depth_query_alias(given, stored):
    assert ContactProbe(name="a", link="l", contact_depth_query=given).contact_depth_query == stored


def test_release_threshold_may_be_negative_and_none_means_contact():
    assert ContactProbe(name="a", link="l", contact_threshold=0.03).release_threshold == 0.03
    assert ContactProbe(name="a", link="l", release_threshold=-0.002).release_threshold == -0.002
    assert ElastomerTaxel(name="a", link="l", track=["b"], release_threshold=None).release_threshold == 1e-5


def test_layout_sources_take_typed_forms(tmp_path):
    (tmp_path / "pads").mkdir()
    (tmp_path / "pads" / "grid.npz").write_bytes(b"")
    doc = {"suite": {"dt": 0.01}, "sensors": [
        {"type": "KinematicTaxel", "name": "a", "link": "l", "probe_local_pos": {"file": "pads/grid.npz"}},
        {"type": "KinematicTaxel", "name": "b", "link": "l",
         "probe_local_pos": {"grid": {"lo": [-0.01, -0.02, 0.0], "hi": [0.01, 0.02, 0.0], "nx": 5, "ny": 3}}},
        {"type": "ProximityTaxel", "name": "c", "link": "l", "track": ["x"],
         "probe_local_pos": {"conforming": {"spacing": 0.004, "facing": [0, 0, 1], "box": [[-1, -1, 0], [1, 1, 1]]}}},
        {"type": "ContactProbe", "name": "d", "link": "l", "probe_local_pos": {"urdf_tactile": "palm_skin"}},
    ]}
    a, b, c, d = load_config(write_yaml(tmp_path, doc)).sensors
    assert isinstance(a.probe_local_pos, FileLayout)
    assert a.probe_local_pos.file == (tmp_path / "pads" / "grid.npz").resolve()
    assert isinstance(b.probe_local_pos, GridLayout)
    g = b.probe_local_pos.grid
    assert (g.lo, g.hi, g.normal, g.nx, g.ny) == ((-0.01, -0.02, 0.0), (0.01, 0.02, 0.0), (0.0, 0.0, 1.0), 5, 3)
    assert isinstance(c.probe_local_pos, ConformingLayout)
    cf = c.probe_local_pos.conforming
    assert (cf.spacing, cf.facing, cf.min_cos, cf.box, cf.seed) == (
        0.004, (0.0, 0.0, 1.0), 0.0, ((-1.0, -1.0, 0.0), (1.0, 1.0, 1.0)), 0)
    assert isinstance(d.probe_local_pos, UrdfTactileLayout) and d.probe_local_pos.urdf_tactile == "palm_skin"


def test_yaml_exponent_floats_without_a_dot_are_numbers(tmp_path):
    path = write_yaml(tmp_path, "suite: {dt: 1e-3}\nsensors:\n"
                                "  - {type: ContactProbe, name: a, link: l, contact_threshold: 2E-4, bias: -1e-2}\n")
    config = load_config(path)
    assert config.suite.dt == 1e-3
    assert config.sensors[0].contact_threshold == 2e-4 and config.sensors[0].bias == -1e-2


def test_temperature_grid_accepts_shaped_heat_generation_and_material_names():
    q = [[[1.0], [2.0]], [[3.0], [4.0]], [[5.0], [6.0]]]
    config = load_config({"suite": {"dt": 0.01}, "materials": {"alu": {"conductivity": 200}},
                          "sensors": [{"type": "TemperatureGrid", "name": "t", "link": "l", "grid_size": [3, 2, 1],
                                       "heat_generation": q, "properties_dict": {"default": "alu",
                                                                                 "l": {"emissivity": 0.1}}}]})
    t = config.sensors[0]
    assert t.grid_size == (3, 2, 1) and t.heat_generation == q
    assert config.material(t.properties_dict["default"]).conductivity == 200.0
    assert t.properties_dict["l"] == TemperatureProperties(emissivity=0.1)


def test_joint_torque_selection_forms():
    assert JointTorque(name="j", joints=["a", "b"]).joints == ["a", "b"]
    assert JointTorque(name="j", dofs_idx_local=np.array([2, 0])).dofs_idx_local == [2, 0]
    assert JointTorque(name="j", contact_sources=[]).contact_sources == []
    assert JointTorque(name="j", acceleration_cutoff_hz=None).acceleration_cutoff_hz is None


@pytest.mark.parametrize("period, dt, steps", [
    (0.0, 0.01, 1),        # every engine step
    (0.005, 0.01, 1),      # shorter than a step: still every step (halves round up → 1)
    (0.025, 0.01, 3),      # 2.5 steps: halves round up
    (0.024, 0.01, 2),
    (0.03, 0.01, 3),       # 0.03/0.01 = 2.9999999999999996 in binary: still 3
    (0.07, 0.01, 7),
])
def test_evaluation_period_rounds_halves_up(period, dt, steps):
    assert evaluation_steps(period, dt) == steps
    assert math.isclose(evaluation_period(period, dt), steps * dt, rel_tol=0, abs_tol=0)


def test_python_built_suite_runs_the_same_cross_checks():
    fast = config_from_python("KinematicTaxel", name="a", link="l", delay=0.01, jitter=0.01)
    config = SuiteConfig(suite=SuiteSettings(dt=0.01), sensors=[fast, config_from_python("ContactProbe", name="b",
                                                                                           link="l")])
    assert config.sensors[0] is fast
    with pytest.raises(ConfigError, match=r"^KinematicTaxel\(name='a'\)\.jitter: jitter must be < "):
        check_suite(config)
    check_suite(SuiteConfig(suite=SuiteSettings(dt=0.02), sensors=[fast]))  # 0.01 < dt = 0.02: fine


def test_json_round_trip_keeps_every_value(full_config):
    config, _ = full_config
    again = SuiteConfig.model_validate(json.loads(json.dumps(config.model_dump(mode="json"))))
    assert again.model_dump() == config.model_dump()
