"""The ROS 2 graph entry of a DDS participant: which node owns which readers and writers.

ROS 2 processes announce their nodes on the DDS topic ``ros_discovery_info`` (no ``rt/`` prefix) with one
``rmw_dds_common/msg/ParticipantEntitiesInfo`` per participant: the participant's GID and, per node, its namespace,
name and the GIDs of its readers and writers. A GID is the 16-byte DDS GUID of the entity. ``ros2 node list`` and
``ros2 topic info -v`` read these announcements; the writer is reliable, transient local, keep last 1, so that late
joiners get the current state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..io.msg_types import new_message
from .base import QosProfile

DISCOVERY_TOPIC = "ros_discovery_info"
"""DDS topic name of the graph announcements (used as is, without the ``rt/`` prefix)."""

DISCOVERY_TYPE = "rmw_dds_common/msg/ParticipantEntitiesInfo"

DISCOVERY_QOS = QosProfile(reliable=True, depth=1, transient_local=True)

GID_SIZE = 16


def gid(guid: bytes) -> Any:
    """``rmw_dds_common/msg/Gid`` of a 16-byte DDS GUID."""
    if len(guid) != GID_SIZE:
        raise ValueError(f"gid: got a GUID of {len(guid)} bytes; allowed: {GID_SIZE}")
    return new_message("rmw_dds_common/msg/Gid", data=np.frombuffer(guid, dtype=np.uint8))


@dataclass
class NodeEntities:
    """One node's graph entry: name, namespace (absolute), and the GUIDs of its readers and writers."""

    name: str
    namespace: str
    readers: list[bytes] = field(default_factory=list)
    writers: list[bytes] = field(default_factory=list)


def participant_entities_info(participant: bytes, nodes: list[NodeEntities]) -> Any:
    """The ``ParticipantEntitiesInfo`` message of a participant (16-byte GUID) hosting ``nodes``."""
    infos = [new_message("rmw_dds_common/msg/NodeEntitiesInfo", node_namespace=n.namespace, node_name=n.name,
                         reader_gid_seq=[gid(g) for g in n.readers], writer_gid_seq=[gid(g) for g in n.writers])
             for n in nodes]
    return new_message(DISCOVERY_TYPE, gid=gid(participant), node_entities_info_seq=infos)
