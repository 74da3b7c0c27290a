"""Custom logic (docs/assertions/custom.md): python, expression and webhook.

python: an inline Python expression or a function from `file://checks.py:fn`; a function
marked with `@batch_check` gets the whole batch as a Polars DataFrame (the vectorised path),
any other is called once per distinct case (the flagged row-wise fallback). expression: a
DuckDB SQL or Polars SQL expression over the batch's columns, run once per batch. webhook:
each distinct case POSTed to a URL. How each runs is beside this module (scripts.py,
expression.py, webhook.py). The page's assert-set is a group of assertions in the suite,
not a type: suites/sets.py reads it, evaluate/sets.py combines its members' results.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from ..batch import caseframe
from ..compiled import Ctx, Verdict
from ..registry import Kind, assertion
from .expression import RESULT as EXPRESSION
from .expression import check_expression, run_expression
from .scripts import RESULT as SCRIPT
from .scripts import Script, load_script, script_runner
from .scripts import batch_check as batch_check  # re-exported: cb.batch_check
from .webhook import RESULT as WEBHOOK
from .webhook import post_cases, settings


@assertion("python", kind=Kind.DISTINCT, needs_text=False, prepare=load_script, code_ref=True,
           waits=True)
def python(ctx: Ctx) -> Verdict:
    """A Python expression or function decides: bool, score, or a GradingResult dict."""
    script: Script = ctx.fixed
    config = ctx.spec.args.get("config")
    columns = caseframe.all_columns() if ctx.row is None else pl.struct(
        pl.all(), ctx.row.key.alias(caseframe.SCRIPT))
    result = ctx.once(columns.map_batches(script_runner(ctx, config),
                                          return_dtype=pl.Struct(SCRIPT)))
    source = (ctx.column(lambda s: s.source, pl.String) if ctx.row is not None
              else pl.lit(script.source))
    return Verdict(result.struct.field("ok"),
                   pl.concat_str([pl.lit("pass the python check ("), source, pl.lit(")")]),
                   score=result.struct.field("score"), detail=result.struct.field("detail"),
                   named=result.struct.field("named"), fails=result.struct.field("broken"))


@assertion("expression", fields=("engine",), prepare=check_expression, templated=False,
           needs_text=False)
def expression(ctx: Ctx) -> Verdict:
    """A DuckDB SQL (or Polars SQL) expression over the case's columns, run per batch."""
    engine: str = ctx.fixed
    source: str = ctx.literal
    result = ctx.once(caseframe.all_columns().map_batches(
        lambda rows: run_expression(engine, source, rows), return_dtype=pl.Struct(EXPRESSION)))
    r, is_bool = result.struct.field("r"), result.struct.field("is_bool")
    threshold = ctx.threshold
    by_score = (r > 0) if threshold is None else (r >= threshold)
    passed = pl.when(r.is_null()).then(None).when(is_bool).then(r == 1.0).otherwise(by_score)
    return Verdict(passed, f"satisfy the expression {source}", score=r,
                   detail=pl.when(r.is_null()).then(result.struct.field("error"))
                   .when(~is_bool).then(pl.format("value {}", r)))


@assertion("webhook", kind=Kind.DISTINCT, needs_text=False, prepare=settings, templated=False,
           waits=True)
def webhook(ctx: Ctx) -> Verdict:
    """A web service decides: POST {output, context}, read {pass, score, reason}."""
    cfg: dict[str, Any] = ctx.fixed
    result = ctx.once(caseframe.all_columns().map_batches(
        lambda rows: caseframe.over_keys(rows, lambda uniq: post_cases(cfg, uniq), WEBHOOK),
        return_dtype=pl.Struct(WEBHOOK)))
    return Verdict(result.struct.field("ok"), f"pass the webhook {cfg['url']}",
                   score=result.struct.field("score"), detail=result.struct.field("detail"))
