"""A second implementation of RIHS01 (REP-2011 type hashes), written from the algorithm rather than through rosbags:
the type description as rosidl serialises it (fields with type id, capacity, string capacity and nested type name;
referenced types sorted by name; JSON with ", " and ": " separators), hashed with SHA-256. Checked against the hash
rcl's own test pins for sensor_msgs/msg/PointCloud2."""

from __future__ import annotations

import hashlib
import json

NESTED, UINT8, INT32, UINT32, FLOAT32, FLOAT64, BOOL, STRING = 1, 3, 6, 7, 10, 11, 15, 17
"""type ids of type_description_interfaces/msg/FieldType."""
UNBOUNDED = 144
"""Added to an element's type id for an unbounded sequence of it."""


def field(name: str, type_id: int, nested: str = "") -> dict:
    return {"name": name, "type": {"type_id": type_id, "capacity": 0, "string_capacity": 0,
                                   "nested_type_name": nested}}


def description(type_name: str, *fields: dict) -> dict:
    return {"type_name": type_name, "fields": list(fields)}


def rihs01(top: dict, *referenced: dict) -> str:
    text = json.dumps({"type_description": top,
                       "referenced_type_descriptions": sorted(referenced, key=lambda d: d["type_name"])},
                      separators=(", ", ": "))
    return "RIHS01_" + hashlib.sha256(text.encode()).hexdigest()


TIME = description("builtin_interfaces/msg/Time", field("sec", INT32), field("nanosec", UINT32))
HEADER = description("std_msgs/msg/Header", field("stamp", NESTED, TIME["type_name"]), field("frame_id", STRING))
CHANNEL_FLOAT32 = description("sensor_msgs/msg/ChannelFloat32", field("name", STRING),
                              field("values", FLOAT32 + UNBOUNDED))
POINT_FIELD = description("sensor_msgs/msg/PointField", field("name", STRING), field("offset", UINT32),
                          field("datatype", UINT8), field("count", UINT32))
POINT_CLOUD2 = description(
    "sensor_msgs/msg/PointCloud2", field("header", NESTED, HEADER["type_name"]), field("height", UINT32),
    field("width", UINT32), field("fields", NESTED + UNBOUNDED, POINT_FIELD["type_name"]),
    field("is_bigendian", BOOL), field("point_step", UINT32), field("row_step", UINT32),
    field("data", UINT8 + UNBOUNDED), field("is_dense", BOOL))
VECTOR3 = description("geometry_msgs/msg/Vector3", *(field(a, FLOAT64) for a in "xyz"))
WRENCH = description("geometry_msgs/msg/Wrench", field("force", NESTED, VECTOR3["type_name"]),
                     field("torque", NESTED, VECTOR3["type_name"]))
WRENCH_STAMPED = description("geometry_msgs/msg/WrenchStamped", field("header", NESTED, HEADER["type_name"]),
                             field("wrench", NESTED, WRENCH["type_name"]))
POINT_CLOUD2_RCL = "RIHS01_9198cabf7da3796ae6fe19c4cb3bdd3525492988c70522628af5daa124bae2b5"
"""The hash rcl's type-hash test copies from the code rosidl generates for sensor_msgs/msg/PointCloud2."""
