"""The fused probe kernels (ContactDepthProbe docs/models/contact_depth_probe.md#model, KinematicTaxel
docs/models/kinematic_taxel.md#model) against the spec formulas evaluated in torch on
the generic ShapeQuery: several sensors on two links in one batch, every primitive kind, fillers, per-env poses and
twists, radius noise, gains and exponents. The broad phase (blocks and cells of probes) must never change a result."""

import dataclasses

import numpy as np
import pytest
import torch

from helpers_scenes import pad_object
from tactile_sim.constants import EPS_D
from tactile_sim.suite import SensorSuite

E = 3
SHAPES = {"ball": {"sphere": {"radius": 0.02}}, "block": {"box": {"size": [0.03, 0.02, 0.025]}},
          "rod": {"capsule": {"radius": 0.006, "length": 0.05}}, "can": {"cylinder": {"radius": 0.01, "length": 0.03}}}


def _layout(seed: int, n: int, fillers: bool) -> dict:
    rng = np.random.default_rng(seed)
    pos = np.concatenate([rng.uniform(-0.04, 0.04, (n, 2)), rng.uniform(-0.004, 0.004, (n, 1))], axis=1)
    radius = rng.uniform(0.001, 0.004, n)
    if fillers:
        radius[::5] = 0.0
    normal = rng.normal(size=(n, 3)) + [0, 0, 3]
    return {"probe_local_pos": pos.tolist(), "probe_radius": radius.tolist(),
            "probe_local_normal": (normal / np.linalg.norm(normal, axis=1, keepdims=True)).tolist()}


def _suite(sensor_type: str, extra: list[dict], dtype: str, first: int = 300, fillers: bool = True) -> SensorSuite:
    sensors = [{"type": sensor_type, "name": f"s{i}", "link": link, **_layout(i, n, has_fillers), **opts}
               for i, (link, n, has_fillers, opts) in enumerate([("pad", first, fillers, extra[0]),
                                                             ("arm", 70, False, extra[1]), ("pad", 5, False, extra[2])])]
    objects = [pad_object(), {"name": "arm", "geometry": [{"box": {"size": [0.09, 0.09, 0.01]}}]}]
    objects += [{"name": name, "geometry": [geometry]} for name, geometry in SHAPES.items()]
    cfg = {"suite": {"dt": 0.01, "n_envs": E, "dtype": dtype, "seed": 4}, "objects": objects, "sensors": sensors}
    return SensorSuite.from_yaml(cfg)


def _random_rotation(rng) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def _state(suite: SensorSuite, seed: int):
    """Objects posed per env near the sensor faces (many contacts, some far), with random twists."""
    rng = np.random.default_rng(seed)
    poses, twists = {}, {}
    for name in ["pad", "arm", *SHAPES]:
        if name != "pad":
            rot = np.stack([_random_rotation(rng) for _ in range(E)])
            pos = np.concatenate([rng.uniform(-0.03, 0.03, (E, 2)), rng.uniform(-0.005, 0.02, (E, 1))], axis=1)
            poses[name] = (torch.as_tensor(rot), torch.as_tensor(pos))
        twists[name] = (torch.as_tensor(rng.normal(size=(E, 3)) * 0.1), torch.as_tensor(rng.normal(size=(E, 3))))
    return suite.update(0.0, object_poses=poses, object_twists=twists)


def _reference_query(batch, state):
    """Link poses, probe centres and the nearest-shape query of the batch's probes through ShapeQuery.query."""
    probes = batch.probes
    rot, pos = probes.link_pose(state)
    x = probes.world_positions(rot, pos)
    q = batch.ctx.query.query(x.contiguous(), state.rot, state.pos, probes.sensor_of_probe, probes.group_shape_mask,
                              batch.cutoff, group_exact=probes.group_exact)
    return rot, pos, x, q


def _depth_reference(batch, state):
    _, _, _, q = _reference_query(batch, state)
    r = batch.probes.radius
    gt = torch.clamp_min(r - q.sd, 0.0)
    measured = torch.clamp_min(batch.radius_measured - q.sd, 0.0) * batch.branch.gain
    return gt[..., None], measured[..., None]


