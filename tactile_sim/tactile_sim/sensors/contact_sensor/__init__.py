"""ContactSensor: net contact wrench of whole bodies from a kinematic penalty model."""
