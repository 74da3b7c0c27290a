"""Assertion types. Importing this package registers every type in `registry.REGISTRY`."""

from . import (  # noqa: F401  (registration)
    custom,
    distance,
    graded,
    json,
    overlap,
    promptkit,
    provider,
    skills,
    structure,
    text,
    tools,
)
from .batch import pool
from .batch.distinct import text_of_distinct
from .batch.values import RowValues
from .compiled import Ctx, Verdict
from .graded.replies import Outcome, Unparsable, failure
from .registry import REGISTRY, Kind, assertion, lookup

# what the rest of the pipeline uses: the registry, the per-row values the engine renders,
# the judge-reply rules the judge applies, the process pool a run starts, and the one way to
# print a column's distinct values with a Python function (the verdicts' reasons)
__all__ = ["REGISTRY", "Ctx", "Kind", "Outcome", "RowValues", "Unparsable", "Verdict",
           "assertion", "failure", "lookup", "pool", "text_of_distinct"]
