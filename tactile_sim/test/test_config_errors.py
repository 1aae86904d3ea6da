"""Config errors (docs/models/scene.md#common-options): every option-level rule of the spec's "Errors" lists gives one
ConfigError line that
names the file, the YAML path, the value received and what is allowed — in that order."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from helpers_config import config_error_message, sensor_error_message, write_yaml
from tactile_sim.config import config_error, config_from_python, format_problem, load_config, suggest
from tactile_sim.errors import ConfigError

DELETE = object()
"""Marks an option removed from the base sensor (to test required options)."""

BASE = {
    "ContactProbe": {"link": "pad"},
    "ContactDepthProbe": {"link": "pad"},
    "KinematicTaxel": {"link": "pad"},
    "ElastomerTaxel": {"link": "pad", "track": ["ball"]},
    "ProximityTaxel": {"link": "pad", "track": ["ball"]},
    "SurfaceDistanceProbe": {"link": "pad"},
    "TemperatureGrid": {"link": "pad"},
    "JointTorque": {},
    "ContactSensor": {"prim_path": "foot"},
}

NAN = float("nan")
GRID = {"lo": [0, 0, 0], "hi": [0.01, 0.01, 0], "nx": 2, "ny": 2}
NOT_FOR_SDP = "not accepted by SurfaceDistanceProbe"

# (sensor type, options, YAML path below sensors[1], rendered value, substring of "allowed")
CASES = [
    # docs/models/scene.md#common-options common options and docs/models/imperfections.md#imperfections pipeline
    ("ContactDepthProbe", {"update_period": -0.1}, "update_period", "-0.1", ">= 0"),
    ("ContactDepthProbe", {"history_length": -1}, "history_length", "-1", ">= 0"),
    ("ContactDepthProbe", {"name": ""}, "name", "''", "non-empty string"),
    ("ContactDepthProbe", {"name": 5}, "name", "5", "a string"),
    ("ContactDepthProbe", {"link": DELETE}, "link", "nothing", "name of the sensor's robot link or object"),
    ("ContactDepthProbe", {"delay": -0.01}, "delay", "-0.01", ">= 0"),
    ("ContactDepthProbe", {"jitter": 0.02, "delay": 0.01}, "jitter", "0.02", "jitter <= delay (0.01)"),
    ("ContactDepthProbe", {"noise": -0.1}, "noise", "-0.1", ">= 0"),
    ("ContactDepthProbe", {"noise": [0.1, -0.2]}, "noise", "-0.2", "flat list of numbers >= 0"),
    ("ContactDepthProbe", {"noise": [[0.1]]}, "noise", "[0.1]", "flat list"),
    ("ContactDepthProbe", {"random_walk": -1}, "random_walk", "-1", ">= 0"),
    ("ContactDepthProbe", {"resolution": -1e-3}, "resolution", "-0.001", ">= 0"),
    ("ContactDepthProbe", {"bias": NAN}, "bias", "nan", "finite"),
    ("ContactDepthProbe", {"seed": -1}, "seed", "-1", ">= 0"),
    ("ContactDepthProbe", {"draw_debug": "maybe"}, "draw_debug", "'maybe'", "true or false"),
    ("ContactDepthProbe", {"pos_offset": [0, 0]}, "pos_offset", "[0, 0]", "3 finite numbers"),
    ("ContactDepthProbe", {"debug_probe_color": [0, 0, 2]}, "debug_probe_color", "2", "[0, 1]"),
    # docs/models/probes.md#probes, docs/models/imperfections.md#probe-level, docs/models/imperfections.md#hysteresis
    # tactile options
    ("ContactDepthProbe", {"probe_radius_noise": -0.001}, "probe_radius_noise", "-0.001", ">= 0"),
    ("ContactDepthProbe", {"probe_gain": 0}, "probe_gain", "0", "> 0"),
    ("ContactDepthProbe", {"probe_gain": [[1, -1]]}, "probe_gain", "-1", "> 0"),
    ("ContactDepthProbe", {"probe_gain_resample_range": [0, 1]}, "probe_gain_resample_range", "0", "0 < lo <= hi"),
    ("ContactDepthProbe", {"probe_gain_resample_range": [2, 1]}, "probe_gain_resample_range", "[2, 1]",
     "0 < lo <= hi"),
    ("ContactDepthProbe", {"dead_taxel_probability": 1.5}, "dead_taxel_probability", "1.5", "<= 1"),
    ("ContactDepthProbe", {"dead_taxel_value_range": [1, 0]}, "dead_taxel_value_range", "[1, 0]", "lo <= hi"),
    ("ContactDepthProbe", {"hysteresis_strength": -1}, "hysteresis_strength", "-1", ">= 0"),
    ("ContactDepthProbe", {"hysteresis_strength": 0.5}, "hysteresis_tau", "0.0", "> 0"),
    ("ContactDepthProbe", {"contact_depth_query": "bvh"}, "contact_depth_query", "'bvh'", "'exact'"),
    ("ContactDepthProbe", {"crosstalk_strength": 0.2}, "crosstalk_strength", "0.2",
     "remove this option"),
    # docs/models/layouts.md#layouts layout forms (array shapes themselves are checked by sensors.layout)
    ("ContactDepthProbe", {"probe_local_pos": [[0, 0, NAN]]}, "probe_local_pos", "nan", "finite"),
    ("ContactDepthProbe", {"probe_radius": [0.01, NAN]}, "probe_radius", "nan", "finite"),
    ("ContactDepthProbe", {"probe_local_pos": {"grd": GRID}}, "probe_local_pos", "{'grd'",
     "exactly one of file, grid, conforming, urdf_tactile"),
    ("ContactDepthProbe", {"probe_local_pos": {"grid": GRID, "urdf_tactile": "x"}}, "probe_local_pos", "{'grid'",
     "exactly one of file, grid, conforming, urdf_tactile"),
    ("ContactDepthProbe", {"probe_local_pos": {"grid": {**GRID, "nx": 0}}}, "probe_local_pos.grid.nx", "0", ">= 1"),
    ("ContactDepthProbe", {"probe_local_pos": {"grid": {**GRID, "normal": [0, 0, 0]}}}, "probe_local_pos.grid.normal",
     "[0.0, 0.0, 0.0]", "non-zero"),
    ("ContactDepthProbe", {"probe_local_pos": {"grid": {"hi": [1, 1, 0], "nx": 2, "ny": 2}}},
     "probe_local_pos.grid.lo", "nothing", "corner"),
    ("ContactDepthProbe", {"probe_local_pos": {"grid": {**GRID, "nz": 2}}}, "probe_local_pos.grid.nz", "2",
     "hi, lo, normal, nx, ny"),
    ("ContactDepthProbe", {"probe_local_pos": {"conforming": {"spacing": 0}}}, "probe_local_pos.conforming.spacing",
     "0", ">= 1e-06 and <= 10000"),
    ("ContactDepthProbe", {"probe_local_pos": {"conforming": {"spacing": 0.01, "box": [[1, 0, 0], [0, 1, 1]]}}},
     "probe_local_pos.conforming.box", "[[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]", "lo <= hi"),
    ("ContactDepthProbe", {"probe_local_pos": {"conforming": {"spacing": 0.01, "min_cos": 1}}},
     "probe_local_pos.conforming.min_cos", "1", "< 1"),
    ("ContactDepthProbe", {"probe_local_pos": {"urdf_tactile": ""}}, "probe_local_pos.urdf_tactile", "''",
     "non-empty"),
    ("ContactDepthProbe", {"probe_local_pos": {"file": "missing.npz"}}, "probe_local_pos.file", "'missing.npz'",
     "an existing file"),
    # docs/models/contact_probe.md#model ContactProbe
    ("ContactProbe", {"contact_threshold": -1e-4}, "contact_threshold", "-0.0001", ">= 0"),
    ("ContactProbe", {"release_threshold": 0.01}, "release_threshold", "0.01", "<= contact_threshold (0.0001)"),
    # docs/models/kinematic_taxel.md#model KinematicTaxel and docs/models/imperfections.md#crosstalk crosstalk
    ("KinematicTaxel", {"normal_exponent": 0.5}, "normal_exponent", "0.5", ">= 1"),
    ("KinematicTaxel", {"normal_stiffness": -1}, "normal_stiffness", "-1", ">= 0"),
    ("KinematicTaxel", {"normal_damping": -1}, "normal_damping", "-1", ">= 0"),
    ("KinematicTaxel", {"shear_scalar": -1}, "shear_scalar", "-1", ">= 0"),
    ("KinematicTaxel", {"twist_scalar": -1}, "twist_scalar", "-1", ">= 0"),
    ("KinematicTaxel", {"crosstalk_strength": 1.5}, "crosstalk_strength", "1.5", "<= 1"),
    ("KinematicTaxel", {"crosstalk_strength": 0.3}, "crosstalk_sigma", "0.0", "> 0"),
    ("KinematicTaxel", {"crosstalk_strength": 0.3, "crosstalk_sigma": 0.01, "crosstalk_kernel": [[1]]},
     "crosstalk_kernel", "0.3", "either a Gaussian"),
    ("KinematicTaxel", {"crosstalk_kernel": [[1, 1]]}, "crosstalk_kernel", "[[1.0, 1.0]]", "h, w odd"),
    ("KinematicTaxel", {"crosstalk_kernel": [[[1]]] * 4}, "crosstalk_kernel", "[[[1.0]]", "(3, h, w)"),
    ("KinematicTaxel", {"crosstalk_kernel": [[1], [1, 1, 1]]}, "crosstalk_kernel", "[[1.0], [1.0, 1.0, 1.0]]",
     "h, w odd"),
    ("KinematicTaxel", {"crosstalk_kernel": [[1, NAN, 1]]}, "crosstalk_kernel", "nan", "finite"),
    # docs/models/elastomer_taxel.md#elastomer-taxel ElastomerTaxel
    ("ElastomerTaxel", {"track": []}, "track", "[]", ">= 1 body"),
    ("ElastomerTaxel", {"track": DELETE}, "track", "nothing", ">= 1 tracked body"),
    ("ElastomerTaxel", {"track": ["ball", "pad"]}, "track", "['ball', 'pad']", "other than link ('pad')"),
    ("ElastomerTaxel", {"track": ["ball", "ball"]}, "track", "['ball', 'ball']", "distinct names"),
    ("ElastomerTaxel", {"track": ["a", "b"], "n_sample_points": [10]}, "n_sample_points", "[10]",
     "one integer >= 0 per tracked body"),
    ("ElastomerTaxel", {"track": ["a", "b"], "n_sample_points": [10, -1]}, "n_sample_points", "[10, -1]",
     "one integer >= 0 per tracked body"),
    ("ElastomerTaxel", {"track": ["a", "b"], "n_sample_points": [0, 0]}, "n_sample_points", "[0, 0]",
     "positive total"),
    ("ElastomerTaxel", {"n_sample_points": 0}, "n_sample_points", "0", "an integer >= 1"),
    ("ElastomerTaxel", {"compressibility": 1.5}, "compressibility", "1.5", "<= 1"),
    ("ElastomerTaxel", {"compressibility": -0.1}, "compressibility", "-0.1", ">= 0"),
    ("ElastomerTaxel", {"lambda_d": 0}, "lambda_d", "0", "> 0"),
    ("ElastomerTaxel", {"normal_exponent": 0.9}, "normal_exponent", "0.9", ">= 1"),
    ("ElastomerTaxel", {"elastomer_thickness": -1e-3}, "elastomer_thickness", "-0.001", ">= 0"),
    ("ElastomerTaxel", {"lambda_s": -1}, "lambda_s", "-1", ">= 0"),
    ("ElastomerTaxel", {"dilate_scale": -1}, "dilate_scale", "-1", ">= 0"),
    ("ElastomerTaxel", {"shear_scale": -1}, "shear_scale", "-1", ">= 0"),
    ("ElastomerTaxel", {"contact_threshold": -1e-5}, "contact_threshold", "-1e-05", ">= 0"),
    ("ElastomerTaxel", {"release_threshold": 1e-4}, "release_threshold", "0.0001", "<= contact_threshold (1e-05)"),
    ("ElastomerTaxel", {"probe_radius_noise": 1e-3}, "probe_radius_noise", "0.001", "0"),
    ("ElastomerTaxel", {"crosstalk_sigma": 0.01}, "crosstalk_sigma", "0.01", "crosstalk exists on KinematicTaxel"),
    ("ElastomerTaxel", {"sample_seed": -1}, "sample_seed", "-1", ">= 0"),
    # docs/models/proximity_taxel.md#model ProximityTaxel
    ("ProximityTaxel", {"stiffness": -1}, "stiffness", "-1", ">= 0"),
    ("ProximityTaxel", {"shear_coupling": -1}, "shear_coupling", "-1", ">= 0"),
    ("ProximityTaxel", {"twist_scalar": -1}, "twist_scalar", "-1", ">= 0"),
    ("ProximityTaxel", {"density_scalar": 0}, "density_scalar", "0", ">= 1"),
    ("ProximityTaxel", {"track": []}, "track", "[]", ">= 1 body"),
    ("ProximityTaxel", {"debug_point_cloud_color": [1, 1, 1]}, "debug_point_cloud_color", "[1, 1, 1]", "4 numbers"),
    # ignore was accepted and silently unused by the point-cloud sensors, which sense only their tracked bodies
    ("ProximityTaxel", {"ignore": ["x"]}, "ignore", "['x']", "'track'"),
    ("ElastomerTaxel", {"ignore": ["x"]}, "ignore", "['x']", "'track'"),
    # docs/models/surface_distance_probe.md#model SurfaceDistanceProbe
    ("SurfaceDistanceProbe", {"track": ["pad"]}, "track", "['pad']", "other than link ('pad')"),
    ("SurfaceDistanceProbe", {"probe_radius_noise": -1}, "probe_radius_noise", "-1", ">= 0"),
    *[("SurfaceDistanceProbe", {key: 1}, key, "1", "remove this option") for key in (
        "probe_gain", "probe_gain_resample_range", "dead_taxel_probability", "dead_taxel_value_range",
        "hysteresis_strength", "hysteresis_tau", "crosstalk_strength", "crosstalk_sigma", "crosstalk_kernel",
        "contact_depth_query")],
    ("SurfaceDistanceProbe", {"ignore": ["x"]}, "ignore", "['x']", "'track'"),
    # docs/models/temperature_grid.md#temperature-grid TemperatureGrid and TemperatureProperties
    ("TemperatureGrid", {"grid_size": [2, 2]}, "grid_size", "[2, 2]", "three integers >= 1"),
    ("TemperatureGrid", {"grid_size": [2, 0, 1]}, "grid_size", "[2, 0, 1]", "three integers >= 1"),
    ("TemperatureGrid", {"grid_size": [2, 1.5, 1]}, "grid_size", "[2, 1.5, 1]", "three integers >= 1"),
    ("TemperatureGrid", {"grid_size": [2, 1, 1], "heat_generation": [[1.0, 2.0]]}, "heat_generation",
     "[[1.0, 2.0]]", "shape (nx, ny, nz)"),
    ("TemperatureGrid", {"heat_generation": NAN}, "heat_generation", "nan", "a number"),
    ("TemperatureGrid", {"ambient_temperature": -300}, "ambient_temperature", "-300", "> -273.15"),
    ("TemperatureGrid", {"convection_coefficient": -1}, "convection_coefficient", "-1", ">= 0"),
    ("TemperatureGrid", {"sensor_time_constant": -1}, "sensor_time_constant", "-1", ">= 0"),
    ("TemperatureGrid", {"contact_band": -1e-4}, "contact_band", "-0.0001", ">= 0"),
    ("TemperatureGrid", {"contact_conductance": 0}, "contact_conductance", "0", "> 0"),
    ("TemperatureGrid", {"contact_sample_spacing": 0}, "contact_sample_spacing", "0", ">= 1e-06"),
    ("TemperatureGrid", {"temperature_bounds": [10, 10]}, "temperature_bounds", "[10, 10]", "lo < hi"),
    ("TemperatureGrid", {"debug_temperature_range": [1, 0]}, "debug_temperature_range", "[1, 0]", "lo < hi"),
    ("TemperatureGrid", {"contact_depth_weight": 0.5}, "contact_depth_weight", "0.5",
     "contact_band and contact_conductance"),
    ("TemperatureGrid", {"properties_dict": {"ball": {"emissivity": 1.2}}}, "properties_dict.ball.emissivity",
     "1.2", "<= 1"),
    ("TemperatureGrid", {"properties_dict": {"ball": {"conductivity": 0}}}, "properties_dict.ball.conductivity",
     "0", "> 0"),
    ("TemperatureGrid", {"properties_dict": {"ball": {"density": -1}}}, "properties_dict.ball.density", "-1", "> 0"),
    ("TemperatureGrid", {"properties_dict": {"ball": {"specific_heat": 0}}}, "properties_dict.ball.specific_heat",
     "0", "> 0"),
    ("TemperatureGrid", {"properties_dict": {"ball": {"base_temperature": -274}}},
     "properties_dict.ball.base_temperature", "-274", "> -273.15"),
    ("TemperatureGrid", {"properties_dict": {"ball": {"emisivity": 0.5}}}, "properties_dict.ball.emisivity", "0.5",
     "emissivity"),
    ("TemperatureGrid", {"properties_dict": {"ball": "copper"}}, "properties_dict.ball", "'copper'",
     "materials:"),
    ("TemperatureGrid", {"pos_offset": [0, 0, 0.01]}, "pos_offset", "[0.0, 0.0, 0.01]", "(0, 0, 0)"),
    ("TemperatureGrid", {"euler_offset": [0, 0, 90]}, "euler_offset", "[0.0, 0.0, 90.0]", "(0, 0, 0)"),
    ("TemperatureGrid", {"probe_radius": 0.01}, "probe_radius", "0.01", "remove this option"),
    # docs/models/joint_torque.md#joint-torque JointTorque
    ("JointTorque", {"joints": ["a"], "dofs_idx_local": [0]}, "dofs_idx_local", "[0]", "not both"),
    ("JointTorque", {"joints": []}, "joints", "[]", "list >= 1 joint"),
    ("JointTorque", {"dofs_idx_local": []}, "dofs_idx_local", "[]", "list >= 1 joint"),
    ("JointTorque", {"dofs_idx_local": [-1]}, "dofs_idx_local", "[-1]", "integers >= 0"),
    ("JointTorque", {"dofs_idx_local": [0, 0]}, "dofs_idx_local", "[0, 0]", "distinct integers"),
    ("JointTorque", {"joints": ["a", "a"]}, "joints", "['a', 'a']", "distinct names"),
    ("JointTorque", {"armature": {"elbow": -0.1}}, "armature.elbow", "-0.1", ">= 0"),
    ("JointTorque", {"acceleration_cutoff_hz": 0}, "acceleration_cutoff_hz", "0", "> 0"),
    ("JointTorque", {"friction_velocity_scale": 0}, "friction_velocity_scale", "0", "> 0"),
    ("JointTorque", {"velocity_source": "central"}, "velocity_source", "'central'", "'finite_difference'"),
    ("JointTorque", {"contact_sources": "all"}, "contact_sources", "'all'", "'auto', []"),
    ("JointTorque", {"link": "pad"}, "link", "'pad'", "'joints'"),
    ("JointTorque", {"probe_local_pos": [[0, 0, 0]]}, "probe_local_pos", "[[0, 0, 0]]", "remove this option"),
    ("JointTorque", {"ignore": ["x"]}, "ignore", "['x']", "remove this option"),
    ("JointTorque", {"euler_offset": [0, 90, 0]}, "euler_offset", "[0.0, 90.0, 0.0]", "(0, 0, 0)"),
    # docs/models/contact_sensor.md#model ContactSensor
    ("ContactSensor", {"prim_path": DELETE}, "prim_path", "nothing", "regular expression"),
    ("ContactSensor", {"prim_path": "finger["}, "prim_path", "'finger['", "regular expression"),
    ("ContactSensor", {"prim_path": "{ENV_REGEX_NS}/Robot/LF_FOOT"}, "prim_path", "'{ENV_REGEX_NS}/Robot/LF_FOOT'",
     "regular expression over body names"),
    ("ContactSensor", {"filter_prim_paths_expr": ["ok", "("]}, "filter_prim_paths_expr[1]", "'('",
     "regular expression"),
    ("ContactSensor", {"track_contact_points": True}, "filter_prim_paths_expr", "[]", ">= 1 entry"),
    ("ContactSensor", {"force_threshold": -1}, "force_threshold", "-1", ">= 0"),
    ("ContactSensor", {"contact_stiffness": 0}, "contact_stiffness", "0", "> 0"),
    ("ContactSensor", {"contact_exponent": 0.5}, "contact_exponent", "0.5", ">= 1"),
    ("ContactSensor", {"contact_damping": -1}, "contact_damping", "-1", ">= 0"),
    ("ContactSensor", {"friction_coefficient": -0.1}, "friction_coefficient", "-0.1", ">= 0"),
    ("ContactSensor", {"slip_velocity": 0}, "slip_velocity", "0", "> 0"),
    ("ContactSensor", {"surface_sample_spacing": 0}, "surface_sample_spacing", "0", ">= 1e-06"),
    ("ContactSensor", {"sample_seed": -1}, "sample_seed", "-1", ">= 0"),
    ("ContactSensor", {"history_length": -2}, "history_length", "-2", ">= 0"),
    *[("ContactSensor", {key: 0.1}, key, "0.1", "remove this option") for key in (
        "noise", "bias", "resolution", "random_walk", "delay", "jitter", "max_contact_data_count_per_prim")],
    ("ContactSensor", {"sensor_shape_prim_expr": "x"}, "sensor_shape_prim_expr", "'x'", "whole bodies"),
    ("ContactSensor", {"filter_shape_prim_expr": "x"}, "filter_shape_prim_expr", "'x'", "whole bodies"),
    ("ContactSensor", {"draw_debug": True}, "draw_debug", "True", "debug_vis"),
    ("ContactSensor", {"link": "foot"}, "link", "'foot'", "prim_path"),
    # output profiles (outputs:)
    ("KinematicTaxel", {"outputs": [{"profile": "pointclod"}]}, "outputs[0].profile", "'pointclod'",
     "pointcloud, wrench"),
    ("KinematicTaxel", {"outputs": [{"topic": "~/x"}]}, "outputs[0].profile", "nothing", "pointcloud, wrench"),
    ("KinematicTaxel", {"outputs": [{"profile": "wrench"}, {"profile": "wrench", "frame": "x"}]},
     "outputs[1].frame", "'x'", "point, profile, topic"),
    ("KinematicTaxel", {"outputs": [{"profile": "wrench", "topic": "wrench"}]}, "outputs[0].topic", "'wrench'",
     "'~/a/b' (under the node) or '/a/b'"),
    ("KinematicTaxel", {"outputs": [{"profile": "wrench", "point": [0, 0]}]}, "outputs[0].point", "[0, 0]",
     "3 finite numbers"),
    ("KinematicTaxel", {"outputs": [{"profile": "pointcloud", "channels": ["force_z", "depth"]}]},
     "outputs[0].channels", "['force_z', 'depth']", "force_x, force_y, force_z, force_normal, force_magnitude"),
    ("ContactProbe", {"outputs": [{"profile": "pointcloud", "channels": ["contact", "contact"]}]},
     "outputs[0].channels", "['contact', 'contact']", "distinct names among contact"),
    ("ElastomerTaxel", {"outputs": [{"profile": "wrench"}]}, "outputs[0].profile", "'wrench'",
     "wrench needs one of KinematicTaxel, ProximityTaxel"),
    *[(kind, {"outputs": []}, "outputs", "[]", "remove it (ContactProbe") for kind in (
        "TemperatureGrid", "JointTorque", "ContactSensor")],
]


def _ids(case):
    kind, options, path, _, _ = case
    return f"{kind}-{path}-{'-'.join(sorted(options))}"


def assert_problem(message: str, location: str, got: str, allowed: str) -> None:
    """``message`` has a line ``…<location>: <problem>; got <got…>; allowed: <…allowed…>`` (in this order)."""
    lines = [line for line in message.splitlines() if f"{location}: " in line]
    assert lines, f"no line for {location!r} in:\n{message}"
    for line in lines:
        rest = line.split(f"{location}: ", 1)[1]
        problem, _, tail = rest.partition("; got ")
        got_text, _, allowed_text = tail.partition("; allowed: ")
        if problem and got_text.startswith(got) and allowed in allowed_text:
            return
    raise AssertionError(f"no line for {location!r} with got {got!r}… and allowed ~ {allowed!r} in:\n{message}")


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_option_rule_names_file_path_value_and_allowed(tmp_path, case):
    kind, options, path, got, allowed = case
    sensor = {"type": kind, "name": "s", **BASE[kind], **options}
    sensor = {k: v for k, v in sensor.items() if v is not DELETE}
    message = sensor_error_message(tmp_path, sensor)
    assert_problem(message, f"layout.yaml:sensors[1].{path}", got, allowed)
    assert message.startswith(str(tmp_path / "layout.yaml"))


@pytest.mark.parametrize("kind, options, path", [
    ("KinematicTaxel", {"normal_stiffness": True}, "normal_stiffness"),
    ("KinematicTaxel", {"delay": False}, "delay"),
    ("ContactDepthProbe", {"probe_local_pos": {"grid": {"lo": [0, 0, 0], "hi": [0.01, 0.01, 0], "nx": True, "ny": 2}}},
     "probe_local_pos.grid.nx"),
])
def test_a_boolean_is_not_read_as_a_number(tmp_path, kind, options, path):
    """YAML's true/yes/on would otherwise become 1 (and false/no/off 0) wherever a number is expected."""
    message = sensor_error_message(tmp_path, {"type": kind, "name": "s", **BASE[kind], **options})
    assert f"layout.yaml:sensors[1].{path}: a boolean where a number is expected; got " in message, message


