"""TF buffer: composition, interpolation, latest common time, staleness, pruning and every error case."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from tactile_sim.world import tf_buffer
from tactile_sim.world.tf_buffer import ExtrapolationError, TFBuffer, TFError


def rz(a):
    return Rotation.from_euler("z", a).as_matrix()


def quat_z(a):
    return [0.0, 0.0, math.sin(a / 2), math.cos(a / 2)]


def test_chain_composition_and_inverse():
    rng = np.random.default_rng(0)
    tf = TFBuffer()
    poses = {}
    for parent, child in [("world", "base"), ("base", "arm"), ("world", "cam"), ("cam", "marker")]:
        r, t = Rotation.random(random_state=rng).as_matrix(), rng.normal(size=3)
        tf.set_transform(parent, child, t, 1.0, rot=r, static=(child == "cam"))
        poses[child] = (r, t)

    def world_pose(*chain):
        r, t = np.eye(3), np.zeros(3)
        for c in chain:
            rc, tc = poses[c]
            r, t = r @ rc, r @ tc + t
        return r, t

    r_a, t_a = world_pose("base", "arm")
    r_m, t_m = world_pose("cam", "marker")
    s = tf.lookup("marker", "arm")
    np.testing.assert_allclose(s.rot, r_m.T @ r_a, atol=1e-12)
    np.testing.assert_allclose(s.trans, r_m.T @ (t_a - t_m), atol=1e-12)
    assert s.stamp == 1.0 and not s.static
    back = tf.lookup("arm", "marker")
    np.testing.assert_allclose(back.rot, s.rot.T, atol=1e-12)
    np.testing.assert_allclose(back.trans, -s.rot.T @ s.trans, atol=1e-12)
    ident = tf.lookup("arm", "arm")
    np.testing.assert_allclose(ident.rot, np.eye(3))
    assert tf.lookup("world", "cam").static and tf.lookup("world", "cam").stamp == 0.0


def test_interpolation_linear_and_slerp():
    tf = TFBuffer()
    tf.set_transform("world", "obj", [0.0, 0.0, 0.0], 1.0, quat=quat_z(0.0))
    tf.set_transform("world", "obj", [2.0, -4.0, 1.0], 2.0, quat=quat_z(math.pi / 2))
    s = tf.lookup("world", "obj", 1.25)
    np.testing.assert_allclose(s.trans, [0.5, -1.0, 0.25], atol=1e-12)
    np.testing.assert_allclose(s.rot, rz(math.pi / 8), atol=1e-12)  # slerp: a quarter of the 90° turn
    assert s.stamp == 1.25
    exact = tf.lookup("world", "obj", 2.0)
    np.testing.assert_allclose(exact.rot, rz(math.pi / 2), atol=1e-12)


def test_slerp_takes_the_short_way():
    tf = TFBuffer()
    tf.set_transform("w", "o", [0, 0, 0], 0.0, quat=quat_z(math.radians(170)))
    q = np.array(quat_z(math.radians(-170)))
    tf.set_transform("w", "o", [0, 0, 0], 1.0, quat=(-q).tolist())  # same rotation, opposite sign
    np.testing.assert_allclose(tf.lookup("w", "o", 0.5).rot, rz(math.pi), atol=1e-12)


def test_latest_common_time_interpolates_the_faster_edge():
    tf = TFBuffer()
    for t in (0.0, 1.0, 2.0):
        tf.set_transform("world", "base", [t, 0, 0], t, quat=quat_z(0))
    tf.set_transform("base", "tool", [0, 0, 0], 0.5, quat=quat_z(0))
    tf.set_transform("base", "tool", [0, 0, 1], 1.5, quat=quat_z(0))
    assert tf.latest_common_time("world", "tool") == 1.5
    s = tf.lookup("world", "tool")
    assert s.stamp == 1.5
    np.testing.assert_allclose(s.trans, [1.5, 0, 1.0], atol=1e-12)


def test_extrapolation_errors():
    tf = TFBuffer()
    tf.set_transform("world", "obj", [0, 0, 0], 1.0, quat=quat_z(0))
    tf.set_transform("world", "obj", [1, 0, 0], 2.0, quat=quat_z(0))
    with pytest.raises(ExtrapolationError, match=r"'world' -> 'obj' requested at t = 2.5.*\[1.0+, 2.0+\] s \(future"):
        tf.lookup("world", "obj", 2.5)
    with pytest.raises(ExtrapolationError, match=r"past extrapolation"):
        tf.lookup("world", "obj", 0.5)
    assert not tf.can_transform("world", "obj", 3.0) and tf.can_transform("world", "obj", 1.5)


def test_unknown_and_disconnected_frames():
    tf = TFBuffer()
    with pytest.raises(TFError, match="unknown frame 'a'; the buffer holds no frames yet"):
        tf.lookup("a", "b")
    tf.set_transform("world", "base_link", [0, 0, 0], 0.0, quat=quat_z(0))
    tf.set_transform("odom", "camera", [0, 0, 0], 0.0, quat=quat_z(0))
    with pytest.raises(TFError, match=r"unknown frame 'base_lnk'; closest known frames: \['base_link'"):
        tf.lookup("world", "base_lnk")
    with pytest.raises(TFError, match=r"'world' and 'camera' are not connected \(tree roots 'world' and 'odom'\)"):
        tf.lookup("world", "camera")
    assert tf.frames == ["base_link", "camera", "odom", "world"]
    assert tf.parent("camera") == "odom" and tf.parent("odom") is None


def test_structure_errors():
    tf = TFBuffer()
    tf.set_transform("a", "b", [0, 0, 0], 0.0, quat=quat_z(0))
    tf.set_transform("b", "c", [0, 0, 0], 0.0, quat=quat_z(0))
    with pytest.raises(TFError, match="frame 'c' already has parent 'b'"):
        tf.set_transform("a", "c", [0, 0, 0], 0.0, quat=quat_z(0))
    with pytest.raises(TFError, match="'a' is an ancestor of 'c'; this would close a loop"):
        tf.set_transform("c", "a", [0, 0, 0], 0.0, quat=quat_z(0))
    with pytest.raises(TFError, match="cannot be its own parent"):
        tf.set_transform("a", "a", [0, 0, 0], 0.0, quat=quat_z(0))
    with pytest.raises(TFError, match="already dynamic; it cannot also be published as static"):
        tf.set_transform("a", "b", [0, 0, 0], 1.0, quat=quat_z(0), static=True)


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(quat=[0, 0, 0, 1.01]), r"norm 1 ± 0.001"),
    (dict(quat=[0, 0, 0, float("nan")]), r"quaternion"),
    (dict(rot=np.diag([1.0, 1.0, -1.0])), r"not a rotation: need .* det > 0; got .* det = -1"),
    (dict(rot=np.eye(3) * 1.01), r"not a rotation: need \|RᵀR − I\| ≤ 0.001"),
    (dict(rot=np.full((3, 3), np.nan)), r"rotation must be a finite 3×3 matrix"),
    (dict(), r"exactly one of rot"),
    (dict(quat=[0, 0, 0, 1], rot=np.eye(3)), r"exactly one of rot"),
])
def test_bad_rotations(kwargs, pattern):
    with pytest.raises(TFError, match=pattern):
        TFBuffer().set_transform("a", "b", [0, 0, 0], 0.0, **kwargs)


def test_bad_values():
    tf = TFBuffer()
    with pytest.raises(TFError, match="translation must be 3 finite numbers"):
        tf.set_transform("a", "b", [0, float("inf"), 0], 0.0, quat=quat_z(0))
    with pytest.raises(TFError, match="within float32's range"):  # inf in a float32 world model
        tf.set_transform("a", "b", [0, 1e39, 0], 0.0, quat=quat_z(0))
    with pytest.raises(TFError, match="stamp must be finite"):
        tf.set_transform("a", "b", [0, 0, 0], float("nan"), quat=quat_z(0))
    with pytest.raises(ValueError, match="cache_time must be finite and > 0"):
        TFBuffer(cache_time=0.0)


def test_near_unit_quaternion_is_normalised():
    tf = TFBuffer()
    q = np.array(quat_z(0.7)) * 1.0008
    tf.set_transform("a", "b", [0, 0, 0], 0.0, quat=q)
    np.testing.assert_allclose(tf.lookup("a", "b").rot, rz(0.7), atol=1e-12)


def test_near_rotation_matrix_is_projected():
    tf = TFBuffer()
    r = rz(0.4) + 4e-4 * np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    tf.set_transform("a", "b", [0, 0, 0], 0.0, rot=r)
    out = tf.lookup("a", "b").rot
    np.testing.assert_allclose(out.T @ out, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(out, rz(0.4), atol=1e-3)


def test_buffer_duration_and_late_samples():
    tf = TFBuffer(cache_time=1.0)
    for k in range(31):
        assert tf.set_transform("w", "o", [k * 0.1, 0, 0], k * 0.1, quat=quat_z(0))
    # samples older than newest − 1 s are gone
    with pytest.raises(ExtrapolationError):
        tf.lookup("w", "o", 1.85)
    np.testing.assert_allclose(tf.lookup("w", "o", 2.05).trans, [2.05, 0, 0], atol=1e-12)
    assert tf.set_transform("w", "o", [9, 9, 9], 0.5, quat=quat_z(0)) is False  # too old: dropped
    assert tf.set_transform("w", "o", [2.45, 0, 0], 2.45, quat=quat_z(0))  # out of order, inside the span
    np.testing.assert_allclose(tf.lookup("w", "o", 2.45).trans, [2.45, 0, 0], atol=1e-12)
    tf.set_transform("w", "o", [7, 0, 0], 3.0, quat=quat_z(0))  # same stamp: replaced
    np.testing.assert_allclose(tf.lookup("w", "o").trans, [7, 0, 0])


def test_staleness():
    tf = TFBuffer()
    tf.set_transform("world", "table", [0, 0, 0], 0.0, quat=quat_z(0), static=True)
    tf.set_transform("world", "base", [0, 0, 0], 1.0, quat=quat_z(0))
    tf.set_transform("base", "cam", [0, 0, 0], 3.0, quat=quat_z(0))
    assert not tf.is_stale("table", now=100.0, max_age=0.1)  # static never goes stale
    assert not tf.is_stale("world", now=100.0, max_age=0.1)  # a root has no edge
    assert not tf.is_stale("cam", now=1.4, max_age=0.5)
    assert tf.is_stale("cam", now=1.6, max_age=0.5)  # the base edge is older than 0.5 s
    assert not tf.is_stale("cam", now=3.4, max_age=2.5)
    with pytest.raises(TFError, match="unknown frame"):
        tf.is_stale("nope", 0.0, 1.0)
    tf.clear()
    assert tf.frames == []


def test_latest_lookups_are_kept_until_their_chain_changes():
    tf = TFBuffer()
    tf.set_transform("world", "base", [1.0, 0.0, 0.0], 0.0, quat=quat_z(0.3), static=True)
    tf.set_transform("base", "arm", [0.0, 1.0, 0.0], 1.0, quat=quat_z(0.1))
    tf.set_transform("world", "other", [0.0, 0.0, 1.0], 1.0, quat=quat_z(0.2))
    base = tf.lookup("world", "base")
    arm = tf.lookup("world", "arm")
    tf.set_transform("world", "other", [0.0, 0.0, 2.0], 2.0, quat=quat_z(0.4))  # on neither chain
    assert tf.lookup("world", "base") is base and tf.lookup("world", "arm") is arm
    tf.set_transform("base", "arm", [0.0, 2.0, 0.0], 2.0, quat=quat_z(0.5))  # a new sample on the arm's chain
    assert tf.lookup("world", "base") is base
    moved = tf.lookup("world", "arm")
    assert moved.stamp == 2.0
    np.testing.assert_allclose(moved.rot, rz(0.8), atol=1e-12)
    np.testing.assert_allclose(moved.trans, rz(0.3) @ [0.0, 2.0, 0.0] + [1.0, 0.0, 0.0], atol=1e-12)
    tf.set_transform("world", "base", [3.0, 0.0, 0.0], 0.0, quat=quat_z(0.3), static=True)  # a new static value
    np.testing.assert_allclose(tf.lookup("world", "base").trans, [3.0, 0.0, 0.0])
    np.testing.assert_allclose(tf.lookup("world", "arm").trans, rz(0.3) @ [0.0, 2.0, 0.0] + [3.0, 0.0, 0.0],
                               atol=1e-12)
    with pytest.raises(TFError, match="unknown frame 'map'"):
        tf.lookup("map", "base")
    tf.set_transform("map", "world", [0.0, 0.0, 5.0], 0.0, quat=quat_z(0.0), static=True)  # the tree grows
    np.testing.assert_allclose(tf.lookup("map", "base").trans, [3.0, 0.0, 5.0])
    tf.clear()
    with pytest.raises(TFError, match="unknown frame"):
        tf.lookup("world", "base")


def reference_quaternion(q):
    """What set_transform stored before set_transforms existed: q / ‖q‖, the norm from NumPy's 1-D dot."""
    q = np.array(q, dtype=np.float64)
    return q / math.sqrt(float(q.dot(q)))


