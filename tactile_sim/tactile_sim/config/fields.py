"""Reusable option types for the schema: finite numbers, fixed vectors, intervals, nested per-probe arrays,
names, regular expressions and resolved paths.

Each type is an ``Annotated`` pydantic type whose validator raises :class:`OptionProblem` with the
docs/models/scene.md#common-options parts
(problem, value, allowed); the loader adds the file and YAML path. Floats are always finite (NaN/inf rejected).
Nested arrays are kept as (nested) lists of Python floats; their shapes are checked by the consumers that know the
layout (``sensors.layout``, ``imperfections``), except where a rule needs no layout (kernel sizes, flat arrays).
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, ValidationInfo, WithJsonSchema

from ..constants import LENGTH_RANGE
from .errors import OptionProblem
from .paths import PathKind, resolve_path

Check = Callable[[float], bool]


# ---------------------------------------------------------------------------------------------- scalars
NonNegFloat = Annotated[float, Field(ge=0.0)]
PosFloat = Annotated[float, Field(gt=0.0)]
UnitFloat = Annotated[float, Field(ge=0.0, le=1.0)]
NonNegInt = Annotated[int, Field(ge=0)]
PosInt = Annotated[int, Field(ge=1)]
Length = Annotated[float, Field(ge=LENGTH_RANGE[0], le=LENGTH_RANGE[1])]
"""A dimension in m within :data:`~..constants.LENGTH_RANGE` (a radius, an edge, a spacing)."""
NonNegLength = Annotated[float, Field(ge=0.0, le=LENGTH_RANGE[1])]
"""A distance in m from 0 up to the largest of :data:`~..constants.LENGTH_RANGE` (a margin, a thickness)."""
LENGTH_TEXT = f"{LENGTH_RANGE[0]:g} to {LENGTH_RANGE[1]:g} m"


def _number(x: Any) -> float | None:
    """``x`` as a Python float when it is a real number (not a bool), else None."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        return None
    return float(x)


