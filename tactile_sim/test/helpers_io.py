"""Shared helpers of the io tests: sample readings, field-by-field equality, random messages from a type tree."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from rosbags.typesys.base import Nodetype

from tactile_sim.io.readings import AirTimes, LinkContactReading, TaxelReading, ThermalReading
from tactile_sim.io.wire_message import WireMessage

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "uint8": (0, 2**8 - 1),
    "byte": (0, 2**7 - 1),  # an octet; rosbags packs a scalar byte as signed, so stay in the common range
    "char": (0, 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}


def _random_base(base: str, rng: np.random.Generator, count: int | None) -> Any:
    """One random primitive value (count None) or a numpy array / list of ``count`` values."""
    n = 1 if count is None else count
    if base == "string":
        values = ["".join(rng.choice(list("abcxyz_/ 09é"), size=int(rng.integers(0, 9)))) for _ in range(n)]
        return values[0] if count is None else values
    if base == "bool":
        values = rng.random(n) < 0.5
    elif base in ("float32", "float64"):
        values = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)).astype(base)
    else:
        low, high = _INT_RANGES[base]
        values = rng.integers(low, high, size=n, endpoint=True, dtype=np.uint64 if base == "uint64" else np.int64)
        values = values.astype({"byte": "uint8", "char": "uint8"}.get(base, base))
    return values if count is not None else values[0].item()


def random_message(store: Any, typename: str, rng: np.random.Generator) -> Any:
    """A message of ``typename`` with every field random (sequences of 0–4 elements), built from the store's
    parse tree alone (independent of the library's defaults)."""
    fields = {}
    for name, (kind, arg) in store.fielddefs[typename][1]:
        if kind == Nodetype.BASE:
            fields[name] = _random_base(arg[0], rng, None)
        elif kind == Nodetype.NAME:
            fields[name] = random_message(store, arg, rng)
        else:
            (subkind, subarg), length = arg
            count = length if kind == Nodetype.ARRAY else int(rng.integers(0, 5))
            if subkind == Nodetype.BASE:
                fields[name] = _random_base(subarg[0], rng, count)
            else:
                fields[name] = [random_message(store, subarg, rng) for _ in range(count)]
    return store.types[typename](**fields)


def assert_messages_equal(a: Any, b: Any, path: str = "msg") -> None:
    """Deep equality of two message objects (arrays by dtype and value, NaN equal to NaN); a WireMessage compares
    as its rosbags message."""
    a, b = (x.message if isinstance(x, WireMessage) else x for x in (a, b))
    if dataclasses.is_dataclass(a):
        assert type(a).__name__ == type(b).__name__, path
        for f in dataclasses.fields(a):
            assert_messages_equal(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, path
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), path
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_messages_equal(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and np.isnan(a):
        assert isinstance(b, float) and np.isnan(b), path
    else:
        assert type(a) is type(b) and a == b, f"{path}: {a!r} != {b!r}"


def assert_readings_equal(a: Any, b: Any) -> None:
    """Field-by-field equality of two readings: same types, arrays with equal dtype, shape and values (NaN = NaN)."""
    assert type(a) is type(b)
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, dict):
            assert set(x) == set(y), f.name
            for key in x:
                assert_readings_equal_values(x[key], y[key], f"{f.name}[{key!r}]")
        else:
            assert_readings_equal_values(x, y, f.name)


def assert_readings_equal_values(x: Any, y: Any, name: str) -> None:
    if isinstance(x, np.ndarray):
        assert isinstance(y, np.ndarray) and x.dtype == y.dtype and x.shape == y.shape, name
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name
    else:
        assert type(x) is type(y) and x == y, f"{name}: {x!r} != {y!r}"


def sample_taxel_reading(sensor_type: str = "KinematicTaxel", *, rows: int = 2, cols: int = 3, seed: int = 0,
                         **overrides: Any) -> TaxelReading:
    """A grid reading with random float32 geometry, one filler taxel and the channels of ``sensor_type``."""
    rng = np.random.default_rng(seed)
    n = rows * cols
    radii = rng.uniform(0.001, 0.01, n).astype(np.float32)
    radii[1] = 0.0
    vec = lambda: rng.standard_normal((n, 3)).astype(np.float32)  # noqa: E731
    scalar = lambda: rng.uniform(0.0, 0.02, n).astype(np.float32)  # noqa: E731
    channels = {
        "ContactProbe": lambda: {"contact": rng.random(n) < 0.5},
        "ContactDepthProbe": lambda: {"depth": scalar()},
        "KinematicTaxel": lambda: {"force": vec(), "torque": vec()},
        "ElastomerTaxel": lambda: {"displacement": vec()},
        "ProximityTaxel": lambda: {"force": vec(), "torque": vec()},
        "SurfaceDistanceProbe": lambda: {"distance": scalar(), "nearest_points": vec()},
    }[sensor_type]()
    fields = dict(
        sensor_name=f"{sensor_type.lower()}_pad",
        sensor_type=sensor_type,
        frame_id="finger_link",
        stamp=12.345,
        rows=rows,
        cols=cols,
        positions=vec(),
        normals=vec(),
        radii=radii,
        channels=channels,
        valid=True,
        ground_truth=False,
        world_frame_id="world" if "nearest_points" in channels else "",
    )
    fields.update(overrides)
    return TaxelReading(**fields)


def sample_thermal_reading(shape: tuple[int, int, int] = (3, 2, 4), **overrides: Any) -> ThermalReading:
    """A thermal reading with distinct temperatures per cell and two lumped bodies."""
    rng = np.random.default_rng(1)
    fields = dict(
        sensor_name="palm_thermal",
        frame_id="palm_link",
        stamp=3.25,
        origin=np.array([-0.05, -0.04, 0.0]),
        cell_size=np.array([0.1 / shape[0], 0.08 / shape[1], 0.02 / shape[2]]),
        temperatures=rng.uniform(20.0, 80.0, shape).astype(np.float32),
        valid=True,
        ground_truth=True,
        link_names=("cup", "table"),
        link_temperatures=np.array([55.5, 21.0], np.float32),
    )
    fields.update(overrides)
    return ThermalReading(**fields)


def sample_link_contact_reading(n_filters: int = 2, **overrides: Any) -> LinkContactReading:
    """A ContactSensor body reading with F filters, contact points (one filter without contact: NaN) and timers."""
    rng = np.random.default_rng(2)
    positions = rng.standard_normal((n_filters, 3))
    if n_filters:
        positions[-1] = np.nan
    fields = dict(
        sensor_name="feet",
        body_name="left_foot",
        frame_id="left_foot",
        stamp=7.5,
        force=rng.standard_normal(3),
        torque=rng.standard_normal(3),
        normal_force=rng.standard_normal(3),
        friction_force=rng.standard_normal(3),
        filter_names=tuple(f"obj_{i}" for i in range(n_filters)),
        force_matrix=rng.standard_normal((n_filters, 3)),
        normal_force_matrix=rng.standard_normal((n_filters, 3)),
        friction_force_matrix=rng.standard_normal((n_filters, 3)),
        contact_positions=positions if n_filters else None,
        air_times=AirTimes(0.0, 0.31, 0.3, 0.0),
        valid=True,
    )
    fields.update(overrides)
    return LinkContactReading(**fields)
