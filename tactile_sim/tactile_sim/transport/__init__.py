"""Transports of tactile_sim_node: the interface the node's wiring uses (``base``) and a ROS 2-compatible DDS
implementation that needs no ROS install (``dds``, with ``names`` for ROS name resolution, ``dds_types`` for message
types built from the ``.msg`` definitions, ``dds_qos`` for QoS and ``graph`` for the ROS graph announcement).
Importing this package imports neither cyclonedds nor rclpy; ``dds`` and ``dds_types`` import cyclonedds.
"""
