"""Per-sensor message encoders of the node: a sensor's latest evaluation → its messages and its rviz markers.

One encoder per configured sensor, built once after the suite (static layout data is validated, encoded and
serialised into a :class:`~tactile_sim.io.cdr_template.CdrTemplate` then, together with the host arrays and byte
ranges each value is copied from and to); each evaluation copies only the stamp, the values and the flags into the
template's bytes and returns them as a :class:`~tactile_sim.io.wire_message.WireMessage`, whose changing fields
read back from those bytes. Sensor type → encoder class is the table :data:`ENCODERS`:

| sensor type | topic ``~/<name>`` (and ``~/<name>/ground_truth``) | markers |
|---|---|---|
| ContactProbe, ContactDepthProbe, KinematicTaxel, ElastomerTaxel, ProximityTaxel, SurfaceDistanceProbe | ``tactile_sim_msgs/TaxelArray`` (channels: :data:`TAXEL_CHANNELS_OF`) | SPHERE_LIST coloured by magnitude; force arrows |
| TemperatureGrid | ``tactile_sim_msgs/ThermalGrid`` | CUBE_LIST on the sensor's temperature range |
| JointTorque | ``sensor_msgs/JointState`` (names, effort) | none |
| ContactSensor | ``tactile_sim_msgs/LinkContact`` per body, and ``geometry_msgs/WrenchStamped`` on ``~/<name>/<body>/wrench`` | force arrow per body |

Build the encoders with :func:`node_encoders`: every template of the node lives in one :class:`TemplateMemory`,
which writes an update's stamp into all of them at once. ContactSensor has no imperfection pipeline (its reading
is its ground truth), so it has no ground_truth topic. Every other sensor's values are its rows of its batch's
whole read (the measured branch's latest delayed read or its ground truth; one host array per batch, branch and
update — a view of the buffer on a CPU device, made once per buffer (:class:`HostRows`), one device-to-host copy
otherwise), copied into all the batch's templates by one indexed copy per wire dtype and one for the valid flags
(:class:`BranchCopy`, once per update: :class:`BatchReads`); a ContactSensor reads host arrays of its batch's live
buffers (:class:`HostGather`). Colour scales are fixed per sensor (:func:`taxel_colour_scale`); a sensor with
``history_length`` > 0 publishes the newest entry of its history (the batch's latest delayed read).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
import torch

from ..io.cdr_template import CdrTemplate
from ..io.encode import (
    JOINT_STATE,
    LINK_CONTACT,
    TAXEL_ARRAY,
    THERMAL_GRID,
    WRENCH_STAMPED,
    decode_link_contact,
    decode_taxel_array,
    decode_thermal_grid,
    encode_joint_torque,
    encode_link_contact,
    encode_taxel_array,
    encode_thermal_grid,
    encode_wrench_stamped,
)
from ..io.markers import default_sphere_diameter, link_contact_markers, taxel_markers, thermal_markers
from ..io.readings import (
    TAXEL_CHANNELS,
    AirTimes,
    JointTorqueReading,
    LinkContactReading,
    TaxelReading,
    ThermalReading,
)
from .profile_encoders import link_groups, profile_encoders

KeptTemplates = dict[tuple[str, int | str], Any]
"""What the encoders of one env of a suite built, for the encoders of its other envs: templates by (sensor name,
template number), copied (:meth:`SensorEncoder.template`), and values of a sensor's fixed layout by (sensor name,
value name), shared (:meth:`SensorEncoder.shared`)."""

Output = tuple[str, Any]
"""(topic relative to the node, e.g. ``~/pad``; :class:`~tactile_sim.io.wire_message.WireMessage`: the CDR bytes
publishers and bags send as they are, with the fields readable as on the rosbags message object)."""

TAXEL_CHANNELS_OF: dict[str, dict[str, tuple[int, int]]] = {
    "ContactProbe": {"contact": (0, 1)},
    "ContactDepthProbe": {"depth": (0, 1)},
    "KinematicTaxel": {"force": (0, 3), "torque": (3, 6)},
    "ProximityTaxel": {"force": (0, 3), "torque": (3, 6)},
    "ElastomerTaxel": {"displacement": (0, 3)},
    "SurfaceDistanceProbe": {"distance": (0, 1), "nearest_points": (1, 4)},
}
"""Taxel sensor type → its TaxelArray channels → their columns [first, end) of the batch's branch value
[E, P, K] (the batch's ``output`` of them: force/torque split, SurfaceDistanceProbe's distance and nearest
points)."""

CONTACT_ON = 0.5
"""ContactProbe: a taxel reads contact where its branch value (latch state 0 / 1) is above this
(``ContactProbeBatch.output``)."""


@dataclass(frozen=True)
class MarkerSettings:
    """Marker options of the node: force_arrows (per-taxel arrows), max_force N (taxel force colour scale),
    max_link_force N (ContactSensor arrows), max_displacement m (ElastomerTaxel colour scale)."""

    force_arrows: bool = True
    max_force: float = 1.0
    max_link_force: float = 10.0
    max_displacement: float = 5e-4


class HostRows:
    """Env ``env`` of tensors read on every update (a branch's reads; ``slice(None)``: every env), as flat host
    arrays: on a CPU device a view of the tensor's memory, made once for a tensor that comes back (a ring slot, a
    shared mask: the same object over the same memory) and kept while it does; on other devices a host copy of
    that env on each call."""

    LIMIT = 64
    """Tensors kept at most; the cache is emptied when full (so that reads that are fresh tensors do not pile up)."""

    def __init__(self, env: int | slice = 0):
        self.env = env
        self._views: dict[int, tuple[torch.Tensor, int, np.ndarray]] = {}

    def __call__(self, tensor: torch.Tensor) -> np.ndarray:
        """Env :attr:`env` of ``tensor`` [E, ...] flattened (host array; a view is valid while the tensor's buffer
        is)."""
        kept = self._views.get(id(tensor))
        if kept is not None and kept[1] == tensor.data_ptr():
            return kept[2]
        if not tensor.is_cpu:
            return tensor[self.env].cpu().numpy().reshape(-1)
        row = tensor.numpy()[self.env]
        if not row.flags.c_contiguous:  # flattening copies: a copy holds this read only
            return row.reshape(-1)
        if len(self._views) >= self.LIMIT:
            self._views.clear()
        flat = row.reshape(-1)
        self._views[id(tensor)] = (tensor, tensor.data_ptr(), flat)  # the reference keeps id(tensor) unique
        return flat


def _storage_indices(tensor: torch.Tensor) -> np.ndarray:
    """Indices of ``tensor``'s elements (row-major order) in its storage, as elements of its dtype."""
    index = np.full((1,) * tensor.dim(), tensor.storage_offset(), dtype=np.intp)
    for d, (n, stride) in enumerate(zip(tensor.shape, tensor.stride())):
        index = index + (np.arange(n) * stride).reshape((1,) * d + (n,) + (1,) * (tensor.dim() - d - 1))
    return index.reshape(-1)


