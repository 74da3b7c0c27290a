"""Tests of load/: frames as outputs, promptfoo's results file."""
