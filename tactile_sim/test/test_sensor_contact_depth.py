"""ContactDepthProbe (docs/models/contact_depth_probe.md#model) and ContactProbe (docs/models/contact_probe.md#model):
closed-form checks on a pad."""

import numpy as np
import pytest
import torch

from helpers_scenes import flipped_plane, grid_layout, make_suite, step
from tactile_sim.errors import ConfigError

R = 0.002


def sphere(name="ball", r=0.02):
    return {"name": name, "geometry": [{"sphere": {"radius": r}}], "pose": {"xyz": [0, 0, 1.0]}}


def big_box(name="block", size=(0.2, 0.2, 0.05)):
    return {"name": name, "geometry": [{"box": {"size": list(size)}}], "pose": {"xyz": [0, 0, 1.0]}}


def depth_sensor(**extra):
    return {"type": "ContactDepthProbe", "name": "depth", "link": "pad", "probe_radius": R,
            "probe_local_pos": grid_layout(9, 0.02), **extra}


def probe_xy(n=9, half=0.02):
    u = np.linspace(-half, half, n)
    return np.stack(np.meshgrid(u, u, indexing="xy"), -1)  # [row(y), col(x), 2]


def test_sphere_pressed_into_pad_has_the_closed_form_depth_field(dtype):
    r, d = 0.02, 0.002
    suite = make_suite([depth_sensor()], [sphere(r=r)], dtype="float64" if dtype == torch.float64 else "float32")
    step(suite, 0.0, ball=[0.0, 0.0, r - d])
    got = suite.read_ground_truth("depth").double().numpy()
    rho = np.linalg.norm(probe_xy(), axis=-1)
    expected = np.maximum(0.0, R + r - np.sqrt(rho**2 + (r - d) ** 2))
    tol = 1e-12 if dtype == torch.float64 else 2e-8
    np.testing.assert_allclose(got, expected, atol=tol)
    assert got[4, 4] == pytest.approx(R + d, abs=tol)
    assert (got > 0).sum() < got.size  # the field has an edge inside the grid


def test_box_face_penetration_side_faces_and_outside():
    d, half = 0.001, 0.0105  # box footprint ±10.5 mm; probes every 2 mm
    suite = make_suite([depth_sensor(probe_local_pos=grid_layout(21, 0.02))],
                       [big_box(size=(2 * half, 2 * half, 0.05))])
    step(suite, 0.0, block=[0.0, 0.0, 0.025 - d])
    got = suite.read_ground_truth("depth").numpy()
    xy = probe_xy(21)
    inside = np.minimum(half - np.abs(xy[..., 0]), half - np.abs(xy[..., 1]))  # >0 inside the footprint
    covered = inside > d
    np.testing.assert_allclose(got[covered], R + d, atol=1e-15)
    rim = (inside > 0) & ~covered
    np.testing.assert_allclose(got[rim], R + inside[rim], atol=1e-15)
    # outside the side faces: distance to the box (edge or face) at z = 0
    e = np.linalg.norm(np.maximum(np.abs(xy) - half, 0.0), axis=-1)
    outside = inside < 0
    np.testing.assert_allclose(got[outside], np.maximum(0.0, R - e[outside]), atol=1e-15)
    assert rim.any() and covered.any() and (got[outside] > 0).any() and (got[outside] == 0).any()


def test_hover_reads_radius_minus_gap():
    gap = 0.0005
    suite = make_suite([depth_sensor()], [big_box()])
    step(suite, 0.0, block=[0.0, 0.0, 0.025 + gap])
    np.testing.assert_allclose(suite.read_ground_truth("depth").numpy(), R - gap, atol=1e-15)


def test_ignored_object_and_own_link_are_never_sensed():
    suite = make_suite([depth_sensor(ignore=["block"])], [big_box()])
    step(suite, 0.0, block=[0.0, 0.0, 0.02])
    assert torch.count_nonzero(suite.read_ground_truth("depth")) == 0
    # probes buried 5 mm inside the pad's own box, empty scene otherwise
    buried = make_suite([depth_sensor(probe_local_pos=[[0, 0, -0.005], [0.01, 0, -0.005]])], [])
    step(buried, 0.0)
    assert torch.count_nonzero(buried.read_ground_truth("depth")) == 0


def test_probe_gain_scales_measured_only():
    suite = make_suite([depth_sensor(probe_gain=1.5)], [sphere()])
    step(suite, 0.0, ball=[0.0, 0.0, 0.018])
    gt = suite.read_ground_truth("depth")
    assert torch.equal(suite.read("depth"), 1.5 * gt)
    assert gt.max() == pytest.approx(R + 0.002, abs=1e-15)


def test_grid_and_its_flattening_read_the_same():
    flat = probe_xy().reshape(-1, 2)
    flat = np.concatenate([flat, np.zeros((len(flat), 1))], 1).tolist()
    suite = make_suite([depth_sensor(), depth_sensor(name="flat", probe_local_pos=flat)], [sphere()])
    step(suite, 0.0, ball=[0.003, -0.002, 0.018])
    grid = suite.read_ground_truth("depth")
    assert grid.shape == (9, 9) and suite.read_ground_truth("flat").shape == (81,)
    assert torch.equal(grid.reshape(-1), suite.read_ground_truth("flat"))


