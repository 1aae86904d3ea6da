"""Error types shared by every layer."""


class ConfigError(ValueError):
    """A configuration or scene-description error.

    The message states, in this order: where (``<file>:<yaml.path>`` or ``<SensorClass>(name='…')``),
    the option, what is wrong, the value received and what is allowed (docs/models/scene.md#common-options).
    """


class SceneError(ConfigError):
    """An inconsistent scene: duplicate body names, invalid shape dimensions, unresolvable meshes."""


def option_error(where: str, option: str, problem: str, got, allowed: str) -> ConfigError:
    """A :class:`ConfigError` in the docs/models/scene.md#common-options format: ``<where>.<option>: <problem>; got
    <got!r>; allowed: <allowed>``."""
    return ConfigError(f"{where}.{option}: {problem}; got {got!r}; allowed: {allowed}")
