"""``demo_trajectory``: publishes the demo gripper's joint trajectory (:mod:`tactile_sim.demo_trajectory`) on
``/joint_states`` (positions and exact velocities, stamped with the node clock) and the static transform that
places the gripper in the world (``world_frame`` → ``base_frame``, identity) on ``/tf_static``.

Parameters: ``rate`` (Hz, default 100), ``world_frame`` ("world"), ``base_frame`` ("base_link"), ``loop`` (repeat
the cycle, default true; otherwise hold the last position).
"""

from __future__ import annotations

import sys

import rclpy
from geometry_msgs.msg import TransformStamped
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

from ..demo_trajectory import CYCLE, JOINT_NAMES, gripper_trajectory
from .process_end import ignore_further_interrupts


class DemoTrajectoryNode(Node):
    """See the module docstring."""

    def __init__(self, **kwargs):
        super().__init__("demo_trajectory", **kwargs)
        rate = self.declare_parameter(
            "rate", 100.0, ParameterDescriptor(description="Hz of /joint_states", read_only=True,
                                               floating_point_range=[FloatingPointRange(from_value=1.0,
                                                                                        to_value=2000.0)])).value
        world = self.declare_parameter("world_frame", "world", ParameterDescriptor(read_only=True)).value
        base = self.declare_parameter("base_frame", "base_link", ParameterDescriptor(read_only=True)).value
        self.loop = self.declare_parameter("loop", True, ParameterDescriptor(read_only=True)).value
        self.joints = self.create_publisher(JointState, "/joint_states", 10)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        static = TransformStamped()
        static.header.stamp = self.get_clock().now().to_msg()
        static.header.frame_id, static.child_frame_id = world, base
        static.transform.rotation.w = 1.0
        self.create_publisher(TFMessage, "/tf_static", latched).publish(TFMessage(transforms=[static]))
        self.start_ns: int | None = None
        self.create_timer(1.0 / rate, self.tick)

    def tick(self) -> None:
        now = self.get_clock().now()
        if self.start_ns is None:
            self.start_ns = now.nanoseconds
        t = (now.nanoseconds - self.start_ns) * 1e-9
        sample = gripper_trajectory(t if self.loop else min(t, CYCLE * (1 - 1e-9)))
        msg = JointState()
        msg.header.stamp = now.to_msg()
        msg.name = list(JOINT_NAMES)
        msg.position = sample.position.tolist()
        msg.velocity = sample.velocity.tolist()
        self.joints.publish(msg)


def main(args: list[str] | None = None) -> int:
    """Console entry point ``demo_trajectory``."""
    rclpy.init(args=args)
    node = DemoTrajectoryNode()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        ignore_further_interrupts()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
