"""io layer (no rclpy): readings ↔ messages, rviz markers, rosbag2/MCAP read and write, types from msg/*.msg.

Modules: ``msg_types`` (rosbags typestore of ROS 2 Jazzy + tactile_sim_msgs, CDR, definitions, RIHS01 hashes),
``typestore_cache`` (that typestore from definitions cached on disk, classes made on first use), ``stamps`` (float
seconds ↔ builtin_interfaces/Time), ``readings`` (plain per-sensor data classes), ``encode`` (readings ↔ message
objects), ``markers`` (visualization_msgs markers), ``bag`` (BagWriter / BagReader).
"""
