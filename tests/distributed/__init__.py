"""Tests of distributed/: the Ray engine."""
