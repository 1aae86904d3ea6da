"""``tactile-sim replay --format npz``: the arrays hold every sensor field of the bag the same replay writes (read
back with rosbags alone), in the documented shapes; the joint positions are the recording's, sampled and held at
the sensors' updates; bad option combinations are refused naming the option."""

import numpy as np
import pytest
import yaml

from helpers_offline import DEMO_SENSORS, NODE, demo_bag, demo_run, read_bag, run_cli
from tactile_sim.config.paths import resolve_package_uri
from tactile_sim.demo_trajectory import DEMO_CONFIG
from tactile_sim.io.readings import TAXEL_CHANNELS
from tactile_sim.io.stamps import time_msg_to_ns

AIR_FIELDS = ("current_air_time", "current_contact_time", "last_air_time", "last_contact_time")


def replay(tmp_path, out, *extra, config=DEMO_CONFIG):
    return run_cli("replay", str(demo_bag()), "--config", str(config), "-o", str(tmp_path / out), "--no-progress",
                   *extra)


def replay_both(tmp, config=DEMO_CONFIG):
    """(arrays of the npz, the bag's topics) of one replay of the demo bag with ground truth, in both formats."""
    assert demo_run()[0] == 0
    for out, extra in (("bag.mcap", ()), ("arrays", ("--format", "npz"))):
        status, _, err = replay(tmp, out, "--ground-truth", *extra, config=config)
        assert status == 0, err
    with np.load(tmp / "arrays.npz") as data:
        arrays = {key: data[key] for key in data.files}
    return arrays, read_bag(tmp / "bag")


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    return replay_both(tmp_path_factory.mktemp("arrays"))


def stamps(messages):
    return np.array([time_msg_to_ns(m.header.stamp) / 1e9 for _, _, m in messages])


def xyz(v):
    return [v.x, v.y, v.z]


def test_every_sensor_field_equals_the_bag_of_the_same_replay(both):
    assert_arrays_hold_the_bag(*both, DEMO_SENSORS)


def test_a_contact_sensor_of_two_bodies_gives_a_body_axis_in_the_bags_order(tmp_path):
    data = yaml.safe_load(resolve_package_uri(DEMO_CONFIG).read_text())
    contact = next(s for s in data["sensors"] if s["type"] == "ContactSensor")
    data["sensors"] = [{**contact, "prim_path": "fingertip_.*"}]
    path = tmp_path / "two_bodies.yaml"
    path.write_text(yaml.safe_dump(data))
    arrays, topics = replay_both(tmp_path, path)
    assert_arrays_hold_the_bag(arrays, topics, [contact["name"]])
    assert list(arrays[f"{contact['name']}/body_names"]) == ["fingertip_left", "fingertip_right"]
    assert arrays[f"{contact['name']}/wrench"].shape[1] == 2
    assert np.abs(arrays[f"{contact['name']}/wrench"]).max() > 0  # the fingertips touch the can


