"""ElastomerTaxel (docs/models/elastomer_taxel.md#elastomer-taxel): layer profile κ₁, dilation closed forms, FFT vs
direct path, continuity, symmetry,
shear anchors (replayed with the exposed cloud), fillers, imperfections and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate, optimize, special

from helpers_pointcloud import box, centred_lattice, lattice, make_suite, numpy, pad_sd, sphere, step
from tactile_sim import derived_cache
from tactile_sim.errors import ConfigError
from tactile_sim.sensors.elastomer import dilation as elastomer_dilation, layer_profile as layer_profile_module, \
    source_rows as elastomer_source_rows
from tactile_sim.sensors.elastomer.layer_profile import NODES, RHO_MAX, compute_layer_profile, layer_profile


# ---------------------------------------------------------------------------------------------- independent truth
def kappa1_quad(rho: float) -> float:
    """κ₁(ρ) by adaptive quadrature; S(q) from a short series below q = 0.05, from sinh above."""
    def integrand(q):
        x = 2 * q
        den = x**3 / 6 + x**5 / 120 + x**7 / 5040 if q < 0.05 else math.sinh(x) - x
        return 2 * q * q / den * special.j1(q * rho) * q
    a = integrate.quad(integrand, 0, 0.05, epsabs=1e-15, epsrel=1e-13)[0]
    b = integrate.quad(integrand, 0.05, 60, limit=400, epsabs=1e-15, epsrel=1e-13)[0]
    return (a + b) / (2 * math.pi)


KAPPA_PEAK = -optimize.minimize_scalar(lambda r: -kappa1_quad(r), bounds=(0.8, 1.1), method="bounded",
                                       options={"xatol": 1e-10}).fun


def dilation_pair(d: np.ndarray, a: np.ndarray, lam: float, c: float, eps0: float, h: float):
    """Spec docs/models/elastomer_taxel.md#kernels kernels (K_in(P d) [.., 3], G [..]) for raw offsets d [.., 3] and a
    unit normal a."""
    delta = d - (d @ a)[..., None] * a
    r = np.linalg.norm(delta, axis=-1)
    g = np.exp(-lam * r**2)
    peak = math.exp(-0.5) / math.sqrt(2 * lam)
    if h == 0:
        glob = peak * 2 * eps0 * delta / (r**2 + eps0**2)[..., None]
    else:
        prof = np.array([kappa1_quad(x) for x in (r / h).reshape(-1)]).reshape(r.shape)
        with np.errstate(invalid="ignore", divide="ignore"):
            glob = np.where(r[..., None] > 0, peak * delta / r[..., None] * (prof / KAPPA_PEAK)[..., None], 0.0)
    return c * delta * g[..., None] + (1 - c) * glob, g


def elastomer(name: str, positions, **kw) -> dict:
    return {"type": "ElastomerTaxel", "name": name, "link": "pad", "track": ["ball"],
            "probe_local_pos": np.asarray(positions).tolist(), **kw}


# ----------------------------------------------------------------------------------------------
# docs/models/elastomer_taxel.md#kernels κ₁ table
def test_layer_profile_reference_values_and_accuracy():
    prof = layer_profile()
    assert NODES >= 2000 and RHO_MAX == 8.0 and len(prof.coefficients) == NODES
    for rho, ref in [(0.5, 0.135142), (1.0, 0.172028), (2.0, 0.118215)]:
        assert abs(float(prof(rho)) - ref) < 6e-7
    assert abs(prof.peak_rho - 0.95771) < 6e-6 and abs(prof.peak - 0.172256) < 6e-7
    assert abs(float(prof(1e-4)) / 1e-4 - 0.323075) < 1e-6
    for rho in (5.0, 6.5, 7.99, 8.0, 12.0):
        assert abs(rho * float(prof(rho)) - 3 / (4 * math.pi)) < 1e-6
    rng = np.random.default_rng(7)
    rhos = np.concatenate([rng.uniform(0, 8, 25), [1e-3, 0.02, 7.9999]])
    for rho in rhos:
        assert abs(float(prof(rho)) / kappa1_quad(rho) - 1) <= 1e-6, rho


def test_the_layer_profile_cache_gives_the_computed_table_bit_for_bit_and_is_rebuilt_when_damaged(tmp_path,
                                                                                                    monkeypatch):
    monkeypatch.setenv(derived_cache.ENV_VAR, str(tmp_path))
    computed = compute_layer_profile()

    def fresh():  # what a fresh process gets
        layer_profile.cache_clear()
        return layer_profile()

    def not_computed():
        raise AssertionError("the table was computed instead of read from the cache")

    try:
        first = fresh()  # computed and written
        (path,) = (tmp_path / "layer_profile").iterdir()
        written = path.read_bytes()
        with monkeypatch.context() as m:
            m.setattr(layer_profile_module, "compute_layer_profile", not_computed)
            second = fresh()
        path.write_bytes(written[:-8])
        third = fresh()  # damaged: computed and written again
        assert path.read_bytes() == written
    finally:
        layer_profile.cache_clear()
    for prof in (first, second, third):
        assert prof.coefficients.tobytes() == computed.coefficients.tobytes()
        assert prof.coefficients.shape == (NODES, 4) and prof.coefficients.dtype == np.float64
        assert not prof.coefficients.flags.writeable
        assert (prof.spacing, prof.rho_max, prof.peak_rho, prof.peak) == \
            (computed.spacing, computed.rho_max, computed.peak_rho, computed.peak)


# ----------------------------------------------------------------------------------------------
# docs/models/elastomer_taxel.md#elastomer-taxel Check 1
@pytest.mark.parametrize("layout", ["grid", "flat"])
def test_nothing_inside_reads_exactly_zero(layout):
    pos = centred_lattice(6, 0.01)
    pos = pos if layout == "grid" else pos.reshape(-1, 3)
    suite = make_suite([elastomer("el", pos, compressibility=0.5)], [sphere("ball", 0.01, (0, 0, 0.0105))])
    step(suite, 0.0)
    for value in (suite.read("el"), suite.read_ground_truth("el")):
        assert torch.count_nonzero(value) == 0


# ----------------------------------------------------------------------------------------------
# docs/models/elastomer_taxel.md#elastomer-taxel Check 2
@pytest.mark.parametrize("layout", ["grid", "flat"])
@pytest.mark.parametrize("c,h", [(1.0, 0.0), (0.0, 0.0), (0.3, 0.003)])
def test_single_source_closed_form(layout, c, h):
    pos = centred_lattice(7, 0.005)
    r, d, scale, lam = 0.002, 0.0005, 2.5, 9000.0
    positions = pos if layout == "grid" else pos.reshape(-1, 3)
    suite = make_suite([elastomer("el", positions, compressibility=c, elastomer_thickness=h, dilate_scale=scale,
                                  lambda_d=lam, shear_scale=0.0)], [sphere("ball", r)])
    step(suite, 0.0, {"ball": (0.0, 0.0, r - d)})
    u = numpy(suite.read_ground_truth("el")).reshape(-1, 3)
    a = np.array([0.0, 0.0, 1.0])
    k, g = dilation_pair(pos.reshape(-1, 3), a, lam, c, 0.005, h)
    expected = scale * (k * d - a * (g * d**2)[:, None])
    assert np.abs(u - expected).max() <= 1e-10 * np.abs(expected).max()
    assert np.abs(expected[:, :2]).max() > 0


# ----------------------------------------------------------------------------------------------
# docs/models/elastomer_taxel.md#elastomer-taxel Check 3
CASES = [(c, h) for c in (0.0, 0.3, 1.0) for h in (0.0, 0.003)]


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-10), ("float32", 1e-6)])
def test_fft_and_direct_paths_agree(dtype, tol):
    # a non-square grid with unequal spacings, an off-centre indentation and (last pair) a tilted shared normal
    grid = lattice(9, 12, 0.004, 0.003, (-0.021, -0.013, 0.0))
    tilted = (np.array([0.3, -0.2, 1.0]) / np.linalg.norm([0.3, -0.2, 1.0])).tolist()
    sensors = []
    for k, (c, h) in enumerate(CASES + [(0.3, 0.003)]):
        kw = dict(compressibility=c, elastomer_thickness=h, lambda_d=20000.0, shear_scale=0.0)
        if k == len(CASES):
            kw["probe_local_normal"] = tilted
        sensors += [elastomer(f"grid{k}", grid, **kw), elastomer(f"flat{k}", grid.reshape(-1, 3), **kw)]
    # a second grid shape in the same batch (a second FFT group)
    small = lattice(5, 4, 0.005, 0.004, (-0.01, -0.006, 0.0))
    kw = dict(compressibility=0.3, elastomer_thickness=0.003, lambda_d=20000.0, shear_scale=0.0)
    sensors += [elastomer("grid_small", small, **kw), elastomer("flat_small", small.reshape(-1, 3), **kw)]
    suite = make_suite(sensors, [sphere("ball", 0.008)], dtype=dtype)
    step(suite, 0.0, {"ball": (-0.004, 0.002, 0.0065)})
    for k in list(range(len(CASES) + 1)) + ["_small"]:
        u_grid = numpy(suite.read_ground_truth(f"grid{k}")).reshape(-1, 3)
        u_flat = numpy(suite.read_ground_truth(f"flat{k}"))
        scale = np.abs(u_flat).max()
        assert scale > 0
        assert np.abs(u_grid - u_flat).max() <= tol * scale, (k, np.abs(u_grid - u_flat).max() / scale)


@pytest.mark.parametrize("tables", ["dense", "dense_rows", "source_rows", "per_step"])
def test_direct_path_matches_the_double_sum(tables, monkeypatch):
    # an irregular flat layout with per-probe normals against an independent double sum of
    # docs/models/elastomer_taxel.md#dilation; the precomputed pair tables (multiplied by the whole H, or — beyond
    # FULL_SUM_LIMIT — their rows of the sources in contact summed, :mod:`~.table_sum`), and beyond DENSE_LIMIT the
    # cached source rows (CPU) and the per-step kernel evaluation (no room for rows)
    if tables == "dense_rows":
        monkeypatch.setattr(elastomer_dilation, "FULL_SUM_LIMIT", 0)
    elif tables != "dense":
        monkeypatch.setattr(elastomer_dilation, "DENSE_LIMIT", 0)
    if tables == "per_step":
        monkeypatch.setattr(elastomer_source_rows, "ROW_CACHE_LIMIT", 0)
    rng = np.random.default_rng(3)
    pos = np.column_stack([rng.uniform(-0.015, 0.015, (24, 2)), np.zeros(24)])
    normals = np.column_stack([rng.uniform(-0.2, 0.2, (24, 2)), np.ones(24)])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    c, h, lam, p = 0.4, 0.004, 5000.0, 1.5
    suite = make_suite([elastomer("el", pos, probe_local_normal=normals.tolist(), compressibility=c,
                                  elastomer_thickness=h, lambda_d=lam, normal_exponent=p, shear_scale=0.0)],
                       [sphere("ball", 0.012)])
    centre = np.array([0.003, -0.002, 0.0105])
    step(suite, 0.0, {"ball": centre})
    u = numpy(suite.read_ground_truth("el"))
    depth = np.maximum(0.0, 0.012 - np.linalg.norm(pos - centre, axis=1))
    from scipy.spatial import cKDTree
    eps0 = float(np.median(cKDTree(pos).query(pos, k=2)[0][:, 1]))
    expected = np.zeros_like(pos)
    for i in range(len(pos)):
        k, g = dilation_pair(pos[i] - pos, normals[i], lam, c, eps0, h)
        expected[i] = (k * depth[:, None]).sum(0) - normals[i] * (g * depth**p).sum()
    assert depth.max() > 0 and (depth == 0).any()
    assert np.abs(u - expected).max() <= 1e-10 * np.abs(expected).max()


# ----------------------------------------------------------------------------------------------
# docs/models/elastomer_taxel.md#elastomer-taxel Check 4
@pytest.mark.parametrize("end", [0.0, 1.0])
def test_blend_is_continuous_at_both_ends(end):
    grid = centred_lattice(10, 0.004)
    near = 1e-6 if end == 0.0 else 1.0 - 1e-6
    sensors = [elastomer(f"c{k}", grid, compressibility=c, elastomer_thickness=h, shear_scale=0.0)
               for k, (c, h) in enumerate([(end, 0.0), (near, 0.0), (end, 0.003), (near, 0.003)])]
    suite = make_suite(sensors, [sphere("ball", 0.01)])
    step(suite, 0.0, {"ball": (0.001, 0.0, 0.0085)})
    u = [numpy(suite.read_ground_truth(f"c{k}")) for k in range(4)]
    for a, b in ((u[0], u[1]), (u[2], u[3])):
        assert np.abs(a - b).max() < 1e-5 * np.abs(a).max()


# ----------------------------------------------------------------------------------------------
# docs/models/elastomer_taxel.md#elastomer-taxel Check 5
@pytest.mark.parametrize("c,h", [(1.0, 0.0), (0.3, 0.0), (0.3, 0.003)])
def test_centred_sphere_signs_and_symmetry(c, h):
    n = 9
    grid = centred_lattice(n, 0.004)
    suite = make_suite([elastomer("el", grid, compressibility=c, elastomer_thickness=h, shear_scale=0.0)],
                       [sphere("ball", 0.01)])
    step(suite, 0.0, {"ball": (0.0, 0.0, 0.0085)})
    u = numpy(suite.read_ground_truth("el"))
    assert (u[..., 2] <= 0).all() and u[..., 2].min() < 0
    xy = grid[..., :2]
    radial = (u[..., :2] * xy).sum(-1)
    cross = u[..., 0] * xy[..., 1] - u[..., 1] * xy[..., 0]
    off_centre = np.linalg.norm(xy, axis=-1) > 0
    assert (radial[off_centre] > 0).all()
    # radial up to the lattice's discreteness (the sources sit on a square lattice): within 1°
    assert (np.abs(cross) <= math.sin(math.radians(1)) * np.linalg.norm(u[..., :2], axis=-1)
            * np.linalg.norm(xy, axis=-1)).all()
    # 90° rotation about the normal: probe (r, c) → (c, n−1−r), u → (−u_y, u_x, u_z)
    rotated = np.empty_like(u)
    for r in range(n):
        for col in range(n):
            rotated[col, n - 1 - r] = (-u[r, col, 1], u[r, col, 0], u[r, col, 2])
    assert np.abs(rotated - u).max() <= 1e-12 * np.abs(u).max()


def test_lower_compressibility_reaches_farther():
    lam = 70000.0
    grid = centred_lattice(15, 0.002)
    suite = make_suite([elastomer(f"c{k}", grid, compressibility=c, lambda_d=lam, shear_scale=0.0)
                        for k, c in enumerate((1.0, 0.3))], [sphere("ball", 0.004)])
    step(suite, 0.0, {"ball": (0.0, 0.0, 0.0035)})
    far = np.argmin(np.abs(np.linalg.norm(grid[..., :2], axis=-1) - 3 / math.sqrt(lam)))
    inplane = [np.linalg.norm(numpy(suite.read_ground_truth(f"c{k}"))[..., :2].reshape(-1, 2)[far]) for k in (0, 1)]
    assert inplane[1] > inplane[0]


# ----------------------------------------------------------------------------------------------
# docs/models/elastomer_taxel.md#elastomer-taxel Check 6
def shear_suite(n_samples: int, layout: str = "grid", **kw):
    """A shear-only sensor "el" over a 12×12 grid (layout "grid": the lattice path; "flat": the dense path; "pair":
    flat, batched with a second flat sensor "el2" that tracks with half the samples)."""
    grid = centred_lattice(12, 0.006)
    positions = grid if layout == "grid" else grid.reshape(-1, 3)
    sensor = {"type": "ElastomerTaxel", "name": "el", "link": "pad", "track": ["ball"], "dilate_scale": 0.0,
              "shear_scale": 1.0, "n_sample_points": n_samples, "probe_local_pos": positions.tolist(), **kw}
    sensors = [sensor] + ([{**sensor, "name": "el2", "n_sample_points": n_samples // 2}] if layout == "pair" else [])
    return make_suite(sensors, [box("ball", (0.03, 0.03, 0.02), (0.0, 0.0, 0.05))]), grid


def replay_shear(cloud, anchor_pos, now_pos, grid, cell_area, lam_s, contact=1e-5):
    """docs/models/elastomer_taxel.md#shear from the exposed cloud: anchored at anchor_pos (box origin), evaluated at
    now_pos (pad at the origin)."""
    q_then = cloud.points + anchor_pos
    q_now = cloud.points + now_pos
    anchored = pad_sd(q_then) < -contact
    depth = np.maximum(0.0, -pad_sd(q_now))
    w = np.where(anchored, cloud.areas / cell_area * depth, 0.0)
    drag = q_now - q_then
    p = grid.reshape(-1, 3)
    delta = p[:, None, :2] - q_now[None, :, :2]
    s = ((w * np.exp(-lam_s * (delta**2).sum(-1)))[..., None] * drag[None]).sum(1)
    s[:, 2] = 0.0
    return s


@pytest.mark.parametrize("layout", ["grid", "flat", "pair"])
def test_shear_anchors_then_drags_along_the_slide(layout):
    suite, grid = shear_suite(2000, layout)
    step(suite, 0.0, {"ball": (0.0, 0.0, 0.012)})
    assert torch.count_nonzero(suite.read_ground_truth("el")) == 0
    pressed = np.array([0.0, 0.0, 0.009])                  # bottom face 1 mm into the pad: the anchoring step
    step(suite, 0.01, {"ball": pressed})
    assert torch.count_nonzero(suite.read_ground_truth("el")) == 0
    slid = pressed + [0.001, 0.0, 0.0]
    step(suite, 0.02, {"ball": slid})
    s = numpy(suite.read_ground_truth("el")).reshape(-1, 3)
    assert (s[:, 0] > 0).all() and (s[:, 1:] == 0).all()
    expected = replay_shear(suite.point_cloud("el"), pressed, slid, grid, 0.006**2, 300.0)
    assert np.abs(s - expected).max() <= 1e-6 * np.abs(expected).max()
    if layout == "pair":
        other = numpy(suite.read_ground_truth("el2")).reshape(-1, 3)
        assert np.abs(other - replay_shear(suite.point_cloud("el2"), pressed, slid, grid, 0.006**2, 300.0)).max() \
            <= 1e-6 * np.abs(expected).max()
    # anchors persist; a reset clears them (the next step anchors anew: no shear)
    step(suite, 0.03, {"ball": slid})
    assert np.allclose(numpy(suite.read_ground_truth("el")).reshape(-1, 3), s, rtol=1e-12, atol=0)
    suite.reset()
    step(suite, 0.04, {"ball": slid + [0.0, 0.0, 0.0]})
    assert torch.count_nonzero(suite.read_ground_truth("el")) == 0


def test_shear_compaction_lists_each_sensors_contributing_samples_in_order_and_clears_the_rest():
    """The compacted samples of every (env, sensor) — on the CPU compacted by the sample kernel itself — are the
    replayed contributing samples (anchored at the press, inside the pad now, dragged) in cloud order; slots beyond
    the count read zero, also after a step with fewer of them than the one before."""
    grid = centred_lattice(12, 0.006).reshape(-1, 3)
    sensor = {"type": "ElastomerTaxel", "name": "el", "link": "pad", "track": ["ball"], "dilate_scale": 0.0,
              "n_sample_points": 1200, "probe_local_pos": grid.tolist()}
    suite = make_suite([sensor, {**sensor, "name": "el2", "n_sample_points": 500}],
                       [box("ball", (0.03, 0.03, 0.02), (0.0, 0.0, 0.05))], n_envs=2)
    shear = suite.locate("el")[0].shear
    rot = torch.eye(3, dtype=torch.float64).expand(2, 3, 3)
    pressed = np.array([[0.0, 0.0, 0.009], [0.004, 0.0, 0.0088]])          # bottom faces 1 / 1.2 mm deep
    moves = [np.zeros((2, 3)), np.array([[0.001, 0.0, 0.0], [0.0, -0.002, 0.0]]),
             np.array([[0.03, 0.0, 0.0], [0.0, -0.03, 0.0]])]     # anchor, drag, slide partly off the pad
    counts = []
    for k, move in enumerate(moves):
        now = pressed + move
        suite.update(0.01 * k, object_poses={"ball": (rot, torch.as_tensor(now))})
        counts.append(shear.count.clone())
        for s, name in enumerate(("el", "el2")):
            cloud = suite.point_cloud(name)
            for e in range(2):
                then_q, now_q = cloud.points + pressed[e], cloud.points + now[e]
                chosen = (pad_sd(then_q) < -1e-5) & (pad_sd(now_q) < 0) & (move[e] != 0).any()
                m = int(shear.count[e, s])
                assert m == chosen.sum()
                assert np.allclose(numpy(shear.q_c[e, s, :m]), now_q[chosen], rtol=0, atol=1e-12)
                # drag (q̃ − A)·w with w = shear_scale·a_j/A_cell·D_j: along the move, w ∝ area × depth
                d, c = (now_q - then_q)[chosen], numpy(shear.c_c[e, s, :m])
                w = (c * d).sum(1) / (d * d).sum(1)
                assert np.allclose(c, w[:, None] * d, rtol=0, atol=1e-15)
                ratio = w / (cloud.areas[chosen] * -pad_sd(now_q[chosen]))
                assert (ratio > 0).all() and np.allclose(ratio, ratio[:1], rtol=1e-9, atol=0)
                assert (numpy(shear.q_c[e, s, m:]) == 0).all() and (numpy(shear.c_c[e, s, m:]) == 0).all()
    assert (counts[1] > 0).all() and (counts[2] < counts[1]).all()


def test_shear_releases_after_separation_beyond_the_release_threshold():
    suite, _ = shear_suite(800, release_threshold=-1e-4)
    pressed = np.array([0.0, 0.0, 0.009])
    step(suite, 0.0, {"ball": pressed})
    step(suite, 0.01, {"ball": pressed + [0.0, 0.0, 0.00105]})      # 0.05 mm above the pad: still anchored
    step(suite, 0.02, {"ball": pressed + [0.001, 0.0, 0.0]})
    held = numpy(suite.read_ground_truth("el"))
    assert held[..., 0].min() > 0
    step(suite, 0.03, {"ball": pressed + [0.001, 0.0, 0.0012]})    # 0.2 mm above: released
    step(suite, 0.04, {"ball": pressed + [0.002, 0.0, 0.0]})        # re-anchored here
    assert torch.count_nonzero(suite.read_ground_truth("el")) == 0


def test_shear_is_independent_of_the_sample_count():
    totals = []
    for n in (2000, 4000):
        suite, _ = shear_suite(n)
        step(suite, 0.0, {"ball": (0.0, 0.0, 0.009)})
        step(suite, 0.01, {"ball": (0.001, 0.0, 0.009)})
        totals.append(numpy(suite.read_ground_truth("el"))[..., 0].sum())
        assert len(suite.point_cloud("el")) >= n
    assert abs(totals[1] / totals[0] - 1) < 0.03


def test_teleport_while_anchored_produces_shear_in_each_env_independently():
    suite = make_suite([{"type": "ElastomerTaxel", "name": "el", "link": "pad", "track": ["ball"],
                         "dilate_scale": 0.0, "probe_local_pos": centred_lattice(6, 0.01).tolist()}],
                       [box("ball", (0.03, 0.03, 0.02))], n_envs=2)
    rot = torch.eye(3, dtype=torch.float64).expand(2, 3, 3)
    start = torch.tensor([[0.0, 0.0, 0.009], [0.0, 0.0, 0.02]], dtype=torch.float64)   # env 1 does not touch
    suite.update(0.0, object_poses={"ball": (rot, start)})
    suite.update(0.01, object_poses={"ball": (rot, start + torch.tensor([0.0, 0.002, 0.0], dtype=torch.float64))})
    s = numpy(suite.read_ground_truth("el"))
    assert s[0, ..., 1].min() > 0 and (s[0, ..., [0, 2]] == 0).all()
    assert (s[1] == 0).all()
    suite.reset([0])
    suite.update(0.02, object_poses={"ball": (rot, start)})
    assert (numpy(suite.read_ground_truth("el")) == 0).all()


# ---------------------------------------------------------------------------------------------- fillers, imperfections
@pytest.mark.parametrize("layout", ["grid", "flat"])
def test_fillers_read_zero_and_are_no_sources(layout):
    grid = centred_lattice(7, 0.004)
    radius = np.full((7, 7), 0.01)
    radius[3, 3] = 0.0                                          # the probe right under the ball
    as_layout = (lambda a: a) if layout == "grid" else (lambda a: a.reshape((49,) + a.shape[2:]))
    sensors = [elastomer("full", as_layout(grid), shear_scale=0.0, compressibility=0.3),
               elastomer("filled", as_layout(grid), probe_radius=as_layout(radius).tolist(), shear_scale=0.0,
                         compressibility=0.3)]
    suite = make_suite(sensors, [sphere("ball", 0.01)])
    step(suite, 0.0, {"ball": (0.0, 0.0, 0.0085)})
    full = numpy(suite.read_ground_truth("full")).reshape(-1, 3)
    filled = numpy(suite.read_ground_truth("filled")).reshape(-1, 3)
    assert (filled[24] == 0).all() and (numpy(suite.read("filled")).reshape(-1, 3)[24] == 0).all()
    a = np.array([0.0, 0.0, 1.0])
    k, g = dilation_pair(grid.reshape(-1, 3) - grid.reshape(-1, 3)[24], a, 700.0, 0.3, 0.004, 0.0)
    d = 0.0015
    without_centre = full - (k * d - a * (g * d * d)[:, None])
    keep = np.arange(49) != 24
    assert np.abs(filled[keep] - without_centre[keep]).max() <= 1e-10 * np.abs(full).max()


def test_gain_after_hysteresis_and_ground_truth_unchanged():
    grid = centred_lattice(5, 0.005)
    suite = make_suite([elastomer("el", grid, probe_gain=1.5, hysteresis_strength=0.5, hysteresis_tau=0.02),
                        elastomer("plain", grid)], [sphere("ball", 0.01)])
    step(suite, 0.0, {"ball": (0.0, 0.0, 0.0085)})
    gt, plain = numpy(suite.read_ground_truth("el")), numpy(suite.read_ground_truth("plain"))
    assert np.array_equal(gt, plain)
    alpha = math.exp(-0.01 / 0.02)
    assert np.allclose(numpy(suite.read("el")), 1.5 * gt * 1.5, rtol=1e-12, atol=0)   # step: X(1 + s α⁰)·g
    step(suite, 0.01, {"ball": (0.0, 0.0, 0.0085)})
    assert np.allclose(numpy(suite.read("el")), 1.5 * gt * (1 + 0.5 * alpha), rtol=1e-12, atol=0)


def test_noise_chain_delay_and_float32():
    grid = centred_lattice(5, 0.005)
    suite = make_suite([elastomer("el", grid, noise=1e-6, delay=0.01, history_length=2)], [sphere("ball", 0.01)],
                       dtype="float32", n_envs=3)
    rot = torch.eye(3).expand(3, 3, 3)
    pos = torch.tensor([[0.0, 0.0, 0.0085]]).expand(3, 3)
    suite.update(0.0, object_poses={"ball": (rot, pos)})
    value, valid = suite.read("el", with_valid=True)
    assert value.shape == (3, 2, 5, 5, 3) and value.dtype == torch.float32 and not valid.any()
    gt0 = numpy(suite.read_ground_truth("el"))[:, 0]
    suite.update(0.01, object_poses={"ball": (rot, pos)})
    value, valid = suite.read("el", with_valid=True)
    assert valid[:, 0].all() and not valid[:, 1].any()
    assert 0 < np.abs(numpy(value)[:, 0] - gt0).max() < 1e-5
    assert np.allclose(gt0[0], gt0[1]) and np.abs(gt0).max() > 0


# ---------------------------------------------------------------------------------------------- errors
def test_scene_errors_name_the_sensor_and_option():
    ball = sphere("ball", 0.01)
    with pytest.raises(ConfigError, match=r"sensors\[0\]\.track: .*'floor'.*plane"):
        make_suite([{"type": "ElastomerTaxel", "name": "el", "link": "pad", "track": ["floor"]}],
                   [{"name": "floor", "geometry": [{"plane": {}}]}])
    with pytest.raises(ConfigError, match=r"sensors\[0\]\.track: .*'ball'.*visual"):
        make_suite([{"type": "ElastomerTaxel", "name": "el", "link": "pad", "track": ["ball"],
                     "use_visual_mesh": True}], [ball])
    with pytest.raises(ConfigError, match=r"probe_local_pos: active probes coincide"):
        make_suite([elastomer("el", [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])], [ball])
    with pytest.raises(ConfigError, match=r"probe_radius_noise"):
        make_suite([elastomer("el", [[0.0, 0.0, 0.0]], probe_radius_noise=1e-3)], [ball])
    with pytest.raises(ConfigError, match=r"crosstalk_strength"):
        make_suite([elastomer("el", centred_lattice(3, 0.01), crosstalk_strength=0.5, crosstalk_sigma=0.01)], [ball])
