"""How a probe layout (``probe_local_pos``) may be given: an array, or one of four generated sources.

* an array: (N, 3) or (M, N, 3) positions in the link frame (checked by ``sensors.layout.ProbeLayout``);
* ``{file: path}`` — a layout file (``sensors.layout.load_layout_file``), path resolved like every config path;
* ``{grid: {lo, hi, normal, nx, ny}}`` — the planar-grid helper of docs/models/layouts.md#helper (rows follow ny,
columns nx);
* ``{conforming: {spacing, facing, min_cos, box, seed}}`` — taxels covering the link's collision surface
  (``sensors.layout_sources.conforming_layout``);
* ``{urdf_tactile: sensor_name}`` — a ``<sensor>`` with a ``<tactile>`` child in the robot description.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Union

from pydantic import Discriminator, Field, Tag, model_validator

from ..constants import EPS_LEN
from .base import ConfigModel
from .errors import OptionProblem
from .fields import LENGTH_TEXT, FilePath, Length, Name, NestedFloats, NonNegInt, PosInt, Vec3

LAYOUT_SOURCE_KEYS = ("file", "grid", "conforming", "urdf_tactile")
LAYOUT_FORM_ALLOWED = ("(N, 3) or (M, N, 3) positions in m, or a mapping with exactly one of "
                       + ", ".join(LAYOUT_SOURCE_KEYS))


def _check_direction(v: tuple[float, ...], option: str) -> None:
    if math.sqrt(sum(x * x for x in v)) < EPS_LEN:
        raise OptionProblem(f"zero-length direction (norm < {EPS_LEN})", v, "a non-zero vector (x, y, z)", option)


class FileLayout(ConfigModel):
    """Positions (and optionally radii and normals) read from a layout file."""

    file: FilePath = Field(description="an existing layout file (path, file:// or package://)")


class PlanarGridSpec(ConfigModel):
    """``generate_grid_points_on_plane(lo, hi, normal, nx, ny)`` (docs/models/layouts.md#helper): an (ny, nx, 3) grid,
    link frame."""

    lo: Vec3 = Field(description="corner (x, y, z) in m")
    hi: Vec3 = Field(description="opposite corner (x, y, z) in m")
    normal: Vec3 = (0.0, 0.0, 1.0)
    nx: PosInt = Field(description="an integer >= 1 (columns)")
    ny: PosInt = Field(description="an integer >= 1 (rows)")

    @model_validator(mode="after")
    def _normal_non_zero(self):
        _check_direction(self.normal, "normal")
        return self


class GridLayout(ConfigModel):
    grid: PlanarGridSpec


class ConformingSpec(ConfigModel):
    """Taxels about ``spacing`` apart on the link's collision surface, optionally only where the outward normal n
    has n·f̂ > ``min_cos`` (``facing`` f, link frame) and inside ``box`` ((lo, hi) corners, link frame, m)."""

    spacing: Length = Field(description=f"a spacing of {LENGTH_TEXT}")
    facing: Vec3 | None = None
    min_cos: Annotated[float, Field(ge=-1.0, lt=1.0)] = 0.0
    box: tuple[Vec3, Vec3] | None = None
    seed: NonNegInt = 0

    @model_validator(mode="after")
    def _check(self):
        if self.facing is not None:
            _check_direction(self.facing, "facing")
        if self.box is not None and any(lo > hi for lo, hi in zip(*self.box)):
            raise OptionProblem("box corners out of order (need lo <= hi per axis)", self.box,
                                "((x, y, z) lo, (x, y, z) hi) with lo <= hi", "box")
        return self


class ConformingLayout(ConfigModel):
    conforming: ConformingSpec


class UrdfTactileLayout(ConfigModel):
    """The layout of a urdf_tactile ``<sensor>`` of the robot description, by sensor name."""

    urdf_tactile: Name


def _layout_form(value: Any) -> str | None:
    if isinstance(value, dict):
        keys = [k for k in LAYOUT_SOURCE_KEYS if k in value]
        return keys[0] if len(keys) == 1 else None
    return "array"


LayoutPositions = Annotated[
    Union[
        Annotated[NestedFloats, Tag("array")],
        Annotated[FileLayout, Tag("file")],
        Annotated[GridLayout, Tag("grid")],
        Annotated[ConformingLayout, Tag("conforming")],
        Annotated[UrdfTactileLayout, Tag("urdf_tactile")],
    ],
    Discriminator(_layout_form, custom_error_type="layout_form",
                  custom_error_message="not a probe layout (a mapping needs exactly one layout source)"),
]
"""``probe_local_pos``: nested lists of floats, or a :class:`FileLayout` / :class:`GridLayout` /
:class:`ConformingLayout` / :class:`UrdfTactileLayout`."""

LayoutSource = Union[FileLayout, GridLayout, ConformingLayout, UrdfTactileLayout]


def declared_probe_count(value: Any) -> int | None:
    """Probes a validated ``probe_local_pos`` declares without reading anything: nx·ny of a grid, the (x, y, z)
    triples of nested positions (at least 1); None for the layouts read when the suite is built (file, conforming,
    urdf_tactile)."""
    grid = getattr(value, "grid", None)
    if grid is not None:
        return grid.nx * grid.ny
    if isinstance(value, (list, tuple)):
        return max(1, _leaves(value) // 3)
    return None


def _leaves(value: Any) -> int:
    return sum(_leaves(v) for v in value) if isinstance(value, (list, tuple)) else 1
