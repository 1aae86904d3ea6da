"""Node inputs straight from their CDR bytes: ``sensor_msgs/JointState`` and ``tf2_msgs/TFMessage``, what a replay
reads every tick.

:class:`JointStateDecoder` reads the header stamp, frame id, names and the three float64 sequences with ``struct``
and ``numpy.frombuffer`` (read-only views of the bytes, no copy) and returns a :class:`DecodedMessage` (a
:class:`~.wire_message.WireMessage` with its fields as plain attributes) that keeps the bytes (a copy to another
bag writes them as they are). Names repeat from message to message: when the bytes at the name block begin with
the previous message's block, they are that block (a count, then length-prefixed names: the block fixes its own
end) and its decoded names are reused without walking them. A publisher also repeats its frame and its sequence
lengths: when the bytes agree with the previous message's up to the end of the names, and its three sequence counts
(read with one ``struct`` call at the previous message's offsets) are equal, the sequences lie where they lay, and
only the stamp and the values are read. :class:`TFMessageDecoder` reads the frame ids, the stamps (one ``struct``
call) and the translations and rotations (one [n, 7] float64 array) of a :class:`DecodedTFMessage`, what the node's
TF input reads; a publisher repeats its frames, so when the frame bytes agree with the previous message's, every
offset is that message's and the strings are not walked. The rosbags transform objects are built only when
something reads ``transforms``. Message objects are built with positional arguments (rosbags' field order, which the
tests check against rosbags' deserialiser), a third cheaper than keywords. Only little-endian CDR is read here
(``decode`` returns None otherwise, the caller falls back to rosbags).

A replay reads many messages of one publisher at once: ``decode_block`` of either decoder takes a block of messages
of equal size and decodes every one that agrees with the first message's layout (the bytes that fix the layout are
one array comparison for the whole block) into plain rows, their values one array for the block, without building
message objects (:class:`JointStateRow`, :class:`TFRow`); each row is what ``decode`` of that message holds, bit for
bit. ``decode_arrays`` of either decoder gives the same block as arrays, without a row per message
(:class:`JointStateArrays`, :class:`TFArrays`: a replay that plans a recording reads its joint states and ``/tf``
messages all at once).
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

import numpy as np

from ..constants import FLOAT32_MAX
from .msg_types import message_class
from .stamps import NS_PER_S
from .wire_message import WireMessage

JOINT_STATE = "sensor_msgs/msg/JointState"
TF_MESSAGE = "tf2_msgs/msg/TFMessage"
_STAMP = struct.Struct("<iI")
_U32 = struct.Struct("<I")
_F64 = np.dtype("<f8")
_I32, _U32_DTYPE = np.dtype("<i4"), np.dtype("<u4")


def within_float32(values: np.ndarray) -> np.ndarray:
    """Whether each input value is finite and at most :data:`~..constants.FLOAT32_MAX` in size (bool, the shape of
    ``values``; NaN fails the comparison): what a joint value must be to stay finite in a float32 world model."""
    return np.abs(values) <= FLOAT32_MAX


def scan_within_float32(values: np.ndarray) -> bool:
    """:func:`within_float32` of every value of the short 1-D host array ``values`` (one message's numbers): a
    Python scan, cheaper than a NumPy reduction for a few values."""
    return all(map(FLOAT32_MAX.__ge__, map(abs, values.tolist())))


class JointStateRow(NamedTuple):
    """One JointState of a block (:meth:`JointStateDecoder.decode_block`): header stamp ns, joint names (shared by
    the messages of one layout), its position and velocity (n,) float64 (rows of the block's arrays) and whether
    every one of their values is finite and within float32's range (checked for the block at once)."""

    stamp_ns: int
    names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    finite: bool


class JointStateArrays(NamedTuple):
    """m JointStates of one size decoded at once in the first one's layout (:meth:`JointStateDecoder.decode_arrays`):
    whether each agrees with that layout (bool [m]; the others' values are not theirs), the header stamps (int64 [m],
    ns), the joint names of the layout, positions [m, n] and velocities [m, n'] float64 (read-only views of the bytes)
    and whether every value of a message is finite and within float32's range (bool [m])."""

    agree: np.ndarray
    stamps_ns: np.ndarray
    names: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    finite: np.ndarray


class TFRow(NamedTuple):
    """One TFMessage of a block (:meth:`TFMessageDecoder.decode_block`): the header stamp ns of each transform, the
    TF names of their parents and children (shared by the messages of one layout), values [n, 7] float64 (a row
    of the block's array: translation (x, y, z) m, quaternion (x, y, z, w)) and, when every value is finite and
    within float32's range (:func:`within_float32`), the norm of each quaternion (float64, per quaternion NumPy's
    dot and a square root; None otherwise)."""

    stamps_ns: list[int]
    parents: tuple[str, ...]
    children: tuple[str, ...]
    values: np.ndarray
    norms: list[float] | None


class TFArrays(NamedTuple):
    """m TFMessages of one size decoded at once in the first one's layout of n transforms
    (:meth:`TFMessageDecoder.decode_arrays`): whether each agrees with that layout (bool [m]; the others' values are
    not theirs), the header stamps (int64 [m, n], ns), the TF names of the parents and children of the layout, values
    [m, n, 7] float64 (as :class:`TFRow`'s), whether every value of a message is :func:`within_float32` (bool [m])
    and the norms of the quaternions [m, n] float64 (those of :class:`TFRow`, of the finite messages that agree; 0
    for the others)."""

    agree: np.ndarray
    stamps_ns: np.ndarray
    parents: tuple[str, ...]
    children: tuple[str, ...]
    values: np.ndarray
    finite: np.ndarray
    norms: np.ndarray


def block_bytes(datas: list[bytes]) -> tuple[bytes, np.ndarray]:
    """The messages ``datas`` (each of the same size L) back to back, and as an [m, L] uint8 array of those bytes."""
    blob = b"".join(datas)
    return blob, np.frombuffer(blob, np.uint8).reshape(len(datas), -1)


def agreeing(block: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """bool [m]: the rows of ``block`` [m, L] uint8 whose bytes at ``columns`` are row 0's."""
    sub = block[:, columns]
    return (sub == sub[0]).all(axis=1)


def _stamps_ns(sec: np.ndarray, nanosec: np.ndarray) -> np.ndarray:
    """int64 [m, n]: the stamps (ns) of m messages' n builtin_interfaces/Time fields, from their bytes: sec [m, 4n]
    (little-endian int32) and nanosec [m, 4n] (uint32) uint8. Exact: |sec| < 2³¹ keeps sec·10⁹ + nanosec < 2⁶³."""
    m = len(sec)
    sec = np.ascontiguousarray(sec).view(_I32).reshape(m, -1).astype(np.int64)
    return sec * NS_PER_S + np.ascontiguousarray(nanosec).view(_U32_DTYPE).reshape(m, -1)


def _spans(spans) -> np.ndarray:
    """The byte columns of (start, stop) spans, one int array."""
    return np.concatenate([np.arange(a, b) for a, b in spans]).astype(np.intp)


def _rows(blob: bytes, size: int, count: int, at: int, n: int) -> np.ndarray:
    """[count, n] float64 (a read-only view of ``blob``) of the n little-endian float64 at byte ``at`` of each of
    ``count`` messages of ``size`` bytes laid back to back in ``blob``."""
    return np.ndarray((count, n), _F64, blob, at, (size, 8))


def _block_layout(decoder: _LittleEndianDecoder, datas: list[bytes]) -> Any:
    """The layout of the first message of a block (``decoder``'s ``_layout_of``; None for big-endian or too short
    bytes); ValueError when it ends early, as ``decode`` raises."""
    size = len(datas[0])
    if size < 8 or datas[0][1] != 1:
        return None
    try:
        return decoder._layout_of(datas[0])
    except struct.error as exc:
        raise ValueError(f"{decoder.type_name}: {size} bytes end inside the message ({exc})") from exc


class DecodedMessage(WireMessage):
    """A :class:`~.wire_message.WireMessage` of decoded JointState bytes whose fields are plain attributes, found
    without the look-up of the fields a WireMessage does after a failed attribute look-up. What the node's joint-state
    input reads every tick is set by the decoder: position and velocity (float64 views of the bytes), stamp_ns (the
    header stamp in ns) and names (the names as a tuple, shared with the decoder's other messages of the same names);
    header, name (a list) and effort are made on first read and kept."""

    __slots__ = ("position", "velocity", "stamp_ns", "names", "_stamp", "_layout", "_types", "_header", "_name",
                 "_effort")

    def __init__(self, cls: type, cdr: bytes, stamp: tuple[int, int], layout: _Layout, names: tuple[str, ...],
                 types: tuple[type, type]):
        super().__init__(cls, cdr, {}, {})
        (n0, at0), (n1, at1), _ = layout.arrays
        self.position, self.velocity = np.frombuffer(cdr, _F64, n0, at0), np.frombuffer(cdr, _F64, n1, at1)
        self.stamp_ns, self.names = stamp[0] * NS_PER_S + stamp[1], names
        self._stamp, self._layout, self._types = stamp, layout, types
        self._header = self._name = self._effort = None

    @property
    def header(self) -> Any:
        """The rosbags ``std_msgs/Header`` (made once)."""
        if self._header is None:
            header, time = self._types
            self._header = header(time(*self._stamp), self._layout.frame_id)
        return self._header

    @property
    def name(self) -> list[str]:
        """The joint names as a list (made once)."""
        if self._name is None:
            self._name = list(self.names)
        return self._name

    @property
    def effort(self) -> np.ndarray:
        """The efforts: a float64 view of the bytes (made once)."""
        if self._effort is None:
            self._effort = np.frombuffer(self.cdr, _F64, *self._layout.arrays[2])
        return self._effort

    @property
    def message(self) -> Any:
        """The rosbags JointState object (built on first use)."""
        if self._message is None:
            self._message = self._cls(self.header, self.name, self.position, self.velocity, self.effort)
        return self._message


class _LittleEndianDecoder:
    """The entry point of both decoders: little-endian CDR bytes go to the subclass's ``_decode`` (the message of
    ``type_name``)."""

    type_name: str

    def decode(self, data: bytes) -> DecodedMessage | None:
        """The message of ``data`` (CDR with its 4-byte encapsulation header), None for big-endian CDR."""
        if len(data) < 4 or data[1] != 1:
            return None
        try:
            return self._decode(bytes(data))
        except struct.error as exc:
            raise ValueError(f"{self.type_name}: {len(data)} bytes end inside the message ({exc})") from exc


class _Layout(NamedTuple):
    """Where the fields of a JointState's bytes lie, for the next message whose bytes agree with it up to the sequence
    counts (a publisher repeats its frame and names). head: the bytes from the frame id's length to the end of the
    names; frame_id; counts: reads the three sequence counts at their byte offset counts_at (the gaps between them
    follow from the counts); values: those counts; arrays: (count, byte offset) of position, velocity and effort;
    end: the byte after the effort values; columns: the byte offsets that fix the layout (the encapsulation
    header, head and the three counts: messages of one size that agree there share it)."""

    head: bytes
    frame_id: str
    counts: struct.Struct
    counts_at: int
    values: tuple[int, int, int]
    arrays: tuple[tuple[int, int], ...]
    end: int
    columns: np.ndarray


class JointStateDecoder(_LittleEndianDecoder):
    """Decodes JointState CDR bytes (see the module docstring); raises ValueError for bytes that end early. The
    previous message's :class:`_Layout` is reused when the bytes agree with it: equal head, equal counts."""

    type_name = JOINT_STATE

    def __init__(self):
        self._cls = message_class(JOINT_STATE)
        self._types = (message_class("std_msgs/msg/Header"), message_class("builtin_interfaces/msg/Time"))
        self._names_bytes = b""
        self._names: tuple[str, ...] = ()
        self._layout: _Layout | None = None

    def _decode(self, data: bytes) -> DecodedMessage:
        return DecodedMessage(self._cls, data, _STAMP.unpack_from(data, 4), self._layout_of(data), self._names,
                              self._types)

    def _layout_of(self, data: bytes) -> _Layout:
        """The layout of ``data``: the previous message's when the bytes agree with it, else walked (and kept)."""
        layout = self._layout
        if layout is None or not (data.startswith(layout.head, 12) and len(data) >= layout.end
                                  and layout.counts.unpack_from(data, layout.counts_at) == layout.values):
            layout = self._layout = self._walk(data)
        return layout

    def decode_block(self, datas: list[bytes]) -> list[JointStateRow | None]:
        """A :class:`JointStateRow` of each message of ``datas`` (CDR, every one of the same size) that agrees with
        the first one's little-endian layout, None for the others (decode those one by one); ValueError when the
        first ends early (as :meth:`decode`)."""
        block = self.decode_arrays(datas)
        if block is None:
            return [None] * len(datas)
        names = block.names
        return [JointStateRow(s, names, p, v, fin) if good else None
                for good, s, p, v, fin in zip(block.agree.tolist(), block.stamps_ns.tolist(), block.position,
                                              block.velocity, block.finite.tolist())]

    def decode_arrays(self, datas: list[bytes]) -> JointStateArrays | None:
        """The messages ``datas`` (CDR, every one of the same size) as arrays, in the first one's little-endian layout
        (None for big-endian or too short bytes): the rows of :meth:`decode_block` are those of the messages that
        agree with it; ValueError when the first ends early (as :meth:`decode`)."""
        layout = _block_layout(self, datas)
        if layout is None:
            return None
        blob, block = block_bytes(datas)
        (n0, at0), (n1, at1), _ = layout.arrays
        size, m = len(datas[0]), len(datas)
        position, velocity = _rows(blob, size, m, at0, n0), _rows(blob, size, m, at1, n1)
        return JointStateArrays(agreeing(block, layout.columns), _stamps_ns(block[:, 4:8], block[:, 8:12]).ravel(),
                                self._names, position, velocity,
                                within_float32(position).all(axis=1) & within_float32(velocity).all(axis=1))

    def _walk(self, data: bytes) -> _Layout:
        """The :class:`_Layout` of ``data`` read field by field (the names are decoded unless they are the previous
        message's)."""
        (size,) = _U32.unpack_from(data, 12)
        frame_id = data[16:16 + size - 1].decode()
        pos = aligned(16 + size, 4)
        names_start = pos
        known = self._names_bytes
        if known and data.startswith(known, names_start):  # a count and length-prefixed names: one end
            pos += len(known)
        else:
            names, pos = _strings(data, names_start)
            self._names, self._names_bytes = tuple(names), data[names_start:pos]
        head_end = pos
        counts, arrays = [], []
        for _ in range(3):
            pos = aligned(pos, 4)
            (count,) = _U32.unpack_from(data, pos)
            counts.append((count, pos))
            pos += 4
            if count:
                pos = aligned(pos, 8)
            if pos + 8 * count > len(data):
                raise struct.error(f"a float64 sequence of {count} values at byte {pos}")
            arrays.append((count, pos))
            pos += 8 * count
        (n0, c0), (n1, c1), (n2, c2) = counts
        reader = struct.Struct(f"<I{c1 - c0 - 4}xI{c2 - c1 - 4}xI")
        columns = _spans(((0, 4), (12, head_end), (c0, c0 + 4), (c1, c1 + 4), (c2, c2 + 4)))
        return _Layout(data[12:head_end], frame_id, reader, c0, (n0, n1, n2), tuple(arrays), pos, columns)


def aligned(pos: int, size: int) -> int:
    """``pos`` (counted from the start of the bytes, the 4-byte encapsulation header included) rounded up to a
    multiple of ``size`` counted from the end of that header, as CDR aligns."""
    return 4 + ((pos - 4 + size - 1) & -size)


def _strings(data: bytes, pos: int) -> tuple[list[str], int]:
    """The string sequence at ``pos`` (count, then aligned length-prefixed NUL-terminated strings) and the position
    just after it."""
    (count,) = _U32.unpack_from(data, pos)
    pos += 4
    out = []
    for _ in range(count):
        pos = aligned(pos, 4)
        (size,) = _U32.unpack_from(data, pos)
        out.append(data[pos + 4:pos + 4 + size - 1].decode())
        pos += 4 + size
    return out, pos


def sequence_count(data: bytes) -> int | None:
    """The length of the leading sequence of little-endian CDR bytes (a TFMessage's number of transforms), read
    without decoding anything else; None for big-endian or too short bytes."""
    if len(data) < 8 or data[1] != 1:
        return None
    return _U32.unpack_from(data, 4)[0]


def frame_name(frame_id: str) -> str:
    """A TF frame id without the leading '/' that ROS 1 style publishers add (tf2 ignores it too)."""
    return frame_id[1:] if frame_id.startswith("/") else frame_id


class DecodedTFMessage(WireMessage):
    """A TFMessage decoded from its bytes into what the node's TF input reads every tick: ``parents`` and ``children``
    (the TF names of each transform's header.frame_id and child_frame_id: :func:`frame_name`), ``stamps`` (sec,
    nanosec of each transform, flat: transform k's at 2k, 2k + 1) and ``values`` ([n, 7] float64 array of its own:
    translation (x, y, z) m, rotation (x, y, z, w)); ``frames``: the (frame_id, child_frame_id) as sent. The rosbags
    ``geometry_msgs/TransformStamped`` objects (``transforms``) are built from them on first access (a copy to another
    bag writes the bytes as they are and reads neither)."""

    __slots__ = ("frames", "parents", "children", "stamps", "values", "_types", "_transforms")

    def __init__(self, cls: type, cdr: bytes, layout: _TFLayout, stamps: tuple[int, ...], values: np.ndarray,
                 types: tuple[type, ...]):
        super().__init__(cls, cdr, {}, {})
        self.frames, self.parents, self.children = layout.frames, layout.parents, layout.children
        self.stamps, self.values, self._types, self._transforms = stamps, values, types, None

    def stamps_ns(self) -> list[int]:
        """The header stamp (ns) of each transform."""
        stamps = self.stamps
        return [sec * NS_PER_S + nanosec for sec, nanosec in zip(stamps[0::2], stamps[1::2])]

    @property
    def transforms(self) -> list[Any]:
        """The rosbags ``geometry_msgs/TransformStamped`` of every transform (built once)."""
        if self._transforms is None:
            stamped, header, time, transform, vector3, quaternion = self._types
            stamps = self.stamps
            self._transforms = [stamped(header(time(stamps[2 * k], stamps[2 * k + 1]), frame_id), child,
                                        transform(vector3(*row[:3]), quaternion(*row[3:])))
                                for k, ((frame_id, child), row) in enumerate(zip(self.frames, self.values.tolist()))]
        return self._transforms

    @property
    def message(self) -> Any:
        """The rosbags TFMessage object (built on first use)."""
        if self._message is None:
            self._message = self._cls(self.transforms)
        return self._message


class _TFLayout(NamedTuple):
    """Where the fields of a TFMessage's bytes lie, for the next message of as many transforms whose frame ids agree
    (a publisher repeats its frames): count: the number of transforms; heads: (byte offset, bytes) of each
    transform's frame ids (their lengths, the strings and the padding between), which fix every other offset;
    frames: the decoded frame ids; parents, children: their TF names (:func:`frame_name`); stamps: reads every
    (sec, nanosec) in one call; index: [count, 7] positions of the float64 values in the float64 view of the bytes
    from byte 4 (CDR aligns them there); end: the byte after the last value; sec_at: [count, 4] byte offsets of
    each transform's stamp sec, nanosec_at those of its nanosec; columns: the byte offsets that fix the layout (the
    encapsulation header, the count and the heads: messages of one size that agree there share it)."""

    count: int
    heads: tuple[tuple[int, bytes], ...]
    frames: tuple[tuple[str, str], ...]
    parents: tuple[str, ...]
    children: tuple[str, ...]
    stamps: struct.Struct
    index: np.ndarray
    end: int
    sec_at: np.ndarray
    nanosec_at: np.ndarray
    columns: np.ndarray


TF_LAYOUTS_KEPT = 4
"""The most :class:`_TFLayout` s a :class:`TFMessageDecoder` keeps: those of the latest messages of different frames
(several publishers share ``/tf``)."""


class TFMessageDecoder(_LittleEndianDecoder):
    """Decodes TFMessage CDR bytes into a :class:`DecodedTFMessage`; raises ValueError for bytes that end early. The
    :class:`_TFLayout` of a recent message (the latest :data:`TF_LAYOUTS_KEPT` of different frames, most recent
    first) is reused when the bytes agree with it: equal count, equal frame bytes."""

    type_name = TF_MESSAGE

    def __init__(self):
        self._cls = message_class(TF_MESSAGE)
        self._types = tuple(message_class(name) for name in (
            "geometry_msgs/msg/TransformStamped", "std_msgs/msg/Header", "builtin_interfaces/msg/Time",
            "geometry_msgs/msg/Transform", "geometry_msgs/msg/Vector3", "geometry_msgs/msg/Quaternion"))
        self._layouts: list[_TFLayout] = []

    def _decode(self, data: bytes) -> DecodedTFMessage:
        layout = self._layout_of(data)
        values = np.frombuffer(data, _F64, (layout.end - 4) // 8, 4)[layout.index]
        return DecodedTFMessage(self._cls, data, layout, layout.stamps.unpack_from(data), values, self._types)

    def _layout_of(self, data: bytes) -> _TFLayout:
        """The layout of ``data``: a kept one when the bytes agree with it (moved to the front), else walked (and
        kept)."""
        (count,) = _U32.unpack_from(data, 4)
        size = len(data)
        layouts = self._layouts
        for i, layout in enumerate(layouts):
            if layout.count == count and size >= layout.end and all(data.startswith(head, at)
                                                                    for at, head in layout.heads):
                if i:
                    layouts.insert(0, layouts.pop(i))
                break
        else:
            layout = self._walk(data, count)
            self._layouts = [layout, *layouts[:TF_LAYOUTS_KEPT - 1]]
        return layout

    def decode_block(self, datas: list[bytes]) -> list[TFRow | None]:
        """A :class:`TFRow` of each message of ``datas`` (CDR, every one of the same size) that agrees with the first
        one's little-endian layout, None for the others (decode those one by one); ValueError when the first ends
        early (as :meth:`decode`)."""
        block = self.decode_arrays(datas)
        if block is None:
            return [None] * len(datas)
        parents, children = block.parents, block.children
        return [TFRow(s, parents, children, v, n if fin else None) if good else None
                for good, s, v, n, fin in zip(block.agree.tolist(), block.stamps_ns.tolist(), block.values,
                                              block.norms.tolist(), block.finite.tolist())]

    def decode_arrays(self, datas: list[bytes]) -> TFArrays | None:
        """The messages ``datas`` (CDR, every one of the same size) as arrays, in the first one's little-endian layout
        (None for big-endian or too short bytes): the rows of :meth:`decode_block` are those of the messages that
        agree with it; ValueError when the first ends early (as :meth:`decode`)."""
        layout = _block_layout(self, datas)
        if layout is None:
            return None
        blob, block = block_bytes(datas)
        ok = agreeing(block, layout.columns)
        values = np.ascontiguousarray(_rows(blob, len(datas[0]), len(datas), 4, (layout.end - 4) // 8)[:, layout.index])
        finite = within_float32(values).all(axis=(1, 2))
        # norms of the finite rows of this layout only: the bytes of another layout read as its values may be any
        # double, and a huge one overflows when squared (zeros in the other rows, in the same strides: same bits)
        quats = np.where((ok & finite)[:, None, None], values, 0.0)[:, :, 3:]
        return TFArrays(ok, _stamps_ns(block[:, layout.sec_at], block[:, layout.nanosec_at]), layout.parents,
                        layout.children, values, finite, np.sqrt(np.vecdot(quats, quats)))

    @staticmethod
    def _walk(data: bytes, count: int) -> _TFLayout:
        """The :class:`_TFLayout` of ``data`` (``count`` transforms) read field by field."""
        pos = 8
        heads, frames, stamp_at, value_at = [], [], [], []
        for _ in range(count):
            pos = aligned(pos, 4)
            stamp_at.append(pos)
            head = pos + 8
            (size,) = _U32.unpack_from(data, head)
            frame_id = data[head + 4:head + 4 + size - 1].decode()
            pos = aligned(head + 4 + size, 4)
            (size,) = _U32.unpack_from(data, pos)
            child = data[pos + 4:pos + 4 + size - 1].decode()
            pos += 4 + size
            heads.append((head, data[head:pos]))
            frames.append((frame_id, child))
            pos = aligned(pos, 8)
            value_at.append(pos)
            pos += 56
        if pos > len(data):
            raise struct.error(f"the values of transform {count - 1} end at byte {pos}")
        gaps = "".join(f"{at - end}xiI" for at, end in zip(stamp_at, [0] + [at + 8 for at in stamp_at]))
        index = (np.array(value_at, dtype=np.intp)[:, None] - 4) // 8 + np.arange(7)
        sec_at = (np.array(stamp_at, dtype=np.intp)[:, None] + np.arange(4)).reshape(-1, 4)
        columns = _spans(((0, 8), *((at, at + len(head)) for at, head in heads)))
        return _TFLayout(count, tuple(heads), tuple(frames), tuple(frame_name(parent) for parent, _ in frames),
                         tuple(frame_name(child) for _, child in frames), struct.Struct("<" + gaps), index, pos,
                         sec_at, sec_at + 4, columns)
