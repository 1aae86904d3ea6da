"""Spatial crosstalk of grid taxel layouts (docs/models/imperfections.md#crosstalk): the kernels, validated from the
options (NumPy only; :mod:`.grid_crosstalk` applies them).

Each channel map (M rows × N columns of a regular planar grid) is filtered by a same-size, zero-padded
cross-correlation ``out[r, c] = Σ_ab K[a, b] · in[r + a − h_r, c + b − h_c]`` (the kernel is not flipped; edge probes
lose signal). Kernel rows run along the grid rows (spacing Δv), columns along the grid columns (spacing Δu).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..constants import int_ceil
from ..errors import ConfigError

MAX_KERNEL_TAPS = 1001 * 1001
"""Most taps a Gaussian crosstalk kernel may have (1001 × 1001): a larger σ relative to the taxel spacing is
refused before the kernel is built."""

SPLIT_CHANNELS = 9
"""Channels of a split (normal / shear / torque) force-torque filter: P_n f (3), (I − P_n) f (3), torque (3)."""


def gaussian_crosstalk_kernel(
    n_rows: int, n_cols: int, sigma: float, spacing: float | tuple[float, float] = 1.0
) -> np.ndarray:
    """L1-normalised Gaussian point-spread kernel, float64 (n_rows, n_cols), centred on the self taxel.

    Weight ∝ exp(−d²/(2σ²)) with d the offset from the centre tap: (row offset · row spacing, column offset · column
    spacing). ``spacing`` is a scalar or (row_spacing, col_spacing) in the unit of σ; the default 1.0 measures σ in
    taxel cells (same meaning as Genesis's helper of the same name). n_rows, n_cols must be odd; σ > 0.
    """
    for label, n in (("n_rows", n_rows), ("n_cols", n_cols)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1 or n % 2 == 0:
            raise ValueError(f"gaussian_crosstalk_kernel: {label} must be an odd integer >= 1; got {n!r}")
    if not np.isfinite(sigma) or sigma <= 0:
        raise ValueError(f"gaussian_crosstalk_kernel: sigma must be finite and > 0; got {sigma!r}")
    row_spacing, col_spacing = (spacing, spacing) if np.ndim(spacing) == 0 else tuple(spacing)
    if not (np.isfinite(row_spacing) and np.isfinite(col_spacing) and row_spacing > 0 and col_spacing > 0):
        raise ValueError(f"gaussian_crosstalk_kernel: spacing must be finite and > 0; got {spacing!r}")
    dr = (np.arange(n_rows) - n_rows // 2) * float(row_spacing)
    dc = (np.arange(n_cols) - n_cols // 2) * float(col_spacing)
    g = np.exp(-(dr[:, None] ** 2 + dc[None, :] ** 2) / (2.0 * float(sigma) ** 2))
    return g / g.sum()


def gaussian_half_sizes(sigma: float, delta_u: float, delta_v: float) -> tuple[int, int]:
    """Half sizes (h_r, h_c) = (max(1, ⌈3σ/Δv⌉), max(1, ⌈3σ/Δu⌉)) (integer-tolerant ceil) of the Gaussian kernel."""
    return max(1, int_ceil(3.0 * sigma / delta_v)), max(1, int_ceil(3.0 * sigma / delta_u))


def gaussian_option_kernel(strength: float, sigma: float, delta_u: float, delta_v: float) -> np.ndarray:
    """Kernel of the Gaussian options: K = s·G + (1 − s)·δ_centre, G on the half sizes of
    :func:`gaussian_half_sizes`, float64 (2h_r + 1, 2h_c + 1). σ, Δu, Δv in m."""
    h_r, h_c = gaussian_half_sizes(sigma, delta_u, delta_v)
    k = strength * gaussian_crosstalk_kernel(2 * h_r + 1, 2 * h_c + 1, sigma, spacing=(delta_v, delta_u))
    k[h_r, h_c] += 1.0 - strength
    return k


@dataclass(frozen=True)
class CrosstalkKernel:
    """A sensor's crosstalk kernel: planes float64 [C, h, w], C = 1 (all channels), 2 ([normal force, shear force +
    torque]) or 3 ([normal force, shear force, torque]); normal: unit grid normal (3,) for C > 1, else None."""

    planes: np.ndarray
    normal: np.ndarray | None = None

    @property
    def split(self) -> bool:
        return self.planes.shape[0] > 1

    def channel_kernels(self, channels: int) -> np.ndarray:
        """Kernel per filtered channel: [K, h, w] (C = 1) or [9, h, w] for the split channels of SPLIT_CHANNELS."""
        if not self.split:
            return np.repeat(self.planes, channels, axis=0)
        normal, shear = self.planes[0], self.planes[1]
        torque = self.planes[-1]
        return np.stack([normal] * 3 + [shear] * 3 + [torque] * 3)

    def expansion(self) -> np.ndarray:
        """Split filters only: [9, 6] map from (force, torque) to (P_n f, (I − P_n) f, torque), P_n = n nᵀ."""
        p_n = np.outer(self.normal, self.normal)
        e = np.zeros((SPLIT_CHANNELS, 6))
        e[0:3, 0:3] = p_n
        e[3:6, 0:3] = np.eye(3) - p_n
        e[6:9, 3:6] = np.eye(3)
        return e


def crosstalk_kernel_from_options(
    *,
    strength: float,
    sigma: float,
    kernel,
    delta_u: float,
    delta_v: float,
    channels: int,
    normal,
    where: str,
) -> CrosstalkKernel | None:
    """Validate and build a sensor's kernel; None when it is an exact identity (strength 0 or a delta kernel), so
    the filter is skipped and the stage is an exact no-op. Raises ConfigError (docs/models/scene.md#common-options
    format) for bad kernels; warns
    when a kernel plane does not sum to 1."""
    if kernel is None and strength > 0:
        h_r, h_c = gaussian_half_sizes(sigma, delta_u, delta_v)
        if (2 * h_r + 1) * (2 * h_c + 1) > MAX_KERNEL_TAPS:
            raise ConfigError(f"{where}.crosstalk_sigma: a Gaussian over taxels {delta_u:g} x {delta_v:g} m apart "
                              f"needs a {2 * h_r + 1} x {2 * h_c + 1} kernel; got {sigma!r}; allowed: a sigma whose "
                              f"kernel (2 ceil(3 sigma / spacing) + 1 per axis) has at most {MAX_KERNEL_TAPS} taps")
    if kernel is None:
        planes = gaussian_option_kernel(strength, sigma, delta_u, delta_v)[None] if strength > 0 else None
    else:
        planes = _checked_kernel(kernel, channels, where)
    if planes is None:
        return None
    h, w = planes.shape[1:]
    delta = np.zeros((h, w))
    delta[h // 2, w // 2] = 1.0
    if all(np.array_equal(p, delta) for p in planes):
        return None
    unit = None
    if planes.shape[0] > 1:
        if normal is None:
            raise ValueError(f"{where}: a split crosstalk kernel needs the grid normal (grid_normal)")
        n = np.asarray(normal, dtype=np.float64).reshape(3)
        unit = n / np.linalg.norm(n)
    return CrosstalkKernel(planes=planes, normal=unit)


def _checked_kernel(kernel, channels: int, where: str) -> np.ndarray:
    """A user kernel as float64 [C, h, w] after the checks of docs/models/imperfections.md#crosstalk."""
    allowed = "finite array (h, w), (2, h, w) or (3, h, w) with odd h, w"
    try:
        k = np.asarray(kernel, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(
            f"{where}.crosstalk_kernel: not a numeric array; got {kernel!r}; allowed: {allowed}"
        ) from None
    if k.ndim == 2:
        k = k[None]
    if k.ndim != 3 or k.shape[0] not in (1, 2, 3) or k.shape[1] % 2 == 0 or k.shape[2] % 2 == 0:
        raise ConfigError(
            f"{where}.crosstalk_kernel: wrong shape; got shape {tuple(np.shape(kernel))}; allowed: {allowed}"
        )
    if not np.isfinite(k).all():
        raise ConfigError(f"{where}.crosstalk_kernel: not finite; got {kernel!r}; allowed: {allowed}")
    if k.shape[0] > 1 and channels != 6:
        raise ConfigError(
            f"{where}.crosstalk_kernel: a (2|3, h, w) kernel splits force and torque; got shape {k.shape} for a "
            f"sensor with {channels} channels; allowed: (h, w)"
        )
    for i, plane in enumerate(k):
        total = plane.sum()
        if abs(total - 1.0) > 1e-9:  # warning only; never gates the model
            warnings.warn(f"{where}.crosstalk_kernel: plane {i} sums to {total:.6g}, not 1 (gain change)", stacklevel=4)
    return k
