"""Thermal materials of the scene's bodies (docs/models/temperature_grid.md#temperature-grid): the TemperatureGrids'
merged ``properties_dict``, the objects' own materials and the ``default`` entry, resolved by body name only, so
that ``tactile-sim check`` resolves them as the build does, without the scene."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import ConfigError, closest_names

DEFAULT_KEY = "default"


@dataclass(frozen=True)
class Material:
    """One thermal material: base temperature °C, conductivity W/(m·K), density kg/m³, specific heat J/(kg·K),
    emissivity."""

    base_temperature: float
    conductivity: float
    density: float
    specific_heat: float
    emissivity: float

    @classmethod
    def of(cls, props) -> "Material":
        return cls(float(props.base_temperature), float(props.conductivity), float(props.density),
                   float(props.specific_heat), float(props.emissivity))

    @property
    def heat_capacity_density(self) -> float:
        """ρc, J/(m³·K)."""
        return self.density * self.specific_heat


def declared_material(obj) -> str | None:
    """The material name a declared object (an ``objects`` entry) carries in the scene: its ``material`` when a
    name, its own name for an inline material (which :func:`resolve_materials` takes from the object itself), or
    None."""
    return obj.material if isinstance(obj.material, str) or obj.material is None else obj.name


def resolve_materials(grids, config, body_names: Sequence[str], where: dict[str, str]) -> list[Material | None]:
    """Material of every body (``body_names``: the scene's, in order): its merged ``properties_dict`` entry, else its
    object material, else the ``"default"`` entry, else None (no heat exchange). Unknown body names in
    ``properties_dict`` and a body whose entry contradicts its object material are errors."""
    merged: dict[str, tuple[Material, str]] = {}
    for g in grids:
        w = where.get(g.name, g.where)
        for key, ref in g.properties_dict.items():
            if key != DEFAULT_KEY and key not in body_names:
                raise ConfigError(f"{w}.properties_dict: unknown body {key!r}; got {key!r}; allowed: 'default' or a "
                                  f"body name; closest bodies: {closest_names(key, body_names)}")
            merged.setdefault(key, (Material.of(config.material(ref)), w))
    object_material = {}
    for obj in config.objects:
        if isinstance(obj.material, str):
            if obj.material in config.materials:
                object_material[obj.name] = Material.of(config.materials[obj.material])
        elif obj.material is not None:  # inline: its own, even where a named material has the object's name
            object_material[obj.name] = Material.of(obj.material)
    default = merged.get(DEFAULT_KEY, (None, ""))[0]
    out = []
    for name in body_names:
        entry, own = merged.get(name), object_material.get(name)
        if entry is not None and own is not None and entry[0] != own:
            raise ConfigError(f"{entry[1]}.properties_dict.{name}: contradicts the material of object {name!r}; "
                              f"got {entry[0]}; allowed: the object's material {own} (or drop one of them)")
        out.append(entry[0] if entry is not None else own if own is not None else default)
    return out


def link_material(materials: Sequence[Material | None], link: int, link_name: str, where: str) -> Material:
    """The material of a TemperatureGrid's link (index ``link`` of ``materials``, named ``link_name``), or the
    ConfigError (``where``: the sensor's location) of a link without one."""
    mat = materials[link]
    if mat is None:
        raise ConfigError(f"{where}.properties_dict: no material for the sensor link {link_name!r}; got no entry; "
                          f"allowed: an entry for {link_name!r}, an object material or a 'default' entry")
    return mat
