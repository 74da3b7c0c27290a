"""checkllm_batch: score large datasets of LLM outputs against promptfoo-style suites.

    import checkllm_batch as cb
    suite = cb.load("suite.yaml")
    run = cb.evaluate(suite, "outputs.parquet", db="results.duckdb")
    run.test_results, run.named_metrics, run.derived_metrics   # Polars frames
    scored = cb.score(pandas_df, suite)   # the same frame back, with verdict columns
    res = cb.Results("results.duckdb")                         # questions, no SQL needed
    res.pass_rates(), res.failures(), res.classification("label").summary
"""

from . import _memory  # noqa: F401  (first: before Polars loads)
from . import assertions as _assertions  # noqa: F401  (registers every assertion type)
from .analysis import Results
from .api import Run, evaluate, get_run, open_results, write
from .assertions.custom import batch_check
from .assertions.reading import load_suite as load
from .errors import CheckLLMError, ConfigError, InputError
from .score import score

__all__ = ["CheckLLMError", "ConfigError", "InputError", "Results", "Run", "batch_check",
           "evaluate", "get_run", "load", "open_results", "score", "write"]
