"""io layer: tensors → message fields, rosbag2/MCAP read and write, message types from msg/*.msg (rosbags)."""
