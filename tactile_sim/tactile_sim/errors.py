"""Error types shared by every layer."""


class ConfigError(ValueError):
    """A configuration or scene-description error.

    The message states, in this order: where (``<file>:<yaml.path>`` or ``<SensorClass>(name='…')``),
    the option, what is wrong, the value received and what is allowed (spec §2.6).
    """


class SceneError(ConfigError):
    """An inconsistent scene: duplicate body names, invalid shape dimensions, unresolvable meshes."""
