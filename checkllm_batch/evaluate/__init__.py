"""Evaluation: plan the suite, evaluate batches, combine into test results."""
