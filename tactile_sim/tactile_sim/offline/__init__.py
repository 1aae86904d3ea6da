"""The node's main job without ROS: the built-in demo, replay of recorded robot motion from a rosbag2, pictures.

Everything here drives :class:`tactile_sim.ros.node_core.NodeCore` (the rclpy-free logic of ``tactile_sim_node``)
with inputs from a generator or a bag and writes what it returns to a bag (or, for a replay, to arrays:
``array_output``), so the live node, the demo and a replay
produce the same messages from the same inputs. ``run_loop`` is that one loop; ``demo`` and ``replay`` feed it;
``digest``, ``summary`` and ``plots`` reduce and draw what a run (or any bag this project wrote) holds.
"""
