"""Answers from a results database as Polars frames: pass rates, failures, metrics,
classification reports, run comparisons, Parquet export and an HTML report.

    from checkllm_batch.analysis import Results
    res = Results("results.duckdb")
    res.pass_rates()                       # last run, per provider x prompt
    res.classification("label").summary    # macro / micro precision, recall, F1
    res.compare(run_a, run_b).regressed
"""

from .classify import Classification
from .compare import Comparison
from .database import Results

__all__ = ["Classification", "Comparison", "Results"]