def _taxel_reference(batch, state, coef):
    """Spec docs/models/kinematic_taxel.md#model per branch, written out in torch."""
    probes = batch.probes
    rot, pos, x, q = _reference_query(batch, state)
    n_link = torch.matmul(rot, probes.local_normal[:, :, None])[..., 0]  # R_L n_i in W, [E, P, 3]
    n = torch.where((q.normal == 0).all(-1, keepdim=True), -n_link, q.normal)
    body = q.body.clamp_min(0)
    v = state.point_velocity(body, x) - (probes.at_probes(state.lin_vel)
                                         + torch.cross(probes.at_probes(state.ang_vel), x - pos, dim=-1))
    v_n = (n * v).sum(-1)
    v_t = v - v_n[..., None] * n
    w_obj = torch.gather(state.ang_vel, 1, body[..., None].expand(body.shape + (3,)))
    w_n = (n * (w_obj - probes.at_probes(state.ang_vel))).sum(-1)
    out = []
    for reach, gain in ((probes.radius.expand_as(q.sd), 1.0), (batch.radius_measured, batch.branch.gain)):
        d = torch.clamp_min(reach - q.sd, 0.0)
        s = (d * gain).pow(coef["normal_exponent"])
        f_n = torch.clamp_min(s * (coef["normal_stiffness"] + coef["normal_damping"] * v_n), 0.0)
        f = probes.to_link_frame(rot, f_n[..., None] * n + coef["shear_scalar"][:, None] * v_t)
        t = torch.cross(probes.local_pos.expand_as(f), f, dim=-1) + (coef["twist_scalar"] * w_n)[..., None] * \
            probes.to_link_frame(rot, n)
        touching = (d > EPS_D)[..., None]
        out.append(torch.where(touching, torch.cat([f, t], -1), torch.zeros((), dtype=f.dtype)))
    return out


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_contact_depth_matches_the_generic_query(dtype):
    opts = [{"probe_radius_noise": 0.0005, "probe_gain": 1.3}, {"probe_gain_resample_range": [0.5, 2.0]}, {}]
    suite = _suite("ContactDepthProbe", opts, dtype)
    batch = suite.batches[0][1]
    tol = 1e-12 if dtype == "float64" else 2e-6
    touched = np.zeros(len(batch.counts), int)
    for seed in range(4):
        if seed == 2:
            suite.reset([1])  # redraws env 1's resampled gains: the kernel must read the new ones
        state = _state(suite, seed)
        gt, measured = _depth_reference(batch, state)
        torch.testing.assert_close(batch.branch.read_ground_truth_batch()[0], gt, rtol=0, atol=tol)
        torch.testing.assert_close(batch.branch.read_batch()[0], measured, rtol=0, atol=tol)  # no hardware stage
        touched += [int((gt[:, a:b] > 0).sum()) for a, b in batch.probes.slices]
    assert touched[0] > 100 and touched[1] > 10  # contacts on both links


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_kinematic_taxel_matches_the_spec_formulas(dtype):
    opts = [{"probe_radius_noise": 0.0005, "probe_gain": 1.3, "normal_exponent": 1.5, "twist_scalar": 0.01},
            {"normal_damping": 20.0, "shear_scalar": 3.0, "twist_scalar": 0.02}, {"normal_exponent": 2.0}]
    suite = _suite("KinematicTaxel", opts, dtype)
    batch = suite.batches[0][1]
    ctx = batch.ctx
    coef = {k: torch.cat([torch.full((n,), float(getattr(o, k)), dtype=ctx.dtype)
                          for o, n in zip(batch.options, batch.counts)])
            for k in ("normal_stiffness", "normal_damping", "normal_exponent", "shear_scalar", "twist_scalar")}
    tol = 1e-9 if dtype == "float64" else 2e-3
    touched = np.zeros(len(batch.counts), int)
    for seed in range(4):
        state = _state(suite, seed)
        gt, measured = _taxel_reference(batch, state, coef)
        scale = float(gt.abs().max()) + 1.0
        torch.testing.assert_close(batch.branch.read_ground_truth_batch()[0], gt, rtol=0, atol=tol * scale)
        torch.testing.assert_close(batch.branch.read_batch()[0], measured, rtol=0, atol=tol * scale)
        touched += [int((gt[:, a:b, 2] != 0).sum()) for a, b in batch.probes.slices]
    assert touched[0] > 100 and touched[1] > 10  # contacts on both links