def _index_text(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def _leaf(x: Any, index: tuple[int, ...], check: Check | None, allowed: str) -> float:
    value = _number(x)
    at = f" at {_index_text(index)}" if index else ""
    if value is None:
        raise OptionProblem(f"not a number{at}", x, allowed)
    if not math.isfinite(value):
        raise OptionProblem(f"non-finite value{at}", x, allowed)
    if check is not None and not check(value):
        raise OptionProblem(f"value out of range{at}", x, allowed)
    return value


def _as_python(value: Any) -> Any:
    """NumPy arrays / torch tensors (anything with ``tolist``) → nested Python lists; other values unchanged."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return value.tolist()
    return value


def _walk(value: Any, index: tuple[int, ...], check: Check | None, allowed: str, depth: int | None) -> Any:
    if isinstance(value, (list, tuple)):
        if depth == 0:
            raise OptionProblem(f"too deeply nested{' at ' + _index_text(index) if index else ''}", value, allowed)
        nxt = None if depth is None else depth - 1
        return [_walk(v, index + (i,), check, allowed, nxt) for i, v in enumerate(value)]
    return _leaf(value, index, check, allowed)


# ---------------------------------------------------------------------------------------------- arrays
def _array_schema(item: str, n: int, allowed: str) -> dict:
    """JSON Schema of exactly ``n`` items of JSON type ``item``, described by the ``allowed`` text."""
    return {"type": "array", "items": {"type": item}, "minItems": n, "maxItems": n, "description": allowed}


def nested_floats(check: Check | None = None, allowed: str = "finite numbers", max_depth: int | None = None):
    """Scalar or (nested) list of finite numbers (NumPy arrays and tensors accepted), each passing ``check``.

    Kept as a float or nested lists of floats; ``max_depth`` limits the nesting (1 = flat list).
    """

    def validate(value: Any) -> Any:
        return _walk(_as_python(value), (), check, allowed, max_depth)

    return Annotated[Any, BeforeValidator(validate),
                     WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "array"}], "description": allowed})]


NestedFloats = nested_floats(allowed="a number or nested lists of finite numbers")
"""Per-probe array (layout shape checked by the layout): scalar, vector or nested lists of finite numbers."""

PositiveNested = nested_floats(lambda x: x > 0, "a number > 0, or one value > 0 per probe (layout-shaped)")
NonNegFlat = nested_floats(lambda x: x >= 0, "a number >= 0, or a flat list of numbers >= 0 (one per channel)", 1)
FlatFloats = nested_floats(None, "a finite number, or a flat list of finite numbers (one per channel)", 1)


def vector(n: int, check: Check | None = None, allowed: str = ""):
    """Exactly ``n`` finite numbers (each passing ``check``), kept as a tuple of floats."""
    text = allowed or f"{n} finite numbers"

    def validate(value: Any) -> tuple[float, ...]:
        value = _as_python(value)
        if not isinstance(value, (list, tuple)) or len(value) != n:
            raise OptionProblem(f"expects {n} numbers", value, text)
        return tuple(_leaf(v, (i,), check, text) for i, v in enumerate(value))

    return Annotated[tuple[float, ...], BeforeValidator(validate), WithJsonSchema(_array_schema("number", n, text))]


Vec3 = vector(3, allowed="3 finite numbers (x, y, z)")
Color3 = vector(3, lambda x: 0.0 <= x <= 1.0, "3 numbers in [0, 1] (r, g, b)")
Color4 = vector(4, lambda x: 0.0 <= x <= 1.0, "4 numbers in [0, 1] (r, g, b, a)")


def int_vector(n: int, minimum: int, allowed: str):
    """Exactly ``n`` integers ≥ ``minimum``, kept as a tuple of ints."""

    def validate(value: Any) -> tuple[int, ...]:
        value = _as_python(value)
        if not isinstance(value, (list, tuple)) or len(value) != n:
            raise OptionProblem(f"expects {n} integers", value, allowed)
        out = []
        for v in value:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < minimum:
                raise OptionProblem("not an integer >= %d" % minimum, value, allowed)
            out.append(int(v))
        return tuple(out)

    return Annotated[tuple[int, ...], BeforeValidator(validate), WithJsonSchema(_array_schema("integer", n, allowed))]


def interval(strict: bool, check: Check | None = None, allowed: str = ""):
    """A pair (lo, hi) of finite numbers with lo ≤ hi (lo < hi when ``strict``), each passing ``check``."""
    order = "lo < hi" if strict else "lo <= hi"
    text = allowed or f"(lo, hi) finite numbers with {order}"

    def validate(value: Any) -> tuple[float, float]:
        value = _as_python(value)
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise OptionProblem("expects a pair (lo, hi)", value, text)
        lo, hi = (_leaf(v, (i,), check, text) for i, v in enumerate(value))
        if lo > hi or (strict and lo == hi):
            raise OptionProblem(f"bounds out of order (need {order})", value, text)
        return lo, hi

    return Annotated[tuple[float, float], BeforeValidator(validate), WithJsonSchema(_array_schema("number", 2, text))]


# ---------------------------------------------------------------------------------------------- names
def _non_empty(value: str) -> str:
    if not value.strip():
        raise OptionProblem("empty name", value, "a non-empty string")
    return value


def _unique(values: list[str]) -> list[str]:
    seen = set()
    for v in values:
        if v in seen:
            raise OptionProblem(f"{v!r} listed twice", values, "distinct names")
        seen.add(v)
    return values


Name = Annotated[str, AfterValidator(_non_empty),
                 WithJsonSchema({"type": "string", "minLength": 1, "description": "a non-empty string"})]
NameList = Annotated[list[Name], AfterValidator(_unique),
                     WithJsonSchema({"type": "array", "items": {"type": "string", "minLength": 1},
                                     "uniqueItems": True, "description": "a list of distinct non-empty names"})]


def _regex(value: str) -> str:
    if "{ENV_REGEX_NS}" in value:
        raise OptionProblem("Isaac Lab prim paths are not used here", value,
                            "a body name or a regular expression over body names (full match)")
    try:
        re.compile(value)
    except re.error as exc:
        raise OptionProblem(f"invalid regular expression ({exc})", value,
                            "a body name or a regular expression over body names (full match)") from None
    return value


BodyPattern = Annotated[str, AfterValidator(_non_empty), AfterValidator(_regex)]
"""A body name or a Python regular expression matched in full against body names."""


# ---------------------------------------------------------------------------------------------- paths
def resolved_path(kind: PathKind):
    """A path resolved at validation (``package://``, ``file://``, relative to the validation context's
    ``base_dir``); ``kind`` as :func:`~.paths.resolve_path`. Kept as an absolute :class:`Path`."""

    def validate(value: Any, info: ValidationInfo) -> Path:
        base = (info.context or {}).get("base_dir")
        return resolve_path(value, base, kind)

    return Annotated[Path, BeforeValidator(validate)]


FilePath = resolved_path("file")
DirPath = resolved_path("dir")
AnyPath = resolved_path("any")
