"""Output profiles of a taxel sensor (``outputs:``, :mod:`tactile_sim.config.outputs`): further messages made from
the sensor's measured TaxelArray of the same evaluation, published on the same steps.

| profile | message | values |
|---|---|---|
| ``pointcloud`` | ``sensor_msgs/PointCloud2`` | x, y, z: taxel centres (m, link frame); one float32 field per channel (:data:`CHANNEL_VALUES`); organised as the layout's rows × cols (row-major, the TaxelArray's taxel order) or 1 × n |
| ``wrench`` | ``geometry_msgs/WrenchStamped`` | force: Σ f_k (N); torque: Σ τ_k − p × Σ f_k about ``point`` p (N·m); link frame |

Each profile keeps one :class:`~tactile_sim.io.cdr_template.CdrTemplate` (frame, layout and field descriptions
fixed); an evaluation writes the TaxelArray's stamp and the values into it. While the TaxelArray is not valid
(before the first evaluation, a delay filling) its channels are zeros and so are the profile's values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config.outputs import POINTCLOUD_CHANNELS, output_topic
from ..io.cdr_template import CdrTemplate
from ..io.encode import WRENCH_STAMPED, encode_wrench_stamped, header
from ..io.msg_types import message_class, new_message
from ..io.readings import WrenchReading

POINT_CLOUD2 = "sensor_msgs/msg/PointCloud2"
FLOAT32 = 7
"""``sensor_msgs/PointField.FLOAT32``."""


def _component(field: str, axis: int):
    return lambda msg, normals: np.asarray(getattr(msg, field)).reshape(-1, 3)[:, axis]


CHANNEL_VALUES = {
    "contact": lambda msg, normals: np.asarray(msg.contact, dtype=np.float32),
    "depth": lambda msg, normals: np.asarray(msg.depth),
    "distance": lambda msg, normals: np.asarray(msg.distance),
    **{f"force_{a}": _component("force", i) for i, a in enumerate("xyz")},
    **{f"displacement_{a}": _component("displacement", i) for i, a in enumerate("xyz")},
    "force_normal": lambda msg, normals: -np.einsum("ij,ij->i", np.asarray(msg.force).reshape(-1, 3), normals),
    "force_magnitude": lambda msg, normals: np.linalg.norm(np.asarray(msg.force).reshape(-1, 3), axis=1),
}
"""Point-cloud channel → its values (n,) from a TaxelArray message and the taxel normals (n, 3), link frame:
contact 0/1; depth, distance m; force components N; ``force_normal`` −f·n N (positive when the body presses on
the taxel: f is the load on the sensor, n the outward normal); ``force_magnitude`` |f| N; displacement components
(the TaxelArray's units)."""


class ProfileEncoder:
    """One output of a taxel sensor. sensor, sensor_type: its name and type; link: its frame; layout: its taxel
    layout (:class:`~tactile_sim.sensors.layout.ProbeLayout`); output: the validated ``outputs`` entry."""

    message_type = ""

    def __init__(self, sensor: str, sensor_type: str, link: str, layout: Any, output: Any):
        self.topic = output_topic(sensor, output)
        self.output = output
        self.template: CdrTemplate | None = None

    def encode(self, stamp: np.ndarray, msg: Any) -> tuple[str, Any]:
        """(topic, WireMessage) of the TaxelArray ``msg`` (measured branch) and its stamp bytes ``stamp``."""
        self.template.view("header.stamp")[:] = stamp
        self.write(msg)
        return self.topic, self.template.wire()

    def write(self, msg: Any) -> None:
        """Write the values of ``msg`` into the template."""
        raise NotImplementedError


class PointCloudEncoder(ProfileEncoder):
    """``pointcloud``: see the module docstring."""

    message_type = POINT_CLOUD2

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
        cloud = new_message(POINT_CLOUD2, header=header(link, 0.0), height=rows, width=cols, fields=fields,
                            is_bigendian=False, point_step=step, row_step=step * cols,
                            data=self.points.view(np.uint8).reshape(-1), is_dense=True)
        self.template = CdrTemplate(cloud, ("header.stamp", "data"))
        self.values = self.points[:, 3:]

    def write(self, msg):
        for k, name in enumerate(self.channels):
            self.values[:, k] = CHANNEL_VALUES[name](msg, self.normals)
        self.template.view("data")[:] = self.points.view(np.uint8).reshape(-1)


class WrenchEncoder(ProfileEncoder):
    """``wrench``: see the module docstring."""

    message_type = WRENCH_STAMPED

    def __init__(self, sensor, sensor_type, link, layout, output):
        super().__init__(sensor, sensor_type, link, layout, output)
        self.point = np.asarray(output.point, dtype=np.float64)
        zeros = np.zeros(3)
        self.template = CdrTemplate(encode_wrench_stamped(WrenchReading(link, 0.0, zeros, zeros)),
                                    ("header.stamp", "wrench"))

    def write(self, msg):
        force = np.asarray(msg.force, dtype=np.float64).reshape(-1, 3).sum(axis=0)
        torque = np.asarray(msg.torque, dtype=np.float64).reshape(-1, 3).sum(axis=0) - np.cross(self.point, force)
        view = self.template.view("wrench")
        view[:3], view[3:] = force, torque


PROFILE_ENCODERS: dict[str, type[ProfileEncoder]] = {"pointcloud": PointCloudEncoder, "wrench": WrenchEncoder}
"""``profile:`` → encoder class."""


def profile_encoders(sensor: str, sensor_type: str, link: str, layout: Any, outputs: list[Any]) -> list[ProfileEncoder]:
    """The encoders of a taxel sensor's ``outputs`` (validated entries), in order."""
    return [PROFILE_ENCODERS[o.profile](sensor, sensor_type, link, layout, o) for o in outputs]