def assert_arrays_hold_the_bag(arrays, topics, sensors):
    """Every field of every message of ``sensors`` in the bag's topics equals its entry in the arrays."""
    seen = set()
    for name in sensors:
        a = {key[len(name) + 1:]: value for key, value in arrays.items() if key.startswith(f"{name}/")}
        measured = topics[f"{NODE}/{name}"]
        first = measured[0][2]
        assert a["frame_id"] == first.header.frame_id
        if first.__msgtype__.endswith("LinkContact"):
            bodies = list(dict.fromkeys(m.body_name for _, _, m in measured))
            assert list(a["body_names"]) == bodies and tuple(a["layout_shape"]) == (len(bodies),)
            assert list(a["filter_names"]) == list(first.filter_names)
            np.testing.assert_array_equal(a["stamps"], stamps(measured)[::len(bodies)])
            msgs = [m for _, _, m in measured]
            rows = {"wrench": [xyz(m.wrench.force) + xyz(m.wrench.torque) for m in msgs],
                    "normal_force": [xyz(m.normal_force) for m in msgs],
                    "friction_force": [xyz(m.friction_force) for m in msgs],
                    "valid": [m.valid for m in msgs], "air_times": [[getattr(m, f) for f in AIR_FIELDS] for m in msgs]}
            for field in ("force_matrix", "normal_force_matrix", "friction_force_matrix", "contact_positions"):
                rows[field] = [[xyz(v) for v in getattr(m, field)] for m in msgs]
            for field, values in rows.items():
                expected = np.array(values).reshape(-1, len(bodies), *np.array(values).shape[1:])
                np.testing.assert_array_equal(a[field], expected, err_msg=f"{name}/{field}")
                assert a[field].dtype == np.float64 or field == "valid"
            seen.add(name)
            continue
        np.testing.assert_array_equal(a["stamps"], stamps(measured))
        for branch, prefix in ((measured, ""), (topics.get(f"{NODE}/{name}/ground_truth"), "ground_truth/")):
            assert branch is not None, f"{name}: no ground truth in the bag"
            msgs = [m for _, _, m in branch]
            np.testing.assert_array_equal(stamps(branch), a["stamps"])
            kind = first.__msgtype__.rsplit("/", 1)[-1]
            if kind == "TaxelArray":
                shape = (first.rows, first.cols) if first.rows else (len(first.radii),)
                assert tuple(a["layout_shape"]) == shape and a["sensor_type"] == first.sensor_type
                for field, width in (("positions", (3,)), ("normals", (3,)), ("radii", ())):
                    np.testing.assert_array_equal(a[field], np.asarray(getattr(first, field)).reshape(*shape, *width))
                filled = [c for c in TAXEL_CHANNELS if len(getattr(first, c))]
                assert sorted(k for k in a if k.split("/")[-1] in TAXEL_CHANNELS and k.startswith(prefix)
                              and k.count("/") == prefix.count("/")) == sorted(prefix + c for c in filled)
                for c in filled:
                    expected = np.array([np.asarray(getattr(m, c)) for m in msgs]).reshape(len(msgs), *shape, -1)
                    assert a[prefix + c].dtype == TAXEL_CHANNELS[c][0]
                    np.testing.assert_array_equal(a[prefix + c], expected, err_msg=f"{name}/{prefix}{c}")
            elif kind == "ThermalGrid":
                shape = (first.nx, first.ny, first.nz)
                assert tuple(a["layout_shape"]) == shape
                o = first.origin
                np.testing.assert_array_equal(a["origin"], xyz(o.position) + xyz(o.orientation) + [o.orientation.w])
                np.testing.assert_array_equal(a["cell_size"], xyz(first.cell_size))
                assert list(a["link_names"]) == list(first.link_names)
                np.testing.assert_array_equal(a[prefix + "temperatures"],
                                              np.array([m.temperatures for m in msgs]).reshape(-1, *shape, 1))
                np.testing.assert_array_equal(a[prefix + "link_temperatures"],
                                              np.array([m.link_temperatures for m in msgs]).reshape(len(msgs), -1))
            else:
                assert kind == "JointState"
                assert list(a["joint_names"]) == list(first.name)
                np.testing.assert_array_equal(a[prefix + "effort"],
                                              np.array([m.effort for m in msgs])[:, :, None])
            if kind != "JointState":
                np.testing.assert_array_equal(a[prefix + "valid"], [m.valid for m in msgs])
        seen.add(name)
    assert seen == set(sensors)


def test_the_joint_positions_are_the_recordings_held_at_each_update(both):
    arrays, _ = both
    recorded = read_bag(demo_bag())["/joint_states"]
    t_in = stamps(recorded)
    names = list(arrays["joints/names"])
    q_in = np.array([[dict(zip(m.name, m.position))[n] for n in names] for _, _, m in recorded])
    t = arrays["joints/stamps"]
    assert len(t) > len(t_in)  # the suite rate is above the recording's: positions are held between inputs
    np.testing.assert_array_equal(t, arrays["pad_left/stamps"])  # the demo's sensors publish on every update
    held = np.searchsorted(t_in, t + 1e-12, side="right") - 1
    assert held.min() >= 0
    np.testing.assert_array_equal(arrays["joints/position"], q_in[held])
    assert float(arrays["rate"]) == pytest.approx(1.0 / np.median(np.diff(t)))


def test_npz_is_chosen_by_the_name_and_an_existing_file_needs_overwrite(tmp_path):
    assert demo_run()[0] == 0
    status, out, err = replay(tmp_path, "a.npz", "--rate", "10")
    assert status == 0, err
    assert (tmp_path / "a.npz").is_file() and not (tmp_path / "a").exists() and "wrote" in out
    status, _, err = replay(tmp_path, "a.npz", "--rate", "10")
    assert status == 2 and "already exists" in err
    before = (tmp_path / "a.npz").stat().st_mtime_ns
    status, _, err = replay(tmp_path, "a", "--rate", "10", "--format", "npz", "--overwrite")
    assert status == 0, err
    assert (tmp_path / "a.npz").stat().st_mtime_ns != before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz"]  # no partial file left


@pytest.mark.parametrize("extra, named", [
    (("--format", "zarr"), "--format"),
    (("--format", "npz", "--markers"), "--markers"),
    (("--format", "npz", "--copy-inputs"), "--copy-inputs"),
    (("--format", "npz", "-o", "x.mcap"), "-o"),
    (("--format", "npz", "-o", "x.db3"), "-o"),
    (("--format", "bag", "-o", "x.npz"), "-o 'x.npz': an array name (.npz) with --format bag"),
])
def test_bad_format_options_exit_2_naming_the_option(tmp_path, extra, named):
    assert demo_run()[0] == 0
    status, _, err = replay(tmp_path, "out", *extra)
    assert status == 2 and named in err, err
    assert not any(tmp_path.iterdir())
