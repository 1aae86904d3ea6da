"""Rigid-transform helpers.

Rotations are 3×3 matrices internally (``x_W = R x_B + o``). Quaternions appear only at boundaries, in ROS order
(x, y, z, w). Euler angles are fixed-axis X-Y-Z: ``R = Rz(yaw) · Ry(pitch) · Rx(roll)``. All functions are batched
over leading dimensions and work on any torch device/dtype; the ``*_np`` variants take and return float64 NumPy.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from ..constants import EPS_LEN, QUAT_NORM_TOL


def quat_to_matrix(q: torch.Tensor) -> torch.Tensor:
    """Unit quaternion (x, y, z, w) ``[..., 4]`` → rotation matrix ``[..., 3, 3]`` (normalises its input)."""
    q = q / torch.linalg.vector_norm(q, dim=-1, keepdim=True)
    x, y, z, w = q.unbind(-1)
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    rows = (
        1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy),
        2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx),
        2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy),
    )
    return torch.stack(rows, dim=-1).reshape(q.shape[:-1] + (3, 3))


def matrix_to_quat(r: torch.Tensor) -> torch.Tensor:
    """Rotation matrix ``[..., 3, 3]`` → unit quaternion (x, y, z, w) ``[..., 4]`` with w ≥ 0 (Shepperd's method)."""
    m = r
    trace = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    diag = torch.stack([m[..., 0, 0], m[..., 1, 1], m[..., 2, 2], trace], dim=-1)
    k = torch.argmax(diag, dim=-1)
    # four candidate solutions, pick the numerically best per element
    c_w = torch.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1], 1 + trace], -1)
    c_x = torch.stack([1 + 2 * m[..., 0, 0] - trace, m[..., 0, 1] + m[..., 1, 0], m[..., 0, 2] + m[..., 2, 0],
                       m[..., 2, 1] - m[..., 1, 2]], -1)
    c_y = torch.stack([m[..., 0, 1] + m[..., 1, 0], 1 + 2 * m[..., 1, 1] - trace, m[..., 1, 2] + m[..., 2, 1],
                       m[..., 0, 2] - m[..., 2, 0]], -1)
    c_z = torch.stack([m[..., 0, 2] + m[..., 2, 0], m[..., 1, 2] + m[..., 2, 1], 1 + 2 * m[..., 2, 2] - trace,
                       m[..., 1, 0] - m[..., 0, 1]], -1)
    cands = torch.stack([c_x, c_y, c_z, c_w], dim=-2)  # [..., 4, 4]
    q = torch.gather(cands, -2, k[..., None, None].expand(k.shape + (1, 4))).squeeze(-2)
    q = q / torch.linalg.vector_norm(q, dim=-1, keepdim=True)
    return torch.where(q[..., 3:4] < 0, -q, q)


def rpy_to_matrix(rpy: torch.Tensor) -> torch.Tensor:
    """Fixed-axis X-Y-Z angles (roll, pitch, yaw) in rad ``[..., 3]`` → ``Rz(yaw) Ry(pitch) Rx(roll)`` ``[..., 3, 3]``."""
    r, p, y = rpy.unbind(-1)
    cr, sr, cp, sp, cy, sy = torch.cos(r), torch.sin(r), torch.cos(p), torch.sin(p), torch.cos(y), torch.sin(y)
    rows = (
        cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr,
        sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr,
        -sp, cp * sr, cp * cr,
    )
    return torch.stack(rows, dim=-1).reshape(rpy.shape[:-1] + (3, 3))


def rpy_to_matrix_np(rpy) -> np.ndarray:
    """NumPy float64 version of :func:`rpy_to_matrix` for a single (roll, pitch, yaw): a new array, computed once
    per process for each distinct angles (by their float64 bits: a URDF repeats a few, and is parsed more than
    once per build)."""
    angles = np.asarray(rpy, dtype=np.float64)
    return _rpy_matrix(angles.shape, angles.tobytes()).copy()


@functools.lru_cache(maxsize=4096)
def _rpy_matrix(shape: tuple[int, ...], bits: bytes) -> np.ndarray:
    """:func:`rpy_to_matrix` of the float64 angles of ``shape`` whose bytes are ``bits`` (read-only: shared)."""
    matrix = rpy_to_matrix(torch.from_numpy(np.frombuffer(bits, np.float64).reshape(shape).copy())).numpy()
    matrix.flags.writeable = False
    return matrix


def quat_to_matrix_np(q) -> np.ndarray:
    """NumPy float64 version of :func:`quat_to_matrix` for one quaternion (x, y, z, w): the same formula on Python
    floats (a TF message per input is converted on the host, where torch's per-op dispatch would dominate)."""
    x, y, z, w = (float(c) for c in q)
    n = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    return np.array([[1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy)],
                     [2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx)],
                     [2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy)]])


def scan_finite(values: np.ndarray) -> bool:
    """Whether every value of the short 1-D host array ``values`` (one input message's numbers) is finite: a Python
    scan, cheaper than a NumPy reduction (several µs per call) for a few values."""
    return all(map(math.isfinite, values.tolist()))


