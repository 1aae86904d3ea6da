"""Shared helpers for the config tests: write a YAML file, load it, and capture the ConfigError message."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tactile_sim.config import load_config
from tactile_sim.errors import ConfigError

SUITE = {"suite": {"dt": 0.01}}
"""The smallest valid suite section."""

FIRST_SENSOR = {"type": "ContactProbe", "name": "first", "link": "pad"}
"""A valid sensor placed before the one under test, so that errors must name ``sensors[1]``."""


def write_yaml(folder: Path, content: dict | str, name: str = "layout.yaml") -> Path:
    """Write ``content`` (a mapping dumped with PyYAML, or raw YAML text) to ``folder/name``."""
    path = folder / name
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False))
    return path


def config_error_message(path_or_dict, **kwargs) -> str:
    """Load and return the ConfigError message (the test fails if loading succeeds)."""
    with pytest.raises(ConfigError) as info:
        load_config(path_or_dict, **kwargs)
    return str(info.value)


def sensor_error_message(folder: Path, sensor: dict, **suite_settings) -> str:
    """Error message of a config whose second sensor is ``sensor`` (file ``layout.yaml`` in ``folder``)."""
    doc = {"suite": {"dt": 0.01, **suite_settings}, "sensors": [FIRST_SENSOR, sensor]}
    return config_error_message(write_yaml(folder, doc))
