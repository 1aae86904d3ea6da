"""bench/tactile.py's pad scene in Genesis (genesis-world, CPU backend, one thread), for the speed-up column.

Run with a Python that has genesis-world installed (it is never a dependency of tactile_sim). What is timed: Genesis'
sensor update plus the read a consumer makes (``SensorManager.step`` and ``sensor.read()``), in ms per step. The
rigid solver's step is not timed (the bench's world does not move either); the scene is stepped a few times first
so that the SDF-query sensors, which only query geometry the solver reports in contact, find the ball in contact
with the pad. With motion the ball follows :func:`ball_path` (set before each step, untimed: only the sensor update
and the read are timed).

    <genesis python> bench/genesis_pad.py --cells ProximityTaxel:1024:16 KinematicTaxel:4096:16 [--typical 0|1]
                                          [--motion]

prints ``sensor probes envs ms`` per cell (best of ``--rounds`` rounds of ``--repeat`` steps; ``--clock cpu``: the
process's CPU seconds instead of wall seconds, steadier on a shared machine). ``--serve`` is the worker
bench/tactile.py starts for interleaved rounds: it reads commands from stdin, one a line — ``build <sensor> <probes>
<envs> <typical 0|1> [<motion 0|1>]`` (answers ``ok``), ``time <repeat>`` (answers the ms per step of ``repeat``
steps of the cell built last), ``quit`` — and answers each on one line of stdout.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import torch

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
"""What a timed round reads: wall seconds, or the CPU seconds of this process (all its threads; time spent waiting
for a core that other processes hold is not counted)."""
TYPICAL = {"noise": 1e-4, "bias": 1e-5, "probe_gain": 1.1, "delay": 0.01}   # bench/tactile.py's typical set
SENSOR_CLASS = {"ContactDepthProbe": "ContactDepthProbe", "KinematicTaxel": "KinematicTaxel",
                "ElastomerTaxel": "ElastomerTaxel", "ElastomerTaxel/fft": "ElastomerTaxel",
                "ElastomerTaxel/direct": "ElastomerTaxel", "ProximityTaxel": "ProximityTaxel"}


BALL_DEPTH = 0.018
"""Height (m) of the ball's centre over the pad's top face: r = 2 cm held 2 mm deep."""


def ball_path(step: int, n_envs: int) -> tuple[np.ndarray, np.ndarray]:
    """The moving ball of the motion cells at ``step`` (world frame; both benches): (centre [E, 3] m, spin [E] rad
    about the vertical). Each env's centre slides 2 mm deep on a circle of radius 3 mm about the pad's centre,
    0.06 mm per step (env e a phase 0.37·e ahead), while the ball spins 0.05 rad per step: the contact moves over
    the probes and its surface samples slide over the gel."""
    phase = 0.02 * step + 0.37 * np.arange(n_envs)
    centre = np.stack([0.003 * np.cos(phase), 0.003 * np.sin(phase), np.full(n_envs, BALL_DEPTH)], axis=-1)
    return centre, 0.05 * step + 0.37 * np.arange(n_envs)


def probe_grid(n: int, flat: bool) -> np.ndarray:
    """The bench's n×n probe grid over 7×7 cm of the pad's top face (link frame, m): (n, n, 3), or (n², 3)."""
    xs = np.linspace(-0.035, 0.035, n)
    grid = np.stack([*np.meshgrid(xs, xs, indexing="xy"), np.zeros((n, n))], axis=-1)
    return grid.reshape(-1, 3) if flat else grid


def build_cell(gs, label: str, n: int, n_envs: int, typical: bool, motion: bool = False, clock: str = "wall"):
    """The Genesis scene of one pad-scene cell, built and warmed up; returns a callable: ``repeat`` → s per step
    (seconds of :data:`CLOCKS` ``clock``; with ``motion``: the ball moves along :func:`ball_path`, set untimed before
    each step)."""
    scene = gs.Scene(sim_options=gs.options.SimOptions(dt=0.01, gravity=(0.0, 0.0, 0.0)), show_viewer=False)
    pad = scene.add_entity(gs.morphs.Box(size=(0.08, 0.08, 0.02), pos=(0.0, 0.0, -0.01), fixed=True))
    ball = scene.add_entity(gs.morphs.Sphere(radius=0.02, pos=(0.0, 0.0, BALL_DEPTH)))
    options = dict(entity_idx=pad.idx, link_idx_local=0, probe_radius=0.002,
                   probe_local_pos=probe_grid(n, flat=label == "ElastomerTaxel/direct" or
                                              SENSOR_CLASS[label] not in ("ElastomerTaxel", "ProximityTaxel")))
    if SENSOR_CLASS[label] in ("ElastomerTaxel", "ProximityTaxel"):
        options["track_link_idx"] = [ball.base_link.idx]
    if typical:
        options.update(TYPICAL)
    sensor = scene.add_sensor(getattr(gs.sensors, SENSOR_CLASS[label])(**options))
    scene.build(n_envs=n_envs)
    for _ in range(3):
        scene.step()
    manager = scene.sim._sensor_manager
    steps = 0

    def place_ball() -> None:
        nonlocal steps
        centre, spin = ball_path(steps, n_envs)
        quat = np.stack([np.cos(spin / 2), 0 * spin, 0 * spin, np.sin(spin / 2)], axis=-1)     # w, x, y, z
        ball.set_pos(torch.as_tensor(centre))
        ball.set_quat(torch.as_tensor(quat))
        steps += 1

    now = CLOCKS[clock]

    def seconds_per_step(repeat: int) -> float:
        if not motion:
            t0 = now()
            for _ in range(repeat):
                manager.step()
                sensor.read()
            return (now() - t0) / repeat
        total = 0.0
        for _ in range(repeat):
            place_ball()
            t0 = now()
            manager.step()
            sensor.read()
            total += now() - t0
        return total / repeat

    seconds_per_step(10)

    seconds_per_step.scene = scene
    return seconds_per_step


def serve(gs, clock: str) -> None:
    """The stdin/stdout worker of ``--serve`` (module docstring)."""
    timer = None
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words[0] == "build":
            if timer is not None:
                timer.scene.destroy()
            label, probes, envs, typical = words[1], int(words[2]), int(words[3]), bool(int(words[4]))
            motion = len(words) > 5 and bool(int(words[5]))
            timer = build_cell(gs, label, int(round(probes ** 0.5)), envs, typical, motion, clock)
            answer = "ok"
        else:
            answer = f"{1e3 * timer(int(words[1])):.6f}"
        print(answer, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", nargs="+", default=[], help="sensor:probes:envs (probes a square n²)")
    parser.add_argument("--serve", action="store_true", help="run as bench/tactile.py's worker (stdin commands)")
    parser.add_argument("--typical", type=int, default=1, help="1: the typical imperfection set, 0: none")
    parser.add_argument("--motion", action="store_true", help="the ball moves (ball_path) instead of resting")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall seconds or this process's CPU seconds")
    args = parser.parse_args()
    torch.set_num_threads(1)
    import genesis as gs
    gs.init(backend=gs.cpu, logging_level="error")
    if args.serve:
        serve(gs, args.clock)
        return
    for cell in args.cells:
        label, probes, envs = cell.split(":")
        n = int(round(int(probes) ** 0.5))
        timer = build_cell(gs, label, n, int(envs), bool(args.typical), args.motion, args.clock)
        ms = 1e3 * min(timer(args.repeat) for _ in range(args.rounds))
        timer.scene.destroy()
        print(f"{label} {n * n} {envs} {ms:.4f}", flush=True)


if __name__ == "__main__":
    main()
