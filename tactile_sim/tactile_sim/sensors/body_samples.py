"""Surface samples fixed on bodies (spec §2.5), concatenated over several owners, and their broad-phase layout.

Used by the sensors that integrate over their own body's collision surface (ContactSensor, TemperatureGrid and the
lumped bodies of the thermal system). An *owner* is one sampled body; its samples are contiguous, owners in the
order given.

The sensors visit the samples in the kernel of :func:`.sample_kernel.sample_kernel`: :class:`SampleCells` presents
them as the probes of a :class:`.probe_set.FusedProbeLaunch` (cells of a few samples of one owner close together in
Morton order, blocks of cells, bounding spheres in the owner's body frame; one query group per owner), so that a
fused launch skips every cell that cannot touch a candidate shape.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..geometry.sampling import SurfaceSamples
from .probe_set import CPU_BLOCK_CELLS, CPU_CELL_PROBES, _bounding_sphere, _morton_order


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
    group_exact [O] bool (meshes by BVH). Cells are runs of one owner's samples in Morton order of their body-frame
    positions (:data:`.probe_set.CPU_CELL_PROBES` on the CPU, one on CUDA), blocks runs of one owner's cells (one
    CPU kernel thread each).
    """

    def __init__(self, samples: BodySamples, group_shape_mask: torch.Tensor, group_exact: torch.Tensor):
        self.samples = samples
        dev, dtype = samples.device, samples.dtype
        per_cell, per_block = (CPU_CELL_PROBES, CPU_BLOCK_CELLS) if dev.type == "cpu" else (1, 1)
        pad = 16 * float(torch.finfo(dtype).eps)
        local = samples.local_pos.detach().cpu().double().numpy()
        owner_body = samples.owner_body.cpu().numpy()
        order, cell_start, cell_stop, cell_center, cell_radius = [], [], [], [], []
        blocks: dict[str, list] = {k: [] for k in ("first", "count", "link", "group", "center", "radius")}
        for o, (a, b) in enumerate(samples.slices):
            perm = _morton_order(local[a:b]) + a
            order.append(perm)
            first = len(cell_start)
            for c0 in range(a, b, per_cell):
                c1 = min(c0 + per_cell, b)
                center, radius = _bounding_sphere(local[perm[c0 - a:c1 - a]], pad)
                cell_start.append(c0), cell_stop.append(c1), cell_center.append(center), cell_radius.append(radius)
            for k0 in range(first, len(cell_start), per_block):
                k1 = min(k0 + per_block, len(cell_start))
                center, radius = _bounding_sphere(local[perm[cell_start[k0] - a:cell_stop[k1 - 1] - a]], pad)
                for key, v in zip(blocks, (k0, k1 - k0, int(owner_body[o]), o, center, radius)):
                    blocks[key].append(v)

        def ints(v):
            return torch.as_tensor(np.asarray(v, np.int32).reshape(-1), device=dev)

        def floats(v, *shape):
            return torch.as_tensor(np.asarray(v, np.float64).reshape(-1, *shape), device=dev, dtype=dtype)

        self.cells = {"probe_order": ints(np.concatenate(order)), "cell_start": ints(cell_start),
                      "cell_stop": ints(cell_stop), "cell_center": floats(cell_center, 3),
                      "cell_radius": floats(cell_radius), "block_first_cell": ints(blocks["first"]),
                      "block_cells": ints(blocks["count"]), "block_link": ints(blocks["link"]),
                      "block_group": ints(blocks["group"]), "block_center": floats(blocks["center"], 3),
                      "block_radius": floats(blocks["radius"]), "local_pos": samples.local_pos.contiguous(),
                      "group_shape_mask": group_shape_mask.contiguous(), "group_exact": group_exact.contiguous()}
        cell_of_slot = np.repeat(np.arange(len(cell_start)), np.subtract(cell_stop, cell_start))
        cell_of_sample = np.empty(samples.n, np.int64)
        cell_of_sample[np.concatenate(order)] = cell_of_slot
        self._cell_of_sample = torch.as_tensor(cell_of_sample, device=dev)
        self._block_of_cell = torch.repeat_interleave(torch.arange(len(blocks["first"]), device=dev),
                                                      self.cells["block_cells"].long())

    @property
    def n_blocks(self) -> int:
        return int(self.cells["block_group"].numel())

    def cull_fields(self, n_envs: int) -> dict[str, torch.Tensor]:
        """``cell_cull`` [1] int32 and ``cell_mask`` of :func:`.sample_kernel.sample_kernel`: two candidate rows per
        thread, i.e. per (env, block), [2 · E · blocks, S] on the CPU; the owners' candidate rows on CUDA (no cell
        cull)."""
        dev = self.samples.device
        mask = self.cells["group_shape_mask"]
        if dev.type == "cpu":
            return {"cell_cull": torch.ones(1, dtype=torch.int32, device=dev),
                    "cell_mask": torch.zeros(2 * n_envs * self.n_blocks, mask.shape[1], dtype=torch.bool, device=dev)}
        return {"cell_cull": torch.zeros(1, dtype=torch.int32, device=dev), "cell_mask": mask.clone()}

    def kernel_fields(self, cutoff: torch.Tensor) -> dict[str, torch.Tensor]:
        """The static fields of :func:`.probe_set.probe_fields` for samples that query up to ``cutoff`` [P] m
        (the largest cutoff of every cell and block added)."""
        smp = self.samples
        neg = torch.full((len(self.cells["cell_start"]),), -torch.inf, dtype=smp.dtype, device=smp.device)
        cell_cut = neg.scatter_reduce(0, self._cell_of_sample, cutoff, "amax")
        block_cut = neg[: self.n_blocks].scatter_reduce(0, self._block_of_cell, cell_cut, "amax")
        return {**self.cells, "cell_cut": cell_cut, "block_cut": block_cut, "cutoff": cutoff.contiguous()}
