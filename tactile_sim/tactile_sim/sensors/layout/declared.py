"""Probe layouts the configuration itself declares (an array, a planar grid or a layout file), built from a probe
sensor's options without the scene: the build resolves them so (:func:`~...scene_build.probe_layout`, which adds the
conforming and urdf_tactile layouts), and ``tactile-sim check`` checks them so, without torch."""

from __future__ import annotations

from typing import Any

from ...config.budget import CAPS
from ...config.layouts import ConformingLayout, FileLayout, GridLayout, UrdfTactileLayout
from .probe_layout import ProbeLayout, generate_grid_points_on_plane, load_layout_file


def layout_defaults(sensor_type: str) -> dict[str, Any]:
    """``default_radius`` (m) and ``allow_fillers`` of :meth:`ProbeLayout.from_options` for a probe sensor type:
    SurfaceDistanceProbe 0.5 m and no fillers, the taxel types 0.01 m with fillers."""
    distance = sensor_type == "SurfaceDistanceProbe"
    return {"default_radius": 0.5 if distance else 0.01, "allow_fillers": not distance}


def given_options(options) -> tuple[Any, Any, dict[str, Any]]:
    """(probe_radius, probe_local_normal, the offsets and ``where``) of a probe sensor's options as
    :meth:`ProbeLayout.from_options` takes them: the radius and normal None where the configuration does not give
    them (a layout source's own then apply)."""
    given = options.model_fields_set
    return (options.probe_radius if "probe_radius" in given else None,
            options.probe_local_normal if "probe_local_normal" in given else None,
            {"pos_offset": options.pos_offset, "euler_offset": options.euler_offset, "where": options.where})


def declared_layout(options) -> ProbeLayout | None:
    """The validated layout of a probe sensor whose ``probe_local_pos`` is an array, a planar grid or a layout file
    (read here; refused past the probe cap of :mod:`~...config.budget` before it is read); None for the layouts
    that need the scene or the robot description (conforming, urdf_tactile)."""
    src = options.probe_local_pos
    radius, normal, common = given_options(options)
    if isinstance(src, FileLayout):
        data = load_layout_file(src.file, options.where, CAPS["probes"])
        positions = data.positions
        radius = radius if radius is not None else data.radius
        normal = normal if normal is not None else data.normals
    elif isinstance(src, GridLayout):
        g = src.grid
        positions = generate_grid_points_on_plane(g.lo, g.hi, g.normal, g.nx, g.ny)
        normal = normal if normal is not None else g.normal
    elif isinstance(src, (ConformingLayout, UrdfTactileLayout)):
        return None
    else:
        positions = src
    return ProbeLayout.from_options(positions, radius, normal, **layout_defaults(options.type), **common)
