"""``SensorSuite.rewind``: a suite that has run (evaluations, a partial reset, time up to 0.9 s) and is rewound then
gives, step for step and bit for bit, what a newly built suite of the same configuration gives for the same inputs
from t = 0 — for every sensor type of the demo configuration, measured and ground truth (noise, random walk, gains,
dead taxels, delays, latches, thermal state and the JointTorque estimator included; pad_left redraws its gains and
dead taxels at each reset, so the per-reset draws count)."""

import dataclasses

import numpy as np
import torch
import yaml

from tactile_sim.config import load_config
from tactile_sim.config.paths import resolve_package_uri
from tactile_sim.demo_trajectory import DEMO_CONFIG, JOINT_NAMES, gripper_trajectory
from tactile_sim.suite import SensorSuite

ENVS = 2


def tensors(value):
    """The tensors of a read (a tensor, a tuple of them, or a dataclass of them), in a fixed order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in tensors(v)]
    if dataclasses.is_dataclass(value):
        return [t for f in dataclasses.fields(value) for t in tensors(getattr(value, f.name))]
    assert value is None, type(value)
    return []


def step(suite: SensorSuite, t: float, offsets) -> None:
    """One suite update at t (s) with env e on the demo trajectory at t + offsets[e] (positions and velocities)."""
    order = [JOINT_NAMES.index(n) for n in suite.robot.actuated_joint_names]
    samples = [gripper_trajectory(t + o) for o in offsets]
    q = torch.as_tensor(np.stack([s.position[order] for s in samples]), dtype=suite.dtype)
    qd = torch.as_tensor(np.stack([s.velocity[order] for s in samples]), dtype=suite.dtype)
    suite.update(t, joint_pos=q, joint_vel=qd)


def reads_of(suite: SensorSuite, env: int | None = None, ground_truth: bool = False) -> list[tuple[str, bytes]]:
    """(sensor name, the bytes of one tensor) of every measured and ground-truth read with its validity (only the
    ground truth with ``ground_truth``), of one env or all (bytes: NaN contact positions compare equal, and equal
    means bit for bit)."""
    out = []
    for name in suite.sensor_names:
        values = tensors(suite.read_ground_truth(name, True))
        if not ground_truth:
            values = tensors(suite.read(name, with_valid=True)) + values
        out += [(name, (x if env is None else x[env]).detach().cpu().numpy().tobytes()) for x in values]
    return out


def demo_with_reset_draws(folder):
    """The demo configuration with pad_left redrawing its probe gains and dead taxels at each reset."""
    data = yaml.safe_load(resolve_package_uri(DEMO_CONFIG).read_text())
    pad = next(s for s in data["sensors"] if s["name"] == "pad_left")
    pad.update(probe_gain_resample_range=[0.8, 1.2], dead_taxel_probability=0.3)
    (folder / "sensors.yaml").write_text(yaml.safe_dump(data))
    return load_config(folder / "sensors.yaml")


def test_a_rewound_suite_steps_exactly_as_a_new_one(tmp_path):
    config = demo_with_reset_draws(tmp_path)
    used = SensorSuite(config, n_envs=ENVS)
    dt = used.dt
    for k in range(90):  # the gripper closes on the can and squeezes
        step(used, 2.0 + k * dt, (1.0, 2.5))
        if k == 40:
            used.reset([1])  # env 1's reset count now differs from env 0's
    used.rewind()
    new = SensorSuite(config, n_envs=ENVS)
    assert {new.sensor_type(n) for n in new.sensor_names} == {
        "KinematicTaxel", "ContactSensor", "TemperatureGrid", "JointTorque", "ContactProbe", "ContactDepthProbe",
        "ElastomerTaxel", "ProximityTaxel", "SurfaceDistanceProbe"}
    for k in range(120):
        t = k * dt  # earlier than the used suite's last step: time starts over
        step(used, t, (3.0, 3.4))
        step(new, t, (3.0, 3.4))
        for (name, a), (_, b) in zip(reads_of(used), reads_of(new), strict=True):
            assert a == b, f"{name} differs at step {k}"
    assert used.steps == new.steps == 120
