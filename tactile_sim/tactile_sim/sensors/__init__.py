"""Sensor models: one module per model (spec/models.md); each maps world state + geometry to ground truth."""