def test_python_api_errors_name_the_sensor_class_and_name():
    with pytest.raises(ConfigError) as info:
        config_from_python("KinematicTaxel", name="pad", link="l", probe_radius=[0.01, math.nan])
    assert_problem(str(info.value), "KinematicTaxel(name='pad').probe_radius", "nan", "finite")
    assert "non-finite value at [1]" in str(info.value)
    with pytest.raises(ConfigError) as info:
        config_from_python("KinematicTaxl", name="pad")
    assert "did you mean 'KinematicTaxel'?" in str(info.value)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", ".NaN"])
def test_nan_and_inf_rejected_everywhere(tmp_path, value):
    text = ("suite: {dt: %s}\nsensors:\n  - {type: ContactProbe, name: a, link: l, contact_threshold: %s,\n"
            "     probe_local_pos: [[0, 0, %s]]}\n" % (value, value, value))
    message = config_error_message(write_yaml(tmp_path, text))
    assert "3 configuration problems" in message
    assert_problem(message, "layout.yaml:suite.dt", value.replace(".", "").lower(), "finite")
    assert_problem(message, "layout.yaml:sensors[0].contact_threshold", "", "finite")
    assert "layout.yaml:sensors[0].probe_local_pos: non-finite value at [0, 2]" in message


def test_unknown_option_lists_accepted_names_and_suggests(tmp_path):
    message = sensor_error_message(tmp_path, {"type": "KinematicTaxel", "name": "s", "link": "pad",
                                              "probe_radiuss": 0.002})
    assert_problem(message, "layout.yaml:sensors[1].probe_radiuss", "0.002", "normal_stiffness")
    line = message.splitlines()[0]
    assert "unknown option for KinematicTaxel" in line
    allowed = line.split("; allowed: ")[1]
    for name in ("probe_radius", "probe_local_pos", "crosstalk_kernel", "twist_scalar", "update_period"):
        assert name in allowed
    assert line.split("; ")[-1].startswith("did you mean 'probe_radius', 'probe_radius_noise'")


