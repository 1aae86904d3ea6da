"""Planar-grid helper (docs/models/layouts.md#helper), regular-planar detection (docs/models/layouts.md#planar-grids)
and the layout scale ε₀ (docs/models/elastomer_taxel.md#layout-scale)."""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from helpers_layout import raises_config_error
from tactile_sim.constants import GRID_FIT_ABS, GRID_FIT_REL
from tactile_sim.sensors.layout.probe_layout import ProbeLayout, generate_grid_points_on_plane


# ---------------------------------------------------------------------- docs/models/layouts.md#helper helper
@pytest.mark.parametrize("nx, ny", [(5, 3), (2, 7), (4, 4)])
def test_helper_spec_check(nx, ny):
    a, b, z0 = 0.012, 0.007, -0.003
    g = generate_grid_points_on_plane((-a, -b, z0), (a, b, z0), (0.0, 0.0, 1.0), nx, ny)
    assert g.shape == (ny, nx, 3)
    r, c = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
    expected = np.stack([-a + 2 * a * c / (nx - 1), -b + 2 * b * r / (ny - 1), np.full(r.shape, z0)], axis=-1)
    np.testing.assert_allclose(g, expected, rtol=0, atol=1e-15)


def test_helper_other_normals_by_hand():
    # n = e_x: |n_y| < 0.5 → t1 = e_y, t0 = e_y × e_x = −e_z; grid[r, c] = u_c (−e_z) + v_r e_y + w e_x
    g = generate_grid_points_on_plane((0.1, -0.2, 0.3), (0.1, 0.2, -0.3), (2.0, 0.0, 0.0), 3, 2)
    np.testing.assert_allclose(g[0], [[0.1, -0.2, 0.3], [0.1, -0.2, 0.0], [0.1, -0.2, -0.3]], atol=1e-15)
    np.testing.assert_allclose(g[1], [[0.1, 0.2, 0.3], [0.1, 0.2, 0.0], [0.1, 0.2, -0.3]], atol=1e-15)
    # n = e_y: |n_y| >= 0.5 → t1 = e_z, t0 = e_z × e_y = −e_x
    g = generate_grid_points_on_plane((0.4, 0.05, -0.1), (-0.4, 0.05, 0.1), (0.0, 1.0, 0.0), 2, 2)
    np.testing.assert_allclose(g, [[[0.4, 0.05, -0.1], [-0.4, 0.05, -0.1]], [[0.4, 0.05, 0.1], [-0.4, 0.05, 0.1]]],
                               atol=1e-15)


unit_vectors = st.tuples(*[st.floats(-1, 1)] * 3).map(np.array).filter(lambda v: np.linalg.norm(v) > 0.1)


@given(n=unit_vectors, seed=st.integers(0, 2**16), nx=st.integers(2, 6), ny=st.integers(2, 6))
def test_helper_corners_and_plane_property(n, seed, nx, ny):
    """lo and hi in one plane ⊥ n are the first and last grid points; every point lies in that plane; the steps
    along rows and columns are constant and orthogonal."""
    rng = np.random.default_rng(seed)
    nh = n / np.linalg.norm(n)
    w = rng.normal()
    lo, hi = (v - np.dot(v, nh) * nh + w * nh for v in rng.normal(size=(2, 3)))
    g = generate_grid_points_on_plane(lo, hi, n, nx, ny)
    np.testing.assert_allclose(g[0, 0], lo, atol=1e-12)
    np.testing.assert_allclose(g[-1, -1], hi, atol=1e-12)
    np.testing.assert_allclose(g.reshape(-1, 3) @ nh, w, atol=1e-12)
    du, dv = np.diff(g, axis=1), np.diff(g, axis=0)
    np.testing.assert_allclose(du, np.broadcast_to(du[0, 0], du.shape), atol=1e-12)
    np.testing.assert_allclose(dv, np.broadcast_to(dv[0, 0], dv.shape), atol=1e-12)
    assert abs(np.dot(du[0, 0], dv[0, 0])) < 1e-12


