"""Replay speed as a multiple of real time (CPU, one thread): recorded joint states in a rosbag2 bag → the sensors at
100 Hz → a new bag, through ``tactile_sim.offline.replay.replay_bag`` (what ``tactile-sim replay`` runs).

Scenes:

* ``demo``: the demo gripper with ``config/demo_sensors.yaml`` (every sensor type: 2 × 30 KinematicTaxel, 30
  ContactProbe, 30 ContactDepthProbe, 30 ElastomerTaxel, 9 ProximityTaxel, 9 SurfaceDistanceProbe, a palm
  ContactSensor, a 2×2×3 thermal grid, 3-joint JointTorque) on one cycle of its trajectory;
* ``hand 368``: the Allegro-like hand of ``bench/node_core.py`` (16 revolute joints, 15 KinematicTaxel pads, 368
  taxels) closing on a sphere and opening again.

Baseline (same process): the same inputs through the same loop with the output thrown away (no bag reading or
writing), which is the node core's own cost; the difference ('I/O ms' per tick) is the bag reading and writing and
the run digest. 'kernels ms': the time spent inside the recorded warp kernel launches of that loop (a third run,
every launch timed), the arithmetic of the sensor models that no Python-side change removes. Goal: ≥ 100× real
time, i.e. ≤ 0.1 ms per tick at 100 Hz.

Second table, the bound of a time-batched design: the same recorded joint positions, K consecutive ticks evaluated as
the K envs of one ``SensorSuite.update`` (world posing and every sensor batch, no bag, no messages; what one suite
step costs per tick when its launches and glue are shared by K ticks). It ignores what carries from one tick to the
next (velocity estimates, imperfection state, thermal and filter state), so it is a bound, not a replay; ratio =
µs per tick at K = 1 (the per-tick stepping of today) / at K.

Third table (``--corpus N ...``): N variants of each recording (the demo cycle cut at lengths from 0.75 to 1.25 ×
S, the hand closing to 50–90 % of its flexion) replayed as one corpus in one process on one thread
(``tactile_sim.offline.corpus.replay_corpus``, what ``tactile-sim replay`` of many recordings runs, bags written), up
to B recordings at a time as the envs of one suite (``--batch B ...``, a row per B, repeated values for
interleaved rounds: ``--batch 1 16 1 16``; B = 1: one after another, each with its run digest, the sensors built
once and rewound for each further recording), in a fresh process per row so that its peak memory is its own.
``--workers W ...`` adds a row per W for each B: the corpus split over W worker processes (``tactile-sim replay
--workers W``: batches of up to min(B, N / W) recordings, one torch thread each), the CPU seconds then the workers'
and this process's together, and no memory figures (a forked worker's peak is not its own). Columns:
aggregate x real time = simulated seconds of all N ÷ wall seconds of the whole corpus (the build included), and ÷
its CPU seconds (user + system: steadier on a shared machine); 'sys s' = the system part of those CPU seconds,
mostly the kernel copying the bags into the page cache; 'RSS MiB' = the process's peak resident memory, 'growth' =
that peak − the peak after the imports, before the corpus (MiB). A row's bags are deleted once it is measured: on a
virtual machine whose memory the host backs on first use, each row would otherwise write into fresh pages of a
page cache holding every earlier row's bags, and its system time would grow with its place in the table (0.1 s →
1 s for the hand corpus's 332 MB).

    python bench/replay.py [--seconds S] [--corpus N ...] [--batch B ...] [--workers W ...] [--only-corpus]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import resource
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from unittest import mock

import numpy as np
import torch
import yaml

from node_core import hand_config, hand_urdf
from tactile_sim.config import load_config
from tactile_sim.demo_trajectory import DEMO_CONFIG
from tactile_sim.geometry.struct_launch import StructLaunch
from tactile_sim.io.stamps import NS_PER_S
from tactile_sim.offline.bag_inputs import BagInputs, open_bag
from tactile_sim.offline.corpus import expand_inputs, plan_jobs, replay_corpus
from tactile_sim.offline.demo import demo_events
from tactile_sim.offline.digest import TaxelSeries
from tactile_sim.offline.input_messages import joint_state_message
from tactile_sim.offline.output_bag import OutputBag
from tactile_sim.offline.replay import replay_bag
from tactile_sim.offline.run_loop import InputEvent, RunLoop
from tactile_sim.offline.tick_clock import tick_time_ns
from tactile_sim.ros.node_core import NodeCore
from tactile_sim.ros.node_params import NodeParams
from tactile_sim.suite import SensorSuite
from timing import time_per_call

RATE = 100.0
GOAL = 100.0
WINDOWS = (1, 10, 100)
"""K of the time-batched bound (ticks per suite step)."""


def record(path: Path, events) -> Path:
    """A bag of input events (what a robot recording holds)."""
    with OutputBag(path, node_name="recorder") as bag:
        for event in events:
            bag.write(event.topic, event.log_ns, event.message)
    return path


def demo_inputs(seconds: float):
    config = load_config(DEMO_CONFIG)
    core = NodeCore(config, NodeParams(update_rate=RATE, viz_rate=0.0))
    return config, demo_events(core.suite.robot, core.suite.urdf_text, round(seconds * RATE), RATE, "world")


def hand_inputs(seconds: float, urdf: Path, amplitude: float = 0.7):
    config = load_config(hand_config(urdf))
    names = NodeCore(config, NodeParams(update_rate=RATE, viz_rate=0.0)).suite.robot.actuated_joint_names
    flexion = np.array([0.0 if n.endswith("j0") else 1.0 for n in names])

    def events():
        for k in range(round(seconds * RATE)):
            t_ns = tick_time_ns(0, k, RATE)
            s = 0.5 * (1 - math.cos(2 * math.pi * t_ns / NS_PER_S / seconds))  # close and open once
            yield InputEvent("joint_states", "/joint_states", t_ns, t_ns,
                             joint_state_message(t_ns, names, amplitude * s * flexion))

    return config, events()


def core_only(bag: Path, config, time_kernels: bool = False) -> float:
    """Wall seconds of the same replay without bag I/O (inputs read up front, outputs dropped); with
    ``time_kernels``, the seconds spent inside the kernel launches of that run instead."""
    with open_bag(bag) as reader:
        events = list(BagInputs(reader).events())
    core = NodeCore(config, NodeParams(update_rate=RATE, viz_rate=0.0))
    loop = RunLoop(core, lambda log_ns, items: None)
    inside = [0.0]
    launch = StructLaunch.__call__

    def timed_launch(self) -> None:
        t = time.perf_counter()
        launch(self)
        inside[0] += time.perf_counter() - t

    with mock.patch.object(StructLaunch, "__call__", timed_launch) if time_kernels else contextlib.nullcontext():
        start = time.perf_counter()
        for event in events:
            loop.feed(event)
        loop.finish()
        wall = time.perf_counter() - start
    return inside[0] if time_kernels else wall


def bench(label: str, config, events, folder: Path) -> None:
    bag = record(folder / f"{label.replace(' ', '_')}_in", events)
    result = replay_bag(bag, config, folder / f"{label.replace(' ', '_')}_out", rate=RATE, progress=False)
    stats = result.stats
    simulated = stats.ticks / RATE
    core_wall = core_only(bag, config)
    kernels = core_only(bag, config, time_kernels=True)
    taxels = sum(len(s.peak_message.radii) for s in result.digest.of_type(TaxelSeries))
    messages = sum(result.counts.values())
    print(f"{label:>9} {taxels:>6} {stats.ticks:>6} {messages:>6} | {stats.wall_s:7.2f} "
          f"{1e3 * stats.wall_s / stats.ticks:8.2f} {simulated / stats.wall_s:8.3f} | "
          f"{1e3 * core_wall / stats.ticks:8.2f} {simulated / core_wall:8.3f} | "
          f"{1e3 * (stats.wall_s - core_wall) / stats.ticks:8.3f} | {1e3 * kernels / stats.ticks:10.3f} | "
          f"{GOAL * stats.wall_s / simulated:7.0f}")


def recorded_joints(events, names: list[str]) -> np.ndarray:
    """Joint positions [ticks, n_act] (URDF order) of the joint-state events."""
    rows = []
    for event in events:
        if event.kind == "joint_states":
            position = dict(zip(event.message.name, event.message.position))
            rows.append([position[n] for n in names])
    return np.array(rows)


def time_batched_bound(label: str, config, events) -> None:
    """One row per K of :data:`WINDOWS`: µs per tick of a suite step over K recorded ticks as K envs."""
    joints, base = None, None
    for k in WINDOWS:
        suite = SensorSuite(config, n_envs=k)
        if joints is None:
            joints = recorded_joints(events, suite.robot.actuated_joint_names)
        windows = [torch.as_tensor(joints[i:i + k], dtype=suite.dtype) for i in range(0, len(joints) - k + 1, k)]
        clock = iter(range(10**9))

        def step() -> None:
            for q in windows:
                suite.update(next(clock) / RATE, joint_pos=q)

        per_tick = time_per_call(step, 1, trials=3, warmup=1) / (len(windows) * k)
        base = base or per_tick
        print(f"{label:>9} {k:>4} {len(windows) * k:>6} | {1e6 * per_tick:9.1f} {1 / per_tick:10.0f} | "
              f"{base / per_tick:6.1f}")


def peak_rss_mib() -> float:
    """Peak resident memory of this process, MiB (Linux: VmHWM, which an exec resets, unlike ru_maxrss)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> tuple[float, float]:
    """(user, system) CPU seconds of this process and its ended (waited for) child processes so far."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + children.ru_utime, own.ru_stime + children.ru_stime


def corpus_in_process(folder: str, config_source: str, out: str, batch: int,
                      workers: int) -> tuple[int, float, float, float, float, float, float]:
    """(ticks, simulated s, wall s, CPU s, its system part, max RSS MiB, its growth MiB during the corpus) of
    replaying every recording in ``folder`` into ``out`` in this process on one thread (or in ``workers``
    processes: the memory figures NaN), up to ``batch`` at a time as the envs of one suite (run in a fresh
    process)."""
    torch.set_num_threads(1)
    before = peak_rss_mib()
    jobs = plan_jobs(expand_inputs([folder]), out, "bag", False)
    user_0, system_0 = cpu_s()
    outcomes, wall = replay_corpus(jobs, config_source, {"rate": RATE}, batch=batch, workers=workers,
                                   progress=False)
    user, system = cpu_s()
    user, system = user - user_0, system - system_0
    failed = [o.error for o in outcomes if o.status]
    if failed:
        raise RuntimeError(f"corpus replay failed: {failed[:3]}")
    rss = peak_rss_mib() if workers == 1 else math.nan
    return sum(o.ticks for o in outcomes), sum(o.simulated_s for o in outcomes), wall, user + system, system, rss, \
        rss - before


def corpus(label: str, config_source: str, variant, counts: list[int], batches: list[int], workers: list[int],
           folder: Path) -> None:
    """One row per N of ``counts``, batch size of ``batches`` and worker count of ``workers``: N variants
    ``variant(i, n)`` → (config, events) replayed as one corpus."""
    for n in counts:
        recordings = folder / f"{label.replace(' ', '_')}_{n}"
        for i in range(n):
            record(recordings / f"rec_{i:03d}", variant(i, n)[1])
        for row, (batch, w) in enumerate((batch, w) for batch in batches for w in workers):
            out = folder / f"{recordings.name}_{row}_out"
            with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
                ticks, simulated, wall, cpu, system, rss, growth = pool.submit(
                    corpus_in_process, str(recordings), config_source, str(out), batch, w).result()
            shutil.rmtree(out)  # the next row writes into the pages these bags held (see the module doc)
            print(f"{label:>9} {n:>4} {batch:>5} {w:>7} {ticks:>7} {simulated:>7.1f} | {wall:7.2f} "
                  f"{1e3 * wall / ticks:8.3f} {simulated / wall:8.2f} | {cpu:7.2f} {simulated / cpu:8.2f} "
                  f"{system:7.2f} | {rss:8.0f} {growth:8.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="simulated seconds per scene (default 2)")
    parser.add_argument("--corpus", type=int, nargs="+", default=[], metavar="N",
                        help="also replay N variants of each recording as one corpus (third table)")
    parser.add_argument("--batch", type=int, nargs="+", default=[16], metavar="B",
                        help="corpus: up to B recordings at a time as the envs of one suite, a row per B (default 16; "
                             "1: one after another; repeat them for interleaved rounds: 1 16 1 16)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1], metavar="W",
                        help="corpus: also a row per W worker processes for each B (default 1: this process only)")
    parser.add_argument("--only-corpus", action="store_true", help="only the third table")
    args = parser.parse_args()
    seconds = args.seconds
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        urdf = folder / "hand.urdf"
        urdf.write_text(hand_urdf())
        if not args.only_corpus:
            print(f"replay at {RATE:g} Hz, {seconds:g} s of recording per scene; x real time = simulated / wall; "
                  f"'to goal' = how many times faster it must get for {GOAL:g}x real time")
            print(f"{'scene':>9} {'taxels':>6} {'ticks':>6} {'msgs':>6} | {'wall s':>7} {'ms/tick':>8} {'x real':>8} | "
                  f"{'core ms':>8} {'x real':>8} | {'I/O ms':>8} | {'kernels ms':>10} | {'to goal':>7}")
            bench("demo", *demo_inputs(seconds), folder)
            bench("hand 368", *hand_inputs(seconds, urdf), folder)
            print(f"\ntime-batched bound: K ticks as the K envs of one suite step (state across ticks ignored)\n"
                  f"{'scene':>9} {'K':>4} {'ticks':>6} | {'us/tick':>9} {'ticks/s':>10} | {'ratio':>6}")
            time_batched_bound("demo", *demo_inputs(seconds))
            time_batched_bound("hand 368", *hand_inputs(seconds, urdf))
        if args.corpus:
            hand_yaml = folder / "hand.yaml"
            hand_yaml.write_text(yaml.safe_dump(hand_config(urdf)))
            print(f"\ncorpus: N recordings of about {seconds:g} s in one process (or W workers), one thread each, "
                  "bags written; x real = aggregate (all simulated s / wall s, then / CPU s of the whole corpus)\n"
                  f"{'scene':>9} {'N':>4} {'batch':>5} {'workers':>7} {'ticks':>7} {'sim s':>7} | {'wall s':>7} "
                  f"{'ms/tick':>8} {'x real':>8} | {'CPU s':>7} {'x real':>8} {'sys s':>7} | {'RSS MiB':>8} "
                  f"{'growth':>8}")
            corpus("demo", DEMO_CONFIG, lambda i, n: demo_inputs(seconds * (0.75 + 0.5 * i / max(n - 1, 1))),
                   args.corpus, args.batch, args.workers, folder)
            corpus("hand 368", str(hand_yaml),
                   lambda i, n: hand_inputs(seconds, urdf, 0.5 + 0.4 * i / max(n - 1, 1)), args.corpus,
                   args.batch, args.workers, folder)


if __name__ == "__main__":
    main()
