"""NodeCore.rewind: a core that has run (transforms, joint states, updates with markers and ground truth) is, once
rewound, a new core of the same configuration and parameters: the same messages byte for byte from t = 0 on, no
static transform kept, joints back at zero, no markers before its first update; a core whose robot description came
from /robot_description is refused (its suite belongs to that run). A restart (time going backwards) rewinds the
sensors too: what follows it is byte for byte what a new core publishes."""

import pytest

from helpers_ros import demo_core, demo_dict, joint_state_msg, ns, world_to_base
from tactile_sim.demo_trajectory import DEMO_URDF, gripper_trajectory
from tactile_sim.io.msg_types import serialize_cdr
from tactile_sim.io.wire_message import WireMessage
from tactile_sim.ros.inputs import decode_joint_state

PARAMS = {"update_rate": 100.0, "publish_ground_truth": True, "viz_rate": 10.0}


def run(core, start: float, ticks: int) -> list[tuple[str, bytes]]:
    """(topic, CDR bytes) of every message of ``ticks`` updates at 100 Hz from t = 0 with the demo trajectory from
    ``start`` s, the static world → base_link transform sent first."""
    core.on_tf(world_to_base(), static=True)
    out = []
    for k in range(ticks):
        t = 0.01 * k
        sample = gripper_trajectory(start + t)
        core.on_joint_state(decode_joint_state(joint_state_msg(sample.position, sample.velocity, stamp=t)))
        out += [(topic, msg.cdr if isinstance(msg, WireMessage) else serialize_cdr(msg))
                for topic, msg in core.update(ns(t))]
    return out


def test_a_rewound_core_publishes_what_a_new_one_does():
    used = demo_core(**PARAMS)
    run(used, 4.0, 60)  # the fingers on the can: contacts, heat, torques
    assert used.markers() is not None
    used.rewind()
    new = demo_core(**PARAMS)
    used_names, used_q = used.joint_positions()
    assert (used_names, list(used_q)) == (new.joint_positions()[0], [0.0] * len(used_names))
    assert not used.tf.has_frame("base_link") and used.markers() is None and new.markers() is None
    assert used.stats.updates == 0
    assert run(used, 5.0, 40) == run(new, 5.0, 40)
    assert used.stats.resets == new.stats.resets == 0  # t = 0 after 0.59 s: not a time jump of the rewound core
    used.restart("a reset of the simulation")
    assert used.tf.has_frame("base_link")  # sent in the second run
    used.rewind()
    used.restart("a reset of the simulation")
    assert not used.tf.has_frame("base_link")  # a restart brings back the static transforms of this run only


def test_after_a_restart_a_core_publishes_what_a_new_one_does():
    used = demo_core(**PARAMS)
    run(used, 4.0, 60)
    used.restart("a reset of the simulation")
    assert used.stats.resets == 1 and used.markers() is None  # as a new core before its first update
    assert run(used, 5.0, 40) == run(demo_core(**PARAMS), 5.0, 40)  # every demo sensor type, ground truth included


def test_a_core_built_from_the_robot_description_topic_is_not_rewound():
    data = demo_dict()
    del data["robot"]
    core = demo_core(data, **PARAMS)
    assert core.set_robot_description(DEMO_URDF.read_text())
    assert not core.rewindable
    with pytest.raises(ValueError, match="rewind needs a core built at construction"):
        core.rewind()
