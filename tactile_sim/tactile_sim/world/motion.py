"""Per-step world motion (docs/models/scene.md#motion): poses and twists of every body as a :class:`WorldState`.

* Robot links: forward kinematics of the joint positions from the root pose; twists exact, J(q)·q̇ plus the
  transport of the root twist. q̇ is the caller's joint velocity, else the backward difference of the two most recent
  joint samples with distinct stamps (continuous joints wrapped to (−π, π]), as docs/models/joint_torque.md#velocity.
* Root pose: the caller's ``root_pose``, else TF (world frame → root link) when ``root_from_tf``, else a fixed pose.
* Objects (see :mod:`.objects`): fixed, attached to a robot link (exact twist), posed by TF, or by the caller.
* Twists not known exactly are backward differences of the two most recent pose samples with distinct stamps:
  v = (o_k − o_{k−1})/Δt, ω = Log(R_k R_{k−1}ᵀ)/Δt. Fixed bodies have zero twist; the first sample of a body after
  a reset has zero twist. A pose sample from TF carries the TF stamp, every other sample the update time t.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from ..errors import SceneError
from ..geometry.struct_launch import StructLaunch, unbind_checked
from ..geometry.transforms import scan_finite, so3_log
from .dynamics import InverseDynamics
from .kinematics import Kinematics
from .motion_kernel import WORLD_KERNELS, empty_robot_tables, fill_struct, struct_types
from .objects import object_pose_from_tf
from .scene import Scene
from .state import WorldState
from .tf_buffer import TFBuffer
from .urdf import JointType

Pose = tuple  # (rot [E, 3, 3] or [3, 3], pos [E, 3] or [3])

OUTPUT_CHUNK_BYTES = 1 << 20
"""The state tensors of up to ``OUTPUT_CHUNK_STEPS`` steps are allocated at once, in one buffer of at most this many
bytes (at least one step). Making a chunk's views costs ~40 µs a chunk plus ~6 µs a step, so the bound lets a batch
of envs (a 16-env hand-368 replay: 23 KB per step) share that over many steps; a one-env model holds 32 steps in a
few KB either way."""
OUTPUT_CHUNK_STEPS = 32


HOST_SCAN_MAX = 32
"""Host joint inputs of at most this many values are checked finite by a Python scan (cheaper than a NumPy call)."""


def _host_finite(flat: np.ndarray, zero: np.ndarray) -> bool:
    """Whether every value of the 1-D host array ``flat`` is finite: a Python scan of a few values, else flat·0 (zero:
    zeros of flat's size and dtype), which is 0 for finite values and NaN once one is NaN or ±inf."""
    if flat.size <= HOST_SCAN_MAX:
        return scan_finite(flat)
    with np.errstate(invalid="ignore"):  # inf·0 is the NaN looked for, not a warning
        return flat.dot(zero) == 0


def _all_finite(t: torch.Tensor) -> bool:
    """Whether every value of t is finite (NumPy for host tensors: cheaper for the few values of an input)."""
    if t.device.type == "cpu" and not t.requires_grad:
        return bool(np.isfinite(t.numpy()).all())
    return bool(torch.isfinite(t).all())


def next_joint_sample(t: float, j0: float, j1: float) -> tuple[float, float, int, float]:
    """A joint sample taken at time t (s, never before j1) after samples stamped j0, j1 (s; NaN: none): the stamps
    (j0, j1) after it, the kernel's sample argument (1: a new stamp, the latest sample becomes the previous one; 2:
    the same stamp, it replaces the latest) and the Δt (s) between the two (1.0 while there is no previous one)."""
    new = not t == j1
    if new:
        j0 = j1
    dt = t - j0
    return j0, t, 1 if new else 2, dt if math.isfinite(dt) else 1.0


class _PoseHistory:
    """The two most recent pose samples with distinct stamps for K bodies, and their backward-difference twists.

    Stamps are host float64 per body (shared by the envs); validity is per env and body (cleared by reset).
    """

    def __init__(self, n_envs: int, k: int, device: torch.device, dtype: torch.dtype):
        f = dict(device=device, dtype=dtype)
        self.s0 = np.full(k, np.nan)
        self.s1 = np.full(k, np.nan)
        eye = torch.eye(3, **f).expand(n_envs, k, 3, 3)
        self.r0, self.r1 = eye.clone(), eye.clone()
        self.p0, self.p1 = torch.zeros(n_envs, k, 3, **f), torch.zeros(n_envs, k, 3, **f)
        self.v0 = torch.zeros(n_envs, k, dtype=torch.bool, device=device)
        self.v1 = torch.zeros_like(self.v0)
        self.device, self.dtype = device, dtype

    def add(self, stamps: np.ndarray, rot: torch.Tensor, pos: torch.Tensor, names: list[str]):
        """Record samples: stamps (K,) s, NaN where a body has no new sample; rot [E, K, 3, 3], pos [E, K, 3]."""
        has = ~np.isnan(stamps)
        older = has & (stamps < self.s1)
        if older.any():
            k = int(np.flatnonzero(older)[0])
            raise ValueError(f"WorldModel.update: pose sample of {names[k]!r} at t = {stamps[k]:.9f} s is older "
                             f"than its previous sample at {self.s1[k]:.9f} s; stamps must not decrease")
        shift = has & (np.isnan(self.s1) | (stamps > self.s1))
        self.s0 = np.where(shift, self.s1, self.s0)
        self.s1 = np.where(has, stamps, self.s1)
        sh = torch.as_tensor(shift, device=self.device)
        hv = torch.as_tensor(has, device=self.device)
        self.r0 = torch.where(sh[:, None, None], self.r1, self.r0)
        self.p0 = torch.where(sh[:, None], self.p1, self.p0)
        self.v0 = torch.where(sh, self.v1, self.v0)
        self.r1 = torch.where(hv[:, None, None], rot, self.r1)
        self.p1 = torch.where(hv[:, None], pos, self.p1)
        self.v1 = self.v1 | hv

    def twists(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Backward-difference (lin [E, K, 3] m/s, ang [E, K, 3] rad/s); zero where fewer than two samples."""
        dt = self.s1 - self.s0
        ok = ~np.isnan(dt)
        inv = torch.as_tensor(np.where(ok, 1.0 / np.where(ok, dt, 1.0), 0.0), device=self.device, dtype=self.dtype)
        valid = (self.v0 & self.v1).to(self.dtype) * inv
        lin = (self.p1 - self.p0) * valid[..., None]
        same = (self.r1 == self.r0).all(-1).all(-1)
        ang = torch.where(same[..., None], 0.0, so3_log(self.r1 @ self.r0.transpose(-1, -2))) * valid[..., None]
        return lin, ang

    def reset(self, envs: torch.Tensor):
        self.v0[envs] = False
        self.v1[envs] = False


class WorldModel:
    """Produces one :class:`WorldState` per step for a :class:`Scene` (see the module docstring).

    n_envs: E ≥ 1; device / dtype of every tensor; world_frame: the TF name of W; tf: the TF buffer (required for
    ``root_from_tf`` and for objects posed by TF frames); root_pose: fixed root pose (rot [3, 3], pos [3]) when the
    root is not posed by TF or by the caller (default identity at the origin); check_finite: reject non-finite
    inputs (a host synchronisation per input on GPU).

    A step is one launch of the world-update kernel of :mod:`.motion_kernel` (joint sample, robot links, objects)
    into fresh state tensors, plus the backward-difference twists of the root and the objects while one of them
    moves. The joint samples, the root pose and the held object poses live in buffers of the model. Envs on clocks
    of their own take their inputs through lanes of the model (:mod:`.lane_motion`) and step in one launch
    (:meth:`update_envs`).
    """

    kernel_tables = (WORLD_KERNELS,)
    """Tables (working dtype → kernel) of the kernels every world model launches, compiled before a suite is built
    (:func:`~..geometry.warp_kernels.prepare_kernels`)."""

    def __init__(self, scene: Scene, *, n_envs: int = 1, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32, world_frame: str = "world", tf: TFBuffer | None = None,
                 root_pose: Pose | None = None, root_from_tf: bool = False, check_finite: bool = True):
        if int(n_envs) < 1:
            raise ValueError(f"WorldModel: n_envs must be >= 1; got {n_envs}")
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"WorldModel: dtype must be torch.float32 or torch.float64; got {dtype}")
        self.scene = scene
        self.n_envs = E = int(n_envs)
        self.device = torch.device(device)
        self.dtype = dtype
        self.world_frame = world_frame
        self.tf = tf
        self.check_finite = check_finite
        f = dict(device=self.device, dtype=dtype)
        robot = scene.robot
        if root_from_tf and (tf is None or robot is None):
            raise ValueError("WorldModel: root_from_tf needs a robot in the scene and a TF buffer (tf=…)")
        self.root_from_tf = root_from_tf
        self.kinematics, self.dynamics = self._robot_models(robot) if robot is not None else (None, None)

        # objects by pose source; attach_link[k]: the robot link that carries object k, −1 for none (and once the
        # caller poses it)
        links = set(robot.link_names) if robot is not None else set()
        O = len(scene.objects)
        attach, self._tf_obj = [-1] * O, []
        for k, o in enumerate(scene.objects):
            frame = o.parent_frame
            if frame is None or frame == world_frame:
                continue
            if frame in links:
                attach[k] = robot.link_index(frame)
            elif tf is None:
                raise SceneError(f"{o.source}: object {o.name!r} is posed in TF frame {frame!r}, but the world model "
                                 "has no TF buffer; pass tf=TFBuffer(...) or use a robot link / the world frame")
            else:
                self._tf_obj.append(k)
        self._attached = np.asarray(attach, dtype=np.int64) >= 0
        self._attach_link = torch.tensor(attach, dtype=torch.int32, device=self.device)
        off_rot = torch.stack([torch.as_tensor(o.rot, **f) for o in scene.objects]) if O else torch.zeros(0, 3, 3, **f)
        off_pos = torch.stack([torch.as_tensor(o.pos, **f) for o in scene.objects]) if O else torch.zeros(0, 3, **f)
        self._off_rot, self._off_pos = off_rot.contiguous(), off_pos.contiguous()
        self._obj_rot = off_rot.expand(E, O, 3, 3).clone()  # current object poses (held between samples)
        self._obj_pos = off_pos.expand(E, O, 3).clone()
        self._api_posed = np.zeros(O, dtype=bool)
        self._any_api_posed = False

        # root pose
        self._root_rot = torch.eye(3, **f).expand(E, 3, 3).clone()
        self._root_pos = torch.zeros(E, 3, **f)
        if root_pose is not None:
            rot, pos = self._pose(root_pose, "root_pose")
            self._root_rot.copy_(rot)
            self._root_pos.copy_(pos)
        self._history = _PoseHistory(E, 1 + O, self.device, dtype)  # body 0 = root, 1 + k = object k
        self._history_names = ["<root>"] + [o.name for o in scene.objects]
        self._root_api = False
        # (TF revision, stamp or NaN when static, the lookup result) of the root pose in the buffers
        self._root_tf: tuple = (-1, math.nan, None)

        # joints (actuated, [E, n_act]): the latest sample q with its velocities q̇ and the sample before it;
        # sample_ok [E, 2]: whether the (previous, latest) sample exists since the last reset; stamps j0, j1
        n_act = robot.n_actuated if robot is not None else 0
        self._q, self._qd, self._q_prev = (torch.zeros(E, n_act, **f) for _ in range(3))
        self._sample_ok = torch.zeros(E, 2, dtype=torch.int32, device=self.device)
        self._qdd: torch.Tensor | None = None
        self._qd_measured = False
        self._j0 = self._j1 = math.nan
        cont = [robot.joint(n).type is JointType.CONTINUOUS for n in robot.actuated_joint_names] if robot else []
        self._continuous = torch.as_tensor(cont, dtype=torch.int32, device=self.device)
        # staging buffers of host joint inputs (positions, velocities), and their NumPy views on a CPU model
        self._staging = (torch.zeros(E, n_act, **f), torch.zeros(E, n_act, **f))
        self._staging_np = tuple(x.numpy() for x in self._staging) if self.device.type == "cpu" else None
        # flat views of the host staging buffers and zeros of their size for the finite check (_host_finite)
        self._staging_flat = tuple(x.reshape(-1) for x in self._staging_np) if self._staging_np else None
        self._zero_np = np.zeros(E * n_act, dtype=self._staging_np[0].dtype) if self._staging_np else None
        self._staging_shapes = ((E, n_act), (n_act,))
        self._joint_pos_what = f"joint_pos (actuated joints {list(robot.actuated_joint_names) if robot else []})"
        self._t_last = -math.inf
        self._zero_twists = torch.zeros(E, 1 + O, 3, **f)
        self._env_twists = (torch.zeros(E, 1 + O, 3, **f), torch.zeros(E, 1 + O, 3, **f))
        """Sampled twists (lin, ang) [E, 1 + O, 3] of the root and the objects per env, written by the lanes of this
        model (:mod:`.lane_motion`) and read by :meth:`update_envs`."""
        self._env_args = (torch.zeros(E, dtype=torch.int32, device=self.device),
                          torch.zeros(E, dtype=torch.int32, device=self.device), torch.ones(E, **f))
        """(sample, velocity_given, dt) per env, read by :meth:`update_envs`' launch (the kernel's sample −1)."""
        self._held: tuple = (None, None)
        """(envs stepped, bool [E] mask of the other envs) of the latest :meth:`update_envs` that held some."""
        self._launch, self._tables = self._record_launch()
        self._args = (0, 0, 1.0)  # (sample, velocity_given, dt) as last set on the launch
        self.state: WorldState | None = None

    def _robot_models(self, robot) -> tuple[Kinematics, InverseDynamics]:
        """The kinematics and inverse dynamics of the scene's robot (tables on the model's device, in its dtype)."""
        kinematics = Kinematics(robot, self.device, self.dtype)
        return kinematics, InverseDynamics(kinematics)

    def _record_launch(self) -> tuple[StructLaunch, dict]:
        """The world-update launch and the tables it reads (robot, world, and the tensors they alias)."""
        E = self.n_envs
        f = dict(device=self.device, dtype=self.dtype)
        tables = {}
        if self.kinematics is not None:
            robot = self.kinematics.tables
        else:
            robot, tables["robot tensors"] = empty_robot_tables(self.dtype, self.device)
        tables["world tensors"] = {"continuous": self._continuous, "attach_link": self._attach_link,
                                   "offset_rot": self._off_rot, "offset_pos": self._off_pos}
        # the state tensors of a step are contiguous views of its own slot of an output chunk: (shape, strides,
        # element offset in the slot)
        B = self.scene.n_links + len(self.scene.objects)
        n_mov = self.kinematics.n_movable if self.kinematics is not None else 0
        shapes = [(E, B, 3, 3), (E, B, 3), (E, B, 3), (E, B, 3), (E, n_mov), (E, n_mov)]
        offsets = np.cumsum([0] + [math.prod(sh) for sh in shapes])
        self._out_size = int(offsets[-1])
        self._out_views = [(sh, torch.empty(sh).stride(), int(o)) for sh, o in zip(shapes, offsets)]
        item = torch.empty((), dtype=self.dtype).element_size()
        self._chunk_steps = max(1, min(OUTPUT_CHUNK_STEPS, OUTPUT_CHUNK_BYTES // max(1, self._out_size * item)))
        self._free_outputs: list[tuple] = []
        tables["world tensors"]["out_bytes"] = torch.tensor(offsets[:-1] * item, dtype=torch.int64, device=self.device)
        world = fill_struct(struct_types(self.dtype)[1], tables["world tensors"])
        world.n_links, world.n_bodies, world.pi = self.scene.n_links, B, math.pi
        world.slot_bytes = self._out_size * item
        tables.update(robot=robot, world=world)
        fields = {"q_in": self._staging[0], "qd_in": self._staging[1], "q": self._q, "qd": self._qd,
                  "q_prev": self._q_prev,
                  "sample_ok": self._sample_ok, "root_rot": self._root_rot, "root_pos": self._root_pos,
                  "object_rot": self._obj_rot, "object_pos": self._obj_pos, "sampled_lin": self._zero_twists,
                  "sampled_ang": self._zero_twists, "out": torch.empty(self._chunk_steps * self._out_size, **f),
                  "env_sample": self._env_args[0], "env_velocity_given": self._env_args[1],
                  "env_dt": self._env_args[2]}
        launch = StructLaunch(WORLD_KERNELS[self.dtype], (E,), struct_types(self.dtype)[3], fields,
                              [robot, world, 0, 0, 1.0, 0], self.device)
        return launch, tables

    def _output_chunk(self) -> list[tuple]:
        """Bind a new output chunk to the launch; return the outputs of the next steps, last step first: (slot, rot,
        pos, lin, ang, qm, qdm) of each, views of the slot (no step's outputs share memory with another's),
        remembered as checked by the launches."""
        n, size = self._chunk_steps, self._out_size
        chunk = torch.empty(n * size, device=self.device, dtype=self.dtype)
        self._launch.bind("out", chunk)
        steps = zip(range(n), *(unbind_checked(chunk.as_strided((n,) + shape, (size,) + stride, offset))
                                for shape, stride, offset in self._out_views))
        return list(steps)[::-1]

    # ------------------------------------------------------------------ inputs
    def _tensor(self, x, tail: tuple[int, ...], what: str) -> torch.Tensor:
        t = torch.as_tensor(x, device=self.device, dtype=self.dtype)
        if t.shape == tail:
            t = t.expand((self.n_envs,) + tail)
        if t.shape != (self.n_envs,) + tail:
            raise ValueError(f"WorldModel.update: {what} must have shape {list(tail)} or "
                             f"{[self.n_envs] + list(tail)}; got {list(t.shape)}")
        if self.check_finite and not _all_finite(t):
            raise ValueError(f"WorldModel.update: {what} contains non-finite values (NaN or inf)")
        return t

    def _staged(self, x, slot: int, what: str) -> torch.Tensor:
        """A checked joint vector [E, n_act] for the launch: host arrays (NumPy, lists) of a CPU model are copied
        into the staging buffer ``slot`` (0: positions, 1: velocities) with NumPy, other inputs as :meth:`_tensor`."""
        if self._staging_np is None or isinstance(x, torch.Tensor):
            return self._tensor(x, (self.kinematics.n_actuated,), what).contiguous()
        a = np.asarray(x)
        shape = a.shape
        full, tail = self._staging_shapes
        if shape != tail and shape != full:
            raise ValueError(f"WorldModel.update: {what} must have shape {list(tail)} or {list(full)}; "
                             f"got {list(shape)}")
        self._staging_np[slot][...] = a
        if self.check_finite and not _host_finite(self._staging_flat[slot], self._zero_np):
            raise ValueError(f"WorldModel.update: {what} contains non-finite values (NaN or inf)")
        return self._staging[slot]

    def _pose(self, pose: Pose, what: str) -> tuple[torch.Tensor, torch.Tensor]:
        if not isinstance(pose, (tuple, list)) or len(pose) != 2:
            raise ValueError(f"WorldModel.update: {what} must be a pair (rot [E, 3, 3], pos [E, 3])")
        return self._tensor(pose[0], (3, 3), f"{what} rot"), self._tensor(pose[1], (3,), f"{what} pos")

    def _object_index(self, name: str, what: str) -> int:
        i = self.scene.body_index(name, f"WorldModel.update: {what}")
        if i < self.scene.n_links:
            raise ValueError(f"WorldModel.update: {what}: {name!r} is a robot link; links are posed by forward "
                             "kinematics (pass joint positions / the root pose instead)")
        return i - self.scene.n_links

    # ------------------------------------------------------------------ step
    def update(self, t: float, joint_pos=None, joint_vel=None, joint_acc=None, root_pose: Pose | None = None,
               object_poses: Mapping[str, Pose] | None = None,
               object_twists: Mapping[str, Pose] | None = None) -> WorldState:
        """Advance to time t (s, non-decreasing) and return the WorldState (fresh tensors: earlier states stay valid).

        joint_pos / joint_vel / joint_acc: actuated joints [E, n_act] (URDF order, rad or m, /s, /s²); a missing
        joint_pos holds the previous joints (zero configuration before the first); a missing joint_vel is estimated
        by backward differences. root_pose: (rot, pos) of the root link in W. object_poses: name → (rot, pos) in W,
        held until the next one; object_twists: name → (lin, ang) in W for this step. Rotations [E, 3, 3] or
        [3, 3], vectors [E, 3] or [3]. Inputs are checked before anything is stored.
        """
        twists = self._take_inputs(t, joint_pos, joint_vel, joint_acc, root_pose, object_poses, object_twists)
        rot, pos, lin, ang, qm, qdm = self._launch_step()
        if twists:
            L = self.scene.n_links
            for k, (v, w) in twists.items():
                lin[:, L + k] = v
                ang[:, L + k] = w
        # positional (t, rot, pos, lin_vel, ang_vel, joint_pos, joint_vel, joint_acc, joint_vel_measured,
        # joint_stamp): a third of the keyword call's cost
        self.state = WorldState(self._t_last, rot, pos, lin, ang, qm, qdm,
                                None if self._qdd is None else self.kinematics.movable_rates(self._qdd),
                                self._qd_measured, None if math.isnan(self._j1) else self._j1)
        return self.state

    @property
    def objects_from_tf(self) -> bool:
        """Whether TF poses an object (a step then reads the TF buffer for it)."""
        return bool(self._tf_obj)

    def host_env_inputs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """What :meth:`update_envs` launches with, as NumPy views of a CPU model's buffers (None on other devices):
        the staged joint positions and velocities [E, n_act] and the (sample, velocity_given, dt) of each env [E]
        (:mod:`.lane_motion`: what each lane sets)."""
        if self._staging_np is None:
            return None
        return (*self._staging_np, *(a.numpy() for a in self._env_args))

    def update_envs(self, envs: Sequence[int], t: float, joint_vel_measured: bool,
                    joint_stamp: float | None) -> WorldState:
        """One step of the envs ``envs``, each on a clock of its own: the lane of each (a
        :class:`~.lane_motion.LaneWorldModel` of this model) has taken its inputs since the previous step; every
        other env holds its joints and poses. Returns the state of all envs (fresh tensors); t (s), whether the
        joint velocities were measured and the joint stamp (s, None: no sample) are what the state carries for all
        envs (one lane's: :class:`~.lane_motion.LaneSample`)."""
        if len(envs) < self.n_envs:
            envs = tuple(envs)
            if self._held[0] != envs:  # the envs that step change rarely (lanes end)
                held = torch.ones(self.n_envs, dtype=torch.bool)
                held[list(envs)] = False
                self._held = (envs, held.to(self.device))
            self._env_args[0].masked_fill_(self._held[1], 0)
        if self._args[0] != -1:
            self._set_args(-1, *self._args[1:])
        self._bind_twists(*self._env_twists)
        rot, pos, lin, ang, qm, qdm = self._launch_step()
        self.state = WorldState(t, rot, pos, lin, ang, qm, qdm, None, joint_vel_measured, joint_stamp)
        return self.state

    def _take_inputs(self, t: float, joint_pos, joint_vel, joint_acc, root_pose: Pose | None,
                     object_poses: Mapping[str, Pose] | None,
                     object_twists: Mapping[str, Pose] | None) -> dict[int, tuple[torch.Tensor, torch.Tensor]] | None:
        """The checked inputs of :meth:`update` at time t (s) stored and set as the next launch's; returns the
        caller's object twists (:meth:`_object_twists`; None without), which the launch does not take."""
        t = float(t)
        if not math.isfinite(t) or t < self._t_last:
            raise ValueError(f"WorldModel.update: t must be finite and non-decreasing; got {t} after {self._t_last}")
        if joint_pos is None and (joint_vel is not None or joint_acc is not None):
            raise ValueError("WorldModel.update: joint_vel / joint_acc need joint_pos in the same call")
        twists = self._object_twists(object_twists) if object_twists else None
        joints = self._joint_inputs(joint_pos, joint_vel, joint_acc) if joint_pos is not None else None
        sampled_lin, sampled_ang = self._pose_samples(t, root_pose, object_poses)
        if joints is not None:
            self._joint_sample(t, *joints)
        elif self._args[0] != 0:
            self._set_args(0, *self._args[1:])
        self._bind_twists(sampled_lin, sampled_ang)
        self._t_last = t
        return twists

    def _bind_twists(self, lin: torch.Tensor, ang: torch.Tensor) -> None:
        """Make the sampled twists (lin, ang) [E, 1 + O, 3] of the root and the objects the next launch's."""
        self._launch.bind("sampled_lin", lin)
        self._launch.bind("sampled_ang", ang)

    def _bind_joints(self, q: torch.Tensor, qd: torch.Tensor | None) -> None:
        """Make a checked joint sample (q, q̇ or None) [E, n_act] the next launch's input."""
        self._launch.bind("q_in", q)
        if qd is not None:
            self._launch.bind("qd_in", qd)

    def _launch_step(self) -> tuple:
        """Launch the world update into a fresh output slot: (rot, pos, lin, ang, joint_pos, joint_vel) of the
        state (the joint tensors None without a robot)."""
        if not self._free_outputs:
            self._free_outputs = self._output_chunk()
        slot, rot, pos, lin, ang, qm, qdm = self._free_outputs.pop()
        self._launch.set_arg(6, slot)
        self._launch()
        if self.kinematics is None:
            return rot, pos, lin, ang, None, None
        return rot, pos, lin, ang, qm, qdm

    def _object_twists(self, object_twists: Mapping[str, Pose]) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
        """Checked caller twists by object index: (lin [E, 3] m/s, ang [E, 3] rad/s) in W."""
        out = {}
        for name, tw in object_twists.items():
            k = self._object_index(name, f"object_twists[{name!r}]")
            if not isinstance(tw, (tuple, list)) or len(tw) != 2:
                raise ValueError(f"WorldModel.update: object_twists[{name!r}] must be a pair (lin [E, 3], ang [E, 3])")
            out[k] = (self._tensor(tw[0], (3,), f"object_twists[{name!r}] lin"),
                      self._tensor(tw[1], (3,), f"object_twists[{name!r}] ang"))
        return out

    def _joint_inputs(self, joint_pos, joint_vel, joint_acc) -> tuple:
        """Checked joint sample (q, q̇ or None, q̈ or None), each [E, n_act]."""
        if self.kinematics is None:
            raise ValueError("WorldModel.update: joint_pos given, but the scene has no robot")
        n = self.kinematics.n_actuated
        q = self._staged(joint_pos, 0, self._joint_pos_what)
        qd = self._staged(joint_vel, 1, "joint_vel") if joint_vel is not None else None
        qdd = self._tensor(joint_acc, (n,), "joint_acc") if joint_acc is not None else None
        return q, qd, qdd

    def _joint_sample(self, t: float, q: torch.Tensor, qd: torch.Tensor | None, qdd: torch.Tensor | None):
        """Make a checked joint sample the input of this step's launch (the kernel stores it)."""
        self._j0, self._j1, sample, dt = next_joint_sample(t, self._j0, self._j1)
        self._qd_measured = qd is not None
        self._qdd = qdd
        self._bind_joints(q, qd)
        self._set_args(sample, int(qd is not None), dt)

    def _set_args(self, sample: int, velocity_given: int, dt: float):
        """Set the (sample, velocity_given, dt) arguments of the next launch (only those that changed)."""
        last = self._args
        if sample != last[0]:
            self._set_arg(0, sample)
        if velocity_given != last[1]:
            self._set_arg(1, velocity_given)
        if dt != last[2]:
            self._set_arg(2, dt)
        self._args = (sample, velocity_given, dt)

    def _set_arg(self, i: int, value) -> None:
        """Set argument i of (sample, velocity_given, dt): the launch's scalar parameter 3 + i."""
        self._launch.set_arg(3 + i, value)

    def _pose_samples(self, t: float, root_pose: Pose | None,
                      object_poses: Mapping[str, Pose] | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Take this step's root and object pose samples; return the backward-difference twists (lin, ang)
        [E, 1 + O, 3] of the root (0) and the objects (1 + k), zero for bodies that do not move."""
        root_stamp = self._root_sample(t, root_pose)
        if math.isnan(root_stamp) and not (object_poses or self._tf_obj or self._any_api_posed):
            return self._zero_twists, self._zero_twists  # nothing moves: no history to keep
        # pose samples of the root (entry 0) and the objects (1 + k); NaN stamp: no moving sample
        stamps = np.full(1 + len(self.scene.objects), np.nan)
        stamps[0] = root_stamp
        self._object_samples(t, object_poses or {}, stamps)
        if np.isnan(stamps).all():
            return self._zero_twists, self._zero_twists
        self._history.add(stamps, torch.cat([self._root_rot[:, None], self._obj_rot], dim=1),
                          torch.cat([self._root_pos[:, None], self._obj_pos], dim=1), self._history_names)
        moving = torch.as_tensor(~np.isnan(stamps), device=self.device)[:, None]
        diff_lin, diff_ang = self._history.twists()
        return diff_lin * moving, diff_ang * moving

    def _root_sample(self, t: float, root_pose: Pose | None) -> float:
        """Set the root pose from the caller, a held caller pose, TF or the fixed pose; return the stamp of a moving
        root sample (NaN for a fixed root)."""
        if root_pose is not None:
            rot, pos = self._pose(root_pose, "root_pose")
            self._root_rot.copy_(rot)
            self._root_pos.copy_(pos)
            self._root_api = True
            return t
        if self._root_api:  # a held caller pose is the same sample again
            return float(self._history.s1[0])
        if self.root_from_tf:
            if self.tf.revision != self._root_tf[0]:  # else the root buffers hold this lookup already
                s = self.tf.lookup(self.world_frame, self.scene.robot.root_link)
                if s is not self._root_tf[2]:  # the buffer hands out the same result while the chain is unchanged
                    # torch.tensor copies the shared lookup result (as_tensor would alias it)
                    self._root_rot.copy_(torch.tensor(s.rot, device=self.device, dtype=self.dtype))
                    self._root_pos.copy_(torch.tensor(s.trans, device=self.device, dtype=self.dtype))
                self._root_tf = (self.tf.revision, math.nan if s.static else s.stamp, s)
            return self._root_tf[1]
        return math.nan

    def _object_samples(self, t: float, object_poses: Mapping[str, Pose], stamps: np.ndarray):
        """Store caller and TF object poses; stamps[1 + k] for every object that moves. An object attached to a
        link is no longer carried by it once the caller poses it."""
        for name, pose in object_poses.items():
            k = self._object_index(name, f"object_poses[{name!r}]")
            self._obj_rot[:, k], self._obj_pos[:, k] = self._pose(pose, f"object_poses[{name!r}]")
            if not self._api_posed[k] and self._attached[k]:
                self._attach_link[k] = -1
            self._api_posed[k] = self._any_api_posed = True
            stamps[1 + k] = t
        for k in self._tf_obj:
            if self._api_posed[k]:
                continue
            s = object_pose_from_tf(self.scene.objects[k], self.tf, self.world_frame)
            self._obj_rot[:, k] = torch.tensor(s.rot, device=self.device, dtype=self.dtype)
            self._obj_pos[:, k] = torch.tensor(s.trans, device=self.device, dtype=self.dtype)
            if not s.static:
                stamps[1 + k] = s.stamp
        held = self._api_posed & np.isnan(stamps[1:])
        stamps[1:][held] = self._history.s1[1:][held]  # a held caller pose is the same sample again

    # ------------------------------------------------------------------ reset
    def reset(self, env_mask: torch.Tensor | None = None):
        """Forget the motion history of the envs in env_mask (bool [E]; None = all): their next pose samples and
        joint samples get zero twist / zero estimated joint velocity. Poses are kept."""
        envs = (torch.ones(self.n_envs, dtype=torch.bool, device=self.device) if env_mask is None
                else torch.as_tensor(env_mask, dtype=torch.bool, device=self.device))
        if envs.shape != (self.n_envs,):
            raise ValueError(f"WorldModel.reset: env_mask must have shape [{self.n_envs}]; got {list(envs.shape)}")
        self._history.reset(envs)
        self._sample_ok.masked_fill_(envs[:, None], 0)
        self._qd.masked_fill_(envs[:, None], 0.0)

    @property
    def root_pose(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Current root link pose in W: rot [E, 3, 3], pos [E, 3] m (the model's buffers, updated in place)."""
        return self._root_rot, self._root_pos
