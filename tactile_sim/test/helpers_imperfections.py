"""Shared helpers for the imperfection-pipeline tests: spec construction and a scripted evaluation loop."""

from __future__ import annotations

import torch

from tactile_sim.imperfections.pipeline import MeasuredBranch
from tactile_sim.imperfections.spec import SensorImperfections

DT = 0.01


def spec(name: str = "s", n_probes: int = 1, seed: int | None = None, dt: float = DT, **options) -> SensorImperfections:
    """A validated spec with a name-derived seed unless one is given."""
    from tactile_sim.imperfections.rng import sensor_seed

    return SensorImperfections(name=name, seed=sensor_seed(0, name, seed), n_probes=n_probes, dt=dt, **options)


def evaluate(branch: MeasuredBranch, raw: torch.Tensor, truth: torch.Tensor | None = None) -> None:
    """One evaluation: transform → hardware → push (raw [E, P, K] is both branches' input unless truth is given)."""
    measured = branch.hardware(branch.transform(raw))
    branch.push(measured, raw if truth is None else truth)


def run(branch: MeasuredBranch, raws, sensor: int = 0, ground_truth: bool = False):
    """Evaluate each raw [E, P, K] in turn; returns the list of (value, valid) reads (cloned) of one sensor."""
    out = []
    for raw in raws:
        evaluate(branch, raw)
        value, valid = (branch.read_ground_truth if ground_truth else branch.read)(sensor)
        out.append((value.clone(), valid.clone()))
    return out


def constant(branch: MeasuredBranch, value: float) -> torch.Tensor:
    """A raw input [E, P, K] filled with value, on the branch's device/dtype."""
    shape = (branch.n_envs, branch.n_probes, branch.channels)
    return torch.full(shape, value, dtype=branch.dtype, device=branch.device)
