"""push_staged (docs/models/imperfections.md#order stages 1–11 in one call) against the step-by-step calls, and the
ContactProbe latch of a
branch (stage 10, docs/models/contact_probe.md#model) against the torch SchmittLatch applied to the hardware output."""

import numpy as np
import pytest
import torch
from helpers_imperfections import spec

from tactile_sim.imperfections.latch import SchmittLatch
from tactile_sim.imperfections.pipeline import MeasuredBranch

E = 3
ACTIVE = np.array([True, True, False, True, True, True, True, False, True])


def _all_stages(name: str, channels: int, delay: float = 0.02, **extra) -> list:
    """Two sensors with every per-step stage (the first on a 3×3 grid with fillers)."""
    first = spec(f"{name}a", 9, channels=channels, layout_shape=(3, 3), active=ACTIVE, noise=0.2, bias=0.05,
                 random_walk=0.03, resolution=0.01, dead_taxel_probability=0.3, dead_taxel_value_range=(0.5, 0.7),
                 probe_gain_resample_range=(0.8, 1.2), **extra)
    second = spec(f"{name}b", 4, channels=channels, noise=0.1, resolution=np.linspace(0.0, 0.2, 4 * channels),
                  delay=delay, history_length=2)
    return [first, second]


def _reads(branch: MeasuredBranch) -> list:
    return [t.clone() for i in range(len(branch.specs)) for t in (*branch.read(i), *branch.read_ground_truth(i))]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("extra", [{}, {"hysteresis_strength": 0.4, "hysteresis_tau": 0.05},
                                   {"crosstalk_strength": 0.5, "crosstalk_sigma": 0.01, "grid_spacing": (0.01, 0.01),
                                    "hysteresis_strength": 0.4, "hysteresis_tau": 0.05}])
