"""Shared build and geometry of the SDF-query probe sensors (ContactDepthProbe, ContactProbe, KinematicTaxel).

Spec docs/models/probes.md#probes: for every probe the nearest candidate geometry sd*_i (one query for both branches),
its body O_i and the
object normal n_i; the measured branch uses the noisy radius R̃ and the gain g of the measured branch
(docs/models/imperfections.md#probe-level).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import torch

from ...geometry.warp_kernels import table_kernels
from ...imperfections.pipeline import MeasuredBranch
from ...imperfections.spec import SensorImperfections
from ...world.state import WorldState
from ..base import BuildContext, SensorBatch, imperfections_of
from .cell_kernel import contact_list_slot
from .probe_set import NO_FIELDS, FusedProbeLaunch, ProbeSensorGeometry, ProbeSet, kernel_clears


def per_probe(options: Sequence, counts: Sequence[int], key: str, ctx: BuildContext) -> torch.Tensor:
    """One scalar option per sensor expanded to a per-probe tensor ``[P]``."""
    return ctx.tensor(np.repeat([float(getattr(o, key)) for o in options], counts))


class ProbeSensorBatch(SensorBatch):
    """Probe layouts of the batch's sensors, their candidate shapes and the measured branch (K channels/probe)."""

    channels: int = 1

    def __init__(self, options, ctx: BuildContext):
        super().__init__(options, ctx)
        geoms, specs = [], []
        for o in self.options:
            layout = ctx.layouts[o.name]
            geoms.append(self.probe_geometry(o, layout))
            specs.append(self.imperfection_spec(o, layout))
        self.probes = ProbeSet(geoms, ctx.query, ctx.device, ctx.dtype)
        self.branch = MeasuredBranch(specs, ctx.n_envs, ctx.device, ctx.dtype, streams=ctx.noise_streams,
                                     **self.branch_options())
        self.counts = [g.layout.n for g in geoms]
        # distances beyond the largest measured radius cannot matter; fillers never query
        noise = per_probe(self.options, self.counts, "probe_radius_noise", ctx)
        reach = self.probes.radius + noise + self.extra_reach()
        self.cutoff = torch.where(self.probes.active, reach, torch.full_like(reach, -torch.inf)).contiguous()
        self._bound_gain = self.branch.gain

    def probe_geometry(self, options, layout) -> ProbeSensorGeometry:
        """Link, layout and sensed shapes of one sensor: the candidates of docs/models/scene.md#candidates and the
        sensor's mesh backend
        (point-cloud and distance sensors sense their tracked bodies instead)."""
        scene = self.ctx.scene
        link = scene.body_index(options.link)
        candidates = scene.candidate_mask(link, list(options.ignore))
        shape_mask = np.array([bool(candidates[b]) for b, _ in scene.shape_table()], dtype=bool)
        return ProbeSensorGeometry(link, layout, shape_mask, exact=options.contact_depth_query != "sdf")

    def imperfection_spec(self, options, layout) -> SensorImperfections:
        """The validated imperfection options of one sensor with ``channels`` channels per probe."""
        return imperfections_of(options, self.ctx, n=layout.n, channels=self.channels, layout_shape=layout.shape,
                                active=layout.active, grid=layout.grid)

    def branch_options(self) -> dict:
        """Extra keyword arguments of the batch's :class:`MeasuredBranch` (ContactProbe: its latch thresholds)."""
        return {}

    def extra_reach(self) -> torch.Tensor | float:
        """Distance beyond R̃ at which a model still changes its output (ContactProbe's negative release)."""
        return 0.0

    def draw_radius(self) -> None:
        """This evaluation's measured probe radius R̃ [E, P] (m) into ``radius_measured``, when radius noise is on."""
        if self.branch.radius_varies:
            self.branch.radius(self.probes.radius, out=self.radius_measured)

    def bind_new_gain(self, launches) -> None:
        """Bind the measured branch's probe gain [E, P] into ``launches`` (``bind_all``) when it is another tensor than
        the one bound last (a reset redrew it): kernels that read the gain pay for the bind only then."""
        gain = self.branch.gain
        if gain is not self._bound_gain:
            self._bound_gain = gain
            launches.bind_all("gain", gain)

    def min_gain(self) -> torch.Tensor:
        """Smallest gain a probe can get on the measured branch ``[P]`` (static gain or resample range)."""
        lows = []
        for o, n in zip(self.options, self.counts):
            if o.probe_gain_resample_range is not None:
                lows.append(np.full(n, float(o.probe_gain_resample_range[0])))
            else:
                lows.append(np.broadcast_to(np.asarray(o.probe_gain, dtype=np.float64), self.ctx.layouts[o.name].shape)
                            .reshape(-1))
        return self.ctx.tensor(np.concatenate(lows))


