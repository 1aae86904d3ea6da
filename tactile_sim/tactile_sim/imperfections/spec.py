"""One sensor's imperfection options after validation (docs/models/imperfections.md#imperfections,
docs/models/probes.md#probes, docs/models/layouts.md#fillers).

:class:`SensorImperfections` is plain data handed from the sensor/config layers to the measured branch
(:class:`~.pipeline.MeasuredBranch`). Construction validates every value and raises :class:`ConfigError` with the
docs/models/scene.md#common-options format ``<where>.<option>: <what>; got <value>; allowed: <rule>``. It does not
decide which options a sensor
class accepts (that is the sensor's schema); it only checks values and their consistency.

Shapes: n = n_probes (cells, joints) of the sensor, K = channels per probe (1 scalar outputs, 3 ElastomerTaxel
displacement, 6 force + torque). Per-channel options are a scalar or a flat array of length n·K in the sensor's flat
channel order (docs/models/conventions.md#frames: probe-major then xyz; for K = 6 the n·3 force values come before the
n·3 torque values); they
are exposed as float64 arrays [n, K] by :meth:`SensorImperfections.per_channel`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..config.sensor_options import CROSSTALK_KEYS
from ..constants import steps_from_period
from ..errors import ConfigError
from .crosstalk import CrosstalkKernel, crosstalk_kernel_from_options

PER_CHANNEL_OPTIONS = ("noise", "bias", "resolution", "random_walk")


def _fmt(value) -> str:
    """A short printable form of an option value for error messages."""
    if isinstance(value, np.ndarray):
        if value.size > 8:
            return f"array of shape {tuple(value.shape)}"
        return " ".join(np.array2string(value, separator=", ").split())  # one line, also for 2-D arrays
    return repr(value)


@dataclass
class SensorImperfections:
    """Validated imperfection options of one sensor.

    name: sensor name (errors, seed); seed: 63-bit key of its random stream (:func:`.rng.sensor_seed`);
    n_probes: n ≥ 1; dt: evaluation period, s (> 0); channels: K ≥ 1; layout_shape: output layout without env,
    history and channel axes (default (n,)); where: error prefix, e.g. ``layout.yaml:sensors[2]`` or
    ``KinematicTaxel(name='pad')`` (default ``sensor 'name'``); active: [n] bool, False for fillers (default all).
    Generic (docs/models/imperfections.md#hardware): noise σ, bias b, resolution r, random_walk σ_w — scalar or flat
    n·K array.
    Probe level (docs/models/imperfections.md#probe-level): probe_radius_noise a (m), probe_gain (scalar or
    layout-shaped), probe_gain_resample_range
    (lo, hi) or None, dead_taxel_probability p, dead_taxel_value_range (lo, hi).
    Hysteresis (docs/models/imperfections.md#hysteresis): hysteresis_strength s, hysteresis_tau τ (s). Timing
    (docs/models/imperfections.md#validity): delay, jitter (s),
    history_length H. Crosstalk (docs/models/imperfections.md#crosstalk): crosstalk_strength, crosstalk_sigma (m),
    crosstalk_kernel (array or None),
    grid_spacing (Δu, Δv) m of a regular planar grid layout (None: the layout is not one), grid_normal (3,) the
    grid's shared normal (else t_u × t_v; needed for split kernels). sample_validity: the sensor flags samples
    invalid itself (JointTorque warm-up) and passes ``sample_valid`` to ``push``.

    Derived (read-only after construction): delay_steps D; kernel, the crosstalk kernel (None: no crosstalk or an
    exact identity).
    """

    name: str
    seed: int
    n_probes: int
    dt: float
    channels: int = 1
    layout_shape: tuple[int, ...] | None = None
    where: str = ""
    active: np.ndarray | None = None
    noise: float | np.ndarray = 0.0
    bias: float | np.ndarray = 0.0
    resolution: float | np.ndarray = 0.0
    random_walk: float | np.ndarray = 0.0
    probe_radius_noise: float = 0.0
    probe_gain: float | np.ndarray = 1.0
    probe_gain_resample_range: tuple[float, float] | None = None
    dead_taxel_probability: float = 0.0
    dead_taxel_value_range: tuple[float, float] = (0.0, 0.0)
    hysteresis_strength: float = 0.0
    hysteresis_tau: float = 0.0
    delay: float = 0.0
    jitter: float = 0.0
    history_length: int = 0
    crosstalk_strength: float = 0.0
    crosstalk_sigma: float = 0.0
    crosstalk_kernel: np.ndarray | None = None
    grid_spacing: tuple[float, float] | None = None
    grid_normal: np.ndarray | None = None
    sample_validity: bool = False
    delay_steps: int = field(init=False, default=0)
    kernel: CrosstalkKernel | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"{self.where or 'sensor'}.name: must be a non-empty string; got {self.name!r}")
        if not self.where:
            self.where = f"sensor '{self.name}'"
        self._check_structure()
        for option in PER_CHANNEL_OPTIONS:
            setattr(self, option, self._channel_option(option))
        self._check_probe_level()
        self._check_hysteresis()
        self._check_timing()
        self._check_crosstalk()

    # ---- errors -------------------------------------------------------------------------------------------------

    def error(self, option: str, what: str, value, allowed: str) -> ConfigError:
        """A ConfigError in the docs/models/scene.md#common-options format for this sensor."""
        return ConfigError(f"{self.where}.{option}: {what}; got {_fmt(value)}; allowed: {allowed}")

    def _real(self, option: str, value, allowed: str, ok) -> float:
        """A finite real scalar satisfying ok(value)."""
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise self.error(option, "not a real number", value, allowed)
        v = float(value)
        if not math.isfinite(v):
            raise self.error(option, "not finite", value, allowed)
        if not ok(v):
            raise self.error(option, "out of range", value, allowed)
        return v

    def _pair(self, option: str, value, allowed: str, ok) -> tuple[float, float]:
        """A (lo, hi) pair of finite reals with ok(lo, hi)."""
        arr = np.asarray(value, dtype=object)
        if arr.shape != (2,):
            raise self.error(option, "expected a pair (lo, hi)", value, allowed)
        lo = self._real(option, arr[0], allowed, lambda v: True)
        hi = self._real(option, arr[1], allowed, lambda v: True)
        if not ok(lo, hi):
            raise self.error(option, "out of range", value, allowed)
        return lo, hi

    def _array(self, option: str, value, allowed: str) -> np.ndarray:
        """A finite float64 array (scalars become 0-d)."""
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise self.error(option, "not a number or an array of numbers", value, allowed) from None
        bad = ~np.isfinite(arr)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0]) if arr.ndim else ()
            raise self.error(option, f"not finite at {list(where)}" if where else "not finite", value, allowed)
        return arr

    # ---- checks -------------------------------------------------------------------------------------------------

    def _check_structure(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or not 0 <= self.seed < 2**63:
            raise self.error("seed", "not an integer in range", self.seed, "int in [0, 2**63)")
        self.seed = int(self.seed)
        for option, value in (("n_probes", self.n_probes), ("channels", self.channels)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise self.error(option, "not a positive integer", value, "int >= 1")
        self.n_probes, self.channels = int(self.n_probes), int(self.channels)
        self.dt = self._real("update_period", self.dt, "evaluation period > 0 s", lambda v: v > 0)
        shape = (self.n_probes,) if self.layout_shape is None else tuple(int(s) for s in self.layout_shape)
        if math.prod(shape) != self.n_probes or not shape:
            raise self.error("layout_shape", f"does not hold {self.n_probes} probes", shape, "a shape of n_probes")
        self.layout_shape = shape
        active = np.ones(self.n_probes, dtype=bool) if self.active is None else np.asarray(self.active, dtype=bool)
        if active.size != self.n_probes:
            raise self.error("active", "wrong length", active.shape, f"{self.n_probes} flags (False = filler)")
        self.active = active.reshape(self.n_probes)

    def _channel_option(self, option: str) -> float | np.ndarray:
        n, k = self.n_probes, self.channels
        allowed = "finite" if option == "bias" else ">= 0"
        order = "probe-major xyz, force block then torque block" if k == 6 else "probe-major"
        allowed = f"{allowed}; a scalar or a flat array of {n * k} values ({order})"
        arr = self._array(option, getattr(self, option), allowed)
        if arr.ndim > 1 or (arr.ndim == 1 and arr.size != n * k):
            raise self.error(option, f"wrong shape {tuple(arr.shape)}", getattr(self, option), allowed)
        if option != "bias" and (arr < 0).any():
            i = int(np.argmin(arr)) if arr.ndim else None
            where = f" at [{i}]" if i is not None else ""
            raise self.error(option, "negative" + where, getattr(self, option), allowed)
        return float(arr) if arr.ndim == 0 else arr

    def per_channel(self, option: str) -> np.ndarray:
        """A per-channel option as float64 [n, K] (flat order mapped per docs/models/conventions.md#frames)."""
        value = getattr(self, option)
        n, k = self.n_probes, self.channels
        if not isinstance(value, np.ndarray):
            return np.full((n, k), float(value))
        vec = 3 if k % 3 == 0 else 1
        return value.reshape(k // vec, n, vec).transpose(1, 0, 2).reshape(n, k)

    def _check_probe_level(self) -> None:
        self.probe_radius_noise = self._real("probe_radius_noise", self.probe_radius_noise, ">= 0 m", lambda v: v >= 0)
        allowed = f"> 0; a scalar or an array of the layout's shape {self.layout_shape}"
        gain = self._array("probe_gain", self.probe_gain, allowed)
        if gain.ndim and gain.shape != self.layout_shape:
            raise self.error("probe_gain", f"wrong shape {tuple(gain.shape)}", self.probe_gain, allowed)
        if (gain <= 0).any():
            where = f" at {list(int(i) for i in np.argwhere(gain <= 0)[0])}" if gain.ndim else ""
            raise self.error("probe_gain", "not positive" + where, self.probe_gain, allowed)
        self.probe_gain = float(gain) if gain.ndim == 0 else gain.reshape(self.n_probes)
        if self.probe_gain_resample_range is not None:
            self.probe_gain_resample_range = self._pair(
                "probe_gain_resample_range", self.probe_gain_resample_range, "None or (lo, hi) with 0 < lo <= hi",
                lambda lo, hi: 0 < lo <= hi,
            )
        self.dead_taxel_probability = self._real(
            "dead_taxel_probability", self.dead_taxel_probability, "in [0, 1]", lambda v: 0 <= v <= 1
        )
        self.dead_taxel_value_range = self._pair(
            "dead_taxel_value_range", self.dead_taxel_value_range, "(lo, hi) with lo <= hi", lambda lo, hi: lo <= hi
        )

    def _check_hysteresis(self) -> None:
        self.hysteresis_strength = self._real("hysteresis_strength", self.hysteresis_strength, ">= 0", lambda v: v >= 0)
        self.hysteresis_tau = self._real("hysteresis_tau", self.hysteresis_tau, ">= 0 s", lambda v: v >= 0)
        if self.hysteresis_strength > 0 and self.hysteresis_tau <= 0:
            raise self.error("hysteresis_tau", "must be > 0 when hysteresis_strength > 0", self.hysteresis_tau, "> 0 s")

    def _check_timing(self) -> None:
        self.delay = self._real("delay", self.delay, ">= 0 s", lambda v: v >= 0)
        self.jitter = self._real("jitter", self.jitter, ">= 0 s", lambda v: v >= 0)
        if self.jitter > self.delay:
            raise self.error("jitter", f"larger than delay ({self.delay} s)", self.jitter, "0 <= jitter <= delay")
        if self.jitter >= self.dt:
            raise self.error("jitter", f"not below the evaluation period dt = {self.dt} s", self.jitter, "jitter < dt")
        h = self.history_length
        if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or h < 0:
            raise self.error("history_length", "not a non-negative integer", h, "int >= 0")
        self.history_length = int(h)
        self.delay_steps, exact = steps_from_period(self.delay, self.dt)
        if not exact:
            warnings.warn(
                f"{self.where}.delay: {self.delay} s is not a multiple of dt = {self.dt} s; "
                f"using {self.delay_steps} steps ({self.delay_steps * self.dt} s)",
                stacklevel=3,
            )

    def _check_crosstalk(self) -> None:
        s = self._real("crosstalk_strength", self.crosstalk_strength, "in [0, 1]", lambda v: 0 <= v <= 1)
        sigma = self._real("crosstalk_sigma", self.crosstalk_sigma, ">= 0 m (> 0 when crosstalk_strength > 0)",
                           lambda v: v >= 0)
        self.crosstalk_strength, self.crosstalk_sigma = s, sigma
        given = self.crosstalk_kernel is not None
        if given and s > 0:
            raise self.error("crosstalk_kernel", "given together with crosstalk_strength > 0", "kernel",
                             "either crosstalk_kernel or crosstalk_strength/crosstalk_sigma")
        if s > 0 and sigma <= 0:
            raise self.error("crosstalk_sigma", "must be > 0 when crosstalk_strength > 0", sigma, "> 0 m")
        if not given and s == 0:
            return
        if self.grid_spacing is None or len(self.layout_shape) != 2:
            raise self.error(
                "crosstalk_kernel" if given else "crosstalk_strength",
                "spatial crosstalk needs a regular planar (M, N, 3) grid layout", self.layout_shape,
                "a regular planar grid (pad irregular layouts with probe_radius = 0 fillers)",
            )
        du, dv = (float(v) for v in self.grid_spacing)
        self.kernel = crosstalk_kernel_from_options(
            strength=s, sigma=sigma, kernel=self.crosstalk_kernel, delta_u=du, delta_v=dv,
            channels=self.channels, normal=self.grid_normal, where=self.where,
        )


OPTION_KEYS = ("noise", "bias", "resolution", "random_walk", "delay", "jitter", "history_length",
               "probe_radius_noise", "probe_gain", "probe_gain_resample_range", "dead_taxel_probability",
               "dead_taxel_value_range", "hysteresis_strength", "hysteresis_tau",
               "crosstalk_strength", "crosstalk_sigma", "crosstalk_kernel")
"""The options of a sensor's config model that :func:`imperfections_from_options` takes (those it has)."""
PAIR_KEYS = ("probe_gain_resample_range", "dead_taxel_value_range")
"""Options given as a (lo, hi) pair, not as an array."""


def imperfections_from_options(options, *, seed: int, dt: float, where: str, n: int, channels: int,
                               layout_shape: tuple[int, ...], active: np.ndarray | None = None, grid=None,
                               sample_validity: bool = False) -> SensorImperfections:
    """The validated imperfection options of one sensor from its config model (only the keys it has): seed, dt
    (its evaluation period, s), where (error prefix), n, channels, layout_shape, active and sample_validity as
    :class:`SensorImperfections` takes them; grid: the layout's :class:`~..sensors.layout.probe_layout.GridInfo`
    (its spacing and normal where it is regular and crosstalk is configured) or None."""
    kwargs: dict = {}
    for key in OPTION_KEYS:
        if hasattr(options, key):
            value = getattr(options, key)
            if isinstance(value, (list, tuple)) and key not in PAIR_KEYS:
                value = np.asarray(value, dtype=np.float64)
            kwargs[key] = value
    if grid is not None and grid.regular and any(k in kwargs for k in CROSSTALK_KEYS):
        kwargs["grid_spacing"] = (grid.du, grid.dv)
        kwargs["grid_normal"] = grid.shared_normal if grid.shared_normal is not None else np.cross(grid.t_u, grid.t_v)
    return SensorImperfections(name=options.name, seed=seed, n_probes=n, dt=dt, channels=channels,
                               layout_shape=tuple(layout_shape), where=where, active=active,
                               sample_validity=sample_validity, **kwargs)
