"""Shared helpers of the ROS 2 launch tests: a module-level skip where ROS 2 is missing, an isolated ROS graph, and
tactile_sim_node started from this checkout (``python -m``), so no colcon install of tactile_sim is needed."""

from __future__ import annotations

import atexit
import functools
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from helpers_ros import DEMO_YAML, PACKAGE_ROOT


@functools.cache
def scratch() -> Path:
    """Scratch folder of the generated configurations: made on first use (so importing or collecting these tests
    leaves nothing behind) and removed when the test process exits."""
    folder = Path(tempfile.mkdtemp(prefix="tactile_sim_launch_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def require_ros() -> None:
    """Skip the calling test module (at import) unless rclpy, launch, launch_ros, launch_pytest and the
    tactile_sim_msgs messages are importable; then put this process's ROS graph on a domain of its own."""
    try:
        import launch  # noqa: F401
        import launch_pytest  # noqa: F401
        import launch_ros  # noqa: F401
        import rclpy  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"ROS 2 is not importable ({exc}); these tests need rclpy, launch, launch_ros and "
                    "launch_pytest: source a ROS 2 (Jazzy or Humble) setup.bash", allow_module_level=True)
    try:
        import tactile_sim_msgs.msg  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"tactile_sim_msgs is not importable ({exc}): build it with colcon and source its "
                    "setup.bash", allow_module_level=True)
    os.environ["ROS_DOMAIN_ID"] = str(random.Random(os.getpid()).randint(30, 99))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")


def node_env() -> dict:
    """Environment of the node process: this checkout first on the Python path, one torch thread."""
    path = os.pathsep.join(p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}


def node_action(config_file: Path, **params):
    """A launch_ros Node action running tactile_sim_node with ``config_file`` and parameters (output cached)."""
    import launch_ros

    return launch_ros.actions.Node(
        executable=sys.executable, arguments=["-m", "tactile_sim.ros.node"], name="tactile_sim_node",
        parameters=[{"config_file": str(config_file), **params}], additional_env=node_env(), output="screen",
        cached_output=True)


def edited_demo(name: str, edit) -> Path:
    """The demo configuration changed by ``edit(mapping)``, written to ``name`` in the scratch folder."""
    data = yaml.safe_load(DEMO_YAML.read_text())
    edit(data)
    path = scratch() / name
    path.write_text(yaml.safe_dump(data))
    return path


def demo_with_robot(name: str, edit=None) -> Path:
    """The demo configuration with its robot's URDF named in it (no /robot_description publisher needed), changed
    by ``edit(mapping)`` when given, written to ``name`` in the scratch folder."""
    from tactile_sim.demo_trajectory import DEMO_URDF

    def with_robot(data):
        data["robot"] = {"urdf": str(DEMO_URDF)}
        if edit is not None:
            edit(data)

    return edited_demo(name, with_robot)


def start_module(*args: str) -> subprocess.Popen:
    """``python -m <args>`` from this checkout (e.g. the node or the demo trajectory), output captured as text."""
    return subprocess.Popen([sys.executable, "-m", *args], env=dict(os.environ, **node_env()), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def interrupt(*processes: subprocess.Popen) -> None:
    """SIGINT (Ctrl-C) to each process still running, and wait for it."""
    for p in processes:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
            p.wait(timeout=30)
