"""End-to-end cost of one update of the ROS node's rclpy-free core (CPU, one thread), the 1 kHz HIL question.

One update = decode a ``sensor_msgs/JointState`` (rosbags object, as rclpy hands over the same fields) → the
core's world update (FK, TF) → suite step → encode every sensor's message (``WireMessage`` s: the CDR bytes written
through per-sensor templates); taking the CDR bytes that the node publishes is timed on top. Scenes:

* ``demo``: the demo gripper with every sensor of ``config/demo_sensors.yaml`` (10 sensors of all nine types, 168
  taxels: the scene of the demo and replay);
* ``demo #6``: the same gripper with the sensors issue #6 names for it: the two 30-taxel KinematicTaxel pads, the
  palm ContactSensor, the 2×2×3 thermal fingertip and the 3-joint JointTorque;
* ``demo pads``: the same gripper with only its two KinematicTaxel pads;
* ``pads+out``: the two pads, each also publishing the output profiles of issue #15 that exist (a PointCloud2 of
  all its channels, a WrenchStamped and its channel of one shared TactileState): their cost is the difference to
  ``demo pads``, run in the same process;
* ``hand 368``: an Allegro-like hand (16 revolute joints) with 15 KinematicTaxel pads of 20–30 taxels (368 in all)
  grasping a sphere.

Baseline (same process): encoding through the general io path (a validated ``TaxelReading`` per message, then
``encode_taxel_array``, a rosbags object not yet serialised) instead of the node's per-sensor templates. Goal:
≤ 0.5 ms per update.

    python bench/node_core.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import torch
import yaml

from tactile_sim.config import load_config
from tactile_sim.demo_trajectory import SQUEEZE
from tactile_sim.io.encode import encode_taxel_array
from tactile_sim.io.msg_types import new_message, serialize_cdr
from tactile_sim.io.readings import TaxelReading
from tactile_sim.io.stamps import time_msg, time_msg_from_ns
from tactile_sim.ros.inputs import TransformSample, decode_joint_state
from tactile_sim.ros.node_core import NodeCore
from tactile_sim.ros.node_params import NodeParams
from timing import time_per_call

ROOT = Path(__file__).resolve().parents[1]
DEMO_YAML = ROOT / "tactile_sim" / "config" / "demo_sensors.yaml"
TARGET_MS = 0.5




# ------------------------------------------------------------------ the Allegro-like hand
FINGER_Y = (-0.045, -0.015, 0.015, 0.045)
SEGMENTS = (("proximal", 0.05, 4, 5), ("medial", 0.035, 4, 6), ("distal", 0.03, 5, 6))
"""(name, length m, taxel columns across the finger, taxel rows along it): 20, 24 and 30 taxels."""


def _box_link(name: str, size, xyz, mass: float) -> str:
    sx, sy, sz = size
    ixx, iyy, izz = (mass / 12 * (b * b + c * c) for b, c in ((sy, sz), (sx, sz), (sx, sy)))
    origin = f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}"/>'
    geometry = f'<geometry><box size="{sx} {sy} {sz}"/></geometry>'
    return (f'<link name="{name}"><visual>{origin}{geometry}</visual><collision>{origin}{geometry}</collision>'
            f'<inertial>{origin}<mass value="{mass}"/><inertia ixx="{ixx:.3e}" ixy="0" ixz="0" iyy="{iyy:.3e}" '
            f'iyz="0" izz="{izz:.3e}"/></inertial></link>')


def _joint(name, parent, child, xyz, axis) -> str:
    return (f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}"/><axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>'
            '<limit lower="-0.5" upper="1.6" effort="5" velocity="5"/></joint>')


def hand_urdf() -> str:
    """A 16-DOF hand: a palm (palmar face z = −0.01, facing −z) and four fingers along +x, each with an abduction
    joint (z) and three flexion joints (y; positive flexion curls the finger towards −z)."""
    parts = [_box_link("palm", (0.1, 0.12, 0.02), (0.0, 0.0, 0.0), 0.4)]
    for f, y in enumerate(FINGER_Y):
        parts.append(_box_link(f"f{f}_base", (0.01, 0.01, 0.01), (0.0, 0.0, 0.0), 0.01))
        parts.append(_joint(f"f{f}_j0", "palm", f"f{f}_base", (0.055, y, 0.0), (0, 0, 1)))
        parent, offset = f"f{f}_base", 0.0
        for k, (seg, length, _, _) in enumerate(SEGMENTS):
            link = f"f{f}_{seg}"
            parts.append(_box_link(link, (length, 0.02, 0.02), (length / 2, 0.0, 0.0), 0.03))
            parts.append(_joint(f"f{f}_j{k + 1}", parent, link, (offset, 0.0, 0.0), (0, 1, 0)))
            parent, offset = link, length
    return '<?xml version="1.0"?><robot name="allegro_like">' + "".join(parts) + "</robot>"


def hand_config(urdf_path: Path) -> dict:
    """15 KinematicTaxel pads on the palmar faces (z = −0.01): 4 × (20 + 24 + 30) on the fingers, 3 × 24 on the
    palm = 368 taxels; a sphere under the palm."""
    sensors = []
    for f in range(len(FINGER_Y)):
        for seg, length, cols, rows in SEGMENTS:
            grid = {"lo": [0.1 * length, -0.007, -0.01], "hi": [0.9 * length, 0.007, -0.01],
                    "normal": [0.0, 0.0, -1.0], "nx": rows, "ny": cols}
            sensors.append({"type": "KinematicTaxel", "name": f"f{f}_{seg}_pad", "link": f"f{f}_{seg}",
                            "probe_local_pos": {"grid": grid}, "probe_radius": 0.002, "noise": 0.01})
    for k, x in enumerate((-0.035, 0.0, 0.035)):
        grid = {"lo": [x - 0.012, -0.04, -0.01], "hi": [x + 0.012, 0.04, -0.01], "normal": [0.0, 0.0, -1.0],
                "nx": 4, "ny": 6}
        sensors.append({"type": "KinematicTaxel", "name": f"palm_pad_{k}", "link": "palm",
                        "probe_local_pos": {"grid": grid}, "probe_radius": 0.002, "noise": 0.01})
    ball = {"name": "ball", "geometry": [{"sphere": {"radius": 0.045}}], "pose": {"xyz": [0.05, 0.0, -0.054]}}
    return {"suite": {"rate": 1000.0, "world_frame": "palm"}, "robot": {"urdf": str(urdf_path)},
            "objects": [ball], "sensors": sensors}


# ------------------------------------------------------------------ scenes
ISSUE_6_TYPES = ("KinematicTaxel", "ContactSensor", "TemperatureGrid", "JointTorque")
PROFILES = ({"profile": "pointcloud"}, {"profile": "wrench"}, {"profile": "tactile_state"})
"""The output profiles of the ``pads+out`` scene (every KinematicTaxel)."""


def demo_config(types: tuple[str, ...] | None = None, outputs: tuple[dict, ...] = ()):
    """The demo configuration, keeping only the sensors of ``types`` (None: every sensor), each KinematicTaxel with
    ``outputs``."""
    data = yaml.safe_load(DEMO_YAML.read_text())
    if types is not None:
        data["sensors"] = [s for s in data["sensors"] if s["type"] in types]
    for s in data["sensors"]:
        if s["type"] == "KinematicTaxel" and outputs:
            s["outputs"] = list(outputs)
    return load_config(data, base_dir=DEMO_YAML.parent)


def make_core(config, world_frame: str) -> NodeCore:
    core = NodeCore(config, NodeParams(update_rate=1000.0, world_frame=world_frame, viz_rate=0.0))
    if world_frame == "world":
        core.on_tf([TransformSample("world", "base_link", 0.0, np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]))],
                   static=True)
    return core


def joint_message(names, position, velocity):
    head = new_message("std_msgs/msg/Header", stamp=time_msg(0.0))
    return new_message("sensor_msgs/msg/JointState", header=head, name=list(names), position=position,
                       velocity=velocity)


def naive_encode(core: NodeCore, stamp_s: float) -> list:
    """Baseline: every taxel sensor through a validated TaxelReading and ``encode_taxel_array``."""
    out = []
    suite = core.suite
    for s in core.schedule:
        enc = s.encoder
        layout = suite.layouts[enc.name]
        value = suite.read(enc.name)
        rows, cols = layout.shape if layout.is_grid else (0, 0)
        reading = TaxelReading(enc.name, enc.sensor_type, enc.options.link, stamp_s, rows, cols, layout.positions,
                               layout.normals, layout.radius, {"force": value.force, "torque": value.torque})
        out.append(encode_taxel_array(reading))
    return out


def bench_scene(label: str, core: NodeCore, joint_msg, repeats: int) -> dict:
    period_ns = 1_000_000
    clock = {"ns": 0}
    n_taxels = sum(core.suite.layouts[s.encoder.name].n for s in core.schedule if s.encoder.name in core.suite.layouts)

    def update():
        clock["ns"] += period_ns
        core.on_joint_state(decode_joint_state(joint_msg))
        return core.update(clock["ns"])

    def update_and_serialize():
        for _, msg in update():
            serialize_cdr(msg)

    def world_only():
        clock["ns"] += period_ns
        core.suite.world.update(clock["ns"] * 1e-9, joint_pos=core._q)

    def world_and_step():
        clock["ns"] += period_ns
        core.suite.step(core.suite.world.update(clock["ns"] * 1e-9, joint_pos=core._q))

    results = {
        "update": time_per_call(update, repeats, trials=5, warmup=5),
        "update+cdr": time_per_call(update_and_serialize, repeats, trials=5, warmup=5),
        "decode": time_per_call(lambda: core.on_joint_state(decode_joint_state(joint_msg)), repeats * 5),
        "world": time_per_call(world_only, repeats, trials=5, warmup=5),
    }
    results["world+step"] = time_per_call(world_and_step, repeats, trials=5, warmup=5)  # a fresh state each step
    stamp = time_msg_from_ns(clock["ns"])
    results["encode"] = time_per_call(lambda: core._encode(stamp, 0), repeats, warmup=5)
    if all(s.encoder.sensor_type == "KinematicTaxel" and not s.encoder.profiles for s in core.schedule):
        results["naive encode"] = time_per_call(lambda: naive_encode(core, 1.0), max(10, repeats // 4), warmup=5)
    results["messages"] = len(update())
    results["taxels"] = n_taxels
    print_row(label, results)
    return results


def print_row(label: str, r: dict) -> None:
    ms = {k: 1e3 * v for k, v in r.items() if k not in ("messages", "taxels")}
    naive = f"{ms['naive encode']:8.3f}" if "naive encode" in ms else f"{'-':>8}"
    ratio = f"{ms['naive encode'] / ms['encode']:5.1f}x" if "naive encode" in ms else f"{'-':>6}"
    print(f"{label:>10} {r['taxels']:>6} {r['messages']:>4} | {ms['update']:7.3f} {ms['update+cdr']:7.3f} "
          f"{r['taxels'] / r['update']:>10.3g} | {ms['decode']:6.3f} {ms['world']:6.3f} {ms['world+step']:10.3f} "
          f"{ms['encode']:6.3f} | {naive} {ratio} | {ms['update+cdr'] / TARGET_MS:5.1f}")


def main() -> None:
    torch.set_num_threads(1)
    print("ms per update (best-of-5 mean); taxel-upd/s = taxels / update time; 'x goal' = (update+cdr) / 0.5 ms")
    print(f"{'scene':>10} {'taxels':>6} {'msgs':>4} | {'update':>7} {'+cdr':>7} {'taxel-upd/s':>10} | "
          f"{'decode':>6} {'world':>6} {'world+step':>10} {'encode':>6} | {'naive enc':>8} {'ratio':>6} | {'x goal':>5}")
    names = ("slide", "finger_left_joint", "finger_right_joint")
    squeeze = joint_message(names, np.array([0.0, SQUEEZE, SQUEEZE]), np.zeros(3))
    bench_scene("demo", make_core(demo_config(), "world"), squeeze, 100)
    bench_scene("demo #6", make_core(demo_config(ISSUE_6_TYPES), "world"), squeeze, 200)
    bench_scene("demo pads", make_core(demo_config(("KinematicTaxel",)), "world"), squeeze, 200)
    bench_scene("pads+out", make_core(demo_config(("KinematicTaxel",), PROFILES), "world"), squeeze, 200)
    bench_scene("demo pads", make_core(demo_config(("KinematicTaxel",)), "world"), squeeze, 200)  # A/B/A
    with tempfile.TemporaryDirectory() as tmp:
        urdf = Path(tmp) / "hand.urdf"
        urdf.write_text(hand_urdf())
        core = make_core(load_config(hand_config(urdf)), "palm")
        names = core.suite.robot.actuated_joint_names
        q = np.array([0.0 if n.endswith("j0") else 0.6 for n in names])
        bench_scene("hand 368", core, joint_message(names, q, np.zeros(len(names))), 100)
        gt = core.suite.read_ground_truth
        touching = sum(int((gt(s.encoder.name).force.norm(dim=-1) > 0).sum()) for s in core.schedule)
        print(f"hand 368: {touching} taxels in contact with the sphere")


if __name__ == "__main__":
    main()
