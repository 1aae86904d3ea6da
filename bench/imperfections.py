"""Micro-benchmark of the measured branch (docs/models/imperfections.md#imperfections).

Table 1, a typical imperfection set (noise + bias + probe_gain + delay). Per step: measured = gain · raw, stages 5–9
(noise, bias), push into the rings, delayed read of the whole batch. Compared in-process with a naive baseline: one
loop over sensors, a torch.Generator and a deque ring per sensor.

Table 2, the per-step overhead of the demo gripper's branches (tactile_sim/config/demo_sensors.yaml) at E = 1: the
step-by-step calls ``push(hardware(transform(x)), truth)`` and ``push_staged()`` (the fused probe sensors' path), each
with the torch ops and warp launches it makes per step.

    python bench/imperfections.py
"""

from __future__ import annotations

import collections

import torch
from torch.profiler import ProfilerActivity, profile

from tactile_sim.geometry.struct_launch import StructLaunch
from tactile_sim.imperfections.pipeline import MeasuredBranch
from tactile_sim.imperfections.rng import sensor_seed
from tactile_sim.imperfections.spec import SensorImperfections
from timing import time_per_call

DT = 0.01
TYPICAL = dict(noise=0.01, bias=0.002, probe_gain=1.2, delay=2 * DT)


class NaiveSensor:
    """Baseline: one sensor's noise, bias, gain and delay with its own generator and a Python deque ring."""

    def __init__(self, n_probes: int, n_envs: int, seed: int, delay_steps: int):
        self.gen = torch.Generator().manual_seed(seed)
        self.ring = collections.deque([torch.zeros(n_envs, n_probes)] * (delay_steps + 1), maxlen=delay_steps + 1)
        self.n_since = torch.zeros(n_envs, dtype=torch.int64)
        self.delay = delay_steps

    def step(self, raw: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = raw * TYPICAL["probe_gain"]
        y = y + torch.randn(y.shape, generator=self.gen) * TYPICAL["noise"] + TYPICAL["bias"]
        self.ring.append(y)
        self.n_since += 1
        return self.ring[0], self.n_since > self.delay




def main() -> None:
    torch.set_num_threads(1)
    print(f"{'probes':>7} {'envs':>5} {'sensors':>8} | {'batched us/step':>16} {'probe-upd/s':>12} | "
          f"{'naive us/step':>14} {'probe-upd/s':>12} | {'speed-up':>8}")
    for probes, envs, sensors in [(64, 1, 1), (64, 1, 4), (64, 16, 4), (4096, 1, 1), (4096, 1, 64), (4096, 16, 64)]:
        n = probes // sensors
        specs = [SensorImperfections(name=f"s{i}", seed=sensor_seed(0, f"s{i}"), n_probes=n, dt=DT, **TYPICAL)
                 for i in range(sensors)]
        branch = MeasuredBranch(specs, envs)
        raw = torch.rand(envs, probes, 1)

        def batched():
            measured = branch.hardware(branch.transform(raw * branch.gain[..., None]))
            branch.push(measured, raw)
            return branch.read_batch()

        naive_sensors = [NaiveSensor(n, envs, i, 2) for i in range(sensors)]
        parts = [raw[:, i * n:(i + 1) * n, 0] for i in range(sensors)]

        def naive():
            return [s.step(p) for s, p in zip(naive_sensors, parts)]

        repeats = 1000 if probes * envs <= 4096 else 60
        t_b, t_n = time_per_call(batched, repeats, trials=5, warmup=20), time_per_call(naive, repeats, trials=5, warmup=20)
        work = probes * envs
        print(f"{probes:>7} {envs:>5} {sensors:>8} | {t_b * 1e6:>16.1f} {work / t_b:>12.3g} | "
              f"{t_n * 1e6:>14.1f} {work / t_n:>12.3g} | {t_n / t_b:>8.2f}")


DEMO = {  # label → (sensors, probes each, channels, options, latch): the demo's branches with their imperfections
    "KinematicTaxel pads": (2, 30, 6, {"noise": 0.005, "resolution": 0.001}, False),
    "ContactProbe": (1, 30, 1, {}, True),
    "ContactDepthProbe": (1, 30, 1, {}, False),
    "TemperatureGrid": (1, 12, 1, {"noise": 0.05}, False),
    "JointTorque": (1, 3, 1, {"noise": 0.001}, False),
}


def ops_and_launches(fn) -> tuple[int, int]:
    """Top-level torch ops and StructLaunch launches of one call of fn."""
    launches = [0]
    original = StructLaunch.__call__

    def counted(self):
        launches[0] += 1
        original(self)

    StructLaunch.__call__ = counted
    try:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            fn()
    finally:
        StructLaunch.__call__ = original
    ops = [e for e in prof.events() if e.name.startswith("aten::") and e.cpu_parent is None]
    return len(ops), launches[0]


def demo_overhead() -> None:
    print(f"\n{'demo branch (E = 1)':>22} | {'step-by-step us':>15} {'ops':>4} {'launches':>8} | "
          f"{'push_staged us':>14} {'ops':>4} {'launches':>8}")
    for label, (sensors, n, k, options, latch) in DEMO.items():
        specs = [SensorImperfections(name=f"{label}{i}", seed=sensor_seed(7, f"{label}{i}"), n_probes=n, dt=DT,
                                     channels=k, **options) for i in range(sensors)]
        thresholds = (torch.full((n,), 1e-4), torch.full((n,), 1e-4)) if latch else None
        step_by_step = MeasuredBranch(specs, 1, latch_thresholds=thresholds)
        staged = MeasuredBranch(specs, 1, latch_thresholds=thresholds)
        raw = torch.rand(1, step_by_step.n_probes, k) * 1e-3
        truth = raw.clone()

        def calls():
            step_by_step.push(step_by_step.hardware(step_by_step.transform(raw)), truth)

        row = f"{label:>22} |"
        for fn in (calls, staged.push_staged):
            t = time_per_call(fn, 2000, trials=7, warmup=20)
            ops, launches = ops_and_launches(fn)
            row += f" {t * 1e6:>15.1f} {ops:>4} {launches:>8} |"
        print(row.rstrip("|"))


if __name__ == "__main__":
    main()
    demo_overhead()
