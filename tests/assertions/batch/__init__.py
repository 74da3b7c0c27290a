"""Tests of assertions/batch/: per-row values."""
