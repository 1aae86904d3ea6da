"""ElastomerTaxel shear (spec §7.5): tracked surface samples that stick to the gel and drag its markers.

Per env and tracked sample j (link-frame position q̃_j, area share a_j), with sd_j the signed distance of the
sample's world position to the sensor link's own collision shapes and D_j = max(0, −sd_j), each step:

    if anchored and sd_j > −release_threshold:          release
    elif not anchored and sd_j < −contact_threshold:    anchor, A_j = q̃_j
    s_i = shear_scale · P_i Σ_{anchored j, D_j > 0} (a_j / A_cell) (q̃_j − A_j) D_j exp(−λ_s ‖P_i(p_i − q̃_j)‖²)

(P_i = I − a_i a_iᵀ is linear, so it is applied to the sum.) One kernel thread per (env, sensor) updates the anchors
of that sensor's samples in sample order and compacts the contributing ones; one thread per (env, probe) sums over
them and adds s_i to the displacement. Anchors persist across steps and are cleared on reset.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
import warp as wp

from .tracked_cloud import TrackedClouds
from .warp_launch import RecordedLaunch, vec3


@wp.kernel(enable_backward=False)
def _update_anchors(sd: wp.array2d(dtype=Any), offset: int, local: wp.array2d(dtype=Any),
                    start: wp.array(dtype=wp.int32), count: wp.array(dtype=wp.int32),
                    contact: wp.array(dtype=Any), release: wp.array(dtype=Any), weight_base: wp.array(dtype=Any),
                    anchored: wp.array2d(dtype=wp.int32), anchor: wp.array2d(dtype=Any),
                    weight: wp.array2d(dtype=Any), drag: wp.array2d(dtype=Any),
                    sources: wp.array2d(dtype=wp.int32), n_sources: wp.array2d(dtype=wp.int32)):
    """Schmitt gate of every sample of sensor s in env e, then the contributing samples in sample order."""
    e, s = wp.tid()
    first = start[s]
    n = int(0)
    for j in range(first, first + count[s]):
        d = sd[e, offset + j]
        q = local[e, j]
        if anchored[e, j] != 0:
            if d > -release[s]:
                anchored[e, j] = 0
        elif d < -contact[s]:
            anchored[e, j] = 1
            anchor[e, j] = q
        if anchored[e, j] != 0 and d < d - d:
            weight[e, j] = -d * weight_base[j]
            drag[e, j] = q - anchor[e, j]
            sources[e, first + n] = j
            n += 1
    n_sources[e, s] = n


@wp.kernel(enable_backward=False)
def _add_shear(pos: wp.array(dtype=Any), normal: wp.array(dtype=Any), sensor: wp.array(dtype=wp.int32),
               sample_start: wp.array(dtype=wp.int32), lambda_s: wp.array(dtype=Any), local: wp.array2d(dtype=Any),
               weight: wp.array2d(dtype=Any), drag: wp.array2d(dtype=Any), sources: wp.array2d(dtype=wp.int32),
               n_sources: wp.array2d(dtype=wp.int32), out: wp.array2d(dtype=Any)):
    """out[e, i] += s_i (link frame)."""
    e, i = wp.tid()
    s = sensor[i]
    n = n_sources[e, s]
    if n > 0:
        p = pos[i]
        a = normal[i]
        lam = lambda_s[s]
        first = sample_start[s]
        acc = a - a
        for m in range(n):
            j = sources[e, first + m]
            d = p - local[e, j]
            delta = d - wp.dot(a, d) * a
            acc = acc + (weight[e, j] * wp.exp(-lam * wp.dot(delta, delta))) * drag[e, j]
        out[e, i] = out[e, i] + (acc - wp.dot(a, acc) * a)


class ShearAnchors:
    """Anchor state and shear of a batch's ElastomerTaxel sensors.

    clouds: the batch's tracked clouds (``local`` q̃ is read); sd: the persistent [E, M] signed-distance buffer whose
    columns ``offset …`` hold the samples' sd to their sensor link; per sensor: shear_scale, A_cell = ε₀² (m²),
    lambda_s (m⁻²), contact/release thresholds (m); probe positions/normals [P, 3] and sensor_of_probe [P] (link
    frame); out: the persistent [E, P, 3] displacement the shear is added to.
    State: ``anchored`` [E, N] int32 (1 = anchored), ``anchor`` A_j [E, N, 3] m (link frame).
    """

    def __init__(self, clouds: TrackedClouds, sd: torch.Tensor, offset: int, shear_scale: Sequence[float],
                 cell_area: Sequence[float], lambda_s: Sequence[float], contact: Sequence[float],
                 release: Sequence[float], local_pos: torch.Tensor, local_normal: torch.Tensor,
                 sensor_of_probe: torch.Tensor, out: torch.Tensor):
        device, dtype = out.device, out.dtype
        e, n = clouds.n_envs, clouds.n
        kw = dict(device=device, dtype=dtype)
        i32 = dict(device=device, dtype=torch.int32)
        sensors = range(len(shear_scale))
        start = torch.as_tensor([clouds.slices[s][0] for s in sensors], **i32)
        # sensors with shear_scale = 0 never anchor (their shear is not evaluated)
        count = torch.as_tensor([clouds.slices[s][1] - clouds.slices[s][0] if shear_scale[s] > 0 else 0
                                 for s in sensors], **i32)
        per_sample = np.asarray(shear_scale, np.float64) / np.asarray(cell_area, np.float64)
        weight_base = clouds.areas.to(torch.float64) * torch.as_tensor(per_sample, device=device)[
            clouds.sensor_of_sample]
        self.anchored = torch.zeros((e, n), **i32)
        self.anchor = torch.zeros((e, n, 3), **kw)
        weight = torch.zeros((e, n), **kw)
        drag = torch.zeros((e, n, 3), **kw)
        sources = torch.zeros((e, n), **i32)
        n_sources = torch.zeros((e, len(shear_scale)), **i32)
        self._update = RecordedLaunch(_update_anchors, (e, len(shear_scale)), [
            sd, offset, vec3(clouds.local), start, count, torch.as_tensor(contact, **kw),
            torch.as_tensor(release, **kw), weight_base.to(dtype), self.anchored, vec3(self.anchor), weight,
            vec3(drag), sources, n_sources], device)
        self._add = RecordedLaunch(_add_shear, (e, out.shape[1]), [
            vec3(local_pos), vec3(local_normal), sensor_of_probe.to(torch.int32), start,
            torch.as_tensor(lambda_s, **kw), vec3(clouds.local), weight, vec3(drag), sources, n_sources, vec3(out)],
            device)

    def __call__(self) -> None:
        """Update the anchors from this step's sd and q̃, then add the shear to ``out``."""
        self._update()
        self._add()

    def reset(self, env_mask: torch.Tensor | None) -> None:
        """Clear the anchors of the envs of env_mask ([E] bool; None = all)."""
        if env_mask is None:
            self.anchored.zero_()
            self.anchor.zero_()
        else:
            self.anchored.masked_fill_(env_mask[:, None], 0)
            self.anchor.masked_fill_(env_mask[:, None, None], 0)