@pytest.mark.parametrize("delay", [0.02, 0.2])  # a short ring (a launch per slot phase) and a long one (rebound)
def test_push_staged_equals_the_step_by_step_calls(dtype, extra, delay):
    staged = MeasuredBranch(_all_stages("s", 1, delay, **extra), E, dtype=dtype)
    stepwise = MeasuredBranch(_all_stages("s", 1, delay, **extra), E, dtype=dtype)
    g = torch.Generator().manual_seed(0)
    for k in range(16):
        raw = torch.randn(E, staged.n_probes, 1, generator=g, dtype=torch.float64).to(dtype)
        truth = raw.abs()
        measured, gt = staged.staging()
        measured.copy_(raw)
        gt.copy_(truth)
        staged.push_staged()
        stepwise.push(stepwise.hardware(stepwise.transform(raw)), truth)
        for a, b in zip(_reads(staged), _reads(stepwise)):
            assert torch.equal(a, b)
        if k == 3:
            for branch in (staged, stepwise):
                branch.reset(torch.tensor([True, False, True]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("delay", [0.0, 0.03, 0.2])  # ring slots 2 and 6 (a launch per phase), 22 (rebound)
def test_push_staged_with_sample_validity_equals_zeroing_then_push(delay, dtype):
    """docs/models/imperfections.md#validity through push_staged: invalid samples read zeros on both branches, their
    validity is delayed with them
    and the draws are those of hardware → zero the invalid samples → push(…, sample_valid); None = all valid."""
    def specs():
        return [spec("v", 3, noise=0.2, bias=0.05, resolution=0.01, delay=delay, sample_validity=True),
                spec("w", 2, noise=0.1, delay=delay, sample_validity=True)]

    staged, stepwise = MeasuredBranch(specs(), E, dtype=dtype), MeasuredBranch(specs(), E, dtype=dtype)
    sensor = staged.sensor_of_probe
    g = torch.Generator().manual_seed(2)
    invalid_reads = 0
    for k in range(30):
        raw = torch.randn(E, staged.n_probes, 1, generator=g, dtype=torch.float64).to(dtype)
        truth = raw.abs()
        valid = None if k % 7 == 6 else torch.rand(E, 2, generator=g) > 0.3
        measured, gt = staged.staging()
        measured.copy_(raw)
        gt.copy_(truth)
        staged.push_staged(valid)
        keep = torch.ones(E, staged.n_probes, 1, dtype=torch.bool) if valid is None else valid[:, sensor, None]
        y = stepwise.hardware(raw)
        stepwise.push(torch.where(keep, y, 0.0), torch.where(keep, truth, 0.0), sample_valid=valid)
        for a, b in zip((*staged.read_batch(), *staged.read_ground_truth_batch(), *_reads(staged)),
                        (*stepwise.read_batch(), *stepwise.read_ground_truth_batch(), *_reads(stepwise))):
            assert torch.equal(a, b)
        value, flags = staged.read_ground_truth_batch()
        assert torch.all(value[~flags[:, sensor]] == 0.0)
        invalid_reads += int((~staged.read_batch()[1]).sum())
        if k == 12:
            for branch in (staged, stepwise):
                branch.reset(torch.tensor([False, True, True]))
    assert invalid_reads > 0


def test_latch_of_both_branches_after_the_hardware_stages():
    """Stage 10: on = x > contact or (on_prev and x > release), per branch, on the measured value after noise,
    bias, quantisation and dead taxels; fillers read 0 on both branches; a subset reset clears only its envs."""
    specs = [spec("c", 9, active=ACTIVE, noise=0.02, bias=0.005, resolution=0.002, dead_taxel_probability=0.2,
                  dead_taxel_value_range=(0.0, 0.1))]
    contact = torch.linspace(0.02, 0.06, 9)
    release = contact - torch.linspace(0.0, 0.08, 9)
    branch = MeasuredBranch(specs, E, latch_thresholds=(contact, release))
    twin = MeasuredBranch(specs, E)  # same seeds: the same hardware draws
    latch_measured, latch_truth = (SchmittLatch(contact, release, torch.as_tensor(ACTIVE), E) for _ in range(2))
    g = torch.Generator().manual_seed(1)
    flips = 0
    for k in range(12):
        x_truth = torch.rand(E, 9, 1, generator=g) * 0.1 - 0.02
        x_measured = x_truth * 1.1
        measured, gt = branch.staging()
        measured.copy_(x_measured)
        gt.copy_(x_truth)
        branch.push_staged()
        on_measured = latch_measured.update(twin.hardware(x_measured)[..., 0])
        on_truth = latch_truth.update(x_truth[..., 0])
        twin.push(x_measured, x_truth)
        assert torch.equal(branch.read(0)[0], on_measured.float())
        assert torch.equal(branch.read_ground_truth(0)[0], on_truth.float())
        flips += int((on_truth & ~(x_truth[..., 0] > contact)).sum())  # held on by the release threshold
        if k == 5:
            envs = torch.tensor([False, True, False])
            branch.reset(envs)
            twin.reset(envs)
            latch_measured.reset(envs)
            latch_truth.reset(envs)
    assert flips > 0


def test_latch_needs_one_channel_and_one_threshold_per_probe():
    with pytest.raises(ValueError, match="one channel"):
        MeasuredBranch([spec("k", 2, channels=3)], 1, latch_thresholds=(torch.zeros(2), torch.zeros(2)))
    with pytest.raises(ValueError, match="one value per probe"):
        MeasuredBranch([spec("k", 2)], 1, latch_thresholds=(torch.zeros(3), torch.zeros(3)))


def test_hardware_reads_any_input_layout_without_modifying_it():
    """A contiguous input is read in place, a broadcast or strided one is copied first: same values either way."""
    specs = [spec("h", 4, channels=2, noise=0.1, bias=0.3, resolution=0.05)]
    a, b, c = (MeasuredBranch(specs, E) for _ in range(3))
    row = torch.linspace(-1.0, 1.0, 8).view(1, 4, 2)
    contiguous = row.expand(E, 4, 2).clone()
    strided = torch.stack([contiguous, contiguous], -1)[..., 0]
    ya, yb, yc = a.hardware(contiguous), b.hardware(row.expand(E, 4, 2)), c.hardware(strided)
    assert torch.equal(ya, yb) and torch.equal(ya, yc)
    assert torch.equal(contiguous, row.expand(E, 4, 2)) and not torch.equal(ya, contiguous)


@pytest.mark.parametrize("delay", [0.0, 0.03, 0.2])
def test_staging_cycles_through_the_staging_slots(delay):
    """staging() is staging_slots[(evaluations + 1) % len(staging_slots)] (a sensor may record a launch per slot),
    and what is written into a slot is what the delayed read returns ``delay`` evaluations later."""
    branch = MeasuredBranch([spec("z", 2, delay=delay)], E)
    slots = branch.staging_slots
    assert len({id(m) for m, _ in slots}) == len(slots)  # distinct measured buffers, one per phase
    steps = round(delay / 0.01)
    written = []
    for k in range(2 * len(slots) + 3):
        measured, gt = branch.staging()
        assert measured is slots[(branch.evaluations + 1) % len(slots)][0]
        assert gt is slots[(branch.evaluations + 1) % len(slots)][1]
        measured.fill_(float(k))
        gt.fill_(-float(k))
        written.append(float(k))
        branch.push_staged()
        value, valid = branch.read_batch()
        if k >= steps:
            assert torch.all(value == written[k - steps]) and bool(valid.all())
        assert torch.all(branch.read_ground_truth_batch()[0] == -float(k))


@pytest.mark.parametrize("option", [{}, {"noise": 0.1}, {"bias": 0.1}, {"delay": 0.01}, {"resolution": 0.5},
                                    {"probe_gain": 1.1}, {"probe_gain_resample_range": (1.0, 1.0)},
                                    {"probe_radius_noise": 0.001}, {"dead_taxel_probability": 0.1},
                                    {"hysteresis_strength": 0.5, "hysteresis_tau": 0.1}, {"history_length": 2},
                                    {"active": np.array([True, False, True])}])
def test_ground_truth_shares_the_measured_slots_only_when_the_branch_changes_nothing(option):
    """share_ground_truth: one buffer per evaluation for both branches exactly when the branch neither changes a
    value nor draws one; either way both reads return what was written, each in a tensor of its own."""
    branch = MeasuredBranch([spec("z", 3, channels=2, **option)], E)
    shared = branch.share_ground_truth()
    assert shared is (not option)
    for k in range(5):
        measured, gt = branch.staging()
        assert (measured is gt) is shared
        gt.copy_(torch.arange(E * 3 * 2, dtype=torch.float32).view(E, 3, 2) * (k + 1))
        if not shared:
            measured.copy_(gt)
        branch.push_staged()
        truth, valid = branch.read_ground_truth_batch()
        assert torch.equal(truth, gt) and bool(valid.all())
        if shared:
            value, truth = branch.read(0)[0], branch.read_ground_truth(0)[0]
            assert torch.equal(value, gt) and torch.equal(truth, gt)
            assert len({value.data_ptr(), truth.data_ptr(), gt.data_ptr()}) == 3
