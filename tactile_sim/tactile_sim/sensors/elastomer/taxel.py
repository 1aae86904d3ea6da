"""ElastomerTaxel (docs/models/elastomer_taxel.md#elastomer-taxel): marker displacement field of a soft gel skin, link
frame, ``[E, (H,) *layout, 3]``.

Per step, for the batch's sensors together:

1. indentation depth H_i = max(0, −min over tracked shapes of sd(x_i)) and H_i^p at every active probe centre
   (7.1) — one fused probe kernel (:func:`~..points.cell_kernel.cell_kernel`: placement, broad phase, nearest tracked shape
   within cutoff 0: probes inside a tracked body get their depth, the others 0);
2. shear anchors (7.5, :mod:`.shear`) when any sensor has ``shear_scale`` > 0;
3. u_dil + s: small sensors (:mod:`.pairwise`) by per-probe pair sums in one kernel; the others by the
   dilation paths of :mod:`.dilation` (7.3–7.4: FFT or separable lattice on regular planar grids with a
   shared normal, direct path otherwise) plus the shear sums of :mod:`.shear`;
4. u = u_dil + s is the ground truth; measured = hysteresis(u) × probe gain → hardware stages
(docs/models/imperfections.md#order); without
   crosstalk and hysteresis one small kernel writes u and g·u straight into the measured branch's staging buffers —
   or, for one lattice sensor (FFT or separable path) along the link axes on the CPU in a step without shear, the
   dilation field's own interleave of its fields (:attr:`~.dilation.DilationField.stages`), which then skips the field
   buffer.

The probe radius marks fillers only (they read 0 and are no sources). Each sensor's tracked cloud is exposed through
:meth:`ElastomerTaxelBatch.point_cloud`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import warp as wp

from ...config.sensor_options import MEASURED_CHANNELS
from ...geometry.struct_launch import warp_struct
from ...geometry.warp_kernels import unique_kernel
from ...world.state import WorldState
from .dilation import DilationField, DilationParameters
from .pairwise import PairwiseField, pairwise_sensors
from .shear import ShearAnchors
from ..points.probe_sensor import ProbeSensorBatch
from ..points.cell_kernel import cell_kernel
from ..points.probe_set import WP_TYPES, FusedProbeLaunch, ProbeSensorGeometry, kernel_clears, probe_struct
from ..points.tracked_cloud import PointCloud, sample_tracked_cloud, tracked_shape_mask
from ..warp_launch import SlotLaunches


@wp.func
def _indentation(call: Any, tables: Any, e: int, i: int, x: Any, sd: Any, shape: int, normal: Any, link: int,
                 link_rot: Any, link_pos: Any):
    """H = −sd and H^p of probe i (env e), whose centre lies inside a tracked shape (sd < 0), m and m^p; raises the
    window bounds of its sensor by the probe's key (:class:`~.dilation.DilationField`)."""
    h = -sd
    p = call.exponent[i]
    hp = h * h
    if p != type(h)(2.0):
        hp = wp.pow(h, p)
    call.depth[e, i] = h
    call.depth_p[e, i] = hp
    if call.bound_key[i, 1] > 0:
        s = call.sensor[i]
        for k in range(4):
            wp.atomic_max(call.bounds, s, k, call.bound_key[i, k])


@wp.func
def _no_indentation(call: Any, e: int, first: int, stop: int):
    """H = H^p = 0 at the probes in slots [first, stop) (env e), outside every tracked shape."""
    zero = type(call.exponent[0])(0.0)
    for j in range(first, stop):
        i = call.probe_order[j]
        call.depth[e, i] = zero
        call.depth_p[e, i] = zero


def _indentation_kernel(dtype: torch.dtype):
    f = WP_TYPES[dtype][0]
    call_type = probe_struct(f"ElastomerDepthCall_{f.__name__}", dtype, {
        "exponent": wp.array(dtype=f), "depth": wp.array2d(dtype=f), "depth_p": wp.array2d(dtype=f),
        "sensor": wp.array(dtype=wp.int32), "bound_key": wp.array2d(dtype=wp.int32),
        "bounds": wp.array2d(dtype=wp.int32)})
    return cell_kernel(f"elastomer_depth_{f.__name__}", call_type, dtype, _indentation,
                        _no_indentation), call_type


_DEPTH_KERNELS = {dt: _indentation_kernel(dt) for dt in WP_TYPES}


