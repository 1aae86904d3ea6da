"""Translate a pydantic ``ValidationError`` into docs/models/scene.md#common-options problem lines with YAML paths.

pydantic locations are tuples such as ``('sensors', 2, 'KinematicTaxel', 'probe_radius')``; they are walked along
the schema's types so that discriminated-union tags are dropped (``sensors[2].probe_radius``), the section that
refused an unknown key can explain it (accepted names, replaced Genesis option, closest match), and a missing
option can say what it expects.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Union

from pydantic import BaseModel, Tag, ValidationError
from pydantic.fields import FieldInfo

from .base import ConfigModel
from .errors import Got, OptionProblem, format_problem, join_location, suggest
from .layouts import LAYOUT_FORM_ALLOWED

_TYPE_PROBLEMS = {
    "float_parsing": ("not a number", "a finite number"),
    "float_type": ("not a number", "a finite number"),
    "finite_number": ("not a finite number", "a finite number (no NaN or inf)"),
    "int_parsing": ("not an integer", "an integer"),
    "int_type": ("not an integer", "an integer"),
    "int_from_float": ("not an integer", "an integer"),
    "bool_parsing": ("not a boolean", "true or false"),
    "bool_type": ("not a boolean", "true or false"),
    "string_type": ("not a string", "a string"),
    "list_type": ("not a list", "a list"),
    "tuple_type": ("not a list", "a list"),
    "too_short": ("too few items", "the documented number of items"),
    "too_long": ("too many items", "the documented number of items"),
    "layout_form": ("not a probe layout", LAYOUT_FORM_ALLOWED),
}
_MAPPING_TYPES = {"dict_type", "model_type", "model_attributes_type"}
_BOUNDS = (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))


def _strip(annotation: Any) -> Any:
    """Drop ``Annotated`` and an ``Optional`` wrapper (neither adds a location segment)."""
    while True:
        if typing.get_origin(annotation) is Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if typing.get_origin(annotation) in (Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) == 1:
                annotation = members[0]
                continue
        return annotation


def _union_members(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return [a for a in typing.get_args(annotation) if a is not type(None)]
    return []


def _literal_tags(model: Any) -> list[str]:
    """The values of a model's one-value ``Literal`` fields (the discriminator tags it answers to)."""
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        return []
    return [typing.get_args(f.annotation)[0] for f in model.model_fields.values()
            if typing.get_origin(f.annotation) is typing.Literal and len(typing.get_args(f.annotation)) == 1]


def _member_for_tag(members: list[Any], tag: str) -> Any | None:
    """The union member that a pydantic location segment (a Tag, or the class name or discriminator value of a
    discriminated member) selects."""
    for member in members:
        tags = [m.tag for m in getattr(member, "__metadata__", ()) if isinstance(m, Tag)]
        base = _strip(member)
        if tag in tags or (isinstance(base, type) and base.__name__ == tag) or tag in _literal_tags(base):
            return member
    return None


def _segment_text(key: Any) -> str:
    text = str(key)
    return text if text.isidentifier() else f"[{text!r}]"


class _Location:
    """Result of walking a location: YAML path, the last model passed, the last field, the final annotation."""

    def __init__(self, root: type[BaseModel], loc: tuple):
        self.path, self.model, self.field, self.annotation = "", None, None, root
        self.last_key = None
        ann: Any = root
        for seg in loc:
            ann = _strip(ann)
            members = _union_members(ann)
            if members and isinstance(seg, str):
                chosen = _member_for_tag(members, seg)
                if chosen is not None:
                    ann = chosen
                    continue
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                self.model, self.field, self.last_key = ann, ann.model_fields.get(seg), seg
                self.path = join_location(self.path, str(seg))
                ann = self.field.annotation if self.field is not None else None
                continue
            origin, args = typing.get_origin(ann), typing.get_args(ann)
            if isinstance(seg, int):
                self.path += f"[{seg}]"
                if origin is tuple and args and args[-1] is not Ellipsis:
                    ann = args[seg] if seg < len(args) else None
                else:
                    ann = args[0] if args else None
            else:
                self.path = join_location(self.path, _segment_text(seg))
                ann = args[1] if origin is dict and len(args) == 2 else None
        self.annotation = ann


