"""Tests of assertions/custom/: python, expression, webhook."""
