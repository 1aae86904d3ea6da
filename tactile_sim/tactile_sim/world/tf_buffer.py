"""A framework-free transform buffer (the part of ROS tf2 the simulator needs), float64 NumPy on the host.

Frames form a forest: every frame has at most one parent. An edge parent → child stores the pose of the child
frame in the parent frame (``x_parent = R x_child + t``), either **static** (one value, valid at every time) or
**dynamic** (time-stamped samples kept for ``cache_time`` seconds behind the newest one, at most ``max_samples``).
Between two samples the translation is interpolated linearly and the rotation by slerp; outside the stored span a
lookup is an extrapolation error. Quaternions are (x, y, z, w); their norm must be 1 ± 1e-3
(docs/models/conventions.md#constants) and they
are normalised.
"""

from __future__ import annotations

import bisect
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from ..constants import QUAT_NORM_TOL
from ..errors import closest_names
from ..geometry.transforms import check_quaternion, check_rotation, matrix_to_quat, quat_to_matrix_np
from ..io.input_cdr import scan_within_float32


PENDING_MAX = 1024
"""The most messages a buffer holds back on the kept edges (:meth:`TFBuffer.set_transforms`) before adding them."""


class TFError(ValueError):
    """A transform cannot be stored or looked up (unknown frame, disconnected trees, loop, bad value)."""


class TFFull(TFError):
    """A transform of a new frame cannot be stored: the buffer holds its ``max_frames`` already."""


class ExtrapolationError(TFError):
    """The requested time lies outside the samples stored for some edge of the chain."""


@dataclass(frozen=True, eq=False)
class StampedTransform:
    """Pose of a source frame in a target frame: ``x_target = rot x_source + trans``.

    rot (3, 3), trans (3,) m, float64; stamp: time of the result in s (for a lookup at the latest time: the latest
    time every dynamic edge of the chain has data; 0.0 when the whole chain is static); static: the chain holds no
    dynamic edge.
    """

    rot: np.ndarray
    trans: np.ndarray
    stamp: float
    static: bool


@dataclass(eq=False)
class _Edge:
    """One parent → child edge: its samples in time order (a static edge holds one) and ``version``, counting
    the changes of its samples. Most stored samples (a robot's link transforms on ``/tf``) are never looked up, so a
    sample's unit quaternion may be held as (quaternion, its norm) until first use (:meth:`quat`), and its rotation
    matrix is made from the quaternion on first use (None until then)."""

    parent: str
    static: bool
    stamps: list[float] = field(default_factory=list)
    quats: list[np.ndarray | tuple[np.ndarray, float]] = field(default_factory=list)  # (x, y, z, w), for slerp
    rots: list[np.ndarray | None] = field(default_factory=list)
    trans: list[np.ndarray] = field(default_factory=list)
    version: int = 0

    def append(self, stamp: float, q: np.ndarray | tuple[np.ndarray, float], r: np.ndarray | None,
               t: np.ndarray) -> None:
        """Add a sample newer than every one held (stamp s, quaternion or (quaternion, norm), rotation or None,
        translation (3,) m)."""
        self.stamps.append(stamp)
        self.quats.append(q)
        self.rots.append(r)
        self.trans.append(t)

    def extend(self, stamps: list[float], quats: list[tuple[np.ndarray, float]], trans: list[np.ndarray]) -> None:
        """:meth:`append` of several samples in time order, each newer than every one held (stamps s, (quaternion,
        norm) of each, translations (3,) m; rotations made on first use)."""
        self.stamps.extend(stamps)
        self.quats.extend(quats)
        self.rots.extend([None] * len(stamps))
        self.trans.extend(trans)

    def quat(self, i: int) -> np.ndarray:
        """Unit quaternion (x, y, z, w) of sample i."""
        q = self.quats[i]
        if type(q) is tuple:  # (quaternion, norm): q / norm, the bits of check_quaternion's division
            q = self.quats[i] = q[0] / q[1]
        return q

    def rot(self, i: int) -> np.ndarray:
        """Rotation matrix (3, 3) of sample i."""
        r = self.rots[i]
        if r is None:
            r = self.rots[i] = quat_to_matrix_np(self.quat(i))
        return r

    def at(self, time: float | None, child: str) -> tuple[np.ndarray, np.ndarray]:
        """(rotation (3, 3), translation (3,)) of this edge at ``time`` (None or static: the newest sample)."""
        if self.static or time is None:
            return self.rot(-1), self.trans[-1]
        lo, hi = self.stamps[0], self.stamps[-1]
        if time < lo or time > hi:
            raise ExtrapolationError(
                f"TF: transform {self.parent!r} -> {child!r} requested at t = {time:.9f} s, outside the stored "
                f"samples [{lo:.9f}, {hi:.9f}] s ({'future' if time > hi else 'past'} extrapolation)")
        i = bisect.bisect_left(self.stamps, time)
        if self.stamps[i] == time:
            return self.rot(i), self.trans[i]
        s0, s1 = self.stamps[i - 1], self.stamps[i]
        a = (time - s0) / (s1 - s0)
        q = _slerp(self.quat(i - 1), self.quat(i), a)
        return quat_to_matrix_np(q), (1 - a) * self.trans[i - 1] + a * self.trans[i]


