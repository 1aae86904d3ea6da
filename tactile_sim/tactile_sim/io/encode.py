"""Readings ↔ message objects (rosbags dataclasses of the types in :mod:`.msg_types`), both ways, no ROS.

``encode_*`` builds the message of one reading; ``decode_*`` rebuilds an equal reading from such a message (stamps
to the nanosecond, see :mod:`.stamps`). Message objects serialise with :func:`.msg_types.serialize_cdr`; the bytes
are what rclpy publishes for the same type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .msg_types import MSG_PACKAGE, new_message
from .readings import (
    TAXEL_CHANNELS,
    AirTimes,
    DiagnosticStatusReading,
    JointTorqueReading,
    LinkContactReading,
    TaxelReading,
    ThermalReading,
    WrenchReading,
)
from .stamps import time_msg, time_msg_to_seconds

TAXEL_ARRAY = f"{MSG_PACKAGE}/msg/TaxelArray"
THERMAL_GRID = f"{MSG_PACKAGE}/msg/ThermalGrid"
LINK_CONTACT = f"{MSG_PACKAGE}/msg/LinkContact"
JOINT_STATE = "sensor_msgs/msg/JointState"
WRENCH_STAMPED = "geometry_msgs/msg/WrenchStamped"
DIAGNOSTIC_ARRAY = "diagnostic_msgs/msg/DiagnosticArray"


def header(frame_id: str, stamp: float) -> Any:
    """``std_msgs/msg/Header`` with ``stamp`` in s."""
    return new_message("std_msgs/msg/Header", stamp=time_msg(stamp), frame_id=frame_id)


def vector3(v: Sequence[float]) -> Any:
    """``geometry_msgs/msg/Vector3`` of a 3-vector."""
    return new_message("geometry_msgs/msg/Vector3", x=float(v[0]), y=float(v[1]), z=float(v[2]))


def point(v: Sequence[float]) -> Any:
    """``geometry_msgs/msg/Point`` of a 3-vector."""
    return new_message("geometry_msgs/msg/Point", x=float(v[0]), y=float(v[1]), z=float(v[2]))


def pose(position: Sequence[float], orientation: Sequence[float]) -> Any:
    """``geometry_msgs/msg/Pose`` from a position and a quaternion (x, y, z, w)."""
    quat = new_message(
        "geometry_msgs/msg/Quaternion",
        x=float(orientation[0]),
        y=float(orientation[1]),
        z=float(orientation[2]),
        w=float(orientation[3]),
    )
    return new_message("geometry_msgs/msg/Pose", position=point(position), orientation=quat)


def _xyz(msg: Any) -> np.ndarray:
    return np.array([msg.x, msg.y, msg.z], dtype=np.float64)


def _rows(msgs: Sequence[Any]) -> np.ndarray:
    return np.array([[m.x, m.y, m.z] for m in msgs], dtype=np.float64).reshape(len(msgs), 3)


def _unflatten(flat: np.ndarray, width: int, n: int, where: str) -> np.ndarray:
    """A flat message array as (n,) or (n, width); its length must be n·max(width, 1)."""
    size = n * max(width, 1)
    if flat.shape != (size,):
        raise ValueError(f"{where}: {flat.shape[0]} values; expected {size} (n = {n} taxels, width {max(width, 1)})")
    return flat.reshape((n, width) if width else (n,))


def encode_taxel_array(reading: TaxelReading) -> Any:
    """``tactile_sim_msgs/msg/TaxelArray`` of a taxel reading (absent channels are empty arrays)."""
    channels = {
        name: (
            reading.channels[name].reshape(-1)
            if name in reading.channels
            else np.zeros(0, dtype=dtype)
        )
        for name, (dtype, _) in TAXEL_CHANNELS.items()
    }
    return new_message(
        TAXEL_ARRAY,
        header=header(reading.frame_id, reading.stamp),
        sensor_name=reading.sensor_name,
        sensor_type=reading.sensor_type,
        rows=reading.rows,
        cols=reading.cols,
        positions=reading.positions.reshape(-1),
        normals=reading.normals.reshape(-1),
        radii=reading.radii,
        world_frame_id=reading.world_frame_id,
        valid=reading.valid,
        ground_truth=reading.ground_truth,
        **channels,
    )


def decode_taxel_array(msg: Any) -> TaxelReading:
    """The taxel reading of a ``TaxelArray`` message (empty channels are left out)."""
    where = f"TaxelArray(sensor_name={msg.sensor_name!r})"
    n = len(msg.radii)
    channels = {
        name: _unflatten(np.asarray(getattr(msg, name)), width, n, f"{where}.{name}")
        for name, (_, width) in TAXEL_CHANNELS.items()
        if len(getattr(msg, name))
    }
    return TaxelReading(
        sensor_name=msg.sensor_name,
        sensor_type=msg.sensor_type,
        frame_id=msg.header.frame_id,
        stamp=time_msg_to_seconds(msg.header.stamp),
        rows=msg.rows,
        cols=msg.cols,
        positions=_unflatten(np.asarray(msg.positions), 3, n, f"{where}.positions"),
        normals=_unflatten(np.asarray(msg.normals), 3, n, f"{where}.normals"),
        radii=msg.radii,
        channels=channels,
        valid=msg.valid,
        ground_truth=msg.ground_truth,
        world_frame_id=msg.world_frame_id,
    )


def encode_thermal_grid(reading: ThermalReading) -> Any:
    """``tactile_sim_msgs/msg/ThermalGrid`` of a thermal reading (temperatures flattened in C order)."""
    nx, ny, nz = reading.grid_size
    return new_message(
        THERMAL_GRID,
        header=header(reading.frame_id, reading.stamp),
        sensor_name=reading.sensor_name,
        nx=nx,
        ny=ny,
        nz=nz,
        origin=pose(reading.origin, reading.origin_orientation),
        cell_size=vector3(reading.cell_size),
        temperatures=reading.temperatures.reshape(-1),
        link_names=list(reading.link_names),
        link_temperatures=reading.link_temperatures,
        valid=reading.valid,
        ground_truth=reading.ground_truth,
    )


def decode_thermal_grid(msg: Any) -> ThermalReading:
    """The thermal reading of a ``ThermalGrid`` message."""
    shape = (int(msg.nx), int(msg.ny), int(msg.nz))
    temperatures = np.asarray(msg.temperatures)
    if temperatures.shape != (int(np.prod(shape)),):
        raise ValueError(
            f"ThermalGrid(sensor_name={msg.sensor_name!r}).temperatures: {temperatures.shape[0]} values; "
            f"expected nx*ny*nz = {int(np.prod(shape))} for (nx, ny, nz) = {shape}"
        )
    q = msg.origin.orientation
    return ThermalReading(
        sensor_name=msg.sensor_name,
        frame_id=msg.header.frame_id,
        stamp=time_msg_to_seconds(msg.header.stamp),
        origin=_xyz(msg.origin.position),
        cell_size=_xyz(msg.cell_size),
        temperatures=temperatures.reshape(shape),
        valid=msg.valid,
        ground_truth=msg.ground_truth,
        origin_orientation=np.array([q.x, q.y, q.z, q.w]),
        link_names=list(msg.link_names),
        link_temperatures=msg.link_temperatures,
    )


def encode_joint_torque(reading: JointTorqueReading) -> Any:
    """``sensor_msgs/msg/JointState`` carrying the torques in ``effort`` (position and velocity empty)."""
    return new_message(JOINT_STATE, header=header("", reading.stamp), name=list(reading.names), effort=reading.effort)


def decode_joint_torque(msg: Any) -> JointTorqueReading:
    """The joint-torque reading of a ``JointState`` (names and effort)."""
    return JointTorqueReading(stamp=time_msg_to_seconds(msg.header.stamp), names=list(msg.name), effort=msg.effort)


def encode_wrench_stamped(reading: WrenchReading) -> Any:
    """``geometry_msgs/msg/WrenchStamped`` of a wrench."""
    wrench = new_message("geometry_msgs/msg/Wrench", force=vector3(reading.force), torque=vector3(reading.torque))
    return new_message(WRENCH_STAMPED, header=header(reading.frame_id, reading.stamp), wrench=wrench)


def decode_wrench_stamped(msg: Any) -> WrenchReading:
    """The wrench of a ``WrenchStamped``."""
    return WrenchReading(
        frame_id=msg.header.frame_id,
        stamp=time_msg_to_seconds(msg.header.stamp),
        force=_xyz(msg.wrench.force),
        torque=_xyz(msg.wrench.torque),
    )


def encode_link_contact(reading: LinkContactReading) -> Any:
    """``tactile_sim_msgs/msg/LinkContact`` of one ContactSensor body."""
    wrench = new_message("geometry_msgs/msg/Wrench", force=vector3(reading.force), torque=vector3(reading.torque))
    positions = [] if reading.contact_positions is None else [point(p) for p in reading.contact_positions]
    times = reading.air_times or AirTimes(0.0, 0.0, 0.0, 0.0)
    return new_message(
        LINK_CONTACT,
        header=header(reading.frame_id, reading.stamp),
        sensor_name=reading.sensor_name,
        body_name=reading.body_name,
        wrench=wrench,
        normal_force=vector3(reading.normal_force),
        friction_force=vector3(reading.friction_force),
        filter_names=list(reading.filter_names),
        force_matrix=[vector3(v) for v in reading.force_matrix],
        normal_force_matrix=[vector3(v) for v in reading.normal_force_matrix],
        friction_force_matrix=[vector3(v) for v in reading.friction_force_matrix],
        contact_positions=positions,
        air_time_tracked=reading.air_times is not None,
        valid=reading.valid,
        **times._asdict(),
    )


def decode_link_contact(msg: Any) -> LinkContactReading:
    """The ContactSensor body reading of a ``LinkContact`` message."""
    times = AirTimes(*(getattr(msg, name) for name in AirTimes._fields)) if msg.air_time_tracked else None
    return LinkContactReading(
        sensor_name=msg.sensor_name,
        body_name=msg.body_name,
        frame_id=msg.header.frame_id,
        stamp=time_msg_to_seconds(msg.header.stamp),
        force=_xyz(msg.wrench.force),
        torque=_xyz(msg.wrench.torque),
        normal_force=_xyz(msg.normal_force),
        friction_force=_xyz(msg.friction_force),
        filter_names=list(msg.filter_names),
        force_matrix=_rows(msg.force_matrix),
        normal_force_matrix=_rows(msg.normal_force_matrix),
        friction_force_matrix=_rows(msg.friction_force_matrix),
        contact_positions=_rows(msg.contact_positions) if msg.contact_positions else None,
        air_times=times,
        valid=msg.valid,
    )


def encode_diagnostics(stamp: float, statuses: Sequence[DiagnosticStatusReading]) -> Any:
    """``diagnostic_msgs/msg/DiagnosticArray`` of status entries at ``stamp`` (s)."""
    status = [
        new_message(
            "diagnostic_msgs/msg/DiagnosticStatus",
            level=s.level,
            name=s.name,
            message=s.message,
            hardware_id=s.hardware_id,
            values=[new_message("diagnostic_msgs/msg/KeyValue", key=k, value=v) for k, v in s.values.items()],
        )
        for s in statuses
    ]
    return new_message(DIAGNOSTIC_ARRAY, header=header("", stamp), status=status)


def decode_diagnostics(msg: Any) -> tuple[float, list[DiagnosticStatusReading]]:
    """(stamp s, status entries) of a ``DiagnosticArray``."""
    statuses = [
        DiagnosticStatusReading(
            name=s.name,
            level=s.level,
            message=s.message,
            hardware_id=s.hardware_id,
            values={kv.key: kv.value for kv in s.values},
        )
        for s in msg.status
    ]
    return time_msg_to_seconds(msg.header.stamp), statuses
