"""YAML that expands or nests without bound is refused by the loader before anything is constructed: alias
expansion counted at each use (bound tested at the bound and one node past it), nesting depth (at the bound and one
level past it, in sequences, mappings and through aliases), recursive anchors; and the same through the command
line, as a subprocess exiting 2 with the file named. Characters YAML does not allow and values their tag cannot make
(an impossible date, ``!!float abc``) are ConfigErrors at their line and column. Each case runs with both loaders
(libyaml's parser and PyYAML's Python one), which read every document alike. A number beyond float32's range is
refused naming its YAML path."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from helpers_config import config_error_message
from helpers_scenes import pad_object
from tactile_sim.config import load_config, loader, read_yaml
from tactile_sim.errors import ConfigError


@pytest.fixture(params=loader.LOADERS, ids=lambda cls: cls.__name__)
def yaml_loader(request):
    """Each configuration loader (:data:`~tactile_sim.config.loader.LOADERS`)."""
    return request.param


def write(tmp_path, text: str, name: str = "c.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def laughs(levels: int, key: str = "x") -> str:
    """A "billion laughs" document: level i lists the previous level 9 times (9**levels scalars)."""
    lines = ["suite: {dt: 0.01}", f"{key}:", "  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("key", ["x", "sensors"])
def test_billion_laughs_are_refused_under_any_key(tmp_path, key):
    path = write(tmp_path, laughs(10, key))
    msg = config_error_message(path)
    assert msg.startswith(f"{path}:") and "YAML aliases expand too far" in msg
    assert f"at most {loader.MAX_YAML_NODES} nodes" in msg


def expansion_document(copies: int, size: int = 999) -> str:
    """Nodes after expansion: root mapping, 2 keys, the anchored list (1 + size) and a list of ``copies`` aliases
    (1 + copies · (1 + size))."""
    return (f"a: &a [{', '.join(['0'] * size)}]\n" + f"b: [{', '.join(['*a'] * copies)}]\n")


def test_alias_expansion_bound_is_exact(tmp_path, monkeypatch, yaml_loader):
    monkeypatch.setattr(loader, "MAX_YAML_NODES", 10_000)
    nodes = lambda copies: 1 + 2 + 1000 + 1 + copies * 1000  # noqa: E731
    assert nodes(8) <= 10_000 < nodes(9)
    assert len(read_yaml(write(tmp_path, expansion_document(8)), yaml_loader)["b"]) == 8
    with pytest.raises(ConfigError, match="YAML aliases expand too far"):
        read_yaml(write(tmp_path, expansion_document(9)), yaml_loader)


@pytest.mark.parametrize("open_, close", [("[", "]"), ("{a: ", "}"), ("- ", "")])
def test_nesting_bound_is_exact(tmp_path, open_, close, yaml_loader):
    depth = loader.MAX_YAML_DEPTH  # every node is a level: the root mapping, each collection, the scalar
    def nested(levels):
        if open_ == "- ":
            return "x:\n" + "".join("  " * i + "- " + ("\n" if i < levels - 1 else "1\n") for i in range(levels))
        return "x: " + open_ * levels + "1" + close * levels + "\n"
    assert read_yaml(write(tmp_path, nested(depth - 2)), yaml_loader)["x"] is not None
    path = write(tmp_path, nested(depth - 1))
    with pytest.raises(ConfigError) as info:
        read_yaml(path, yaml_loader)
    assert str(info.value).startswith(f"{path}:") and "YAML nested too deeply" in str(info.value)


def test_thousands_of_levels_give_an_error_not_a_recursion_error(tmp_path, yaml_loader):
    # 1500 block levels: past libyaml's own limit of 1000
    block = "x:\n" + "".join("  " * i + "- " + ("\n" if i < 1499 else "1\n") for i in range(1500))
    for text in ("x: " + "[" * 5000 + "]" * 5000, "x: " + "{a: " * 5000 + "1" + "}" * 5000, block):
        with pytest.raises(ConfigError, match="nested too deeply"):
            read_yaml(write(tmp_path, text), yaml_loader)


def test_nesting_through_aliases_counts_the_expanded_depth(tmp_path, yaml_loader):
    half = loader.MAX_YAML_DEPTH // 2 + 2
    text = "a: &a " + "[" * half + "1" + "]" * half + "\nb: " + "[" * half + "*a" + "]" * half + "\n"
    with pytest.raises(ConfigError, match=r"nested too deeply \(aliases expanded\)"):
        read_yaml(write(tmp_path, text), yaml_loader)


def test_a_recursive_anchor_is_refused(tmp_path, yaml_loader):
    with pytest.raises(ConfigError, match="recursive YAML alias"):
        read_yaml(write(tmp_path, "x: &a [1, *a]\n"), yaml_loader)


def test_ordinary_aliases_still_work(tmp_path, yaml_loader):
    data = read_yaml(write(tmp_path, "a: &r [0.1, 0.2]\nb: *r\n"), yaml_loader)
    assert data["b"] == [0.1, 0.2]


def test_the_command_line_exits_2_naming_the_file(tmp_path):
    path = write(tmp_path, laughs(10))
    proc = subprocess.run([sys.executable, "-m", "tactile_sim", "replay", str(tmp_path / "none.mcap"), "--config",
                           str(path), "-o", str(tmp_path / "out.mcap"), "--no-progress"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert f"error: {path}:" in proc.stderr and "YAML aliases expand too far" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_integer_python_cannot_read_is_a_config_error(tmp_path):
    path = write(tmp_path, "suite: {dt: 0.01, n_envs: " + "9" * 5000 + "}\n")
    msg = config_error_message(path)
    assert msg.startswith(f"{path}:1:") and "integer too long; got 5000 characters" in msg


def test_a_configuration_file_over_the_size_cap_is_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(loader, "MAX_YAML_BYTES", 100)
    assert read_yaml(write(tmp_path, "a: " + "1" * 90 + "\n"))  # 94 bytes
    path = write(tmp_path, "a: " + "1" * 100 + "\n")
    with pytest.raises(ConfigError, match=rf"^{path}: configuration file too large; got 104 bytes; allowed: at most "):
        read_yaml(path)


@pytest.mark.parametrize("open_, close, column", [
    ("[", "]", 4 + 63),  # level 1 is the root mapping, level 2 x's value at column 4, level 65 the 64th "["
    ("{a: ", "}", 4 + 4 * 62 + 1),  # level 65 is the key "a" of the 63rd "{", at level 64
])
def test_both_loaders_refuse_too_deep_nesting_at_the_same_place(tmp_path, open_, close, column):
    assert loader.MAX_YAML_DEPTH == 64
    levels = loader.MAX_YAML_DEPTH + 5
    path = write(tmp_path, "a: 1\nx: " + open_ * levels + "1" + close * levels)
    messages = set()
    for cls in loader.LOADERS:
        with pytest.raises(ConfigError) as info:
            read_yaml(path, cls)
        messages.add(str(info.value))
    assert len(messages) == 1, messages
    assert messages.pop().startswith(f"{path}:2:{column}: YAML nested too deeply; got more than")


@pytest.mark.parametrize("text, line, column, code", [
    ('suite: {dt: 0.01}\nx: "a\x07b"\n', 2, 6, 0x07),
    ("x: 1\ny: \x00\n", 2, 4, 0x00),
    ("# \u00e9t\u00e9\nname: \u00e9\u00e9\x1b\n", 2, 9, 0x1B),  # columns count characters, not UTF-8 bytes
    ("a: [1, 2]\nb: \ufffe\n", 2, 4, 0xFFFE),
])
def test_a_character_yaml_does_not_allow_is_a_config_error_at_its_place(tmp_path, yaml_loader, text, line, column,
                                                                       code):
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_yaml(path, yaml_loader)
    assert str(info.value).startswith(f"{path}:{line}:{column}: character not allowed in YAML; got #x{code:04x}")


@pytest.mark.parametrize("value, kind", [
    ("2001-13-01", "timestamp"), ("2001-02-30 10:00:00", "timestamp"), ("!!timestamp abc", "timestamp"),
    ("!!float abc", "float"), ("!!int abc", "int"), ("!!int 1.5", "int"), ("!!bool abc", "bool"),
])
def test_a_value_its_tag_cannot_make_is_a_config_error_at_its_place(tmp_path, yaml_loader, value, kind):
    path = write(tmp_path, f"suite: {{dt: 0.01}}\nsensors:\n  - name: {value}\n")
    with pytest.raises(ConfigError) as info:
        read_yaml(path, yaml_loader)
    assert str(info.value).startswith(f"{path}:3:11: not a valid YAML {kind} (")
    assert "; allowed: a value of type" in str(info.value)


def test_the_command_line_check_names_a_control_character_without_a_traceback(tmp_path):
    path = write(tmp_path, "suite: {dt: 0.01}\nsensors: []\nx: \x07\n")
    proc = subprocess.run([sys.executable, "-m", "tactile_sim", "check", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert f"{path}:3:4: character not allowed in YAML" in proc.stderr and "Traceback" not in proc.stderr


SCALARS = r"""
floats: [1e-3, -2E+5, 1.5, .5, 6., +.inf, -.Inf, .NaN, 1_000.5, 190:20:30.15]
ints: [0, -7, 0x1f, 0o17, 017, 0b101, 1_000, 190:20:30, +12]
bools: [yes, No, on, OFF, true, False, y, n]
nulls: [~, null, Null, ]
strings: ["quoted\n\x41\u00e9", 'single ''q''', plain text, 0o9, 1e, "1e3", "", 12:30 pm, é]
dates: [2001-12-31, 2001-12-14t21:59:43.10-05:00, 2001-12-14 21:59:43.10 -5, 2002-12-14]
binary: !!binary aGVsbG8=
block: |
  two
   lines
