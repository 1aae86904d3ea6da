"""The sensor suite: everything built from a configuration and a robot description, stepped once per engine step.

Typical use (no ROS)::

    suite = SensorSuite.from_yaml("sensors.yaml")
    state = suite.world.update(t, joint_pos=q, object_poses={"ball": (R, p)})   # or build a WorldState yourself
    suite.step(state)
    depth = suite.read("pad_depth")                      # [n_envs, *layout] (no env axis when n_envs = 0)
    force, torque = suite.read("pad_force")              # KinematicTaxel: link frame, N and N·m

Sensors of one class and one evaluation period are evaluated as one batch
(docs/models/imperfections.md#evaluation-period: a sensor with update_period
P runs every k = max(1, round(P/dt)) engine steps, on the steps whose index is a multiple of k).
"""

from __future__ import annotations

import functools
import os
from collections import defaultdict
from typing import Any, Mapping, Sequence

import torch

from .config.budget import check_budget
from .config.errors import config_error
from .config.loader import load_config
from .config.schema import SuiteConfig
from .config.suite_checks import evaluation_steps
from .errors import ConfigError
from .imperfections.pipeline import ProbeDraws
from .geometry.query import ShapeQuery
from .geometry.warp_kernels import prepare_kernels, table_kernels
from .imperfections.pipeline import MeasuredBranch
from .scene_build import build_scene, load_robot, probe_layout
from .sensors.base import BuildContext, SensorBatch
from .sensors.registry import BATCH_CLASSES, PROBE_SENSOR_TYPES
from .world.motion import WorldModel
from .world.state import WorldState
from .world.tf_buffer import TFBuffer

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def state_shape_problem(state: WorldState, envs: int, body_names: Sequence[str]) -> str | None:
    """Why a WorldState does not fit a scene of ``envs`` envs and these bodies (None when it fits): each of pos,
    lin_vel, ang_vel must be ``[envs, bodies, 3]`` and rot ``[envs, bodies, 3, 3]``, one row per body in scene
    order (robot links, then declared objects)."""
    b = len(body_names)
    for field, tail in (("pos", (3,)), ("rot", (3, 3)), ("lin_vel", (3,)), ("ang_vel", (3,))):
        shape = tuple(getattr(state, field).shape)
        if shape != (envs, b) + tail:
            shown = ", ".join(body_names[:12]) + (f", … and {b - 12} more" if b > 12 else "")
            return (f"WorldState.{field} has shape {shape}; expected {(envs, b) + tail}: {envs} envs × {b} bodies, "
                    f"one per scene body in scene order (robot links, then objects): {shown}")
    return None


