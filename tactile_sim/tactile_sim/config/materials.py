"""Thermal materials (docs/models/temperature_grid.md#temperature-grid TemperatureProperties) and references to them (a
name in ``materials:`` or inline)."""

from __future__ import annotations

from typing import Annotated, Any, Union

from pydantic import Discriminator, Field, Tag

from ..constants import KELVIN_OFFSET
from .base import ConfigModel
from .fields import Name, PosFloat, UnitFloat

AboveAbsoluteZero = Annotated[float, Field(gt=-KELVIN_OFFSET)]
"""A temperature in °C above absolute zero (> −273.15)."""


class TemperatureProperties(ConfigModel):
    """One thermal material; °C, W/(m·K), kg/m³, J/(kg·K), emissivity in [0, 1]."""

    base_temperature: AboveAbsoluteZero = 21.0
    conductivity: PosFloat = 50.0
    density: PosFloat = 1000.0
    specific_heat: PosFloat = 1000.0
    emissivity: UnitFloat = 0.9


def _material_form(value: Any) -> str:
    return "name" if isinstance(value, str) else "properties"


MaterialRef = Annotated[
    Union[Annotated[Name, Tag("name")], Annotated[TemperatureProperties, Tag("properties")]],
    Discriminator(_material_form),
]
"""A material: the name of an entry of the suite's ``materials:`` or inline :class:`TemperatureProperties`."""