@pytest.mark.parametrize("kind, key, replacement", [
    ("KinematicTaxel", "entity_idx", "link"),
    ("KinematicTaxel", "link_idx_local", "link"),
    ("KinematicTaxel", "filter_link_idx", "ignore"),
    ("ElastomerTaxel", "track_link_idx", "track"),
    ("ProximityTaxel", "track_link_idx", "track"),
    ("SurfaceDistanceProbe", "track_link_idx", "track"),
    ("TemperatureGrid", "entity_idx", "link"),
    ("JointTorque", "entity_idx", "robot"),
    ("ContactSensor", "entity_idx", "prim_path"),
    ("ContactSensor", "filter_link_idx", "ignore"),
])
def test_genesis_index_options_name_their_replacement(tmp_path, kind, key, replacement):
    sensor = {"type": kind, "name": "s", **BASE[kind], key: 3}
    message = sensor_error_message(tmp_path, sensor)
    assert_problem(message, f"layout.yaml:sensors[1].{key}", "3", f"'{replacement}'")
    assert f"is replaced by '{replacement}'" in message


@pytest.mark.parametrize("suite, path, got, allowed", [
    ({"dt": 0.01, "rate": 100}, "suite.dt", "{'dt': 0.01, 'rate': 100", "not both"),
    ({"device": "cpu"}, "suite.dt", "'neither'", "dt (s, 1e-06 to 100000) or rate (Hz, 1e-05 to 1e+06)"),
    ({"dt": 0}, "suite.dt", "0", ">= 1e-06"),
    ({"rate": -5}, "suite.rate", "-5", ">= 1e-05"),
    ({"rate": 1e300}, "suite.rate", "1e+300", "<= 1000000"),
    ({"rate": True}, "suite.rate", "True", "a number (not true/false)"),
    ({"dt": 0.01, "seed": True}, "suite.seed", "True", "a number (not true/false)"),
    ({"dt": 0.01, "device": "gpu"}, "suite.device", "'gpu'", "'cuda:<index>'"),
    ({"dt": 0.01, "dtype": "float16"}, "suite.dtype", "'float16'", "'float32' or 'float64'"),
    ({"dt": 0.01, "n_envs": -1}, "suite.n_envs", "-1", ">= 0"),
    ({"dt": 0.01, "seed": -1}, "suite.seed", "-1", ">= 0"),
    ({"dt": 0.01, "world_frame": ""}, "suite.world_frame", "''", "non-empty"),
    ({"dt": 0.01, "gravity": [0, -9.81]}, "suite.gravity", "[0, -9.81]", "3 finite numbers"),
    ({"dt": 0.01, "sdf_cell_size": 0}, "suite.sdf_cell_size", "0", ">= 1e-06 and <= 10000"),
    ({"dt": 0.01, "sdf_max_nodes": 1}, "suite.sdf_max_nodes", "1", ">= 2"),
    ({"dt": 0.01, "sdf_padding": -0.01}, "suite.sdf_padding", "-0.01", ">= 0"),
    ({"dt": 0.01, "lumped_sample_spacing": 0}, "suite.lumped_sample_spacing", "0", ">= 1e-06 and <= 10000"),
    ({"dt": 0.01, "step": 0.01}, "suite.step", "0.01", "dt"),
])
def test_suite_settings_errors(tmp_path, suite, path, got, allowed):
    message = config_error_message(write_yaml(tmp_path, {"suite": suite}))
    assert_problem(message, f"layout.yaml:{path}", got, allowed)


