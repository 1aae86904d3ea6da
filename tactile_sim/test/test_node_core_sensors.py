"""The encoder table of the node: every taxel sensor type becomes a TaxelArray carrying exactly its channels, with
the values of the suite's reads (measured and ground truth), the newest entry of a history, and the nearest points
of a SurfaceDistanceProbe in the world frame."""

import numpy as np
import pytest

from helpers_ros import by_topic, config_of, demo_dict, joint_state_msg, world_to_base
from tactile_sim.demo_trajectory import SQUEEZE
from tactile_sim.io.readings import TAXEL_CHANNELS
from tactile_sim.ros.inputs import decode_joint_state
from tactile_sim.ros.node_core import NodeCore
from tactile_sim.ros.node_params import NodeParams
from tactile_sim.ros.sensor_encoders import ENCODERS, TAXEL_CHANNELS_OF

GRID = {"grid": {"lo": [-0.008, 0.0, 0.006], "hi": [0.008, 0.0, 0.024], "normal": [0.0, -1.0, 0.0], "nx": 3, "ny": 4}}
EXPECTED_CHANNELS = {
    "touch": ("contact",),
    "depth": ("depth",),
    "gel": ("displacement",),
    "prox": ("force", "torque"),
    "dist": ("distance", "nearest_points"),
    "hist": ("force", "torque"),
}


def sensor(kind, name, **extra):
    return {"type": kind, "name": name, "link": "fingertip_left", "probe_local_pos": GRID, **extra}


@pytest.fixture(scope="module")
def run():
    data = demo_dict()
    data["sensors"] = [
        sensor("ContactProbe", "touch", probe_radius=0.0005),
        sensor("ContactDepthProbe", "depth", probe_radius=0.0008, noise=1e-5),
        sensor("ElastomerTaxel", "gel", track=["can"], n_sample_points=300),
        sensor("ProximityTaxel", "prox", track=["can"], n_sample_points=300, probe_radius=0.003),
        sensor("SurfaceDistanceProbe", "dist", track=["can"], probe_radius=0.05, noise=1e-4),
        sensor("KinematicTaxel", "hist", probe_radius=0.0005, history_length=3, noise=0.01, delay=0.01),
    ]
    core = NodeCore(config_of(data), NodeParams(publish_ground_truth=True))
    core.on_tf(world_to_base(), static=True)
    outs = []
    for k, q in enumerate([0.03, 0.0205, SQUEEZE]):
        core.on_joint_state(decode_joint_state(joint_state_msg([0.0, q, q], stamp=0.01 * k)))
        outs.append(by_topic(core.update(int(1e7) * k)))
    return core, outs


def test_every_sensor_type_has_an_encoder():
    from tactile_sim.sensors.registry import BATCH_CLASSES

    assert set(ENCODERS) == set(BATCH_CLASSES)
    assert set(TAXEL_CHANNELS_OF) | {"TemperatureGrid", "JointTorque", "ContactSensor"} == set(ENCODERS)


@pytest.mark.parametrize("name", sorted(EXPECTED_CHANNELS))
def test_taxel_messages_carry_exactly_their_channels_with_the_read_values(run, name):
    core, outs = run
    suite = core.suite
    out = outs[-1]
    for gt in (False, True):
        msg = out[f"~/{name}/ground_truth" if gt else f"~/{name}"][0]
        assert msg.ground_truth == gt and msg.sensor_name == name and msg.header.frame_id == "fingertip_left"
        assert msg.sensor_type == suite.sensor_type(name) and (msg.rows, msg.cols) == (4, 3)
        filled = {c for c in TAXEL_CHANNELS if len(getattr(msg, c))}
        assert filled == set(EXPECTED_CHANNELS[name])
        value = suite.read_ground_truth(name) if gt else suite.read(name)
        if name == "hist":
            value = type(value)(*(v[0] for v in value))  # newest entry of the history
            if not gt:  # one step of delay: the newest entry is the previous evaluation's, valid from the 2nd
                valid = suite.read(name, with_valid=True)[1]
                assert msg.valid == bool(valid[0]) and [o["~/hist"][0].valid for o in outs] == [False, True, True]
        reads = {"contact": value, "depth": value, "displacement": value, "distance": value}
        if name in ("prox", "hist"):
            reads = {"force": value.force, "torque": value.torque}
        if name == "dist":
            reads["nearest_points"] = suite.nearest_points_ground_truth(name) if gt else suite.nearest_points(name)
            assert msg.world_frame_id == "world"
        for channel in EXPECTED_CHANNELS[name]:
            expected = reads[channel].numpy().reshape(-1)
            np.testing.assert_array_equal(np.asarray(getattr(msg, channel)), expected.astype(TAXEL_CHANNELS[channel][0]))


def test_the_sensors_see_the_can_only_when_the_fingers_close(run):
    _, outs = run
    opened, squeezed = outs[0], outs[-1]
    assert not np.any(opened["~/touch/ground_truth"][0].contact)
    assert np.any(squeezed["~/touch/ground_truth"][0].contact)
    assert np.max(squeezed["~/depth/ground_truth"][0].depth) > np.max(opened["~/depth/ground_truth"][0].depth) == 0
    assert np.any(np.asarray(squeezed["~/gel/ground_truth"][0].displacement) != 0)
    assert np.any(np.asarray(squeezed["~/prox/ground_truth"][0].force) != 0)
    d_open = np.asarray(opened["~/dist/ground_truth"][0].distance)
    # open: the pad face is 15 mm from the can's surface along y (closer taxel centres at x = 0)
    assert np.min(d_open) == pytest.approx(0.03 - 0.02, abs=1e-5)
    points = np.asarray(opened["~/dist/ground_truth"][0].nearest_points).reshape(-1, 3)
    np.testing.assert_allclose(np.hypot(points[:, 0], points[:, 1]), 0.02, atol=1e-5)  # on the can (world frame)

