"""Tests of the command line (checkllm_batch/cli/)."""