def test_dt_and_rate_are_exclusive_and_one_is_required(tmp_path):
    assert load_config({"suite": {"dt": 0.002}}).suite.step_dt == 0.002
    assert load_config({"suite": {"rate": 250}}).suite.step_dt == 1.0 / 250
    assert "exactly one of dt and rate" in config_error_message({"suite": {"dt": 0.01, "rate": 100}})
    assert "exactly one of dt and rate" in config_error_message({"suite": {}})
    assert_problem(config_error_message({"sensors": []}), "<dict>:suite", "nothing", "dt or rate")


def test_top_level_unknown_key_suggests(tmp_path):
    message = config_error_message(write_yaml(tmp_path, {"suite": {"dt": 0.01}, "sensor": []}))
    assert_problem(message, "layout.yaml:sensor", "[]", "materials, objects, robot, sensors, suite")
    assert message.endswith("did you mean 'sensors'?")


@pytest.mark.parametrize("obj, path, got, allowed", [
    ({"geometry": [{"sphere": {"radius": 0}}]}, "geometry[0].sphere.radius", "0", ">= 1e-06 and <= 10000"),
    ({"geometry": [{"box": {"size": [1, 0, 1]}}]}, "geometry[0].box.size", "0", "3 edge lengths of 1e-06 to 10000 m"),
    ({"geometry": [{"cylinder": {"radius": 0.1, "length": 0}}]}, "geometry[0].cylinder.length", "0", ">= 1e-06"),
    ({"geometry": [{"capsule": {"radius": 0.1, "length": -1}}]}, "geometry[0].capsule.length", "-1", ">= 0"),
    ({"geometry": [{"capsule": {"radius": 0.1}}]}, "geometry[0].capsule.length", "nothing", "0 or up to 10000 m"),
    # past these, areas and volumes leave floating point (squares of 1e300, 1e-300) before anything is built
    ({"geometry": [{"sphere": {"radius": 1e300}}]}, "geometry[0].sphere.radius", "1e+300", "<= 10000"),
    ({"geometry": [{"cylinder": {"radius": 1e-300, "length": 1}}]}, "geometry[0].cylinder.radius", "1e-300",
     ">= 1e-06"),
    ({"geometry": [{"box": {"size": [1, 1, 1e5]}}]}, "geometry[0].box.size", "100000.0", "1e-06 to 10000 m each"),
    ({"geometry": [{"mesh": {"file": "nope.stl"}}]}, "geometry[0].mesh.file", "'nope.stl'", "existing file"),
    ({"geometry": [{"sphere": {"radius": 1}, "box": {"size": [1, 1, 1]}}]}, "geometry[0]", "['sphere', 'box']",
     "one of sphere, box, cylinder, capsule, plane, mesh"),
    ({"geometry": [{"origin": {"xyz": [0, 0, 1]}}]}, "geometry[0]", "[]", "one of sphere"),
    ({"geometry": [{"sphere": {"radius": 1}, "origin": {"xyz": [0, 1]}}]}, "geometry[0].origin.xyz", "[0, 1]",
     "3 finite numbers"),
    ({"geometry": [{"shpere": {"radius": 1}}]}, "geometry[0].shpere", "{'radius': 1}", "sphere"),
    ({"geometry": ["sphere"]}, "geometry[0]", "'sphere'", "a mapping with keys: box, capsule"),
    ({"pose": {"quat": [0, 0, 0, 2]}}, "pose.quat", "[0.0, 0.0, 0.0, 2.0]", "| |q| - 1 | <= 0.001"),
    ({"pose": {"quat": [0, 0, 0, 1], "rpy": [0, 0, 0]}}, "pose.quat", "[0.0, 0.0, 0.0, 1.0]", "either rpy or quat"),
    ({"pose": {"xyz": [0, 0, 1]}, "follow": "tf_ball"}, "pose", "PoseConfig", "either a fixed pose"),
    ({"frame": "table", "follow": "tf_ball"}, "frame", "'table'", "either a fixed pose"),
    ({"material": "stel"}, "material", "'stel'", "(steel)"),
    ({"material": {"emissivity": -1}}, "material.emissivity", "-1", ">= 0"),
    ({"velocity": {"linear": [1, 2]}}, "velocity.linear", "[1, 2]", "3 finite numbers"),
])
def test_object_errors(tmp_path, obj, path, got, allowed):
    doc = {"suite": {"dt": 0.01}, "materials": {"steel": {}}, "objects": [{"name": "ball", **obj}]}
    message = config_error_message(write_yaml(tmp_path, doc))
    assert_problem(message, f"layout.yaml:objects[0].{path}", got, allowed)


