"""Output profiles of a taxel sensor (``outputs:``, :mod:`tactile_sim.config.outputs`): further messages made from
the sensor's measured TaxelArray of the same evaluation, published on the same steps.

* ``pointcloud`` — ``sensor_msgs/PointCloud2``: x, y, z the taxel centres (m, link frame), then one float32 field
  per channel (:data:`CHANNEL_VALUES`); organised as the layout's rows × cols (row-major, the TaxelArray's taxel
  order) or 1 × n.
* ``wrench`` — ``geometry_msgs/WrenchStamped``: force Σ f_k (N), torque Σ τ_k − p × Σ f_k about ``point`` p
  (N·m); link frame.
* ``tactile_state`` — ``tactile_msgs/TactileState``: per sensor on the topic one ``ChannelFloat32`` (its channel
  name; one value per taxel in layout order: a :data:`CHANNEL_VALUES` entry, or its raw counts).

Each profile keeps one :class:`~tactile_sim.io.cdr_template.CdrTemplate` (frame, layout and field descriptions
fixed); an evaluation writes the TaxelArray's stamp and the values into it. The ``tactile_state`` outputs on one
topic share a :class:`TactileStateGroup` (their sensors have one update period, so they are evaluated on the same
steps): the message goes out once the last of them has written its channel (:func:`link_groups`). While the
TaxelArray is not valid (before the first evaluation, a delay filling) its channels are zeros and so are the
profile's values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config.outputs import POINTCLOUD_CHANNELS, output_topic, tactile_state_value
from ..io.cdr_template import CdrTemplate
from ..io.encode import encode_wrench_stamped, header
from ..io.msg_types import message_class, new_message
from ..io.readings import WrenchReading
from .topic_plan import PROFILE_MESSAGE

FLOAT32 = 7
"""``sensor_msgs/PointField.FLOAT32``."""


def _component(field: str, axis: int):
    return lambda msg, normals: np.asarray(getattr(msg, field)).reshape(-1, 3)[:, axis]


CHANNEL_VALUES = {
    "contact": lambda msg, normals: np.asarray(msg.contact, dtype=np.float32),
    "depth": lambda msg, normals: np.asarray(msg.depth),
    "distance": lambda msg, normals: np.asarray(msg.distance),
    "proximity": lambda msg, normals: (np.asarray(msg.radii) - np.asarray(msg.distance)) * msg.valid,
    "indentation": lambda msg, normals: -np.einsum("ij,ij->i", np.asarray(msg.displacement).reshape(-1, 3), normals),
    **{f"force_{a}": _component("force", i) for i, a in enumerate("xyz")},
    **{f"displacement_{a}": _component("displacement", i) for i, a in enumerate("xyz")},
    "force_normal": lambda msg, normals: -np.einsum("ij,ij->i", np.asarray(msg.force).reshape(-1, 3), normals),
    "force_magnitude": lambda msg, normals: np.linalg.norm(np.asarray(msg.force).reshape(-1, 3), axis=1),
}
"""Channel → its values (n,) from a TaxelArray message and the taxel normals (n, 3), link frame: contact 0/1;
depth, distance m; ``proximity`` cap − distance m (0 while the message is not valid); force components N;
``force_normal`` −f·n N (positive when the body presses on the taxel: f is the load on the sensor, n the outward
normal); ``force_magnitude`` |f| N; displacement components and ``indentation`` −d·n (the TaxelArray's units)."""


class TaxelFields:
    """The fields of a TaxelArray message, each read from its bytes once (a WireMessage reads them on access)."""

    def __init__(self, msg: Any):
        self._msg = msg

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._msg, name)
        setattr(self, name, value)
        return value


class ProfileEncoder:
    """One output of a taxel sensor. sensor, sensor_type: its name and type; link: its frame; layout: its taxel
    layout (:class:`~tactile_sim.sensors.layout.ProbeLayout`); output: the validated ``outputs`` entry."""

    message_type = ""

    def __init__(self, sensor: str, sensor_type: str, link: str, layout: Any, output: Any):
        self.topic = output_topic(sensor, output)
        self.output = output
        self.template: CdrTemplate | None = None

    def encode(self, stamp: np.ndarray, msg: Any) -> list[tuple[str, Any]]:
        """[(topic, WireMessage)] of the TaxelArray ``msg`` (measured branch) and its stamp bytes ``stamp``."""
        self.template.view("header.stamp")[:] = stamp
        self.write(msg)
        return [(self.topic, self.template.wire())]

    def write(self, msg: Any) -> None:
        """Write the values of ``msg`` into the template."""
        raise NotImplementedError


class PointCloudEncoder(ProfileEncoder):
    """``pointcloud``: see the module docstring."""

    message_type = PROFILE_MESSAGE["pointcloud"]

    def __init__(self, sensor, sensor_type, link, layout, output):
        super().__init__(sensor, sensor_type, link, layout, output)
        self.channels = list(output.channels or POINTCLOUD_CHANNELS[sensor_type])
        self.normals = np.asarray(layout.flat_normals, dtype=np.float64)
        n = self.normals.shape[0]
        self.points = np.zeros((n, 3 + len(self.channels)), dtype="<f4")
        self.points[:, :3] = layout.flat_positions
        rows, cols = layout.shape if layout.is_grid else (1, n)
        point_field = message_class("sensor_msgs/msg/PointField")
        fields = [point_field(name=name, offset=4 * k, datatype=FLOAT32, count=1)
                  for k, name in enumerate(["x", "y", "z", *self.channels])]
        step = self.points.itemsize * self.points.shape[1]
        cloud = new_message(self.message_type, header=header(link, 0.0), height=rows, width=cols, fields=fields,
                            is_bigendian=False, point_step=step, row_step=step * cols,
                            data=self.points.view(np.uint8).reshape(-1), is_dense=True)
        self.template = CdrTemplate(cloud, ("header.stamp", "data"))
        self.values = self.points[:, 3:]

    def write(self, msg):
        fields = TaxelFields(msg)
        for k, name in enumerate(self.channels):
            self.values[:, k] = CHANNEL_VALUES[name](fields, self.normals)
        self.template.view("data")[:] = self.points.view(np.uint8).reshape(-1)


