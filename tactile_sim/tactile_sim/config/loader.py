"""Load and validate configurations: YAML files (or dicts) into :class:`SuiteConfig`, Python keyword options
into one sensor's option model. Every problem becomes one :class:`ConfigError` (docs/models/scene.md#common-options
format)."""

from __future__ import annotations

import io
import math
import numbers
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..constants import FLOAT32_MAX
from ..errors import ConfigError
from .budget import check_budget, entry_problems
from .errors import Got, OptionProblem, combined_error, config_error, format_problem, join_location, suggest
from .paths import resolve_path
from .schema import RobotConfig, SuiteConfig
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


def _mark_where(mark: yaml.Mark) -> str:
    """``file:line:column`` (1-based) of a place in a YAML document."""
    return f"{mark.name}:{mark.line + 1}:{mark.column + 1}"


def _too_deep(where: str, how: str = "") -> ConfigError:
    return config_error(where, "", f"YAML nested too deeply{how}", Got(f"more than {MAX_YAML_DEPTH} levels"),
                        f"at most {MAX_YAML_DEPTH} nested levels")


class ConfigConstructor(yaml.constructor.SafeConstructor):
    """The safe constructor, refusing before anything is constructed nesting deeper than :data:`MAX_YAML_DEPTH` and
    documents whose aliases expand beyond :data:`MAX_YAML_NODES` nodes (a "billion laughs" document is a few lines
    long), refusing duplicate keys in a mapping (the later one would otherwise silently win), and turning a value its
    tag cannot make (``2001-13-01``, ``!!float abc``, an integer of too many digits) into a ConfigError at its line."""

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep=deep)
        except ConfigError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:
            kind = node.tag.removeprefix("tag:yaml.org,2002:")
            value = node.value if isinstance(node, yaml.ScalarNode) else f"a {node.id}"
            raise config_error(_mark_where(node.start_mark), "", f"not a valid YAML {kind} ({exc})",
                               Got(repr(value[:40] + "..." if len(value) > 40 else value)),
                               f"a value of type {kind} (e.g. a date 2001-12-31, a number, true or false)") from None

    def construct_yaml_int(self, node):
        try:
            return super().construct_yaml_int(node)
        except ValueError as exc:
            if len(node.value) <= sys.get_int_max_str_digits():
                raise
            raise config_error(_mark_where(node.start_mark), "", "integer too long",
                               Got(f"{len(node.value)} characters"), f"an integer Python can read ({exc})") from None

    def construct_document(self, node):
        self._expanded(node, 1, {})
        return super().construct_document(node)

    def _expanded(self, node: yaml.Node, depth: int, seen: dict[int, tuple[int, int]]) -> tuple[int, int]:
        """(nodes, height) of ``node`` at nesting level ``depth`` with every alias expanded; ConfigError when over
        the bounds. A node is walked at its first use, which is its anchor, so the walk goes no deeper than the
        document's own nesting (refused past :data:`MAX_YAML_DEPTH`); deeper through aliases shows in the height."""
        if depth > MAX_YAML_DEPTH:
            raise _too_deep(_mark_where(node.start_mark))
        if id(node) in seen:
            size, height = seen[id(node)]
            if size < 0:
                raise config_error(_mark_where(node.start_mark), "", "recursive YAML alias",
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
                    raise config_error(_mark_where(node.start_mark), "", "YAML aliases expand too far",
                                       Got(f"more than {MAX_YAML_NODES} nodes"),
                                       f"a document of at most {MAX_YAML_NODES} nodes, aliases counted at each use")
            seen[id(node)] = (size, height)
        if depth + height - 1 > MAX_YAML_DEPTH:
            raise _too_deep(_mark_where(node.start_mark), " (aliases expanded)")
        return size, height

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # << : merged keys; the mapping's own win
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if isinstance(key, (str, int, float, bool)) and key in seen:
                    raise config_error(f"{key_node.start_mark.name}:{line}", "", f"duplicate key {key!r}", key,
                                       f"each key once per mapping (first at line {seen[key]})")
                if isinstance(key, (str, int, float, bool)):
                    seen[key] = line
        return super().construct_mapping(node, deep=deep)


ConfigConstructor.add_constructor("tag:yaml.org,2002:int", ConfigConstructor.construct_yaml_int)


class ConfigResolver(yaml.resolver.Resolver):
    """YAML 1.1's implicit tags, and exponent floats without a dot (``1e-3``, YAML 1.2) read as floats."""


ConfigResolver.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


class ConfigYamlLoader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, yaml.composer.Composer,
                       ConfigConstructor, ConfigResolver):
    """The configuration loader in Python (:class:`ConfigConstructor`, :class:`ConfigResolver`); it refuses nesting
    deeper than :data:`MAX_YAML_DEPTH` while composing, before its recursion could reach Python's limit."""

    def __init__(self, stream):
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        ConfigConstructor.__init__(self)
        ConfigResolver.__init__(self)
        self._depth = 0

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _too_deep(_mark_where(self.peek_event().start_mark))
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