def test_helper_height_mismatch_warns_and_uses_mean():
    with pytest.warns(UserWarning, match="different heights"):
        g = generate_grid_points_on_plane((0, 0, 0.0), (1, 1, 0.2), (0, 0, 1), 2, 2)
    np.testing.assert_allclose(g[..., 2], 0.1, atol=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        generate_grid_points_on_plane((0, 0, 0.0), (1, 1, 5e-10), (0, 0, 1), 2, 2)


def test_helper_errors():
    raises_config_error(lambda: generate_grid_points_on_plane((0, 0, 0), (1, 1, 0), (0, 0, 1e-10), 2, 2),
                        "generate_grid_points_on_plane.normal", "got [0.0, 0.0, 1e-10]", "allowed:")
    raises_config_error(lambda: generate_grid_points_on_plane((0, 0, 0), (1, 1, 0), (0, 0, 1), 0, 2),
                        "generate_grid_points_on_plane.nx", "got 0", "allowed: int >= 1")


# ---------------------------------------------------------------------- docs/models/layouts.md#planar-grids regular
# planar grids
def lattice(m, n, du, dv, t_u=(1, 0, 0), t_v=(0, 1, 0), origin=(0, 0, 0)):
    r, c = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    return (np.asarray(origin, float) + c[..., None] * du * np.asarray(t_u, float)
            + r[..., None] * dv * np.asarray(t_v, float))


def test_exact_lattice_is_regular():
    info = ProbeLayout.from_options(lattice(4, 5, 0.003, 0.004, origin=(0.1, 0.2, 0.3))).grid
    assert info.regular
    assert info.du == pytest.approx(0.003, rel=1e-12) and info.dv == pytest.approx(0.004, rel=1e-12)
    np.testing.assert_allclose(info.t_u, [1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(info.t_v, [0, 1, 0], atol=1e-12)
    np.testing.assert_array_equal(info.origin, [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(info.shared_normal, [0, 0, 1])


def test_tilted_skewed_lattice_is_regular_with_its_axes():
    rot = Rotation.from_euler("xyz", [0.3, -1.1, 2.0]).as_matrix()
    t_u = rot @ np.array([1.0, 0.0, 0.0])
    t_v = rot @ np.array([np.cos(1.2), np.sin(1.2), 0.0])  # 69° between the axes
    info = ProbeLayout.from_options(lattice(3, 6, 0.002, 0.005, t_u, t_v, origin=(1, -2, 0.5))).grid
    assert info.regular
    np.testing.assert_allclose(info.t_u, t_u, atol=1e-12)
    np.testing.assert_allclose(info.t_v, t_v, atol=1e-12)
    assert info.du == pytest.approx(0.002, rel=1e-10) and info.dv == pytest.approx(0.005, rel=1e-10)


@pytest.mark.parametrize("factor, regular", [(0.9, True), (1.1, False)])
def test_perturbation_within_and_beyond_tolerance(factor, regular):
    du, dv = 0.004, 0.006
    tol = GRID_FIT_ABS + GRID_FIT_REL * min(du, dv)
    pos = lattice(4, 4, du, dv)
    # an interior probe does not change the mean steps, so its deviation is exactly the perturbation
    direction = np.array([1.0, -2.0, 2.0]) / 3.0
    pos[1, 2] += factor * tol * direction
    assert ProbeLayout.from_options(pos).grid.regular is regular


def test_filler_off_lattice_breaks_regularity():
    pos = lattice(3, 3, 0.005, 0.005)
    pos[1, 1, 2] += 1e-3
    radius = np.full((3, 3), 0.002)
    radius[1, 1] = 0.0
    assert not ProbeLayout.from_options(pos, radius).grid.regular


def test_single_row_or_column_never_regular():
    for pos in (lattice(1, 5, 0.003, 0.003), lattice(5, 1, 0.003, 0.003)):
        info = ProbeLayout.from_options(pos).grid
        assert info is not None and not info.regular


def test_parallel_or_degenerate_axes_not_regular():
    # rows step along the column direction: t_u ∥ t_v
    assert not ProbeLayout.from_options(lattice(3, 4, 0.003, 0.005, (1, 0, 0), (1, 0, 0))).grid.regular
    # all columns coincide: Δu = 0
    assert not ProbeLayout.from_options(lattice(3, 4, 0.0, 0.005)).grid.regular


def test_shared_normal_detection():
    pos = lattice(2, 3, 0.003, 0.003)
    a = np.broadcast_to(np.array([0.0, 0.6, 0.8]), (2, 3, 3)).copy()
    np.testing.assert_allclose(ProbeLayout.from_options(pos, probe_local_normal=a).grid.shared_normal,
                               [0.0, 0.6, 0.8], atol=1e-15)
    for delta, shared in ((5e-7, True), (2e-6, False)):
        b = a.copy()
        b[1, 2] = [delta, 0.6, 0.8]  # distance to the others ≈ delta after normalisation
        info = ProbeLayout.from_options(pos, probe_local_normal=b).grid
        assert (info.shared_normal is not None) is shared
        assert info.regular  # normals do not affect the lattice fit


def test_flat_layout_has_no_grid():
    lay = ProbeLayout.from_options(lattice(2, 3, 0.003, 0.003).reshape(-1, 3))
    assert lay.grid is None and not lay.is_grid


# ---------------------------------------------------------------------- docs/models/elastomer_taxel.md#layout-scale
# layout scale
def test_epsilon0_regular_grid_equals_spacing():
    assert ProbeLayout.from_options(lattice(5, 7, 0.004, 0.004)).epsilon0() == pytest.approx(0.004, rel=1e-12)
    assert ProbeLayout.from_options(lattice(5, 7, 0.004, 0.009)).epsilon0() == pytest.approx(0.004, rel=1e-12)
    # rotated into a tilted plane: unchanged
    rot = Rotation.from_euler("xyz", [0.4, 0.2, -0.9]).as_matrix()
    tilted = lattice(5, 7, 0.004, 0.004) @ rot.T
    assert ProbeLayout.from_options(tilted).epsilon0() == pytest.approx(0.004, rel=1e-12)


def test_epsilon0_median_over_active_probes_only():
    # active on a line at 0, 1, 3, 7 mm: nearest distances 1, 1, 2, 4 → median 1.5 mm; the filler at 0.5 is ignored
    x = np.array([0.0, 1.0, 3.0, 7.0, 0.5]) * 1e-3
    pos = np.stack([x, np.zeros(5), np.zeros(5)], axis=1)
    lay = ProbeLayout.from_options(pos, [0.001, 0.001, 0.001, 0.001, 0.0])
    assert lay.epsilon0() == pytest.approx(1.5e-3, rel=1e-12)


def test_epsilon0_single_active_probe_is_two_radii():
    lay = ProbeLayout.from_options([[0, 0, 0], [1e-3, 0, 0]], [0.0, 0.0025])
    assert lay.epsilon0() == pytest.approx(0.005, rel=1e-15)


def test_epsilon0_coincident_active_probes_error():
    lay = ProbeLayout.from_options([[0, 0, 0], [0, 0, 0], [1, 0, 0], [1, 0, 0]], where="ElastomerTaxel(name='gel')")
    raises_config_error(lay.epsilon0, "ElastomerTaxel(name='gel').probe_local_pos: active probes coincide",
                        "got ε₀ = 0.0", "allowed: ε₀ > 1e-09")
