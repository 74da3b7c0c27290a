"""Tests of run/: a run's lifecycle on both engines."""
