"""``tactile-sim check``: a configuration validated and described without torch or Warp; ``replay``, ``node`` and
``demo`` refuse a bad configuration the same way before they import the library."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import trimesh
import yaml

from helpers_offline import run_cli
from tactile_sim.cli.check import summarize
from tactile_sim.config import load_config
from tactile_sim.config.paths import resolve_package_uri
from tactile_sim.demo_trajectory import DEMO_CONFIG, DEMO_URDF
from tactile_sim.ros.node_core import NodeCore
from tactile_sim.ros.node_params import NodeParams
from tactile_sim.errors import ConfigError
from tactile_sim.suite import SensorSuite

NOT_A_MAPPING = "the configuration is not a mapping; got None; allowed: a mapping with suite, robot"

LIGHT = """
import sys
from tactile_sim.cli import main
status = main(sys.argv[1:])
print("status", status, "heavy", sorted(m for m in ("torch", "warp", "trimesh", "scipy", "matplotlib")
                                       if m in sys.modules))
"""


def check_in_new_process(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", LIGHT, "check", *args], capture_output=True, text=True, timeout=120)


def test_check_imports_neither_torch_nor_warp(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    bad = check_in_new_process(str(empty))
    assert bad.stdout.splitlines()[-1] == "status 2 heavy []"
    assert f"tactile-sim check: error: {empty}: {NOT_A_MAPPING}" in bad.stderr
    good = check_in_new_process(DEMO_CONFIG)  # scipy: the KD-tree of its ElastomerTaxel's layout scale
    assert good.stdout.splitlines()[-1] == "status 0 heavy ['scipy']"
    raw = yaml.safe_load(resolve_package_uri(DEMO_CONFIG).read_text())
    raw["sensors"] = [s for s in raw["sensors"] if s["type"] != "ElastomerTaxel"]
    raw["robot"]["urdf"] = str(DEMO_URDF)
    no_gel = tmp_path / "no_gel.yaml"
    no_gel.write_text(yaml.safe_dump(raw))
    assert check_in_new_process(str(no_gel)).stdout.splitlines()[-1] == "status 0 heavy []"


def test_check_describes_what_the_node_builds():
    """Sizes and topics as the node built from the same configuration has them."""
    config = load_config(DEMO_CONFIG)
    core = NodeCore(config, NodeParams(publish_ground_truth=True))
    rows = summarize(config, ground_truth=True, links=set(core.suite.robot.link_names))
    published = {t.name for t in core.topics()} - {"~/markers", "/diagnostics"}
    assert {topic for r in rows for topic, _ in r.topics} == published
    kinds = {t.name: t.message_type for t in core.topics()}
    assert all(kinds[topic] == kind for r in rows for topic, kind in r.topics)
    for r in rows:
        if r.unit == "taxels":
            assert r.count == len(core.suite.layouts[r.name].positions.reshape(-1, 3)), r.name
    by_name = {r.name: r for r in rows}
    assert by_name["pad_left"].imperfections == ("noise", "resolution")
    assert by_name["gel_right"].imperfections == ()
    assert by_name["thermal_left"].count == 12 and by_name["palm_contact"].count == 1


def test_check_prints_the_table():
    status, out, err = run_cli("check", DEMO_CONFIG, "--robot", str(DEMO_URDF))
    assert status == 0 and err == ""
    assert out.splitlines()[0].endswith("valid; 10 sensors, suite at 200 Hz on cpu (float32)")
    assert "    ~/palm_contact/palm/wrench  (geometry_msgs/msg/WrenchStamped)" in out.splitlines()


def test_check_finds_a_link_missing_from_the_robot(tmp_path):
    raw = {"suite": {"dt": 0.01}, "sensors": [{"type": "KinematicTaxel", "name": "pad", "link": "fingertip_lft"}]}
    path = tmp_path / "pad.yaml"
    path.write_text(yaml.safe_dump(raw))
    status, _, err = run_cli("check", str(path), "--robot", str(DEMO_URDF))
    assert status == 2
    assert f"{path}:sensors[0].link: no link of that name in {DEMO_URDF}; got 'fingertip_lft'" in err
    assert "fingertip_left" in err  # the closest name is suggested


@pytest.mark.parametrize("sensor, option", [
    ({"type": "ProximityTaxel", "name": "p", "link": "fingertip_left", "track": ["can", "nobody"]}, "track"),
    ({"type": "KinematicTaxel", "name": "k", "link": "fingertip_left", "ignore": ["nobody"]}, "ignore"),
])
def test_check_finds_a_tracked_or_ignored_body_the_scene_lacks(tmp_path, sensor, option):
    """As the build refuses it, but before the library is imported."""
    raw = {"suite": {"dt": 0.01}, "objects": [{"name": "can", "geometry": [{"sphere": {"radius": 0.02}}]}],
           "sensors": [sensor]}
    path = tmp_path / "scene.yaml"
    path.write_text(yaml.safe_dump(raw))
    status, _, err = run_cli("check", str(path), "--robot", str(DEMO_URDF))
    assert status == 2 and f"{path}:sensors[0].{option}: no body of that name in {DEMO_URDF}; got 'nobody'" in err
    assert "links and objects" in err, err


@pytest.mark.parametrize("sensor, problem", [
    ({"type": "KinematicTaxel", "name": "p\u00e4d", "link": "fingertip_left"},
     "sensors[0].name: the node publishes each sensor on ~/<name>; got 'päd'; allowed: letters, digits and '_'"),
    ({"type": "KinematicTaxel", "name": "markers", "link": "fingertip_left"}, "other than markers"),
    ({"type": "ContactSensor", "name": "cs", "prim_path": "thumb_.*"},
     "sensors[0].prim_path: matches no body; got 'thumb_.*'; allowed: a body name or a regular expression"),
])
@pytest.mark.parametrize("command", ["check", "replay"])
def test_check_and_replay_refuse_what_the_node_refuses_before_the_build(tmp_path, sensor, problem, command):
    """Sensor names that cannot be topics and ContactSensor patterns that match no body: refused as the build
    refuses them, by check and by a replay before it imports the library."""
    raw = {"suite": {"dt": 0.01}, "robot": {"urdf": str(DEMO_URDF)}, "sensors": [sensor]}
    path = tmp_path / "scene.yaml"
    path.write_text(yaml.safe_dump(raw))
    args = ["check", str(path)] if command == "check" else ["replay", "no_such.mcap", "-o", "out", "--config",
                                                              str(path)]
    status, _, err = run_cli(*args)
    assert status == 2 and (f"{path}:{problem}" if "sensors[0]" in problem else problem) in err, err


@pytest.mark.parametrize("command", [["replay", "no_such.mcap", "-o", "out.mcap"], ["node", "--transport", "dds"]])
def test_commands_refuse_a_bad_configuration_before_building(tmp_path, command):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    status, _, err = run_cli(*command, "--config", str(empty))
    assert status == 2 and f"tactile-sim {command[0]}: error: {empty}: {NOT_A_MAPPING}" in err


def test_node_refuses_a_robot_file_it_would_read_without_end_and_an_empty_config_path():
    status, out, err = run_cli("node", "--transport", "dds", "--robot", "/dev/zero")
    assert status == 2 and "--robot '/dev/zero': not a regular file" in out + err
    status, out, err = run_cli("node", "--transport", "dds", "--config", "")  # not the package's demo config
    assert status == 2 and "--config '': an empty path" in out + err


@pytest.mark.parametrize("value, problem", [("[1", "expected ',' or ']'"), ("\t1", "found character '\\t'"),
                                            ("!!python/object:os.system 1", "could not determine a constructor")])
def test_a_node_parameter_that_is_not_yaml_exits_2_naming_it(value, problem):
    status, out, err = run_cli("node", "--transport", "dds", "-p", f"update_rate:={value}")
    assert status == 2 and f"-p {'update_rate:=' + value!r}: the value is not valid YAML ({problem}" in out + err


@pytest.mark.parametrize("command", [["compile", str(DEMO_CONFIG)], ["demo", "-o", "out"],
                                     ["replay", "no_such.mcap", "-o", "out.mcap", "--config", str(DEMO_CONFIG)]])
def test_commands_refuse_an_unknown_device_naming_the_allowed_ones(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    status, _, err = run_cli(*command, "--device", "tpu")
    assert status == 2 and "--device: unknown device; got 'tpu'; allowed: 'cpu', 'cuda', 'cuda:<index>'" in err, err


@pytest.mark.parametrize("suite, option, got", [({"rate": 0.5}, "rate", "0.5"), ({"dt": 2.0}, "dt", "2.0")])
def test_a_replay_at_the_configured_rate_refuses_one_the_node_cannot_step_at(tmp_path, monkeypatch, suite, option,
                                                                              got):
    from tactile_sim.offline import replay as replay_module

    monkeypatch.setattr(replay_module, "replay_bag", lambda *a, **k: pytest.fail("replayed at a rate it refuses"))
    from tactile_sim.config.paths import resolve_package_uri

    data = yaml.safe_load(resolve_package_uri(DEMO_CONFIG).read_text())
    del data["suite"]["rate"]
    data["suite"].update(suite)
    config = tmp_path / "slow.yaml"
    config.write_text(yaml.safe_dump(data))
    status, _, err = run_cli("replay", str(tmp_path / "in"), "--config", str(config), "-o", str(tmp_path / "o.mcap"))
    assert status == 2 and f"{config}:suite.{option}: a replay steps at 0.5 Hz" in err and f"got {got}" in err, err
    assert "allowed: 1 to 10000 Hz (dt 0.0001 to 1 s), or --rate HZ" in err


def test_the_library_imports_trimesh_and_matplotlib_only_where_used():
    code = ("import sys, tactile_sim.suite, tactile_sim.offline.demo, tactile_sim.offline.replay; "
            "print(sorted(m for m in ('trimesh', 'matplotlib') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stderr


def test_compile_fills_the_kernel_cache_for_the_next_start(tmp_path):
    config = tmp_path / "pad.yaml"
    config.write_text(yaml.safe_dump({
        "suite": {"dt": 0.01},
        "objects": [{"name": "pad", "geometry": [{"box": {"size": [0.08, 0.08, 0.02]}}]}],
        "sensors": [{"type": "KinematicTaxel", "name": "skin", "link": "pad",
                     "probe_local_pos": {"grid": {"lo": [-0.03, -0.03, 0.01], "hi": [0.03, 0.03, 0.01], "nx": 4,
                                                  "ny": 4}}}]}))
    env = {**os.environ, "WARP_CACHE_PATH": str(tmp_path / "cache")}
    env.pop("WARP_LOG_LEVEL", None)
    command = [sys.executable, "-m", "tactile_sim", "compile", str(config)]
    first = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr
    assert re.fullmatch(r"compiling [1-9]\d* sensor kernels for cpu \(first run only\)…\n", first.stderr)
    assert first.stdout.startswith("kernels of 1 sensors ready on cpu (float32) in ")
    second = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert second.returncode == 0 and second.stderr == ""  # nothing left to compile, nothing from Warp


def test_check_lists_output_profiles_and_refuses_a_topic_used_twice(tmp_path):
    """The profile topics of ``outputs:`` are listed as the node publishes them; two outputs on one topic are refused
    by check as the node refuses them (exit 2, the output entry named)."""
    sensor = {"type": "KinematicTaxel", "name": "pad", "link": "fingertip_left", "probe_radius": 0.002,
              "probe_local_pos": {"grid": {"lo": [-0.005, -0.005, 0], "hi": [0.005, 0.005, 0], "nx": 3, "ny": 3}},
              "outputs": [{"profile": "tactile_state"}, {"profile": "wrench", "topic": "/ft"},
                          {"profile": "pointcloud"}]}
    path = tmp_path / "pad.yaml"
    path.write_text(yaml.safe_dump({"suite": {"rate": 100}, "robot": {"urdf": str(DEMO_URDF)}, "sensors": [sensor]}))
    status, out, _ = run_cli("check", str(path))
    assert status == 0
    lines = out.splitlines()
    for topic, kind in (("/tactile_states", "tactile_msgs/msg/TactileState"),
                        ("/ft", "geometry_msgs/msg/WrenchStamped"), ("~/pad/points", "sensor_msgs/msg/PointCloud2")):
        assert f"    {topic}  ({kind})" in lines
    config = load_config(path)
    core = NodeCore(config, NodeParams())
    listed = {topic for r in summarize(config) for topic, _ in r.topics}
    assert listed == {t.name for t in core.topics()} - {"~/markers", "/diagnostics"}
    sensor["outputs"].append({"profile": "pointcloud", "topic": "/ft"})
    path.write_text(yaml.safe_dump({"suite": {"rate": 100}, "robot": {"urdf": str(DEMO_URDF)}, "sensors": [sensor]}))
    status, _, err = run_cli("check", str(path))
    assert status == 2 and f"{path}:sensors[0].outputs[3].topic: topic already published" in err


METAL = {"base_temperature": 25.0, "conductivity": 200.0, "density": 2700.0, "specific_heat": 900.0,
         "emissivity": 0.1}
GRID_3X3 = {"grid": {"lo": [-0.004, -0.004, 0.0], "hi": [0.004, 0.004, 0.0], "nx": 3, "ny": 3}}
BUILD_REFUSES = {
    ".probe_local_pos: not a numeric array": {"type": "KinematicTaxel", "probe_local_pos": [[0, 0, 0], [0, 0]]},
    ".probe_radius: shape (2,)": {"type": "ContactDepthProbe", "probe_local_pos": GRID_3X3,
                                  "probe_radius": [0.001, 0.001]},
    ".probe_local_normal: shape (2,)": {"type": "ContactProbe", "probe_local_pos": [[0, 0, 0], [0.002, 0, 0]],
                                        "probe_local_normal": [0.0, 1.0]},
    ".noise: wrong shape (9,)": {"type": "KinematicTaxel", "probe_local_pos": GRID_3X3, "noise": [0.01] * 9},
    ".bias: wrong shape (2,)": {"type": "ProximityTaxel", "track": ["can"], "probe_local_pos": [[0, 0, 0]],
                                "bias": [0.1] * 2},
    ".crosstalk_strength: spatial crosstalk needs a regular planar": {
        "type": "KinematicTaxel", "probe_local_pos": [[0, 0, 0], [0.002, 0, 0]], "crosstalk_strength": 0.2,
        "crosstalk_sigma": 0.002},
    ".probe_gain: wrong shape (1, 2)": {"type": "KinematicTaxel", "probe_local_pos": GRID_3X3,
                                        "probe_gain": [[1.0, 1.0]]},
    ".probe_local_pos: active probes coincide": {"type": "ElastomerTaxel", "track": ["can"],
                                                 "probe_local_pos": [[0, 0, 0], [0, 0, 0], [0, 0, 0]]},
    ": layout file": {"type": "ContactDepthProbe", "probe_local_pos": {"file": "pads.csv"}},
    ".noise: wrong shape (2,)": {"type": "TemperatureGrid", "grid_size": [2, 2, 1], "noise": [0.1, 0.1],
                                 "properties_dict": {"fingertip_left": METAL}},
    ".properties_dict: no material for the sensor link 'fingertip_left'": {
        "type": "TemperatureGrid", "grid_size": [2, 2, 1], "properties_dict": {"can": METAL}},
    ".properties_dict: unknown body 'cup'": {"type": "TemperatureGrid", "grid_size": [2, 2, 1],
                                             "properties_dict": {"fingertip_left": METAL, "cup": METAL}},
    ".bias: wrong shape (3,)": {"type": "JointTorque", "link": None, "joints": ["slide"], "bias": [0.1, 0.2, 0.3]},
    ".noise: wrong shape (1,)": {"type": "JointTorque", "link": None, "dofs_idx_local": [0, 1], "noise": [0.1]},
    ".random_walk: wrong shape (2,)": {"type": "JointTorque", "link": None, "random_walk": [0.1, 0.1]},  # all 3
    ".joints: joint 'fingertip_left_joint' is fixed": {"type": "JointTorque", "link": None,
                                                       "joints": ["slide", "fingertip_left_joint"], "noise": [0.1]},
    ".joints: unknown joint; got 'elbow'": {"type": "JointTorque", "link": None, "joints": ["elbow"]},
    ".armature.elbow: not a movable joint": {"type": "JointTorque", "link": None, "armature": {"elbow": 0.1}},
    ".robot: unknown robot; got 'arm'": {"type": "JointTorque", "link": None, "robot": "arm"},
    ".filter_prim_paths_expr[0]: matches the sensor body": {"type": "ContactSensor", "link": None,
                                                            "prim_path": "fingertip_left",
                                                            "filter_prim_paths_expr": ["fingertip_.*"]},
}
"""What the build says (after ``sensors[0]``) → a sensor (on the demo gripper, beside a can) that it refuses for
what the configuration declares."""


@pytest.mark.parametrize("case", list(BUILD_REFUSES))
def test_check_refuses_what_the_build_refuses_with_the_same_message(tmp_path, case):
    sensor = {"name": "s", "link": "fingertip_left", **BUILD_REFUSES[case]}
    sensor = {k: v for k, v in sensor.items() if v is not None}  # None: no link
    (tmp_path / "pads.csv").write_text("x,y,z\n0,0,0\n0.002,zero,0\n")
    raw = {"suite": {"dt": 0.01}, "robot": {"urdf": str(DEMO_URDF)},
           "objects": [{"name": "can", "geometry": [{"sphere": {"radius": 0.02}}]}], "sensors": [sensor]}
    path = tmp_path / "scene.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError) as built:
        SensorSuite(load_config(path))
    assert f"sensors[0]{case}" in str(built.value)
    status, _, err = run_cli("check", str(path))
    assert status == 2 and err.strip() == f"tactile-sim check: error: {built.value}", (err, str(built.value))


@pytest.mark.parametrize("euler", [[0.0, 0.0, 0.0], [0.0, 90.0, 0.0]])
def test_check_reads_and_rotates_a_layout_file_without_torch_and_counts_its_taxels(tmp_path, euler):
    """scipy: the gel's layout scale (a KD-tree)."""
    (tmp_path / "pads.csv").write_text("x,y,z\n" + "".join(f"{0.002 * k},0,0\n" for k in range(7)))
    raw = {"suite": {"dt": 0.01},
           "sensors": [{"type": "ElastomerTaxel", "name": "gel", "link": "pad", "probe_local_pos": {"file": "pads.csv"},
                        "track": ["can"], "euler_offset": euler, "noise": [0.01] * 21}]}
    path = tmp_path / "scene.yaml"
    path.write_text(yaml.safe_dump(raw))
    run = check_in_new_process(str(path))
    assert run.stdout.splitlines()[-1] == "status 0 heavy ['scipy']", run.stderr
    assert re.search(r"gel\s+ElastomerTaxel\s+pad\s+7 taxels", run.stdout)


