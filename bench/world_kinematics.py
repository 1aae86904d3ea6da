"""Micro-benchmark of the per-step robot motion: forward kinematics + exact link twists of the Panda (13 links).

Compared in-process with pinocchio (forwardKinematics with velocities + frame placements + one frame velocity per
link), looped over the envs — the reference engine. Also times RNEA (with link wrenches) against pinocchio's rnea.

    /work/venv/bin/python bench/world_kinematics.py
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

import numpy as np
import torch

from tactile_sim.world.dynamics import InverseDynamics
from tactile_sim.world.kinematics import Kinematics
from tactile_sim.world.urdf import RobotModel
from timing import time_per_call

PANDA = (Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix/share/example-robot-data/robots"
         / "panda_description/urdf/panda.urdf")




def main() -> None:
    torch.set_num_threads(1)
    robot = RobotModel.from_urdf(PANDA, geometry=())
    kin = Kinematics(robot, dtype=torch.float32)
    dyn = InverseDynamics(kin)
    try:
        import pinocchio as pin
    except ImportError:
        pin = None
    if pin is not None:
        model = pin.buildModelFromUrdf(str(PANDA))
        data = model.createData()
        frames = [model.getFrameId(n, pin.BODY) for n in robot.link_names]

    print(f"{'work':>18} {'envs':>5} | {'ours ms/call':>12} {'link-upd/s':>11} | {'pinocchio ms':>12} | {'ratio':>6}")
    for envs, repeats in [(1, 2000), (16, 500), (1024, 30)]:
        rng = np.random.default_rng(0)
        q = torch.as_tensor(rng.uniform(-1, 1, (envs, robot.n_actuated)), dtype=torch.float32)
        qd = torch.as_tensor(rng.uniform(-1, 1, (envs, robot.n_actuated)), dtype=torch.float32)
        wrench = torch.as_tensor(rng.normal(size=(envs, robot.n_links, 6)), dtype=torch.float32)

        def ours_fk():
            rot, pos = kin.fk(q)
            kin.twists(rot, pos, qd)

        def ours_rnea():
            dyn.rnea(q, qd, qd, f_ext=wrench)

        qp = np.zeros((envs, model.nq)) if pin else None
        if pin is not None:
            qp[:, : robot.n_movable] = kin.movable_positions(q).double().numpy()
            vp = qp.copy()

            def ref_fk():
                for e in range(envs):
                    pin.forwardKinematics(model, data, qp[e], vp[e])
                    pin.updateFramePlacements(model, data)
                    for f in frames:
                        pin.getFrameVelocity(model, data, f, pin.LOCAL_WORLD_ALIGNED)

            fext = [pin.Force.Zero() for _ in range(model.njoints)]

            def ref_rnea():
                for e in range(envs):
                    pin.rnea(model, data, qp[e], vp[e], vp[e], fext)

        reps = max(3, repeats // max(1, envs // 16)) if envs > 16 else repeats
        for label, ours, ref in [("FK + twists", ours_fk, ref_fk if pin else None),
                                 ("RNEA + wrenches", ours_rnea, ref_rnea if pin else None)]:
            t_ours = time_per_call(ours, reps, trials=5, warmup=10)
            t_ref = time_per_call(ref, max(3, reps // 4), warmup=10) if ref is not None else float("nan")
            print(f"{label:>18} {envs:>5} | {t_ours * 1e3:>12.3f} {robot.n_links * envs / t_ours:>11.3g} | "
                  f"{t_ref * 1e3:>12.3f} | {t_ref / t_ours:>6.2f}")


if __name__ == "__main__":
    main()
