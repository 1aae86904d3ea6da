"""Errors caused by a file name that file: a NaN in a CSV or NPY layout names the layout file (and line or index),
not only the YAML; ``suite.sdf_cache_dir`` where a regular file is (itself or a parent) is a configuration error
naming the option; an SDF cache folder that cannot be written is a warning naming the folder, and the grid is still
built (the same values as with a writable cache)."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from helpers_config import config_error_message, write_yaml
from helpers_scenes import pad_object
from tactile_sim.config import load_config
from tactile_sim.errors import ConfigError, SceneError
from tactile_sim.geometry.mesh_io import make_mesh_data
from tactile_sim.geometry.sdf_grid import build_sdf_grid
from tactile_sim.suite import SensorSuite


def layout_config(path) -> dict:
    return {"suite": {"dt": 0.01}, "objects": [pad_object()],
            "sensors": [{"type": "ContactProbe", "name": "p", "link": "pad", "probe_local_pos": {"file": str(path)}}]}


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_non_finite_csv_value_names_the_csv_and_its_line(tmp_path, value):
    csv = tmp_path / "taxels.csv"
    csv.write_text(f"# x y z\n0, 0, 0\n0.01, {value}, 0\n")
    with pytest.raises(ConfigError) as info:
        SensorSuite(load_config(layout_config(csv)))
    msg = str(info.value)
    assert f"layout file '{csv}': line 3 has a non-finite value" in msg and "allowed: finite numbers" in msg


def test_a_non_finite_npy_value_names_the_file_and_index(tmp_path):
    npy = tmp_path / "taxels.npy"
    a = np.zeros((4, 3))
    a[2, 1] = np.nan
    np.save(npy, a)
    with pytest.raises(ConfigError) as info:
        SensorSuite(load_config(layout_config(npy)))
    assert f"layout file '{npy}': non-finite value at index [2, 1]; got nan" in str(info.value)


@pytest.mark.parametrize("under", [False, True])
@pytest.mark.parametrize("blocker_kind", ["file", "dangling link"])
def test_sdf_cache_dir_on_a_regular_file_is_a_config_error(tmp_path, under, blocker_kind):
    blocker = tmp_path / "not_a_folder"
    if blocker_kind == "file":
        blocker.write_text("x")
    else:
        blocker.symlink_to(tmp_path / "gone")
    target = blocker / "sdf" if under else blocker
    path = write_yaml(tmp_path, {"suite": {"dt": 0.01, "sdf_cache_dir": str(target)}})
    msg = config_error_message(path)
    what = "is a file" if blocker_kind == "file" else "is a symbolic link that leads nowhere (dangling, or a loop)"
    assert msg.startswith(f"{path}:suite.sdf_cache_dir: not a folder: {blocker} {what}"), msg


def test_a_new_sdf_cache_dir_is_accepted(tmp_path):
    cfg = load_config({"suite": {"dt": 0.01, "sdf_cache_dir": str(tmp_path / "new" / "sdf")}})
    assert cfg.suite.sdf_cache_dir == tmp_path / "new" / "sdf"


def test_an_unwritable_sdf_cache_warns_and_still_builds(tmp_path):
    tm = trimesh.creation.icosphere(subdivisions=1, radius=0.05)
    md = make_mesh_data(tm.vertices, tm.faces, "ball")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.warns(UserWarning, match=f"SDF cache folder '{blocker}' cannot be written"):
        grid = build_sdf_grid(md, cell_size=0.01, cache_dir=blocker)
    reference = build_sdf_grid(md, cell_size=0.01, cache_dir=tmp_path / "ok")
    np.testing.assert_array_equal(grid.values, reference.values)


def test_text_inputs_over_the_size_cap_or_not_regular_files_are_not_read(tmp_path, monkeypatch):
    from tactile_sim import text_files
    from tactile_sim.sensors.layout import probe_layout
    from tactile_sim.world.urdf import RobotModel

    monkeypatch.setattr(text_files, "MAX_TEXT_FILE_BYTES", 25)
    csv = tmp_path / "taxels.csv"
    csv.write_text("0, 0, 0\n0.01, 0, 0\n")  # 20 bytes: read
    assert probe_layout.load_layout_file(csv, "w").positions.shape == (2, 3)
    csv.write_text("0, 0, 0\n0.01, 0, 0\n0.02, 0, 0\n")
    with pytest.raises(ConfigError, match=f"w: layout file '{csv}': 30 bytes; allowed: a text file of at most 25"):
        probe_layout.load_layout_file(csv, "w")
    big = tmp_path / "big.urdf"
    big.write_text('<robot name="r"><link name="base"/></robot>')
    with pytest.raises(ConfigError, match=f"URDF file '{big}': 43 bytes; allowed: a text file of at most 25"):
        RobotModel.from_urdf(big)
    # a device would be read without end: refused by kind, not by its size (0)
    with pytest.raises(ConfigError, match="URDF file '/dev/zero': not a regular file"):
        RobotModel.from_urdf("/dev/zero")
    device = tmp_path / "zero.csv"
    device.symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match=f"w: layout file '{device}': not a regular file"):
        probe_layout.load_layout_file(device, "w")


def test_an_object_mesh_that_cannot_be_read_names_its_yaml_path(tmp_path):
    (tmp_path / "not_a_mesh.stl").write_text("these are not triangles\n")
    cup = {"name": "cup", "geometry": [{"sphere": {"radius": 0.01}}, {"mesh": {"file": "not_a_mesh.stl"}}]}
    config = load_config({"suite": {"dt": 0.01}, "objects": [pad_object(), cup]}, base_dir=tmp_path)
    with pytest.raises(SceneError) as info:
        SensorSuite(config)
    assert str(info.value) == (f"<dict>:objects[1].geometry[1].mesh.file: {tmp_path / 'not_a_mesh.stl'}: mesh file "
                               "holds no triangles"), str(info.value)
