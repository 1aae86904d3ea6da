"""The option reference and the JSON Schema of the sensor YAML, generated from the option models.

Types, defaults and numeric ranges are read from each pydantic model's JSON Schema; units and meanings come from
:mod:`.option_docs`. :func:`markdown_reference` writes ``docs/reference/options.md`` and :func:`json_schema` the
schema shipped as ``tactile_sim/data/schema/sensors.schema.json`` (``tactile-sim schema`` prints it); tests compare
both checked-in files with what these functions generate.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from .layouts import ConformingSpec, FileLayout, PlanarGridSpec, UrdfTactileLayout
from .materials import TemperatureProperties
from .outputs import PointCloudOutput, RawCounts, TactileStateOutput, WrenchOutput
from .option_docs import SENSOR_PURPOSE, OptionDoc, option_doc
from .schema import (BoxSpec, CapsuleSpec, CylinderSpec, MeshSpec, ObjectConfig, OriginConfig, PoseConfig,
                     RobotConfig, ShapeConfig, SphereSpec, SuiteConfig, SuiteSettings, TwistConfig)
from .sensor_options import SENSOR_TYPES

SCHEMA_ID = "https://tactile-sim.invalid/sensors.schema.json"
"""``$id`` of the generated schema (a name, not a download address: editors use the shipped file)."""

SECTIONS: tuple[tuple[str, str, type[BaseModel]], ...] = (
    ("Top level", "the keys of the YAML file", SuiteConfig),
    ("suite", "`suite:`", SuiteSettings),
    ("robot", "`robot:`", RobotConfig),
    ("materials", "each entry of `materials:` (and an inline `material:`)", TemperatureProperties),
    ("objects", "each entry of `objects:`", ObjectConfig),
    ("pose", "`objects[i].pose`", PoseConfig),
    ("velocity", "`objects[i].velocity`", TwistConfig),
    ("geometry", "each entry of `objects[i].geometry` (exactly one shape kind, plus `origin`)", ShapeConfig),
    ("origin", "`geometry[j].origin`", OriginConfig),
    ("sphere", "`sphere:`", SphereSpec),
    ("box", "`box:`", BoxSpec),
    ("cylinder", "`cylinder:`", CylinderSpec),
    ("capsule", "`capsule:`", CapsuleSpec),
    ("mesh", "`mesh:`", MeshSpec),
    ("layout: file", "`probe_local_pos: {file: …}`", FileLayout),
    ("layout: grid", "`probe_local_pos: {grid: {…}}`", PlanarGridSpec),
    ("layout: conforming", "`probe_local_pos: {conforming: {…}}`", ConformingSpec),
    ("layout: urdf_tactile", "`probe_local_pos: {urdf_tactile: …}`", UrdfTactileLayout),
    ("output: pointcloud", "`outputs: [{profile: pointcloud, …}]` of a taxel sensor", PointCloudOutput),
    ("output: wrench", "`outputs: [{profile: wrench, …}]` of a KinematicTaxel or ProximityTaxel", WrenchOutput),
    ("output: tactile_state", "`outputs: [{profile: tactile_state, …}]` of a taxel sensor", TactileStateOutput),
    ("raw", "`raw:` of a tactile_state output", RawCounts),
)
"""(title, where it appears in the YAML, model) of every non-sensor section, in reference order."""


def _models() -> Iterator[type[BaseModel]]:
    for _, _, model in SECTIONS:
        yield model
    yield from SENSOR_TYPES.values()


def missing_docs() -> list[str]:
    """``Model.option`` of every option without a unit/meaning entry, or without an allowed text where its type
    states none (empty when the reference is complete)."""
    missing = []
    for model in _models():
        props = model.model_json_schema()["properties"]
        for name in model.model_fields:
            doc = option_doc(model.__name__, name)
            if doc is None or (not doc.allowed and not _allowed(props[name])):
                missing.append(f"{model.__name__}.{name}")
    return missing


# ----------------------------------------------------------------------------------------------- type text
def _strip_null(prop: dict) -> tuple[dict, bool]:
    """(the property without a ``null`` alternative, whether null is allowed)."""
    options = prop.get("anyOf")
    if options and {"type": "null"} in options:
        rest = [o for o in options if o != {"type": "null"}]
        return (rest[0] if len(rest) == 1 else {"anyOf": rest}), True
    return prop, False


def _type_text(prop: dict) -> str:
    prop, nullable = _strip_null(prop)
    text = _plain_type(prop)
    return f"{text} or null" if nullable else text


def _plain_type(prop: dict) -> str:
    if "$ref" in prop:
        return "mapping"
    if "minItems" in prop and prop.get("minItems") == prop.get("maxItems"):
        return f"list of {prop['minItems']} {_plain_type(prop.get('items', {}))}s"
    if "enum" in prop or "const" in prop:
        return "string"
    kind = prop.get("type")
    if kind == "array":
        if "prefixItems" in prop:
            return f"list of {len(prop['prefixItems'])} {_plain_type(prop['prefixItems'][0])}s"
        return f"list of {_plain_type(prop.get('items', {}))}s" if prop.get("items") else "list"
    if kind == "object":
        return "mapping"
    if "anyOf" in prop or "oneOf" in prop:
        return " or ".join(dict.fromkeys(_plain_type(p) for p in prop.get("anyOf", prop.get("oneOf")) if p))
    return {"number": "number", "integer": "integer", "boolean": "bool", "string": "string"}.get(kind, "any")


def _allowed(prop: dict) -> str:
    """Allowed values stated by the type itself: numeric bounds, an enum, booleans, the type's own description
    (fixed-length vectors, per-probe arrays, names); "" when it states none."""
    prop, nullable = _strip_null(prop)
    parts = []
    if "enum" in prop:
        parts.append(", ".join(repr(v) for v in prop["enum"]))
    if "const" in prop:
        parts.append(repr(prop["const"]))
    for key, op in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if key in prop and not (key == "exclusiveMaximum" and prop[key] >= 2**63):
            parts.append(f"{op} {prop[key]:g}")
    if prop.get("type") == "boolean":
        parts.append("true or false")
    if "$ref" in prop:
        parts.append("see its section")
    if not parts and prop.get("description"):
        parts.append(prop["description"])
    text = ", ".join(parts)
    return f"{text}, or null" if text and nullable else text


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.default
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if isinstance(value, tuple):
        value = list(value)
    return "null" if value is None else json.dumps(value, ensure_ascii=False)


def option_rows(model: type[BaseModel]) -> list[tuple[str, str, str, str, str, str]]:
    """(option, type, default, unit, allowed, meaning) of every option of ``model``, in declaration order."""
    props = model.model_json_schema()["properties"]
    rows = []
    for name, field in model.model_fields.items():
        doc = option_doc(model.__name__, name) or OptionDoc("", "")
        rows.append((name, _type_text(props[name]), _default(field), doc.unit, doc.allowed or _allowed(props[name]),
                     doc.meaning))
    return rows


# ----------------------------------------------------------------------------------------------- markdown
def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(model: type[BaseModel], skip: tuple[str, ...] = ()) -> list[str]:
    lines = ["| option | type | default | unit | allowed | meaning |", "|---|---|---|---|---|---|"]
    for row in option_rows(model):
        if row[0] in skip:
            continue
        name, kind, default, unit, allowed, meaning = row
        lines.append("| " + " | ".join([f"`{name}`", kind, f"`{_cell(default)}`", unit or "–", _cell(allowed) or "–",
                                        _cell(meaning)]) + " |")
    return lines


def markdown_reference() -> str:
    """The option reference page (Markdown): every section of the YAML, then every sensor type."""
    out = ["# Configuration reference", "",
           "Generated from the option models by `python -m tactile_sim.config.reference` (a test fails when this "
           "page differs from what the models give). Units are SI unless stated; `null` is YAML's empty value. "
           "Errors name the file, the YAML path, the value received and what is allowed.", "",
           "Editors can complete and check a sensor file with the JSON Schema that `tactile-sim schema` prints "
           "(also shipped in the package as `tactile_sim/data/schema/sensors.schema.json`): put "
           "`# yaml-language-server: $schema=<path to sensors.schema.json>` on the first line of the YAML file "
           "(VS Code's YAML extension and other editors using yaml-language-server read it).", "",
           "## Sections", ""]
    for title, where, model in SECTIONS:
        out += [f"### {title}", "", f"Where: {where}.", "", *_table(model), ""]
    out += ["## Sensors", "",
            "Every entry of `sensors:` has a `type` (one of the headings below) and the options of its type. Options "
            "shared by several types mean the same everywhere unless the table says otherwise.", ""]
    for type_name, model in SENSOR_TYPES.items():
        purpose, page = SENSOR_PURPOSE[type_name]
        out += [f"### {type_name}", "", f"Measures {purpose}. Model: [{type_name}](../models/{page}).", "",
                *_table(model, skip=("type",)), ""]
    return "\n".join(out).rstrip() + "\n"


# ----------------------------------------------------------------------------------------------- JSON Schema
def json_schema() -> dict:
    """JSON Schema (draft 2020-12) of the sensor YAML with each option's unit and meaning as its description."""
    schema = SuiteConfig.model_json_schema()
    defs = schema.get("$defs", {})
    for model in _models():
        target = schema if model is SuiteConfig else defs.get(model.__name__)
        if target is None:
            continue
        for name, prop in target.get("properties", {}).items():
            doc = option_doc(model.__name__, name)
            if doc is not None:
                unit = f" [{doc.unit}]" if doc.unit else ""
                allowed = f" Allowed: {doc.allowed}." if doc.allowed else ""
                prop["description"] = f"{doc.meaning}{unit}.{allowed}"
    return {**schema, "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            "title": "tactile_sim sensor configuration"}


def json_schema_text() -> str:
    """:func:`json_schema` as the text of the shipped file (sorted keys, two-space indent, final newline)."""
    return json.dumps(json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # python -m tactile_sim.config.reference DOCS_FILE SCHEMA_FILE
    import sys
    from pathlib import Path

    Path(sys.argv[1]).write_text(markdown_reference(), encoding="utf-8")
    Path(sys.argv[2]).write_text(json_schema_text(), encoding="utf-8")
