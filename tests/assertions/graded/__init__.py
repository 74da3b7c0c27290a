"""Tests of assertions/graded/: the model-graded types with the scripted judge."""
