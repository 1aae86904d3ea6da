"""Imperfection pipeline (spec §13): the measured branch, seeded, per env."""
