"""Tests of the command line (cli.py, cli_eval.py, cli_support.py)."""
