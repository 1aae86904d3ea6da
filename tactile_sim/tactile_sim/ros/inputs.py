"""Node inputs as plain data: joint states, transforms and the robot description, decoded from messages.

The decoders read only message fields (``header.stamp``, ``name``, ``position``, ...), which rclpy messages and the
rosbags message classes of :mod:`tactile_sim.io.msg_types` share, so one decoder serves the live node, bags and
tests; messages decoded from CDR by :mod:`tactile_sim.io.input_cdr` (bags, raw DDS ``/tf``) are read from what that
decoding already holds (stamps in ns, names as a tuple, transforms as arrays), to the same samples, as are the rows
that a block of such messages decodes into (:class:`~..io.input_cdr.JointStateRow`, :class:`~..io.input_cdr.TFRow`:
a replay that only hands its inputs to a core reads no message objects). They
convert but do not judge the content; :class:`~.node_core.NodeCore` validates and drops. A joint
state's arrays may share the message's memory (a float64 array is taken as it is, once per message): consume a
sample before the message changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..io.input_cdr import DecodedMessage, DecodedTFMessage, JointStateRow, TFRow, frame_name
from ..io.stamps import NS_PER_S, ns_to_seconds, time_msg_to_ns, time_msg_to_seconds


class JointStateSample(NamedTuple):
    """One ``sensor_msgs/JointState``: stamp s (header), joint names, position (n,) float64 (rad or m) and
    velocity (n,) float64 (rad/s or m/s) or None when the message carries none; finite: True when the decoder
    found every value of both finite and within float32's range (False: not known). Lengths are as received (a
    named tuple: immutable, and cheap to build once per message)."""

    stamp: float
    names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray | None = None
    finite: bool = False


class TransformSample(NamedTuple):
    """One ``geometry_msgs/TransformStamped``: pose of ``child`` in ``parent`` (x_parent = R x_child + t) at
    ``stamp`` s; translation (3,) m, rotation (4,) quaternion (x, y, z, w), both float64, as received (a named
    tuple: immutable, and cheap to build for every transform of every ``/tf`` message)."""

    parent: str
    child: str
    stamp: float
    translation: np.ndarray
    rotation: np.ndarray


def decode_joint_state(msg: Any) -> JointStateSample:
    """:class:`JointStateSample` of a ``sensor_msgs/JointState`` (rclpy or rosbags object, or a
    :class:`~..io.input_cdr.DecodedMessage` or :class:`~..io.input_cdr.JointStateRow`, whose stamp, names and float64
    arrays are taken as they are, and a row's finite check)."""
    if type(msg) is JointStateRow:
        velocity = msg.velocity
        return JointStateSample(msg.stamp_ns / NS_PER_S, msg.names, msg.position, velocity if velocity.size else None,
                                msg.finite)
    if isinstance(msg, DecodedMessage):
        velocity = msg.velocity
        return JointStateSample(ns_to_seconds(msg.stamp_ns), msg.names, msg.position, velocity if velocity.size else None)
    velocity = np.asarray(msg.velocity, dtype=np.float64)
    return JointStateSample(time_msg_to_seconds(msg.header.stamp), tuple(msg.name),
                            np.asarray(msg.position, dtype=np.float64), velocity if velocity.size else None)


def joint_state_stamp_ns(msg: Any) -> int:
    """The header stamp (ns) of a ``sensor_msgs/JointState`` (as :func:`decode_joint_state` takes it)."""
    return msg.stamp_ns if isinstance(msg, (DecodedMessage, JointStateRow)) else time_msg_to_ns(msg.header.stamp)


class TransformBatch(NamedTuple):
    """The transforms of one ``tf2_msgs/TFMessage`` in the form :meth:`~..world.tf_buffer.TFBuffer.set_transforms`
    takes: parents, children (frame names), stamps (s), values [n, 7] float64 (translation (x, y, z) m,
    quaternion (x, y, z, w)), as received, and the norms of the quaternions when the decoder has them for finite
    values (:class:`~..io.input_cdr.TFRow`; else None)."""

    parents: Sequence[str]
    children: Sequence[str]
    stamps: list[float]
    values: np.ndarray
    norms: list[float] | None = None

    def sample(self, k: int) -> TransformSample:
        """Transform k as a :class:`TransformSample` (its arrays are views of ``values``)."""
        row = self.values[k]
        return TransformSample(self.parents[k], self.children[k], self.stamps[k], row[:3], row[3:])


def decode_tf_batch(msg: Any) -> TransformBatch:
    """:class:`TransformBatch` of a ``tf2_msgs/TFMessage`` (rclpy or rosbags object, or a
    :class:`~..io.input_cdr.DecodedTFMessage`, whose frames, stamps and values are read without building its transform
    objects, or a :class:`~..io.input_cdr.TFRow`); the same frames (leading '/' dropped), stamps and values, bit for
    bit, as :func:`decode_tf_message`."""
    if type(msg) is TFRow:  # integer stamps: ns / NS_PER_S is ns_to_seconds(ns)
        return TransformBatch(msg.parents, msg.children, [ns / NS_PER_S for ns in msg.stamps_ns], msg.values,
                              msg.norms)
    if isinstance(msg, DecodedTFMessage):
        return TransformBatch(msg.parents, msg.children, [ns_to_seconds(ns) for ns in msg.stamps_ns()], msg.values)
    transforms = msg.transforms
    rows = []
    for tr in transforms:
        t, q = tr.transform.translation, tr.transform.rotation
        rows.append((t.x, t.y, t.z, q.x, q.y, q.z, q.w))
    values = np.array(rows, dtype=np.float64)
    return TransformBatch([frame_name(tr.header.frame_id) for tr in transforms],
                          [frame_name(tr.child_frame_id) for tr in transforms],
                          [time_msg_to_seconds(tr.header.stamp) for tr in transforms], values.reshape(-1, 7))


def decode_tf_message(msg: Any) -> list[TransformSample]:
    """:class:`TransformSample` of every transform of a ``tf2_msgs/TFMessage`` (as :func:`decode_tf_batch` reads
    it)."""
    batch = decode_tf_batch(msg)
    return [batch.sample(k) for k in range(len(batch.parents))]


def tf_transform_count(msg: Any) -> int:
    """The number of transforms of a ``tf2_msgs/TFMessage`` (as :func:`decode_tf_batch` takes it), read without
    decoding them."""
    if type(msg) is TFRow:
        return len(msg.parents)
    return len(msg.frames) if isinstance(msg, DecodedTFMessage) else len(msg.transforms)


def tf_stamps_ns(msg: Any) -> list[int]:
    """The header stamps (ns) of every transform of a ``tf2_msgs/TFMessage`` (as :func:`decode_tf_batch` takes
    it)."""
    if type(msg) is TFRow:
        return msg.stamps_ns
    if isinstance(msg, DecodedTFMessage):
        return msg.stamps_ns()
    return [time_msg_to_ns(tr.header.stamp) for tr in msg.transforms]


def decode_robot_description(msg: Any) -> str:
    """The URDF text of a ``std_msgs/String`` on ``/robot_description``."""
    return str(msg.data)
