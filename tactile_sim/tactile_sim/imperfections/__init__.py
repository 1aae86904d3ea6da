"""Imperfection pipeline (docs/models/imperfections.md#imperfections): the measured branch, seeded, per env."""
