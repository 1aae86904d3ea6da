"""Benchmark: the reference pad scene for the tactile sensors (SDF-query probes, ElastomerTaxel on a grid — c = 1: the
separable lattice path, ``ElastomerTaxel/fft`` with c = 0.5: the FFT path — and flat: the direct path; small sensors
take the per-probe pair sums whatever the layout; ProximityTaxel; issue: sensor suite).

Scene: a fixed 8×8×2 cm box pad, an n×n probe grid (n = 8, 32, 64) over 7×7 cm of its top face, probe radius 2 mm,
a sphere r = 2 cm held 2 mm deep at the centre, dt = 0.01 s, 1 and 16 envs, one torch thread. Each sensor is timed
for ground truth plus a typical imperfection set (noise, bias, probe gain, delay; ``--typical 1 0`` also without
it). The sphere does not move, so ElastomerTaxel's anchored samples have zero drag (they add nothing and are
skipped) and its FFT path's depth maps keep their bits (after the first step it transforms nothing: the c < 1 rows
time the rest of the step, not the transforms); ``--motion 1`` times the same cells with the sphere moving instead
(:func:`genesis_pad.ball_path`: it slides on a 3 mm circle 2 mm deep and spins, so the contact moves and anchored
samples drag; column ``mov``; the world update of each step is not timed, on either side). Prints ms/step (best of ``--rounds`` rounds of
``--repeat`` steps), millions of probe-updates/s, the bytes a probe-update must move (:func:`bytes_per_update`) and
the fraction of one core's measured copy bandwidth that this reaches, and the speed-up against Genesis on the same
scene.

Genesis: with ``--genesis-python PY`` (an interpreter with genesis-world; by default this one when it can import
``genesis``) bench/genesis_pad.py runs as a worker and every round of a cell times Genesis right after this
library (interleaved rounds); the speed-up column is then the range of the per-round ratios. Without it, the figures
stored in :data:`GENESIS_MS` are used, and the table says so.

    python bench/tactile.py [--repeat N] [--rounds R] [--device cpu|cuda] [--sizes 8 32 64] [--envs 1 16]
                            [--typical 1 0] [--motion 0 1] [--genesis-python PY] [--clock wall|cpu] [--profile]
    python bench/tactile.py --sizes 32 --envs 64 256 --sensors ContactDepthProbe KinematicTaxel   # large batch

--clock cpu times both libraries by their process's CPU seconds instead of wall seconds (CPU only): steadier when
other processes share the cores, as the time a process waits for a core is not counted.

--profile prints, after each row, where the step's time goes: the 12 functions with the largest own time under
cProfile (warp launches show as ``invoke``, torch ops by their method names).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import os
import pstats
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from genesis_pad import BALL_DEPTH, CLOCKS, ball_path
from tactile_sim.sensors.layout.probe_layout import generate_grid_points_on_plane
from tactile_sim.suite import SensorSuite

GENESIS_MS = {  # (sensor, probes, envs) → ms/step, Genesis 1.4.5 CPU backend, 1 thread, typical imperfections:
    # bench/genesis_pad.py's sensor update + read on the 2-core development machine (CPU clock), the smallest over 5
    # processes of 3 interleaved rounds each (ElastomerTaxel/direct 1024 × 16: over 6 of 7, one process read 14.3)
    ("ContactDepthProbe", 64, 1): 0.66, ("ContactDepthProbe", 1024, 1): 0.598, ("ContactDepthProbe", 4096, 1): 0.739,
    ("ContactDepthProbe", 64, 16): 0.579, ("ContactDepthProbe", 1024, 16): 1.11, ("ContactDepthProbe", 4096, 16): 3.04,
    ("KinematicTaxel", 64, 1): 0.715, ("KinematicTaxel", 1024, 1): 0.911, ("KinematicTaxel", 4096, 1): 1.51,
    ("KinematicTaxel", 64, 16): 0.741, ("KinematicTaxel", 1024, 16): 2.82, ("KinematicTaxel", 4096, 16): 8.15,
    ("ElastomerTaxel", 64, 1): 1.81, ("ElastomerTaxel", 1024, 1): 1.74, ("ElastomerTaxel", 4096, 1): 2.95,
    ("ElastomerTaxel", 64, 16): 1.81, ("ElastomerTaxel", 1024, 16): 4.49, ("ElastomerTaxel", 4096, 16): 16.1,
    ("ElastomerTaxel/direct", 64, 1): 1.13, ("ElastomerTaxel/direct", 1024, 1): 1.97,
    ("ElastomerTaxel/direct", 1024, 16): 20.2,
    ("ProximityTaxel", 64, 1): 0.684, ("ProximityTaxel", 1024, 1): 1.04, ("ProximityTaxel", 4096, 1): 1.72,
    ("ProximityTaxel", 64, 16): 0.795, ("ProximityTaxel", 1024, 16): 4.05, ("ProximityTaxel", 4096, 16): 12.0,
    ("ContactDepthProbe", 1024, 64): 3.48, ("ContactDepthProbe", 1024, 256): 9.15,
    ("KinematicTaxel", 1024, 64): 7.95, ("KinematicTaxel", 1024, 256): 34.9,
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
            {"name": "ball", "geometry": [{"sphere": {"radius": 0.02}}], "pose": {"xyz": [0, 0, BALL_DEPTH]}},
        ],
        "sensors": [sensor],
    }


def copy_bandwidth(mib: int = 256, rounds: int = 5, clock: str = "wall") -> float:
    """One core's memory bandwidth, bytes/s: the best of ``rounds`` copies of a ``mib`` MiB float32 tensor into
    another, counting the bytes read and the bytes written (seconds of :data:`~genesis_pad.CLOCKS` ``clock``)."""
    now = CLOCKS[clock]
    src = torch.ones(mib << 18)
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(rounds):
        t0 = now()
        dst.copy_(src)
        best = min(best, now() - t0)
    return 2 * src.numel() * src.element_size() / best


def bytes_per_update(suite: SensorSuite, typical: bool) -> int:
    """Bytes one probe-update must move through memory: the per-(env, probe) buffers of a step, each value written
    or read once (K channels of the working dtype, b bytes): the model writes both branches (2Kb), the consumer's
    read copies the measured one (2Kb); with imperfections the branch kernel updates the measured branch in place
    (2Kb) and reads one uint32 noise lane per value (4K). Per-probe tables shared by the envs (positions, normals,
    noise σ, ProximityTaxel's rest wrenches) are left out: at these sizes they stay in cache. A lower bound: scratch
    of the models' own (ElastomerTaxel's FFT work arrays, ProximityTaxel's sums and marks of the few probes a sample
    reaches) and cache misses of gathers are not counted."""
    batch, _ = suite.locate("pad")
    k, b = batch.channels, torch.finfo(suite.dtype).bits // 8
    return 4 * k * b + (2 * k * b + 4 * k if typical else 0)


class SuiteTimer:
    """A built pad-scene suite; ``timer(repeat)`` → seconds per engine step (step + the read a consumer makes), of
    :data:`~genesis_pad.CLOCKS` ``clock``. With ``motion`` the ball follows :func:`genesis_pad.ball_path`: each step's
    world update is made first, untimed."""

    def __init__(self, cfg: dict, motion: bool = False, clock: str = "wall"):
        self.now = CLOCKS[clock]
        self.suite = SensorSuite.from_yaml(cfg)
        self.motion, self.steps = motion, 0
        self.state = self.suite.world.update(0.0)
        self(20)

    def _moved_state(self):
        """The world state of the next step of the moving ball."""
        suite = self.suite
        centre, spin = ball_path(self.steps, suite.n_envs)
        c, s, zero, one = np.cos(spin), np.sin(spin), np.zeros_like(spin), np.ones_like(spin)
        rot = np.stack([np.stack([c, -s, zero], -1), np.stack([s, c, zero], -1), np.stack([zero, zero, one], -1)], 1)
        self.steps += 1
        pose = tuple(torch.as_tensor(x, device=suite.device, dtype=suite.dtype) for x in (rot, centre))
        return suite.world.update(0.01 * self.steps, object_poses={"ball": pose})

    def __call__(self, repeat: int) -> float:
        suite, state = self.suite, self.state
        if self.motion:
            total = 0.0
            for _ in range(repeat):
                state = self._moved_state()
                sync(suite)
                t0 = self.now()
                suite.step(state)
                suite.read("pad")
                sync(suite)
                total += self.now() - t0
            return total / repeat
        sync(suite)
        t0 = self.now()
        for _ in range(repeat):
            suite.step(state)
            suite.read("pad")
        sync(suite)
        return (self.now() - t0) / repeat

    def profile(self, repeat: int) -> str:
        """cProfile summary of ``repeat`` steps (12 functions of largest own time)."""
        profiler = cProfile.Profile()
        profiler.enable()
        self(repeat)
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(12)
        return "\n".join(line for line in text.getvalue().splitlines()[4:] if line.strip())


def sync(suite: SensorSuite) -> None:
    """Wait for the suite's device (CUDA) to finish its queued work."""
    if suite.device.type == "cuda":
        torch.cuda.synchronize()