@pytest.mark.parametrize("euler", [[0.0, 0.0, 0.0], [0.3, 2.0, 10.0]])
@pytest.mark.parametrize("gap", [1e-9, 1.0000001e-9, 0.9999999e-9])
def test_check_decides_coincident_gel_markers_at_the_bound_as_the_build(tmp_path, euler, gap):
    """ε₀ a hair from its bound, after a rotation: check and build compute the same distances."""
    sensor = {"type": "ElastomerTaxel", "name": "gel", "link": "fingertip_left", "track": ["can"],
              "probe_local_pos": [[0, 0, 0.01], [gap, 0, 0.01], [0.003, 0, 0.01]], "pos_offset": [0.001, 0, 0],
              "euler_offset": euler}
    raw = {"suite": {"dt": 0.01}, "robot": {"urdf": str(DEMO_URDF)},
           "objects": [{"name": "can", "geometry": [{"sphere": {"radius": 0.02}}]}], "sensors": [sensor]}
    path = tmp_path / "scene.yaml"
    path.write_text(yaml.safe_dump(raw))
    try:
        SensorSuite(load_config(path))
        built = None
    except ConfigError as exc:
        built = str(exc)
    status, _, err = run_cli("check", str(path))
    assert (status, err.strip()) == ((0, "") if built is None else (2, f"tactile-sim check: error: {built}"))


