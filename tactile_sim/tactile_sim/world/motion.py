"""Per-step world motion (spec §2.4): poses and twists of every body as a :class:`WorldState`.

* Robot links: forward kinematics of the joint positions from the root pose; twists exact, J(q)·q̇ plus the
  transport of the root twist. q̇ is the caller's joint velocity, else the backward difference of the two most recent
  joint samples with distinct stamps (continuous joints wrapped to (−π, π]), as §11.4.
* Root pose: the caller's ``root_pose``, else TF (world frame → root link) when ``root_from_tf``, else a fixed pose.
* Objects (see :mod:`.objects`): fixed, attached to a robot link (exact twist), posed by TF, or by the caller.
* Twists not known exactly are backward differences of the two most recent pose samples with distinct stamps:
  v = (o_k − o_{k−1})/Δt, ω = Log(R_k R_{k−1}ᵀ)/Δt. Fixed bodies have zero twist; the first sample of a body after
  a reset has zero twist. A pose sample from TF carries the TF stamp, every other sample the update time t.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import torch

from ..errors import SceneError
from ..geometry.transforms import so3_log
from .dynamics import InverseDynamics
from .kinematics import Kinematics
from .objects import object_pose_from_tf
from .scene import Scene
from .state import WorldState
from .tf_buffer import TFBuffer
from .urdf import JointType

Pose = tuple  # (rot [E, 3, 3] or [3, 3], pos [E, 3] or [3])


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
    """

    def __init__(self, scene: Scene, *, n_envs: int = 1, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32, world_frame: str = "world", tf: TFBuffer | None = None,
                 root_pose: Pose | None = None, root_from_tf: bool = False, check_finite: bool = True):
        if int(n_envs) < 1:
            raise ValueError(f"WorldModel: n_envs must be >= 1; got {n_envs}")
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
        self.kinematics = Kinematics(robot, self.device, dtype) if robot is not None else None
        self.dynamics = InverseDynamics(self.kinematics) if robot is not None else None

        # objects by pose source
        links = set(robot.link_names) if robot is not None else set()
        self._attached_obj, self._attached_link, self._tf_obj = [], [], []
        for k, o in enumerate(scene.objects):
            frame = o.parent_frame
            if frame is None or frame == world_frame:
                continue
            if frame in links:
                self._attached_obj.append(k)
                self._attached_link.append(robot.link_index(frame))
            elif tf is None:
                raise SceneError(f"{o.source}: object {o.name!r} is posed in TF frame {frame!r}, but the world model "
                                 "has no TF buffer; pass tf=TFBuffer(...) or use a robot link / the world frame")
            else:
                self._tf_obj.append(k)
        O = len(scene.objects)
        off_rot = torch.stack([torch.as_tensor(o.rot, **f) for o in scene.objects]) if O else torch.zeros(0, 3, 3, **f)
        off_pos = torch.stack([torch.as_tensor(o.pos, **f) for o in scene.objects]) if O else torch.zeros(0, 3, **f)
        self._off_rot, self._off_pos = off_rot, off_pos
        self._obj_rot = off_rot.expand(E, O, 3, 3).clone()  # current object poses (held between samples)
        self._obj_pos = off_pos.expand(E, O, 3).clone()
        self._api_posed = np.zeros(O, dtype=bool)
        self._idx_attached_obj = torch.as_tensor(self._attached_obj, dtype=torch.long, device=self.device)
        self._idx_attached_link = torch.as_tensor(self._attached_link, dtype=torch.long, device=self.device)

        # root pose
        if root_pose is None:
            self._root_rot = torch.eye(3, **f).expand(E, 3, 3).clone()
            self._root_pos = torch.zeros(E, 3, **f)
        else:
            self._root_rot, self._root_pos = self._pose(root_pose, "root_pose")
        self._history = _PoseHistory(E, 1 + O, self.device, dtype)  # body 0 = root, 1 + k = object k
        self._history_names = ["<root>"] + [o.name for o in scene.objects]
        self._root_api = False
        self._root_is_identity = root_pose is None  # FK can skip composing with an identity root

        # joints
        n_act = robot.n_actuated if robot is not None else 0
        self._q = torch.zeros(E, n_act, **f)
        self._qd = torch.zeros(E, n_act, **f)
        self._qdd: torch.Tensor | None = None
        self._qd_measured = False
        self._q_prev = torch.zeros(E, n_act, **f)
        self._j0 = self._j1 = math.nan
        self._jv0 = torch.zeros(E, dtype=torch.bool, device=self.device)
        self._jv1 = torch.zeros_like(self._jv0)
        cont = [robot.joint(n).type is JointType.CONTINUOUS for n in robot.actuated_joint_names] if robot else []
        self._continuous = torch.as_tensor(cont, dtype=torch.bool, device=self.device)
        self._t_last = -math.inf
        self.state: WorldState | None = None

    # ------------------------------------------------------------------ inputs
    def _tensor(self, x, tail: tuple[int, ...], what: str) -> torch.Tensor:
        t = torch.as_tensor(x, device=self.device, dtype=self.dtype)
        if t.shape == tail:
            t = t.expand((self.n_envs,) + tail)
        if t.shape != (self.n_envs,) + tail:
            raise ValueError(f"WorldModel.update: {what} must have shape {list(tail)} or "
                             f"{[self.n_envs] + list(tail)}; got {list(t.shape)}")
        if self.check_finite and not bool(torch.isfinite(t).all()):
            raise ValueError(f"WorldModel.update: {what} contains non-finite values (NaN or inf)")
        return t

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
        """Advance to time t (s, non-decreasing) and return the WorldState.

        joint_pos / joint_vel / joint_acc: actuated joints [E, n_act] (URDF order, rad or m, /s, /s²); a missing
        joint_pos holds the previous joints (zero configuration before the first); a missing joint_vel is estimated
        by backward differences. root_pose: (rot, pos) of the root link in W. object_poses: name → (rot, pos) in W,
        held until the next one; object_twists: name → (lin, ang) in W for this step. Rotations [E, 3, 3] or
        [3, 3], vectors [E, 3] or [3].
        """
        t = float(t)
        if not math.isfinite(t) or t < self._t_last:
            raise ValueError(f"WorldModel.update: t must be finite and non-decreasing; got {t} after {self._t_last}")
        if joint_pos is None and (joint_vel is not None or joint_acc is not None):
            raise ValueError("WorldModel.update: joint_vel / joint_acc need joint_pos in the same call")
        if joint_pos is not None:
            if self.kinematics is None:
                raise ValueError("WorldModel.update: joint_pos given, but the scene has no robot")
            self._joint_sample(t, joint_pos, joint_vel, joint_acc)
        # pose samples of the root (entry 0) and the objects (1 + k); NaN stamp: no moving sample
        stamps = np.full(1 + len(self.scene.objects), np.nan)
        self._root_sample(t, root_pose, stamps)
        self._object_samples(t, object_poses or {}, stamps)
        if np.isnan(stamps).all():  # nothing moves: no history to keep, zero twists
            diff_lin = torch.zeros(self.n_envs, len(stamps), 3, device=self.device, dtype=self.dtype)
            diff_ang = torch.zeros_like(diff_lin)
        else:
            self._history.add(stamps, torch.cat([self._root_rot[:, None], self._obj_rot], dim=1),
                              torch.cat([self._root_pos[:, None], self._obj_pos], dim=1), self._history_names)
            moving = torch.as_tensor(~np.isnan(stamps), device=self.device)[:, None]
            diff_lin, diff_ang = self._history.twists()
            diff_lin, diff_ang = diff_lin * moving, diff_ang * moving

        kin = self.kinematics
        qm = qdm = qddm = None
        if kin is not None:
            qm, qdm = kin.movable_positions(self._q), kin.movable_rates(self._qd)
            qddm = kin.movable_rates(self._qdd) if self._qdd is not None else None
            root = (None, None) if self._root_is_identity else (self._root_rot, self._root_pos)
            l_rot, l_pos = kin.fk_movable(qm, *root)
            root_moves = not math.isnan(stamps[0])
            l_lin, l_ang = kin.twists_movable(l_rot, l_pos, qdm, diff_lin[:, 0] if root_moves else None,
                                              diff_ang[:, 0] if root_moves else None)
        else:
            l_rot = torch.zeros(self.n_envs, 0, 3, 3, device=self.device, dtype=self.dtype)
            l_pos = l_lin = l_ang = torch.zeros(self.n_envs, 0, 3, device=self.device, dtype=self.dtype)
        o_rot, o_pos, o_lin, o_ang = self._attach_to_links(l_rot, l_pos, l_lin, l_ang, diff_lin[:, 1:],
                                                           diff_ang[:, 1:])
        for name, tw in (object_twists or {}).items():
            k = self._object_index(name, f"object_twists[{name!r}]")
            if not isinstance(tw, (tuple, list)) or len(tw) != 2:
                raise ValueError(f"WorldModel.update: object_twists[{name!r}] must be a pair (lin [E, 3], ang [E, 3])")
            o_lin[:, k] = self._tensor(tw[0], (3,), f"object_twists[{name!r}] lin")
            o_ang[:, k] = self._tensor(tw[1], (3,), f"object_twists[{name!r}] ang")

        self._t_last = t
        self.state = WorldState(
            t=t,
            rot=torch.cat([l_rot, o_rot], dim=1),
            pos=torch.cat([l_pos, o_pos], dim=1),
            lin_vel=torch.cat([l_lin, o_lin], dim=1),
            ang_vel=torch.cat([l_ang, o_ang], dim=1),
            joint_pos=qm,
            joint_vel=qdm,
            joint_acc=qddm,
            joint_vel_measured=self._qd_measured,
            joint_stamp=None if math.isnan(self._j1) else self._j1,
        )
        return self.state

    def _root_sample(self, t: float, root_pose: Pose | None, stamps: np.ndarray):
        """Set the root pose from the caller, a held caller pose, TF or the fixed pose; stamps[0] for a moving one."""
        if root_pose is not None:
            self._root_rot, self._root_pos = self._pose(root_pose, "root_pose")
            stamps[0], self._root_api, self._root_is_identity = t, True, False
        elif self._root_api:  # a held caller pose is the same sample again
            stamps[0] = self._history.s1[0]
        elif self.root_from_tf:
            s = self.tf.lookup(self.world_frame, self.scene.robot.root_link)
            self._root_is_identity = False
            self._root_rot = torch.as_tensor(s.rot, device=self.device, dtype=self.dtype).expand(self.n_envs, 3, 3)
            self._root_pos = torch.as_tensor(s.trans, device=self.device, dtype=self.dtype).expand(self.n_envs, 3)
            if not s.static:
                stamps[0] = s.stamp

    def _object_samples(self, t: float, object_poses: Mapping[str, Pose], stamps: np.ndarray):
        """Store caller and TF object poses; stamps[1 + k] for every object that moves."""
        for name, pose in object_poses.items():
            k = self._object_index(name, f"object_poses[{name!r}]")
            self._obj_rot[:, k], self._obj_pos[:, k] = self._pose(pose, f"object_poses[{name!r}]")
            self._api_posed[k] = True
            stamps[1 + k] = t
        for k in self._tf_obj:
            if self._api_posed[k]:
                continue
            s = object_pose_from_tf(self.scene.objects[k], self.tf, self.world_frame)
            self._obj_rot[:, k] = torch.as_tensor(s.rot, device=self.device, dtype=self.dtype)
            self._obj_pos[:, k] = torch.as_tensor(s.trans, device=self.device, dtype=self.dtype)
            if not s.static:
                stamps[1 + k] = s.stamp
        held = self._api_posed & np.isnan(stamps[1:])
        stamps[1:][held] = self._history.s1[1:][held]  # a held caller pose is the same sample again

    def _attach_to_links(self, l_rot, l_pos, l_lin, l_ang, o_lin, o_ang):
        """Object poses and twists [E, O, …], with objects attached to robot links (and not taken over by the
        caller) moved rigidly with their link: pose = link ∘ offset, v = v_l + ω_l × (o − o_l), ω = ω_l.
        o_lin / o_ang are fresh tensors and are updated in place."""
        if not self._attached_obj:
            return self._obj_rot, self._obj_pos, o_lin, o_ang
        o_rot, o_pos = self._obj_rot.clone(), self._obj_pos.clone()
        keep = torch.as_tensor(~self._api_posed[self._attached_obj], device=self.device)
        ao, al = self._idx_attached_obj, self._idx_attached_link
        lr, lp = l_rot[:, al], l_pos[:, al]
        a_pos = (lr @ self._off_pos[ao][..., None])[..., 0] + lp
        a_ang = l_ang[:, al]
        a_lin = l_lin[:, al] + torch.cross(a_ang, a_pos - lp, dim=-1)
        o_rot[:, ao] = torch.where(keep[:, None, None], lr @ self._off_rot[ao], o_rot[:, ao])
        o_pos[:, ao] = torch.where(keep[:, None], a_pos, o_pos[:, ao])
        o_lin[:, ao] = torch.where(keep[:, None], a_lin, o_lin[:, ao])
        o_ang[:, ao] = torch.where(keep[:, None], a_ang, o_ang[:, ao])
        return o_rot, o_pos, o_lin, o_ang

    def _joint_sample(self, t: float, joint_pos, joint_vel, joint_acc):
        n = self.kinematics.n_actuated
        q = self._tensor(joint_pos, (n,), f"joint_pos (actuated joints {list(self.scene.robot.actuated_joint_names)})")
        if not t == self._j1:  # a new stamp (t never decreases): the latest sample becomes the previous one
            self._q_prev, self._j0, self._jv0 = self._q, self._j1, self._jv1
        self._q, self._j1 = q, t
        self._jv1 = torch.ones_like(self._jv1)
        self._qd_measured = joint_vel is not None
        if joint_vel is not None:
            self._qd = self._tensor(joint_vel, (n,), "joint_vel")
        else:
            d = self._q - self._q_prev
            d = torch.where(self._continuous, d - 2 * math.pi * torch.ceil((d - math.pi) / (2 * math.pi)), d)
            dt = self._j1 - self._j0
            valid = self._jv0 & self._jv1 if math.isfinite(dt) else torch.zeros_like(self._jv0)
            self._qd = torch.where(valid[:, None], d / (dt if math.isfinite(dt) else 1.0), 0.0)
        self._qdd = self._tensor(joint_acc, (n,), "joint_acc") if joint_acc is not None else None

    # ------------------------------------------------------------------ reset
    def reset(self, env_mask: torch.Tensor | None = None):
        """Forget the motion history of the envs in env_mask (bool [E]; None = all): their next pose samples and
        joint samples get zero twist / zero estimated joint velocity. Poses are kept."""
        envs = (torch.ones(self.n_envs, dtype=torch.bool, device=self.device) if env_mask is None
                else torch.as_tensor(env_mask, dtype=torch.bool, device=self.device))
        if envs.shape != (self.n_envs,):
            raise ValueError(f"WorldModel.reset: env_mask must have shape [{self.n_envs}]; got {list(envs.shape)}")
        self._history.reset(envs)
        self._jv0 = self._jv0 & ~envs
        self._jv1 = self._jv1 & ~envs
        self._qd = torch.where(envs[:, None], 0.0, self._qd)

    @property
    def root_pose(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Current root link pose in W: rot [E, 3, 3], pos [E, 3] m."""
        return self._root_rot, self._root_pos