class WrenchEncoder(ProfileEncoder):
    """``wrench``: see the module docstring."""

    message_type = PROFILE_MESSAGE["wrench"]

    def __init__(self, sensor, sensor_type, link, layout, output):
        super().__init__(sensor, sensor_type, link, layout, output)
        self.point = tuple(float(v) for v in output.point)
        zeros = np.zeros(3)
        self.template = CdrTemplate(encode_wrench_stamped(WrenchReading(link, 0.0, zeros, zeros)),
                                    ("header.stamp", "wrench"))

    def write(self, msg):
        view = self.template.view("wrench")
        view[:3] = fx, fy, fz = np.asarray(msg.force).reshape(-1, 3).sum(axis=0, dtype=np.float64)
        px, py, pz = self.point
        view[3:] = np.asarray(msg.torque).reshape(-1, 3).sum(axis=0, dtype=np.float64) - (
            py * fz - pz * fy, pz * fx - px * fz, px * fy - py * fx)  # minus p x F (np.cross costs 70 us)


def raw_counts(values: np.ndarray, raw: Any) -> np.ndarray:
    """``values`` as counts of the :class:`~tactile_sim.config.outputs.RawCounts` ``raw`` (float array)."""
    counts = raw.rest - raw.gain * values if raw.invert else raw.rest + raw.gain * values
    return np.clip(np.rint(counts), 0, raw.saturation)


class TactileStateEncoder(ProfileEncoder):
    """``tactile_state`` of one sensor: its channel of the topic's :class:`TactileStateGroup` (set by
    :func:`link_groups`)."""

    message_type = PROFILE_MESSAGE["tactile_state"]

    def __init__(self, sensor, sensor_type, link, layout, output):
        super().__init__(sensor, sensor_type, link, layout, output)
        self.value = tactile_state_value(sensor_type, output)
        self.channel_name = output.channel_name or sensor
        self.normals = np.asarray(layout.flat_normals, dtype=np.float64)
        self.group: TactileStateGroup | None = None
        self.slot = 0

    def encode(self, stamp, msg):
        values = CHANNEL_VALUES[self.value](msg, self.normals)
        if self.output.raw is not None:
            values = raw_counts(values, self.output.raw)
        return self.group.write(self.slot, stamp, values)


class TactileStateGroup:
    """The TactileState of one topic: a channel per member (in order), its message sent when every member has
    written its values for the stamp at hand."""

    def __init__(self, topic: str, members: list[TactileStateEncoder]):
        channel = message_class("sensor_msgs/msg/ChannelFloat32")
        msg = new_message(PROFILE_MESSAGE["tactile_state"], header=header("", 0.0),
                          sensors=[channel(name=m.channel_name, values=np.zeros(len(m.normals), np.float32))
                                   for m in members])
        self.topic = topic
        self.template = CdrTemplate(msg, ("header.stamp", *(f"sensors[{k}].values" for k in range(len(members)))))
        self.views = [self.template.view(f"sensors[{k}].values") for k in range(len(members))]
        self.written = np.zeros(len(members), dtype=bool)
        for k, m in enumerate(members):
            m.group, m.slot = self, k

    def write(self, slot: int, stamp: np.ndarray, values: np.ndarray) -> list[tuple[str, Any]]:
        """Take a member's values at ``stamp`` (bytes of header.stamp); the message once all are in, else []."""
        stamp_view = self.template.view("header.stamp")
        if not np.array_equal(stamp_view, stamp):
            stamp_view[:] = stamp
            self.written[:] = False
        self.views[slot][:] = values
        self.written[slot] = True
        if not self.written.all():
            return []
        self.written[:] = False
        return [(self.topic, self.template.wire())]


def link_groups(profiles: list[ProfileEncoder]) -> None:
    """Give the ``tactile_state`` encoders among ``profiles`` (all of the node's, in publishing order) their
    topic's :class:`TactileStateGroup`."""
    topics: dict[str, list[TactileStateEncoder]] = {}
    for p in profiles:
        if isinstance(p, TactileStateEncoder):
            topics.setdefault(p.topic, []).append(p)
    for topic, members in topics.items():
        TactileStateGroup(topic, members)


PROFILE_ENCODERS: dict[str, type[ProfileEncoder]] = {"pointcloud": PointCloudEncoder, "wrench": WrenchEncoder,
                                                     "tactile_state": TactileStateEncoder}
"""``profile:`` → encoder class."""


def profile_encoders(sensor: str, sensor_type: str, link: str, layout: Any, outputs: list[Any]) -> list[ProfileEncoder]:
    """The encoders of a taxel sensor's ``outputs`` (validated entries), in order."""
    return [PROFILE_ENCODERS[o.profile](sensor, sensor_type, link, layout, o) for o in outputs]