class HostGather:
    """Copies of tensors that keep their memory and are overwritten in place (a batch's live buffers or views of
    them) into template fields, one indexed copy per storage and destination view: each tensor's elements are
    located in its storage (offset and strides), and a storage is read through a host array of all of it — a view
    on the CPU, made once; on other devices a host copy, refreshed by :meth:`write`. Add every copy
    (:meth:`add`) and every tensor read otherwise (:meth:`source`) before the first :meth:`write`. One gather may
    serve the encoders of every env of a batch (:func:`node_encoders`): it writes once per update."""

    def __init__(self):
        self._storages: dict[tuple[int, torch.dtype], tuple[np.ndarray, torch.Tensor | None, torch.Tensor]] = {}
        self._copies: dict[tuple[int, torch.dtype, int, float | None], tuple[np.ndarray, np.ndarray, list, list]] = {}
        self._groups: list[tuple[Places, np.ndarray, np.ndarray | slice, float | None]] | None = None
        self._refresh: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.written: BatchReads | None = None
        """The update written last (where :meth:`write` was given one)."""

    def source(self, tensor: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        """(host array of ``tensor``'s storage, indices of its elements in it): its values are ``array[indices]``
        after each :meth:`write`."""
        storage = tensor.untyped_storage()
        key = (storage.data_ptr(), tensor.dtype)
        if key not in self._storages:
            flat = torch.empty(0, dtype=tensor.dtype, device=tensor.device).set_(
                storage, 0, (storage.nbytes() // tensor.element_size(),))
            host = flat if tensor.is_cpu else torch.empty(flat.shape, dtype=flat.dtype, device="cpu")
            self._storages[key] = (host.numpy(), None if tensor.is_cpu else host, flat)
        return self._storages[key][0], _storage_indices(tensor)

    def add(self, tensor: torch.Tensor, view: np.ndarray, at: np.ndarray, above: float | None = None) -> None:
        """Copy ``tensor``'s values (cast to the view's dtype; with ``above``, whether each is greater than it) to
        ``view[at]`` on each :meth:`write`."""
        if tensor.numel() != at.size:
            raise ValueError(f"HostGather.add: {tensor.numel()} values for {at.size} places")
        array, index = self.source(tensor)
        storage = tensor.untyped_storage()
        _, _, src, dst = self._copies.setdefault((storage.data_ptr(), tensor.dtype, id(view), above),
                                                 (array, view, [], []))
        src.append(index)
        dst.append(at)

    def write(self, reads: BatchReads | None = None) -> None:
        """Copy the device storages to the host (nothing to do on the CPU), then the values to their places: once per
        update ``reads`` where given, else on every call."""
        if reads is not None:
            if self.written is reads:
                return
            self.written = reads
        if self._groups is None:
            self._groups = [(Places(view, run_index(np.concatenate(dst))), array, run_index(np.concatenate(src)), above)
                            for (_, _, _, above), (array, view, src, dst) in self._copies.items()]
            self._refresh = [(host, flat) for _, host, flat in self._storages.values() if host is not None]
        for host, flat in self._refresh:
            host.copy_(flat)
        for places, array, src, above in self._groups:
            places.put(array[src] if above is None else np.greater(array[src], above))


class BatchReads:
    """One update of the encoders: a :class:`BranchCopy` or :class:`HostGather` written for it is not written again
    (a new one per update, shared by the envs that publish it)."""

    __slots__ = ()


class Writer(Protocol):
    """What writes one update's values into templates: ``write(reads)`` (:class:`BranchCopy`, :class:`HostGather`)."""

    def write(self, reads: BatchReads) -> None: ...


def run_index(index: np.ndarray) -> np.ndarray | slice:
    """A numpy index equal to the integer array ``index``: the slice when it is one increasing run (cheaper)."""
    first = int(index[0]) if index.size else 0
    if np.array_equal(index, np.arange(first, first + index.size)):
        return slice(first, first + index.size)
    return index


def grid_of(index: np.ndarray) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
    """(offset, shape, steps) with ``index`` (a 1-D integer array) equal to ``offset + Σ_d i_d · steps[d]`` over the
    C-order grid of ``shape`` (innermost step 1), or None when it is no such grid: runs of consecutive elements
    repeated with constant steps at every level, e.g. the same fields of one template per row of a
    :class:`TemplateMemory`."""
    places = rest = np.asarray(index, np.int64).reshape(-1)
    if not rest.size:
        return None
    offset = int(rest[0])
    shape: list[int] = []
    steps: list[int] = []
    rest = rest - offset
    while rest.size > 1:
        step = int(rest[1] - rest[0])
        same = np.diff(rest) == step
        n = rest.size if same.all() else int(np.argmin(same)) + 1
        if step <= 0 or rest.size % n or (not steps and step != 1):
            return None
        blocks = rest.reshape(-1, n)
        if not np.array_equal(blocks - blocks[:, :1], np.broadcast_to(blocks[0], blocks.shape)):
            return None
        shape.insert(0, n)
        steps.insert(0, step)
        rest = blocks[:, 0]
    increasing = bool((np.diff(places) > 0).all())  # each place once: sure where increasing, else counted
    if not increasing and np.unique(places).size != places.size:
        return None
    if not shape:
        shape, steps = [1], [1]
    return offset, tuple(shape), tuple(steps)


GRID_PLACES = 256
"""Fewest places that :class:`Places` writes through a strided view (a grid, or the fields of rows): below, the
indexed copy costs less than the strided one's fixed cost (about 0.5 µs)."""

FIELD_PLACES = 512
"""Fewest places per field (over all rows, on average) that :class:`Places` writes as fields of rows: a structured
copy costs about 0.5 µs per field (setting it up) and some 20 ns per field and row more than the data, the indexed
one about 1.5 ns per place."""


class Places:
    """Where values go in a host array ``view`` (``view[index]``, index an integer array or a slice), written by
    :meth:`put`: through a strided view of those places where they form a grid of runs (:func:`grid_of`: a block
    copy per run instead of an element-wise indexed one); else, where ``index`` is ``rows`` equal parts, each the
    places of the first moved by the same step (rows of a :class:`TemplateMemory`), whose runs (fields) do not
    overlap and hold :data:`FIELD_PLACES` places on average over all rows, through a structured view of the rows
    (one copy, a block per field and row; :meth:`_fields`); else by the index. Only :data:`GRID_PLACES` places or more are
    written through views."""

    def __init__(self, view: np.ndarray, index: np.ndarray | slice, rows: int = 1):
        self.view, self.index = view, index
        self.target: np.ndarray | None = view[index] if isinstance(index, slice) else None
        self.fields: tuple[np.ndarray, np.dtype] | None = None
        """(structured view of the rows, the values of a row as that structure, packed), where written by fields."""
        grid = None if self.target is not None or len(index) < GRID_PLACES else grid_of(index)
        if grid is not None:
            self.target = self._strided(*grid)
        elif self.target is None and len(index) >= GRID_PLACES:
            self.fields = self._fields(np.asarray(index, np.int64), rows)

    def _fields(self, index: np.ndarray, rows: int) -> tuple[np.ndarray, np.dtype] | None:
        """The places ``index`` as fields of ``rows`` rows (class docstring), or None where they are not."""
        if index.size % rows:
            return None
        parts = index.reshape(rows, -1)
        first = parts[0]
        step = int(parts[1, 0] - first[0]) if rows > 1 else 0
        span = int(first[-1] - first[0]) + 1
        if not (np.diff(first) > 0).all() or (rows > 1 and step < span) \
                or not (parts - first == np.arange(rows)[:, None] * step).all():
            return None
        ends = np.flatnonzero(np.diff(first) != 1).tolist() + [first.size - 1]
        starts = [0] + [end + 1 for end in ends[:-1]]
        if index.size < FIELD_PLACES * len(starts):
            return None
        size, base = self.view.itemsize, int(first[0])
        names = [f"f{k}" for k in range(len(starts))]
        formats = [(self.view.dtype, (end + 1 - start,)) for start, end in zip(starts, ends)]
        row = np.dtype({"names": names, "formats": formats, "itemsize": span * size,
                        "offsets": [int(first[start] - base) * size for start in starts]})
        target = np.ndarray((rows,), row, buffer=self.view, offset=base * size, strides=(max(step, span) * size,))
        return target, np.dtype({"names": names, "formats": formats})

    def _strided(self, offset: int, shape: tuple[int, ...], steps: tuple[int, ...]) -> np.ndarray:
        """The places of a grid (:func:`grid_of`) as a writeable strided view of :attr:`view`."""
        return np.lib.stride_tricks.as_strided(self.view[offset:], shape, [s * self.view.itemsize for s in steps],
                                               writeable=True)

    def put(self, values: np.ndarray) -> None:
        """``view[index] = values`` (values 1-D, one per place, in index order; cast to the view's dtype as numpy's
        assignment casts)."""
        if self.target is not None:
            self.target[...] = values.reshape(self.target.shape)
        elif self.fields is not None:
            target, row = self.fields
            target[...] = np.ascontiguousarray(values, self.view.dtype).view(row)
        elif values.dtype != self.view.dtype:  # casting first, then the indexed copy: about half the cost
            self.view[self.index] = values.astype(self.view.dtype)
        else:
            self.view[self.index] = values


class TemplateMemory:
    """The templates of the encoders of one or more envs in one buffer (:attr:`memory`): a row per env (:attr:`rows`,
    uint8 [R, row bytes], a multiple of 8), each row the same layout of its env's templates (the rows' template
    lists of equal sizes, in the same order). Each template starts 4 bytes past a multiple of 8, where its CDR
    fields (aligned from its byte 4 on) are aligned in memory, after ``head`` bytes of room for a record head (a bag
    writer's, :meth:`head_start`) or more. An update's stamp (every template's first field, so one aligned 8-byte
    word) goes into all templates of a row (or every row) with one indexed copy of words (:meth:`write_stamp`), and
    the values of a field are elements of a typed view of the buffer (:meth:`elements`)."""

    def __init__(self, rows: list[list[CdrTemplate]], head: int = 0):
        sizes = [len(t.buffer) for t in rows[0]]
        if any([len(t.buffer) for t in row] != sizes for row in rows):
            raise ValueError("TemplateMemory: every row needs templates of the same sizes in the same order")
        starts, end = [], 0
        for n in sizes:
            start = end + head + (4 - end - head) % 8
            starts.append(start)
            end = start + n
        self.head = head
        self.row_bytes = -(-end // 8) * 8
        self.memory = bytearray(self.row_bytes * len(rows))
        self.rows = np.frombuffer(self.memory, np.uint8).reshape(len(rows), self.row_bytes)
        memory = memoryview(self.memory)
        self._start: dict[int, int] = {}
        for r, row in enumerate(rows):
            for t, start in zip(row, starts):
                at = r * self.row_bytes + int(start)
                t.move_to(memory[at:at + len(t.buffer)])
                self._start[id(t)] = at
        self._views: dict[tuple[np.dtype, int], np.ndarray] = {}
        stamps = [self.elements(t, "header.stamp")[1] for t in rows[0]]  # row 0: bytes of the row (mixed types)
        if any(not np.array_equal(at, at[0] + np.arange(8)) or at[0] % 8 for at in stamps):
            raise ValueError("TemplateMemory: every template needs header.stamp as its first field")
        self._stamp_words = run_index(np.array([at[0] // 8 for at in stamps], np.intp))
        """Where each template's stamp is in a row of :attr:`_words`."""
        self._words = self.rows.view("<u8")
        """The rows as little-endian uint64 words [R, row bytes / 8]."""

    def view(self, dtype: Any, offset: int) -> np.ndarray:
        """The buffer as elements of ``dtype`` from byte ``offset`` on (one array per dtype and offset)."""
        dtype = np.dtype(dtype)
        key = (dtype, offset)
        if key not in self._views:
            count = (len(self.memory) - offset) // dtype.itemsize
            self._views[key] = np.frombuffer(self.memory, dtype, count=count, offset=offset)
        return self._views[key]

    def elements(self, template: CdrTemplate, field: str) -> tuple[np.ndarray, np.ndarray]:
        """(view, indices): ``field``'s values of ``template`` (one of this memory's) are ``view[indices]``; the
        view is of the buffer as elements of the field's dtype (n bytes), from the offset (0 to n − 1) that puts
        the values on elements."""
        values = template.view(field)
        first, size = self._start[id(template)] + template.span(field).start, values.dtype.itemsize
        return self.view(values.dtype, first % size), np.arange(first // size, first // size + values.size)

    def head_start(self, template: CdrTemplate) -> int:
        """Where the room for ``template``'s record head starts in its row (bytes; the template follows it)."""
        return self._start[id(template)] % self.row_bytes - self.head

    def write_stamp(self, stamp: Any, env: int | None = None) -> None:
        """Write ``stamp`` (builtin_interfaces/Time) into every template's ``header.stamp`` (of row ``env`` only,
        where given)."""
        self.write_stamps(stamp_word(stamp.sec, stamp.nanosec), slice(None) if env is None else env)

    def write_stamps(self, words: int | np.ndarray, rows: int | slice = slice(None)) -> None:
        """Write stamps (:func:`stamp_word`: one for all ``rows``, or uint64 [R], one per row of ``rows``) into the
        ``header.stamp`` of every template of those rows."""
        self._words[rows, self._stamp_words] = words if np.ndim(words) == 0 else words[:, None]


def stamp_word(sec: Any, nanosec: Any) -> Any:
    """The CDR bytes of a ``builtin_interfaces/Time`` (int32 sec, uint32 nanosec, little endian) as one little-endian
    uint64 (of ints; of int64 arrays, elementwise)."""
    return sec & 0xFFFFFFFF | nanosec << 32


class SensorEncoder:
    """Base of the encoders. suite: the built suite; batch / index: the sensor's batch and its position in it;
    world_frame: the node's world frame; env: the env of the suite whose readings are encoded (0 for the node's
    unbatched suite); kept: :data:`KeptTemplates` shared by the encoders of the suite's envs (None: the encoder's
    own)."""

    message_type: ClassVar[str] = ""
    has_ground_truth: ClassVar[bool] = True
    templates: list[CdrTemplate]
    """Every template of the encoder (:func:`node_encoders` moves them into its :class:`TemplateMemory`)."""
    gathers: tuple[HostGather, HostGather]
    """Copies from the batch's live buffers, per branch (measured, ground truth): shared by the batch's encoders of
    every env, given by :func:`node_encoders` before :meth:`place`."""

    def __init__(self, suite, batch, index: int, world_frame: str, env: int = 0,
                 kept: KeptTemplates | None = None):
        self.suite, self.batch, self.index, self.env = suite, batch, index, env
        self._kept: KeptTemplates = {} if kept is None else kept
        self.name = batch.names[index]
        self.sensor_type = batch.sensor_type
        self.options = batch.options[index]
        self.world_frame = world_frame
        self.topic = f"~/{self.name}"
        self.ground_truth_topic = f"{self.topic}/ground_truth"
        self.last: list[Output] = []
        """The (topic, message) outputs of the latest measured evaluation (empty before it)."""

    def template(self, number: int, message: Callable[[], Any], changing: Sequence[str],
                 like: CdrTemplate | None = None) -> CdrTemplate:
        """Template ``number`` of this encoder: of the message ``message()`` with the fields ``changing`` (a copy of
        ``like``, with bytes of its own, where given: a template of that message and those fields whose bytes are
        still the message's but for fields of ``changing``), or a copy of the one the encoder of another env built
        (taken before any update, so its bytes are the message's; it gets bytes of its own in
        :class:`TemplateMemory`), the message then not built."""
        key = (self.name, number)
        if key in self._kept:
            return copy.copy(self._kept[key])
        if like is None:
            template = CdrTemplate(message(), changing)
        else:
            template = copy.copy(like)
            template.move_to(memoryview(bytearray(len(like.buffer))))
        self._kept[key] = template
        return template

    def shared(self, name: str, make: Callable[[], Any]) -> Any:
        """``make()``, a value of the sensor's fixed layout (never modified), or the one the encoder of another env
        made under ``name``."""
        key = (self.name, name)
        if key not in self._kept:
            self._kept[key] = make()
        return self._kept[key]

    def topics(self, ground_truth: bool) -> list[tuple[str, str]]:
        """(topic, message type) of every topic this sensor publishes on; ground_truth adds the GT topics."""
        out = [(self.topic, self.message_type)]
        if ground_truth and self.has_ground_truth:
            out.append((self.ground_truth_topic, self.message_type))
        return out

    def place(self, memory: TemplateMemory) -> None:
        """Take views of the templates once they live in ``memory``, add the copies of :attr:`gathers` (nothing to
        do here)."""

    def forget(self) -> None:
        """Forget the kept messages, as right after construction (no markers until the next encode)."""
        self.last = []

    def writers(self, ground_truth: bool) -> tuple[Writer, ...]:
        """What writes an update's values of one branch into the templates (writers shared by several encoders, or
        envs, are the same objects)."""
        raise NotImplementedError

    def records(self, ground_truth: bool) -> list[tuple[str, CdrTemplate]]:
        """(topic, template) of each message of one evaluation of one branch, in publishing order."""
        raise NotImplementedError

    @property
    def templated(self) -> bool:
        """True when :meth:`encode` returns exactly the messages of :meth:`records`' templates."""
        return True

    def link(self) -> None:
        """Fix :meth:`writers` and :meth:`records` of both branches for :meth:`encode` (once every template is placed
        and shared writers are given)."""
        self.parts = tuple((self.writers(gt), self.records(gt)) for gt in (False, True))

    def encode(self, reads: BatchReads, ground_truth: bool) -> list[Output]:
        """Messages of the latest evaluation of one branch (the update's stamp is in the templates already): its
        writers write, then :meth:`messages`."""
        for w in self.parts[ground_truth][0]:
            w.write(reads)
        return self.messages(ground_truth)

    def messages(self, ground_truth: bool) -> list[Output]:
        """The messages of one branch once its writers wrote this update: the records' templates taken; the
        measured ones are kept for :meth:`markers`."""
        out = []
        for topic, template in self.parts[ground_truth][1]:
            out.append((topic, template.wire()))
        if not ground_truth:
            self.last = out
        return out

    def markers(self, settings: MarkerSettings) -> list[Any]:
        """rviz markers of the last measured messages (empty before the first one)."""
        return []


class BranchEncoder(SensorEncoder):
    """A sensor whose message is its rows of its batch's branch read plus fixed layout data: one template per
    branch (measured, ground truth), written with the batch's other sensors by the batch's :class:`BranchCopy`
    pair (:func:`node_encoders` links them). Subclasses call :meth:`setup`."""

    def setup(self, message: Callable[[], Any], changing: tuple[str, ...],
              columns: list[tuple[str, int, int, float | None]]) -> None:
        """Templates of the message ``message()`` (its ``ground_truth`` flag, when it has one, set per branch) with
        the fields ``changing`` (``header.stamp`` among them); ``columns``: (field, first and end column of the
        branch value, ``np.greater`` threshold or None) of the values copied from the read."""
        self.rows = self.batch.branch.slices[self.index]
        self.columns = columns
        self.templates: list[CdrTemplate] = []
        for ground_truth in (False, True):  # the ground truth's a copy of the measured (locating fields costs ms)
            template = self.template(ground_truth, message, changing, self.templates[0] if ground_truth else None)
            if template.changes("ground_truth"):
                template.view("ground_truth")[0] = ground_truth
            self.templates.append(template)
        self.copies: tuple[BranchCopy, BranchCopy] | None = None

    def writers(self, ground_truth):
        return (self.copies[ground_truth],)

    def records(self, ground_truth):
        return [(self.ground_truth_topic if ground_truth else self.topic, self.templates[ground_truth])]


class BranchCopy:
    """One update's read of one branch (measured or ground truth) of a batch written into its encoders' templates
    (in a :class:`TemplateMemory`; the encoders of one env or of several envs of the suite): the values with one
    indexed copy per typed view out of the read and, into the templates, block copies where the places form grids
    or the fields of the memory's rows (:class:`Places`: the values env by env, each env's fields in the same
    order), the sensors' valid flags with one indexed copy."""

    def __init__(self, batch: Any, encoders: list[BranchEncoder], ground_truth: bool, memory: TemplateMemory):
        self.batch, self.ground_truth = batch, ground_truth
        k = batch.branch.channels
        groups: dict[tuple[int, float | None], tuple[np.ndarray, list]] = {}
        flags: tuple[list, list] = ([], [])
        sources: dict[tuple[int, int, int], np.ndarray] = {}  # (sensor, columns) → its indices in an env's values
        for e in sorted(encoders, key=lambda e: e.env):  # each env's sensors in the same order
            t = e.templates[ground_truth]
            for field, first, end, threshold in e.columns:
                view, at = memory.elements(t, field)
                _, entries = groups.setdefault((id(view), threshold), (view, []))
                src = sources.get((e.index, first, end))
                if src is None:  # the same for the sensor's encoder of every env (read only)
                    probes = np.arange(e.rows.start, e.rows.stop)
                    src = sources[e.index, first, end] = (probes[:, None] * k + np.arange(first, end)).reshape(-1)
                entries.append((e.env, src, at))
            if t.changes("valid"):
                flags_view, at = memory.elements(t, "valid")
                flags[0].append((e.env, np.array([e.index])))
                flags[1].append(at)
        envs = self._envs = sorted({e.env for e in encoders})
        self.host = HostRows(envs[0] if len(envs) == 1 else slice(None))
        """Host arrays of the env's rows of the read, or of all of it (several envs: a source index of env e is
        offset by e × the values of an env)."""
        self._sources = [(threshold, [(env, src) for env, src, _ in entries],
                          run_index(np.concatenate([at for _, _, at in entries])), view)
                         for (_, threshold), (view, entries) in groups.items()]
        """(threshold, (env, source indices), places, view) per group, env by env."""
        self._flag_sources = (flags[0], run_index(np.concatenate(flags[1])), flags_view) if flags[0] else None
        self._several = len(envs) > 1
        self.values: list[tuple[float | None, np.ndarray | slice, Places]] | None = None
        self.flags: tuple[np.ndarray | slice, Places] | None = None
        self.written: BatchReads | None = None
        """The update whose read was written last."""

    def _index(self, sources: list[tuple[int, np.ndarray]], per_env: int) -> np.ndarray | slice:
        """The source indices of (env, indices in the env's values) in the host array (``per_env`` values an env)."""
        return run_index(np.concatenate([env * per_env * self._several + at for env, at in sources]))

    def write(self, reads: BatchReads) -> None:
        """Write this update's read (``MeasuredBranch.read_batch`` / ``read_ground_truth_batch``: value [E, P, K] —
        zeros at filler probes and where invalid — and valid [E, S]; on a CPU device views of the branch's buffers
        that the next evaluation overwrites, so they are copied at once) into the templates, unless written for
        ``reads`` already."""
        if self.written is reads:
            return
        branch = self.batch.branch
        value, valid = branch.read_ground_truth_batch() if self.ground_truth else branch.read_batch()
        if self.values is None:  # the sizes of an env's values are known from the first read on
            self.values = [(threshold, self._index(src, value[0].numel()), Places(view, dst, len(self._envs)))
                           for threshold, src, dst, view in self._sources]
            if self._flag_sources is not None:
                src, dst, view = self._flag_sources
                self.flags = (self._index(src, valid[0].numel()), Places(view, dst))
        value = self.host(value)
        for threshold, src, places in self.values:
            places.put(value[src] if threshold is None else np.greater(value[src], threshold))
        if self.flags is not None:
            src, places = self.flags
            places.put(self.host(valid)[src])
        self.written = reads


def taxel_colour_scale(sensor_type: str, radius: np.ndarray, settings: MarkerSettings) -> tuple[str, float]:
    """(channel, value at the red end) of a taxel sensor's markers: contact 1; depth and distance the largest
    probe radius (m; the distance cap); forces ``settings.max_force`` N; displacement ``settings.max_displacement``
    m."""
    r_max = float(np.max(radius)) if np.max(radius) > 0 else 1.0
    if sensor_type == "ContactProbe":
        return "contact", 1.0
    if sensor_type == "ContactDepthProbe":
        return "depth", r_max
    if sensor_type == "SurfaceDistanceProbe":
        return "distance", r_max
    if sensor_type == "ElastomerTaxel":
        return "displacement", settings.max_displacement
    return "force", settings.max_force


class TaxelEncoder(BranchEncoder):
    """TaxelArray of a probe sensor; the layout (positions, normals, radii, grid rows/cols) lives in the template,
    the channels (:data:`TAXEL_CHANNELS_OF`) come from the batch's read."""

    message_type = TAXEL_ARRAY

    def __init__(self, suite, batch, index, world_frame, env=0, kept=None):
        super().__init__(suite, batch, index, world_frame, env, kept)
        layout = suite.layouts[self.name]
        self.layout = layout
        rows, cols = layout.shape if layout.is_grid else (0, 0)
        columns = TAXEL_CHANNELS_OF[self.sensor_type]

        def message() -> Any:
            channels = {name: np.zeros((layout.n, TAXEL_CHANNELS[name][1]) if TAXEL_CHANNELS[name][1] else layout.n,
                                       dtype=TAXEL_CHANNELS[name][0]) for name in columns}
            return encode_taxel_array(TaxelReading(
                self.name, self.sensor_type, self.options.link, 0.0, rows, cols, layout.positions, layout.normals,
                layout.radius, channels, world_frame_id=world_frame if "nearest_points" in channels else ""))

        self.setup(message, ("header.stamp", *columns, "valid", "ground_truth"),
                   [(name, a, b, CONTACT_ON if name == "contact" else None) for name, (a, b) in columns.items()])
        self.profiles = profile_encoders(self.name, self.sensor_type, self.options.link, layout, self.options.outputs)

    @property
    def sphere_diameter(self) -> float:
        """Diameter (m) of the taxels' marker spheres: made on the first call (runs that draw no markers never make
        it), once for the encoders of every env."""
        return self.shared("sphere_diameter", lambda: default_sphere_diameter(self.layout.flat_positions,
                                                                               self.layout.flat_radius))

    def topics(self, ground_truth):
        return super().topics(ground_truth) + [(p.topic, p.message_type) for p in self.profiles]

    @property
    def templated(self):
        return not self.profiles

    def messages(self, ground_truth):
        out = super().messages(ground_truth)
        if ground_truth or not self.profiles:
            return out
        stamp = self.templates[0].view("header.stamp")
        return out + [o for p in self.profiles for o in p.encode(stamp, out[0][1])]

    def markers(self, settings):
        if not self.last:
            return []
        channel, scale = taxel_colour_scale(self.sensor_type, self.layout.flat_radius, settings)
        return taxel_markers(decode_taxel_array(self.last[0][1]), max_value=scale, sphere_diameter=self.sphere_diameter,
                             channel=channel, force_arrows=settings.force_arrows)


class ThermalEncoder(BranchEncoder):
    """ThermalGrid of a TemperatureGrid: grid geometry in the template; temperatures from the batch's read, the
    lumped bodies' temperatures from the thermal system's live state."""

    message_type = THERMAL_GRID

    def __init__(self, suite, batch, index, world_frame, env=0, kept=None):
        super().__init__(suite, batch, index, world_frame, env, kept)
        self.frame = batch.frame(index)
        names = list(batch.link_temperatures(index))

        def message() -> Any:
            return encode_thermal_grid(ThermalReading(
                self.name, self.frame, 0.0, batch.grid_origin(index), batch.cell_size(index),
                np.zeros(tuple(self.options.grid_size), np.float32), link_names=names,
                link_temperatures=np.zeros(len(names), np.float32)))

        self.setup(message, ("header.stamp", "temperatures", "link_temperatures", "valid", "ground_truth"),
                   [("temperatures", 0, 1, None)])

    def place(self, memory):
        for gather, template in zip(self.gathers, self.templates):  # [E, NL] °C, in link_temperatures order
            gather.add(self.batch.system.t_lump[self.env], *memory.elements(template, "link_temperatures"))

    def writers(self, ground_truth):
        return (self.gathers[ground_truth], *super().writers(ground_truth))

    def markers(self, settings):
        if not self.last:
            return []
        return thermal_markers(decode_thermal_grid(self.last[0][1]),
                               temperature_range=tuple(self.options.debug_temperature_range))


class JointTorqueEncoder(BranchEncoder):
    """sensor_msgs/JointState with the selected joints' torques in ``effort``."""

    message_type = JOINT_STATE

    def __init__(self, suite, batch, index, world_frame, env=0, kept=None):
        super().__init__(suite, batch, index, world_frame, env, kept)
        names = batch.joint_names(index)
        self.setup(lambda: encode_joint_torque(JointTorqueReading(0.0, names, np.zeros(len(names)))),
                   ("header.stamp", "effort"), [("effort", 0, 1, None)])


class ContactSensorEncoder(SensorEncoder):
    """LinkContact per sensor body on ``~/<name>`` and its WrenchStamped on ``~/<name>/<body>/wrench``, gathered
    from the batch's live buffers (``ContactSensorBatch.live_view``, body frames) by the batch's measured
    :class:`HostGather` (:attr:`~SensorEncoder.gathers`), with the valid flags."""

    message_type = LINK_CONTACT
    has_ground_truth = False

    def __init__(self, suite, batch, index, world_frame, env=0, kept=None):
        super().__init__(suite, batch, index, world_frame, env, kept)
        names = suite.scene.body_names
        self.bodies = [names[b] for b in batch.sensor_bodies[index]]
        self.filters = list(batch.filter_names[index])
        o, f = self.options, len(self.filters)
        points = f > 0 and o.track_contact_points
        changing = ["wrench", "normal_force", "friction_force", "force_matrix", "normal_force_matrix",
                    "friction_force_matrix"] + ["contact_positions"] * points + list(AirTimes._fields) * o.track_air_time
        data, evaluations = batch.live_view(index)
        sources = {"wrench[:3]": data.net_forces_b, "wrench[3:]": data.net_torques_b,
                   "normal_force": data.net_normal_forces_b, "friction_force": data.net_friction_forces_b,
                   "force_matrix": data.force_matrix_b, "normal_force_matrix": data.normal_force_matrix_b,
                   "friction_force_matrix": data.friction_force_matrix_b,
                   "contact_positions": data.contact_pos_b if points else None}
        if o.track_air_time:
            sources.update({name: getattr(data, name) for name in AirTimes._fields})
        self.sources = {k: v for k, v in sources.items() if v is not None}  # absent: the template's zeros
        self.evaluations = evaluations
        self.links, self.wrenches = [], []
        zeros = np.zeros(3)
        for k, body in enumerate(self.bodies):
            reading = LinkContactReading(self.name, body, body, 0.0, zeros, zeros, zeros, zeros, self.filters,
                                         np.zeros((f, 3)), np.zeros((f, 3)), np.zeros((f, 3)),
                                         np.zeros((f, 3)) if points else None,
                                         AirTimes(0.0, 0.0, 0.0, 0.0) if o.track_air_time else None, False)
            self.links.append(self.template(2 * k, functools.partial(encode_link_contact, reading),
                                            ["header.stamp", "valid", *changing]))
            self.wrenches.append(self.template(2 * k + 1, functools.partial(encode_wrench_stamped, reading.wrench()),
                                               ("header.stamp", "wrench")))
        self.templates = self.links + self.wrenches

    def place(self, memory):
        gather = self.gathers[False]
        for k, (link, wrench) in enumerate(zip(self.links, self.wrenches)):
            for name, tensor in self.sources.items():
                source = tensor[self.env, k]  # (3,), (F, 3), or () for the timers
                if name.startswith("wrench"):
                    part = slice(0, 3) if name == "wrench[:3]" else slice(3, 6)
                    for template in (link, wrench):
                        view, at = memory.elements(template, "wrench")
                        gather.add(source, view, at[part])
                else:
                    gather.add(source, *memory.elements(link, name))
        # a read is valid once evaluated since the reset
        gather.add(self.evaluations[self.env].expand(len(self.links)), memory.elements(self.links[0], "valid")[0],
                   np.concatenate([memory.elements(link, "valid")[1] for link in self.links]), above=0)

    def wrench_topic(self, body: str) -> str:
        return f"{self.topic}/{body}/wrench"

    def topics(self, ground_truth):
        return [(self.topic, LINK_CONTACT)] + [(self.wrench_topic(b), WRENCH_STAMPED) for b in self.bodies]

    def writers(self, ground_truth):
        return () if ground_truth else (self.gathers[False],)

    def records(self, ground_truth):
        return [] if ground_truth else [r for body, link, wrench in zip(self.bodies, self.links, self.wrenches)
                                        for r in ((self.topic, link), (self.wrench_topic(body), wrench))]

    def markers(self, settings):
        return [m for _, msg in self.last if msg.__msgtype__ == LINK_CONTACT
                for m in link_contact_markers(decode_link_contact(msg), max_force=settings.max_link_force)]


ENCODERS: dict[str, type[SensorEncoder]] = {
    "ContactProbe": TaxelEncoder,
    "ContactDepthProbe": TaxelEncoder,
    "KinematicTaxel": TaxelEncoder,
    "ElastomerTaxel": TaxelEncoder,
    "ProximityTaxel": TaxelEncoder,
    "SurfaceDistanceProbe": TaxelEncoder,
    "TemperatureGrid": ThermalEncoder,
    "JointTorque": JointTorqueEncoder,
    "ContactSensor": ContactSensorEncoder,
}
"""Sensor type (the YAML ``type:``) → encoder class."""


def publishing_order(encoders: list[SensorEncoder], order: dict[str, int], ground_truth: bool) -> list[CdrTemplate]:
    """The templates of ``encoders`` (one env's) in the order their messages go out on a step that evaluates every
    sensor (sensors in ``order``, name → rank; measured then, with ``ground_truth``, ground truth per sensor), then
    the templates of no message of that step."""
    ranked = sorted(encoders, key=lambda e: order[e.name])
    first = [t for e in ranked for gt in (False, True)[:1 + ground_truth] for _, t in e.records(gt)]
    seen = {id(t) for t in first}
    return first + [t for e in ranked for t in e.templates if id(t) not in seen]


def node_encoders(suite, world_frame: str, envs: Sequence[int] = (0,), ground_truth: bool = False,
                  head: int = 0) -> tuple[list[list[tuple[SensorEncoder, int]]], TemplateMemory]:
    """Every sensor's encoder of each env of ``envs`` with its batch's evaluation period (engine steps), in batch
    order (a list per env); their templates moved into one :class:`TemplateMemory` (returned; a row per env, laid out
    by :func:`publishing_order` for ``ground_truth``; ``head``: its room for record heads); the branch encoders of
    each batch, of every env, linked to one :class:`BranchCopy` pair, and every encoder of the batch to one
    :class:`HostGather` pair (:attr:`SensorEncoder.gathers`). The templates of the first env are built, the
    others' copied (building a template costs milliseconds)."""
    kept: KeptTemplates = {}
    built = [[(every, batch, [ENCODERS[batch.sensor_type](suite, batch, i, world_frame, env, kept)
                              for i in range(len(batch.names))]) for every, batch in suite.batches] for env in envs]
    order = {name: k for k, name in enumerate(suite.sensor_names)}  # shared messages list sensors in this order
    memory = TemplateMemory([publishing_order([e for _, _, encoders in batches for e in encoders], order, ground_truth)
                             for batches in built], head)
    for batches in built:
        taxel = sorted((e for _, _, encoders in batches for e in encoders if isinstance(e, TaxelEncoder)),
                       key=lambda e: order[e.name])
        link_groups([p for e in taxel for p in e.profiles])
    for b, (_, batch) in enumerate(suite.batches):
        encoders = [e for batches in built for e in batches[b][2]]
        gathers = (HostGather(), HostGather())
        for e in encoders:
            e.gathers = gathers
            e.place(memory)
        branch = [e for e in encoders if isinstance(e, BranchEncoder)]
        if branch:
            copies = (BranchCopy(batch, branch, False, memory), BranchCopy(batch, branch, True, memory))
            for e in branch:
                e.copies = copies
        for e in encoders:
            e.link()
    return [[(e, every) for every, _, encoders in batches for e in encoders] for batches in built], memory
