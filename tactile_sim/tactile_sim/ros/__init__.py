"""ROS 2 adapter of tactile_sim.

``node_core`` holds the node's logic without rclpy (inputs, update, encoding, markers, diagnostics; driven by tests
and benchmarks directly); ``node`` and ``demo_trajectory_node`` are the only modules that import rclpy. Importing
this package imports neither.
"""
