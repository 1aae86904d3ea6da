"""ROS 2 QoS profiles → cyclonedds QoS, with the conventions of rmw_cyclonedds that ROS 2 peers rely on.

Every reader and writer carries ``typehash=RIHS01_<64 hex>;`` in its USER_DATA (ROS 2 Iron and later parse it for
each discovered endpoint and log an error when it is missing) and uses plain CDR (XCDR1) data representation; the
participant carries ``enclave=/;``. Deadline, lifespan and liveliness keep the DDS defaults (infinite, automatic),
as ROS's ``system default`` does.
"""

from __future__ import annotations

from cyclonedds.core import Policy, Qos
from cyclonedds.util import duration

from .base import QosProfile

MAX_BLOCKING_TIME = duration(milliseconds=100)
"""How long a reliable write may block on a full writer history before it fails (and is counted as dropped)."""

DEFAULT_ENCLAVE = "/"


def type_hash_user_data(type_hash: str) -> bytes:
    """USER_DATA of a ROS 2 endpoint: ``typehash=RIHS01_<hex>;``."""
    if not type_hash.startswith("RIHS01_") or len(type_hash) != 7 + 64:
        raise ValueError(f"type hash: got {type_hash!r}; allowed: 'RIHS01_' followed by 64 hex digits")
    return f"typehash={type_hash};".encode("ascii")


def participant_qos(enclave: str = DEFAULT_ENCLAVE) -> Qos:
    """QoS of the node's participant: USER_DATA ``enclave=<enclave>;`` as ROS 2 sets it."""
    return Qos(Policy.Userdata(data=f"enclave={enclave};".encode("ascii")))


def endpoint_qos(profile: QosProfile, type_hash: str) -> Qos:
    """QoS of a reader or writer of a ROS 2 topic with ``profile`` and the message type's RIHS01 ``type_hash``."""
    reliability = Policy.Reliability.Reliable(max_blocking_time=MAX_BLOCKING_TIME) if profile.reliable \
        else Policy.Reliability.BestEffort
    durability = Policy.Durability.TransientLocal if profile.transient_local else Policy.Durability.Volatile
    return Qos(reliability, durability, Policy.History.KeepLast(depth=profile.depth),
               Policy.DataRepresentation(use_cdrv0_representation=True),
               Policy.Userdata(data=type_hash_user_data(type_hash)))


POLICY_NAMES = {1: "USER_DATA", 2: "DURABILITY", 3: "PRESENTATION", 4: "DEADLINE", 5: "LATENCY_BUDGET",
                6: "OWNERSHIP", 8: "LIVELINESS", 10: "PARTITION", 11: "RELIABILITY", 12: "DESTINATION_ORDER",
                13: "HISTORY", 21: "LIFESPAN", 25: "DATA_REPRESENTATION"}
"""DDS QoS policy ids (as in the incompatible-QoS statuses) → the names ROS 2 prints."""


def policy_name(policy_id: int) -> str:
    """Name of a DDS QoS policy id (``policy <id>`` when not one of :data:`POLICY_NAMES`)."""
    return POLICY_NAMES.get(int(policy_id), f"policy {int(policy_id)}")