def _emit_loop(dtype: torch.dtype) -> str:
    """C++ body of the emit kernel's run of probes [start, stop) in env e: u and g·u, value by value (the gain
    repeated per channel), in a loop the compiler vectorises."""
    real = "float" if dtype == torch.float32 else "double"
    return f"""
    const size_t row = static_cast<size_t>(e) * call.field.shape[1] * 3;
    const {real}* __restrict__ u = reinterpret_cast<const {real}*>(call.field.data) + row;
    const {real}* __restrict__ g = reinterpret_cast<const {real}*>(call.gain.data) + row;
    {real}* __restrict__ truth = reinterpret_cast<{real}*>(call.ground_truth.data) + row;
    {real}* __restrict__ measured = reinterpret_cast<{real}*>(call.measured.data) + row;
    for (int k = 3 * start; k < 3 * stop; ++k) {{
        truth[k] = u[k];
        measured[k] = u[k] * g[k];
    }}
"""


def _emit_kernel(dtype: torch.dtype):
    """(kernel, call struct type) over (E, runs of ``per_thread`` probes): ground truth u and measured g·u of every
    probe (``field`` [E, P] vectors, probe gain per channel [E, P] vectors) into the measured branch's staging
    buffers."""
    f, v, _ = WP_TYPES[dtype]
    call_type = warp_struct(f"ElastomerEmitCall_{f.__name__}", {
        "field": wp.array2d(dtype=v), "gain": wp.array2d(dtype=v), "ground_truth": wp.array2d(dtype=v),
        "measured": wp.array2d(dtype=v)}, __name__)
    name = f"elastomer_emit_{f.__name__}"

    def run(call, e, start, stop): ...

    run.__name__, run.__annotations__ = f"{name}_run", {"call": call_type, "e": int, "start": int, "stop": int}
    native = wp.func_native(_emit_loop(dtype))(run)

    def kernel(call: Any, per_thread: int):
        e, t = wp.tid()
        first = t * per_thread
        native(call, e, first, wp.min(first + per_thread, call.field.shape[1]))

    kernel.__name__ = name
    kernel.__annotations__ = {"call": call_type, "per_thread": int}
    return unique_kernel(kernel), call_type


_EMIT_KERNELS = {dt: _emit_kernel(dt) for dt in WP_TYPES}