@pytest.mark.parametrize("sensor_type", ["ContactDepthProbe", "KinematicTaxel"])
def test_without_imperfections_one_buffer_holds_both_branches(sensor_type):
    """No imperfection, no filler: the measured branch shares its slots with the ground truth
    (MeasuredBranch.share_ground_truth) and the kernel writes one buffer; both reads of every sensor still equal the
    spec formulas (ground truth: R, g = 1) and are tensors of their own."""
    suite = _suite(sensor_type, [{}, {}, {}], "float64", fillers=False)
    batch = suite.batches[0][1]
    measured, gt = batch.branch.staging()
    assert measured is gt
    touched = 0
    for seed in range(4):
        state = _state(suite, seed)
        if sensor_type == "ContactDepthProbe":
            reference = _depth_reference(batch, state)[0][..., 0]
        else:
            coef = {k: torch.full((batch.probes.n,), float(getattr(batch.options[0], k)), dtype=torch.float64)
                    for k in ("normal_stiffness", "normal_damping", "normal_exponent", "shear_scalar", "twist_scalar")}
            reference = _taxel_reference(batch, state, coef)[0]
        for i, (a, b) in enumerate(batch.probes.slices):
            value, truth = suite.read(f"s{i}"), suite.read_ground_truth(f"s{i}")
            value, truth = (torch.cat(v, -1) if isinstance(v, tuple) else v for v in (value, truth))
            torch.testing.assert_close(truth, reference[:, a:b], rtol=0, atol=1e-9)
            assert torch.equal(value, truth) and value.data_ptr() != truth.data_ptr()
        touched += int((reference != 0).sum())
    assert touched > 100


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_contact_probe_matches_the_signed_overlap_and_latch(dtype):
    """ContactProbe (docs/models/contact_probe.md#model) through the fused kernel and the branch latch against the
    signed overlap on the generic
    query and SchmittLatch per branch, over a sequence of poses (the latches carry state between them)."""
    from tactile_sim.imperfections.latch import SchmittLatch, overlap_floor, signed_overlap

    opts = [{"probe_radius_noise": 0.0005, "probe_gain": 1.3, "contact_threshold": 0.001, "release_threshold": -0.002},
            {"probe_gain_resample_range": [0.5, 2.0], "contact_threshold": 0.0015, "release_threshold": 0.0005}, {}]
    suite = _suite("ContactProbe", opts, dtype)
    batch = suite.batches[0][1]
    contact, release = batch.contact_threshold, batch.release_threshold
    latches = [SchmittLatch(contact, release, batch.probes.active, E) for _ in range(2)]
    floor = overlap_floor(release)
    held = 0
    for seed in range(6):
        state = _state(suite, seed)
        q = _reference_query(batch, state)[3]
        x_gt = signed_overlap(batch.probes.radius - q.sd, floor)
        x_measured = signed_overlap((batch.radius_measured - q.sd) * batch.branch.gain, floor)
        on_gt, on_measured = latches[0].update(x_gt), latches[1].update(x_measured)
        assert torch.equal(batch.branch.read_ground_truth_batch()[0][..., 0], on_gt.to(x_gt.dtype))
        assert torch.equal(batch.branch.read_batch()[0][..., 0], on_measured.to(x_gt.dtype))
        held += int((on_gt & ~(x_gt > contact)).sum())
    assert held > 0  # some probes were held on by their release threshold


@pytest.mark.parametrize("first, kernel_clears", [(200, True), (300, False)])
def test_delayed_reads_cycle_through_every_staging_slot(first, kernel_clears):
    """A delay of 9 evaluations cycles the staging buffers through 10 (ring slot, ground-truth slot) pairs (the lag
    plus one slot, even) — more than the launches recorded one per pair (MAX_OUTPUT_SETS), so some are served by
    rebinding — and every probe of every slot is written (0 out of reach; by the kernel itself for E·P = 3·275, by a
    fill before the launch for 3·375): each delayed measured read (gain 1, no noise) is the ground truth of 9
    evaluations before, exactly, whatever the slot held."""
    from tactile_sim.sensors.warp_launch import MAX_OUTPUT_SETS

    delay = 9
    suite = _suite("ContactDepthProbe", [{"delay": delay * 0.01}] * 3, "float64", first)
    batch = suite.batches[0][1]
    assert len(batch.branch.staging_slots) == delay + 1 > MAX_OUTPUT_SETS and batch.fill_before is not kernel_clears
    truths = []
    for k in range(3 * (delay + 2)):
        _state(suite, k % 5)  # poses that move probes into and out of reach
        truths.append(batch.branch.read_ground_truth_batch()[0].clone())
        measured, valid = batch.branch.read_batch()
        if k >= delay:
            assert valid.all() and torch.equal(measured, truths[k - delay])
    assert all(int((t > 0).sum()) > 10 for t in truths) and not torch.equal(truths[0], truths[1])


