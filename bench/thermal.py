"""Step cost of one TemperatureGrid (docs/models/temperature_grid.md#temperature-grid): a 16×16×4 grid on an 8×8×2 cm
pad (5 mm cells, 12 288 contact
samples at the default spacing Δ/4) with a hot block on part of its top.

Rows: the full sensor evaluation (contact query over the surface samples, exchange, conduction, lag, pipeline) and
the conduction step alone, for 1 and 1024 envs. Baseline (ratio = baseline time / ours): the same backward-Euler
conduction done the naive way, one SciPy ``dctn``/``idctn`` pair per env in a Python loop.

    python bench/thermal.py
"""

from __future__ import annotations


import numpy as np
import scipy.fft
import torch

from tactile_sim.suite import SensorSuite
from timing import time_per_call

GRID = (16, 16, 4)




def build(n_envs: int) -> SensorSuite:
    cfg = {"suite": {"dt": 0.01, "n_envs": n_envs},
           "objects": [{"name": "pad", "geometry": [{"box": {"size": [0.08, 0.08, 0.02]}}]},
                       {"name": "hot", "geometry": [{"box": {"size": [0.03, 0.03, 0.02]}}],
                        "pose": {"xyz": [0.01, 0.0, 0.02]}}],
           "sensors": [{"type": "TemperatureGrid", "name": "tg", "link": "pad", "grid_size": list(GRID),
                        "convection_coefficient": 10.0, "sensor_time_constant": 0.1, "noise": 0.01,
                        "properties_dict": {"pad": {"emissivity": 0.9}, "hot": {"base_temperature": 60.0}}}]}
    return SensorSuite.from_yaml(cfg)


def naive_conduction(field: np.ndarray, decay: np.ndarray) -> np.ndarray:
    """Baseline: per env, T ← IDCT(DCT(T) · 1/(1 + dt α Λ)) with SciPy."""
    return np.stack([scipy.fft.idctn(scipy.fft.dctn(t, norm="ortho") * decay, norm="ortho") for t in field])


def main() -> None:
    torch.set_num_threads(1)
    cells = int(np.prod(GRID))
    print(f"{'what':>18} {'envs':>5} {'cells':>8} | {'ms/step':>9} {'cell-upd/s':>11} | {'naive ms':>9} "
          f"{'ratio':>7}")
    for n_envs in (1, 1024):
        suite = build(n_envs)
        state = suite.world.update(0.0)
        batch = suite.locate("tg")[0]
        system = batch.system
        repeats = 200 if n_envs == 1 else 5
        t_full = time_per_call(lambda: batch.evaluate(state), repeats, trials=3, warmup=2)
        t_cond = time_per_call(lambda: system._conduct(system.t_cell), repeats, trials=3, warmup=2)
        field = system.grid_temperatures(0).reshape((n_envs,) + GRID).numpy()
        decay = system.decay[0].numpy()
        t_naive = time_per_call(lambda: naive_conduction(field, decay), repeats, trials=3, warmup=2)
        work = cells * n_envs
        for what, t in (("full evaluation", t_full), ("conduction only", t_cond)):
            print(f"{what:>18} {n_envs:>5} {work:>8} | {t * 1e3:>9.3f} {work / t:>11.3g} | {t_naive * 1e3:>9.3f} "
                  f"{t_naive / t:>7.2f}")


if __name__ == "__main__":
    main()
