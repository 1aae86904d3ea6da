"""Step cost of JointTorque (docs/models/joint_torque.md#joint-torque) on the Panda of example-robot-data with 4
contact sensors as load sources.

Scene: the Panda (primitive collision shapes, visuals dropped; 7 arm joints + 2 finger joints), a 4×4 KinematicTaxel
pad on each of panda_link3…6 (the contact sources, "auto"), one JointTorque over every joint, joint samples with
message velocities. Rows, for 1, 16 and 1024 envs: ``RNEA`` the world layer's inverse dynamics alone
(``InverseDynamics.rnea_movable`` with an external wrench on every link), ``JointTorque`` the sensor evaluation
(estimator, contact loads from the taxels' latest ground truth, RNEA, pipeline) and ``engine step`` (the four taxel
pads, then JointTorque). Baseline (ratio = baseline time / row time): pinocchio ``rnea(q, v, a, fext)`` called once
per env in a Python loop (its C++ per call, plus the loop), with the same states and one external wrench per loaded
link. ``--profile`` prints a cProfile summary of the JointTorque evaluation.

    python bench/torque.py
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import re
import sysconfig
import tempfile
from pathlib import Path

import numpy as np
import torch

from tactile_sim.suite import SensorSuite
from timing import time_per_call

LINKS = ("panda_link3", "panda_link4", "panda_link5", "panda_link6")


def panda() -> tuple[Path, Path]:
    """(URDF with primitive collisions, the share folder its package:// URIs resolve against)."""
    for key in ("purelib", "platlib"):
        share = Path(sysconfig.get_paths()[key]) / "cmeel.prefix" / "share"
        urdf = share / "example-robot-data" / "robots" / "panda_description" / "urdf" / "panda_collision.urdf"
        if urdf.is_file():
            return urdf, share
    raise SystemExit("example-robot-data is not installed")


def build(n_envs: int) -> SensorSuite:
    urdf, share = panda()
    text = re.sub(r"<visual>.*?</visual>", "", urdf.read_text(), flags=re.S)  # meshes play no part here
    urdf = Path(tempfile.mkdtemp()) / "panda_collision_only.urdf"
    urdf.write_text(text)
    pad = {"grid": {"lo": [-0.03, -0.03, 0.09], "hi": [0.03, 0.03, 0.09], "nx": 4, "ny": 4}}
    sensors = [{"type": "KinematicTaxel", "name": f"skin{i}", "link": link, "probe_local_pos": pad,
                "probe_radius": 0.005} for i, link in enumerate(LINKS)]
    sensors.append({"type": "JointTorque", "name": "tau", "noise": 0.01})
    balls = [{"name": f"ball{i}", "geometry": [{"sphere": {"radius": 0.05}}], "pose": {"xyz": [0.3, 0.1 * i, 0.5]}}
             for i in range(len(LINKS))]
    return SensorSuite.from_yaml({"suite": {"dt": 0.001, "n_envs": n_envs},
                                  "robot": {"urdf": str(urdf), "search_paths": [str(share)]},
                                  "objects": balls, "sensors": sensors})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", action="store_true", help="cProfile summary of the JointTorque evaluation")
    args = parser.parse_args()
    torch.set_num_threads(1)
    import pinocchio as pin

    urdf, _ = panda()
    model = pin.buildModelFromUrdf(str(urdf))
    data = model.createData()
    print(f"{'what':>16} {'envs':>5} {'dofs':>5} | {'ms/step':>9} {'joint-upd/s':>12} | {'pinocchio ms':>12} "
          f"{'ratio':>7}")
    rng = np.random.default_rng(0)
    for n_envs in (1, 16, 1024):
        suite = build(n_envs)
        n_act = suite.robot.n_actuated
        q = rng.uniform(-1, 1, (n_envs, n_act))
        for k in range(3):
            state = suite.update(0.001 * k, joint_pos=q + 0.001 * k, joint_vel=np.full((n_envs, n_act), 1.0))
        jt = suite.locate("tau")[0]
        repeats = {1: 300, 16: 100}.get(n_envs, 10)
        qdd = torch.as_tensor(rng.normal(0, 1, state.joint_pos.shape), dtype=state.joint_pos.dtype)
        wrench = torch.as_tensor(rng.normal(0, 1, (n_envs, suite.robot.n_links, 6)), dtype=state.joint_pos.dtype)
        dynamics = suite.world.dynamics
        t_rnea = time_per_call(lambda: dynamics.rnea_movable(state.joint_pos, state.joint_vel, qdd, f_ext=wrench),
                               repeats, trials=3, warmup=2)
        t_jt = time_per_call(lambda: jt.evaluate(state), repeats, trials=3, warmup=2)
        t_step = time_per_call(lambda: suite.step(state), repeats, trials=3, warmup=2)
        qm = state.joint_pos.double().numpy()
        vm = state.joint_vel.double().numpy()
        am = qdd.double().numpy()
        fext = [pin.Force.Zero() for _ in range(model.njoints)]
        for link in LINKS:
            fext[model.getJointId(suite.robot.parent_joint(link).name)] = pin.Force(rng.normal(0, 1, 6))

        def pinocchio_loop():
            for e in range(n_envs):
                pin.rnea(model, data, qm[e], vm[e], am[e], fext)

        t_pin = time_per_call(pinocchio_loop, repeats, trials=3, warmup=2)
        n = suite.robot.n_movable
        for what, t in (("RNEA", t_rnea), ("JointTorque", t_jt), ("engine step", t_step)):
            print(f"{what:>16} {n_envs:>5} {n:>5} | {t * 1e3:>9.3f} {n * n_envs / t:>12.3g} | {t_pin * 1e3:>12.3f} "
                  f"{t_pin / t:>7.2f}")
        if args.profile:
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(repeats):
                jt.evaluate(state)
            profile.disable()
            pstats.Stats(profile).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
