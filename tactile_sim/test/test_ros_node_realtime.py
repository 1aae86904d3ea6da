"""tactile_sim_node's ``realtime_priority`` under ROS 2 (plain processes): the integer parameter with its range
reaches the node, every thread of the running node (the executor's workers included) is SCHED_FIFO at that
priority where the process may have it, and a value rclpy refuses against the descriptor ends the node with status
2 and a one-line reason instead of a traceback. Skipped where ROS 2 is not importable."""

from __future__ import annotations

import os
import signal
import time

import pytest

from helpers_ros_launch import demo_with_robot, interrupt, require_ros, start_module
from helpers_transport import thread_policies

require_ros()


def test_the_running_node_and_its_executor_threads_are_fifo_at_the_asked_priority():
    config = demo_with_robot("demo_with_robot_rt.yaml")
    node = start_module("tactile_sim.ros.node", "--ros-args", "-p", f"config_file:={config}", "-p", "viz_rate:=50.0",
                        "-p", "executor:=multi_threaded", "-p", "realtime_priority:=20")
    try:
        time.sleep(20)  # start-up, then the two executor threads running updates and markers
        assert node.poll() is None, node.communicate()[0]
        policies = thread_policies(node.pid)
        node.send_signal(signal.SIGINT)
        out, _ = node.communicate(timeout=60)
    finally:
        interrupt(node)
    assert node.returncode == 0, out
    assert len(policies) >= 3  # main, the executor's workers, the middleware's own threads
    if os.geteuid() == 0:  # CAP_SYS_NICE: granted
        assert set(policies.values()) == {(os.SCHED_FIFO, 20)}, policies
        assert "realtime_priority" not in out
    else:
        assert {p for p, _ in policies.values()} == {os.SCHED_OTHER}
        assert "realtime_priority 20: SCHED_FIFO not permitted" in out


@pytest.mark.parametrize("param, value", [("realtime_priority", "100"), ("realtime_priority", "2.5"),
                                          ("update_rate", "0.0")])
def test_a_parameter_rclpy_refuses_ends_the_node_with_status_2_and_no_traceback(param, value):
    node = start_module("tactile_sim.ros.node", "--ros-args", "-p", f"{param}:={value}")
    out, _ = node.communicate(timeout=120)
    assert node.returncode == 2, out
    assert "cannot start" in out and param in out and "Traceback" not in out
