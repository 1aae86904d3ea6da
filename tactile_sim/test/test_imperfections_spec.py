"""Validation of one sensor's imperfection options (docs/models/imperfections.md#imperfections,
docs/models/scene.md#common-options error format)."""

import numpy as np
import pytest
from helpers_imperfections import spec

from tactile_sim.errors import ConfigError
from tactile_sim.imperfections.spec import SensorImperfections

WHERE = "layout.yaml:sensors[2]"


def bad(option_match: str, **options):
    """Assert that the options raise a ConfigError naming where, the option, and an 'allowed' part."""
    options = {"name": "pad", "seed": 1, "dt": 0.01, "n_probes": 2, "where": WHERE, **options}
    with pytest.raises(ConfigError) as info:
        SensorImperfections(**options)
    msg = str(info.value)
    assert msg.startswith(f"{WHERE}.{option_match}:"), msg
    assert "got" in msg and "allowed:" in msg, msg
    return msg


@pytest.mark.parametrize(
    "option, value, fragment",
    [
        ("noise", -0.1, "negative"),
        ("random_walk", float("nan"), "not finite"),
        ("resolution", float("inf"), "not finite"),
        ("bias", [0.0, float("nan")], "not finite at [1]"),
        ("noise", [0.1, -0.2], "negative at [1]"),
        ("noise", [0.1, 0.2, 0.3], "wrong shape (3,)"),
        ("bias", [[0.0, 1.0]], "wrong shape (1, 2)"),
        ("probe_gain", [[1.1, 1.1], [1.2, 1.2]], "wrong shape (2, 2); got [[1.1, 1.1], [1.2, 1.2]];"),  # one line
        ("noise", "abc", "not a number"),
        ("probe_radius_noise", -1e-3, "out of range"),
        ("probe_gain", 0.0, "not positive"),
        ("probe_gain", [1.0, -2.0], "not positive at [1]"),
        ("probe_gain", [1.0, 2.0, 3.0], "wrong shape"),
        ("probe_gain_resample_range", (1.2, 0.8), "out of range"),
        ("probe_gain_resample_range", (0.0, 0.8), "out of range"),
        ("probe_gain_resample_range", (1.0,), "expected a pair"),
        ("dead_taxel_probability", 1.5, "out of range"),
        ("dead_taxel_value_range", (2.0, 1.0), "out of range"),
        ("hysteresis_strength", -0.5, "out of range"),
        ("delay", -0.01, "out of range"),
        ("history_length", -1, "not a non-negative integer"),
        ("history_length", 1.5, "not a non-negative integer"),
        ("seed", -3, "not an integer"),
        ("crosstalk_sigma", -1.0, "out of range"),
    ],
)
def test_value_errors(option, value, fragment):
    msg = bad(option, **{option: value})
    assert fragment in msg, msg


def test_dependent_errors():
    assert "hysteresis_strength > 0" in bad("hysteresis_tau", hysteresis_strength=0.5)
    assert "larger than delay" in bad("jitter", jitter=0.005, delay=0.0)
    assert "not below the evaluation period" in bad("jitter", jitter=0.01, delay=0.02)
    assert "not below the evaluation period" in bad("jitter", jitter=0.02, delay=0.02)
    assert "evaluation period > 0 s" in bad("update_period", dt=0.0)


def test_python_where_default_and_name_errors():
    with pytest.raises(ConfigError, match=r"^sensor 'pad'\.noise: negative"):
        SensorImperfections(name="pad", seed=1, n_probes=1, dt=0.01, noise=-1.0)
    with pytest.raises(ConfigError, match=r"^KinematicTaxel\(name='pad'\)\.bias"):
        SensorImperfections(name="pad", seed=1, n_probes=1, dt=0.01, where="KinematicTaxel(name='pad')", bias=np.nan)
    with pytest.raises(ConfigError, match="name"):
        SensorImperfections(name="", seed=1, n_probes=1, dt=0.01)


def test_per_channel_mapping_and_scalars():
    n = 2
    s = spec("ft", n, channels=6, noise=np.arange(12.0), bias=0.5)
    mapped = s.per_channel("noise")
    assert mapped.shape == (2, 6)
    assert mapped[1].tolist() == [3, 4, 5, 9, 10, 11]  # probe 1: force xyz, then torque xyz
    assert s.per_channel("bias").tolist() == [[0.5] * 6] * 2
    d = spec("d", 2, channels=3, noise=np.arange(6.0))
    assert d.per_channel("noise").tolist() == [[0, 1, 2], [3, 4, 5]]


def test_layout_and_defaults():
    s = spec("g", 6, layout_shape=(2, 3), probe_gain=np.ones((2, 3)))
    assert s.layout_shape == (2, 3) and s.probe_gain.shape == (6,)
    assert s.active.all() and s.delay_steps == 0 and s.kernel is None
    with pytest.raises(ConfigError, match="layout_shape"):
        spec("g", 6, layout_shape=(4, 2))
    with pytest.raises(ConfigError, match="active"):
        spec("g", 3, active=[True, False])
    assert spec("d", 1, delay=0.05).delay_steps == 5
