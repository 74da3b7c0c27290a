"""Tests of checkllm_batch/evaluate/judging/."""
