"""Base model of every configuration section: unknown keys forbidden, floats finite, and an explanation for keys
a section does not accept (replaced Genesis options, options rejected by one sensor class, closest-name hints)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, PrivateAttr

from .errors import suggest

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
