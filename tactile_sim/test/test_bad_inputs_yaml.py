"""YAML that expands or nests without bound is refused by the loader before anything is constructed: alias
expansion counted at each use (bound tested at the bound and one node past it), nesting depth (at the bound and one
level past it, in sequences, mappings and through aliases), recursive anchors; and the same through the command
line, as a subprocess exiting 2 with the file named."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers_config import config_error_message
from tactile_sim.config import loader, read_yaml
from tactile_sim.errors import ConfigError


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


def test_alias_expansion_bound_is_exact(tmp_path, monkeypatch):
    monkeypatch.setattr(loader, "MAX_YAML_NODES", 10_000)
    nodes = lambda copies: 1 + 2 + 1000 + 1 + copies * 1000  # noqa: E731
    assert nodes(8) <= 10_000 < nodes(9)
    assert len(read_yaml(write(tmp_path, expansion_document(8)))["b"]) == 8
    with pytest.raises(ConfigError, match="YAML aliases expand too far"):
        read_yaml(write(tmp_path, expansion_document(9)))


@pytest.mark.parametrize("open_, close", [("[", "]"), ("{a: ", "}"), ("- ", "")])
def test_nesting_bound_is_exact(tmp_path, open_, close):
    depth = loader.MAX_YAML_DEPTH  # every node is a level: the root mapping, each collection, the scalar
    def nested(levels):
        if open_ == "- ":
            return "x:\n" + "".join("  " * i + "- " + ("\n" if i < levels - 1 else "1\n") for i in range(levels))
        return "x: " + open_ * levels + "1" + close * levels + "\n"
    assert read_yaml(write(tmp_path, nested(depth - 2)))["x"] is not None
    path = write(tmp_path, nested(depth - 1))
    with pytest.raises(ConfigError) as info:
        read_yaml(path)
    assert str(info.value).startswith(f"{path}:") and "YAML nested too deeply" in str(info.value)


def test_thousands_of_levels_give_an_error_not_a_recursion_error(tmp_path):
    for text in ("x: " + "[" * 5000 + "]" * 5000, "x: " + "{a: " * 5000 + "1" + "}" * 5000):
        with pytest.raises(ConfigError, match="nested too deeply"):
            read_yaml(write(tmp_path, text))


def test_nesting_through_aliases_counts_the_expanded_depth(tmp_path):
    half = loader.MAX_YAML_DEPTH // 2 + 2
    text = "a: &a " + "[" * half + "1" + "]" * half + "\nb: " + "[" * half + "*a" + "]" * half + "\n"
    with pytest.raises(ConfigError, match=r"nested too deeply \(aliases expanded\)"):
        read_yaml(write(tmp_path, text))


def test_a_recursive_anchor_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="recursive YAML alias"):
        read_yaml(write(tmp_path, "x: &a [1, *a]\n"))


def test_ordinary_aliases_still_work(tmp_path):
    data = read_yaml(write(tmp_path, "a: &r [0.1, 0.2]\nb: *r\n"))
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