def robot_with_a_relative_mesh(folder):
    """A one-link URDF in ``folder`` whose collision mesh is named relative to it, and a pad sensor on that link."""
    folder.mkdir()
    trimesh.creation.box(extents=(0.08, 0.08, 0.02)).export(folder / "pad.stl")
    (folder / "robot.urdf").write_text('<robot name="r"><link name="pad"><collision><geometry>'
                                       '<mesh filename="pad.stl"/></geometry></collision></link></robot>\n')
    config = folder.parent / "pad.yaml"
    config.write_text(yaml.safe_dump({
        "suite": {"dt": 0.01},
        "sensors": [{"type": "KinematicTaxel", "name": "skin", "link": "pad",
                     "probe_local_pos": {"grid": {"lo": [-0.03, -0.03, 0.01], "hi": [0.03, 0.03, 0.01], "nx": 4,
                                                  "ny": 4}}}]}))
    return config


def test_a_robot_file_on_the_command_line_is_read_as_robot_urdf_would_be(tmp_path, monkeypatch):
    """--robot names a file: its meshes resolve against its folder (not the working directory) as they do when the
    YAML's robot.urdf names it."""
    config = robot_with_a_relative_mesh(tmp_path / "robot")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    for command in ("check", "compile"):
        status, out, err = run_cli(command, str(config), "--robot", "../robot/robot.urdf")
        assert status == 0, err
    assert "skin" in run_cli("check", str(config), "--robot", "../robot/robot.urdf")[1]


@pytest.mark.parametrize("command", ["check", "compile", "replay"])
def test_a_robot_file_that_is_a_pipe_or_over_the_size_cap_is_not_read(tmp_path, monkeypatch, command):
    config = robot_with_a_relative_mesh(tmp_path / "robot")
    pipe = tmp_path / "robot.urdf"
    os.mkfifo(pipe)  # read, it would block until a writer comes: the test would hang
    extra = ["never_read.mcap", "-o", str(tmp_path / "o.mcap"), "--config"] if command == "replay" else []
    status, _, err = run_cli(command, *extra, str(config), "--robot", str(pipe))
    assert status == 2 and "--robot: not a regular file" in err and f"got '{pipe}'" in err, err
    monkeypatch.setattr("tactile_sim.text_files.MAX_TEXT_FILE_BYTES", 100)
    status, _, err = run_cli(command, *extra, str(config), "--robot", str(tmp_path / "robot" / "robot.urdf"))
    assert status == 2 and "bytes; allowed: a text file of at most 100 bytes" in err, err
