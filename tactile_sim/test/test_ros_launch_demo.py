"""The launch files under ROS 2 (launch_pytest): ``demo.launch.py`` (without robot_state_publisher) runs the
closing trajectory, and the pads see the can while the fingers squeeze it. Needs tactile_sim installed in an ament
prefix (colcon); skipped otherwise and where ROS 2 is not importable."""

from helpers_ros_launch import require_ros

require_ros()

import time  # noqa: E402
from pathlib import Path  # noqa: E402

import launch  # noqa: E402
import launch_pytest  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import rclpy  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from tactile_sim_msgs.msg import TaxelArray  # noqa: E402

NODE = "/tactile_sim_node"


def installed_share() -> Path | None:
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    except ImportError:
        return None
    try:
        return Path(get_package_share_directory("tactile_sim"))
    except PackageNotFoundError:
        return None


def opened_after_contact(loads: list[float]) -> bool:
    """A load above zero followed later by zero load."""
    first = next((i for i, v in enumerate(loads) if v > 0), None)
    return first is not None and any(v == 0 for v in loads[first:])


@launch_pytest.fixture(scope="module")
def demo_launch():
    share = installed_share()
    if share is None:
        return launch.LaunchDescription([launch_pytest.actions.ReadyToTest()])
    include = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(share / "launch" / "demo.launch.py")),
        launch_arguments={"robot_state_publisher": "false", "publish_ground_truth": "true",
                          "update_rate": "20.0"}.items())
    return launch.LaunchDescription([include, launch_pytest.actions.ReadyToTest()])


@pytest.mark.skipif(installed_share() is None, reason="tactile_sim is not installed in an ament prefix "
                    "(colcon build tactile_sim and source install/setup.bash to test the launch files)")
@pytest.mark.launch(fixture=demo_launch)
def test_demo_launch_runs_the_closing_trajectory():
    rclpy.init()
    node = rclpy.create_node("demo_launch_probe")
    seen = []
    node.create_subscription(TaxelArray, f"{NODE}/pad_left/ground_truth",
                             lambda m: seen.append(float(np.abs(np.asarray(m.force)).sum())), 10)
    try:
        end = time.monotonic() + 150
        while time.monotonic() < end and not opened_after_contact(seen):
            rclpy.spin_once(node, timeout_sec=0.1)
        assert seen, "no pad messages from the demo launch"
        assert opened_after_contact(seen)  # the fingers closed on the can, then opened again
    finally:
        node.destroy_node()
        rclpy.shutdown()