class FusedProbeBatch(ProbeSensorBatch):
    """A probe sensor whose raw values of both branches come from one fused warp kernel per step
    (:class:`~.probe_set.FusedProbeLaunch`) that writes them into the measured branch's staging buffers (small
    batches: every probe, the kernel writes the reading of a probe out of reach itself; large ones: ``clear`` fills
    the buffers before the launch, :func:`~.probe_set.kernel_clears`, but a listed kernel on the CPU that
    ``clears_listed`` clears the ground truth itself where it wrote into it last time, ``list_clears``); the branch
    then runs its stages and commits in one more launch (:meth:`MeasuredBranch.push_staged`). ``kernels`` maps the
    working dtype to (kernel, call struct type); ``model_tables()`` adds the model's per-probe tables,
    ``step_inputs(state)`` its per-step inputs."""

    kernels: dict = {}
    listed: bool = False
    """Whether the kernel is a :func:`~.cell_kernel.cell_kernel` with ``listed`` (its struct has
    :func:`~.cell_kernel.contact_list_fields`; the batch binds the contact lists)."""
    clears_listed: bool = False
    """Whether a listed kernel clears the ground-truth slots itself where it wrote last time (to zeros: only for a
    sensor that keeps the default :meth:`clear`), where it may (``list_clears``), instead of a fill before every
    launch. It pays for many channels per probe (KinematicTaxel's 6: a 1.5 MB fill at 4096 probes × 16 envs); one
    channel's fill is cheaper than the scattered clears (ContactDepthProbe 4096 × 16: a 3–9 % slower step with
    them)."""

    @classmethod
    def launched_kernels(cls, dtype: torch.dtype) -> list:
        return table_kernels((cls.kernels,), dtype)

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        # R̃ [E, P]: redrawn per evaluation only when a sensor has radius noise
        self.radius_measured = self.branch.radius(self.probes.radius).contiguous()
        kernel, call_type = self.kernels[ctx.dtype]
        self.fill_before = not kernel_clears(ctx.n_envs, self.probes.n)
        # no imperfection: the measured values are the ground truth's (R̃ = R, g = 1), one buffer holds both
        self.branch.share_ground_truth()
        tables = {"radius": self.probes.radius, "radius_measured": self.radius_measured, "gain": self.branch.gain,
                  **self.model_tables()}
        outputs = ("measured", "ground_truth")
        # a listed kernel (CPU, filled before the launch) whose ground-truth slots only it writes clears them itself
        # where it wrote last time: one contact list per slot (:func:`.cell_kernel.contact_list_slot`)
        self.list_clears = False
        self._lists: dict[int, tuple[torch.Tensor, ...]] = {}
        if self.listed:
            self.list_clears = (self.clears_listed and self.fill_before and ctx.device.type == "cpu"
                                and self.branch.sensor_writes_ground_truth())
            shared = contact_list_slot(ctx.n_envs, self.probes.n, self.probes.n_blocks, ctx.device)
            self._lists = {id(gt): contact_list_slot(ctx.n_envs, self.probes.n, self.probes.n_blocks, ctx.device)
                           if self.list_clears else shared for _, gt in self.branch.staging_slots}
            tables["list_clears"] = torch.full((1,), int(self.list_clears), dtype=torch.int32, device=ctx.device)
            outputs += ("contact_point", "block_count")
        self.launch = FusedProbeLaunch(self.probes, ctx.query, ctx.n_envs, kernel, call_type, self.cutoff, tables,
                                       outputs=outputs)

    def model_tables(self) -> dict:
        """Per-probe tensors of the model bound into the kernel at build (none by default)."""
        return {}

    def step_inputs(self, state: WorldState) -> Mapping[str, torch.Tensor]:
        """Per-step kernel inputs beyond the world poses and the outputs (none by default; e.g. body twists)."""
        return NO_FIELDS

    def clear(self, measured: torch.Tensor, ground_truth: torch.Tensor) -> None:
        """Fill the staging buffers ``[E, P, K]`` (one tensor when the branch shares its slots,
        :meth:`MeasuredBranch.share_ground_truth`) with the reading of a probe out of reach (zeros by default; what
        the kernel's clear writes) — large batches only (:func:`~.probe_set.kernel_clears`); with ``list_clears``
        the kernel clears the ground-truth buffer (and the measured one when they are one)."""
        if not self.list_clears:
            ground_truth.zero_()
        if measured is not ground_truth:
            measured.zero_()

    def evaluate(self, state: WorldState) -> None:
        self.draw_radius()
        self.bind_new_gain(self.launch)
        branch = self.branch
        staging = branch.staging()
        if self.fill_before:
            self.clear(*staging)
        if self._lists:
            staging = staging + self._lists[id(staging[1])]
        self.launch(state, self.step_inputs(state), staging)
        branch.push_staged()
