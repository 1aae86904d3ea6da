"""ElastomerTaxel's evaluation paths chosen by size: small sensors take the per-probe pair sums
(:mod:`tactile_sim.sensors.elastomer.pairwise`), larger ones the lattice / direct dilation paths and the shear
groups. The spec checks of test_sensor_elastomer and test_sensor_elastomer_lattice run on small layouts, so here the
path-specific ones run once more with every sensor forced onto the larger sensors' paths (``PAIRWISE_WORK = 0``),
and both path families are compared on one scene with dilation and shear in two envs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import test_sensor_elastomer as checks
import test_sensor_elastomer_lattice as lattice_checks
from helpers_pointcloud import box, centred_lattice, lattice, make_suite, numpy, sphere, step
from tactile_sim.sensors.elastomer import dilation as elastomer_dilation, pairwise as elastomer_pairwise
from tactile_sim.sensors.elastomer import shear as elastomer_shear, source_rows as elastomer_source_rows
from tactile_sim.sensors.elastomer import table_sum as elastomer_table_sum
from tactile_sim.suite import SensorSuite


@pytest.fixture
def without_pair_sums(monkeypatch):
    monkeypatch.setattr(elastomer_pairwise, "PAIRWISE_WORK", 0)


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-10), ("float32", 1e-6)])
def test_fft_and_direct_paths_agree(without_pair_sums, dtype, tol):
    checks.test_fft_and_direct_paths_agree(dtype, tol)


@pytest.mark.parametrize("layout", ["grid", "flat", "pair"])
def test_shear_groups_anchor_then_drag_along_the_slide(without_pair_sums, layout):
    checks.test_shear_anchors_then_drags_along_the_slide(layout)


def test_lattice_shear_of_sensors_apart_in_the_batch(without_pair_sums):
    lattice_checks.test_lattice_shear_of_sensors_apart_in_the_batch()


@pytest.mark.parametrize("full_sum_limit", [0, 10**6])
def test_compacted_and_whole_direct_sums_agree_with_the_lattice(without_pair_sums, full_sum_limit, monkeypatch):
    lattice_checks.test_compacted_and_whole_direct_sums_agree_with_the_lattice(full_sum_limit, monkeypatch)


@pytest.mark.parametrize("tables", ["dense", "dense_rows", "source_rows", "per_step"])
def test_direct_path_matches_the_double_sum(without_pair_sums, tables, monkeypatch):
    checks.test_direct_path_matches_the_double_sum(tables, monkeypatch)


_SOURCE_ROWS_CALL = elastomer_source_rows.SourceRows.__call__


def _rolling_ball_fields(slots: int, monkeypatch) -> tuple[list[np.ndarray], list[bool]]:
    """Ground truth of two flat sensors (c = 1; c = 0.4, h = 4 mm, p = 1.5) on the direct path beyond DENSE_LIMIT
    while a ball rolls over them differently in three envs, leaves contact, presses deep (more sources than
    ``slots``) and comes back, with a reset of one env; the source rows get ``slots`` slots (0: none). Returns the
    fields of every step, per step whether the cached rows were summed, and the rows filled in all."""
    monkeypatch.setattr(elastomer_pairwise, "PAIRWISE_WORK", 0)
    monkeypatch.setattr(elastomer_dilation, "DENSE_LIMIT", 0)
    rng = np.random.default_rng(11)
    first = np.column_stack([rng.uniform(-0.012, 0.012, (70, 2)), np.zeros(70)])
    second = np.column_stack([rng.uniform(-0.012, 0.012, (45, 2)), np.zeros(45)])
    base = {"type": "ElastomerTaxel", "link": "pad", "track": ["ball"], "lambda_d": 9000.0, "shear_scale": 0.0}
    sensors = [{**base, "name": "plain", "probe_local_pos": first.tolist()},
               {**base, "name": "layer", "probe_local_pos": second.tolist(), "compressibility": 0.4,
                "elastomer_thickness": 0.004, "normal_exponent": 1.5}]
    # a slot holds TARGETS_PER_THREAD targets per chunk: plain has 2 chunks, layer 1
    row = 4 * elastomer_source_rows.TARGETS_PER_THREAD * 3
    monkeypatch.setattr(elastomer_source_rows, "ROW_CACHE_LIMIT", slots * row)
    suite = make_suite(sensors, [sphere("ball", 0.006)], n_envs=3)
    summed, filled = [], []

    def spy(rows, selected):
        new = int((selected.any(0) & (rows.slot < 0)).sum())
        summed.append(_SOURCE_ROWS_CALL(rows, selected))
        filled.append(new if summed[-1] else 0)
        return summed[-1]

    monkeypatch.setattr(elastomer_source_rows.SourceRows, "__call__", spy)
    rot = torch.eye(3, dtype=torch.float64).expand(3, 3, 3)
    fields = []
    for k in range(12):
        x = -0.01 + 0.002 * k + np.array([0.0, 0.003, -0.002])
        z = np.full(3, 0.0055) - (0.003 if k in (5, 6) else 0.0) + (0.02 if k == 8 else 0.0)
        centre = torch.as_tensor(np.column_stack([x, [0.0, 0.004, -0.003], z]), dtype=torch.float64)
        if k == 9:
            suite.reset([1])
        suite.update(0.01 * k, object_poses={"ball": (rot, centre)})
        fields.append(np.concatenate([numpy(suite.read_ground_truth(s["name"])) for s in sensors], 1))
    return fields, summed, sum(filled)


def test_cached_source_rows_sum_bit_for_bit_as_the_per_step_kernel(monkeypatch):
    # sources come into contact and leave it, slots are reused (the longest unused first), a step with more sources
    # than slots falls back to the per-step evaluation, a reset empties an env: every field equals the per-step
    # kernel's exactly, and the per-step kernel agrees with an independent double sum (test above)
    cached, summed, filled = _rolling_ball_fields(20, monkeypatch)
    per_step, _, _ = _rolling_ball_fields(0, monkeypatch)
    assert True in summed and False in summed and filled > 20
    assert all(np.abs(u).max() > 0 for u in cached[:8])
    for u, v in zip(cached, per_step):
        assert np.array_equal(u, v)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cached_rows_of_flat_and_curved_sensors_sum_bit_for_bit_as_the_per_step_kernel(dtype, monkeypatch):
    # a flat sensor's rows have K_z = +0 everywhere (summed without reading them), a curved one's do not (read):
    # both sum exactly as the per-step kernel while a ball presses into both in two envs
    monkeypatch.setattr(elastomer_pairwise, "PAIRWISE_WORK", 0)
    monkeypatch.setattr(elastomer_dilation, "DENSE_LIMIT", 0)
    rng = np.random.default_rng(7)
    xy = rng.uniform(-0.01, 0.01, (2, 80, 2))
    curved = np.column_stack([xy[1], -30.0 * (xy[1] ** 2).sum(1)])                    # a cap of radius ~17 mm
    normals = np.column_stack([60.0 * xy[1], np.ones(80)])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    base = {"type": "ElastomerTaxel", "link": "pad", "track": ["ball"], "lambda_d": 9000.0, "shear_scale": 0.0}
    sensors = [{**base, "name": "flat", "probe_local_pos": np.column_stack([xy[0], np.zeros(80)]).tolist()},
               {**base, "name": "curved", "probe_local_pos": curved.tolist(), "probe_local_normal": normals.tolist(),
                "compressibility": 0.6}]
    fields = []
    for cached in (True, False):
        monkeypatch.setattr(elastomer_source_rows, "ROW_CACHE_LIMIT", 2**20 if cached else 0)
        suite = make_suite(sensors, [sphere("ball", 0.006)], n_envs=2, dtype=dtype)
        per_step = []
        for k in range(4):
            centre = [[-0.003 + 0.002 * k, 0.001, 0.0056], [0.002, -0.001 * k, 0.0052]]
            step(suite, 0.01 * k, {"ball": (np.eye(3)[None].repeat(2, 0), centre)})
            per_step.append(torch.cat([suite.read_ground_truth(s["name"])[0] for s in sensors], 1))
        fields.append(per_step)
        direct = suite.locate("flat")[0].dilation.direct
        if cached:                                   # flat rows skip K_z, curved ones read it; both were summed
            rows = direct.rows
            filled = (rows.source >= 0).nonzero()[:, 0]
            of_source = direct.compaction.segment[rows.source[filled]]                 # the source's sensor
            of_chunk = rows.sum.tensors["chunk_segment"]
            flags = [rows.planar[of_chunk == t][:, filled[of_source == t]] for t in (0, 1)]
            assert flags[0].numel() and flags[0].all() and flags[1].numel() and not flags[1].any()
    assert all(u.abs().max() > 0 for u in fields[0])
    for u, v in zip(*fields):
        assert torch.equal(u.view(torch.uint8), v.view(torch.uint8))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_table_rows_sum_bit_for_bit_as_the_weighted_row_sums(dtype):
    # two sensors (one spanning several target chunks) in three envs, one of them out of contact, the direct probes
    # scattered through the batch: u equals, value for value, the weighted row sums the native loop replaces
    # (torch's embedding_bag over the sources in contact, block tables zero between sensors)
    rng = np.random.default_rng(5)
    counts, e, p = [40, 150], 3, 260
    n = sum(counts)
    probes = torch.as_tensor(np.sort(rng.choice(p, n, replace=False)))
    block = np.zeros((n, n), bool)
    block[:40, :40] = block[40:, 40:] = True
    table_k = torch.as_tensor(rng.normal(size=(n, n, 3)) * block[..., None], dtype=dtype).reshape(n, 3 * n)
    table_g = torch.as_tensor(rng.normal(size=(n, n)) * block, dtype=dtype)
    normal = torch.as_tensor(rng.normal(size=(n, 3)), dtype=dtype)
    depth = torch.as_tensor(np.maximum(rng.uniform(-2e-3, 1e-3, (e, p)), 0.0), dtype=dtype)
    depth[2] = 0.0
    depth_p = depth**1.5
    field = torch.full((e, p, 3), 7.0, dtype=dtype)
    elastomer_table_sum.TableSum(np.cumsum([0, *counts]), probes, table_k, table_g, normal, field)(depth, depth_p)
    expected = torch.zeros((e, n, 3), dtype=dtype)
    for env in range(e):
        h, hp = depth[env, probes], depth_p[env, probes]
        index = (h > 0).nonzero()[:, 0][None]
        if index.numel() == 0:                                            # no source: u = 0 (+0 everywhere)
            continue
        u = torch.nn.functional.embedding_bag(index, table_k, per_sample_weights=h[index], mode="sum")
        g = torch.nn.functional.embedding_bag(index, table_g, per_sample_weights=hp[index], mode="sum")
        expected[env] = u.view(n, 3) - g.view(n, 1) * normal
    assert (depth[:2, probes] > 0).sum(1).min() > 20 and (depth[:2, probes] == 0).any()
    assert torch.equal(field[:, probes].view(torch.uint8), expected.view(torch.uint8))
    untouched = torch.ones(p, dtype=torch.bool)
    untouched[probes] = False
    assert (field[:, untouched] == 7.0).all()


def _sliding_box_fields(pair_sums: bool, monkeypatch) -> dict[str, np.ndarray]:
    """Ground truth of grid / flat / tilted-normal sensors (c = 1 and 0.3, h = 3 mm, p = 1.5) after a box pressed
    into the pad slides, differently in two envs; all sensors on the pair sums or none."""
    monkeypatch.setattr(elastomer_pairwise, "PAIRWISE_WORK", 1 << 40 if pair_sums else 0)
    grid = lattice(9, 11, 0.004, 0.003, (-0.02, -0.014, 0.0))
    tilted = (np.array([0.2, -0.1, 1.0]) / np.linalg.norm([0.2, -0.1, 1.0])).tolist()
    base = {"type": "ElastomerTaxel", "link": "pad", "track": ["ball"], "lambda_d": 20000.0, "lambda_s": 4000.0,
            "elastomer_thickness": 0.003, "normal_exponent": 1.5, "n_sample_points": 1500}
    sensors = []
    for c in (1.0, 0.3):
        sensors += [{**base, "name": f"grid{c}", "compressibility": c, "probe_local_pos": grid.tolist()},
                    {**base, "name": f"flat{c}", "compressibility": c, "probe_local_pos": grid.reshape(-1, 3).tolist()},
                    {**base, "name": f"tilted{c}", "compressibility": c, "probe_local_pos": grid.tolist(),
                     "probe_local_normal": tilted}]
    suite = make_suite(sensors, [box("ball", (0.012, 0.016, 0.02))], n_envs=2)
    rot = torch.eye(3, dtype=torch.float64).expand(2, 3, 3)
    pressed = torch.tensor([[0.002, -0.001, 0.0092], [-0.003, 0.002, 0.0095]], dtype=torch.float64)
    suite.update(0.0, object_poses={"ball": (rot, pressed)})
    slide = torch.tensor([[0.0007, -0.0004, 0.0001], [-0.0003, 0.0009, -0.0002]], dtype=torch.float64)
    suite.update(0.01, object_poses={"ball": (rot, pressed + slide)})
    return {s["name"]: numpy(suite.read_ground_truth(s["name"])).reshape(2, -1, 3) for s in sensors}


def test_pair_sums_equal_the_lattice_direct_and_shear_group_paths(monkeypatch):
    pair = _sliding_box_fields(True, monkeypatch)
    groups = _sliding_box_fields(False, monkeypatch)
    for name, u in groups.items():
        scale = np.abs(u).max(axis=(1, 2))
        assert (scale > 0).all() and not np.allclose(u[0], u[1]), name
        assert (np.abs(pair[name] - u).max(axis=(1, 2)) <= 1e-10 * scale).all(), name


def test_nothing_anchored_that_stays_put_reads_exactly_zero():
    # anchored samples whose drag is exactly zero are skipped; the field stays exactly zero until the box moves
    suite = make_suite([{"type": "ElastomerTaxel", "name": "el", "link": "pad", "track": ["ball"],
                         "dilate_scale": 0.0, "probe_local_pos": centred_lattice(6, 0.01).tolist()}],
                       [box("ball", (0.03, 0.03, 0.02))])
    rot = torch.eye(3, dtype=torch.float64)[None]
    at = torch.tensor([[0.0, 0.0, 0.009]], dtype=torch.float64)
    for t in (0.0, 0.01, 0.02):
        suite.update(t, object_poses={"ball": (rot, at)})
        assert torch.count_nonzero(suite.read_ground_truth("el")) == 0
    suite.update(0.03, object_poses={"ball": (rot, at + torch.tensor([0.0, 0.001, 0.0], dtype=torch.float64))})
    assert numpy(suite.read_ground_truth("el"))[..., 1].min() > 0


def test_redrawn_gains_apply_after_a_reset_of_one_env():
    # measured = ground truth × the probe's gain (all three channels); gains drawn in [0.5, 1.5] per env and probe,
    # redrawn for the reset env only
    grid = centred_lattice(5, 0.005)
    suite = make_suite([{"type": "ElastomerTaxel", "name": "el", "link": "pad", "track": ["ball"],
                         "probe_local_pos": grid.tolist(), "probe_gain_resample_range": [0.5, 1.5]}],
                       [sphere("ball", 0.01)], n_envs=2)
    rot = torch.eye(3, dtype=torch.float64).expand(2, 3, 3)
    at = torch.tensor([[0.0, 0.0, 0.0085], [0.002, 0.0, 0.0085]], dtype=torch.float64)

    def gains() -> np.ndarray:
        gt, measured = numpy(suite.read_ground_truth("el")), numpy(suite.read("el"))
        inside = np.abs(gt).min(-1) > 0
        ratio = measured[inside] / gt[inside]
        assert inside.sum() > 10 and np.allclose(ratio, ratio[:, :1], rtol=1e-12, atol=0)
        full = np.full(gt.shape[:-1], np.nan)
        full[inside] = ratio[:, 0]
        return full

    suite.update(0.0, object_poses={"ball": (rot, at)})
    before = gains()
    assert np.nanmin(before) >= 0.5 and np.nanmax(before) <= 1.5 and np.nanstd(before) > 0.05
    suite.reset([1])
    suite.update(0.01, object_poses={"ball": (rot, at)})
    after = gains()
    assert np.allclose(after[0], before[0], rtol=1e-12, equal_nan=True)
    both = ~np.isnan(after[1]) & ~np.isnan(before[1])
    assert both.sum() > 10 and not np.allclose(after[1][both], before[1][both])


def _shear_on_a_compound_link(monkeypatch, unbounded: bool, dtype: str = "float64",
                              at: tuple = (0.0, 0.0, 0.0)) -> list[np.ndarray]:
    """Shear on a link of a rotated box, a capsule and a sphere (inside it), placed at ``at`` (world, m), while a box
    slides into the top face; with ``unbounded`` the samples' reach boxes are disabled (every sample queries its
    link)."""
    if unbounded:
        monkeypatch.setattr(elastomer_shear, "_reach_box",
                            lambda shapes, cutoff: (np.full(3, -np.inf), np.full(3, np.inf)))
    link = {"name": "pad", "pose": {"xyz": list(at)}, "geometry": [
        {"box": {"size": [0.06, 0.05, 0.02]}, "origin": {"xyz": [0.0, 0.0, -0.01], "rpy": [0.0, 0.0, 0.4]}},
        {"capsule": {"radius": 0.004, "length": 0.03}, "origin": {"xyz": [0.01, 0.0, -0.012], "rpy": [0.0, 1.5708, 0.0]}},
        {"sphere": {"radius": 0.006}, "origin": {"xyz": [-0.012, 0.008, -0.008]}}]}
    sensor = {"type": "ElastomerTaxel", "name": "el", "link": "pad", "track": ["ball"], "dilate_scale": 0.0,
              "n_sample_points": 3000, "probe_local_pos": centred_lattice(7, 0.006).tolist()}
    cfg = {"suite": {"dt": 0.01, "n_envs": 0, "dtype": dtype}, "sensors": [sensor],
           "objects": [link, box("ball", (0.05, 0.05, 0.02))]}
    suite = SensorSuite.from_yaml(cfg)
    out = []
    for t, xyz in enumerate([(0.0, 0.0, 0.0095), (0.0008, -0.0004, 0.0093), (0.0015, 0.0003, 0.0097)]):
        step(suite, 0.01 * t, {"ball": tuple(np.add(at, xyz))})
        out.append(numpy(suite.read_ground_truth("el")))
    return out


@pytest.mark.parametrize("dtype,at", [("float64", (0.0, 0.0, 0.0)), ("float32", (0.0, 0.0, 0.0)),
                                      ("float32", (30.0, -20.0, 5.0))])
def test_reach_boxes_change_no_shear(monkeypatch, dtype, at):
    # the samples' cull by their composed pose (rounded otherwise than their link-frame positions, more so far from
    # the origin in float32) keeps every sample that the queries of all samples find within reach
    bounded = _shear_on_a_compound_link(monkeypatch, False, dtype, at)
    unbounded = _shear_on_a_compound_link(monkeypatch, True, dtype, at)
    assert np.abs(bounded[-1]).max() > 0
    for a, b in zip(bounded, unbounded):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_direct_sums_into_the_whole_field_or_a_part_of_it_alike(dtype, monkeypatch):
    # beyond DENSE_LIMIT a flat sensor's direct sums write the field itself when its probes are the whole batch's,
    # and a buffer copied into its probes when a grid sensor (FFT path) shares the batch: its field is the same, bit
    # for bit, in both batches, while a ball presses and slides in two envs
    monkeypatch.setattr(elastomer_pairwise, "PAIRWISE_WORK", 0)
    monkeypatch.setattr(elastomer_dilation, "DENSE_LIMIT", 0)
    rng = np.random.default_rng(3)
    flat = np.column_stack([rng.uniform(-0.012, 0.012, (90, 2)), np.zeros(90)])
    base = {"type": "ElastomerTaxel", "link": "pad", "track": ["ball"], "lambda_d": 9000.0, "shear_scale": 0.0}
    flat_sensor = {**base, "name": "flat", "probe_local_pos": flat.tolist()}
    grid_sensor = {**base, "name": "grid", "probe_local_pos": centred_lattice(6, 0.003).tolist(),
                   "compressibility": 0.5}
    fields = []
    for sensors in ([flat_sensor], [grid_sensor, flat_sensor]):
        suite = make_suite(sensors, [sphere("ball", 0.006)], n_envs=2, dtype=dtype)
        direct = suite.locate("flat")[0].dilation.direct
        assert (direct.out is direct.field) == (len(sensors) == 1)
        per_step = []
        for k in range(5):
            centre = [[-0.004 + 0.002 * k, 0.001, 0.0055 - 0.0005 * k], [0.003, -0.002 * k, 0.005]]
            step(suite, 0.01 * k, {"ball": (np.eye(3)[None].repeat(2, 0), centre)})
            per_step.append(suite.read_ground_truth("flat")[0].clone())
        fields.append(per_step)
    assert all(u.abs().max() > 0 for u in fields[0])
    for u, v in zip(*fields):
        assert torch.equal(u.view(torch.uint8), v.view(torch.uint8))
