"""Bad inputs that would allocate without bound are refused by the resource budget (config/budget.py) before any
allocation: per-option caps (each tested at the cap and one past it), the estimated total against
``suite.max_memory`` (closed form from the documented per-unit costs), ``suite.max_memory``'s own bad values,
``n_envs`` through the Python API, ``.npy`` layout headers and URDF ``<tactile>`` arrays read only as far as their
declared size. Every error names the file (or API call) and the option."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from helpers_config import SUITE, config_error_message, write_yaml
from helpers_scenes import pad_object
from tactile_sim.config import load_config
from tactile_sim.config.budget import BYTES, CAPS, ELASTOMER_PAIR_ELEMENTS, VALUES_PER_PROBE, budget_problems, \
    default_max_memory, estimated_bytes, format_bytes, machine_memory, sensor_items
from tactile_sim.errors import ConfigError
from tactile_sim.suite import SensorSuite

PAD = {"type": "ContactProbe", "name": "p", "link": "pad"}


def doc(sensor: dict | None = None, **suite) -> dict:
    return {"suite": {**SUITE["suite"], **suite}, "objects": [pad_object()], "sensors": [sensor] if sensor else []}


def grid(nx: int, ny: int) -> dict:
    return {"grid": {"lo": [0, 0, 0], "hi": [0.01, 0.01, 0], "nx": nx, "ny": ny}}


# (sensor options or suite settings, YAML path of the refused option, the capped count at the cap)
CAPPED = [
    ("grid", lambda n: {**PAD, "probe_local_pos": grid(n, 1)}, "sensors[0].probe_local_pos.grid", CAPS["probes"]),
    ("cells", lambda n: {"type": "TemperatureGrid", "name": "t", "link": "pad", "grid_size": [n, 1, 1]},
     "sensors[0].grid_size", CAPS["cells"]),
    ("samples", lambda n: {"type": "ProximityTaxel", "name": "x", "link": "pad", "track": ["a", "b"],
                           "n_sample_points": [n - 1, 1]}, "sensors[0].n_sample_points", CAPS["samples"]),
    ("history", lambda n: {**PAD, "history_length": n}, "sensors[0].history_length", CAPS["ring_slots"]),
]


@pytest.mark.parametrize("name, sensor, option, cap", CAPPED, ids=[c[0] for c in CAPPED])
def test_each_capped_option_passes_at_its_cap_and_fails_one_past_it(tmp_path, name, sensor, option, cap):
    ok = budget_problems(load_config(doc(sensor(cap), max_memory="1 TB")))
    assert ok == []
    path = write_yaml(tmp_path, doc(sensor(cap + 1), max_memory="1 TB"))
    msg = config_error_message(path)
    assert msg.startswith(f"{path}:{option}: {cap + 1} ") and "exceed the cap" in msg and f"at most {cap}" in msg


def test_delay_counts_engine_steps_against_the_ring_cap(tmp_path):
    dt = 0.01
    at_cap = CAPS["ring_slots"] * dt
    assert budget_problems(load_config(doc({**PAD, "delay": at_cap}, max_memory="1 TB"))) == []
    msg = config_error_message(write_yaml(tmp_path, doc({**PAD, "delay": at_cap + 2 * dt})))
    assert f"layout.yaml:sensors[0].delay: {CAPS['ring_slots'] + 2} ring slots" in msg
    assert f"got {at_cap + 2 * dt:g}" in msg


def test_a_long_delay_counts_the_host_bytes_of_its_ring_slots(tmp_path):
    """Each delay slot keeps views and launch arguments on the host (1.6 kB measured), once for all envs."""
    config = load_config(doc({**PAD, "delay": 50_000 * 0.01}, max_memory="1 GB"))
    assert budget_problems(config) == []
    many = {**doc(max_memory="1 GB"), "sensors": [{**PAD, "name": f"p{k}", "delay": 50_000 * 0.01} for k in range(12)]}
    msg = config_error_message(write_yaml(tmp_path, many))  # 12 × 50 000 slots × 2 kB = 1.2 GB
    assert "above suite.max_memory" in msg and "102 MB shared by the envs" in msg


@pytest.mark.parametrize("settings, option, got", [
    ({"n_envs": CAPS["n_envs"] + 1}, "suite.n_envs", str(CAPS["n_envs"] + 1)),
    ({"n_envs": 2**70}, "suite.n_envs", str(2**70)),
    ({"sdf_max_nodes": CAPS["sdf_max_nodes"] + 1}, "suite.sdf_max_nodes", str(CAPS["sdf_max_nodes"] + 1)),
])
def test_suite_sizes_are_capped(tmp_path, settings, option, got):
    path = write_yaml(tmp_path, doc(**settings))
    msg = config_error_message(path)
    assert msg.startswith(f"{path}:{option}: ") and f"got {got}" in msg


def test_the_billion_probe_examples_of_the_campaign_are_refused_by_their_option(tmp_path):
    for sensor, option in [({**PAD, "probe_local_pos": grid(100_000, 100_000)}, "probe_local_pos.grid"),
                           ({**PAD, "probe_local_pos": grid(3000, 3000)}, "probe_local_pos.grid"),
                           ({"type": "TemperatureGrid", "name": "t", "link": "pad", "grid_size": [2000] * 3},
                            "grid_size"),
                           ({"type": "ElastomerTaxel", "name": "e", "link": "pad", "track": ["b"],
                             "n_sample_points": 10**9}, "n_sample_points"),
                           ({**PAD, "history_length": 10**9}, "history_length"),
                           ({**PAD, "delay": 1e6}, "delay")]:
        path = write_yaml(tmp_path, doc(sensor))
        assert config_error_message(path).startswith(f"{path}:sensors[0].{option}: ")


# ------------------------------------------------------------------ the total
def thermal_bytes_per_env(cells: int, history: int = 0) -> int:
    """Closed form of the documented estimate for one TemperatureGrid: a fixed share, its cells, and one ring slot
    of all its cell readings per history step."""
    return BYTES["sensor"] + cells * BYTES["cell"] + history * cells * BYTES["value"]


def test_the_total_is_the_documented_cost_per_env_times_the_envs():
    cfg = load_config(doc({"type": "TemperatureGrid", "name": "t", "link": "pad", "grid_size": [4, 5, 6],
                           "history_length": 3}))
    items = sensor_items(cfg.sensors[0], cfg.suite.step_dt, {})
    assert estimated_bytes(items, 7) == 7 * thermal_bytes_per_env(120, 3)
    assert estimated_bytes(items, 0) == thermal_bytes_per_env(120, 3)  # an unbatched scene is one env
    probes = load_config(doc({**PAD, "probe_local_pos": grid(3, 4), "history_length": 2}))
    items = sensor_items(probes.sensors[0], 0.01, {})
    assert estimated_bytes(items, 1) == BYTES["sensor"] + 12 * (BYTES["probe"] + 2 * VALUES_PER_PROBE * BYTES["value"])


def test_an_elastomer_taxels_direct_path_tables_count_once_for_all_envs(tmp_path):
    from tactile_sim.sensors.elastomer.dilation import DENSE_LIMIT
    from tactile_sim.sensors.elastomer.source_rows import ROW_CACHE_LIMIT

    assert ELASTOMER_PAIR_ELEMENTS == DENSE_LIMIT == ROW_CACHE_LIMIT   # the bound the budget counts is the code's
    elastomer = {"type": "ElastomerTaxel", "name": "e", "link": "pad", "track": ["ball"], "history_length": 1}
    flat = [[0.001 * i, 0.0, 0.0] for i in range(100)]
    samples = load_config(doc({**elastomer, "probe_local_pos": flat})).sensors[0].n_sample_points  # one body
    per_env = BYTES["sensor"] + 100 * (BYTES["probe"] + VALUES_PER_PROBE * BYTES["value"]) + samples * BYTES["sample"]
    for layout, counts, shared in (({"probe_local_pos": flat}, {}, 8 * 4 * 100**2),
                                   ({"probe_local_pos": flat}, {"e": 4096}, None),
                                   ({"probe_local_pos": grid(10, 10)}, {}, 0)):
        opt = load_config(doc({**elastomer, **layout})).sensors[0]
        items = sensor_items(opt, 0.01, counts)
        if shared is None:   # a layout of 4096 probes read from its file: the tables reach the bound
            assert sum(it.shared for it in items) == 8 * ELASTOMER_PAIR_ELEMENTS
            continue
        assert estimated_bytes(items, 7) == 7 * per_env + shared and estimated_bytes(items, 1) == per_env + shared
    big = [[0.0001 * (i % 64), 0.0001 * (i // 64), 0.0] for i in range(2048)]
    path = write_yaml(tmp_path, doc({**elastomer, "probe_local_pos": big}, max_memory=100 * 2**20))
    msg = config_error_message(path)   # 2048 probes: 128 MiB of pair tables, refused by its layout option
    assert msg.startswith(f"{path}:sensors[0].probe_local_pos: the configuration would allocate about ")
    assert "shared by the envs" in msg


def test_max_memory_admits_its_estimate_and_refuses_one_byte_less(tmp_path):
    envs, cells = 10, 8 * 8 * 8
    total = envs * thermal_bytes_per_env(cells)
    sensor = {"type": "TemperatureGrid", "name": "t", "link": "pad", "grid_size": [8, 8, 8]}
    load_config(doc(sensor, n_envs=envs, max_memory=total))
    path = write_yaml(tmp_path, doc(sensor, n_envs=envs, max_memory=total - 1))
    msg = config_error_message(path)
    assert msg.startswith(f"{path}:sensors[0].grid_size: the configuration would allocate about ")
    assert "above suite.max_memory" in msg and "raise suite.max_memory" in msg


def test_the_default_max_memory_is_half_the_machine():
    import os

    assert 0 < machine_memory() <= os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert default_max_memory() == machine_memory() // 2


def test_a_container_limit_below_the_machine_memory_is_the_machine_memory(tmp_path, monkeypatch):
    from tactile_sim.config import budget

    unlimited, limited = tmp_path / "v2", tmp_path / "v1"
    unlimited.write_text("max\n")
    limited.write_text(f"{2**30}\n")
    monkeypatch.setattr(budget, "CGROUP_LIMITS", (str(unlimited), str(tmp_path / "absent")))
    physical = machine_memory()
    monkeypatch.setattr(budget, "CGROUP_LIMITS", (str(unlimited), str(limited)))
    assert machine_memory() == min(physical, 2**30)
    assert default_max_memory() == min(physical, 2**30) // 2


@pytest.mark.parametrize("value, expected", [(1000, 1000), ("8 GB", 8 * 10**9), ("512 MiB", 512 * 2**20),
                                             ("1.5kB", 1500), (2.5e9, 2_500_000_000)])
def test_max_memory_units(value, expected):
    assert load_config(doc(max_memory=value)).suite.max_memory == expected


@pytest.mark.parametrize("value", [0, -1, 0.5, "lots", "5 parsecs", "nan GB", "inf", True, [1], "1e400 B"])
def test_bad_max_memory_values_name_the_option(tmp_path, value):
    path = write_yaml(tmp_path, doc(max_memory=value))
    msg = config_error_message(path)
    assert msg.startswith(f"{path}:suite.max_memory: ") and "allowed: a number of bytes > 0" in msg


# ------------------------------------------------------------------ Python API
@pytest.mark.parametrize("n_envs, problem", [(2**70, "too many envs"), (CAPS["n_envs"] + 1, "too many envs"),
                                             (-1, "not an integer >= 0"), (1.5, "not an integer >= 0"),
                                             ("3", "not an integer >= 0")])
def test_python_api_n_envs_is_checked_before_anything_is_built(n_envs, problem):
    cfg = load_config(doc(PAD))
    with pytest.raises(ConfigError) as info:
        SensorSuite(cfg, n_envs=n_envs)
    assert str(info.value).startswith(f"SensorSuite(n_envs=...): {problem}; got {n_envs!r}")


def test_python_api_n_envs_is_checked_against_the_total():
    cfg = load_config(doc({"type": "TemperatureGrid", "name": "t", "link": "pad", "grid_size": [8, 8, 8]},
                          max_memory="10 MB"))
    with pytest.raises(ConfigError, match=r"<dict>:sensors\[0\].grid_size: the configuration would allocate"):
        SensorSuite(cfg, n_envs=1000)


# ------------------------------------------------------------------ files read only as far as their size
def npy_with_header(path, shape, payload: bytes = b"\0" * 24):
    """A .npy file whose header announces ``shape`` (float64) followed by ``payload``."""
    header = {"descr": "<f8", "fortran_order": False, "shape": shape}
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, header)
        f.write(payload)
    return path


@pytest.mark.parametrize("shape, parts", [
    ((100_000, 100_000, 3), ("10000000000 probes exceed the cap", "at most 4000000")),
    ((1000, 3), ("truncated file, the header announces 24000 bytes", "got 24 bytes")),
    ((2, 5), ("wrong array; got shape (2, 5)",)),
])
def test_npy_layout_header_is_checked_before_reading(tmp_path, shape, parts):
    npy = npy_with_header(tmp_path / "big.npy", shape)
    cfg = load_config(doc({**PAD, "probe_local_pos": {"file": str(npy)}}))
    with pytest.raises(ConfigError) as info:
        SensorSuite(cfg)
    msg = str(info.value)
    assert msg.startswith("<dict>:sensors[0]: layout file") and str(npy) in msg
    assert all(p in msg for p in parts), msg


def test_a_read_layout_is_counted_in_the_total(tmp_path):
    npy = tmp_path / "l.npy"
    np.save(npy, np.zeros((50, 3)))
    sensor = {**PAD, "probe_local_pos": {"file": str(npy)}}
    per_env = BYTES["sensor"] + 50 * BYTES["probe"]
    SensorSuite(load_config(doc(sensor, max_memory=per_env)))
    with pytest.raises(ConfigError, match=rf"probe_local_pos: the configuration would allocate about "
                                          rf"{re.escape(format_bytes(per_env))}"):
        SensorSuite(load_config(doc(sensor, max_memory=per_env - 1)))


def test_urdf_tactile_array_size_is_checked_before_building(tmp_path):
    urdf = tmp_path / "hand.urdf"
    urdf.write_text('<robot name="r"><link name="pad"><collision><geometry><box size="0.1 0.1 0.1"/></geometry>'
                    '</collision></link><sensor name="s"><parent link="pad"/><tactile>'
                    '<array rows="100000" cols="100000" size="0.001 0.001"/></tactile></sensor></robot>')
    cfg = load_config({"suite": {"dt": 0.01}, "robot": {"urdf": str(urdf)},
                       "sensors": [{**PAD, "probe_local_pos": {"urdf_tactile": "s"}}]})
    with pytest.raises(ConfigError) as info:
        SensorSuite(cfg)
    msg = str(info.value)
    assert msg.startswith(f"{urdf}:sensor[name='s'].tactile.array: 100000 x 100000 taxels exceed the cap"), msg
    assert math.prod((100_000, 100_000)) > CAPS["probes"]


def test_a_config_validated_without_the_loader_is_checked_by_the_suite():
    from tactile_sim.config import SuiteConfig

    cfg = SuiteConfig.model_validate(doc({**PAD, "probe_local_pos": grid(100_000, 100_000)}))
    with pytest.raises(ConfigError, match=r"^ContactProbe\(name='p'\).probe_local_pos.grid: 10000000000 probes"):
        SensorSuite(cfg)


@pytest.mark.parametrize("section, entry", [("sensors", lambda i: {**PAD, "name": f"p{i}"}),
                                            ("objects", lambda i: {"name": f"o{i}"})])
def test_sensor_and_object_counts_are_capped_before_validation(tmp_path, section, entry):
    data = doc()
    data[section] = [entry(i) for i in range(CAPS[section])]
    if section == "objects":
        data["objects"][0] = pad_object()
    budget_problems(load_config(data, base_dir=tmp_path))
    data[section].append(entry(CAPS[section]))
    path = write_yaml(tmp_path, data)
    assert config_error_message(path) == (f"{path}:{section}: too many {section}; got {CAPS[section] + 1} entries; "
                                          f"allowed: at most {CAPS[section]} entries")


def test_a_gaussian_crosstalk_kernel_is_capped_at_its_taps():
    from tactile_sim.imperfections.crosstalk import MAX_KERNEL_TAPS

    spacing = 0.02 / 3  # the 4 x 4 grid below
    sensor = {"type": "KinematicTaxel", "name": "k", "link": "pad", "crosstalk_strength": 0.1,
              "probe_local_pos": {"grid": {"lo": [-0.01, -0.01, 0], "hi": [0.01, 0.01, 0], "nx": 4, "ny": 4}}}
    assert (2 * 500 + 1) ** 2 <= MAX_KERNEL_TAPS < (2 * 501 + 1) ** 2
    SensorSuite(load_config(doc({**sensor, "crosstalk_sigma": 500 * spacing / 3})))  # h = 3 sigma / spacing = 500
    with pytest.raises(ConfigError) as info:
        SensorSuite(load_config(doc({**sensor, "crosstalk_sigma": 500.5 * spacing / 3})))
    assert str(info.value).startswith("<dict>:sensors[0].crosstalk_sigma: a Gaussian over taxels")
    assert "needs a 1003 x 1003 kernel" in str(info.value)


def thermal_doc(grid_options: dict, **suite) -> dict:
    """A TemperatureGrid on a 0.1 x 0.1 x 0.02 m pad beside a second body (lumped with simulate_all)."""
    material = {"base_temperature": 20.0, "emissivity": 0.0}
    block = {"name": "block", "geometry": [{"box": {"size": [0.1, 0.1, 0.1]}}], "pose": {"xyz": [0, 0, 1]}}
    return {"suite": {"dt": 0.01, **suite}, "objects": [pad_object(), block],
            "sensors": [{"type": "TemperatureGrid", "name": "tg", "link": "pad",
                         "properties_dict": {"pad": material, "block": material}, **grid_options}]}


def test_sample_spacings_are_capped_before_sampling():
    from tactile_sim.geometry.sampling import MAX_SAMPLES_PER_BODY

    with pytest.raises(ConfigError) as info:
        SensorSuite(load_config(thermal_doc({"contact_sample_spacing": 1e-6})))
    assert str(info.value).startswith("<dict>:sensors[0].contact_sample_spacing: ") and \
        f"exceed {MAX_SAMPLES_PER_BODY}" in str(info.value)
    with pytest.raises(ConfigError) as info:
        SensorSuite(load_config(thermal_doc({"simulate_all_link_temperatures": True}, lumped_sample_spacing=1e-6)))
    assert str(info.value).startswith("<dict>:suite.lumped_sample_spacing: ") and "on body 'block'" in str(info.value)
    SensorSuite(load_config(thermal_doc({"simulate_all_link_temperatures": True, "contact_sample_spacing": 0.01})))
