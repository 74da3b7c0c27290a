"""Suites: promptfoo-shaped YAML (or the same as a mapping) -> frozen specs. parse.py reads
the structure, handed how each assertion is checked (assertions/reading: `load_suite`)."""

from .model import AssertionSpec, DerivedMetric, Suite, TestSpec

__all__ = ["AssertionSpec", "DerivedMetric", "Suite", "TestSpec"]
