"""Sensors of one type share a batch, whose read the node copies into all their messages at once: each message
still carries its own sensor's rows of the suite's reads (measured and ground truth, float64 suite cast to the
float32 wire), its own valid flag, and bytes that later updates leave untouched."""

import numpy as np
import pytest

from helpers_ros import by_topic, config_of, demo_dict, joint_state_msg, world_to_base
from tactile_sim.demo_trajectory import SQUEEZE
from tactile_sim.io.msg_types import message_class, typestore
from tactile_sim.io.readings import TAXEL_CHANNELS
from tactile_sim.ros.inputs import decode_joint_state
from tactile_sim.ros.node_core import NodeCore
from tactile_sim.ros.node_params import NodeParams

GRIDS = {  # (link, y of the pad face, normal y): the pads of both fingertips face the can
    "left": ("fingertip_left", 0.0, -1.0),
    "right": ("fingertip_right", 0.0, 1.0),
}
CHANNELS = {"touch": ("contact",), "dist": ("distance", "nearest_points"), "pad": ("force", "torque")}


def sensor(kind, name, side, nx, **extra):
    link, y, ny = GRIDS[side]
    grid = {"lo": [-0.008, y, 0.006], "hi": [0.008, y, 0.024], "normal": [0.0, ny, 0.0], "nx": nx, "ny": 3}
    return {"type": kind, "name": name, "link": link, "probe_local_pos": {"grid": grid}, **extra}


@pytest.fixture(scope="module")
def run():
    data = demo_dict()
    data["suite"]["dtype"] = "float64"
    data["sensors"] = [
        sensor("ContactProbe", "touch_l", "left", 4, probe_radius=0.0005),
        sensor("SurfaceDistanceProbe", "dist_l", "left", 2, track=["can"], probe_radius=0.05, noise=1e-4),
        sensor("KinematicTaxel", "pad_l", "left", 4, probe_radius=0.0005, noise=0.01),
        sensor("ContactProbe", "touch_r", "right", 3, probe_radius=0.0005),
        sensor("SurfaceDistanceProbe", "dist_r", "right", 3, track=["can"], probe_radius=0.05, delay=0.01),
        sensor("KinematicTaxel", "pad_r", "right", 2, probe_radius=0.0005, history_length=2, delay=0.01),
    ]
    core = NodeCore(config_of(data), NodeParams(publish_ground_truth=True))
    core.on_tf(world_to_base(), static=True)
    outs = []
    for k, q in enumerate([0.03, SQUEEZE, SQUEEZE]):
        core.on_joint_state(decode_joint_state(joint_state_msg([0.0, q, q], stamp=0.01 * k)))
        outs.append(by_topic(core.update(int(1e7) * (k + 1))))
    return core, outs


def test_same_type_sensors_share_a_batch(run):
    core, _ = run
    for kind in ("touch", "dist", "pad"):
        assert core.suite.locate(f"{kind}_l")[0] is core.suite.locate(f"{kind}_r")[0]
        assert core.suite.locate(f"{kind}_r")[1] == 1


@pytest.mark.parametrize("name", ["touch_l", "touch_r", "dist_l", "dist_r", "pad_l", "pad_r"])
def test_each_message_carries_its_own_rows_of_the_batch_read(run, name):
    core, outs = run
    suite = core.suite
    kind = name.split("_")[0]
    for gt in (False, True):
        msg = outs[-1][f"~/{name}/ground_truth" if gt else f"~/{name}"][0]
        value, valid = (suite.read_ground_truth if gt else suite.read)(name, with_valid=True)
        if name == "pad_r":  # newest entry of the history
            value, valid = type(value)(*(v[0] for v in value)), valid[0]
        assert msg.sensor_name == name and msg.ground_truth == gt and msg.valid == bool(valid)
        reads = {"contact": value, "distance": value}
        if kind == "pad":
            reads = {"force": value.force, "torque": value.torque}
        if kind == "dist":
            reads["nearest_points"] = suite.nearest_points_ground_truth(name) if gt else suite.nearest_points(name)
        assert {c for c in TAXEL_CHANNELS if len(getattr(msg, c))} == set(CHANNELS[kind])
        for channel in CHANNELS[kind]:
            expected = reads[channel].numpy().reshape(-1).astype(TAXEL_CHANNELS[channel][0])
            np.testing.assert_array_equal(np.asarray(getattr(msg, channel)), expected)
    assert np.any(np.asarray(outs[-1]["~/touch_l/ground_truth"][0].contact))  # the can touches the pads
    assert [o["~/dist_r"][0].valid for o in outs] == [False, True, True]  # one step of delay


def test_messages_of_earlier_updates_keep_their_bytes_and_fields(run):
    _, outs = run
    first = outs[0]["~/pad_l/ground_truth"][0]
    last = outs[-1]["~/pad_l/ground_truth"][0]
    assert first.cdr != last.cdr  # the fingers closed in between
    for msg in (first, last):
        fields = {f: getattr(msg, f) for f in msg.message.__dataclass_fields__}
        assert bytes(typestore().serialize_cdr(message_class(msg.__msgtype__)(**fields), msg.__msgtype__)) == msg.cdr
    assert first.header.stamp.sec == 0 and first.header.stamp.nanosec == 10_000_000
    assert not np.any(np.asarray(first.force)) and np.any(np.asarray(last.force))
