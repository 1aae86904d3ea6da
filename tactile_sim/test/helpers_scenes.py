"""Small scenes for sensor tests: a fixed box pad (the sensor body) and objects posed through the Python API."""

from __future__ import annotations

import math

import numpy as np
import torch

from tactile_sim.suite import SensorSuite

PAD_SIZE = (0.08, 0.08, 0.02)
"""Pad box edge lengths, m; its top face is the plane z = 0 of the pad frame."""


def pad_object(name: str = "pad") -> dict:
    """A box pad whose top face is z = 0 of its body frame."""
    return {"name": name, "geometry": [{"box": {"size": list(PAD_SIZE)}, "origin": {"xyz": [0, 0, -PAD_SIZE[2] / 2]}}]}


def grid_layout(n: int, half: float = 0.035) -> dict:
    """An n×n planar grid over [−half, half]² on z = 0 (rows along y, columns along x)."""
    return {"grid": {"lo": [-half, -half, 0.0], "hi": [half, half, 0.0], "nx": n, "ny": n}}


def make_suite(sensors: list[dict], objects: list[dict], *, n_envs: int = 0, dtype: str = "float64",
               dt: float = 0.01, seed: int = 0) -> SensorSuite:
    """A suite over a pad plus the given objects (no robot)."""
    cfg = {"suite": {"dt": dt, "n_envs": n_envs, "dtype": dtype, "seed": seed},
           "objects": [pad_object()] + objects, "sensors": sensors}
    return SensorSuite.from_yaml(cfg)


def flipped_plane(name: str = "plane") -> dict:
    """A plane object whose solid side is z ≥ h after posing at height h (outward normal −z)."""
    return {"name": name, "geometry": [{"plane": {}, "origin": {"rpy": [math.pi, 0.0, 0.0]}}]}


def pose(xyz, rot=None):
    """(rot, pos) as float64 tensors for WorldModel.update(object_poses=...)."""
    r = torch.eye(3, dtype=torch.float64) if rot is None else torch.as_tensor(rot, dtype=torch.float64)
    return r, torch.as_tensor(np.asarray(xyz, dtype=np.float64))


def rot_z(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def step(suite: SensorSuite, t: float, **poses):
    """Pose the named objects (name=(xyz) or name=(rot, xyz)) and advance one engine step."""
    object_poses = {}
    for name, p in poses.items():
        object_poses[name] = pose(p[1], p[0]) if isinstance(p, tuple) else pose(p)
    return suite.update(t, object_poses=object_poses)