if yaml.__with_libyaml__:
    class ConfigYamlCLoader(yaml.cyaml.CParser, ConfigConstructor, ConfigResolver):
        """The configuration loader on libyaml's parser (about 5× faster than :class:`ConfigYamlLoader`, which it
        reads as): libyaml composes at most 1000 levels (a deeper document is a syntax error it raises, refused as
        too deep by :func:`read_yaml`), and the constructor refuses the rest before constructing anything."""

        def __init__(self, stream):
            yaml.cyaml.CParser.__init__(self, stream)
            ConfigConstructor.__init__(self)
            ConfigResolver.__init__(self)

    LOADERS = (ConfigYamlCLoader, ConfigYamlLoader)
else:
    LOADERS = (ConfigYamlLoader,)
"""The configuration loaders available, the one :func:`read_yaml` uses first (libyaml's when PyYAML has it)."""

LIBYAML_DEPTH_PROBLEM = "exceeded maximum nesting depth"
"""The problem libyaml's scanner reports past its nesting limit of 1000 levels."""


class _NamedText(io.StringIO):
    """In-memory YAML source whose marks carry the file name."""

    def __init__(self, text: str, name: str):
        super().__init__(text)
        self.name = name


def read_yaml(path: str | os.PathLike, loader: type | None = None) -> Any:
    """The document of a YAML file (``loader``, by default the first of :data:`LOADERS`); ConfigError naming the file
    on I/O or syntax errors, for characters YAML does not allow and for a file larger than :data:`MAX_YAML_BYTES`
    (before reading it)."""
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
        return yaml.load(_NamedText(text, str(path)), Loader=loader or LOADERS[0])
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (control characters, NUL)
        # the first such character (libyaml counts its position in UTF-8 bytes, Python's reader in characters)
        at = text.find(chr(exc.character)) if isinstance(exc.character, int) else -1
        at = exc.position if at < 0 else at
        line = text.count("\n", 0, at)
        column = at - (text.rfind("\n", 0, at) + 1)
        raise config_error(f"{path}:{line + 1}:{column + 1}", "", "character not allowed in YAML",
                           Got(f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)),
                           "printable characters, tabs and line breaks (write others as escapes in double quotes, "
                           "e.g. \"\\x07\")") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if mark is None:
            raise config_error(str(path), "", f"YAML syntax error: {exc.problem}", text[:40], "valid YAML") from None
        where = _mark_where(mark)  # the mark's name is the path (_NamedText)
        if exc.problem == LIBYAML_DEPTH_PROBLEM:
            raise _too_deep(where) from None
        lines = text.splitlines() or [""]
        raise config_error(where, "", f"YAML syntax error: {exc.problem}", lines[min(mark.line, len(lines) - 1)],
                           "valid YAML") from None


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
    problems = entry_problems(label, data)
    if problems:
        raise combined_error(problems)
    try:
        config = SuiteConfig.model_validate(data, context={"base_dir": base})
    except ValidationError as exc:
        raise combined_error(problem_lines(exc, SuiteConfig, f"{label}:")) from None
    problems = numbers_beyond_float32(label, data)  # after the options' own ranges, which say more
    if problems:
        raise combined_error(problems)
    config._source = label
    for i, sensor in enumerate(config.sensors):
        sensor.located(f"{label}:sensors[{i}]")
    for i, obj in enumerate(config.objects):
        obj.located(f"{label}:objects[{i}]")
    check_suite(config)
    check_budget(config)
    return config


def numbers_beyond_float32(label: str, data: Any, limit: int = 5) -> list[str]:
    """Problem lines (at most ``limit``) for the numbers of the raw configuration ``data`` (``label``: its file)
    beyond float32's range: finite in YAML's float64, they would be inf in the sensor models (a non-finite one is
    left to the option's own check)."""
    lines: list[str] = []
    stack: list[tuple[str, Any]] = [("", data)]
    while stack and len(lines) < limit:
        where, value = stack.pop()
        if isinstance(value, Mapping):
            stack.extend((join_location(where, str(k)), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(value))))
        elif isinstance(value, numbers.Real) and not isinstance(value, bool) and abs(value) > FLOAT32_MAX and \
                (isinstance(value, numbers.Integral) or math.isfinite(value)):
            lines.append(format_problem(f"{label}:{where}", "", "beyond float32's range (inf in the sensor models)",
                                        value, f"a number at most {FLOAT32_MAX:.8g} in size"))
    return lines


def with_robot_file(config: SuiteConfig, urdf: str | os.PathLike, option: str = "--robot") -> SuiteConfig:
    """``config`` with the URDF file ``urdf`` (a command line's ``option``: relative to the working directory,
    file:// or package://) in place of its ``robot.urdf``, the configuration's search_paths and inertia_check kept:
    the robot is then read as if the YAML named it (mesh paths relative to its folder, errors naming it).
    ConfigError naming ``option`` when it is not an existing regular file."""
    try:
        path = resolve_path(urdf, None, "file")
    except OptionProblem as exc:
        raise config_error(option, "", exc.problem, exc.got, "an existing URDF file (path relative to the working "
                                                             "directory, file:// or package://<pkg>/<path>)") from None
    robot = config.robot.model_copy(update={"urdf": path}) if config.robot is not None else RobotConfig(urdf=path)
    return config.model_copy(update={"robot": robot})


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
