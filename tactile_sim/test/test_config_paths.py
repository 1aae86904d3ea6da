"""Config path resolution: relative paths against the YAML file's folder, ``file://``, and ``package://`` through
the ament index (when present), ``TACTILE_SIM_PACKAGE_PATH`` and the installed tactile_sim package."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import tactile_sim
from helpers_config import config_error_message, write_yaml
from tactile_sim.config import PACKAGE_PATH_ENV, load_config, package_share, resolve_path
from tactile_sim.config.errors import OptionProblem

PKG = "tsim_cfg_test_pkg"
"""A package name no ament index knows."""


@pytest.fixture
def package_root(tmp_path, monkeypatch):
    """A root holding ``PKG/`` with a URDF, a mesh and a sensor YAML that uses relative paths."""
    root = tmp_path / "roots" / "b"
    pkg = root / PKG
    (pkg / "urdf").mkdir(parents=True)
    (pkg / "urdf" / "r.urdf").write_text("<robot name='r'><link name='base'/></robot>")
    (pkg / "meshes").mkdir()
    (pkg / "meshes" / "cup.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    (pkg / "config").mkdir()
    write_yaml(pkg / "config", {"suite": {"dt": 0.01, "sdf_cache_dir": "../cache"},
                                "robot": {"urdf": "../urdf/r.urdf", "search_paths": [".."]},
                                "objects": [{"name": "cup", "geometry": [{"mesh": {"file": "../meshes/cup.obj"}}]}]},
               "suite.yaml")
    empty = tmp_path / "roots" / "a"
    empty.mkdir()
    monkeypatch.setenv(PACKAGE_PATH_ENV, os.pathsep.join([str(empty), str(root)]))
    return pkg


def test_relative_paths_resolve_against_the_yaml_folder_not_the_cwd(package_root, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config(package_root / "config" / "suite.yaml")
    assert config.robot.urdf == package_root / "urdf" / "r.urdf"
    assert config.robot.search_paths == [package_root]
    assert config.objects[0].geometry[0].mesh.file == package_root / "meshes" / "cup.obj"
    assert config.suite.sdf_cache_dir == package_root / "cache"  # a cache folder need not exist yet
    assert not config.suite.sdf_cache_dir.exists()


def test_base_dir_overrides_the_yaml_folder(package_root, tmp_path):
    other = tmp_path / "elsewhere" / "config"
    other.mkdir(parents=True)
    assert "file not found" in config_error_message(package_root / "config" / "suite.yaml", base_dir=other)
    config = load_config(package_root / "config" / "suite.yaml", base_dir=package_root / "config")
    assert config.robot.urdf == package_root / "urdf" / "r.urdf"


def test_mapping_paths_resolve_against_base_dir_or_cwd(package_root, monkeypatch):
    doc = {"suite": {"dt": 0.01}, "robot": {"urdf": "urdf/r.urdf"}}
    assert load_config(doc, base_dir=package_root).robot.urdf == package_root / "urdf" / "r.urdf"
    monkeypatch.chdir(package_root)
    assert load_config(doc).robot.urdf == package_root / "urdf" / "r.urdf"


def test_package_uri_through_the_environment_roots(package_root, tmp_path):
    assert package_share(PKG) == package_root
    doc = {"suite": {"dt": 0.01}, "robot": {"urdf": f"package://{PKG}/urdf/r.urdf"},
           "objects": [{"name": "cup", "geometry": [{"mesh": {"file": f"package://{PKG}/meshes/cup.obj",
                                                              "scale": [1, 2, 3]}}]}]}
    config = load_config(write_yaml(tmp_path, doc))
    assert config.robot.urdf == package_root / "urdf" / "r.urdf"
    assert config.objects[0].geometry[0].mesh.file == package_root / "meshes" / "cup.obj"
    assert config.objects[0].geometry[0].mesh.scale == (1.0, 2.0, 3.0)


def test_config_file_itself_may_be_a_package_uri(package_root):
    config = load_config(f"package://{PKG}/config/suite.yaml")
    assert config.source == f"package://{PKG}/config/suite.yaml"
    assert config.robot.urdf == package_root / "urdf" / "r.urdf"


def test_first_root_holding_the_file_wins(package_root, tmp_path, monkeypatch):
    first = tmp_path / "roots" / "first"
    (first / PKG / "urdf").mkdir(parents=True)
    (first / PKG / "urdf" / "other.urdf").write_text("<robot name='o'/>")
    monkeypatch.setenv(PACKAGE_PATH_ENV, os.pathsep.join([str(first), str(package_root.parent)]))
    assert resolve_path(f"package://{PKG}/urdf/other.urdf", None) == first / PKG / "urdf" / "other.urdf"
    assert resolve_path(f"package://{PKG}/urdf/r.urdf", None) == package_root / "urdf" / "r.urdf"


def test_unknown_package_and_missing_file_errors(package_root, tmp_path):
    doc = {"suite": {"dt": 0.01}, "robot": {"urdf": "package://no_such_pkg_xyz/r.urdf"},
           "objects": [{"name": "cup", "geometry": [{"mesh": {"file": f"package://{PKG}/meshes/none.obj"}}]}]}
    message = config_error_message(write_yaml(tmp_path, doc))
    assert ("layout.yaml:robot.urdf: ROS package 'no_such_pkg_xyz' not found (ament index, TACTILE_SIM_PACKAGE_PATH); "
            "got 'package://no_such_pkg_xyz/r.urdf'") in message
    assert (f"layout.yaml:objects[0].geometry[0].mesh.file: file not found (resolved to "
            f"{package_root / 'meshes' / 'none.obj'}); got 'package://{PKG}/meshes/none.obj'") in message
    doc = {"suite": {"dt": 0.01}, "robot": {"urdf": "/dev/zero"}, "objects": [
        {"name": "cup", "geometry": [{"mesh": {"file": str(tmp_path)}}]}]}
    message = config_error_message(write_yaml(tmp_path, doc))
    assert "robot.urdf: not a regular file (a folder, a device or a pipe) (resolved to /dev/zero)" in message
    assert f"mesh.file: not a regular file (a folder, a device or a pipe) (resolved to {tmp_path})" in message


@pytest.mark.parametrize("uri", ["package://", f"package://{PKG}", f"package://{PKG}/", "package:///x"])
def test_malformed_package_uri(uri, package_root):
    with pytest.raises(OptionProblem, match="malformed package URI"):
        resolve_path(uri, None)


def test_unsupported_scheme_and_file_uri(tmp_path):
    target = tmp_path / "r.urdf"
    target.write_text("<robot name='r'/>")
    assert resolve_path(f"file://{target}", None) == target
    with pytest.raises(OptionProblem, match="unsupported URI scheme"):
        resolve_path("http://example.invalid/r.urdf", None)
    with pytest.raises(OptionProblem, match="folder not found"):
        resolve_path("r.urdf", tmp_path, "dir")


def test_installed_tactile_sim_files_resolve_without_ros(monkeypatch):
    monkeypatch.delenv(PACKAGE_PATH_ENV, raising=False)
    # package.xml ships with the package in every install form (source tree, pip data files, ament share)
    path = resolve_path("package://tactile_sim/package.xml", None)
    assert path.is_file() and path.name == "package.xml"
    assert "<name>tactile_sim</name>" in path.read_text()
    python_pkg = Path(tactile_sim.__file__).resolve().parent
    assert resolve_path("package://tactile_sim/errors.py", None) == python_pkg / "errors.py"


def test_a_path_the_file_system_refuses_is_an_option_error_naming_it(tmp_path):
    too_long = "x" * 300 + ".urdf"  # one name past the 255 bytes of a file system's names
    with pytest.raises(OptionProblem, match="unusable path .File name too long.") as raised:
        resolve_path(too_long, tmp_path)
    assert f"got {too_long[:40]}" in str(raised.value).replace("'", "")
    message = config_error_message(write_yaml(tmp_path, {"suite": {"dt": 0.01}, "robot": {"urdf": too_long}}))
    assert "layout.yaml:robot.urdf: unusable path (File name too long)" in message


def test_a_home_folder_of_an_unknown_user_is_an_option_error():
    with pytest.raises(OptionProblem, match="unknown home folder in '~'"):
        resolve_path("~no_such_user_tsim_xyz/r.urdf", None)
