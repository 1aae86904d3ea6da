"""tactile_sim_node's rclpy executor and its end at SIGINT, under ROS 2 (plain processes, no launch): the
``executor`` parameter's choices, and Ctrl-C with the markers running ends the node with status 0 and no error line.
Skipped where ROS 2 is not importable."""

from __future__ import annotations

import signal
import time

import pytest

from helpers_ros_launch import demo_with_robot, interrupt, require_ros, start_module

require_ros()

import rclpy  # noqa: E402
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor  # noqa: E402

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


@pytest.mark.parametrize("executor", ["multi_threaded", "single_threaded"])
def test_sigint_with_the_markers_running_ends_the_node_without_an_error(executor):
    config = demo_with_robot("demo_with_robot.yaml")
    driver = start_module("tactile_sim.ros.demo_trajectory_node")
    node = start_module("tactile_sim.ros.node", "--ros-args", "-p", f"config_file:={config}", "-p", "viz_rate:=100.0",
                        "-p", "update_rate:=200.0", "-p", f"executor:={executor}")
    try:
        time.sleep(20)  # start-up, then markers at 100 Hz beside the updates
        assert node.poll() is None, node.communicate()[0]
        node.send_signal(signal.SIGINT)
        out, _ = node.communicate(timeout=60)
    finally:
        interrupt(node, driver)
    assert node.returncode == 0, out
    assert f"executor: {'MultiThreadedExecutor' if executor == 'multi_threaded' else 'SingleThreadedExecutor'}" in out
    assert "[ERROR]" not in out and "Traceback" not in out, out


def test_repeated_sigint_during_the_clean_up_ends_both_nodes_quietly():
    """Ctrl-C in a terminal reaches every process of the group and ``ros2 launch`` forwards its own: SIGINTs that
    arrive while a node is destroying itself after the first are ignored (status 0, no KeyboardInterrupt traceback)."""
    config = demo_with_robot("demo_with_robot.yaml")
    driver = start_module("tactile_sim.ros.demo_trajectory_node")
    node = start_module("tactile_sim.ros.node", "--ros-args", "-p", f"config_file:={config}")
    try:
        time.sleep(20)  # start-up
        assert node.poll() is None, node.communicate()[0]
        for _ in range(10):  # through the clean-up of both
            for p in (node, driver):
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)
            time.sleep(0.005)
        outs = [p.communicate(timeout=60)[0] for p in (node, driver)]
    finally:
        interrupt(node, driver)
    for p, out in zip((node, driver), outs):
        assert p.returncode == 0, out
        assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
