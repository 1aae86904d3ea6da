"""Load and validate configurations: YAML files (or dicts) into :class:`SuiteConfig`, Python keyword options
into one sensor's option model. Every problem becomes one :class:`ConfigError` (docs/models/scene.md#common-options
format)."""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .budget import check_budget, entry_problems
from .errors import Got, OptionProblem, combined_error, config_error, suggest
from .paths import resolve_path
from .schema import SuiteConfig
from .sensor_options import SENSOR_TYPES, SensorOptions
from .suite_checks import check_suite
from .validation_errors import problem_lines

_FLOAT = re.compile(r"""^[-+]?(?:
      [0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    | [0-9][0-9_]*[eE][-+]?[0-9]+
    | \.[0-9_]+(?:[eE][-+]?[0-9]+)?
    | \.(?:inf|Inf|INF)
    | \.(?:nan|NaN|NAN)
)$""", re.X)


MAX_YAML_DEPTH = 64
"""Deepest nesting of sequences and mappings a configuration may have (also after alias expansion)."""

MAX_YAML_NODES = 1_000_000
"""Most scalars, sequences and mappings a configuration may expand to, aliases counted at every use."""

MAX_YAML_BYTES = 16 * 2**20
"""Largest configuration file read (large arrays belong in layout files: ``probe_local_pos: {file: …}``)."""


def _mark_where(node: yaml.Node) -> str:
    return f"{node.start_mark.name}:{node.start_mark.line + 1}:{node.start_mark.column + 1}"


class ConfigYamlLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that also reads exponent floats without a dot (``1e-3``, YAML 1.2), refuses duplicate
    keys in a mapping (the later one would otherwise silently win), and refuses, before anything is constructed,
    nesting deeper than :data:`MAX_YAML_DEPTH` and documents whose aliases expand beyond :data:`MAX_YAML_NODES`
    nodes (a "billion laughs" document is a few lines long)."""

    def compose_node(self, parent, index):
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                mark = self.peek_event().start_mark
                raise config_error(f"{mark.name}:{mark.line + 1}:{mark.column + 1}", "", "YAML nested too deeply",
                                   Got(f"more than {MAX_YAML_DEPTH} levels"), f"at most {MAX_YAML_DEPTH} nested levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_yaml_int(self, node):
        try:
            return super().construct_yaml_int(node)
        except ValueError as exc:  # Python refuses int strings of more than 4300 digits
            raise config_error(_mark_where(node), "", "integer too long", Got(f"{len(node.value)} characters"),
                               f"an integer Python can read ({exc})") from None

    def construct_document(self, node):
        self._expanded(node, 1, {})
        return super().construct_document(node)

    def _expanded(self, node: yaml.Node, depth: int, seen: dict[int, tuple[int, int]]) -> tuple[int, int]:
        """(nodes, height) of ``node`` with every alias expanded; ConfigError when over the bounds."""
        if id(node) in seen:
            size, height = seen[id(node)]
            if size < 0:
                raise config_error(_mark_where(node), "", "recursive YAML alias",
                                   Got(f"an alias inside its anchor {node.tag}"),
                                   "anchors that do not contain their own aliases")
        elif isinstance(node, yaml.ScalarNode):
            size, height = 1, 1
        else:
            seen[id(node)] = (-1, 0)
            children = [c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode) else node.value
            size, height = 1, 1
            for child in children:
                n, h = self._expanded(child, depth + 1, seen)
                size, height = size + n, max(height, h + 1)
                if size > MAX_YAML_NODES:
                    raise config_error(_mark_where(node), "", "YAML aliases expand too far",
                                       Got(f"more than {MAX_YAML_NODES} nodes"),
                                       f"a document of at most {MAX_YAML_NODES} nodes, aliases counted at each use")
            seen[id(node)] = (size, height)
        if depth + height - 1 > MAX_YAML_DEPTH:
            raise config_error(_mark_where(node), "", "YAML nested too deeply (aliases expanded)",
                               Got(f"more than {MAX_YAML_DEPTH} levels"), f"at most {MAX_YAML_DEPTH} nested levels")
        return size, height

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if isinstance(key, (str, int, float, bool)) and key in seen:
                    raise config_error(f"{key_node.start_mark.name}:{line}", "", f"duplicate key {key!r}", key,
                                       f"each key once per mapping (first at line {seen[key]})")
                if isinstance(key, (str, int, float, bool)):
                    seen[key] = line
        return super().construct_mapping(node, deep=deep)


ConfigYamlLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
ConfigYamlLoader.add_constructor("tag:yaml.org,2002:int", ConfigYamlLoader.construct_yaml_int)


class _NamedText(io.StringIO):
    """In-memory YAML source whose marks carry the file name."""

    def __init__(self, text: str, name: str):
        super().__init__(text)
        self.name = name


def read_yaml(path: str | os.PathLike) -> Any:
    """The document of a YAML file (``ConfigYamlLoader``); ConfigError naming the file on I/O or syntax errors and
    for a file larger than :data:`MAX_YAML_BYTES` (before reading it)."""
    try:
        size = Path(path).stat().st_size
        if size > MAX_YAML_BYTES:
            raise config_error(str(path), "", "configuration file too large", Got(f"{size} bytes"),
                               f"at most {MAX_YAML_BYTES} bytes; put large arrays in layout files "
                               "(probe_local_pos: {file: ...})")
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise config_error(str(path), "", f"cannot read the configuration file ({exc})", str(path),
                           "an existing, readable UTF-8 YAML file") from None
    try:
        return yaml.load(_NamedText(text, str(path)), Loader=ConfigYamlLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if mark is None:
            raise config_error(str(path), "", f"YAML syntax error: {exc.problem}", text[:40], "valid YAML") from None
        lines = text.splitlines() or [""]
        raise config_error(f"{path}:{mark.line + 1}:{mark.column + 1}", "", f"YAML syntax error: {exc.problem}",
                           lines[min(mark.line, len(lines) - 1)], "valid YAML") from None


def load_config(source: str | os.PathLike | Mapping, *, base_dir: str | os.PathLike | None = None) -> SuiteConfig:
    """Validate a configuration file (path, ``file://`` or ``package://``) or an already-parsed mapping.

    Relative paths inside resolve against ``base_dir``, by default the YAML file's folder (the working directory
    for a mapping). Errors name ``<file>:<yaml.path>`` (``<dict>:<yaml.path>`` for a mapping). Runs the
    cross-section checks of :mod:`.suite_checks` and the resource budget of :mod:`.budget`; scene-dependent names
    are left to the suite.
    """
    if isinstance(source, Mapping):
        label, data = "<dict>", source
        base = Path(base_dir) if base_dir is not None else Path.cwd()
    else:
        label = str(source)
        try:
            path = resolve_path(source, None, "file")
        except OptionProblem as exc:
            raise config_error(label, "", exc.problem, exc.got,
                               "an existing YAML file (path relative to the working directory, file:// or "
                               "package://<pkg>/<path>)") from None
        data = read_yaml(path)
        base = Path(base_dir) if base_dir is not None else path.parent
    if not isinstance(data, Mapping):
        raise config_error(label, "", "the configuration is not a mapping", data,
                           "a mapping with suite, robot, materials, objects, sensors")
    if entry_problems(label, data):
        raise combined_error(entry_problems(label, data))
    try:
        config = SuiteConfig.model_validate(data, context={"base_dir": base})
    except ValidationError as exc:
        raise combined_error(problem_lines(exc, SuiteConfig, f"{label}:")) from None
    config._source = label
    for i, sensor in enumerate(config.sensors):
        sensor.located(f"{label}:sensors[{i}]")
    for i, obj in enumerate(config.objects):
        obj.located(f"{label}:objects[{i}]")
    check_suite(config)
    check_budget(config)
    return config


def config_from_python(sensor_class_name: str, /, **options: Any) -> SensorOptions:
    """One sensor's options from Python keywords (the Python API): ``config_from_python("KinematicTaxel",
    name="pad", link="finger", probe_radius=0.002)``. Errors name ``KinematicTaxel(name='pad').<option>``;
    relative paths resolve against the working directory."""
    cls = SENSOR_TYPES.get(sensor_class_name)
    if cls is None:
        raise config_error("sensor", "type", "unknown sensor class", sensor_class_name,
                           ", ".join(SENSOR_TYPES), suggest(sensor_class_name, SENSOR_TYPES, cutoff=0.6))
    try:
        return cls.model_validate(options, context={"base_dir": Path.cwd()})
    except ValidationError as exc:
        raise combined_error(problem_lines(exc, cls, f"{sensor_class_name}(name={options.get('name')!r})")) from None
