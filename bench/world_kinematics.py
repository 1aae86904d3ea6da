"""Micro-benchmark of the per-step robot motion.

* ``FK + twists``: link poses and exact link twists of the Panda (13 links, ``Kinematics.motion``), compared
  in-process with pinocchio (forwardKinematics with velocities + frame placements + one frame velocity per link),
  looped over the envs — the reference engine.
* ``RNEA + wrenches``: inverse dynamics with link wrenches against pinocchio's rnea.
* ``world update``: one ``WorldModel.update`` of the demo gripper scene (3 joints, 6 links, the can; a NumPy joint
  sample per step, velocities estimated) — the per-step world cost of the node — against the same pinocchio
  forward kinematics of the gripper.

    python bench/world_kinematics.py
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

import numpy as np
import torch

import yaml

from tactile_sim.config import load_config
from tactile_sim.scene_build import build_scene, load_robot
from tactile_sim.world.dynamics import InverseDynamics
from tactile_sim.world.kinematics import Kinematics
from tactile_sim.world.motion import WorldModel
from tactile_sim.world.urdf import RobotModel
from timing import time_per_call

ROOT = Path(__file__).resolve().parents[1]
PANDA = (Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix/share/example-robot-data/robots"
         / "panda_description/urdf/panda.urdf")
DEMO_YAML = ROOT / "tactile_sim" / "config" / "demo_sensors.yaml"
GRIPPER = ROOT / "tactile_sim" / "tactile_sim" / "data" / "demo" / "gripper.urdf"  # the robot of DEMO_YAML


def pinocchio_refs(urdf: Path, robot: RobotModel, qm: np.ndarray):
    """Reference functions over the envs of qm [E, n_mov] (velocities and accelerations = qm): pinocchio's FK with
    velocities plus every link's frame velocity, and its RNEA; (None, None) without pinocchio."""
    try:
        import pinocchio as pin
    except ImportError:
        return None, None
    model = pin.buildModelFromUrdf(str(urdf))
    data = model.createData()
    frames = [model.getFrameId(n, pin.BODY) for n in robot.link_names]
    idx = [model.joints[model.getJointId(n)].idx_q for n in robot.movable_joint_names]
    q = np.zeros((len(qm), model.nq))
    q[:, idx] = qm
    v = q[:, : model.nv].copy()
    fext = [pin.Force.Zero() for _ in range(model.njoints)]

    def fk():
        for e in range(len(q)):
            pin.forwardKinematics(model, data, q[e], v[e])
            pin.updateFramePlacements(model, data)
            for f in frames:
                pin.getFrameVelocity(model, data, f, pin.LOCAL_WORLD_ALIGNED)

    def rnea():
        for e in range(len(q)):
            pin.rnea(model, data, q[e], v[e], v[e], fext)
    return fk, rnea


def row(label: str, envs: int, links: int, ours, ref, reps: int) -> None:
    t_ours = time_per_call(ours, reps, trials=5, warmup=10)
    t_ref = time_per_call(ref, max(3, reps // 4), warmup=10) if ref is not None else float("nan")
    print(f"{label:>18} {envs:>5} | {t_ours * 1e3:>12.3f} {links * envs / t_ours:>11.3g} | "
          f"{t_ref * 1e3:>12.3f} | {t_ref / t_ours:>6.2f}")


def main() -> None:
    torch.set_num_threads(1)
    robot = RobotModel.from_urdf(PANDA, geometry=())
    kin = Kinematics(robot, dtype=torch.float32)
    dyn = InverseDynamics(kin)
    demo = load_config(yaml.safe_load(DEMO_YAML.read_text()), base_dir=DEMO_YAML.parent)
    gripper = load_robot(demo.robot, None)[0]
    scene = build_scene(demo.objects, gripper, demo.suite.world_frame)

    print(f"{'work':>18} {'envs':>5} | {'ours ms/call':>12} {'link-upd/s':>11} | {'pinocchio ms':>12} | {'ratio':>6}")
    for envs, repeats in [(1, 2000), (16, 500), (1024, 30)]:
        rng = np.random.default_rng(0)
        reps = max(3, repeats // max(1, envs // 16)) if envs > 16 else repeats
        q = torch.as_tensor(rng.uniform(-1, 1, (envs, robot.n_actuated)), dtype=torch.float32)
        qd = torch.as_tensor(rng.uniform(-1, 1, (envs, robot.n_actuated)), dtype=torch.float32)
        wrench = torch.as_tensor(rng.normal(size=(envs, robot.n_links, 6)), dtype=torch.float32)
        ref_fk, ref_rnea = pinocchio_refs(PANDA, robot, kin.movable_positions(q).double().numpy())
        row("FK + twists", envs, robot.n_links, lambda: kin.motion(q, qd), ref_fk, reps)
        row("RNEA + wrenches", envs, robot.n_links, lambda: dyn.rnea(q, qd, qd, f_ext=wrench), ref_rnea, reps)

        world = WorldModel(scene, n_envs=envs)
        qg = rng.uniform(0.0, 0.01, (envs, gripper.n_actuated))
        joints = qg[0] if envs == 1 else torch.as_tensor(qg, dtype=torch.float32)
        clock = [0.0]

        def world_update():
            clock[0] += 1e-3
            world.update(clock[0], joint_pos=joints)

        row("world update", envs, scene.n_links + len(scene.objects), world_update,
            pinocchio_refs(GRIPPER, gripper, qg)[0], reps)


if __name__ == "__main__":
    main()
