"""WorldModel (docs/models/scene.md#motion): exact robot twists, backward-difference twists, object sources, reset and
input errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from helpers_world import central_twists, reference_fk, reference_movable, robot_model, tree_robot
from tactile_sim.errors import SceneError
from tactile_sim.geometry.shapes import Shape, ShapeKind
from tactile_sim.geometry.transforms import matrix_to_quat, so3_exp
from tactile_sim.world.kinematics import Kinematics
from tactile_sim.world.motion import WorldModel
from tactile_sim.world.objects import DeclaredObject
from tactile_sim.world.scene import Scene
from tactile_sim.world.tf_buffer import TFBuffer
from tactile_sim.world.urdf import RobotModel

F64 = torch.float64


def ball(name, **kw):
    return DeclaredObject(name, (Shape(ShapeKind.SPHERE, (0.05,)),), **kw)


def panda_world(objects=(), **kw):
    return WorldModel(Scene(robot_model("panda"), list(objects)), dtype=F64, **kw)


def test_robot_links_exact_twists_with_given_velocity():
    wm = panda_world(n_envs=2)
    robot = robot_model("panda")
    rng = np.random.default_rng(0)
    q, qd = (torch.as_tensor(rng.uniform(-1, 1, (2, robot.n_actuated))) for _ in range(2))
    s = wm.update(0.0, joint_pos=q, joint_vel=qd)
    kin = Kinematics(robot, dtype=F64)
    rot, pos, lin, ang = kin.motion(q, qd)
    torch.testing.assert_close(s.rot, rot, atol=0, rtol=0)
    torch.testing.assert_close(s.lin_vel, lin, atol=1e-14, rtol=0)
    torch.testing.assert_close(s.ang_vel, ang, atol=1e-14, rtol=0)
    assert s.joint_pos.shape == (2, 9) and torch.equal(s.joint_pos[:, 8], q[:, 7])  # mimic finger
    assert torch.equal(s.joint_vel[:, 8], qd[:, 7]) and s.joint_acc is None and s.t == 0.0


def test_joint_velocity_estimate_by_backward_differences():
    wm = panda_world()
    a = torch.linspace(-0.5, 0.5, 8, dtype=F64)[None]
    b = torch.linspace(0.3, -0.2, 8, dtype=F64)[None]
    s0 = wm.update(1.0, joint_pos=a + b * 1.0)
    assert torch.equal(s0.joint_vel, torch.zeros_like(s0.joint_vel))  # first sample: no estimate yet
    assert torch.equal(s0.lin_vel, torch.zeros_like(s0.lin_vel))
    s1 = wm.update(1.25, joint_pos=a + b * 1.25)
    torch.testing.assert_close(s1.joint_vel[:, :8], b, atol=1e-12, rtol=0)
    # the same stamp again: the difference is still taken against the sample at t = 1.0
    s2 = wm.update(1.25, joint_pos=a + b * 1.5)
    torch.testing.assert_close(s2.joint_vel[:, :8], b * 2.0, atol=1e-12, rtol=0)
    # no joint sample: pose and velocity are held
    s3 = wm.update(1.3)
    torch.testing.assert_close(s3.pos, s2.pos, atol=0, rtol=0)
    torch.testing.assert_close(s3.joint_vel, s2.joint_vel, atol=0, rtol=0)


def test_continuous_joint_difference_is_wrapped():
    robot = RobotModel.from_urdf("""<robot name="p"><link name="a"/><link name="b"/>
      <joint name="j" type="continuous"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/></joint></robot>""")
    wm = WorldModel(Scene(robot), dtype=F64)
    wm.update(0.0, joint_pos=[3.1])
    s = wm.update(0.1, joint_pos=[-3.1])
    assert float(s.joint_vel[0, 0]) == pytest.approx((2 * math.pi - 6.2) / 0.1, abs=1e-9)
    assert float(s.ang_vel[0, 1, 2]) == pytest.approx((2 * math.pi - 6.2) / 0.1, abs=1e-9)


def test_api_object_backward_difference_twist():
    wm = WorldModel(Scene(None, [ball("cup")]), dtype=F64)
    o0 = torch.tensor([0.1, -0.2, 0.3], dtype=F64)
    v = torch.tensor([0.5, 0.0, -1.0], dtype=F64)
    w = torch.tensor([0.3, -0.6, 1.1], dtype=F64)
    r0 = so3_exp(torch.tensor([0.2, 0.4, -0.1], dtype=F64))

    def pose(t):
        return so3_exp(w * t) @ r0, o0 + v * t

    s = wm.update(0.0, object_poses={"cup": pose(0.0)})
    assert torch.equal(s.lin_vel, torch.zeros(1, 1, 3, dtype=F64))
    for t in (0.1, 0.3):
        s = wm.update(t, object_poses={"cup": pose(t)})
        torch.testing.assert_close(s.lin_vel[0, 0], v, atol=1e-12, rtol=0)
        torch.testing.assert_close(s.ang_vel[0, 0], w, atol=1e-12, rtol=0)
    held = wm.update(0.35)  # no new caller pose: the pose and its twist are held
    torch.testing.assert_close(held.pos, s.pos, atol=0, rtol=0)
    torch.testing.assert_close(held.lin_vel, s.lin_vel, atol=0, rtol=0)
    still = wm.update(0.4, object_poses={"cup": pose(0.3)})  # the same pose again: at rest
    assert torch.equal(still.lin_vel, torch.zeros_like(still.lin_vel))
    assert torch.equal(still.ang_vel, torch.zeros_like(still.ang_vel))


def test_given_object_twist_is_used():
    wm = WorldModel(Scene(None, [ball("cup")]), dtype=F64)
    s = wm.update(0.0, object_poses={"cup": (torch.eye(3), torch.zeros(3))},
                  object_twists={"cup": ([1.0, 2.0, 3.0], [0.0, 0.0, 4.0])})
    assert s.lin_vel[0, 0].tolist() == [1.0, 2.0, 3.0] and s.ang_vel[0, 0].tolist() == [0.0, 0.0, 4.0]


def test_fixed_object_pose_and_zero_twist():
    r = so3_exp(torch.tensor([0.0, 0.0, 0.5], dtype=F64)).numpy()
    wm = panda_world([ball("table", rot=r, pos=[1.0, 0.0, -0.1])], n_envs=3)
    for t in (0.0, 0.1):
        s = wm.update(t, joint_pos=torch.full((3, 8), t, dtype=F64))
    k = wm.scene.body_index("table")
    declared = torch.as_tensor(wm.scene.objects[0].rot)  # the declared rotation, projected onto SO(3)
    torch.testing.assert_close(declared, torch.as_tensor(r), atol=1e-15, rtol=0)
    torch.testing.assert_close(s.rot[:, k], declared.expand(3, 3, 3), atol=0, rtol=0)
    assert s.pos[:, k].tolist() == [[1.0, 0.0, -0.1]] * 3
    assert torch.equal(s.lin_vel[:, k], torch.zeros(3, 3, dtype=F64))
    assert torch.equal(s.ang_vel[:, k], torch.zeros(3, 3, dtype=F64))


def test_tf_object_uses_tf_stamps():
    tf = TFBuffer()
    tf.set_transform("world", "mocap", [0.0, 0.0, 1.0], 0.0, quat=[0, 0, 0, 1], static=True)
    wm = panda_world([ball("cup", follow="tracker", pos=[0.0, 0.0, 0.1]), ball("shelf", frame="mocap")], tf=tf)
    v, wz = 0.4, 0.8
    k = wm.scene.body_index("cup")
    for i, t in enumerate(np.arange(0.0, 0.5, 0.05)):
        if i % 2 == 0:  # the tracker publishes at half the update rate
            stamp = t - 0.01
            a = wz * stamp
            tf.set_transform("world", "tracker", [v * stamp, 0.0, 0.0], stamp, quat=[0, 0, math.sin(a / 2), math.cos(a / 2)])
        s = wm.update(float(t))
        if i >= 2:
            torch.testing.assert_close(s.ang_vel[0, k], torch.tensor([0.0, 0.0, wz], dtype=F64), atol=1e-9, rtol=0)
            # origin of the cup is on the tracker's z axis: it moves with the tracker origin
            torch.testing.assert_close(s.lin_vel[0, k], torch.tensor([v, 0.0, 0.0], dtype=F64), atol=1e-9, rtol=0)
    shelf = wm.scene.body_index("shelf")
    assert s.pos[0, shelf].tolist() == [0.0, 0.0, 1.0] and torch.equal(s.lin_vel[0, shelf], torch.zeros(3, dtype=F64))


def test_attached_object_moves_rigidly_with_link():
    wm = panda_world([ball("tool", frame="panda_hand", pos=[0.0, 0.05, 0.1])], n_envs=2)
    rng = np.random.default_rng(3)
    q, qd = (torch.as_tensor(rng.uniform(-1, 1, (2, 8))) for _ in range(2))
    s = wm.update(0.0, joint_pos=q, joint_vel=qd)
    hand, tool = wm.scene.body_index("panda_hand"), wm.scene.body_index("tool")
    torch.testing.assert_close(s.rot[:, tool], s.rot[:, hand], atol=0, rtol=0)
    expected = s.pos[:, hand] + s.rot[:, hand] @ torch.tensor([0.0, 0.05, 0.1], dtype=F64)
    torch.testing.assert_close(s.pos[:, tool], expected, atol=1e-14, rtol=0)
    point_v = s.point_velocity(torch.full((2, 1), hand), s.pos[:, tool][:, None])[:, 0]
    torch.testing.assert_close(s.lin_vel[:, tool], point_v, atol=1e-14, rtol=0)
    torch.testing.assert_close(s.ang_vel[:, tool], s.ang_vel[:, hand], atol=0, rtol=0)


def test_moving_root_adds_root_twist():
    wm = panda_world()
    v = torch.tensor([0.2, -0.1, 0.05], dtype=F64)
    w = torch.tensor([0.0, 0.3, -0.2], dtype=F64)
    q = torch.full((1, 8), 0.2, dtype=F64)
    for t in (0.0, 0.1):
        s = wm.update(t, joint_pos=q, joint_vel=torch.zeros(1, 8, dtype=F64), root_pose=(so3_exp(w * t), v * t))
    o_root = s.pos[0, 0]
    torch.testing.assert_close(s.ang_vel[0], w.expand(13, 3), atol=1e-12, rtol=0)
    torch.testing.assert_close(s.lin_vel[0], v + torch.cross(w.expand(13, 3), s.pos[0] - o_root, dim=-1),
                               atol=1e-12, rtol=0)


def test_root_from_tf():
    tf = TFBuffer()
    tf.set_transform("world", "panda_link0", [1.0, 2.0, 0.0], 0.0, quat=[0, 0, 0, 1])
    wm = panda_world(tf=tf, root_from_tf=True)
    wm.update(0.0, joint_pos=torch.zeros(1, 8, dtype=F64))
    tf.set_transform("world", "panda_link0", [1.5, 2.0, 0.0], 0.5, quat=[0, 0, 0, 1])
    s = wm.update(0.6)
    assert s.pos[0, 0].tolist() == [1.5, 2.0, 0.0]
    torch.testing.assert_close(s.lin_vel[0], torch.tensor([1.0, 0.0, 0.0], dtype=F64).expand(13, 3),
                               atol=1e-12, rtol=0)


def test_reset_clears_history_per_env():
    wm = WorldModel(Scene(None, [ball("cup")]), n_envs=2, dtype=F64)
    wm.update(0.0, object_poses={"cup": (torch.eye(3), torch.zeros(3))})
    wm.update(0.1, object_poses={"cup": (torch.eye(3), torch.tensor([0.1, 0.0, 0.0], dtype=F64))})
    wm.reset(torch.tensor([True, False]))
    s = wm.update(0.2, object_poses={"cup": (torch.eye(3), torch.tensor([0.2, 0.0, 0.0], dtype=F64))})
    assert s.lin_vel[0, 0].tolist() == [0.0, 0.0, 0.0]
    assert s.lin_vel[1, 0].tolist() == pytest.approx([1.0, 0.0, 0.0], abs=1e-12)
    s = wm.update(0.3, object_poses={"cup": (torch.eye(3), torch.tensor([0.3, 0.0, 0.0], dtype=F64))})
    assert s.lin_vel[:, 0, 0].tolist() == pytest.approx([1.0, 1.0], abs=1e-12)
    with pytest.raises(ValueError, match=r"env_mask must have shape \[2\]"):
        wm.reset(torch.tensor([True]))


def test_reset_zeroes_joint_velocity_estimate():
    wm = panda_world(n_envs=2)
    wm.update(0.0, joint_pos=torch.zeros(2, 8, dtype=F64))
    wm.update(0.1, joint_pos=torch.full((2, 8), 0.1, dtype=F64))
    wm.reset(torch.tensor([False, True]))
    s = wm.update(0.2, joint_pos=torch.full((2, 8), 0.2, dtype=F64))
    assert s.joint_vel[0, 0].item() == pytest.approx(1.0) and s.joint_vel[1].abs().max().item() == 0.0


def test_input_errors():
    wm = panda_world([ball("cup")])
    with pytest.raises(ValueError, match=r"joint_pos .* contains non-finite values"):
        wm.update(0.0, joint_pos=torch.tensor([[0.0] * 7 + [math.nan]]))
    with pytest.raises(ValueError, match=r"joint_pos .* must have shape \[8\] or \[1, 8\]; got \[1, 9\]"):
        wm.update(0.0, joint_pos=torch.zeros(1, 9))
    with pytest.raises(ValueError, match="joint_vel / joint_acc need joint_pos"):
        wm.update(0.0, joint_vel=torch.zeros(1, 8))
    with pytest.raises(ValueError, match=r"'panda_hand' is a robot link"):
        wm.update(0.0, object_poses={"panda_hand": (torch.eye(3), torch.zeros(3))})
    with pytest.raises(SceneError, match=r"object_poses\['cupp'\]: unknown body 'cupp'; closest existing bodies: "
                                         r"\['cup'"):
        wm.update(0.0, object_poses={"cupp": (torch.eye(3), torch.zeros(3))})
    with pytest.raises(ValueError, match=r"object_poses\['cup'\] pos contains non-finite"):
        wm.update(0.0, object_poses={"cup": (torch.eye(3), torch.tensor([0.0, math.inf, 0.0]))})
    wm.update(1.0)
    with pytest.raises(ValueError, match="t must be finite and non-decreasing; got 0.5 after 1.0"):
        wm.update(0.5)
    with pytest.raises(SceneError, match="posed in TF frame 'tracker', but the world model has no TF buffer"):
        panda_world([ball("cup", follow="tracker")])
    with pytest.raises(ValueError, match="root_from_tf needs a robot"):
        WorldModel(Scene(None, [ball("cup")]), root_from_tf=True, tf=TFBuffer())


def test_default_dtype_and_quaternion_root():
    wm = WorldModel(Scene(robot_model("ur5")))
    q = matrix_to_quat(so3_exp(torch.tensor([0.0, 0.0, 0.3])))
    assert q.shape == (4,)
    s = wm.update(0.0, joint_pos=torch.zeros(6), root_pose=(so3_exp(torch.tensor([0.0, 0.0, 0.3])), [0.0, 0, 1]))
    assert s.rot.dtype == torch.float32 and s.pos.shape == (1, 11, 3)
    assert s.pos[0, wm.scene.body_index("world"), 2].item() == 1.0


def _rotvec(v):
    from scipy.spatial.transform import Rotation

    return Rotation.from_rotvec(np.asarray(v, dtype=np.float64)).as_matrix()


def test_world_update_vs_reference_moving_root_attached_objects_per_env():
    """Tree robot (mimic + prismatic + continuous joints), E = 3 envs with different joints and given velocities,
    a root moving at a constant twist (backward differences are exact), objects carried by two links and a fixed
    one: every pose against an independent FK, every twist against central differences of the world trajectory."""
    robot = tree_robot()
    offsets = {"cup": (_rotvec([0.3, -0.2, 0.1]), np.array([0.02, 0.0, 0.05])),
               "cap": (_rotvec([0.0, 0.5, 0.0]), np.array([0.0, 0.01, -0.02]))}
    objects = [ball("cup", frame="hand", rot=offsets["cup"][0], pos=offsets["cup"][1]),
               ball("cap", frame="wheel", rot=offsets["cap"][0], pos=offsets["cap"][1]),
               ball("table", pos=[0.0, 0.0, -0.5])]
    E = 3
    wm = WorldModel(Scene(robot, objects), n_envs=E, dtype=F64)
    rng = np.random.default_rng(11)
    q, qd = rng.uniform(-2.0, 2.0, (E, robot.n_actuated)), rng.uniform(-1.5, 1.5, (E, robot.n_actuated))
    r0, p0 = np.stack([_rotvec(x) for x in rng.normal(size=(E, 3))]), rng.normal(size=(E, 3))
    v, w = rng.normal(size=(E, 3)), rng.normal(size=(E, 3))
    t0, t1 = 0.5, 0.52

    def root(t):
        return np.stack([_rotvec(w[e] * (t - t1)) @ r0[e] for e in range(E)]), p0 + v * (t - t1)

    for t in (t0, t1):
        rr, rp = root(t)
        s = wm.update(t, joint_pos=torch.as_tensor(q + qd * (t - t1)), joint_vel=torch.as_tensor(qd),
                      root_pose=(torch.as_tensor(rr), torch.as_tensor(rp)))

    def world_at(e):
        def pose_at(dt):
            rr, rp = root(t1 + dt)
            rot, pos = reference_fk(robot, reference_movable(robot, q[e] + qd[e] * dt), rr[e], rp[e])
            extra = [(rot[robot.link_index(link)] @ offsets[k][0], rot[robot.link_index(link)] @ offsets[k][1]
                      + pos[robot.link_index(link)]) for k, link in (("cup", "hand"), ("cap", "wheel"))]
            extra.append((np.eye(3), np.array([0.0, 0.0, -0.5])))
            return (np.concatenate([rot, np.stack([x[0] for x in extra])]),
                    np.concatenate([pos, np.stack([x[1] for x in extra])]))
        return pose_at

    for e in range(E):
        ref_rot, ref_pos = world_at(e)(0.0)
        np.testing.assert_allclose(s.rot[e].numpy(), ref_rot, atol=1e-12, rtol=0)
        np.testing.assert_allclose(s.pos[e].numpy(), ref_pos, atol=1e-12, rtol=0)
        ref_lin, ref_ang = central_twists(world_at(e))
        ref_lin[-1], ref_ang[-1] = 0.0, 0.0  # the fixed table
        np.testing.assert_allclose(s.lin_vel[e].numpy(), ref_lin, atol=1e-7, rtol=0)
        np.testing.assert_allclose(s.ang_vel[e].numpy(), ref_ang, atol=1e-7, rtol=0)
    np.testing.assert_allclose(s.joint_pos.numpy(), reference_movable(robot, q), atol=1e-15, rtol=0)
    np.testing.assert_allclose(s.joint_vel.numpy(), reference_movable(robot, qd) - reference_movable(robot, 0 * qd),
                               atol=1e-15, rtol=0)
    assert s.joint_vel_measured and s.joint_stamp == t1


def test_joint_velocity_estimate_per_env_with_continuous_wrap():
    """Different samples per env: estimated q̇ is the wrapped difference for the continuous joint and the plain one
    otherwise (mimic joints follow); link twists are those of that q̇ (central differences of the reference FK)."""
    robot = tree_robot()
    E = 3
    wm = WorldModel(Scene(robot), n_envs=E, dtype=F64)
    spin = robot.actuated_joint_names.index("spin")
    rng = np.random.default_rng(12)
    qa = rng.uniform(-1.0, 1.0, (E, robot.n_actuated))
    qb = qa + rng.uniform(-0.2, 0.2, qa.shape)
    qa[:, spin], qb[:, spin] = [3.1, -3.0, 0.1], [-3.1, 3.0, 0.3]  # across +π, across −π, no wrap
    dt = 0.05
    wm.update(1.0, joint_pos=qa)  # NumPy inputs take the host staging path
    s = wm.update(1.0 + dt, joint_pos=qb)
    expected = (qb - qa) / dt
    expected[:, spin] = np.array([2 * math.pi - 6.2, 6.0 - 2 * math.pi, 0.2]) / dt
    expected_mov = reference_movable(robot, expected) - reference_movable(robot, 0 * expected)
    np.testing.assert_allclose(s.joint_vel.numpy(), expected_mov, atol=1e-9, rtol=0)
    assert not s.joint_vel_measured
    for e in range(E):
        def pose_at(h, e=e):
            return reference_fk(robot, reference_movable(robot, qb[e] + expected[e] * h), np.eye(3), np.zeros(3))
        ref_lin, ref_ang = central_twists(pose_at)
        np.testing.assert_allclose(s.lin_vel[e].numpy(), ref_lin, atol=1e-7, rtol=0)
        np.testing.assert_allclose(s.ang_vel[e].numpy(), ref_ang, atol=1e-7, rtol=0)
    held = wm.update(1.2)  # no sample: joints and their velocities are held
    assert torch.equal(held.joint_vel, s.joint_vel) and torch.equal(held.pos, s.pos)


def test_earlier_states_stay_valid():
    """Every update returns fresh tensors: a state kept by the caller does not change with later updates."""
    wm = panda_world([ball("tool", frame="panda_hand", pos=[0.0, 0.0, 0.1])], n_envs=2)
    s0 = wm.update(0.0, joint_pos=torch.full((2, 8), 0.1, dtype=F64), joint_vel=torch.ones(2, 8, dtype=F64))
    kept = {k: getattr(s0, k).clone() for k in ("rot", "pos", "lin_vel", "ang_vel", "joint_pos", "joint_vel")}
    s1 = wm.update(0.1, joint_pos=torch.full((2, 8), 0.4, dtype=F64), joint_vel=-torch.ones(2, 8, dtype=F64))
    for k, x in kept.items():
        assert torch.equal(getattr(s0, k), x)
        assert not torch.equal(getattr(s1, k), x)


def test_states_kept_across_output_chunks_stay_valid():
    """The state tensors of many steps are allocated together; states kept over more steps than one allocation
    holds keep their values and own memory, and each equals the state of a fresh model at the same input."""
    from tactile_sim.world.motion import OUTPUT_CHUNK_STEPS

    robot = tree_robot()
    wm = WorldModel(Scene(robot), n_envs=2, dtype=F64)
    qs = [np.full(robot.n_actuated, 0.01 * i) for i in range(2 * OUTPUT_CHUNK_STEPS + 3)]
    states = [wm.update(0.1 * i, joint_pos=q, joint_vel=q) for i, q in enumerate(qs)]
    names = ("rot", "pos", "lin_vel", "ang_vel", "joint_pos", "joint_vel")
    pointers = {getattr(s, k).data_ptr() for s in states for k in names}
    assert len(pointers) == len(states) * len(names)
    for i in (0, OUTPUT_CHUNK_STEPS - 1, OUTPUT_CHUNK_STEPS, len(qs) - 1):
        ref = WorldModel(Scene(robot), n_envs=2, dtype=F64).update(0.0, joint_pos=qs[i], joint_vel=qs[i])
        for k in names:
            assert torch.equal(getattr(states[i], k), getattr(ref, k)), (i, k)


def test_numpy_and_tensor_joint_inputs_agree():
    """A host array (staged with NumPy, f32 model) and the same values as a tensor give identical states."""
    robot = tree_robot()
    rng = np.random.default_rng(13)
    qs = [rng.uniform(-1.0, 1.0, robot.n_actuated) for _ in range(3)]
    a, b = WorldModel(Scene(robot), n_envs=2), WorldModel(Scene(robot), n_envs=2)
    for i, q in enumerate(qs):
        sa = a.update(0.1 * i, joint_pos=q, joint_vel=None if i < 2 else 2 * q)
        sb = b.update(0.1 * i, joint_pos=torch.as_tensor(q, dtype=torch.float32),
                      joint_vel=None if i < 2 else torch.as_tensor(2 * q, dtype=torch.float32))
        for k in ("rot", "pos", "lin_vel", "ang_vel", "joint_pos", "joint_vel"):
            assert torch.equal(getattr(sa, k), getattr(sb, k)), k
    with pytest.raises(ValueError, match=r"joint_vel must have shape \[5\] or \[2, 5\]; got \[3\]"):
        a.update(1.0, joint_pos=qs[0], joint_vel=np.zeros(3))
    with pytest.raises(ValueError, match=r"joint_pos .* contains non-finite values"):
        a.update(1.0, joint_pos=[math.nan] * 5)


@pytest.mark.parametrize("n_envs", [1, 8], ids=["few values (scanned)", "many values (dot product)"])
def test_host_joint_inputs_non_finite_rejected_large_finite_accepted(n_envs):
    """Host joint inputs are checked finite after staging in the model dtype: NaN, ±inf and a float64 value that
    overflows float32 are rejected; large finite values (float64 model) are accepted and used as given."""
    from tactile_sim.world.motion import HOST_SCAN_MAX

    robot = tree_robot()
    n = robot.n_actuated
    assert (n_envs * n <= HOST_SCAN_MAX) == (n_envs == 1)
    f32, f64 = WorldModel(Scene(robot), n_envs=n_envs), WorldModel(Scene(robot), n_envs=n_envs, dtype=F64)
    for bad in (math.nan, math.inf, -math.inf):
        q = np.zeros((n_envs, n))
        q[-1, -1] = bad
        for wm in (f32, f64):
            with pytest.raises(ValueError, match="joint_pos .* contains non-finite values"):
                wm.update(0.0, joint_pos=q)
            with pytest.raises(ValueError, match="joint_vel contains non-finite values"):
                wm.update(0.0, joint_pos=np.zeros(n), joint_vel=q)
    big = np.full((n_envs, n), 1e300)
    with pytest.raises(ValueError, match="joint_vel contains non-finite values"), np.errstate(over="ignore"):
        f32.update(0.0, joint_pos=np.zeros(n), joint_vel=big)  # NumPy warns of the overflow of the float32 cast
    s = f64.update(0.0, joint_pos=np.zeros(n), joint_vel=big)
    assert s.joint_vel_measured
    expected = reference_movable(robot, big) - reference_movable(robot, 0 * big)  # mimic multipliers, no offsets
    np.testing.assert_allclose(s.joint_vel.numpy(), expected, rtol=1e-12, atol=0)


def test_failed_update_stores_no_joint_sample():
    """An update that raises (here: a bad root pose) keeps the previous joint sample: the next estimate differences
    against the last stored sample and its stamp."""
    robot = tree_robot()
    wm = WorldModel(Scene(robot), dtype=F64)
    q = np.linspace(-0.5, 0.5, robot.n_actuated)
    wm.update(0.0, joint_pos=q)
    with pytest.raises(ValueError, match="root_pose rot must have shape"):
        wm.update(0.1, joint_pos=q + 1.0, root_pose=(np.eye(2), np.zeros(3)))
    s = wm.update(0.2, joint_pos=q + 0.1)
    np.testing.assert_allclose(s.joint_vel[0, robot.movable_joint_names.index("slide")].item(), 0.5, atol=1e-12)


def test_caller_takes_over_attached_object():
    """An object attached to a link follows the caller's poses once given (backward-difference twist)."""
    wm = panda_world([ball("tool", frame="panda_hand", pos=[0.0, 0.0, 0.1])])
    k = wm.scene.body_index("tool")
    wm.update(0.0, joint_pos=torch.zeros(1, 8, dtype=F64))
    s = wm.update(0.1, joint_pos=torch.zeros(1, 8, dtype=F64),
                  object_poses={"tool": (torch.eye(3, dtype=F64), torch.tensor([1.0, 2.0, 3.0], dtype=F64))})
    assert s.pos[0, k].tolist() == [1.0, 2.0, 3.0]
    s = wm.update(0.2, joint_pos=torch.full((1, 8), 0.3, dtype=F64),
                  object_poses={"tool": (torch.eye(3, dtype=F64), torch.tensor([1.5, 2.0, 3.0], dtype=F64))})
    assert s.pos[0, k].tolist() == [1.5, 2.0, 3.0]
    torch.testing.assert_close(s.lin_vel[0, k], torch.tensor([5.0, 0.0, 0.0], dtype=F64), atol=1e-12, rtol=0)


def test_root_from_static_tf_follows_republished_transform():
    """A static root transform published again with a new value moves the root (no stale cached lookup)."""
    tf = TFBuffer()
    tf.set_transform("world", "panda_link0", [1.0, 0.0, 0.0], 0.0, quat=[0, 0, 0, 1], static=True)
    wm = panda_world(tf=tf, root_from_tf=True)
    s = wm.update(0.0, joint_pos=torch.zeros(1, 8, dtype=F64))
    assert s.pos[0, 0].tolist() == [1.0, 0.0, 0.0]
    assert wm.update(0.1).pos[0, 0].tolist() == [1.0, 0.0, 0.0]
    tf.set_transform("world", "panda_link0", [0.0, 2.0, 0.0], 0.0, quat=[0, 0, 0, 1], static=True)
    s = wm.update(0.2)
    assert s.pos[0, 0].tolist() == [0.0, 2.0, 0.0] and torch.equal(s.lin_vel, torch.zeros_like(s.lin_vel))