def test_unknown_material_suggests_the_closest(tmp_path):
    doc = {"suite": {"dt": 0.01}, "materials": {"steel": {}, "copper": {}}, "objects": [{"name": "b", "material": "coper"}]}
    assert config_error_message(write_yaml(tmp_path, doc)).endswith("did you mean 'copper'?")


def test_robot_paths_must_exist(tmp_path):
    message = config_error_message(write_yaml(tmp_path, {"suite": {"dt": 0.01},
                                                         "robot": {"urdf": "r.urdf", "search_paths": ["meshes"]}}))
    assert_problem(message, "layout.yaml:robot.urdf", "'r.urdf'", "an existing file")
    assert f"resolved to {tmp_path / 'r.urdf'}" in message
    assert_problem(message, "layout.yaml:robot.search_paths[0]", "'meshes'", "an existing folder")
    assert_problem(config_error_message(write_yaml(tmp_path, {"suite": {"dt": 0.01}, "robot": {}})),
                   "layout.yaml:robot.urdf", "nothing", "URDF")


def test_material_field_errors(tmp_path):
    message = config_error_message(write_yaml(tmp_path, {"suite": {"dt": 0.01}, "materials": {"steel": {"density": 0}}}))
    assert_problem(message, "layout.yaml:materials.steel.density", "0", "> 0")


