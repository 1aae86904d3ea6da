"""The built-in demo: a two-finger gripper closing on a can, squeezing, sliding and opening, with taxel pads on both
fingertips, a palm contact sensor (and further sensors as configured in config/demo_sensors.yaml).

    ros2 launch tactile_sim demo.launch.py rviz:=true

Starts ``demo_trajectory`` (joint states and the static world -> base_link transform), robot_state_publisher (link
TF and /robot_description for rviz), tactile_sim_node via tactile_sim.launch.py with the demo configuration, and
rviz2 with rviz/demo.rviz when rviz:=true.

Arguments: rviz (false), robot_state_publisher (true; false runs without it, e.g. where it is not installed),
update_rate (Hz, ""), publish_ground_truth (""), use_sim_time (false), trajectory_rate (Hz, 100).
"""

from pathlib import Path

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from tactile_sim.demo_trajectory import DEMO_CONFIG, DEMO_URDF as URDF


def generate_launch_description():
    share = Path(get_package_share_directory("tactile_sim"))
    use_sim_time = LaunchConfiguration("use_sim_time")
    return LaunchDescription([
        DeclareLaunchArgument("rviz", default_value="false", description="start rviz2 with rviz/demo.rviz"),
        DeclareLaunchArgument("robot_state_publisher", default_value="true",
                              description="start robot_state_publisher (link TF and /robot_description for rviz)"),
        DeclareLaunchArgument("update_rate", default_value="", description="Hz of tactile_sim_node"),
        DeclareLaunchArgument("publish_ground_truth", default_value="", description="true/false"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="use the /clock topic"),
        DeclareLaunchArgument("trajectory_rate", default_value="100.0", description="Hz of /joint_states"),
        Node(package="tactile_sim", executable="demo_trajectory", name="demo_trajectory", output="screen",
             parameters=[{"rate": ParameterValue(LaunchConfiguration("trajectory_rate"), value_type=float),
                          "use_sim_time": ParameterValue(use_sim_time, value_type=bool)}]),
        Node(package="robot_state_publisher", executable="robot_state_publisher", output="screen",
             condition=IfCondition(LaunchConfiguration("robot_state_publisher")),
             parameters=[{"robot_description": ParameterValue(URDF.read_text(), value_type=str),
                          "use_sim_time": ParameterValue(use_sim_time, value_type=bool)}]),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(str(share / "launch" / "tactile_sim.launch.py")),
            launch_arguments={
                "config_file": DEMO_CONFIG,
                "urdf_file": str(URDF),
                "update_rate": LaunchConfiguration("update_rate"),
                "publish_ground_truth": LaunchConfiguration("publish_ground_truth"),
                "use_sim_time": use_sim_time,
            }.items()),
        Node(package="rviz2", executable="rviz2", name="rviz2", output="screen",
             arguments=["-d", str(share / "rviz" / "demo.rviz")],
             condition=IfCondition(LaunchConfiguration("rviz")),
             parameters=[{"use_sim_time": ParameterValue(use_sim_time, value_type=bool)}]),
    ])
