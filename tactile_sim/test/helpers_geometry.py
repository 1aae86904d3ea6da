"""Shared helpers for the geometry tests: poses, one-call query wrappers and independent primitive truths."""

from __future__ import annotations

import math

import numpy as np
import torch

from tactile_sim.geometry.shapes import Shape, ShapeKind


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random proper rotation (3, 3)."""
    q, r = np.linalg.qr(rng.standard_normal((3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def body_poses(rots, poss, dtype=torch.float64):
    """Torch (rot [E, B, 3, 3], pos [E, B, 3]) from nested NumPy poses (E, B, 3, 3) / (E, B, 3)."""
    return (torch.as_tensor(np.asarray(rots, dtype=np.float64), dtype=dtype),
            torch.as_tensor(np.asarray(poss, dtype=np.float64), dtype=dtype))


def identity_poses(n_envs: int, n_bodies: int, dtype=torch.float64):
    return body_poses(np.tile(np.eye(3), (n_envs, n_bodies, 1, 1)), np.zeros((n_envs, n_bodies, 3)), dtype)


def run_query(sq, points, rot=None, pos=None, mask=None, cutoff=math.inf, exact=False, unsigned=False):
    """One-group query returning cloned NumPy arrays (sd, normal, closest, shape, body).

    points: (P, 3) or (E, P, 3); rot/pos default to identity poses of enough bodies; mask: (S,) bools (default all);
    cutoff: scalar or (P,).
    """
    pts = torch.as_tensor(np.asarray(points, dtype=np.float64), dtype=sq.dtype)
    if pts.dim() == 2:
        pts = pts[None]
    e, p, _ = pts.shape
    if rot is None:
        rot, pos = identity_poses(e, int(sq.shape_body.max()) + 1 if sq.n_shapes else 1, sq.dtype)
    m = torch.ones(1, sq.n_shapes, dtype=torch.bool) if mask is None else torch.as_tensor(mask)[None]
    cut = torch.as_tensor(np.broadcast_to(np.asarray(cutoff, dtype=np.float64), (p,)).copy(), dtype=sq.dtype)
    res = sq.query(pts, rot.to(sq.dtype), pos.to(sq.dtype), torch.zeros(p, dtype=torch.int32), m, cut,
                   torch.tensor([bool(exact)]), unsigned=unsigned)
    return {k: getattr(res, k).clone().numpy() for k in res._fields}


def primitive_inside(shape: Shape, p: np.ndarray) -> np.ndarray:
    """Strictly-inside test in the shape frame, straight from the shape definitions of docs/models/scene.md#bodies."""
    k, s = shape.kind, shape.size
    if k == ShapeKind.SPHERE:
        return np.linalg.norm(p, axis=-1) < s[0]
    if k == ShapeKind.BOX:
        return np.all(np.abs(p) < np.asarray(s), axis=-1)
    if k == ShapeKind.CAPSULE:
        axis_pt = np.clip(p[..., 2], -s[1] / 2, s[1] / 2)
        return np.linalg.norm(p - np.stack([0 * axis_pt, 0 * axis_pt, axis_pt], -1), axis=-1) < s[0]
    if k == ShapeKind.CYLINDER:
        return (np.linalg.norm(p[..., :2], axis=-1) < s[0]) & (np.abs(p[..., 2]) < s[1] / 2)
    if k == ShapeKind.PLANE:
        return p[..., 2] < 0
    raise ValueError(k)


def primitive_surface_residual(shape: Shape, c: np.ndarray) -> np.ndarray:
    """Distance-like residual that is 0 exactly on the surface of a primitive (shape frame)."""
    k, s = shape.kind, shape.size
    if k == ShapeKind.SPHERE:
        return np.abs(np.linalg.norm(c, axis=-1) - s[0])
    if k == ShapeKind.BOX:
        q = np.abs(c) - np.asarray(s)
        return np.abs(q.max(axis=-1)) + np.clip(q, 0, None).max(axis=-1)
    if k == ShapeKind.CAPSULE:
        z = np.clip(c[..., 2], -s[1] / 2, s[1] / 2)
        return np.abs(np.linalg.norm(c - np.stack([0 * z, 0 * z, z], -1), axis=-1) - s[0])
    if k == ShapeKind.CYLINDER:
        d_rad = np.linalg.norm(c[..., :2], axis=-1) - s[0]
        d_ax = np.abs(c[..., 2]) - s[1] / 2
        return np.abs(np.maximum(d_rad, d_ax))
    if k == ShapeKind.PLANE:
        return np.abs(c[..., 2])
    raise ValueError(k)


def primitive_surface_grid(shape: Shape, n: int = 60) -> np.ndarray:
    """Dense parametric points on a primitive's surface (shape frame), for "nothing is closer" checks."""
    k, s = shape.kind, shape.size
    t = (np.arange(n) + 0.5) / n
    if k == ShapeKind.SPHERE or k == ShapeKind.CAPSULE:
        th, ph = np.meshgrid(np.pi * t, 2 * np.pi * t, indexing="ij")
        u = np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], -1).reshape(-1, 3)
        pts = s[0] * u
        if k == ShapeKind.CAPSULE:
            pts[:, 2] += np.where(u[:, 2] >= 0, s[1] / 2, -s[1] / 2)
            ph2, z2 = np.meshgrid(2 * np.pi * t, (t - 0.5) * s[1], indexing="ij")
            side = np.stack([s[0] * np.cos(ph2), s[0] * np.sin(ph2), z2], -1).reshape(-1, 3)
            pts = np.concatenate([pts, side])
        return pts
    if k == ShapeKind.BOX:
        h = np.asarray(s)
        a, b = np.meshgrid(2 * t - 1, 2 * t - 1, indexing="ij")
        a, b = a.reshape(-1), b.reshape(-1)
        faces = []
        for axis in range(3):
            u, v = [x for x in range(3) if x != axis]
            for sign in (1, -1):
                f = np.zeros((len(a), 3))
                f[:, axis], f[:, u], f[:, v] = sign * h[axis], a * h[u], b * h[v]
                faces.append(f)
        return np.concatenate(faces)
    if k == ShapeKind.CYLINDER:
        r, half = s[0], s[1] / 2
        ph, z = np.meshgrid(2 * np.pi * t, (2 * t - 1) * half, indexing="ij")
        side = np.stack([r * np.cos(ph), r * np.sin(ph), z], -1).reshape(-1, 3)
        rho, ph = np.meshgrid(r * t, 2 * np.pi * t, indexing="ij")
        disc = np.stack([rho * np.cos(ph), rho * np.sin(ph), 0 * rho], -1).reshape(-1, 3)
        return np.concatenate([side, disc + [0, 0, half], disc - [0, 0, half]])
    raise ValueError(k)


PRIMITIVES = {
    "sphere": Shape(ShapeKind.SPHERE, (0.05,), name="sphere"),
    "box": Shape(ShapeKind.BOX, (0.04, 0.06, 0.03), name="box"),
    "capsule": Shape(ShapeKind.CAPSULE, (0.03, 0.08), name="capsule"),
    "cylinder": Shape(ShapeKind.CYLINDER, (0.04, 0.1), name="cylinder"),
}
"""One of each bounded primitive, centred at its frame origin (m)."""
