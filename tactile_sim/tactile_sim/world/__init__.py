"""World layer: robot model, kinematics, dynamics, TF buffer, declared objects and the per-step WorldState."""
