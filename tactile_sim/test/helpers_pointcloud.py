"""Shared helpers for the point-cloud and surface-distance sensor tests: small pad scenes built with
``SensorSuite.from_yaml`` and independent NumPy truths (box signed distance, cloud posing)."""

from __future__ import annotations

import numpy as np
import torch

from tactile_sim.suite import SensorSuite

PAD_HALF = np.array([0.04, 0.04, 0.01])
"""Half-extents of the pad box, m; its top face is the plane z = 0 of the pad body frame."""


def pad(name: str = "pad") -> dict:
    """The sensor body: an 8×8×2 cm box whose top face is z = 0 of its frame (fixed at the world origin)."""
    return {"name": name, "geometry": [{"box": {"size": list(2 * PAD_HALF)}, "origin": {"xyz": [0, 0, -PAD_HALF[2]]}}]}


def sphere(name: str, radius: float, xyz=(0.0, 0.0, 1.0)) -> dict:
    return {"name": name, "geometry": [{"sphere": {"radius": radius}}], "pose": {"xyz": list(xyz)}}


def box(name: str, size, xyz=(0.0, 0.0, 1.0)) -> dict:
    return {"name": name, "geometry": [{"box": {"size": list(size)}}], "pose": {"xyz": list(xyz)}}


def make_suite(sensors: list[dict], objects: list[dict], *, n_envs: int = 0, dtype: str = "float64",
               dt: float = 0.01) -> SensorSuite:
    """A suite over the pad plus ``objects`` (no robot)."""
    cfg = {"suite": {"dt": dt, "n_envs": n_envs, "dtype": dtype}, "objects": [pad()] + objects, "sensors": sensors}
    return SensorSuite.from_yaml(cfg)


def lattice(rows: int, cols: int, du: float, dv: float, origin=(0.0, 0.0, 0.0)) -> np.ndarray:
    """(rows, cols, 3) positions origin + c·du·e_x + r·dv·e_y (a regular planar grid on z = origin_z)."""
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    return np.stack([origin[0] + c * du, origin[1] + r * dv, np.full(r.shape, origin[2])], axis=-1)


def centred_lattice(n: int, spacing: float) -> np.ndarray:
    """(n, n, 3) grid centred on the pad origin."""
    h = (n - 1) / 2 * spacing
    return lattice(n, n, spacing, spacing, (-h, -h, 0.0))


def pose(xyz, rot=None):
    """(rot, pos) float64 tensors for ``world.update(object_poses=...)``."""
    r = torch.eye(3, dtype=torch.float64) if rot is None else torch.as_tensor(np.asarray(rot), dtype=torch.float64)
    return r, torch.as_tensor(np.asarray(xyz, dtype=np.float64))


def rot_z(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def step(suite: SensorSuite, t: float, poses: dict | None = None, twists: dict | None = None):
    """Pose objects (name → xyz, or a pair (rot, xyz)), set twists (name → (lin, ang)) and advance one engine
    step."""
    object_poses = {}
    for name, p in (poses or {}).items():
        object_poses[name] = pose(p[1], p[0]) if len(p) == 2 else pose(p)
    object_twists = {k: tuple(torch.as_tensor(np.asarray(v, dtype=np.float64)) for v in tw)
                     for k, tw in (twists or {}).items()}
    return suite.update(t, object_poses=object_poses, object_twists=object_twists)


def box_sd(points: np.ndarray, half: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """Signed distance of world points (K, 3) to an axis-aligned box (independent of the library's kernels)."""
    q = np.abs(points - centre) - half
    outside = np.linalg.norm(np.maximum(q, 0.0), axis=-1)
    return outside + np.minimum(q.max(axis=-1), 0.0)


def pad_sd(points: np.ndarray) -> np.ndarray:
    """Signed distance to the pad box (fixed at the origin)."""
    return box_sd(points, PAD_HALF, np.array([0.0, 0.0, -PAD_HALF[2]]))


def numpy(x) -> np.ndarray:
    """A tensor (or named tuple field) as a float64 NumPy array."""
    return x.detach().cpu().to(torch.float64).numpy()