def check_quaternion(q, where: str) -> np.ndarray:
    """Validate an incoming quaternion (x, y, z, w): reject |‖q‖ − 1| > 1e-3 or non-finite, else normalise.

    Raises ``ValueError`` naming ``where``.
    """
    q = np.asarray(q, dtype=np.float64)
    n2 = float(q.dot(q)) if q.shape == (4,) else math.nan  # non-finite for any non-finite component
    n = math.sqrt(n2) if math.isfinite(n2) else math.nan  # == np.linalg.norm(q), without its per-call overhead
    if not abs(n - 1.0) <= QUAT_NORM_TOL:
        raise ValueError(f"{where}: quaternion (x, y, z, w) must be finite with norm 1 ± {QUAT_NORM_TOL}; got {q.tolist()}")
    return q / n


def check_rotation(r, where: str) -> np.ndarray:
    """Validate an incoming rotation matrix: reject a non-finite or non-3×3 value, |RᵀR − I| > 1e-3 (the
    quaternion-norm tolerance of docs/models/conventions.md#constants) or det < 0; otherwise return the nearest
    rotation (float64).

    Raises ``ValueError`` naming ``where``.
    """
    m = np.asarray(r, dtype=np.float64)
    if m.shape != (3, 3) or not np.all(np.isfinite(m)):
        raise ValueError(f"{where}: rotation must be a finite 3×3 matrix; got shape {m.shape}")
    ortho = float(np.abs(m.T @ m - np.eye(3)).max())
    det = float(np.linalg.det(m))
    if ortho > QUAT_NORM_TOL or det < 0:
        raise ValueError(f"{where}: not a rotation: need |RᵀR − I| ≤ {QUAT_NORM_TOL} and det > 0; "
                         f"got |RᵀR − I| = {ortho:.3g}, det = {det:.6g}")
    return quat_to_matrix(matrix_to_quat(torch.as_tensor(m))).numpy()


def skew(v: torch.Tensor) -> torch.Tensor:
    """Cross-product matrix ``[v]×`` of ``[..., 3]`` → ``[..., 3, 3]``."""
    x, y, z = v.unbind(-1)
    zero = torch.zeros_like(x)
    return torch.stack([zero, -z, y, z, zero, -x, -y, x, zero], dim=-1).reshape(v.shape[:-1] + (3, 3))


def so3_exp(w: torch.Tensor) -> torch.Tensor:
    """Rotation vector ``[..., 3]`` (rad) → rotation matrix ``[..., 3, 3]`` (Rodrigues, series near 0)."""
    theta = torch.linalg.vector_norm(w, dim=-1)[..., None, None]
    k = skew(w)
    small = theta < 1e-4
    t = torch.where(small, torch.ones_like(theta), theta)
    a = torch.where(small, 1 - theta**2 / 6, torch.sin(t) / t)
    b = torch.where(small, 0.5 - theta**2 / 24, (1 - torch.cos(t)) / t**2)
    eye = torch.eye(3, dtype=w.dtype, device=w.device).expand(k.shape)
    return eye + a * k + b * (k @ k)


def so3_log(r: torch.Tensor) -> torch.Tensor:
    """Rotation matrix ``[..., 3, 3]`` → rotation vector ``[..., 3]`` with angle in [0, π].

    Goes through the quaternion (w ≥ 0), which is well conditioned over the whole range, including near π.
    """
    q = matrix_to_quat(r)
    v, w = q[..., :3], q[..., 3]
    s = torch.linalg.vector_norm(v, dim=-1)
    angle = 2 * torch.atan2(s, w)
    small = s < 1e-7
    scale = torch.where(small, 2.0 / torch.clamp(w, min=0.5), angle / torch.where(small, torch.ones_like(s), s))
    return v * scale[..., None]


def transform_points(rot: torch.Tensor, pos: torch.Tensor, pts: torch.Tensor) -> torch.Tensor:
    """``x_W = R x_B + o``: rot ``[..., 3, 3]``, pos ``[..., 3]``, pts ``[..., N, 3]`` → ``[..., N, 3]``."""
    return pts @ rot.transpose(-1, -2) + pos[..., None, :]


def normalize(v: torch.Tensor, eps: float = EPS_LEN) -> torch.Tensor:
    """Unit vectors ``[..., 3]``; vectors shorter than ``eps`` become 0 (callers apply their own fallback)."""
    n = torch.linalg.vector_norm(v, dim=-1, keepdim=True)
    return torch.where(n > eps, v / torch.where(n > eps, n, torch.ones_like(n)), torch.zeros_like(v))


def pose_from_xyz_rpy(xyz, rpy) -> tuple[np.ndarray, np.ndarray]:
    """(rotation 3×3, translation 3) float64 from a URDF/YAML ``xyz`` (m) and ``rpy`` (rad)."""
    return rpy_to_matrix_np(rpy), np.asarray(xyz, dtype=np.float64)
