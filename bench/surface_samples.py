"""Step cost of the surface-sample sensors of the demo gripper (docs/models/temperature_grid.md#temperature-grid,
docs/models/contact_sensor.md#model): the palm ContactSensor (864 samples at
5 mm, the can standing on the palm) and the fingertip TemperatureGrid (2×2×3 cells, 1408 contact samples, the
fingertip squeezing the can), for 1, 16 and 1024 envs.

Rows: one batch evaluation (``batch.evaluate(state)`` on a fixed state). Baseline (ratio = baseline / ours): the
naive per-sample path that both sensors took before their fused kernels, i.e. the generic nearest-shape query of
every sample (``ShapeQuery.query``) followed by the penalty model in torch and an ``index_add_`` into the per-body
net force (ContactSensor) or per-cell covered area and conductance (TemperatureGrid, without exchange and
conduction) — a lower bound of the old cost. ``--profile`` prints a cProfile summary of our evaluation.

    python bench/surface_samples.py [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
from pathlib import Path

import torch
import yaml

from tactile_sim.config import load_config
from tactile_sim.demo_trajectory import SQUEEZE
from tactile_sim.suite import SensorSuite
from timing import time_per_call

DEMO_YAML = Path(__file__).resolve().parents[1] / "tactile_sim" / "config" / "demo_sensors.yaml"


def build(n_envs: int) -> tuple[SensorSuite, object]:
    data = yaml.safe_load(DEMO_YAML.read_text())
    data["suite"]["n_envs"] = n_envs
    data["sensors"] = [s for s in data["sensors"] if s["type"] in ("ContactSensor", "TemperatureGrid")]
    suite = SensorSuite(load_config(data, base_dir=DEMO_YAML.parent))
    q = torch.tensor([[0.0, SQUEEZE, SQUEEZE]], dtype=suite.dtype).expand(max(n_envs, 1), 3)
    state = suite.world.update(0.0, joint_pos=q)
    return suite, state


def world_samples(smp, state) -> torch.Tensor:
    """World positions of the samples, [E, P, 3]: R_o p + o_o of each sample's owner."""
    body = smp.owner_body[smp.owner]
    return torch.matmul(state.rot[:, body], smp.local_pos[:, :, None])[..., 0] + state.pos[:, body]


def naive_contact(batch, state) -> torch.Tensor:
    """Generic query of every palm sample, penalty normal force in torch, summed per body: [E, S, 3] N."""
    smp = batch.samples
    x = world_samples(smp, state)
    group = smp.owner.to(torch.int32)
    cutoff = torch.full((smp.n,), -1e-9, dtype=x.dtype)
    q = batch.ctx.query.query(x, state.rot, state.pos, group, batch._samples_launch.fields["group_shape_mask"],
                              cutoff)
    depth = torch.where(q.body >= 0, -q.sd, torch.zeros_like(q.sd))
    fn = (1e7 * depth * smp.area)[..., None] * q.normal
    return torch.zeros(x.shape[0], smp.n_owners, 3, dtype=x.dtype).index_add_(1, smp.owner, fn)


def naive_thermal(batch, state) -> torch.Tensor:
    """Generic query of every grid sample, covered area and fixed-partner conductance per cell: [E, 2, cells]."""
    sys_ = batch.system
    smp = sys_.samples
    x = world_samples(smp, state)
    q = sys_.query.query(x, state.rot, state.pos, sys_.sample_group, sys_.group_mask, sys_.sample_band)
    body = q.body.clamp_min(0)
    a = smp.area * (q.body >= 0)
    g = a * sys_.body_mat.take(body) / (sys_.sample_r_self + sys_.sample_l_fixed * sys_.body_inv_k.take(body))
    per = torch.stack([a, g], dim=1)
    return torch.zeros(x.shape[0], 2, sys_.n_total, dtype=x.dtype).index_add_(2, sys_.sample_cell, per)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"{'sensor':>16} {'envs':>5} {'samples':>8} | {'ms/step':>9} | {'naive ms':>9} {'ratio':>7}")
    for n_envs in (1, 16, 1024):
        suite, state = build(n_envs)
        repeats = {1: 2000, 16: 300, 1024: 5}[n_envs]
        for name, naive in (("palm_contact", naive_contact), ("thermal_left", naive_thermal)):
            batch = suite.locate(name)[0]
            n = batch.samples.n if name == "palm_contact" else batch.system.samples.n
            ours = time_per_call(lambda: batch.evaluate(state), repeats)
            base = time_per_call(lambda: naive(batch, state), repeats)
            print(f"{batch.sensor_type:>16} {n_envs:>5} {n:>8} | {ours * 1e3:>9.4f} | {base * 1e3:>9.4f} "
                  f"{base / ours:>7.1f}")
            if args.profile:
                profile = cProfile.Profile()
                profile.runcall(lambda: [batch.evaluate(state) for _ in range(repeats)])
                pstats.Stats(profile).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