def test_duplicate_names(tmp_path):
    doc = {"suite": {"dt": 0.01}, "objects": [{"name": "a"}, {"name": "a"}],
           "sensors": [{"type": "ContactProbe", "name": "s", "link": "l"}, {"type": "KinematicTaxel", "name": "s",
                                                                           "link": "l"}]}
    message = config_error_message(write_yaml(tmp_path, doc))
    assert_problem(message, "layout.yaml:objects[1].name", "'a'", "used once")
    assert_problem(message, "layout.yaml:sensors[1].name", "'s'", "used once")


def test_sensor_type_missing_or_unknown(tmp_path):
    message = sensor_error_message(tmp_path, {"type": "KinematicTaxle", "name": "s"})
    assert_problem(message, "layout.yaml:sensors[1].type", "'KinematicTaxle'", "ContactSensor")
    assert message.endswith("did you mean 'KinematicTaxel'?")
    message = sensor_error_message(tmp_path, {"name": "s", "link": "l"})
    assert_problem(message, "layout.yaml:sensors[1].type", "nothing", "KinematicTaxel")


def test_every_problem_of_a_file_is_reported_once(tmp_path):
    doc = {"suite": {"dt": 0.01, "n_envs": -1},
           "sensors": [{"type": "KinematicTaxel", "name": "a", "link": "l", "normal_exponent": 0},
                       {"type": "ElastomerTaxel", "name": "b", "link": "l", "track": [], "entity_idx": 0}]}
    message = config_error_message(write_yaml(tmp_path, doc))
    lines = message.splitlines()
    assert lines[0] == "3 configuration problems:"
    assert [line.split(": ")[0].rsplit("layout.yaml:", 1)[1] for line in lines[1:]] == [
        "suite.n_envs", "sensors[0].normal_exponent", "sensors[1].entity_idx"]


