"""Base model of every configuration section: unknown keys forbidden, floats finite, and an explanation for keys
a section does not accept (replaced Genesis options, options rejected by one sensor class, closest-name hints)."""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import (BaseModel, BeforeValidator, ConfigDict, PlainValidator, PrivateAttr, WrapValidator,
                      model_validator)

from .errors import OptionProblem, suggest

GENESIS_REPLACEMENTS: Mapping[str, str] = {
    "entity_idx": "link",
    "link_idx_local": "link",
    "track_link_idx": "track",
    "filter_link_idx": "ignore",
}
"""Genesis index-based options → the name-based option that replaces them (docs/models/scene.md#common-options,
docs/models/index.md#differences)."""

REPLACEMENT_MEANING: Mapping[str, str] = {
    "link": "the name of the sensor's link or object",
    "track": "a list of tracked body names",
    "ignore": "a list of body names excluded from the candidates",
    "prim_path": "a body name or regular expression",
    "robot": "the name of a robot description",
}


class ConfigModel(BaseModel):
    """A configuration section (pydantic v2): unknown keys are errors, floats must be finite.

    Subclasses may list ``rejected_options`` (key → (problem, allowed)) for keys that have a specific reason to
    be refused, and ``replacements`` (Genesis key → our option) when they differ from :data:`GENESIS_REPLACEMENTS`.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    rejected_options: ClassVar[Mapping[str, tuple[str, str]]] = {}
    replacements: ClassVar[Mapping[str, str]] = GENESIS_REPLACEMENTS

    @model_validator(mode="before")
    @classmethod
    def _no_booleans_as_numbers(cls, data: Any) -> Any:
        """Refuse true/false (YAML's yes/no/on/off too) for a numeric option, which pydantic would read as 1/0."""
        if isinstance(data, Mapping):
            for key in _numeric_fields(cls):
                if isinstance(data.get(key), bool):
                    field = cls.model_fields[key]
                    raise OptionProblem("a boolean where a number is expected", data[key],
                                        field.description or "a number (not true/false)", key)
        return data

    @classmethod
    def explain_unknown(cls, key: str) -> tuple[str, str, str]:
        """(problem, allowed, hint) for a key this section does not accept."""
        if key in cls.rejected_options:
            problem, allowed = cls.rejected_options[key]
            return problem, allowed, ""
        replacement = cls.replacements.get(key)
        if replacement is not None and replacement in cls.model_fields:
            return (f"Genesis index-based option '{key}' is replaced by '{replacement}'",
                    f"'{replacement}' ({REPLACEMENT_MEANING[replacement]})", "")
        accepted = sorted(cls.model_fields)
        return f"unknown option for {cls.__name__}", ", ".join(accepted), suggest(key, accepted, cutoff=0.6)


def _takes_a_number(annotation: Any) -> bool:
    """Whether a field of this type takes an int or a float (alone, optional or in a union) and no bool, and reads
    its input with pydantic's own number rules (a type with a validator of its own before them says what it takes)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        own = any(isinstance(m, (BeforeValidator, PlainValidator, WrapValidator)) for m in args[1:])
        return not own and _takes_a_number(args[0])
    if origin in (typing.Union, types.UnionType):
        return bool not in args and any(_takes_a_number(a) for a in args)
    return annotation in (int, float)


_NUMERIC_FIELDS: dict[type, tuple[str, ...]] = {}


def _numeric_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The names of ``model``'s numeric fields (:func:`_takes_a_number`), found once per model."""
    names = _NUMERIC_FIELDS.get(model)
    if names is None:
        names = _NUMERIC_FIELDS[model] = tuple(k for k, f in model.model_fields.items()
                                               if _takes_a_number(f.rebuild_annotation()))
    return names


class Located(BaseModel):
    """A section that remembers where it was declared (set by the loader) for later scene-level errors."""

    _where: str = PrivateAttr(default="")

    def located(self, where: str):
        """Record ``where`` (``<file>:<yaml.path>``) and return self."""
        self._where = where
        return self

    @property
    def where(self) -> str:
        """``<file>:<yaml.path>`` when loaded from YAML, else a Python-side description."""
        return self._where or self.default_where()

    def default_where(self) -> str:
        return type(self).__name__
