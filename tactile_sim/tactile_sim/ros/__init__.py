"""ROS 2 adapter: the only place that imports rclpy."""
