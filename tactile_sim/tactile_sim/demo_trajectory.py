"""Joint trajectory of the demo gripper (``data/demo/gripper.urdf``): open, close on the can, squeeze, slide, open.

The trajectory is periodic (:data:`CYCLE` seconds) and smooth: within each phase every joint moves from the phase's
start to its end positions along the cosine blend s(u) = (1 − cos πu)/2, u = time in phase / duration, so positions
and velocities are continuous and the velocities are exact derivatives. Joint positions are in metres (all three
joints are prismatic); see the URDF for their meaning (finger joints: distance of the finger's inner face from the
centre plane; the can of ``config/demo_sensors.yaml`` has a radius of 0.02 m).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DEMO_URDF = Path(__file__).resolve().parent / "data" / "demo" / "gripper.urdf"
"""The demo gripper's URDF (package data, installed with pip and colcon alike)."""

DEMO_CONFIG = "package://tactile_sim/config/demo_sensors.yaml"
"""The demo's sensor configuration."""

JOINT_NAMES = ("slide", "finger_left_joint", "finger_right_joint")
"""The gripper's actuated joints, in the order of every position vector here."""

OPEN = 0.035
"""Finger joint position when open, m."""
TOUCH = 0.0203
"""Finger position at the end of closing: 0.3 mm off the can, inside the pads' 0.5 mm sensing radius."""
SQUEEZE = 0.0195
"""Finger position while squeezing: the pad surfaces 0.5 mm inside the can's surface."""
SLIDE = 0.004
"""Slide joint travel while squeezing, m."""


@dataclass(frozen=True)
class Phase:
    """One phase: name, duration s, joint positions at its end (m, :data:`JOINT_NAMES` order)."""

    name: str
    duration: float
    end: tuple[float, float, float]


PHASES: tuple[Phase, ...] = (
    Phase("open", 0.5, (0.0, OPEN, OPEN)),
    Phase("closing", 1.5, (0.0, TOUCH, TOUCH)),
    Phase("squeezing", 1.0, (0.0, SQUEEZE, SQUEEZE)),
    Phase("sliding", 1.5, (SLIDE, SQUEEZE, SQUEEZE)),
    Phase("opening", 1.0, (SLIDE, OPEN, OPEN)),
    Phase("returning", 1.0, (0.0, OPEN, OPEN)),
)
"""The phases of one cycle; each starts where the previous one ended (the first where the last ended)."""

CYCLE = sum(p.duration for p in PHASES)
"""Duration of one cycle, s."""


@dataclass(frozen=True)
class TrajectorySample:
    """The trajectory at one time: phase name, positions (3,) m and velocities (3,) m/s in JOINT_NAMES order."""

    phase: str
    position: np.ndarray
    velocity: np.ndarray


def gripper_trajectory(t: float) -> TrajectorySample:
    """The demo trajectory at time t (s since its start; periodic with :data:`CYCLE`, t < 0 holds the start)."""
    t = max(0.0, float(t)) % CYCLE
    start = np.asarray(PHASES[-1].end, dtype=np.float64)
    for phase in PHASES:
        end = np.asarray(phase.end, dtype=np.float64)
        if t < phase.duration:
            u = t / phase.duration
            s = 0.5 * (1.0 - math.cos(math.pi * u))
            ds = 0.5 * math.pi * math.sin(math.pi * u) / phase.duration
            return TrajectorySample(phase.name, start + (end - start) * s, (end - start) * ds)
        t -= phase.duration
        start = end
    return TrajectorySample(PHASES[-1].name, start, np.zeros(3))  # t == CYCLE up to round-off
