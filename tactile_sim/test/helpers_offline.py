"""Shared helpers of the demo, replay and plot tests: one short demo run per test process (through the command
line), input bags written with the io layer, and bags read back with rosbags alone (types from the definitions the
bag stores, as Foxglove and ``ros2 bag`` read them)."""

from __future__ import annotations

import atexit
import contextlib
import functools
import io
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np
import yaml
from rosbags.highlevel import AnyReader

from tactile_sim.cli import main
from tactile_sim.config import load_config
from tactile_sim.config.paths import resolve_package_uri
from tactile_sim.demo_trajectory import DEMO_CONFIG
from tactile_sim.io.bag import BagWriter

DEMO_DURATION = 5.0
"""s: long enough for the fingers to close on the can (≈ 1.9 s) and open again (≈ 4.7 s)."""
DEMO_RATE = 10.0
"""Hz: a coarse rate keeps the CI run short (50 steps)."""
NODE = "/tactile_sim_node"
DEMO_SENSORS = ("pad_left", "pad_right", "palm_contact", "thermal_left", "joint_torque", "touch_right", "depth_left",
                "gel_right", "prox_left", "range_right")


def run_cli(*args: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``tactile-sim <args>`` run in this process (argparse's exit on a bad
    option is its status)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(args))
        except SystemExit as exc:
            status = exc.code
    return status, out.getvalue(), err.getvalue()


@functools.cache
def demo_run() -> tuple[int, str, str, Path]:
    """``tactile-sim demo`` for DEMO_DURATION s at DEMO_RATE Hz into a temporary folder, once per process:
    (status, stdout, stderr, folder)."""
    folder = Path(tempfile.mkdtemp(prefix="tactile_sim_demo_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    status, out, err = run_cli("demo", "-o", str(folder), "--duration", str(DEMO_DURATION), "--rate",
                               str(DEMO_RATE), "--no-progress")
    return status, out, err, folder


def demo_bag() -> Path:
    """The bag folder of :func:`demo_run`."""
    return demo_run()[3] / "gripper_demo"


def demo_config(names: set[str] | None = None, **suite):
    """The demo configuration, with only the named sensors when given and ``suite`` settings replaced."""
    path = resolve_package_uri(DEMO_CONFIG)
    data = yaml.safe_load(path.read_text())
    if names is not None:
        data["sensors"] = [s for s in data["sensors"] if s["name"] in names]
    data["suite"].update(suite)
    return load_config(data, base_dir=path.parent)


def read_bag(path: Path) -> dict[str, list[tuple[int, bytes, object]]]:
    """Topic → [(receive time ns, raw CDR bytes, message)] read with rosbags' AnyReader only."""
    topics = defaultdict(list)
    with AnyReader([Path(path)]) as reader:
        for connection, stamp, raw in reader.messages():
            topics[connection.topic].append((stamp, bytes(raw), reader.deserialize(raw, connection.msgtype)))
    return dict(topics)


def bag_types(path: Path) -> dict[str, tuple[str, str]]:
    """Topic → (message type, stored definition text) read with rosbags' AnyReader only."""
    with AnyReader([Path(path)]) as reader:
        return {c.topic: (c.msgtype, c.msgdef.data if hasattr(c.msgdef, "data") else c.msgdef)
                for c in reader.connections}


def write_bag(path: Path, items, storage: str = "mcap") -> Path:
    """A bag of (topic, receive time ns, message) items with the io layer's writer; returns its folder."""
    with BagWriter(path, storage) as writer:
        declared = set()
        for topic, _, msg in items:
            if topic not in declared:
                writer.add_topic(topic, msg.__msgtype__)
                declared.add(topic)
        for topic, stamp, msg in items:
            writer.write(topic, stamp, msg)
    return path


def force_rows(msg) -> np.ndarray:
    """A TaxelArray's force channel as (n, 3) float64."""
    return np.asarray(msg.force, dtype=np.float64).reshape(-1, 3)
