"""What every sensor batch shares: build context, imperfection options and the read/reset protocol.

A *batch* is the sensors of one class and one evaluation period, evaluated together (their probes, cells or joints
concatenated). The suite calls ``evaluate(state)`` on the engine steps where the batch is due, then ``read(i)`` /
``read_ground_truth(i)`` for sensor i of the batch, and ``reset(env_mask)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Sequence

import numpy as np
import torch

from ..geometry.query import ShapeQuery
from ..geometry.warp_kernels import table_kernels
from ..imperfections.pipeline import MeasuredBranch
from ..imperfections.rng import sensor_seed
from ..imperfections.spec import SensorImperfections, imperfections_from_options
from ..world.scene import Scene
from ..world.state import WorldState


@dataclass
class BuildContext:
    """Everything a batch needs at build time.

    scene: bodies and shapes; query: the scene's ShapeQuery; n_envs: E ≥ 1 (library-internal env count);
    dt: the batch's evaluation period, s; scene_seed: the suite's `seed`; where: sensor name → error prefix
    (``file:sensors[i]`` or ``Class(name='…')``); layouts: sensor name → resolved ProbeLayout (probe sensors);
    extras: model-specific shared objects (e.g. the robot model for JointTorque); noise_streams: the noise stream
    of each env (int64 [E]; None: the env index), given to every measured branch.
    """

    scene: Scene
    query: ShapeQuery
    device: torch.device
    dtype: torch.dtype
    n_envs: int
    dt: float
    scene_seed: int = 0
    where: dict[str, str] = field(default_factory=dict)
    layouts: dict[str, Any] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)
    noise_streams: torch.Tensor | None = None

    def tensor(self, x, dtype=None) -> torch.Tensor:
        return torch.as_tensor(np.asarray(x), device=self.device, dtype=dtype or self.dtype)


def imperfections_of(options, ctx: BuildContext, *, n: int, channels: int, layout_shape: tuple[int, ...],
                     active: np.ndarray | None = None, grid=None, sample_validity: bool = False) -> SensorImperfections:
    """The validated imperfection options of one sensor from its config model
    (:func:`~..imperfections.spec.imperfections_from_options` with the build's seed, period and error prefix)."""
    return imperfections_from_options(
        options, seed=sensor_seed(ctx.scene_seed, options.name, getattr(options, "seed", None)), dt=ctx.dt,
        where=ctx.where.get(options.name, ""), n=n, channels=channels, layout_shape=layout_shape, active=active,
        grid=grid, sample_validity=sample_validity)


class SensorBatch:
    """Base of every model's batch. Subclasses set ``sensor_type`` and implement ``evaluate``.

    ``branch`` is the batch's :class:`MeasuredBranch`; values are ``[E, P, K]`` inside, shaped per sensor on read.
    """

    sensor_type: ClassVar[str] = ""
    evaluation_order: ClassVar[int] = 0
    """Batches run in ascending order within an engine step (contact sources 0 before JointTorque 1,
    docs/models/imperfections.md#evaluation-period)."""
    kernel_tables: ClassVar[tuple] = ()
    """Tables (working dtype → kernel, or (kernel, call type)) of the kernels every batch of this class launches: the
    suite compiles them together before it builds anything (:func:`~..geometry.warp_kernels.prepare_kernels`); a
    kernel that only some options launch compiles when it is first launched."""

    @classmethod
    def launched_kernels(cls, dtype: torch.dtype) -> list:
        """The kernels of :attr:`kernel_tables` for a working dtype."""
        return table_kernels(cls.kernel_tables, dtype)

    def __init__(self, options: Sequence[Any], ctx: BuildContext):
        self.options = list(options)
        self.names = [o.name for o in self.options]
        self.ctx = ctx
        self.n_envs = ctx.n_envs
        self.branch: MeasuredBranch | None = None

    def evaluate(self, state: WorldState) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def output(self, value: torch.Tensor) -> Any:
        """Convert a shaped value ``[E, (H,) *layout, (K)]`` into the sensor's public output type."""
        return value

    def read(self, i: int) -> tuple[Any, torch.Tensor]:
        """Measured read of sensor i: (value, valid)."""
        value, valid = self.branch.read(i)
        return self.output(value), valid

    def read_ground_truth(self, i: int) -> tuple[Any, torch.Tensor]:
        """Ground-truth read of sensor i: (value, valid)."""
        value, valid = self.branch.read_ground_truth(i)
        return self.output(value), valid

    def reset(self, env_mask: torch.Tensor | None) -> None:
        """docs/models/imperfections.md#reset for the envs of env_mask ([E] bool; None = all)."""
        self.branch.reset(env_mask)

    def rewind(self) -> None:
        """The state right after build: a reset of every env that also restarts the measured branch's counters of
        per-evaluation and per-reset draws, so the next evaluations give what a freshly built batch's would.
        Subclasses with counters of their own on the host clear them first."""
        if self.branch is not None:
            self.branch.restart_counters()
        self.reset(None)
