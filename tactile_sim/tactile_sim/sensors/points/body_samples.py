"""Surface samples fixed on bodies (docs/models/scene.md#sampling), concatenated over several owners, and their
broad-phase layout.

Used by the sensors that integrate over their own body's collision surface (ContactSensor, TemperatureGrid and the
lumped bodies of the thermal system). An *owner* is one sampled body; its samples are contiguous, owners in the
order given.

The sensors visit the samples in the kernel of :func:`.cell_kernel.cell_kernel`: :class:`SampleCells` presents
them as the probes of a :class:`.probe_set.FusedProbeLaunch` (cells of a few samples of one owner close together
(:func:`.probe_set.cluster_order`), blocks of cells, bounding spheres in the owner's body frame; one query group per
owner), so that a fused launch skips every cell that cannot touch a candidate shape.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ...geometry.sampling import SurfaceSamples
from .probe_set import ProbeCells


class BodySamples:
    """Samples of O owner bodies.

    local_pos [P, 3] m and local_normal [P, 3] (outward unit) in the owner's body frame; area [P] m²;
    owner [P] long (0..O−1); owner_body [O] long (scene body index of each owner); slices: per owner (start, stop);
    counts: per owner.
    """

    def __init__(self, owner_bodies: Sequence[int], clouds: Sequence[SurfaceSamples], device, dtype):
        if len(owner_bodies) != len(clouds) or not clouds:
            raise ValueError(f"BodySamples: one cloud per owner body is needed; got {len(owner_bodies)} bodies and "
                             f"{len(clouds)} clouds")
        self.device, self.dtype = torch.device(device), dtype
        counts = [len(c) for c in clouds]
        self.counts = counts
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.slices = [(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])]
        self.n = int(starts[-1])
        self.n_owners = len(clouds)
        f = dict(device=self.device, dtype=dtype)
        self.local_pos = torch.as_tensor(np.concatenate([c.points for c in clouds]).reshape(-1, 3), **f)
        self.local_normal = torch.as_tensor(np.concatenate([c.normals for c in clouds]).reshape(-1, 3), **f)
        self.area = torch.as_tensor(np.concatenate([c.areas for c in clouds]), **f)
        self.owner = torch.as_tensor(np.repeat(np.arange(len(clouds)), counts), device=self.device)
        self.owner_body = torch.as_tensor(np.asarray(owner_bodies, dtype=np.int64), device=self.device)


class SampleCells:
    """The samples of a :class:`BodySamples` laid out for a fused sample kernel (what
    :class:`.probe_set.FusedProbeLaunch` reads of a probe set: ``n_blocks`` and ``kernel_fields(cutoff)``).

    The query group of a sample is its owner: group_shape_mask [O, S] bool (candidate shapes of each owner),
    group_exact [O] bool (meshes by BVH). Cells are runs of one owner's samples in :func:`.probe_set.cluster_order`
    of their body-frame positions (:data:`.probe_set.CPU_CELL_PROBES` on the CPU, one on CUDA), blocks runs of one
    owner's cells (one CPU kernel thread each).
    """

    def __init__(self, samples: BodySamples, group_shape_mask: torch.Tensor, group_exact: torch.Tensor):
        self.samples = samples
        local = samples.local_pos.detach().cpu().double().numpy()
        self.cell_layout = ProbeCells(local, samples.slices, samples.owner_body.cpu().numpy(), samples.device,
                                      samples.dtype)
        self._static = {"local_pos": samples.local_pos.contiguous(), "group_shape_mask": group_shape_mask.contiguous(),
                        "group_exact": group_exact.contiguous()}

    @property
    def n_blocks(self) -> int:
        return self.cell_layout.n_blocks

    def kernel_fields(self, cutoff: torch.Tensor) -> dict[str, torch.Tensor]:
        """The static fields of :func:`.probe_set.probe_fields` for samples that query up to ``cutoff`` [P] m
        (the largest cutoff of every cell and block added)."""
        return {**self.cell_layout.fields(cutoff), **self._static}
