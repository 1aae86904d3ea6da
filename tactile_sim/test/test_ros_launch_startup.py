"""tactile_sim_node under ROS 2 (launch_pytest) at start-up: an invalid configuration ends it with exit status 2
and a message naming the file, the option and the value. Skipped where ROS 2 is not importable."""

from helpers_ros_launch import edited_demo, node_action, require_ros

require_ros()

import launch  # noqa: E402
import launch_pytest  # noqa: E402
import pytest  # noqa: E402
from launch_pytest.tools import process as process_tools  # noqa: E402


def negative_noise(data):
    data["sensors"][0]["noise"] = -1.0


@pytest.fixture
def broken_node():
    return node_action(edited_demo("broken.yaml", negative_noise))


@launch_pytest.fixture
def broken_launch(broken_node):
    return launch.LaunchDescription([broken_node, launch_pytest.actions.ReadyToTest()])


@pytest.mark.launch(fixture=broken_launch)
def test_an_invalid_configuration_exits_non_zero_with_a_clear_message(broken_node, launch_context):
    assert process_tools.wait_for_exit_sync(launch_context, broken_node, timeout=120)
    yield
    assert broken_node.return_code == 2
    text = broken_node.get_stderr() + broken_node.get_stdout()  # rclpy logs to stderr
    assert "cannot start" in text and "broken.yaml" in text and "sensors[0].noise" in text
