"""Suites: YAML → frozen specs (`suites.parse.load_suite`)."""

from .model import AssertionSpec, DerivedMetric, Suite, TestSpec

__all__ = ["AssertionSpec", "DerivedMetric", "Suite", "TestSpec"]
