"""GPU check in one short run: throughput at large batch sizes, and CPU/GPU agreement of every sensor type.

1. KinematicTaxel on the pad scene of ``bench/tactile.py`` (a sphere 2 mm deep in an 8×8 cm pad, 32×32 = 1024
   probes, typical imperfections) at 1, 64 and 4096 envs: ms per step (step + read) and probe-updates/s.
2. The full demo suite (``config/demo_sensors.yaml``: every sensor type, 168 taxels, the gripper squeezing the can)
   at 1, 64 and 4096 envs: ms per step and probe-updates/s (taxels × envs / step time).
3. Agreement: one step of the demo suite at the squeeze on the CPU and on the device (float32, 1 env, same seed);
   per sensor the largest absolute difference of its ground-truth outputs and the largest magnitude there.

Baseline (same process): the CPU at the same sizes (``--cpu-envs``, default 1 and 64: the CPU at 4096 envs takes
minutes). Run on a GPU machine: ``python bench/gpu.py`` (``--device cuda``); ``--device cpu --envs 1 4`` exercises
it here.

    python bench/gpu.py [--device cuda] [--envs 1 64 4096] [--cpu-envs 1 64] [--repeat N]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tactile import TYPICAL, pad_scene  # noqa: E402

from tactile_sim.config import load_config  # noqa: E402
from tactile_sim.demo_trajectory import DEMO_CONFIG, SQUEEZE  # noqa: E402
from tactile_sim.suite import SensorSuite  # noqa: E402

PAD_PROBES = 32  # per side: 1024 probes


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def ms_per_step(suite: SensorSuite, step, repeat: int) -> float:
    """Best of 3 rounds of ``repeat`` calls of ``step()``, ms each (after 5 warm-up calls)."""
    for _ in range(5):
        step()
    best = float("inf")
    for _ in range(3):
        synchronize(suite.device)
        start = time.perf_counter()
        for _ in range(repeat):
            step()
        synchronize(suite.device)
        best = min(best, (time.perf_counter() - start) / repeat)
    return best * 1e3


def pad_row(device: str, n_envs: int, repeat: int) -> tuple[float, float]:
    suite = SensorSuite.from_yaml(pad_scene("KinematicTaxel", PAD_PROBES, n_envs, device))
    state = suite.world.update(0.0)

    def step():
        suite.step(state)
        suite.read("pad")

    ms = ms_per_step(suite, step, repeat)
    return ms, PAD_PROBES**2 * n_envs / ms * 1e3


def demo_suite(device: str, n_envs: int) -> SensorSuite:
    return SensorSuite(load_config(DEMO_CONFIG), device=device, n_envs=n_envs, dtype="float32")


def squeeze_joints(suite: SensorSuite) -> torch.Tensor:
    q = [0.0 if name == "slide" else SQUEEZE for name in suite.robot.actuated_joint_names]
    return torch.tensor(q, dtype=suite.dtype, device=suite.device).expand(suite.n_envs, -1).contiguous()


def demo_row(device: str, n_envs: int, repeat: int) -> tuple[float, float]:
    suite = demo_suite(device, n_envs)
    q = squeeze_joints(suite)
    taxels = sum(int(np.prod(layout.positions.shape[:-1])) for layout in suite.layouts.values())
    clock = iter(range(10**9))

    def step():
        suite.update(next(clock) * suite.dt, joint_pos=q)
        for name in suite.sensor_names:
            suite.read(name)

    ms = ms_per_step(suite, step, repeat)
    return ms, taxels * n_envs / ms * 1e3


def tensors_of(value) -> list[torch.Tensor]:
    """Every tensor inside a read (a tensor, a tuple, a dataclass or a mapping of them)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if dataclasses.is_dataclass(value):
        value = [getattr(value, f.name) for f in dataclasses.fields(value)]
    elif isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_of(v)]
    return []


def agreement(device: str) -> list[tuple[str, str, float, float]]:
    """(sensor, type, max |device − cpu|, max |cpu|) of one step at the squeeze, ground truth."""
    reads = {}
    for dev in ("cpu", device):
        suite = demo_suite(dev, 1)
        suite.update(0.0, joint_pos=squeeze_joints(suite))
        suite.update(suite.dt, joint_pos=squeeze_joints(suite))
        reads[dev] = {name: [t.detach().double().cpu() for t in tensors_of(suite.read_ground_truth(name))]
                      for name in suite.sensor_names}
        types = {name: suite.sensor_type(name) for name in suite.sensor_names}
    rows = []
    for name, cpu in reads["cpu"].items():
        other = reads[device][name]
        diff = max((float((a - b).abs().max()) for a, b in zip(cpu, other) if a.numel()), default=0.0)
        scale = max((float(a.abs().max()) for a in cpu if a.numel()), default=0.0)
        rows.append((name, types[name], diff, scale))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 64, 4096])
    parser.add_argument("--cpu-envs", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"device {args.device}; CPU baseline on one thread; probe-updates/s = probes × envs / step time; "
          f"pad: KinematicTaxel {PAD_PROBES}×{PAD_PROBES} probes with {TYPICAL}")
    print(f"{'scene':>6} {'envs':>5} | {'device ms':>9} {'upd/s':>9} | {'cpu ms':>8} {'upd/s':>9} | {'ratio':>6}")
    for label, row in (("pad", pad_row), ("demo", demo_row)):
        for n_envs in args.envs:
            ms, rate = row(args.device, n_envs, args.repeat)
            line = f"{label:>6} {n_envs:>5} | {ms:9.3f} {rate:9.2e} |"
            if n_envs in args.cpu_envs and args.device != "cpu":
                cpu_ms, cpu_rate = row("cpu", n_envs, args.repeat)
                line += f" {cpu_ms:8.3f} {cpu_rate:9.2e} | {cpu_ms / ms:5.1f}x"
            print(line)
    print("\nagreement of one step at the squeeze (ground truth, float32, 1 env)")
    print(f"{'sensor':>14} {'type':>22} | {'max |diff|':>10} {'max |cpu|':>10}")
    for name, kind, diff, scale in agreement(args.device):
        print(f"{name:>14} {kind:>22} | {diff:10.3e} {scale:10.3e}")


if __name__ == "__main__":
    main()