folded: >
  one
  line
anchor: &base {a: 1, b: [2, 3]}
merged: {<<: *base, c: 4}
merged_list: {<<: [*base, {d: 5}], a: 0}
alias: *base
"""


def documents_equal(a, b) -> bool:
    """Equality of two read documents, taking NaN as equal to NaN and types as part of a value."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(documents_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(documents_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def random_document(rng, depth: int = 0):
    """A random value of nested mappings, sequences, numbers, strings with YAML's special characters, bools, None."""
    kind = rng.integers(0, 6 if depth < 4 else 4)
    if kind == 0:
        return [float(rng.normal() * 10.0 ** rng.integers(-8, 9)), int(rng.integers(-10**9, 10**9))][rng.integers(2)]
    if kind == 1:
        return "".join(rng.choice(list("ab:#-[]{},&*!|>'\" %@`é\t xyz019.")) for _ in range(rng.integers(0, 9)))
    if kind in (2, 3):
        return [None, True, False][rng.integers(0, 3)] if kind == 2 else str(rng.integers(-99, 99)) + ":30"
    if kind == 4:
        return [random_document(rng, depth + 1) for _ in range(rng.integers(0, 5))]
    return {f"k{i}": random_document(rng, depth + 1) for i in range(rng.integers(0, 5))}


