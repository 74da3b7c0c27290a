"""Tests of evaluate/: assert-sets and test verdicts."""