# ------------------------------------------------------------------------------ rules across sensors (suite_checks)
def test_jitter_must_be_below_each_sensors_evaluation_period(tmp_path):
    ok = {"type": "ContactProbe", "name": "slow", "link": "l", "update_period": 0.03, "delay": 0.03, "jitter": 0.02}
    bad = {"type": "ContactProbe", "name": "fast", "link": "l", "delay": 0.03, "jitter": 0.01}
    load_config({"suite": {"dt": 0.01}, "sensors": [ok]})  # dt = 3 engine steps = 0.03 s > 0.02
    message = config_error_message(write_yaml(tmp_path, {"suite": {"dt": 0.01}, "sensors": [ok, bad]}))
    assert_problem(message, "layout.yaml:sensors[1].jitter", "0.01", "jitter < dt = 0.01 s")


def test_shared_thermal_settings_conflicts(tmp_path):
    grid = {"type": "TemperatureGrid", "link": "pad"}
    doc = {"suite": {"dt": 0.01}, "materials": {"steel": {}, "copper": {"conductivity": 400}}, "sensors": [
        {**grid, "name": "t1", "ambient_temperature": 20, "convection_coefficient": 5,
         "properties_dict": {"ball": "steel"}, "simulate_all_link_temperatures": True},
        {**grid, "name": "t2", "link": "pad", "ambient_temperature": 25, "convection_coefficient": 5,
         "update_period": 0.02, "properties_dict": {"ball": "copper"}},
    ]}
    message = config_error_message(write_yaml(tmp_path, doc))
    assert_problem(message, "layout.yaml:sensors[1].link", "'pad'", "one TemperatureGrid per link")
    assert_problem(message, "layout.yaml:sensors[1].properties_dict.ball", "{'base_temperature'", "the same material")
    assert_problem(message, "layout.yaml:sensors[1].ambient_temperature", "25", "one value for every TemperatureGrid")
    assert "layout.yaml:sensors[0]=20" in message
    assert "convection_coefficient: conflicting" not in message  # equal values agree
    assert_problem(message, "layout.yaml:sensors[1].update_period", "0.02", "one value")


