"""Launch tactile_sim_node for any robot: a sensor configuration, a robot description and node parameters.

    ros2 launch tactile_sim tactile_sim.launch.py config_file:=/path/sensors.yaml urdf_file:=/path/robot.urdf

Arguments (``ros2 launch tactile_sim tactile_sim.launch.py --show-args``):
  config_file   sensor YAML, a path or package://<pkg>/<path>            (the demo configuration)
  urdf_file     URDF file whose text becomes the robot_description parameter; empty: the configuration's
                robot.urdf, else the node waits for the latched /robot_description topic              ("")
  params_file   ros__parameters YAML of the node                         (<share>/config/params.yaml)
  update_rate   Hz; empty keeps params_file's value                      ("")
  publish_ground_truth  true/false; empty keeps params_file's value      ("")
  use_sim_time  follow /clock                                            (false)
  namespace     ROS namespace of the node                                ("")
  node_name     name of the node                                         (tactile_sim_node)
  log_level     debug, info, warn, error                                 (info)
"""

from pathlib import Path

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

ARGUMENTS = (
    ("config_file", "package://tactile_sim/config/demo_sensors.yaml", "sensor configuration (path or package://)"),
    ("urdf_file", "", "URDF file for robot_description; empty: the configuration's robot.urdf or /robot_description"),
    ("params_file", "", "node parameters file; empty: the package's config/params.yaml"),
    ("update_rate", "", "Hz; empty keeps the parameters file's value"),
    ("publish_ground_truth", "", "true/false; empty keeps the parameters file's value"),
    ("use_sim_time", "false", "use the /clock topic"),
    ("namespace", "", "namespace of the node"),
    ("node_name", "tactile_sim_node", "name of the node"),
    ("log_level", "info", "logging level"),
)


def _node(context):
    arg = {name: LaunchConfiguration(name).perform(context) for name, _, _ in ARGUMENTS}
    params_file = arg["params_file"] or str(Path(get_package_share_directory("tactile_sim")) / "config" / "params.yaml")
    overrides = {"config_file": arg["config_file"], "use_sim_time": arg["use_sim_time"].lower() == "true"}
    if arg["urdf_file"]:
        overrides["robot_description"] = ParameterValue(Path(arg["urdf_file"]).read_text(), value_type=str)
    if arg["update_rate"]:
        overrides["update_rate"] = float(arg["update_rate"])
    if arg["publish_ground_truth"]:
        overrides["publish_ground_truth"] = arg["publish_ground_truth"].lower() == "true"
    return [Node(
        package="tactile_sim",
        executable="tactile_sim_node",
        name=arg["node_name"],
        namespace=arg["namespace"],
        parameters=[params_file, overrides],
        arguments=["--ros-args", "--log-level", arg["log_level"]],
        output="screen",
    )]


def generate_launch_description():
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=text) for name, default, text in ARGUMENTS]
        + [OpaqueFunction(function=_node)])