def test_mesh_object_exact_and_grid_backends():
    pytest.importorskip("trimesh")
    import tempfile

    import trimesh

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/block.stl"
        trimesh.creation.box(extents=(0.05, 0.05, 0.05)).export(path)
        block = {"name": "block", "geometry": [{"mesh": {"file": path}}], "pose": {"xyz": [0, 0, 1.0]}}
        cfg_suite = {"dt": 0.01, "n_envs": 0, "dtype": "float64", "sdf_cache_dir": tmp}
        from helpers_scenes import pad_object
        from tactile_sim.suite import SensorSuite

        sensors = [depth_sensor(name="exact", contact_depth_query="raycast"), depth_sensor(name="grid")]
        suite = SensorSuite.from_yaml({"suite": cfg_suite, "objects": [pad_object(), block], "sensors": sensors})
        d = 0.0008
        step(suite, 0.0, block=[0.0, 0.0, 0.025 - d])
        exact = suite.read_ground_truth("exact").numpy()
        xy = probe_xy()
        inside = np.minimum(0.025 - np.abs(xy[..., 0]), 0.025 - np.abs(xy[..., 1]))
        np.testing.assert_allclose(exact[inside > d], R + d, atol=1e-9)
        spacing = suite.query.sdf_grid(len(suite.scene.shape_table()) - 1).spacing
        grid = suite.read_ground_truth("grid").numpy()
        assert np.abs(grid - exact).max() <= 0.25 * float(np.max(spacing))


# ------------------------------------------------------------------ ContactProbe


def contact_sensor(**extra):
    return {"type": "ContactProbe", "name": "touch", "link": "pad", "probe_local_pos": [[0.0, 0.0, 0.0]], **extra}


def test_contact_probe_defaults_equal_depth_above_threshold():
    sensors = [depth_sensor(), {**depth_sensor(), "type": "ContactProbe", "name": "touch"}]
    suite = make_suite(sensors, [sphere()])
    for t, z in enumerate([0.03, 0.0215, 0.0199, 0.018]):
        step(suite, 0.01 * t, ball=[0.001, 0.0, z])
        assert torch.equal(suite.read_ground_truth("touch"), suite.read_ground_truth("depth") > 1e-4)
        assert torch.equal(suite.read("touch"), suite.read_ground_truth("touch"))


def test_schmitt_sequence_and_reset():
    suite = make_suite([contact_sensor(probe_radius=0.06, contact_threshold=0.03, release_threshold=0.015)],
                       [flipped_plane()])
    expected = []
    for t, depth in enumerate([0.0, 0.02, 0.04, 0.02, 0.01, 0.02]):
        step(suite, 0.01 * t, plane=[0.0, 0.0, 0.06 - depth + (1.0 if depth == 0 else 0.0)])
        expected.append(bool(suite.read("touch")[0]))
    assert expected == [False, False, True, True, False, False]
    step(suite, 0.06, plane=[0.0, 0.0, 0.02])
    assert bool(suite.read("touch")[0])
    suite.reset()
    step(suite, 0.07, plane=[0.0, 0.0, 0.04])  # depth 0.02: on only if the latch survived the reset
    assert not bool(suite.read("touch")[0])


def test_depth_equal_to_threshold_reads_false():
    suite = make_suite([contact_sensor(probe_radius=0.5, contact_threshold=0.25)], [flipped_plane()])
    step(suite, 0.0, plane=[0.0, 0.0, 0.25])
    assert not bool(suite.read_ground_truth("touch")[0])
    step(suite, 0.01, plane=[0.0, 0.0, 0.2499])
    assert bool(suite.read_ground_truth("touch")[0])


def test_negative_release_holds_until_beyond_the_margin():
    suite = make_suite([contact_sensor(probe_radius=R, release_threshold=-0.002)], [flipped_plane()])
    step(suite, 0.0, plane=[0.0, 0.0, R - 0.0005])
    assert bool(suite.read("touch")[0])
    step(suite, 0.01, plane=[0.0, 0.0, R + 0.001])  # 1 mm outside the sensing sphere
    assert bool(suite.read("touch")[0]) and bool(suite.read_ground_truth("touch")[0])
    step(suite, 0.02, plane=[0.0, 0.0, R + 0.003])  # 3 mm outside
    assert not bool(suite.read("touch")[0]) and not bool(suite.read_ground_truth("touch")[0])


def test_fillers_read_false_on_both_branches():
    suite = make_suite([contact_sensor(probe_local_pos=[[0, 0, 0], [0.001, 0, 0]], probe_radius=[R, 0.0],
                                       noise=0.01, bias=0.5)], [flipped_plane()])
    step(suite, 0.0, plane=[0.0, 0.0, 0.0])
    assert suite.read("touch").tolist() == [True, False]
    assert suite.read_ground_truth("touch").tolist() == [True, False]


def test_release_above_contact_is_a_config_error():
    with pytest.raises(ConfigError, match="release_threshold"):
        make_suite([contact_sensor(contact_threshold=1e-4, release_threshold=2e-4)], [])