def _strided(t: torch.Tensor) -> torch.Tensor:
    """The values of ``t`` in a non-contiguous tensor (env axis last in memory)."""
    return t.transpose(0, -1).contiguous().transpose(0, -1)


def test_a_state_of_non_contiguous_tensors_reads_the_same():
    """Poses and twists handed over as strided views (a caller's own WorldState) are made contiguous for the
    kernels: KinematicTaxel's ground truth (poses and twists, stateless) equals that of the contiguous state."""
    suite = _suite("KinematicTaxel", [{"normal_damping": 20.0}, {"shear_scalar": 3.0}, {}], "float64")
    batch = suite.batches[0][1]
    state = _state(suite, 1)
    expected = batch.branch.read_ground_truth_batch()[0].clone()
    assert int((expected[..., 2] != 0).sum()) > 50
    strided = dataclasses.replace(state, rot=_strided(state.rot), pos=_strided(state.pos),
                                  lin_vel=_strided(state.lin_vel), ang_vel=_strided(state.ang_vel))
    assert not any(t.is_contiguous() for t in (strided.rot, strided.pos, strided.lin_vel, strided.ang_vel))
    suite.step(strided)
    torch.testing.assert_close(batch.branch.read_ground_truth_batch()[0], expected, rtol=0, atol=0)


@pytest.mark.parametrize("sensor_type", ["ContactDepthProbe", "KinematicTaxel"])
@pytest.mark.parametrize("extra", [{}, {"noise": 1e-4, "probe_gain": 1.1, "delay": 0.02},
                                   {"probe_radius_noise": 5e-4, "bias": 1e-5}],
                         ids=["shared", "noise-gain-delay", "radius-noise"])
def test_a_kernel_that_clears_where_it_listed_reads_as_a_fill(sensor_type, extra, monkeypatch):
    """A listed kernel filled before the launch (E·P = 3·375) whose ground-truth slots only it writes clears them
    itself at the points it listed into them last time (one contact list per slot): every read of both branches,
    over poses that move probes into and out of reach, with a reset of one env between, equals bit for bit that of
    the same suite with the slots filled before every launch; with fillers (stage 11 writes the ground truth) the
    batch fills. ContactDepthProbe fills by default (``clears_listed``: its one channel's fill is cheaper), but its
    kernel clears as KinematicTaxel's when asked."""
    from tactile_sim.imperfections.pipeline import MeasuredBranch
    from tactile_sim.sensors.contact_depth import ContactDepthProbeBatch

    assert not _suite("ContactDepthProbe", [extra] * 3, "float32", fillers=False).batches[0][1].list_clears
    monkeypatch.setattr(ContactDepthProbeBatch, "clears_listed", True)
    listed = _suite(sensor_type, [extra] * 3, "float32", fillers=False)
    assert not _suite(sensor_type, [extra] * 3, "float32").batches[0][1].list_clears  # fillers: a fill
    monkeypatch.setattr(MeasuredBranch, "sensor_writes_ground_truth", lambda self: False)
    filled = _suite(sensor_type, [extra] * 3, "float32", fillers=False)
    assert listed.batches[0][1].list_clears and not filled.batches[0][1].list_clears
    touched = 0
    for k in range(9):
        seed = [0, 1, 1, 2, 3, 0, 4, 2, 1][k]
        for suite in (listed, filled):
            _state(suite, seed)
            if k == 5:
                suite.reset([1])
        for name in ("s0", "s1", "s2"):
            for read in ("read", "read_ground_truth"):
                a, b = (getattr(suite, read)(name) for suite in (listed, filled))
                a, b = (torch.cat(v, -1) if isinstance(v, tuple) else v for v in (a, b))
                assert torch.equal(a, b) and torch.equal(a.signbit(), b.signbit()), (k, name, read)
        touched += int((listed.read_ground_truth("s0")[0] if sensor_type == "KinematicTaxel"
                        else listed.read_ground_truth("s0")).ne(0).sum())
    assert touched > 100
