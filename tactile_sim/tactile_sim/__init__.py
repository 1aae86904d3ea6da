"""tactile_sim — robot skin sensor simulation without a physics engine (library layers; ROS adapter in ``ros``)."""

__version__ = "0.1.0"
