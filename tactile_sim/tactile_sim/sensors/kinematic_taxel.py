"""KinematicTaxel (spec §6): per-taxel spring–damper force and torque from overlap and relative motion.

Per active probe (ground truth: R, g = 1; measured: R̃, g):
    d = max(0, R − sd*); no contact when d ≤ ε_d;  s = (g·d)^e
    v = v_O(x) − v_L(x);  v_n = n·v;  v_t = v − v_n n                   (n: object normal, W)
    f_n = max(0, k_n s + c_n s v_n);  F_W = f_n n + k_t v_t;  ω_n = n·(ω_O − ω_L)
    F = R_Lᵀ F_W;  T = p × F + k_tw ω_n R_Lᵀ n                           (link frame, N and N·m about o_L)
Zero-length normal fallback: n = −R_L a_i. Output ``(force, torque)``, each ``[E, (H,) *layout, 3]``.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ..constants import EPS_D
from ..world.state import WorldState
from .probe_sensor import ProbeSensorBatch, per_probe


class ForceTorque(NamedTuple):
    """Per-probe force (N) and torque (N·m about the link origin), link frame, ``[..., 3]`` each."""

    force: torch.Tensor
    torque: torch.Tensor


class KinematicTaxelBatch(ProbeSensorBatch):
    """Spring–damper taxels; both branches are evaluated together along a leading branch axis [2, E, P]."""

    sensor_type = "KinematicTaxel"
    channels = 6

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        coef = {k: per_probe(self.options, self.counts, k, ctx)
                for k in ("normal_stiffness", "normal_damping", "normal_exponent", "shear_scalar", "twist_scalar")}
        self.k_n, self.c_n = coef["normal_stiffness"], coef["normal_damping"]
        self.k_t, self.k_tw = coef["shear_scalar"][:, None], coef["twist_scalar"]
        self.exponent = None if bool((coef["normal_exponent"] == 1).all()) else coef["normal_exponent"]

    def evaluate(self, state: WorldState) -> None:
        probes = self.probes
        rot, pos, x, q = self.geometry(state)
        radius = probes.radius
        # overlap of both branches: [2, E, P] (0 = ground truth, 1 = measured)
        reach = torch.stack([radius.expand_as(q.sd), self.branch.radius(radius)])
        depth = torch.clamp_min(reach - q.sd, 0.0)
        touching = depth > EPS_D
        gain = torch.stack([torch.ones_like(self.branch.gain), self.branch.gain])
        s = depth * gain
        if self.exponent is not None:
            s = s.pow(self.exponent)

        # object normal with its fallback −R_L a_i where the gradient vanished
        fallback = -probes.to_world_frame(rot, probes.local_normal)
        n = torch.where((q.normal == 0).all(-1, keepdim=True), fallback, q.normal)
        body = q.body.clamp_min(0)
        v = state.point_velocity(body, x) - (probes.at_probes(state.lin_vel)
                                              + torch.cross(probes.at_probes(state.ang_vel), x - pos, dim=-1))
        v_n = (n * v).sum(-1)
        v_t = v - v_n[..., None] * n
        w_obj = torch.gather(state.ang_vel, 1, body[..., None].expand(body.shape + (3,)))
        w_n = (n * (w_obj - probes.at_probes(state.ang_vel))).sum(-1)

        f_n = torch.clamp_min(s * (self.k_n + self.c_n * v_n), 0.0)
        force_w = f_n[..., None] * n + self.k_t * v_t
        force_w = torch.where(touching[..., None], force_w, torch.zeros((), dtype=x.dtype, device=x.device))
        force = probes.to_link_frame(rot, force_w)
        n_link = probes.to_link_frame(rot, n)
        twist = torch.where(touching, self.k_tw * w_n, torch.zeros((), dtype=x.dtype, device=x.device))
        torque = torch.cross(probes.local_pos.expand_as(force), force, dim=-1) + twist[..., None] * n_link
        out = torch.cat([force, torque], dim=-1)
        y = self.branch.hardware(self.branch.transform(out[1]))
        self.branch.push(y, out[0])

    def output(self, value: torch.Tensor) -> ForceTorque:
        return ForceTorque(value[..., :3], value[..., 3:])
