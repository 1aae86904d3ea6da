"""Sensor models, each mapping world state + geometry to ground truth.

One module per single-module model (``kinematic_taxel``, ``contact_depth``, ``proximity_taxel``,
``surface_distance``); one subpackage per model family that needs several (``elastomer``, ``thermal``,
``contact_sensor``, ``joint_torque``); the shared probe layouts (``layout``) and point machinery (``points``:
probe sets, surface samples, tracked clouds, the fused cell kernel).
"""