def test_contact_sources_must_name_contact_sensors(tmp_path):
    doc = {"suite": {"dt": 0.01}, "sensors": [
        {"type": "KinematicTaxel", "name": "palm", "link": "l"},
        {"type": "ContactDepthProbe", "name": "depth", "link": "l"},
        {"type": "JointTorque", "name": "jt", "contact_sources": ["palm", "depth", "plam2"]},
    ]}
    message = config_error_message(write_yaml(tmp_path, doc))
    assert_problem(message, "layout.yaml:sensors[2].contact_sources", "'depth'", "KinematicTaxel / ContactSensor")
    assert_problem(message, "layout.yaml:sensors[2].contact_sources", "'plam2'", "(palm)")
    assert "did you mean 'palm'?" in message


# ------------------------------------------------------------------------------ YAML-level errors
def test_yaml_duplicate_key_names_line(tmp_path):
    path = write_yaml(tmp_path, "suite: {dt: 0.01}\nsensors:\n  - type: ContactProbe\n    name: a\n"
                                "    link: l\n    name: b\n")
    message = config_error_message(path)
    assert message.startswith(f"{path}:6: duplicate key 'name'")
    assert "first at line 4" in message


def test_yaml_syntax_error_names_line_and_column(tmp_path):
    path = write_yaml(tmp_path, "suite: {dt: 0.01\nsensors: []\n")
    assert config_error_message(path).startswith(f"{path}:2:8: YAML syntax error")


@pytest.mark.parametrize("text", ["", "- a\n- b\n", "just text\n"])
def test_top_level_must_be_a_mapping(tmp_path, text):
    assert "the configuration is not a mapping" in config_error_message(write_yaml(tmp_path, text))


def test_missing_config_file(tmp_path):
    message = config_error_message(tmp_path / "nope.yaml")
    assert message.startswith(f"{tmp_path / 'nope.yaml'}: file not found")


# ------------------------------------------------------------------------------ formatter and suggestions
def test_formatter_reproduces_the_spec_example():
    err = config_error("layout.yaml:sensors[2]", "probe_radius", "negative radius at [3, 1]", -0.002,
                       ">= 0 (0 marks a filler probe)")
    assert isinstance(err, ConfigError) and isinstance(err, ValueError)
    assert str(err) == ("layout.yaml:sensors[2].probe_radius: negative radius at [3, 1]; got -0.002; "
                        "allowed: >= 0 (0 marks a filler probe)")
    assert format_problem("KinematicTaxel(name='pad')", "link", "unknown body", "fingr", "a body name",
                          "did you mean 'finger'?") == (
        "KinematicTaxel(name='pad').link: unknown body; got 'fingr'; allowed: a body name; did you mean 'finger'?")
    assert format_problem("layout.yaml:", "suite.dt", "x", 1, "y") == "layout.yaml:suite.dt: x; got 1; allowed: y"


def test_suggest_lists_up_to_five_closest_names():
    links = ["finger_tip", "finger_base", "palm", "thumb_tip", "wrist", "forearm", "finger_mid"]
    text = suggest("fingr_tip", links)
    assert text.startswith("did you mean 'finger_tip'")
    assert text.count("'") == 10  # five names
    assert suggest("zzz", ["a"], cutoff=0.6) == ""
    assert suggest("palm", ["palm", "plam"], cutoff=0.6) == "did you mean 'palm', 'plam'?"


def test_fallback_messages_send_the_reader_to_the_option_reference_that_ships():
    """An error pydantic describes without allowed values points at a page the user has (it once named a file
    outside the repository)."""
    from tactile_sim.config.validation_errors import OPTION_REFERENCE

    assert "docs/reference/options.md" in OPTION_REFERENCE and "tactile-sim schema" in OPTION_REFERENCE
    repo = Path(__file__).resolve().parents[2]
    if (repo / "docs").is_dir():
        assert (repo / "docs" / "reference" / "options.md").is_file()