class GenesisWorker:
    """bench/genesis_pad.py ``--serve`` in interpreter ``python``: ``build`` a cell, then time rounds of it."""

    def __init__(self, python: str, clock: str = "wall"):
        script = Path(__file__).with_name("genesis_pad.py")
        self.process = subprocess.Popen([python, str(script), "--serve", "--clock", clock], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True,
                                        env={**os.environ, "OMP_NUM_THREADS": "1"})

    def _ask(self, line: str) -> str:
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        while True:  # Genesis may print lines of its own: the answer is "ok" or a number
            answer = self.process.stdout.readline()
            if not answer:
                raise RuntimeError("the Genesis worker stopped (bench/genesis_pad.py --serve)")
            answer = answer.strip()
            if answer == "ok" or answer.replace(".", "", 1).isdigit():
                return answer

    def build(self, label: str, probes: int, envs: int, typical: bool, motion: bool) -> None:
        self._ask(f"build {label} {probes} {envs} {int(typical)} {int(motion)}")

    def __call__(self, repeat: int) -> float:
        return float(self._ask(f"time {repeat}")) / 1e3

    def close(self) -> None:
        """End the worker (closing its stdin ends its command loop)."""
        self.process.stdin.close()
        self.process.wait()


def default_genesis_python() -> str | None:
    """This interpreter when it can import genesis, else None."""
    return sys.executable if importlib.util.find_spec("genesis") is not None else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per cell (interleaved with Genesis)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--typical", type=int, nargs="+", default=[1], help="1: typical imperfections, 0: none")
    parser.add_argument("--motion", type=int, nargs="+", default=[0], help="0: the sphere rests, 1: it moves")
    parser.add_argument("--sensors", nargs="+", default=["ContactDepthProbe", "KinematicTaxel", "ElastomerTaxel",
                                                           "ElastomerTaxel/fft", "ElastomerTaxel/direct",
                                                           "ProximityTaxel"])
    parser.add_argument("--genesis-python", default=default_genesis_python(),
                        help="interpreter with genesis-world: time Genesis in interleaved rounds")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="time by wall seconds or by each process's CPU seconds (CPU device only)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile summary after each row")
    args = parser.parse_args()
    if args.clock == "cpu" and args.device != "cpu":
        parser.error("--clock cpu times the CPU device only (a GPU's work is not a process's CPU time)")
    torch.set_num_threads(1)
    bandwidth = copy_bandwidth(clock=args.clock)
    genesis = GenesisWorker(args.genesis_python, args.clock) if args.genesis_python else None
    print(f"one core's copy bandwidth: {bandwidth / 1e9:.1f} GB/s (read + write); {args.clock} clock; Genesis: "
          + (f"measured in interleaved rounds ({args.genesis_python})" if genesis else
             "stored figures (GENESIS_MS, typical imperfections; genesis-world not importable here)"))
    print(f"{'sensor':<21} {'probes':>6} {'envs':>4} {'typ':>3} {'mov':>3} {'ms/step':>9} {'M upd/s':>8} {'B/upd':>5} "
          f"{'of bw':>6} {'Genesis ms':>10} {'speed-up':>13}")
    cells = [(sensor, typical, motion, envs, n) for sensor in args.sensors for typical in args.typical
             for motion in args.motion for envs in args.envs for n in args.sizes]
    for sensor, typical, motion, envs, n in cells:
        cfg = pad_scene(sensor, n, envs, args.device)
        if not typical:
            for key in TYPICAL:
                cfg["sensors"][0].pop(key)
        ours = SuiteTimer(cfg, bool(motion), args.clock)
        probes = n * n
        if genesis:
            genesis.build(sensor, probes, envs, bool(typical), bool(motion))
        times, ratios = [], []
        for _ in range(args.rounds):
            sec = ours(args.repeat)
            times.append(sec)
            if genesis:
                ratios.append(genesis(max(5, args.repeat // 4)) / sec)
        sec = min(times)
        rate, moved = probes * envs / sec, bytes_per_update(ours.suite, bool(typical))
        if genesis:
            ref = f"{min(r * t for r, t in zip(ratios, times)) * 1e3:.3f}"
            ratio = f"{min(ratios):.1f}-{max(ratios):.1f}x"
        else:
            stored = GENESIS_MS.get((sensor, probes, envs)) if typical and not motion else None
            ref, ratio = (f"{stored}", f"{stored / (sec * 1e3):.2f}x") if stored else ("-", "-")
        print(f"{sensor:<21} {probes:>6} {envs:>4} {typical:>3} {motion:>3} {sec * 1e3:9.3f} "
              f"{rate / 1e6:8.1f} {moved:>5} {rate * moved / bandwidth:6.1%} {ref:>10} {ratio:>13}", flush=True)
        if args.profile:
            print(ours.profile(args.repeat))
    if genesis:
        genesis.close()


if __name__ == "__main__":
    main()