_VERSION = operator.attrgetter("version")
"""An edge's version."""


def quaternion_norms(quats: np.ndarray) -> list[float]:
    """The norm of each quaternion of quats [..., 4] (flattened to a list), each the float64 of
    :func:`~..geometry.transforms.check_quaternion`'s (per row NumPy's dot, then a correctly rounded square root)."""
    return np.sqrt(np.vecdot(quats, quats)).ravel().tolist()


def unit_norms(norms: Sequence[float]) -> bool:
    """Whether every quaternion norm of ``norms`` (at least one, none NaN: the norms of finite quaternions) is
    1 ± QUAT_NORM_TOL, by the largest and the smallest (:meth:`TFBuffer.set_transforms` stores the transforms of
    such a message at once)."""
    return max(norms) - 1.0 <= QUAT_NORM_TOL and 1.0 - min(norms) <= QUAT_NORM_TOL


def _slerp(q0: np.ndarray, q1: np.ndarray, a: float) -> np.ndarray:
    """Shortest-path spherical interpolation of unit quaternions (x, y, z, w), a ∈ [0, 1]."""
    d = float(np.dot(q0, q1))
    if d < 0.0:
        q1, d = -q1, -d
    theta = math.acos(min(d, 1.0))
    if theta < 1e-9:  # coincident rotations: the linear blend is exact to round-off
        q = (1 - a) * q0 + a * q1
    else:
        q = (math.sin((1 - a) * theta) * q0 + math.sin(a * theta) * q1) / math.sin(theta)
    return q / np.linalg.norm(q)


def _where(parent: str, child: str) -> str:
    """How error messages name the edge parent → child."""
    return f"TF {parent!r} -> {child!r}"


def _check_names(parent: str, child: str) -> None:
    """TFError unless parent and child are two different non-empty strings."""
    if not parent or not child or not isinstance(parent, str) or not isinstance(child, str):
        raise TFError(f"{_where(parent, child)}: frame names must be non-empty strings")
    if parent == child:
        raise TFError(f"{_where(parent, child)}: a frame cannot be its own parent")


