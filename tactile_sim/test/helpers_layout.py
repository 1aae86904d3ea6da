"""Shared assertions for the layout tests."""

import pytest

from tactile_sim.errors import ConfigError


def raises_config_error(fn, *parts: str) -> str:
    """Call ``fn`` expecting a ConfigError whose message contains every one of ``parts`` in order; return it."""
    with pytest.raises(ConfigError) as info:
        fn()
    msg = str(info.value)
    pos = 0
    for part in parts:
        at = msg.find(part, pos)
        assert at >= 0, f"{part!r} not found (in order) in {msg!r}"
        pos = at + len(part)
    return msg
