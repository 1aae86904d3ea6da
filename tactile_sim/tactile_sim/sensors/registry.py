"""Sensor type name (the YAML ``type:``) → the batch class that evaluates it."""

from __future__ import annotations

from .base import SensorBatch
from .contact_depth import ContactDepthProbeBatch, ContactProbeBatch
from .contact_sensor.sensor import ContactSensorBatch
from .elastomer.taxel import ElastomerTaxelBatch
from .joint_torque.sensor import JointTorqueBatch
from .kinematic_taxel import KinematicTaxelBatch
from .proximity_taxel import ProximityTaxelBatch
from .surface_distance import SurfaceDistanceProbeBatch
from .thermal.temperature_grid import TemperatureGridBatch

BATCH_CLASSES: dict[str, type[SensorBatch]] = {
    cls.sensor_type: cls
    for cls in (ContactDepthProbeBatch, ContactProbeBatch, KinematicTaxelBatch, ContactSensorBatch,
                JointTorqueBatch, TemperatureGridBatch, ElastomerTaxelBatch, ProximityTaxelBatch,
                SurfaceDistanceProbeBatch)
}

PROBE_SENSOR_TYPES = ("ContactProbe", "ContactDepthProbe", "KinematicTaxel", "ElastomerTaxel", "ProximityTaxel",
                      "SurfaceDistanceProbe")
"""Types whose layout comes from ``probe_local_pos`` (docs/models/probes.md#probes, docs/models/layouts.md#layouts)."""