def test_both_loaders_read_every_document_alike(tmp_path):
    import numpy as np

    from tactile_sim.config.paths import package_roots

    sources = sorted((package_roots("tactile_sim")[0] / "config").glob("*.yaml"))
    assert sources, "the package's configuration files"
    sources.append(write(tmp_path, SCALARS, "scalars.yaml"))
    rng = np.random.default_rng(7)
    for i in range(60):
        data = {"doc": random_document(rng)}
        text = yaml.safe_dump(data, default_flow_style=[None, False, True][i % 3], allow_unicode=i % 2 == 0)
        sources.append(write(tmp_path, text, f"random_{i}.yaml"))
        assert documents_equal(read_yaml(sources[-1]), data)
    for path in sources:
        read = [read_yaml(path, cls) for cls in loader.LOADERS]
        assert all(documents_equal(read[0], r) for r in read[1:]), path


def test_merge_keys_merge_and_own_keys_win(tmp_path, yaml_loader):
    data = read_yaml(write(tmp_path, SCALARS), yaml_loader)
    assert data["merged"] == {"a": 1, "b": [2, 3], "c": 4}
    assert data["merged_list"] == {"a": 0, "b": [2, 3], "d": 5}
    assert data["floats"][0] == 1e-3 and data["ints"][2] == 31 and data["bools"][:2] == [True, False]
    path = write(tmp_path, "base: &b {a: 1}\nx: {<<: *b, a: 2, a: 3}\n", "dup.yaml")
    with pytest.raises(ConfigError, match=r"dup.yaml:2: duplicate key 'a'"):
        read_yaml(path, yaml_loader)


def pad_config(**sensor) -> dict:
    return {"suite": {"dt": 0.01}, "objects": [pad_object()],
            "sensors": [{"type": "KinematicTaxel", "name": "skin", "link": "pad",
                         "probe_local_pos": [[0.0, 0.0, 0.01], [0.01, 0.0, 0.01]], **sensor}]}


@pytest.mark.parametrize("sensor, where, got", [
    ({"normal_stiffness": 1e300}, "sensors[0].normal_stiffness", "1e+300"),
    ({"normal_stiffness": 10**39}, "sensors[0].normal_stiffness", str(10**39)),
    ({"probe_local_pos": [[0.0, 0.0, 0.01], [0.01, -4e38, 0.01]]}, "sensors[0].probe_local_pos[1][1]", "-4e+38"),
    ({"euler_offset": [0.0, 1e300, 0.0]}, "sensors[0].euler_offset[1]", "1e+300"),
])
def test_a_number_beyond_float32_is_refused_naming_its_yaml_path(tmp_path, sensor, where, got):
    """Finite in YAML's float64 but inf in a float32 sensor model: refused, in a file and in a mapping alike."""
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(pad_config(**sensor)))
    for source, label in ((path, str(path)), (pad_config(**sensor), "<dict>")):
        message = config_error_message(source)
        assert message == (f"{label}:{where}: beyond float32's range (inf in the sensor models); got {got}; "
                           "allowed: a number at most 3.4028235e+38 in size"), message


def test_numbers_up_to_float32s_largest_are_left_to_their_options():
    message = config_error_message(pad_config(normal_stiffness=-3.4e38))
    assert "normal_stiffness" in message and "float32" not in message  # the option's own rule (> 0) answers
    load_config(pad_config(normal_stiffness=3.4e38))
