"""ProbeLayout.from_options (docs/models/probes.md#probes, docs/models/layouts.md#positions,
docs/models/layouts.md#fillers, docs/models/layouts.md#normals): shapes, defaults, offsets and every error message."""

import math

import numpy as np
import pytest

from helpers_layout import raises_config_error
from tactile_sim.sensors.layout.probe_layout import ProbeLayout, euler_offset_matrix

W = "KinematicTaxel(name='pad')"


def test_default_layout_is_one_probe_at_origin():
    lay = ProbeLayout.from_options(where=W)
    assert lay.shape == (1,) and lay.n == 1 and not lay.is_grid and lay.grid is None
    np.testing.assert_array_equal(lay.positions, [[0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(lay.radius, [0.01])
    np.testing.assert_array_equal(lay.normals, [[0.0, 0.0, 1.0]])
    assert ProbeLayout.from_options(default_radius=0.5).radius[0] == 0.5  # SurfaceDistanceProbe default


def test_grid_and_its_row_major_flattening_agree():
    rng = np.random.default_rng(1)
    grid = rng.normal(size=(3, 4, 3))
    radius = rng.uniform(0.001, 0.01, size=(3, 4))
    radius[1, 2] = 0.0
    normals = rng.normal(size=(3, 4, 3))
    g = ProbeLayout.from_options(grid, radius, normals, where=W)
    f = ProbeLayout.from_options(grid.reshape(-1, 3), radius.reshape(-1), normals.reshape(-1, 3), where=W)
    assert g.shape == (3, 4) and g.is_grid and f.shape == (12,) and not f.is_grid
    assert g.positions.shape == (3, 4, 3) and g.normals.shape == (3, 4, 3) and g.radius.shape == (3, 4)
    np.testing.assert_array_equal(g.flat_positions, f.flat_positions)
    np.testing.assert_array_equal(g.flat_radius, f.flat_radius)
    np.testing.assert_array_equal(g.flat_normals, f.flat_normals)
    # flat index of [r, c] is r*N + c
    np.testing.assert_array_equal(g.flat_positions[1 * 4 + 2], grid[1, 2])
    assert not g.active[1 * 4 + 2] and g.active.sum() == 11


def test_normals_are_normalised_and_broadcast():
    lay = ProbeLayout.from_options([[0, 0, 0], [1, 0, 0]], probe_local_normal=(0.0, 3.0, 4.0))
    np.testing.assert_allclose(lay.normals, [[0, 0.6, 0.8], [0, 0.6, 0.8]], rtol=0, atol=1e-15)
    per = ProbeLayout.from_options([[0, 0, 0], [1, 0, 0]], probe_local_normal=[[2, 0, 0], [0, 0, -5]])
    np.testing.assert_allclose(per.normals, [[1, 0, 0], [0, 0, -1]], rtol=0, atol=0)


def test_arrays_are_read_only():
    lay = ProbeLayout.from_options([[0, 0, 0]])
    with pytest.raises(ValueError):
        lay.positions[0, 0] = 1.0


def test_offsets_move_positions_and_normals():
    # euler_offset (90, 0, 90) deg = Rz(90°)·Rx(90°): e_z → Rx → (0, −1, 0) → Rz → (1, 0, 0); e_x → Rx → e_x → Rz → e_y
    lay = ProbeLayout.from_options([[1.0, 0.0, 0.0], [0.0, 0.0, 2.0]], probe_local_normal=(0, 0, 1),
                                   pos_offset=(0.1, 0.2, 0.3), euler_offset=(90.0, 0.0, 90.0))
    np.testing.assert_allclose(lay.positions, [[0.1, 1.2, 0.3], [2.1, 0.2, 0.3]], atol=1e-15)
    np.testing.assert_allclose(lay.normals, [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]], atol=1e-15)
    # a pure translation leaves normals untouched; a pure rotation keeps distances
    t = ProbeLayout.from_options([[1.0, 2.0, 3.0]], pos_offset=(-1, -2, -3))
    np.testing.assert_array_equal(t.positions, [[0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(t.normals, [[0.0, 0.0, 1.0]])
    rng = np.random.default_rng(3)
    pts = rng.normal(size=(5, 3))
    r = ProbeLayout.from_options(pts, euler_offset=(10.0, -35.0, 170.0))
    np.testing.assert_allclose(np.linalg.norm(r.positions, axis=1), np.linalg.norm(pts, axis=1), rtol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(r.normals, axis=1), 1.0, rtol=1e-14)


def test_the_offset_rotation_is_the_scenes_fixed_axis_rotation():
    """The layout's own rotation (Python floats, so that check needs no torch) against the scene's (torch)."""
    import torch

    from tactile_sim.geometry.transforms import rpy_to_matrix

    rng = np.random.default_rng(5)
    for euler in [(0.0, 0.0, 0.0), (90.0, 0.0, 90.0), *rng.uniform(-720, 720, (50, 3))]:
        scene = rpy_to_matrix(torch.tensor(np.radians(euler), dtype=torch.float64)).numpy()
        np.testing.assert_allclose(euler_offset_matrix(np.asarray(euler)), scene, rtol=0, atol=4e-16)
    np.testing.assert_array_equal(euler_offset_matrix(np.zeros(3)), np.eye(3))


@pytest.mark.parametrize("options", [{"probe_local_pos": [[0, 0, 0], [1e300, 0, 0]]},
                                     {"probe_local_pos": [[0, 0, 0]], "pos_offset": (0.0, -2e4, 0.0)},
                                     {"probe_local_pos": [[0, 0, 0], [0, 0, 9e3]], "pos_offset": (0.0, 0.0, 2e3),
                                      "euler_offset": (0.0, 0.0, 45.0)}])
def test_error_probes_farther_than_the_largest_length_from_their_link(options):
    """Coordinates near 1e300 overflowed the cell grid of a ProximityTaxel (a ValueError from numpy)."""
    raises_config_error(lambda: ProbeLayout.from_options(**options, where=W), f"{W}.probe_local_pos: probe at",
                        "is over 10000 m from its link", "allowed: link-frame coordinates within 10000 m")


# ---------------------------------------------------------------------- errors (docs/models/scene.md#common-options
# format)
def test_error_negative_radius_names_grid_index():
    radius = np.full((4, 2), 0.01)
    radius[3, 1] = -0.002
    raises_config_error(lambda: ProbeLayout.from_options(np.zeros((4, 2, 3)) + np.arange(8).reshape(4, 2, 1),
                                                         radius, where="layout.yaml:sensors[2]"),
                        "layout.yaml:sensors[2].probe_radius: negative radius at [3, 1]; got -0.002; "
                        "allowed: >= 0 (0 marks a filler probe)")


def test_error_radius_shape_shows_both_shapes():
    raises_config_error(lambda: ProbeLayout.from_options(np.zeros((2, 3, 3)), [0.01] * 6, where=W),
                        f"{W}.probe_radius", "shape (6,)", "layout shape (2, 3)", "got", "allowed:")


def test_error_normal_shape_shows_both_shapes():
    raises_config_error(lambda: ProbeLayout.from_options(np.zeros((2, 3)), probe_local_normal=np.ones((3, 3)),
                                                         where=W),
                        f"{W}.probe_local_normal", "shape (3, 3)", "layout shape (2,)", "got", "allowed:")
    # a 2-vector on a layout of two probes: the message must not read as "(2,) does not match (2,)"
    raises_config_error(lambda: ProbeLayout.from_options(np.zeros((2, 3)), probe_local_normal=[0.0, 1.0], where=W),
                        f"{W}.probe_local_normal: shape (2,) is neither (3,) (one normal for every probe) nor the "
                        "layout shape (2,) + 3", "got [0.0, 1.0]")


def test_error_no_positive_radius():
    raises_config_error(lambda: ProbeLayout.from_options(np.zeros((2, 3)), [0.0, 0.0], where=W),
                        f"{W}.probe_radius: no positive radius", "got [0.0, 0.0]", "allowed:")


def test_error_fillers_not_allowed():
    raises_config_error(lambda: ProbeLayout.from_options([[0, 0, 0], [1, 0, 0]], [0.5, 0.0], allow_fillers=False,
                                                         default_radius=0.5, where="SurfaceDistanceProbe(name='s')"),
                        "SurfaceDistanceProbe(name='s').probe_radius: filler probe (radius 0) at [1]", "got 0.0",
                        "allowed: > 0")


def test_error_bad_normal():
    raises_config_error(lambda: ProbeLayout.from_options(np.zeros((1, 2, 3)),
                                                         probe_local_normal=[[[0, 0, 1], [0, 1e-10, 0]]], where=W),
                        f"{W}.probe_local_normal: normal at [0, 1] has norm", "got [0.0, 1e-10, 0.0]", "allowed:")
    raises_config_error(lambda: ProbeLayout.from_options(probe_local_normal=(0, 0, 0), where=W),
                        f"{W}.probe_local_normal: normal has norm 0.0", "got [0.0, 0.0, 0.0]", "allowed:")
    raises_config_error(lambda: ProbeLayout.from_options(probe_local_normal=(0, math.inf, 1), where=W),
                        f"{W}.probe_local_normal: non-finite normal", "got [0.0, inf, 1.0]", "allowed:")


def test_error_non_finite_position():
    pos = np.zeros((2, 2, 3))
    pos[1, 0, 2] = math.nan
    raises_config_error(lambda: ProbeLayout.from_options(pos, where=W),
                        f"{W}.probe_local_pos: non-finite coordinate at [1, 0]", "got [0.0, 0.0, nan]", "allowed:")


def test_error_non_finite_radius():
    raises_config_error(lambda: ProbeLayout.from_options([[0, 0, 0]], [math.nan], where=W),
                        f"{W}.probe_radius: non-finite radius at [0]", "got nan", "allowed:")


@pytest.mark.parametrize("pos, what", [
    (np.zeros((0, 3)), "empty layout"),
    (np.zeros((2, 0, 3)), "empty layout"),
    (np.zeros((4,)), "wrong shape"),
    (np.zeros((2, 2)), "wrong shape"),
    (np.zeros((1, 2, 3, 3)), "wrong shape"),
])
def test_error_layout_shape(pos, what):
    raises_config_error(lambda: ProbeLayout.from_options(pos, where=W), f"{W}.probe_local_pos: {what}",
                        f"got {pos.shape}" if what == "wrong shape" else "got shape", "allowed: (N, 3) or (M, N, 3)")


def test_error_ragged_and_non_numeric():
    raises_config_error(lambda: ProbeLayout.from_options([[0, 0, 0], [1, 0]], where=W),
                        f"{W}.probe_local_pos: not a numeric array", "got", "allowed:")
    raises_config_error(lambda: ProbeLayout.from_options(probe_radius="big", where=W),
                        f"{W}.probe_radius: not a numeric array", "got 'big'", "allowed:")


def test_error_offsets():
    raises_config_error(lambda: ProbeLayout.from_options(pos_offset=(0, 0), where=W),
                        f"{W}.pos_offset: need 3 finite values", "got [0.0, 0.0]", "allowed:")
    raises_config_error(lambda: ProbeLayout.from_options(euler_offset=(0, math.nan, 0), where=W),
                        f"{W}.euler_offset: need 3 finite angles", "got [0.0, nan, 0.0]", "allowed:", "degrees")
