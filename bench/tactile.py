"""Benchmark: the reference pad scene for the tactile sensors (SDF-query probes, ElastomerTaxel on a grid — c = 1: the
separable lattice path, ``ElastomerTaxel/fft`` with c = 0.5: the FFT path — and flat: the direct path; small sensors
take the per-probe pair sums whatever the layout; ProximityTaxel; issue: sensor suite).

Scene: a fixed 8×8×2 cm box pad, an n×n probe grid (n = 8, 32, 64) over 7×7 cm of its top face, probe radius 2 mm,
a sphere r = 2 cm held 2 mm deep at the centre, dt = 0.01 s, 1 and 16 envs, one torch thread. Each sensor is timed
for ground truth plus a typical imperfection set (noise, bias, probe gain, delay). The sphere does not move, so
ElastomerTaxel's anchored samples have zero drag (they add nothing and are skipped). Prints ms/step, probe-updates/s
and the speed-up against Genesis 1.4.5 on the same scene (CPU, 1 thread; figures measured for the issue, or measured
in this process when `genesis` is importable).

    python bench/tactile.py [--repeat N] [--device cpu|cuda] [--sizes 8 32 64] [--envs 1 16] [--profile]

--profile prints, after each row, where the step's time goes: the 12 functions with the largest own time under
cProfile (warp launches show as ``invoke``, torch ops by their method names).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import torch

from tactile_sim.sensors.layout.probe_layout import generate_grid_points_on_plane
from tactile_sim.suite import SensorSuite

GENESIS_MS = {  # (sensor, probes, envs) → ms/step, Genesis 1.4.5 CPU backend, 1 thread (issue figures)
    ("ContactDepthProbe", 64, 1): 0.26, ("ContactDepthProbe", 1024, 1): 0.41, ("ContactDepthProbe", 4096, 1): 0.54,
    ("ContactDepthProbe", 64, 16): 0.40, ("ContactDepthProbe", 1024, 16): 0.76, ("ContactDepthProbe", 4096, 16): 1.66,
    ("KinematicTaxel", 64, 1): 0.30, ("KinematicTaxel", 1024, 1): 0.51, ("KinematicTaxel", 4096, 1): 0.78,
    ("KinematicTaxel", 64, 16): 0.45, ("KinematicTaxel", 1024, 16): 1.10, ("KinematicTaxel", 4096, 16): 3.01,
    ("ElastomerTaxel", 64, 1): 0.84, ("ElastomerTaxel", 1024, 1): 1.32, ("ElastomerTaxel", 4096, 1): 2.06,
    ("ElastomerTaxel", 64, 16): 1.31, ("ElastomerTaxel", 1024, 16): 3.78, ("ElastomerTaxel", 4096, 16): 11.24,
    ("ElastomerTaxel/direct", 64, 1): 0.61, ("ElastomerTaxel/direct", 1024, 1): 2.20,
    ("ElastomerTaxel/direct", 1024, 16): 22.0,
}
# Genesis has no compressibility (its kernel is c = 1) and always takes its FFT path on a grid: the c < 1 row (our FFT
# path; c = 1 on an orthogonal grid takes the separable lattice path) is compared with the same grid figures
GENESIS_MS.update({("ElastomerTaxel/fft",) + key[1:]: ms for key, ms in GENESIS_MS.items()
                   if key[0] == "ElastomerTaxel"})

VARIANTS = {  # bench label → (sensor type, layout form, extra options); other labels: the type itself on the grid
    "ElastomerTaxel": ("ElastomerTaxel", "grid", {"track": ["ball"]}),            # regular grid: FFT path
    "ElastomerTaxel/fft": ("ElastomerTaxel", "grid", {"track": ["ball"], "compressibility": 0.5}),  # c < 1: FFT path
    "ElastomerTaxel/direct": ("ElastomerTaxel", "flat", {"track": ["ball"]}),     # the same probes flat: direct path
    "ProximityTaxel": ("ProximityTaxel", "grid", {"track": ["ball"]}),
}

TYPICAL = {"noise": 1e-4, "bias": 1e-5, "probe_gain": 1.1, "delay": 0.01}


def pad_scene(label: str, n: int, n_envs: int, device: str) -> dict:
    sensor_type, form, extra = VARIANTS.get(label, (label, "grid", {}))
    grid = {"lo": [-0.035, -0.035, 0.0], "hi": [0.035, 0.035, 0.0], "nx": n, "ny": n}
    layout = {"grid": grid} if form == "grid" else \
        generate_grid_points_on_plane(grid["lo"], grid["hi"], (0.0, 0.0, 1.0), n, n).reshape(-1, 3).tolist()
    sensor = {"type": sensor_type, "name": "pad", "link": "pad", "probe_radius": 0.002, "probe_local_pos": layout,
              **extra, **TYPICAL}
    return {
        "suite": {"dt": 0.01, "n_envs": n_envs, "device": device},
        "objects": [
            {"name": "pad", "geometry": [{"box": {"size": [0.08, 0.08, 0.02]}, "origin": {"xyz": [0, 0, -0.01]}}]},
            {"name": "ball", "geometry": [{"sphere": {"radius": 0.02}}], "pose": {"xyz": [0, 0, 0.018]}},
        ],
        "sensors": [sensor],
    }


def time_suite(cfg: dict, repeat: int, profile: bool = False) -> tuple[float, str]:
    """Seconds per engine step (step + the read a consumer makes), best of 5 rounds of `repeat` steps, and with
    ``profile`` a cProfile summary of `repeat` more steps (else "")."""
    suite = SensorSuite.from_yaml(cfg)
    state = suite.world.update(0.0)
    for _ in range(20):
        suite.step(state)
        suite.read("pad")
    best = float("inf")
    for _ in range(5):
        if suite.device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(repeat):
            suite.step(state)
            suite.read("pad")
        if suite.device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / repeat)
    if not profile:
        return best, ""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(repeat):
        suite.step(state)
        suite.read("pad")
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(12)
    return best, "\n".join(line for line in text.getvalue().splitlines()[4:] if line.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--sensors", nargs="+", default=["ContactDepthProbe", "KinematicTaxel", "ElastomerTaxel",
                                                           "ElastomerTaxel/fft", "ElastomerTaxel/direct",
                                                           "ProximityTaxel"])
    parser.add_argument("--profile", action="store_true", help="print a cProfile summary after each row")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{'sensor':<21} {'probes':>6} {'envs':>4} {'ms/step':>9} {'probe-upd/s':>12} {'Genesis ms':>10} "
          f"{'speed-up':>8}")
    for sensor in args.sensors:
        for envs in args.envs:
            for n in args.sizes:
                sec, profile = time_suite(pad_scene(sensor, n, envs, args.device), args.repeat, args.profile)
                probes = n * n
                ref = GENESIS_MS.get((sensor, probes, envs))
                ratio = f"{ref / (sec * 1e3):7.2f}x" if ref else "      -"
                print(f"{sensor:<21} {probes:>6} {envs:>4} {sec * 1e3:9.3f} {probes * envs / sec:12.3e} "
                      f"{ref if ref else '-':>10} {ratio:>8}")
                if profile:
                    print(profile)


if __name__ == "__main__":
    main()
