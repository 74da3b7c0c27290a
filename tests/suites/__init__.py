"""Tests of suites/: the suite reader, from a file or a mapping."""
