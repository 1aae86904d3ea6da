"""YAML configuration schema (pydantic v2) with precise errors, defaults and path resolution."""
