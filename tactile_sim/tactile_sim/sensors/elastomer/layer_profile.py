"""In-plane surface response of a bonded incompressible elastomer layer: the profile κ₁ of
docs/models/elastomer_taxel.md#kernels.

    κ₁(ρ) = (1/2π) ∫₀^∞ S(q) J₁(qρ) q dq,    S(q) = 2q² / (sinh 2q − 2q)        (ρ = r/h, dimensionless)

It is the real-space form of the layer transfer function −i k̂ S(|k| h). κ₁ is odd and linear near 0, peaks at
ρ* ≈ 0.9577 (κ₁* ≈ 0.17226) and tends to 3/(4πρ) far away (the free-space squeeze flow).

:func:`layer_profile` tabulates it: values at NODES + 1 equally spaced nodes on [0, RHO_MAX] from a composite
Gauss–Legendre quadrature (S decays as q² e^{−2q}, so the integral is cut at Q_MAX with a tail below 1e-20), then a
cubic spline (natural at ρ = 0, where κ₁ is odd). Relative interpolation error < 1e-10 on the nodes' range; beyond
RHO_MAX the far-field form 3/(4πρ) is used (it agrees with the table to < 1e-9 there). The table is kept in the
``layer_profile`` cache of :mod:`~tactile_sim.derived_cache`, so that a fresh process reads it instead of computing
it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import scipy
from scipy import special
from scipy.interpolate import CubicSpline

from ...derived_cache import cache_dir, key_name, read_payload, write_payload

RHO_MAX = 8.0
"""Upper end of the table; κ₁(ρ) = 3/(4πρ) beyond."""

NODES = 2048
"""Intervals of the table on [0, RHO_MAX] (node spacing 1/256, exact in binary)."""

FAR_FIELD = 3.0 / (4.0 * math.pi)
"""lim ρ κ₁(ρ) for ρ → ∞."""

Q_MAX = 30.0
"""Upper limit of the wavenumber integral (S(30)·30 < 1e-22)."""

PANELS, PANEL_ORDER = 60, 16
"""Composite Gauss–Legendre rule on [0, Q_MAX]: panels of width 0.5 (≤ 0.64 periods of J₁(qρ) for ρ ≤ 8)."""

SERIES_BELOW = 0.5
"""S(q) uses the series of sinh 2q − 2q below this q (the difference cancels catastrophically near 0)."""


def layer_transfer(q: np.ndarray) -> np.ndarray:
    """S(q) = 2q² / (sinh 2q − 2q) for q > 0 (float64 array); ~3/(2q) as q → 0, ~4q² e^{−2q} as q → ∞."""
    q = np.asarray(q, dtype=np.float64)
    x = 2.0 * q
    small = q < SERIES_BELOW
    # sinh x − x = Σ_{k≥1} x^(2k+1)/(2k+1)!; x < 1 so 8 terms reach round-off
    xs = x[small]
    term = xs**3 / 6.0
    denominator = np.zeros_like(xs)
    for k in range(1, 9):
        denominator += term
        term = term * xs * xs / ((2 * k + 2) * (2 * k + 3))
    out = np.empty_like(q)
    out[small] = 2.0 * q[small] ** 2 / denominator
    xl = x[~small]
    with np.errstate(over="ignore"):
        out[~small] = 2.0 * q[~small] ** 2 / (np.sinh(xl) - xl)
    return out


def layer_profile_values(rho: np.ndarray) -> np.ndarray:
    """κ₁ at the given ρ ≥ 0 (float64 array) by composite Gauss–Legendre quadrature (accurate for ρ ≤ RHO_MAX)."""
    x, w = np.polynomial.legendre.leggauss(PANEL_ORDER)
    edges = np.linspace(0.0, Q_MAX, PANELS + 1)
    half = (edges[1:] - edges[:-1])[:, None] / 2.0
    mid = (edges[1:] + edges[:-1])[:, None] / 2.0
    q = (half * x + mid).reshape(-1)
    weights = (half * w).reshape(-1) * layer_transfer(q) * q / (2.0 * math.pi)
    rho = np.asarray(rho, dtype=np.float64)
    return special.j1(np.multiply.outer(rho, q)) @ weights


@dataclass(frozen=True, eq=False)
class LayerProfile:
    """The tabulated κ₁: piecewise cubics on [0, rho_max] with node spacing ``spacing``.

    coefficients: (NODES, 4) float64 — on interval k, κ₁(kΔ + s) = c0 s³ + c1 s² + c2 s + c3 (0 ≤ s ≤ Δ);
    peak_rho ρ*, peak κ₁*: the maximum of κ₁ (the layer kernel is normalised by κ₁*).
    """

    coefficients: np.ndarray
    spacing: float
    rho_max: float
    peak_rho: float
    peak: float

    def __call__(self, rho) -> np.ndarray:
        """κ₁(ρ) from the table (3/(4πρ) beyond rho_max), float64, for ρ ≥ 0."""
        rho = np.asarray(rho, dtype=np.float64)
        k = np.minimum((rho / self.spacing).astype(np.int64), len(self.coefficients) - 1)
        s = rho - k * self.spacing
        c = self.coefficients[k]
        inside = c[..., 3] + s * (c[..., 2] + s * (c[..., 1] + s * c[..., 0]))
        with np.errstate(divide="ignore"):
            return np.where(rho >= self.rho_max, FAR_FIELD / rho, inside)


@lru_cache(maxsize=1)
def layer_profile() -> LayerProfile:
    """The κ₁ table, once per process: read from the ``layer_profile`` cache of :mod:`~tactile_sim.derived_cache`
    (keyed by this module's source and the numpy and scipy versions: its bytes are those computed), else computed
    (≈ 0.06 s: :func:`compute_layer_profile`) and written there."""
    path = cache_dir("layer_profile") / key_name(Path(__file__).read_bytes(), np.__version__, scipy.__version__)
    payload = read_payload(path)
    if payload is not None and len(payload) == 8 * (4 * NODES + 2):
        values = np.frombuffer(payload, "<f8").astype(np.float64, copy=False)
        values.setflags(write=False)  # as a computed table
        return LayerProfile(values[:-2].reshape(NODES, 4), RHO_MAX / NODES, RHO_MAX, float(values[-2]),
                            float(values[-1]))
    profile = compute_layer_profile()
    write_payload(path, np.concatenate([profile.coefficients.reshape(-1), [profile.peak_rho, profile.peak]])
                  .astype("<f8").tobytes())
    return profile


def compute_layer_profile() -> LayerProfile:
    """The κ₁ table computed (see the module docstring)."""
    rho = np.linspace(0.0, RHO_MAX, NODES + 1)
    spline = CubicSpline(rho, layer_profile_values(rho), bc_type=((2, 0.0), "not-a-knot"))
    coefficients = np.ascontiguousarray(spline.c.T)
    coefficients.setflags(write=False)
    stationary = spline.derivative().roots()
    stationary = stationary[(stationary > 0.5) & (stationary < 1.5)]
    peak_rho = float(stationary[np.argmax(spline(stationary))])
    return LayerProfile(coefficients, RHO_MAX / NODES, RHO_MAX, peak_rho, float(spline(peak_rho)))
