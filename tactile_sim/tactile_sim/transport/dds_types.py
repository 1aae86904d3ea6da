"""cyclonedds types of ROS 2 messages, built at run time from the message definitions rosbags knows (every standard
ROS 2 Jazzy type and ours from ``tactile_sim_msgs/msg/*.msg``, see :mod:`tactile_sim.io.msg_types`).

ROS 2 (rosidl + rmw_cyclonedds) puts a message ``pkg/msg/Name`` on the wire as the final (fixed-layout) IDL struct
``pkg::msg::dds_::Name_`` in XCDR1 (plain CDR): the same fields in the same order, ``char`` as ``uint8``, ``byte``
as ``octet``, bounded strings and sequences with their bounds, fixed arrays as arrays. Two class families:

* :func:`idl_struct` — an ordinary cyclonedds ``IdlStruct`` dataclass (fields as Python values), for code that
  wants cyclonedds' own codec; its XCDR1 bytes equal rosbags' CDR (tested for every type the node uses).
* :func:`cdr_struct` — the same IDL type (same name, fields and XTypes type information, so DDS matches it with
  ROS and with :func:`idl_struct` peers), whose samples *are* CDR bytes: writing ``cdr_struct(t)(data)`` sends
  ``data`` unchanged and reading returns :class:`CdrSample` bytes. The transport uses it so that the bytes on the
  wire are exactly rosbags' CDR (what the rclpy node publishes) and decoding is rosbags' (5x faster than the pure
  Python codec of cyclonedds). This relies on ``DataWriter.write`` serialising through ``sample.serialize`` and
  ``DataReader.take`` deserialising through ``data_type.deserialize`` — true of the pinned cyclonedds 11.0.1 and
  checked by the tests.

:func:`tactile_sim.io.msg_types.type_hash` gives the RIHS01 hash ROS 2 peers expect in each endpoint's USER_DATA.
"""

from __future__ import annotations

import types
from functools import cache
from typing import Any

from cyclonedds.idl import IdlStruct, make_idl_struct
from cyclonedds.idl import types as idl
from rosbags.typesys.base import Nodetype

from ..io.msg_types import full_type_name, message_class, typestore

PRIMITIVES: dict[str, Any] = {
    "bool": bool,
    "byte": idl.byte,
    "char": idl.uint8,
    "int8": idl.int8,
    "uint8": idl.uint8,
    "int16": idl.int16,
    "uint16": idl.uint16,
    "int32": idl.int32,
    "uint32": idl.uint32,
    "int64": idl.int64,
    "uint64": idl.uint64,
    "float32": idl.float32,
    "float64": idl.float64,
}
"""ROS primitive type → cyclonedds field type (as rosidl maps them to IDL)."""


def dds_type_name(typename: str) -> str:
    """DDS type name of a ROS message type: ``sensor_msgs/msg/JointState`` → ``sensor_msgs::msg::dds_::JointState_``."""
    pkg, kind, name = full_type_name(typename).split("/")
    return f"{pkg}::{kind}::dds_::{name}_"


class CdrSample(bytes):
    """The CDR bytes of one received sample (4-byte encapsulation header included; the writer may have padded the
    end with zeros to a multiple of 4 bytes, as ROS does). ``sample_info``: the cyclonedds SampleInfo."""


def _field_type(desc: tuple, where: str) -> Any:
    """cyclonedds type of one rosbags field description."""
    kind, arg = desc
    if kind == Nodetype.BASE:
        base, bound = arg
        if base == "string":
            return idl.bounded_str[bound] if bound else str
        if base not in PRIMITIVES:
            raise ValueError(f"{where}: the ROS type {base!r} has no DDS mapping here; allowed: string and "
                             f"{', '.join(PRIMITIVES)}")
        return PRIMITIVES[base]
    if kind == Nodetype.NAME:
        return idl_struct(arg)
    sub, length = arg
    element = _field_type(sub, where)
    if kind == Nodetype.ARRAY:
        return idl.array[element, length]
    return idl.sequence[element, length] if length else idl.sequence[element]


def _fields(name: str) -> dict[str, Any]:
    """Field name → cyclonedds type of a ROS message type (full name), in message order."""
    message_class(name)  # ValueError naming close matches for an unknown type
    return {field: _field_type(desc, f"{name}.{field}") for field, desc in typestore().fielddefs[name][1]}


def _class_name(name: str) -> str:
    return name.replace("/", "__")


def idl_struct(typename: str) -> type[IdlStruct]:
    """cyclonedds dataclass of a ROS message type (``pkg/msg/Name`` or ``pkg/Name``; nested types are
    :func:`idl_struct` classes too). One class per type."""
    return _idl_struct(full_type_name(typename))


def cdr_struct(typename: str) -> type[IdlStruct]:
    """cyclonedds type of a ROS message type whose samples are CDR bytes (see the module docstring):
    ``cdr_struct(t)(data)`` is a sample to write; readers of a topic of this type return :class:`CdrSample`.
    One class per type."""
    return _cdr_struct(full_type_name(typename))


@cache
def _idl_struct(typename: str) -> type[IdlStruct]:
    return make_idl_struct(_class_name(typename), dds_type_name(typename), _fields(typename))


@cache
def _cdr_struct(typename: str) -> type[IdlStruct]:
    fields = _fields(typename)

    def __init__(self, cdr: bytes):
        self.cdr = cdr

    def serialize(self, buffer=None, endianness=None, use_version_2=None) -> bytes:
        return self.cdr

    def deserialize(cls, data, has_header=True, use_version_2=None) -> CdrSample:
        return CdrSample(data)

    def deserialize_key(cls, data, has_header=True, use_version_2=None) -> None:
        return None  # keyless: an invalid sample (a writer that went away) carries nothing worth decoding

    def body(namespace: dict) -> None:
        namespace["__annotations__"].update(fields)
        namespace.update(__init__=__init__, serialize=serialize, deserialize=classmethod(deserialize),
                         deserialize_key=classmethod(deserialize_key), __doc__=f"CDR samples of {typename}.")

    return types.new_class(_class_name(typename) + "__cdr", (IdlStruct,), {"typename": dds_type_name(typename)},
                           body)


