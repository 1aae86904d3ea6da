"""tactile_sim_node's rclpy executor and its end at SIGINT, under ROS 2 (plain processes, no launch): the
``executor`` parameter's choices, and Ctrl-C with the markers running ends the node with status 0 and no error line.
Skipped where ROS 2 is not importable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from helpers_ros import DEMO_YAML
from helpers_ros_launch import node_env, require_ros, scratch

require_ros()

import rclpy  # noqa: E402
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor  # noqa: E402

from tactile_sim.demo_trajectory import DEMO_URDF  # noqa: E402
from tactile_sim.ros.node import make_executor  # noqa: E402

try:
    from rclpy.experimental import EventsExecutor
except ImportError:
    EventsExecutor = None


@pytest.fixture
def context():
    rclpy.init()
    yield
    rclpy.try_shutdown()


def test_the_executor_parameter_picks_the_executor(context):
    assert isinstance(make_executor("single_threaded", markers=True), SingleThreadedExecutor)
    assert isinstance(make_executor("multi_threaded", markers=False), MultiThreadedExecutor)
    if EventsExecutor is not None:
        assert isinstance(make_executor("auto", markers=True), EventsExecutor)
        assert isinstance(make_executor("events", markers=False), EventsExecutor)
    else:  # this rclpy has none: one thread without markers, two with them; 'events' is refused by name
        assert type(make_executor("auto", markers=False)) is SingleThreadedExecutor
        assert type(make_executor("auto", markers=True)) is MultiThreadedExecutor
        with pytest.raises(ValueError, match="'events'.*allowed here: 'auto', 'single_threaded', 'multi_threaded'"):
            make_executor("events", markers=False)


def start(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


@pytest.mark.parametrize("executor", ["multi_threaded", "single_threaded"])
def test_sigint_with_the_markers_running_ends_the_node_without_an_error(executor):
    data = yaml.safe_load(DEMO_YAML.read_text())
    data["robot"] = {"urdf": str(DEMO_URDF)}
    config = scratch() / "demo_with_robot.yaml"
    config.write_text(yaml.safe_dump(data))
    env = dict(os.environ, **node_env())
    driver = start(["tactile_sim.ros.demo_trajectory_node"], env)
    node = start(["tactile_sim.ros.node", "--ros-args", "-p", f"config_file:={config}", "-p", "viz_rate:=100.0",
                  "-p", "update_rate:=200.0", "-p", f"executor:={executor}"], env)
    try:
        time.sleep(20)  # start-up, then markers at 100 Hz beside the updates
        assert node.poll() is None, node.communicate()[0]
        node.send_signal(signal.SIGINT)
        out, _ = node.communicate(timeout=60)
    finally:
        for p in (node, driver):
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
                p.wait(timeout=30)
    assert node.returncode == 0, out
    assert f"executor: {'MultiThreadedExecutor' if executor == 'multi_threaded' else 'SingleThreadedExecutor'}" in out
    assert "[ERROR]" not in out and "Traceback" not in out, out
