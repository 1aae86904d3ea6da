"""SensorSuite: batching, env axes, evaluation periods, seeding, resets and scene-name errors."""

import numpy as np
import pytest
import torch

from helpers_scenes import grid_layout, make_suite, pad_object, step
from tactile_sim.suite import SensorSuite
from tactile_sim.errors import ConfigError

R = 0.002


def ball(z=1.0):
    return {"name": "ball", "geometry": [{"sphere": {"radius": 0.02}}], "pose": {"xyz": [0, 0, z]}}


def depth(name="depth", **extra):
    return {"type": "ContactDepthProbe", "name": name, "link": "pad", "probe_radius": R,
            "probe_local_pos": grid_layout(5, 0.01), **extra}


def test_same_class_sensors_share_one_batch_per_period():
    suite = make_suite([depth("a"), depth("b"), depth("c", update_period=0.02),
                        {**depth("k"), "type": "KinematicTaxel"}], [ball()])
    kinds = sorted((k, b.sensor_type, tuple(b.names)) for k, b in suite.batches)
    assert kinds == [(1, "ContactDepthProbe", ("a", "b")), (1, "KinematicTaxel", ("k",)),
                     (2, "ContactDepthProbe", ("c",))]


def test_env_axis_only_for_batched_scenes():
    for n_envs, shape in [(0, (5, 5)), (1, (1, 5, 5)), (3, (3, 5, 5))]:
        suite = make_suite([depth(), {**depth("k"), "type": "KinematicTaxel"}], [ball(0.018)], n_envs=n_envs)
        suite.update(0.0)
        value, valid = suite.read("depth", with_valid=True)
        assert value.shape == shape and valid.shape == shape[:-2]
        assert suite.read("k").force.shape == shape + (3,)


def test_per_env_object_poses_and_reset_of_one_env():
    suite = make_suite([depth(noise=1e-4, random_walk=1e-4, delay=0.01)], [ball()], n_envs=2)
    z = torch.tensor([[0.0, 0.0, 0.018], [0.0, 0.0, 0.5]], dtype=torch.float64)
    rot = torch.eye(3, dtype=torch.float64).expand(2, 3, 3)
    for t in range(4):
        suite.update(0.01 * t, object_poses={"ball": (rot, z)})
    gt = suite.read_ground_truth("depth")
    assert gt[0].max() == pytest.approx(R + 0.002) and gt[1].max() == 0
    before = suite.read("depth").clone()
    suite.reset([1])
    value, valid = suite.read("depth", with_valid=True)
    assert torch.equal(value[0], before[0]) and valid.tolist() == [True, False]
    assert torch.count_nonzero(value[1]) == 0


def test_update_period_holds_between_evaluations():
    suite = make_suite([depth(update_period=0.03)], [ball()])
    readings = []
    for t, z in enumerate([0.018, 0.5, 0.5, 0.5, 0.5]):
        step(suite, 0.01 * t, ball=[0.0, 0.0, z])
        readings.append(float(suite.read_ground_truth("depth").max()))
    assert readings[:3] == [pytest.approx(R + 0.002)] * 3 and readings[3] == 0.0


def test_same_seed_same_readings_and_names_give_independent_streams():
    def run(names, seed=0):
        suite = make_suite([depth(n, noise=1e-3) for n in names], [ball(0.018)], seed=seed)
        suite.update(0.0)
        return {n: suite.read(n) for n in names}

    a, b = run(["a", "b"]), run(["a", "b"])
    assert all(torch.equal(a[n], b[n]) for n in a)
    assert not torch.equal(a["a"], a["b"])
    c = run(["a", "b", "c"])
    assert torch.equal(c["a"], a["a"]) and torch.equal(c["b"], a["b"])
    assert not torch.equal(run(["a"], seed=1)["a"], a["a"])


def test_unknown_link_names_the_closest_bodies():
    with pytest.raises(ConfigError) as err:
        make_suite([depth(link="pda")], [ball()])
    assert "sensors[0].link" in str(err.value) and "'pad'" in str(err.value)


def test_a_cuda_device_this_machine_lacks_is_a_config_error_before_anything_is_built(monkeypatch):
    import tactile_sim.suite as suite_module

    monkeypatch.setattr(suite_module, "build_scene", lambda *a, **k: pytest.fail("built on a device it lacks"))
    cfg = {"suite": {"dt": 0.01, "device": "cuda:99"}, "objects": [pad_object(), ball()], "sensors": []}
    with pytest.raises(ConfigError, match=r"<dict>:suite.device: this machine has .*; got 'cuda:99'; allowed: cpu"):
        SensorSuite.from_yaml(cfg)
    cfg["suite"]["device"] = "cpu"
    with pytest.raises(ConfigError, match=r"SensorSuite\(device=...\): this machine has .*; got 'cuda:99'"):
        SensorSuite.from_yaml(cfg, device="cuda:99")