class TFBuffer:
    """Time-stamped transforms between named frames; see the module docstring. cache_time: seconds of dynamic
    samples kept behind the newest sample of each edge (> 0); max_samples: the most samples one edge keeps (the
    oldest go first); max_frames: the most child frames (edges) stored, a new one beyond is refused (TFFull), so
    that a flood of samples or frame names cannot grow the buffer without bound."""

    def __init__(self, cache_time: float = 10.0, max_samples: int = 10_000, max_frames: int = 10_000):
        if not (math.isfinite(cache_time) and cache_time > 0):
            raise ValueError(f"TFBuffer: cache_time must be finite and > 0 s; got {cache_time}")
        if min(max_samples, max_frames) < 2:
            raise ValueError(f"TFBuffer: max_samples and max_frames must be >= 2; got {max_samples}, {max_frames}")
        self.cache_time = float(cache_time)
        self.max_samples, self.max_frames = int(max_samples), int(max_frames)
        self._edge_of: dict[str, _Edge] = {}
        """child frame → its edge, without the samples still pending (:attr:`_edges` adds them first)."""
        self.revision = 0
        """Counts the changes of the stored transforms: equal revisions give equal lookups (callers cache by it)."""
        self._structure = 0
        """Counts the changes of the frame tree (edges added, the buffer cleared)."""
        self._message_edges: tuple[Sequence[str] | None, Sequence[str] | None, int, list[_Edge]] = (None, None, -1, [])
        """(parents, children, frame tree count, their edges) of the latest message stored whole
        (:meth:`set_transforms`)."""
        self._latest: dict[tuple[str, str], tuple[int, list[_Edge], list[int], set[int], StampedTransform]] = {}
        """(target, source) → (structure, the edges of the chain, their versions, their id()s, result) of the latest
        lookup at the latest common time: it holds while the tree and those edges are unchanged."""
        self._pending: list[tuple[list[float], np.ndarray, np.ndarray, list[float]]] = []
        """Messages stored whole on the kept edges (:attr:`_pending_edges`)
        whose samples are not in those edges yet: (stamps s, translations [n, 3] m, quaternions [n, 4], their
        norms) of each, in order, every sample newer than its edge's newest (:meth:`_flush` adds them)."""
        self._pending_edges: list[_Edge] | None = None
        """The kept edges when they are distinct (a message's samples may be held back for them), else None."""
        self._pending_ids: set[int] = set()
        """id() of each of :attr:`_pending_edges`."""

    # ------------------------------------------------------------------ storing
    def set_transform(self, parent: str, child: str, trans, stamp: float, *, rot=None, quat=None,
                      static: bool = False) -> bool:
        """Store the pose of ``child`` in ``parent``: translation trans (3,) m and either rot (3, 3) or quat (x, y, z, w).

        Returns False (nothing stored) for a dynamic sample older than the buffer span of that edge; raises TFError
        for invalid values, a second parent, a loop, or a static/dynamic mismatch on an existing edge.
        """
        _check_names(parent, child)
        stamp = float(stamp)
        if not math.isfinite(stamp):
            raise TFError(f"{_where(parent, child)}: stamp must be finite; got {stamp}")
        t = np.asarray(trans, dtype=np.float64)
        if t.shape != (3,) or not scan_within_float32(t):
            raise TFError(f"{_where(parent, child)}: translation must be 3 finite numbers within float32's range "
                          f"(m); got {np.asarray(trans).tolist()}")
        q, r = self._rotation(rot, quat, parent, child)
        return self._store(parent, child, stamp, t, q, r, static)

    def set_transforms(self, parents: Sequence[str], children: Sequence[str], stamps: Sequence[float],
                       values: np.ndarray, static: bool = False,
                       norms: list[float] | None = None) -> list[bool | TFError]:
        """:meth:`set_transform` of n transforms at once, in order (one ``/tf`` message): parents, children, stamps
        (s) of each and values [n, 7] float64 (translation (x, y, z) m, quaternion (x, y, z, w)). Returns, per
        transform, what :meth:`set_transform` returns or the TFError it raises (the others are stored all the same).

        The numbers of all n are checked at once (finite, quaternion norm 1 ± 1e-3; each norm the same float64 as
        :func:`~..geometry.transforms.check_quaternion`'s, so the unit quaternions are bit for bit
        :meth:`set_transform`'s); when one fails, each transform goes through :meth:`set_transform`, which names
        the bad ones. The samples are rows of ``values`` (as :meth:`set_transform` keeps a float64 translation as
        given): do not modify it afterwards. norms: those of the quaternions (:func:`quaternion_norms`) when the
        caller has them and every value is finite (a decoder checks a block of messages at once), else None.

        A publisher sends its frames again and again: the edges of the latest message whose transforms were all
        stored are kept with its ``parents`` and ``children`` objects, and while the next message brings the same
        objects (a decoder shares them between the messages of one layout) and the frame tree is unchanged, its
        newer samples go to those edges without looking them up: held back as the message (pending) when the edges
        are distinct, and added to the edges at once when something reads the buffer (:attr:`_edges`).
        """
        if not len(values):
            return []
        trans, quats = values[:, :3], values[:, 3:]
        if norms is None:
            norms = quaternion_norms(quats)
            # every value finite and within float32's range (a float32 world model would hold inf): the translations'
            # check (a quaternion out of range fails its norm's check anyway)
            finite = scan_within_float32(values.ravel())
        else:
            finite = True
        checked = finite and all(map(math.isfinite, stamps)) and unit_norms(norms)
        kept = self._message_edges
        if checked and not static and kept[0] is parents and kept[1] is children and kept[2] == self._structure:
            return self._append_rows(kept[3], parents, children, stamps, trans, quats, norms)
        out = []
        for parent, child, stamp, t, q, n in zip(parents, children, stamps, trans, quats, norms, strict=True):  # rows
            try:
                if checked:
                    out.append(self._store(parent, child, float(stamp), t, (q, n), None, static))
                else:
                    out.append(self.set_transform(parent, child, t, stamp, quat=q, static=static))
            except TFError as exc:
                out.append(exc)
        if checked and not static and all(ok is True for ok in out):
            edges = [self._edges[c] for c in children]
            self._message_edges = (parents, children, self._structure, edges)
            distinct = len(set(children)) == len(children)
            self._pending_edges = edges if distinct else None  # (nothing is pending: reading _edges added it)
            self._pending_ids = {id(e) for e in edges} if distinct else set()
        return out

    def _append_rows(self, edges: list[_Edge], parents: Sequence[str], children: Sequence[str],
                     stamps: Sequence[float], trans: np.ndarray, quats: np.ndarray, norms: list[float]) -> list[bool]:
        """:meth:`set_transforms` of checked dynamic samples for ``edges`` (those of ``children`` in ``parents``):
        held back as pending when the edges are distinct and every sample is newer than its edge's newest, else a
        sample newer than its edge's newest is appended here and any other goes through :meth:`_store`."""
        if edges is self._pending_edges:
            newest = self._pending[-1][0] if self._pending else [e.stamps[-1] if e.stamps else -math.inf
                                                                 for e in edges]
            seconds = list(map(float, stamps))
            if all(map(operator.gt, seconds, newest)):
                self._pending.append((seconds, trans, quats, norms))
                self.revision += len(edges)
                if len(self._pending) >= PENDING_MAX:
                    self._flush()
                return [True] * len(edges)
            self._flush()
        out = []
        for edge, parent, child, stamp, t, q, n in zip(edges, parents, children, stamps, trans, quats, norms,
                                                       strict=True):
            stamp = float(stamp)
            samples = edge.stamps
            if samples and stamp <= samples[-1]:
                out.append(self._store(parent, child, stamp, t, (q, n), None, False))
                continue
            self.revision += 1
            edge.version += 1
            edge.append(stamp, (q, n), None, t)
            self._trim(edge)
            out.append(True)
        return out

    def _flush(self) -> None:
        """Add the pending messages' samples (:attr:`_pending`) to their edges, as many appends and trims would."""
        pending = self._pending
        if not pending:
            return
        self._pending = []
        for j, edge in enumerate(self._pending_edges):
            edge.extend([stamps[j] for stamps, _, _, _ in pending],
                        [(quats[j], norms[j]) for _, _, quats, norms in pending],
                        [trans[j] for _, trans, _, _ in pending])
            edge.version += len(pending)
            self._trim(edge)

    @property
    def _edges(self) -> dict[str, _Edge]:
        """child frame → its edge, every sample stored (pending ones added first)."""
        if self._pending:
            self._flush()
        return self._edge_of

    def _store(self, parent: str, child: str, stamp: float, t: np.ndarray, q: np.ndarray | tuple[np.ndarray, float],
               r: np.ndarray | None, static: bool) -> bool:
        """Store a checked sample (stamp finite s, translation t (3,) m, unit quaternion q or (quaternion, its norm),
        its rotation matrix r or None) as :meth:`set_transform` describes; the frame names and the edge are checked
        here."""
        edge = self._edges.get(child)
        if edge is None or edge.parent != parent or edge.static != static:
            edge = self._edge(parent, child, edge, static)
        self.revision += 1
        edge.version += 1
        stamps = edge.stamps
        if static:
            edge.stamps, edge.quats, edge.rots, edge.trans = [stamp], [q], [r], [t]
            return True
        if not stamps or stamp > stamps[-1]:  # the usual case: a newer sample
            edge.append(stamp, q, r, t)
        elif stamp < stamps[-1] - self.cache_time:
            return False
        else:
            i = bisect.bisect_left(stamps, stamp)
            if stamps[i] == stamp:
                edge.quats[i], edge.rots[i], edge.trans[i] = q, r, t
            else:
                stamps.insert(i, stamp)
                edge.quats.insert(i, q)
                edge.rots.insert(i, r)
                edge.trans.insert(i, t)
        self._trim(edge)
        return True

    def _trim(self, edge: _Edge) -> None:
        """Drop the samples of a dynamic ``edge`` more than :attr:`cache_time` older than its newest, and the oldest
        beyond :attr:`max_samples`."""
        stamps = edge.stamps
        oldest = stamps[-1] - self.cache_time
        if stamps[0] < oldest or len(stamps) > self.max_samples:
            cut = max(bisect.bisect_left(stamps, oldest), len(stamps) - self.max_samples)
            del stamps[:cut], edge.quats[:cut], edge.rots[:cut], edge.trans[:cut]

    def _edge(self, parent: str, child: str, edge: _Edge | None, static: bool) -> _Edge:
        """The edge parent → child for a new sample (``edge``: the stored edge of ``child``, None for a new frame,
        which is added); TFError for bad frame names, a second parent, a static/dynamic mismatch or a full buffer."""
        _check_names(parent, child)
        if edge is None:
            if len(self._edges) >= self.max_frames:
                raise TFFull(f"{_where(parent, child)}: the buffer already holds {len(self._edges)} frames; allowed: "
                             f"at most {self.max_frames} frames")
            return self._add_edge(parent, child, static)
        if edge.parent != parent:
            raise TFError(f"{_where(parent, child)}: frame {child!r} already has parent {edge.parent!r}; a frame has "
                          "one parent (check for two publishers of the same frame)")
        kind = "static" if edge.static else "dynamic"
        raise TFError(f"{_where(parent, child)}: the edge is already {kind}; it cannot also be published as "
                      f"{'static' if static else 'dynamic'}")

    def _add_edge(self, parent: str, child: str, static: bool) -> _Edge:
        """A new edge parent → child (no samples yet); TFError when ``child`` is an ancestor of ``parent``."""
        anc = parent
        while anc in self._edges:
            anc = self._edges[anc].parent
            if anc == child:
                raise TFError(f"{_where(parent, child)}: {child!r} is an ancestor of {parent!r}; this would close "
                              "a loop")
        edge = self._edge_of[child] = _Edge(parent, static)
        self._structure += 1
        return edge

    @staticmethod
    def _rotation(rot, quat, parent: str, child: str) -> tuple[np.ndarray, np.ndarray | None]:
        """Validated (unit quaternion (x, y, z, w), rotation matrix) from exactly one of rot or quat; the matrix is
        None for a quaternion (made on first use, see :class:`_Edge`)."""
        where = _where(parent, child)
        if (rot is None) == (quat is None):
            raise TFError(f"{where}: give exactly one of rot (3×3) or quat (x, y, z, w)")
        if quat is not None:
            try:
                q = check_quaternion(quat, where)
            except ValueError as e:
                raise TFError(str(e)) from None
            return q, None
        try:
            r = check_rotation(rot, where)
        except ValueError as e:
            raise TFError(str(e)) from None
        return matrix_to_quat(torch.as_tensor(r)).numpy(), r

    def clear(self):
        """Forget every frame."""
        self._pending.clear()
        self._edge_of.clear()
        self._latest.clear()
        self.revision += 1
        self._structure += 1

    # ------------------------------------------------------------------ queries
    @property
    def frames(self) -> list[str]:
        """Every known frame name (children and parents), sorted."""
        names = set(self._edges)
        names.update(e.parent for e in self._edges.values())
        return sorted(names)

    def has_frame(self, frame: str) -> bool:
        return frame in self._edges or any(e.parent == frame for e in self._edges.values())

    def parent(self, frame: str) -> str | None:
        """The parent of ``frame`` (None for a tree root)."""
        self._require(frame)
        edge = self._edges.get(frame)
        return None if edge is None else edge.parent

    def _require(self, frame: str):
        if not self.has_frame(frame):
            close = closest_names(frame, self.frames) if self._edges else []
            hint = f"; closest known frames: {close}" if close else "; the buffer holds no frames yet"
            raise TFError(f"TF: unknown frame {frame!r}{hint}")

    def _chain(self, frame: str) -> list[str]:
        """frame, its parent, …, its tree root."""
        chain = [frame]
        while chain[-1] in self._edges:
            chain.append(self._edges[chain[-1]].parent)
        return chain

    def _path(self, target: str, source: str) -> tuple[list[str], list[str]]:
        """Frames from source up to (excluding) the common ancestor, and the same for target."""
        self._require(target)
        self._require(source)
        up_s, up_t = self._chain(source), self._chain(target)
        if up_s[-1] != up_t[-1]:
            raise TFError(f"TF: frames {target!r} and {source!r} are not connected (tree roots {up_t[-1]!r} and "
                          f"{up_s[-1]!r}); publish a transform that joins the two trees")
        common = next(f for f in up_s if f in set(up_t))
        return up_s[:up_s.index(common)], up_t[:up_t.index(common)]

    def latest_common_time(self, target: str, source: str) -> float | None:
        """The newest time at which every dynamic edge between the frames has data (None: all static)."""
        from_s, from_t = self._path(target, source)
        newest = [self._edges[f].stamps[-1] for f in from_s + from_t if not self._edges[f].static]
        return min(newest) if newest else None

    def lookup(self, target: str, source: str, time: float | None = None) -> StampedTransform:
        """Pose of ``source`` in ``target`` at ``time`` (s; None = the latest common time; see StampedTransform).
        A lookup at the latest time is computed once while the edges between the frames are unchanged: callers get
        the same result object, whose arrays they must not modify."""
        if time is None:
            held = self._latest.get((target, source))
            if held is not None:
                structure, edges, versions, ids, result = held
                if self._pending and not self._pending_ids.isdisjoint(ids):
                    self._flush()  # the chain's edges get their pending samples
                if structure == self._structure and list(map(_VERSION, edges)) == versions:
                    return result
        result = self._lookup(target, source, time)
        if time is None:
            edges = [self._edges[f] for f in self._chain(source)[:-1] + self._chain(target)[:-1]]
            self._latest[target, source] = (self._structure, edges, list(map(_VERSION, edges)), set(map(id, edges)),
                                            result)
        return result

    def _lookup(self, target: str, source: str, time: float | None) -> StampedTransform:
        from_s, from_t = self._path(target, source)
        static = all(self._edges[f].static for f in from_s + from_t)
        if time is None:
            time = self.latest_common_time(target, source)
        elif not math.isfinite(float(time)):
            raise TFError(f"TF: lookup time must be finite; got {time}")
        r_s, t_s = self._compose(from_s, time)  # pose of source in the common ancestor
        r_t, t_t = self._compose(from_t, time)  # pose of target in the common ancestor
        stamp = 0.0 if time is None else float(time)
        return StampedTransform(r_t.T @ r_s, r_t.T @ (t_s - t_t), stamp, static)

    def _compose(self, frames: list[str], time: float | None) -> tuple[np.ndarray, np.ndarray]:
        """Pose of frames[0] in the parent of frames[-1] (identity for an empty list)."""
        r, t = np.eye(3), np.zeros(3)
        for f in frames:  # walk up: T_parent(f) ∘ T_current
            re, te = self._edges[f].at(time, f)
            r, t = re @ r, re @ t + te
        return r, t

    def can_transform(self, target: str, source: str, time: float | None = None) -> bool:
        try:
            self.lookup(target, source, time)
        except TFError:
            return False
        return True

    def is_stale(self, frame: str, now: float, max_age: float) -> bool:
        """Whether some dynamic edge between ``frame`` and its tree root has no sample newer than now − max_age."""
        self._require(frame)
        return any(not self._edges[f].static and self._edges[f].stamps[-1] < now - max_age
                   for f in self._chain(frame)[:-1])
