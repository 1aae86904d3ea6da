"""Micro-benchmark of the measured branch (spec §13) for a typical imperfection set: noise + bias + probe_gain + delay.

Per step: measured = gain · raw, stages 5–9 (noise, bias), push into the rings, delayed read of the whole batch.
Compared in-process with a naive baseline: one loop over sensors, a torch.Generator and a deque ring per sensor.

    /work/venv/bin/python bench/imperfections.py
"""

from __future__ import annotations

import collections

import torch

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


if __name__ == "__main__":
    main()