def resolve_device(name: str, where: str = "device") -> torch.device:
    """``cpu``, ``cuda[:i]`` or ``auto`` (CUDA when available). A CUDA device this machine does not have is a
    ConfigError at ``where`` (the option that named it), raised before anything is allocated."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (device.index or 0) >= count:
            have = f"CUDA devices 0 to {count - 1}" if count else "no CUDA device"
            raise config_error(where, "", f"this machine has {have}", name,
                               "cpu or auto" + (f", cuda or cuda:<i> with i < {count}" if count else ""))
    return device


def suite_kernels(config: SuiteConfig, dtype: torch.dtype) -> list:
    """The kernels that every suite of ``config`` launches in working dtype ``dtype`` (those of the world model, the
    shape query, the measured branches and each sensor type's batch class: ``kernel_tables``)."""
    tables = WorldModel.kernel_tables + ShapeQuery.kernel_tables + MeasuredBranch.kernel_tables
    types = dict.fromkeys(opt.type for opt in config.sensors if opt.type in BATCH_CLASSES)
    return table_kernels(tables, dtype) + [k for t in types for k in BATCH_CLASSES[t].launched_kernels(dtype)]


class SensorSuite:
    """All sensors of one configuration.

    config: a validated :class:`SuiteConfig`; robot_description: URDF text overriding ``robot.urdf`` (ROS);
    device / dtype / n_envs: override the configuration's suite settings; tf: a TF buffer for objects and a root
    posed by TF (the node passes its own); noise_streams: the noise stream of each env, one integer in [0, 2**32) per
    env (default: the env index, 0 … n_envs − 1): envs of one stream draw the same noise, gains and dead taxels
    (docs/models/imperfections.md#seeding), so an env of stream 0 reads what a suite of one env reads.
    """

    def __init__(self, config: SuiteConfig, *, robot_description: str | None = None, device: str | None = None,
                 dtype: str | None = None, n_envs: int | None = None, tf: TFBuffer | None = None,
                 root_from_tf: bool = False, noise_streams: Sequence[int] | None = None):
        s = config.suite
        # also for a configuration validated without load_config (model_validate in Python), before any allocation
        check_budget(config, n_envs=n_envs, n_envs_where="SensorSuite(n_envs=...)" if n_envs is not None else "")
        self.config = config
        self.device = resolve_device(device or s.device, "SensorSuite(device=...)" if device else
                                     f"{config.source or '<config>'}:suite.device")
        self.dtype = DTYPES[dtype or s.dtype]
        self.unbatched = (s.n_envs if n_envs is None else n_envs) == 0
        self.n_envs = max(1, s.n_envs if n_envs is None else n_envs)
        self.dt = s.step_dt
        self.noise_streams = self._streams(noise_streams)
        self.robot, self.urdf_text = load_robot(config.robot, robot_description)
        urdf_source = str(config.robot.urdf) if robot_description is None and config.robot else "robot_description"
        self.scene = build_scene(config.objects, self.robot, s.world_frame)
        self._check_names(config)
        prepare_kernels(suite_kernels(config, self.dtype), self.device)  # after the scene's errors
        self.tf = tf
        self._new_world = functools.partial(WorldModel, self.scene, n_envs=self.n_envs, device=self.device,
                                            dtype=self.dtype, world_frame=s.world_frame, tf=tf,
                                            root_from_tf=root_from_tf)
        self.world = self._new_world()
        cache = s.sdf_cache_dir or os.environ.get("TACTILE_SIM_CACHE")
        self.query = ShapeQuery(self.scene.shape_table(), device=self.device, dtype=self.dtype,
                                sdf_cell_size=s.sdf_cell_size, sdf_max_nodes=s.sdf_max_nodes,
                                sdf_padding=s.sdf_padding, cache_dir=cache)
        self.batches: list[tuple[int, SensorBatch]] = []
        self._where: dict[str, tuple[SensorBatch, int]] = {}
        self._types: dict[str, str] = {}
        self.layouts: dict[str, Any] = {}
        groups: dict[tuple[str, int], list] = defaultdict(list)
        for opt in config.sensors:
            if opt.type not in BATCH_CLASSES:
                raise ConfigError(f"{opt.where}.type: sensor type {opt.type!r} is not available in this version; "
                                  f"got {opt.type!r}; allowed: {', '.join(BATCH_CLASSES)}")
            if opt.type in PROBE_SENSOR_TYPES:
                self.layouts[opt.name] = probe_layout(opt, self.scene, self.urdf_text, urdf_source=urdf_source)
            groups[(opt.type, evaluation_steps(opt.update_period, self.dt))].append(opt)
            self._types[opt.name] = opt.type
        check_budget(config, n_envs=self.n_envs, probe_counts={k: v.n for k, v in self.layouts.items()})
        for (type_name, k), options in groups.items():
            ctx = BuildContext(self.scene, self.query, self.device, self.dtype, self.n_envs, k * self.dt,
                               scene_seed=s.seed, where={o.name: o.where for o in options}, layouts=self.layouts,
                               extras={"suite": self}, noise_streams=self.noise_streams)
            batch = BATCH_CLASSES[type_name](options, ctx)
            self.batches.append((k, batch))
            for i, name in enumerate(batch.names):
                self._where[name] = (batch, i)
        self.batches.sort(key=lambda kb: kb[1].evaluation_order)
        self.steps = 0
        self._pos_shape = torch.Size((self.n_envs, len(self.scene.body_names), 3))
        self._rot_shape = self._pos_shape + (3,)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike | Mapping, **kwargs) -> "SensorSuite":
        """Load and validate a sensor YAML (path, ``package://`` or a parsed mapping), then build."""
        return cls(load_config(path), **kwargs)

    def _streams(self, streams: Sequence[int] | None) -> torch.Tensor:
        """The noise stream of each env as int64 [n_envs] (the env indices for None); ValueError naming
        ``noise_streams`` unless one integer in [0, 2**32) per env."""
        if streams is None:
            return torch.arange(self.n_envs, dtype=torch.int64, device=self.device)
        values = list(streams) if not isinstance(streams, torch.Tensor) else streams.reshape(-1).tolist()
        if len(values) != self.n_envs or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**32
                                                 for v in values):
            raise ValueError(f"SensorSuite(noise_streams=...): got {values!r}; allowed: {self.n_envs} integer(s) in "
                             f"[0, 2**32), one per env")
        return torch.tensor(values, dtype=torch.int64, device=self.device)

    def _check_names(self, config: SuiteConfig) -> None:
        """Every body a sensor names must exist (errors list the closest names)."""
        for opt in config.sensors:
            for key in ("link", "ignore", "track"):
                names = getattr(opt, key, None)
                for name in [names] if isinstance(names, str) else (names or []):
                    self.scene.body_index(name, f"{opt.where}.{key}")

    # ------------------------------------------------------------------ stepping
    @property
    def sensor_names(self) -> list[str]:
        return list(self._types)

    def sensor_type(self, name: str) -> str:
        """The model class name of a sensor (``KinematicTaxel``, …)."""
        batch, _ = self.locate(name)
        return batch.sensor_type

    def step(self, state: WorldState) -> None:
        """Advance one engine step: evaluate every batch that is due on this step with the given world state.

        ``state`` holds every body of :attr:`scene` in scene order (``scene.body_names``: robot links, then
        objects) for :attr:`n_envs` envs; a state of another size is refused with a ValueError naming the order.
        """
        if state.pos.shape != self._pos_shape or state.rot.shape != self._rot_shape \
                or state.lin_vel.shape != self._pos_shape or state.ang_vel.shape != self._pos_shape:
            raise ValueError(state_shape_problem(state, self.n_envs, self.scene.body_names))
        for k, batch in self.batches:
            if self.steps % k == 0:
                batch.evaluate(state)
        self.steps += 1

    def update(self, t: float, **inputs) -> WorldState:
        """Convenience: ``world.update(t, **inputs)`` then :meth:`step`; returns the state used."""
        state = self.world.update(t, **inputs)
        self.step(state)
        return state

    def reset(self, envs=None) -> None:
        """Reset all sensors and the world model for the given envs (None = all; bool mask or indices)."""
        mask = None
        if envs is not None:
            envs = torch.as_tensor(envs, device=self.device)
            if envs.dtype != torch.bool:
                m = torch.zeros(self.n_envs, dtype=torch.bool, device=self.device)
                m[envs.reshape(-1).long()] = True
                envs = m
            mask = envs.reshape(self.n_envs)
        for _, batch in self.batches:
            batch.reset(mask)
        self.world.reset(mask)

    def rewind(self) -> None:
        """The state right after build, without building again: a new world model (no motion history; time may
        start over), every batch rewound (:meth:`SensorBatch.rewind <.sensors.base.SensorBatch.rewind>`: a reset of
        every env with the counters of per-evaluation and per-reset draws restarted) and the step count at zero, so
        the next steps give exactly what a newly built suite of the same configuration gives. The TF buffer is the
        caller's (forget its transforms when the next run must not see them)."""
        self.world = self._new_world()
        for _, batch in self.batches:
            batch.rewind()
        self.steps = 0

    # ------------------------------------------------------------------ reading
    def locate(self, name: str) -> tuple[SensorBatch, int]:
        """(the batch evaluating sensor ``name``, its index in the batch); KeyError naming the closest sensors."""
        try:
            return self._where[name]
        except KeyError:
            from .config.errors import suggest

            raise KeyError(f"unknown sensor {name!r}; {suggest(name, self._where) or 'no sensors configured'}") \
                from None

    def _unbatch(self, x):
        if not self.unbatched:
            return x
        if isinstance(x, tuple):
            return type(x)(*(v[0] for v in x))
        return x[0]

    def read(self, name: str, with_valid: bool = False):
        """Measured reading of a sensor (after every imperfection and the delay),
        docs/models/imperfections.md#validity."""
        batch, i = self.locate(name)
        value, valid = batch.read(i)
        value, valid = self._unbatch(value), self._unbatch(valid)
        return (value, valid) if with_valid else value

    def read_ground_truth(self, name: str, with_valid: bool = False):
        """Ground-truth reading of a sensor (never delayed)."""
        batch, i = self.locate(name)
        value, valid = batch.read_ground_truth(i)
        value, valid = self._unbatch(value), self._unbatch(valid)
        return (value, valid) if with_valid else value

    def nearest_points(self, name: str, with_valid: bool = False):
        """SurfaceDistanceProbe: the nearest surface points of the measured read (world frame, m; the evaluation
        that :meth:`read` returns — same delay, jitter sample and history slots), ``[n_envs,] [H,] *layout, 3``."""
        batch, i = self.locate(name)
        value, valid = self._channel(batch, name, "read_nearest_points")(i)
        value, valid = self._unbatch(value), self._unbatch(valid)
        return (value, valid) if with_valid else value

    def nearest_points_ground_truth(self, name: str, with_valid: bool = False):
        """SurfaceDistanceProbe: the nearest surface points of the ground truth (world frame, m, never delayed)."""
        batch, i = self.locate(name)
        value, valid = self._channel(batch, name, "read_nearest_points_ground_truth")(i)
        value, valid = self._unbatch(value), self._unbatch(valid)
        return (value, valid) if with_valid else value

    def point_cloud(self, name: str):
        """ElastomerTaxel / ProximityTaxel: the sensor's tracked point cloud (docs/models/scene.md#sampling; read-only,
        body frames)."""
        batch, i = self.locate(name)
        return self._channel(batch, name, "point_cloud")(i)

    def draws(self, name: str) -> ProbeDraws:
        """The per-reset random draws of a sensor's measured branch (docs/models/imperfections.md): probe gain,
        dead-taxel mask and dead-taxel value, each ``[n_envs,] *layout`` (copies; redrawn by :meth:`reset`)."""
        batch, i = self.locate(name)
        if batch.branch is None:
            raise TypeError(f"sensor {name!r} is a {batch.sensor_type}, which has no measured-branch draws")
        return ProbeDraws(*(self._unbatch(x) for x in batch.branch.draws(i)))

    @staticmethod
    def _channel(batch: SensorBatch, name: str, method: str):
        if not hasattr(batch, method):
            raise TypeError(f"sensor {name!r} is a {batch.sensor_type}, which has no {method}")
        return getattr(batch, method)
