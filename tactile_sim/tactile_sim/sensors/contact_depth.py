"""ContactDepthProbe (docs/models/contact_depth_probe.md#model) and ContactProbe (docs/models/contact_probe.md#model).

ContactDepthProbe: depth_i = max(0, R_i − sd*_i) (ground truth); g_i·max(0, R̃_i − sd*_i) (measured), metres.
ContactProbe: the signed overlap x = max(g(R̃ − sd*), x_floor) through a Schmitt trigger, per branch; bool.
Outputs ``[E, (H,) *layout]`` in the sensor's layout shape.
"""

from __future__ import annotations

from typing import Any

import torch
import warp as wp

from ..imperfections.latch import overlap_floor
from .points.probe_sensor import FusedProbeBatch, per_probe
from .points.cell_kernel import cell_kernel, contact_list_buffers, contact_list_fields, listed_model
from .points.probe_set import WP_TYPES, probe_struct


@wp.func
def _no_depth(call: Any, e: int, first: int, stop: int):
    """Both branches' depth of the probes in slots [first, stop) (env e) out of reach: 0."""
    zero = type(call.radius[0])(0.0)
    for j in range(first, stop):
        i = call.probe_order[j]
        call.ground_truth[e, i, 0] = zero
        call.measured[e, i, 0] = zero


# C++ body of both branches' depth of the listed contacts in slots [first, stop) of env e (probe i at signed
# distance sd; :func:`.points.cell_kernel.cell_kernel` with ``listed``): ``max(R_i − sd, 0)`` and
# ``max(R̃_i − sd, 0)·g_i`` (warp's ``wp::`` operations in that order). With one buffer for both branches (no
# imperfection: R̃ = R, g = 1) the second write stores the same value again.
_LISTED_DEPTHS = """
    const T zero = T(0.0);
    char* point = row(call.contact_point);
    char* sd_of = row(call.contact_sd);
    char* radius_measured = row(call.radius_measured);
    char* gain = row(call.gain);
    char* truth = row(call.ground_truth);
    char* measured = row(call.measured);
    for (int m = first; m < stop; ++m) {
        const int i = in_row(point, call.contact_point, m);
        const T sd = in_row(sd_of, call.contact_sd, m);
        const T depth_measured = wp::max(wp::sub(in_row(radius_measured, call.radius_measured, i), sd), zero);
        *reinterpret_cast<T*>(truth + int64_t(i) * call.ground_truth.strides[1]) =  // [e, i, 0]
            wp::max(wp::sub(at(call.radius, i), sd), zero);
        *reinterpret_cast<T*>(measured + int64_t(i) * call.measured.strides[1]) =
            wp::mul(depth_measured, in_row(gain, call.gain, i));
    }
"""


def _depth_kernel(dtype: torch.dtype):
    f = WP_TYPES[dtype][0]
    call_type = probe_struct(f"DepthProbeCall_{f.__name__}", dtype, {
        "radius": wp.array(dtype=f), "radius_measured": wp.array2d(dtype=f), "gain": wp.array2d(dtype=f),
        "ground_truth": wp.array3d(dtype=f), "measured": wp.array3d(dtype=f), **contact_list_fields(dtype)})
    name = f"contact_depth_probe_{f.__name__}"

    listed = listed_model(name, call_type, dtype, _LISTED_DEPTHS)
    return cell_kernel(name, call_type, dtype, listed, _no_depth, listed=True), call_type


_DEPTH_KERNELS = {dt: _depth_kernel(dt) for dt in WP_TYPES}


class ContactDepthProbeBatch(FusedProbeBatch):
    """Per-probe overlap depth of the sensing sphere with the nearest candidate geometry, m.

    One fused kernel per evaluation writes both branches into the measured branch's staging buffers (0 for probes
    out of reach); the hardware stages then run in place. The kernel lists the probes that found a shape (the
    contact list, [E, P]) and evaluates their depths in one native loop per block.
    """

    sensor_type = "ContactDepthProbe"
    kernels = _DEPTH_KERNELS
    listed = True

    def model_tables(self) -> dict:
        return contact_list_buffers(self.ctx.n_envs, self.probes.n, self.ctx.device, self.ctx.dtype)


@wp.func
def _signed_overlap(call: Any, tables: Any, e: int, i: int, x: Any, sd: Any, shape: int, normal: Any, link: int,
                    link_rot: Any, link_pos: Any):
    """Both branches' signed overlap x = max(g·(R − sd), x_floor) of probe i (env e; g = 1, R nominal on the ground
    truth) whose nearest shape is at signed distance sd."""
    floor = call.floor[i]
    call.ground_truth[e, i, 0] = wp.max(call.radius[i] - sd, floor)
    call.measured[e, i, 0] = wp.max((call.radius_measured[e, i] - sd) * call.gain[e, i], floor)


@wp.func
def _floor_overlap(call: Any, e: int, first: int, stop: int):
    """Both branches' signed overlap of the probes in slots [first, stop) (env e) out of reach: x_floor."""
    for j in range(first, stop):
        i = call.probe_order[j]
        floor = call.floor[i]
        call.ground_truth[e, i, 0] = floor
        call.measured[e, i, 0] = floor


def _overlap_kernel(dtype: torch.dtype):
    f = WP_TYPES[dtype][0]
    call_type = probe_struct(f"ContactProbeCall_{f.__name__}", dtype, {
        "radius": wp.array(dtype=f), "radius_measured": wp.array2d(dtype=f), "gain": wp.array2d(dtype=f),
        "floor": wp.array(dtype=f), "ground_truth": wp.array3d(dtype=f), "measured": wp.array3d(dtype=f)})
    return cell_kernel(f"contact_probe_{f.__name__}", call_type, dtype, _signed_overlap, _floor_overlap), call_type


_OVERLAP_KERNELS = {dt: _overlap_kernel(dt) for dt in WP_TYPES}


class ContactProbeBatch(FusedProbeBatch):
    """Per-probe contact flag: Schmitt trigger on the signed overlap (separate contact / release thresholds).

    One fused kernel per evaluation writes both branches' signed overlaps into the staging buffers (the floor for
    probes out of reach); the measured branch applies the hardware stages, then the latch
    of each branch (stage 10), in place: the rings hold 0./1.
    """

    sensor_type = "ContactProbe"
    kernels = _OVERLAP_KERNELS

    def __init__(self, options, ctx):
        counts = [ctx.layouts[o.name].n for o in options]
        self.contact_threshold = per_probe(options, counts, "contact_threshold", ctx)
        self.release_threshold = per_probe(options, counts, "release_threshold", ctx)
        self.floor = overlap_floor(self.release_threshold)
        super().__init__(options, ctx)
        self.floor_staged = self.floor[None, :, None].expand(ctx.n_envs, -1, 1).contiguous()  # [E, P, 1]

    def branch_options(self) -> dict:
        return {"latch_thresholds": (self.contact_threshold, self.release_threshold)}

    def model_tables(self) -> dict:
        return {"floor": self.floor}

    def extra_reach(self):
        # x = g(R̃ − sd) stays above a negative floor (and can still hold the latch) up to sd = R̃ − floor/g
        return -self.floor / self.min_gain()

    def clear(self, measured: torch.Tensor, ground_truth: torch.Tensor) -> None:
        # out of reach, x = x_floor on both branches
        measured.copy_(self.floor_staged)
        ground_truth.copy_(self.floor_staged)

    def output(self, value: torch.Tensor) -> torch.Tensor:
        return value > 0.5
