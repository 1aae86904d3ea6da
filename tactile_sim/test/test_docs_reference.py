"""The option reference and the JSON Schema are what the option models generate, and the schema accepts and
refuses what the loader accepts and refuses."""

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tactile_sim.config import read_yaml
from tactile_sim.config.reference import json_schema_text, markdown_reference, missing_docs, option_rows
from tactile_sim.config.sensor_options import KinematicTaxel

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(__file__).resolve().parents[1] / "tactile_sim"
SHIPPED_SCHEMA = PACKAGE / "data" / "schema" / "sensors.schema.json"
REGENERATE = "python -m tactile_sim.config.reference docs/reference/options.md " \
             "tactile_sim/tactile_sim/data/schema/sensors.schema.json"


def test_every_option_has_a_unit_meaning_and_allowed_values():
    assert missing_docs() == []


def test_checked_in_reference_page_is_what_the_models_generate():
    page = REPO / "docs" / "reference" / "options.md"
    if not page.is_file():
        pytest.skip(f"{page} not found (tests run from an installed copy)")
    assert page.read_text(encoding="utf-8") == markdown_reference(), f"regenerate: {REGENERATE}"


def test_shipped_schema_is_what_the_models_generate():
    assert SHIPPED_SCHEMA.read_text(encoding="utf-8") == json_schema_text(), f"regenerate: {REGENERATE}"


def test_rows_carry_defaults_ranges_and_units_from_the_model():
    rows = {r[0]: r for r in option_rows(KinematicTaxel)}
    assert rows["normal_exponent"][1:5] == ("number", "1.0", "", ">= 1")
    assert rows["normal_stiffness"][2:5] == ("1000.0", "N/m^e", ">= 0")
    assert rows["link"][2] == "required"
    assert rows["contact_depth_query"][4] == "sdf, raycast or exact"


@pytest.fixture(scope="module")
def validator():
    return jsonschema.Draft202012Validator(json.loads(SHIPPED_SCHEMA.read_text(encoding="utf-8")))


def test_schema_accepts_the_shipped_configurations(validator):
    configs = sorted((PACKAGE.parent / "config").glob("*.yaml"))
    checked = 0
    for path in configs:
        data = read_yaml(path)
        if isinstance(data, dict) and "sensors" in data:
            assert [e.message for e in validator.iter_errors(data)] == [], path
            checked += 1
    assert checked >= 1


@pytest.mark.parametrize("sensor, key", [
    ({"type": "KinematicTaxel", "name": "a", "link": "l", "normal_stiffnes": 1.0}, "normal_stiffnes"),
    ({"type": "KinematicTaxel", "name": "a", "link": "l", "normal_exponent": 0.5}, "normal_exponent"),
    ({"type": "KinematicTaxel", "name": "a"}, "link"),
    ({"type": "Kinematic", "name": "a", "link": "l"}, "type"),
    ({"type": "ContactProbe", "name": "a", "link": "l", "pos_offset": [0, 0]}, "pos_offset"),
])
def test_schema_refuses_what_the_loader_refuses(validator, sensor, key):
    from tactile_sim.config import load_config
    from tactile_sim.errors import ConfigError

    data = {"suite": {"dt": 0.01}, "sensors": [sensor]}
    with pytest.raises(ConfigError):
        load_config(data)
    assert list(validator.iter_errors(data)), f"the schema accepts a bad {key}"


def test_schema_command_prints_the_shipped_schema_and_the_reference(tmp_path):
    out = subprocess.run([sys.executable, "-m", "tactile_sim", "schema"], capture_output=True, text=True, check=True)
    assert out.stdout == json_schema_text()
    target = tmp_path / "options.md"
    subprocess.run([sys.executable, "-m", "tactile_sim", "schema", "--markdown", "-o", str(target)], check=True)
    assert target.read_text(encoding="utf-8") == markdown_reference()
    bad = subprocess.run([sys.executable, "-m", "tactile_sim", "schema", "-o", str(tmp_path / "no" / "x.json")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "cannot write" in bad.stderr


def test_message_reference_lists_every_field_of_every_message():
    page = REPO / "docs" / "reference" / "messages.md"
    if not page.is_file():
        pytest.skip(f"{page} not found (tests run from an installed copy)")
    text = page.read_text(encoding="utf-8")
    import re

    for msg in sorted((PACKAGE / "data" / "msg").glob("*.msg")):
        section = text.split(f"## {msg.stem}\n", 1)
        assert len(section) == 2, f"no section for {msg.stem}"
        body = section[1].split("\n## ", 1)[0]
        for line in msg.read_text(encoding="utf-8").splitlines():
            m = re.match(r"^([\w/]+(?:\[\])?)\s+(\w+)\s*(?:#.*)?$", line)
            if m:
                assert f"| `{m.group(2)}` | `{m.group(1)}` |" in body, f"{msg.stem}.{m.group(2)} is not documented"
