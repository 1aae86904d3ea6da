"""Shared helpers of the transport tests: an isolated loopback DDS domain per test process, rosbags messages as
cyclonedds objects (for the second, independent codec), CDR padding, and the DDS node as a subprocess."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
from rosbags.typesys.base import Nodetype

from tactile_sim.io.msg_types import full_type_name, typestore

PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def isolated_domain_id(offset: int = 0) -> int:
    """A DDS domain for this test process (100–229, from the pid), away from other test runs on the machine and
    from the 30–99 of the launch tests."""
    return 100 + (random.Random(os.getpid()).randrange(130) + offset) % 130


def to_idl(msg):
    """The cyclonedds :func:`~tactile_sim.transport.dds_types.idl_struct` object of a rosbags message."""
    from tactile_sim.transport.dds_types import idl_struct

    name = full_type_name(msg.__msgtype__)
    fields = {}
    for field, (kind, arg) in typestore().fielddefs[name][1]:
        value = getattr(msg, field)
        if kind == Nodetype.NAME:
            value = to_idl(value)
        elif kind in (Nodetype.ARRAY, Nodetype.SEQUENCE):
            (sub_kind, _), _ = arg
            if sub_kind == Nodetype.NAME:
                value = [to_idl(v) for v in value]
            else:
                value = value.tolist() if isinstance(value, np.ndarray) else list(value)
        fields[field] = value
    return idl_struct(name)(**fields)


def padded(data: bytes) -> bytes:
    """``data`` zero-padded to a multiple of 4 bytes (as ROS 2 and cyclonedds send a CDR payload)."""
    return bytes(data) + b"\0" * (-len(data) % 4)


def node_env() -> dict:
    """Environment of a node subprocess: this checkout importable, one torch/OpenMP thread, unbuffered output."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", WARP_LOG_LEVEL="error")
    env.pop("CYCLONEDDS_URI", None)
    return env


def start_dds_node(domain_id: int, log_path: Path, *args: str) -> subprocess.Popen:
    """``tactile-sim node --transport dds --loopback`` in ``domain_id`` with extra arguments; stdout and stderr go to
    ``log_path``."""
    log = open(log_path, "w")  # noqa: SIM115 - closed by the child's exit; read by the test afterwards
    return subprocess.Popen([sys.executable, "-m", "tactile_sim", "node", "--transport", "dds", "--loopback",
                             "--domain-id", str(domain_id), *args], cwd=PACKAGE_ROOT, env=node_env(), stdout=log,
                            stderr=subprocess.STDOUT)


def thread_policies(pid: int) -> dict[int, tuple[int, int]]:
    """tid → (scheduling policy, real-time priority) of every thread of process ``pid`` (Linux)."""
    policies = {}
    for entry in Path(f"/proc/{pid}/task").iterdir():
        try:
            policies[int(entry.name)] = (os.sched_getscheduler(int(entry.name)),
                                         os.sched_getparam(int(entry.name)).sched_priority)
        except ProcessLookupError:
            continue  # the thread ended meanwhile
    return policies