def _bounds_text(field: FieldInfo | None, ctx: dict) -> str:
    """"> 0", ">= 0 and <= 1", ... from the field's constraints (or the violated one from ``ctx``)."""
    parts = []
    for meta in field.metadata if field is not None else ():
        for attr, symbol in _BOUNDS:
            if getattr(meta, attr, None) is not None:
                parts.append(f"{symbol} {getattr(meta, attr)!r}")
    if not parts:
        parts = [f"{symbol} {ctx[attr]!r}" for attr, symbol in _BOUNDS if attr in ctx]
    return " and ".join(parts)


def _expected_tags(annotation: Any, key: str) -> list[str]:
    """The tags of a discriminated union: each member's value of the discriminator ``key``."""
    names = []
    for member in _union_members(_strip(annotation)):
        base = _strip(member)
        field = base.model_fields.get(key) if isinstance(base, type) and issubclass(base, BaseModel) else None
        literal = field is not None and typing.get_origin(field.annotation) is typing.Literal
        names.append(typing.get_args(field.annotation)[0] if literal else getattr(base, "__name__", str(base)))
    return names


OPTION_REFERENCE = "see the option reference (docs/reference/options.md, or `tactile-sim schema --markdown`)"
"""Where a message sends the reader when pydantic's own error names no allowed values."""


def describe_error(error: dict, root: type[BaseModel]) -> tuple[str, str, Any, str, str]:
    """(path, problem, got, allowed, hint) for one pydantic error dict, ``path`` relative to ``root``."""
    kind, ctx, got = error["type"], error.get("ctx") or {}, error.get("input")
    where = _Location(root, tuple(error["loc"]))
    path = where.path
    cause = ctx.get("error")
    if isinstance(cause, OptionProblem):
        return join_location(path, cause.option), cause.problem, cause.got, cause.allowed, cause.hint
    if kind == "extra_forbidden":
        model = where.model if where.model is not None and issubclass(where.model, ConfigModel) else None
        if model is not None:
            problem, allowed, hint = model.explain_unknown(str(where.last_key))
            return path, problem, got, allowed, hint
        return path, "unknown option", got, OPTION_REFERENCE, ""
    if kind == "missing":
        allowed = where.field.description if where.field is not None and where.field.description else "a value"
        return path, "required option is missing", Got("nothing"), allowed, ""
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        key = str(ctx.get("discriminator", "type")).strip("'")
        tags = _expected_tags(where.annotation, key)
        path = join_location(path, key)
        if kind == "union_tag_not_found":
            return path, f"missing {key}", Got("nothing"), ", ".join(tags), ""
        tag = ctx.get("tag")
        return path, f"unknown {key}", tag, ", ".join(tags), suggest(str(tag), tags, cutoff=0.6)
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        return path, "out of range", got, _bounds_text(where.field, ctx), ""
    if kind == "literal_error":
        return path, "not one of the allowed values", got, ctx.get("expected", ""), ""
    if kind in _MAPPING_TYPES:
        model = _strip(where.annotation)
        keys = sorted(model.model_fields) if isinstance(model, type) and issubclass(model, BaseModel) else []
        return path, "not a mapping", got, "a mapping" + (" with keys: " + ", ".join(keys) if keys else ""), ""
    if kind in _TYPE_PROBLEMS:
        problem, allowed = _TYPE_PROBLEMS[kind]
        return path, problem, got, allowed, ""
    return path, error["msg"], got, OPTION_REFERENCE, ""


def problem_lines(exc: ValidationError, root: type[BaseModel], where: str) -> list[str]:
    """Every error of ``exc`` as one docs/models/scene.md#common-options line; ``where`` is ``"<file>:"`` (YAML) or
    ``"Class(name='x')"``."""
    lines = []
    for error in exc.errors(include_url=False):
        path, problem, got, allowed, hint = describe_error(error, root)
        lines.append(format_problem(where, path, problem, got, allowed, hint))
    return lines