def test_unknown_sensor_name_on_read():
    suite = make_suite([depth("pad_depth")], [ball()])
    with pytest.raises(KeyError, match="pad_depth"):
        suite.read("pad_dpeth")


def test_python_api_with_a_user_supplied_world_state():
    """A simulator user passes body poses and twists directly (no WorldModel)."""
    from tactile_sim.world.state import WorldState

    suite = make_suite([depth(), {**depth("k"), "type": "KinematicTaxel"}], [ball()])
    names = suite.scene.body_names
    rot = torch.eye(3, dtype=torch.float64).expand(1, len(names), 3, 3).clone()
    pos = torch.zeros(1, len(names), 3, dtype=torch.float64)
    pos[0, names.index("ball")] = torch.tensor([0.0, 0.0, 0.018], dtype=torch.float64)
    lin = torch.zeros_like(pos)
    lin[0, names.index("ball")] = torch.tensor([0.1, 0.0, 0.0], dtype=torch.float64)
    suite.step(WorldState(0.0, rot, pos, lin, torch.zeros_like(pos)))
    assert suite.read("depth").max() == pytest.approx(R + 0.002)
    centre = suite.read("k").force[2, 2]  # normal −z there, so F_x is the shear k_t·u alone
    np.testing.assert_allclose(centre.numpy(), [0.1, 0.0, -1000.0 * (R + 0.002)], rtol=1e-12)


def test_locate_gives_the_batch_and_index_of_a_sensor():
    suite = make_suite([depth("a"), depth("b"), {**depth("k"), "type": "KinematicTaxel"}], [ball()])
    batch, i = suite.locate("b")
    assert batch.sensor_type == "ContactDepthProbe" and batch.names[i] == "b" and i == 1
    assert suite.locate("k")[0].names == ["k"]
    with pytest.raises(KeyError, match="unknown sensor 'bb'"):
        suite.locate("bb")


def _state(names, n_envs=1, extra_bodies=0):
    from tactile_sim.world.state import WorldState

    b = len(names) + extra_bodies
    pos = torch.zeros(n_envs, b, 3, dtype=torch.float64)
    rot = torch.eye(3, dtype=torch.float64).expand(n_envs, b, 3, 3).clone()
    return WorldState(0.0, rot, pos, torch.zeros_like(pos), torch.zeros_like(pos))


@pytest.mark.parametrize("extra, envs", [(1, 1), (-1, 1), (0, 2)])
def test_a_world_state_of_another_size_names_the_expected_count_and_body_order(extra, envs):
    suite = make_suite([depth()], [ball()])
    names = suite.scene.body_names
    with pytest.raises(ValueError) as err:
        suite.step(_state(names, envs, extra))
    text = str(err.value)
    assert f"expected (1, {len(names)}, 3)" in text and "pad, ball" in text and "scene order" in text
    suite.step(_state(names))  # the right size is accepted
    assert suite.steps == 1


def test_draws_are_the_gain_and_dead_taxels_that_the_measured_reading_applies():
    """Measured depth = dead_value where dead, else g · ground truth (no radius noise): the draws explain it."""
    suite = make_suite([depth(probe_gain_resample_range=[0.5, 1.5], dead_taxel_probability=0.3,
                              dead_taxel_value_range=[0.01, 0.02])], [ball(0.012)], n_envs=3)
    for reset in range(2):
        suite.update(0.01 * reset)
        gain, dead, value = suite.draws("depth")
        assert gain.shape == dead.shape == value.shape == (3, 5, 5)
        assert bool(((gain >= 0.5) & (gain <= 1.5)).all()) and 0 < int(dead.sum()) < 75
        assert bool(((value >= 0.01) & (value <= 0.02)).all())
        truth = suite.read_ground_truth("depth")
        assert float(truth.max()) > 0
        expected = torch.where(dead, value, gain * truth)
        torch.testing.assert_close(suite.read("depth"), expected, rtol=1e-12, atol=0)
        before = gain
        suite.reset()
    assert not torch.equal(suite.draws("depth").gain, before)  # a reset redraws


def test_draws_of_a_sensor_without_gain_options_are_neutral_and_unbatched():
    suite = make_suite([depth()], [ball()])
    gain, dead, value = suite.draws("depth")
    assert gain.shape == (5, 5) and bool((gain == 1).all()) and not bool(dead.any()) and bool((value == 0).all())
