"""Named small constants of docs/models/conventions.md#constants — the only tolerances that gate a model.

Nothing else may act as an epsilon; in particular never the machine epsilon of the working dtype.
"""

EPS_D = 1e-9
"""m — contact gate: a depth / penetration must exceed it (KinematicTaxel, ContactSensor)."""

EPS_LEN = 1e-9
"""m — "zero length": exact-mode normal fallback, zero normals, degenerate spacings, coincident probes."""

EPS_GRAD = 1e-12
"""relative to 1 — zero interpolated SDF gradient → the consumer's fallback normal."""

EPS_NORMAL = 1e-6
"""probe normals count as shared / grid axes count as parallel (docs/models/layouts.md#planar-grids)."""

GRID_FIT_ABS = 1e-6
"""m — absolute part of the regular-planar-grid fit tolerance: 1e-6 m + 1e-3·min(Δu, Δv)."""

GRID_FIT_REL = 1e-3
"""relative part of the regular-planar-grid fit tolerance."""

T_MULT = 1e-6
"""relative — "is a multiple of dt" for `delay` and `update_period`."""

X_FLOOR_MARGIN = 1e-3
"""m — ContactProbe floor below a negative release threshold (docs/models/contact_probe.md#model)."""

TIMER_TOL = 1e-8
"""s — ContactSensor first-contact / first-air helpers."""

QUAT_NORM_TOL = 1e-3
"""incoming quaternions with |‖q‖ − 1| above it are rejected, others normalised."""

INT_RATIO_TOL = 1e-9
"""relative — integer counts from real ratios: ceil(x − tol·max(1,|x|)), floor(x + tol·max(1,|x|))."""

STEFAN_BOLTZMANN = 5.670374419e-8
"""W/(m²·K⁴)."""

KELVIN_OFFSET = 273.15
"""T_K = T_°C + 273.15."""

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
"""m/s², world frame (z up)."""


def int_ceil(x: float) -> int:
    """ceil of a real ratio that may be an integer up to round-off (docs/models/conventions.md#constants)."""
    import math

    return math.ceil(x - INT_RATIO_TOL * max(1.0, abs(x)))


JUMP_THRESHOLD = 0.1
"""s: a step back of the input clock larger than this starts a new time line (replay, demo)."""

GAP_THRESHOLD = 10.0
"""s: a step forward of the input clock larger than this starts a new time line instead of being ticked through."""

MAX_RESTARTS = 100
"""Restarts of the sensors (time-line changes) a replay accepts before it stops: each rebuilds the sensors."""

REPLAY_BATCH = 16
"""Recordings a corpus replay steps at a time as the envs of one suite by default (``tactile-sim replay --batch``):
each output is the same either way, and at 16 the per-step costs the recordings share are mostly paid."""

MAX_DEMO_DURATION = 3600.0
"""s: the longest simulated time ``tactile-sim demo`` runs (its bag grows with it)."""

MAX_TEXT_FILE_BYTES = 64 * 2**20
"""Largest text input read whole (a CSV layout, a URDF file): a larger one is refused before it is read."""

FLOAT32_MAX = 3.4028234663852886e38
"""The largest finite float32: a joint value beyond it (finite in the message's float64) would be inf in a float32
world model, so a joint state holding one is dropped as a non-finite one is, on every replay path alike."""

RATE_RANGE = (1.0, 10000.0)
"""Hz: the rates the node (``update_rate``) and a replay step at; a replay without ``--rate`` takes the
configuration's."""

STEP_RANGE = (1e-6, 1e5)
"""s: the engine steps a configuration may set (``suite.dt``, or 1/``suite.rate``; a thermal scene in Python may step
by minutes)."""

LENGTH_RANGE = (1e-6, 1e4)
"""m: the smallest and the largest dimension the geometry takes (shape radii, lengths and edges, a mesh's extent,
sample spacings and SDF cells, from the sensor YAML or the URDF): 1 µm to 10 km. Past these, areas and volumes
(squares and cubes) leave floating point or the sample counts derived from them stop being numbers."""

MESH_SCALE_RANGE = (1e-6, 1e6)
"""The smallest and the largest factor a mesh file's coordinates may be scaled by (its extent then checked against
:data:`LENGTH_RANGE`)."""

MAX_PROBES = 4_000_000
"""Probes of one sensor's layout above which the layout is refused before it is read or built
(``config.budget.CAPS['probes']``)."""


def int_floor(x: float) -> int:
    """floor of a real ratio that may be an integer up to round-off (docs/models/conventions.md#constants)."""
    import math

    return math.floor(x + INT_RATIO_TOL * max(1.0, abs(x)))


def steps_from_period(value: float, dt: float) -> tuple[int, bool]:
    """Whole steps of a time span: (round(value/dt) with halves up, is a multiple of dt within T_MULT relative)."""
    ratio = value / dt
    steps = int_floor(ratio + 0.5)
    exact = abs(value - steps * dt) <= T_MULT * max(abs(value), dt)
    return steps, exact
