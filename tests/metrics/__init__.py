"""Tests of metrics/: named and derived metrics."""
