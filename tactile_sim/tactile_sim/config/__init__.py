"""YAML configuration schema (pydantic v2) with precise errors, defaults and path resolution.

Entry points: :func:`load_config` (YAML file or mapping → :class:`SuiteConfig`), :func:`config_from_python` or
direct construction of an option model (``KinematicTaxel(name=..., link=...)``) for the Python API, and
:func:`check_suite` for the cross-section rules. Errors are :class:`~tactile_sim.errors.ConfigError` in the
docs/models/scene.md#common-options format; :func:`suggest` and :func:`config_error` serve scene-level name checks done
by the suite.
"""

from .errors import OptionProblem, combined_error, config_error, format_problem, suggest
from .layouts import ConformingLayout, ConformingSpec, FileLayout, GridLayout, PlanarGridSpec, UrdfTactileLayout
from .loader import config_from_python, load_config, read_yaml
from .materials import TemperatureProperties
from .paths import PACKAGE_PATH_ENV, package_share, resolve_path
from .schema import (
    ObjectConfig,
    PoseConfig,
    RobotConfig,
    ShapeConfig,
    SuiteConfig,
    SuiteSettings,
    TwistConfig,
)
from .sensor_options import (
    SENSOR_TYPES,
    ContactDepthProbe,
    ContactProbe,
    ContactSensor,
    ElastomerTaxel,
    JointTorque,
    KinematicTaxel,
    ProximityTaxel,
    SensorOptions,
    SurfaceDistanceProbe,
    TemperatureGrid,
)
from .suite_checks import check_suite, evaluation_period, evaluation_steps

__all__ = [
    "OptionProblem", "combined_error", "config_error", "format_problem", "suggest",
    "ConformingLayout", "ConformingSpec", "FileLayout", "GridLayout", "PlanarGridSpec", "UrdfTactileLayout",
    "config_from_python", "load_config", "read_yaml", "TemperatureProperties",
    "PACKAGE_PATH_ENV", "package_share", "resolve_path",
    "ObjectConfig", "PoseConfig", "RobotConfig", "ShapeConfig", "SuiteConfig", "SuiteSettings", "TwistConfig",
    "SENSOR_TYPES", "ContactDepthProbe", "ContactProbe", "ContactSensor", "ElastomerTaxel", "JointTorque",
    "KinematicTaxel", "ProximityTaxel", "SensorOptions", "SurfaceDistanceProbe", "TemperatureGrid",
    "check_suite", "evaluation_period", "evaluation_steps",
]
