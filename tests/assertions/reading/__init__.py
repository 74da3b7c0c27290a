"""Tests of assertions/reading/: CSV __expected cells."""
