"""Tests of checkllm_batch/assertions/: one module per assertions module, and the types across modules."""
