"""Output profiles (``outputs:``) on the rclpy node, under ROS 2: the standard profiles arrive as the installed
``sensor_msgs/PointCloud2`` and ``geometry_msgs/WrenchStamped`` classes with the pad's taxels and frame; a
``tactile_state`` output needs the vendor's ``tactile_msgs``: the node publishes it where that package is installed
and ends at start-up with status 2 naming the package where it is not. Skipped where ROS 2 is not importable."""

from __future__ import annotations

import importlib.util
import time

import pytest

from helpers_ros_launch import demo_with_robot, interrupt, require_ros, start_module

require_ros()

import rclpy  # noqa: E402
from rclpy.qos import QoSProfile  # noqa: E402
from rosidl_runtime_py.utilities import get_message  # noqa: E402

from tactile_sim.config import load_config  # noqa: E402
from tactile_sim.ros.topic_plan import published_topics  # noqa: E402

NODE = "/tactile_sim_node"
PAD_TAXELS = 30
"""Taxels of the demo's pad_left."""
OUTPUTS = [{"profile": "pointcloud"}, {"profile": "wrench"}, {"profile": "tactile_state"}]
VENDOR = importlib.util.find_spec("tactile_msgs") is not None


def with_outputs(outputs):
    def edit(data):
        (pad,) = [s for s in data["sensors"] if s["name"] == "pad_left"]
        pad["outputs"] = outputs

    return edit


def receive(topics: list[tuple[str, str]], seconds: float) -> dict[str, list]:
    """Messages per topic (installed ROS classes) received within ``seconds`` s, or until each topic has three."""
    rclpy.init()
    node = rclpy.create_node("profile_reader")
    got: dict[str, list] = {topic: [] for topic, _ in topics}
    for topic, message_type in topics:
        node.create_subscription(get_message(message_type), topic, got[topic].append, QoSProfile(depth=10))
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end and min(map(len, got.values())) < 3:
            rclpy.spin_once(node, timeout_sec=0.1)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return got


@pytest.mark.skipif(not VENDOR, reason="tactile_msgs is not installed here (its exit-2 path is tested instead)")
def test_every_profile_arrives_as_the_installed_message_class():
    run_and_check(OUTPUTS)


def test_the_standard_profiles_arrive_as_the_installed_message_classes():
    run_and_check(OUTPUTS[:2])


def run_and_check(outputs):
    config = demo_with_robot("profiles.yaml", with_outputs(outputs))
    topics = [(t.replace("~", NODE, 1), m) for t, m in published_topics(load_config(config), markers=False)
              if "pad_left" in t or m.startswith("tactile_msgs/")]
    assert len(topics) == 1 + len(outputs)  # the TaxelArray and one topic per output
    driver = start_module("tactile_sim.ros.demo_trajectory_node")
    node = start_module("tactile_sim.ros.node", "--ros-args", "-p", f"config_file:={config}", "-p", "viz_rate:=0.0")
    try:
        got = receive(topics, seconds=90)
    finally:
        interrupt(node, driver)
    out = node.communicate()[0]
    assert all(got.values()), f"nothing on {[t for t, m in got.items() if not m]}; node output:\n{out[-3000:]}"
    for topic, message_type in topics:
        assert all(type(m).__name__ == message_type.rsplit("/", 1)[1] for m in got[topic])
    cloud = got[f"{NODE}/pad_left/points"][-1]
    assert cloud.width * cloud.height == PAD_TAXELS and [f.name for f in cloud.fields][:3] == ["x", "y", "z"]
    (wrench_topic,) = [t for t, m in topics if m == "geometry_msgs/msg/WrenchStamped"]
    assert got[wrench_topic][-1].header.frame_id == cloud.header.frame_id == "fingertip_left"
    if any(o["profile"] == "tactile_state" for o in outputs):
        (state_topic,) = [t for t, m in topics if m.startswith("tactile_msgs/")]
        assert any(len(s.values) == PAD_TAXELS for m in got[state_topic] for s in m.sensors)


@pytest.mark.skipif(VENDOR, reason="tactile_msgs is installed here (its publishing is tested instead)")
def test_a_tactile_state_output_without_the_vendor_package_ends_the_node_with_status_2():
    config = demo_with_robot("profiles_no_vendor.yaml", with_outputs(OUTPUTS))
    node = start_module("tactile_sim.ros.node", "--ros-args", "-p", f"config_file:={config}")
    try:
        out, _ = node.communicate(timeout=120)
    finally:
        interrupt(node)
    assert node.returncode == 2, out
    assert "the ROS 2 interface package 'tactile_msgs' is not installed" in out and "/tactile_states" in out