def test_set_transforms_stores_the_bits_of_set_transform_for_many_quaternions():
    rng = np.random.default_rng(3)
    n = 30_000
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    q[n // 3:2 * n // 3] *= 1 + rng.uniform(-1e-3, 1e-3, size=(n // 3, 1))  # near-unit, inside the tolerance
    tiny, m = slice(2 * n // 3, n), n - 2 * n // 3
    q[tiny, :2] = rng.uniform(-1e-300, 1e-300, size=(m, 2)) * rng.choice([1.0, 1e-10], size=(m, 2))
    q[tiny] /= np.linalg.norm(q[tiny], axis=1)[:, None]  # denormal-ish components of a unit quaternion
    values = np.concatenate([rng.normal(size=(n, 3)), q], axis=1)
    children = [f"f{k}" for k in range(n)]
    tf = TFBuffer(max_frames=n + 1)
    assert tf.set_transforms(["world"] * n, children, [1.0] * n, values) == [True] * n
    for k in range(n):
        edge = tf._edges[children[k]]
        assert edge.quat(-1).tobytes() == reference_quaternion(values[k, 3:]).tobytes()
        assert edge.trans[-1].tobytes() == values[k, :3].tobytes() and edge.stamps == [1.0]


def test_set_transforms_reports_each_transform_as_set_transform_does():
    good = [0.0, 0.0, 0.0, 0.0, 0.0, math.sin(0.2), math.cos(0.2)]
    rows = [("world", "a", good, 2.0), ("world", "b", [0.0, math.nan, 0.0] + good[3:], 2.0),
            ("world", "c", good[:3] + [0.0, 0.0, 0.0, 1.1], 2.0), ("a", "world", good, 2.0), ("x", "a", good, 2.0),
            ("world", "d", good, 0.5), ("world", "e", good, math.inf), ("d", "d", good, 2.0), ("world", "f", good, 2.0)]
    for batch_values in (False, True):  # one bad value sends every row through set_transform; all good ones do not
        ones = TFBuffer(cache_time=1.0, max_frames=2)
        many = TFBuffer(cache_time=1.0, max_frames=2)
        for tf in (ones, many):
            tf.set_transform("world", "d", [0.0, 0.0, 0.0], 3.0, quat=[0.0, 0.0, 0.0, 1.0])
        picked = rows if batch_values else [r for r in rows if r[1] not in "bce"]
        expected = []
        for parent, child, value, stamp in picked:
            try:
                expected.append(ones.set_transform(parent, child, value[:3], stamp, quat=value[3:]))
            except TFError as exc:
                expected.append(exc)
        got = many.set_transforms([r[0] for r in picked], [r[1] for r in picked], [r[3] for r in picked],
                                  np.array([r[2] for r in picked]))
        assert [(type(g), str(g)) for g in got] == [(type(e), str(e)) for e in expected]
        assert got[0] is True and got[-1] is not True  # the buffer is full by then: TFFull
        assert many.revision == ones.revision and many.frames == ones.frames
        for frame in ("a", "d"):
            assert unit_quaternions(many, frame) == unit_quaternions(ones, frame)


@pytest.mark.parametrize("given_norms", [False, True])
def test_set_transforms_takes_quaternion_norms_up_to_the_tolerance_on_both_sides(given_norms):
    """A message whose longest or shortest quaternion lies just outside 1 ± tol goes through set_transform (which
    refuses that one), one whose norms are all inside is stored whole: as set_transform decides each."""
    from tactile_sim.constants import QUAT_NORM_TOL

    inside, outside = np.nextafter(QUAT_NORM_TOL, 0.0), np.nextafter(QUAT_NORM_TOL, 1.0)
    cases = [[1.0, 1 + inside, 1 - inside], [1 + outside, 1.0, 1.0], [1.0, 1.0, 1 - outside],
             [1 - outside, 1 + outside]]
    for norms in cases:
        n = len(norms)
        values = np.zeros((n, 7))
        values[:, 6] = norms
        parents, children = ["world"] * n, [f"f{k}" for k in range(n)]
        ones, many = TFBuffer(), TFBuffer()
        expected = []
        for child, v in zip(children, values):
            try:
                expected.append(ones.set_transform("world", child, v[:3], 1.0, quat=v[3:]))
            except TFError as exc:
                expected.append(exc)
        given = tf_buffer.quaternion_norms(values[:, 3:]) if given_norms else None
        got = many.set_transforms(parents, children, [1.0] * n, values, norms=given)
        assert [(type(g), str(g)) for g in got] == [(type(e), str(e)) for e in expected], norms
        assert (True in got) == any(abs(x - 1.0) <= QUAT_NORM_TOL for x in norms)
        assert many.frames == ones.frames


def unit_quaternions(tf, frame):
    edge = tf._edges[frame]
    return [edge.quat(i).tobytes() for i in range(len(edge.stamps))]


def assert_same_edges_and_lookups(many, ones):
    """many's edges a and b hold ones' samples bit for bit, and lookups world → b (latest, and at the oldest, a middle
    and the newest time both edges cover) give ones' results."""
    for frame in ("a", "b"):
        assert many._edges[frame].stamps == ones._edges[frame].stamps
        assert unit_quaternions(many, frame) == unit_quaternions(ones, frame)
        assert [t.tobytes() for t in many._edges[frame].trans] == [t.tobytes() for t in ones._edges[frame].trans]
    edges = [ones._edges[frame].stamps for frame in ("a", "b")]
    lo, hi = max(e[0] for e in edges), min(e[-1] for e in edges)
    for time in [None] + ([lo, 0.5 * (lo + hi), hi] if lo <= hi else []):
        x, y = ones.lookup("world", "b", time), many.lookup("world", "b", time)
        assert x.rot.tobytes() == y.rot.tobytes() and x.trans.tobytes() == y.trans.tobytes() and x.stamp == y.stamp


def test_lookups_after_set_transforms_are_those_after_set_transform_bit_for_bit():
    rng = np.random.default_rng(5)
    q = rng.normal(size=(40, 4))
    q *= (1 + rng.uniform(-1e-3, 1e-3, size=(40, 1))) / np.linalg.norm(q, axis=1)[:, None]
    values = np.concatenate([rng.normal(size=(40, 3)), q], axis=1)
    ones, many = TFBuffer(cache_time=0.25), TFBuffer(cache_time=0.25)
    for k in range(0, 40, 2):  # messages of two transforms: world -> a, a -> b, 10 ms apart, older ones cut
        stamp = 0.01 * k
        for j, (parent, child) in enumerate([("world", "a"), ("a", "b")]):
            ones.set_transform(parent, child, values[k + j, :3], stamp, quat=values[k + j, 3:])
        assert many.set_transforms(["world", "a"], ["a", "b"], [stamp] * 2, values[k:k + 2]) == [True, True]
        for time in (None, stamp, stamp - 0.005, stamp - 0.2):
            if time is not None and time < 0:
                continue
            a, b = ones.lookup("world", "b", time), many.lookup("world", "b", time)
            assert a.rot.tobytes() == b.rot.tobytes() and a.trans.tobytes() == b.trans.tobytes()
    assert unit_quaternions(many, "b") == unit_quaternions(ones, "b") and len(many._edges["b"].stamps) == 13


def test_messages_of_the_same_frame_objects_store_what_set_transform_stores(monkeypatch):
    """The edges kept from a message stored whole take the next message of the same parents/children objects: newer,
    older (reordered), equal-stamp and too-old samples, a child twice in one message, a frame added by another
    message and a cleared buffer in between give the outcomes, samples and lookups of set_transform one by one."""
    rng = np.random.default_rng(11)
    parents, children = ("world", "a", "a"), ("a", "b", "b")  # b twice: its second sample replaces or follows
    appended = []
    append_rows = TFBuffer._append_rows
    monkeypatch.setattr(TFBuffer, "_append_rows", lambda self, *a: appended.append(1) or append_rows(self, *a))
    ones, many = TFBuffer(cache_time=0.1), TFBuffer(cache_time=0.1)
    stamps = [0.01 * k for k in range(30)]
    stamps[7], stamps[12], stamps[20] = stamps[5] - 0.001, stamps[11], stamps[19] - 0.5  # reordered, equal, too old
    for k, stamp in enumerate(stamps):
        if k == 15:
            for tf in (ones, many):
                tf.set_transform("b", "c", [0.0, 0.0, 1.0], stamp, quat=[0.0, 0.0, 0.0, 1.0])  # the tree grows
        if k == 24:
            for tf in (ones, many):
                tf.clear()
        q = rng.normal(size=(3, 4))
        q *= (1 + rng.uniform(-1e-3, 1e-3, size=(3, 1))) / np.linalg.norm(q, axis=1)[:, None]
        values = np.concatenate([rng.normal(size=(3, 3)), q], axis=1)
        row_stamps = [stamp, stamp, stamp + 0.002 * (k % 2)]
        expected = [ones.set_transform(p, c, v[:3], s, quat=v[3:])
                    for p, c, v, s in zip(parents, children, values, row_stamps)]
        assert many.set_transforms(parents, children, row_stamps, values) == expected
        assert many.revision == ones.revision
        assert_same_edges_and_lookups(many, ones)
    assert len(appended) == 30 - 3  # all but the first message and those right after the growth and the clear


@pytest.mark.parametrize("given_norms", [False, True])
def test_samples_held_back_for_the_kept_edges_give_what_set_transform_gives(monkeypatch, given_norms):
    """Messages of the same distinct parents/children objects are held back on their edges (at most PENDING_MAX,
    here 4) and added when the buffer is read: with lookups between some messages only, a reordered, an equal-stamp
    and a too-old message, a lookup of a chain of other edges, a frame added and a cleared buffer, the outcomes,
    revisions, samples and lookups are those of set_transform one by one (norms given by a decoder or not)."""
    monkeypatch.setattr(tf_buffer, "PENDING_MAX", 4)
    rng = np.random.default_rng(12)
    parents, children = ("world", "a"), ("a", "b")
    ones, many = TFBuffer(cache_time=0.05), TFBuffer(cache_time=0.05)
    for tf in (ones, many):
        tf.set_transform("world", "s", [1.0, 0.0, 0.0], 0.0, quat=[0.0, 0.0, 0.0, 1.0], static=True)
    stamps = [0.01 * k for k in range(40)]
    stamps[9], stamps[17], stamps[25] = stamps[8] - 0.004, stamps[16], stamps[24] - 0.5  # reordered, equal, too old
    held = 0
    for k, stamp in enumerate(stamps):
        if k == 20:
            for tf in (ones, many):
                tf.set_transform("b", "c", [0.0, 0.0, 1.0], stamp, quat=[0.0, 0.0, 0.0, 1.0])  # the tree grows
        if k == 30:
            for tf in (ones, many):
                tf.clear()
                tf.set_transform("world", "s", [1.0, 0.0, 0.0], 0.0, quat=[0.0, 0.0, 0.0, 1.0], static=True)
        q = rng.normal(size=(2, 4))
        q *= (1 + rng.uniform(-1e-3, 1e-3, size=(2, 1))) / np.linalg.norm(q, axis=1)[:, None]
        values = np.concatenate([rng.normal(size=(2, 3)), q], axis=1)
        row_stamps = [stamp, stamp + 0.002 * (k % 2)]
        expected = [ones.set_transform(p, c, v[:3], s, quat=v[3:]) for p, c, v, s in zip(parents, children, values,
                                                                                         row_stamps)]
        norms = tf_buffer.quaternion_norms(values[:, 3:]) if given_norms else None
        assert many.set_transforms(parents, children, row_stamps, values, norms=norms) == expected
        assert many.revision == ones.revision
        held = max(held, len(many._pending))
        assert len(many._pending) < tf_buffer.PENDING_MAX
        assert many.lookup("world", "s").trans.tolist() == [1.0, 0.0, 0.0]  # another chain: nothing added
        if k % 3:
            continue
        assert [many._edges[f].version for f in ("a", "b")] == [ones._edges[f].version for f in ("a", "b")]
        assert_same_edges_and_lookups(many, ones)
        assert many.latest_common_time("world", "b") == ones.latest_common_time("world", "b")
    assert held == tf_buffer.PENDING_MAX - 1  # messages were held back


def test_a_latest_lookup_sees_the_samples_held_back_on_its_chain():
    """A lookup at the latest time, kept while its chain is unchanged, is made again once a message held back on
    that chain's edges brings a newer sample."""
    parents, children = ("world",), ("a",)
    tf = TFBuffer()
    for k in range(3):
        tf.set_transforms(parents, children, [float(k)], np.array([[float(k), 0, 0, 0, 0, 0, 1]]))
        assert tf.lookup("world", "a").trans.tolist() == [float(k), 0.0, 0.0]
    assert tf.is_stale("a", 10.0, 5.0) and not tf.is_stale("a", 4.0, 5.0)
