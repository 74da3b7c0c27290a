"""Model-graded types. They become judge requests; without a judge they end as errors."""

from __future__ import annotations

import polars as pl

from .registry import Ctx, Kind, Value, Verdict, assertion

NO_JUDGE = "no judge configured"


def _judge_required(ctx: Ctx) -> Verdict:
    """Until a judge runs them, a model-graded assertion is an explicit error, never a pass."""
    return Verdict(pl.lit(None, dtype=pl.Boolean), "be graded by a judge", detail=pl.lit(NO_JUDGE))


_GRADED = [
    # name, value requirement, extra fields, required fields, default threshold, aliases
    ("llm-rubric", Value.OPTIONAL, ("rubric",), ("value|rubric",), None, ()),
    ("model", Value.OPTIONAL, ("prompt",), ("value|prompt",), 0.8, ()),
    ("model-graded-closedqa", Value.REQUIRED, (), (), None, ()),
    ("factuality", Value.REQUIRED, (), (), None, ("model-graded-factuality",)),
    ("answer-relevance", Value.OPTIONAL, ("query",), (), 0.5, ("model-graded-relevance",)),
    ("context-recall", Value.REQUIRED, ("context",), (), 0.5, ()),
    ("context-relevance", Value.OPTIONAL, ("context", "query"), (), 0.5, ()),
    ("context-faithfulness", Value.OPTIONAL, ("context", "query"), (), 0.5,
     ("model-graded-faithfulness",)),
    ("g-eval", Value.REQUIRED, (), (), 0.7, ()),
]

for _name, _value, _fields, _required, _threshold, _aliases in _GRADED:
    assertion(_name, kind=Kind.JUDGE, value=_value, fields=_fields, required=_required,
              default_threshold=_threshold, aliases=_aliases, needs_text=False)(_judge_required)