class ElastomerTaxelBatch(ProbeSensorBatch):
    """Gel-skin marker displacement of the batch's sensors (3 channels per probe)."""

    sensor_type = "ElastomerTaxel"
    channels = MEASURED_CHANNELS[sensor_type]
    kernel_tables = (_DEPTH_KERNELS, _EMIT_KERNELS) + ShearAnchors.kernel_tables  # shear: on by default

    def probe_geometry(self, options, layout) -> ProbeSensorGeometry:
        link = self.ctx.scene.body_index(options.link)
        return ProbeSensorGeometry(link, layout, tracked_shape_mask(self.ctx.scene, options.track),
                                   exact=options.contact_depth_query != "sdf")

    def __init__(self, options, ctx):
        super().__init__(options, ctx)
        opts, probes, scene = self.options, self.probes, ctx.scene
        e, p, dev, dt = ctx.n_envs, probes.n, ctx.device, ctx.dtype
        self.clouds = [sample_tracked_cloud(scene, o, ctx.where.get(o.name, o.where), require_collision=True)
                       for o in opts]
        eps0 = [ctx.layouts[o.name].epsilon0() for o in opts]
        # depth of the probe centre only: distances ≥ 0 are never needed; fillers never query
        self.cutoff = torch.where(probes.active, torch.zeros_like(probes.radius),
                                  torch.full_like(probes.radius, -torch.inf)).contiguous()
        self.exponent = torch.as_tensor(np.repeat([o.normal_exponent for o in opts], self.counts), device=dev,
                                        dtype=dt)
        # H and H^p [E, P] as one buffer, written whole by the indentation kernel every step (large batches: zeroed
        # before it, :func:`~..points.probe_set.kernel_clears`)
        self.depths = torch.zeros((2, e, p), device=dev, dtype=dt)
        self.depth, self.depth_p = self.depths.unbind(0)
        self.fill_before = not kernel_clears(e, p)
        self.field = torch.zeros((e, p, 3), device=dev, dtype=dt)
        self._gain = torch.zeros((e, p, 3), device=dev, dtype=dt)
        self._gain_source, self._gain_version = None, -1
        starts = [a for a, _ in probes.slices]
        layouts = [ctx.layouts[o.name] for o in opts]
        small = pairwise_sensors(layouts, e)
        self.dilation = DilationField(
            layouts, starts,
            [DilationParameters(o.lambda_d, o.compressibility, eps, o.elastomer_thickness, o.dilate_scale,
                                o.normal_exponent) for o, eps in zip(opts, eps0)],
            probes.local_pos, probes.local_normal, self.field, [ctx.where.get(o.name, o.where) for o in opts],
            elsewhere=small)
        kernel, call_type = _DEPTH_KERNELS[dt]
        self.launch = FusedProbeLaunch(probes, ctx.query, e, kernel, call_type, self.cutoff, {
            "exponent": self.exponent, "depth": self.depth, "depth_p": self.depth_p,
            "sensor": probes.sensor_of_probe.to(torch.int32), "bound_key": self.dilation.bound_key,
            "bounds": self.dilation.bounds})
        self.shear = None
        if any(o.shear_scale > 0 for o in opts):
            links = [scene.body_index(o.link) for o in opts]
            own = np.stack([ctx.query.body_shape_mask([link]).cpu().numpy() for link in links])
            self.shear = ShearAnchors(
                self.clouds, links, [scene.body(link).shapes for link in links], e, scene.n_bodies, ctx.query,
                torch.as_tensor(own, device=dev),
                probes.group_exact, layouts, starts,
                [o.shear_scale for o in opts], [v * v for v in eps0], [o.lambda_s for o in opts],
                [o.contact_threshold for o in opts], [o.release_threshold for o in opts], elsewhere=small)
            samples, drags, count = self.shear.q_c, self.shear.c_c, self.shear.count
        else:
            samples = drags = torch.zeros((e, len(opts), 1, 3), device=dev, dtype=dt)
            count = torch.zeros((e, len(opts)), device=dev, dtype=torch.int32)
        self.pairwise = PairwiseField(small, layouts, starts, self.dilation.params, [o.lambda_s for o in opts],
                                      self.depth, self.depth_p, samples, drags, count, self.field) if small else None
        # without crosstalk and hysteresis (stages 1–2) measured = g·u goes straight into the staging buffers
        self.emit = None
        if not self.branch.transforms:
            kernel, call_type = _EMIT_KERNELS[dt]
            per_thread = max(p, 1) if torch.device(dev).type == "cpu" else 1
            self.emit = SlotLaunches(kernel, (e, -(-p // per_thread)), call_type,
                                     {"field": self.field, "gain": self._gain}, [per_thread], dev,
                                     outputs=("measured", "ground_truth"))

    def point_cloud(self, i: int) -> PointCloud:
        """The tracked cloud of sensor i (body frames, read-only)."""
        return self.clouds[i]

    def evaluate(self, state: WorldState) -> None:
        if self.fill_before:
            self.depths.zero_()
        if self.dilation.windows:
            self.dilation.bounds.zero_()
        self.launch(state)                           # also fills the query's shape poses for this state
        shear = self.shear is not None and self.shear.update(state)
        branch = self.branch
        if self.emit is not None and not shear and self.pairwise is None and self.dilation.stages:
            measured, truth = branch.staging()       # u = u_dil: emitted by the dilation field itself
            self.dilation(self.depth, self.depth_p, staged=(truth, measured, branch.gain))
            branch.push_staged()
            return
        self.dilation(self.depth, self.depth_p)
        if shear:
            self.shear.add(self.field)
        if self.pairwise is not None:
            self.pairwise()
        if self.emit is not None:
            self._channel_gain()                     # bound to the launches; refreshed here when the gain changed
            self.emit.select(branch.staging())()
            branch.push_staged()
            return
        measured, _ = branch.staging()
        torch.mul(branch.transform(self.field), self._channel_gain(), out=measured)
        branch.push(branch.hardware(measured), self.field)

    def _channel_gain(self) -> torch.Tensor:
        """The measured branch's probe gain per channel [E, P, 3]: a copy refreshed whenever the branch's gain
        tensor changes (a product of equal shapes is several times faster than one broadcast over the channels)."""
        gain = self.branch.gain
        if gain is not self._gain_source or gain._version != self._gain_version:
            self._gain.copy_(gain[..., None].expand_as(self._gain))
            self._gain_source, self._gain_version = gain, gain._version
        return self._gain

    def reset(self, env_mask) -> None:
        super().reset(env_mask)
        if self.shear is not None:
            self.shear.reset(env_mask)
