"""Evaluate one batch of cases: every assertion as Polars expressions, then test results.

The engine adds what all types share: negation (pass flips, score becomes 1 - score),
outputs that are null or not text, statuses and reasons. Model-graded assertions are
handed to the judge, or end as `error: no judge configured`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import polars as pl

from ..assertions import RowValues
from ..assertions.compiled import NAMED_SCORES, Ctx, Verdict
from ..assertions.graded import NO_JUDGE, PENDING
from ..assertions.registry import Kind, VectorType
from ..js import template
from .judging.cascade import CASCADE_SCHEMA
from .judging.jury import VOTES
from .outcome import RESULT_SCHEMA, Reasons, Stop, outcome, stopped
from .plan import Plan, Planned
from .sets import combine_sets
from .verdict import aggregate, verdict

JudgeHook = Callable[[Planned, pl.DataFrame], pl.DataFrame]


def evaluate_batch(plan: Plan, cases: pl.DataFrame, judge: JudgeHook | None = None
                   ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(assertion_results, test_results) for a batch of cases."""
    shared: list[Compiled] = []
    parts: list[pl.DataFrame] = []
    providers = plan.suite.provider_tools
    for p in plan.assertions:
        rows = cases if p.tests is None else cases.filter(pl.col("test_index").is_in(list(p.tests)))
        if rows.height == 0:  # a batch without this assertion's tests (a dataset sorted by test)
            continue
        if p.kind is Kind.JUDGE:
            parts.append(judge(p, rows) if judge else _error_rows(p, rows, NO_JUDGE))
        elif p.kind is Kind.ACROSS:  # decided once every batch is stored (judge/across.py)
            parts.append(_error_rows(p, rows, PENDING))
        elif p.tests is None:
            shared.append(compile_assertion(p, rows, providers))
        else:
            parts.extend(_run(rows, [compile_assertion(p, rows, providers)]))
    if shared:  # one query: Polars runs the assertions' expressions in parallel
        parts.extend(_run(cases, shared))
    # judge and error rows have no named scores, only a jury's rows votes (judging/
    # jury.py), only a cascade's its stage (judging/cascade.py): the diagonal concat gives
    # the others nulls
    empty = pl.DataFrame(schema={**RESULT_SCHEMA, "named_scores": NAMED_SCORES, "votes": VOTES,
                                 **CASCADE_SCHEMA})
    results = pl.concat([empty, *parts], how="diagonal_relaxed")
    results = _with_slots(results, plan.slots)
    if plan.sets.height:
        results = pl.concat([results, combine_sets(plan, results)], how="diagonal_relaxed")
    return results, combine_tests(plan, cases, results)


def _with_slots(results: pl.DataFrame, slots: pl.DataFrame) -> pl.DataFrame:
    """Each result row with the columns of its slot (assertion_index, type, ...), as an inner
    join on (test_index, key), rows in order: a row per slot, when a test uses the same
    assertion twice. Only the keys are joined; the results' own columns (long reasons) are
    gathered only when some row has not exactly one slot."""
    keys = ["test_index", "key"]
    at = (results.select(keys).with_row_index("row")
          .join(slots, on=keys, how="inner", maintain_order="left"))
    if at.height != results.height or at["row"].n_unique() != at.height:
        results = results[at["row"]]
    return results.hstack(at.drop("row", *keys).get_columns())


@dataclass(frozen=True)
class Compiled:
    """One assertion's expressions, in the stages they run in."""

    key: int
    stash: dict[str, pl.Expr]  # once-per-batch intermediates (library calls)
    raw: dict[str, pl.Expr]  # the verdict: passed, score, expect, detail (over the stash)
    outcome: pl.Expr  # struct {status, pass, score, reason} over the raw columns


def _run(rows: pl.DataFrame, compiled: list[Compiled]) -> list[pl.DataFrame]:
    """Evaluate assertions over rows, each intermediate computed once, in three stages."""
    frame = rows.lazy()
    for layer in _layers({k: e for c in compiled for k, e in c.stash.items()}):
        frame = frame.with_columns(**layer)
    frame = (frame.with_columns(**{k: e for c in compiled for k, e in c.raw.items()})
             .select("case_id", "test_index", *(c.outcome.alias(f"o{c.key}") for c in compiled))
             .collect().lazy())
    return [_long(frame.select("case_id", "test_index", pl.col(f"o{c.key}").alias("o")), c.key)
            for c in compiled]


def _layers(stash: dict[str, pl.Expr]) -> list[dict[str, pl.Expr]]:
    """The stash in layers: an intermediate reading another comes in a later layer."""
    layers, rest = [], dict(stash)
    while rest:
        layer = {k: e for k, e in rest.items()
                 if not (set(e.meta.root_names()) & (set(rest) - {k}))}
        if not layer:
            raise RuntimeError(f"intermediates depend on each other: {sorted(rest)}")
        layers.append(layer)
        rest = {k: e for k, e in rest.items() if k not in layer}
    return layers


def _long(frame: pl.LazyFrame, key: int) -> pl.DataFrame:
    return frame.select(
        "case_id", pl.col("test_index").cast(pl.Int32), pl.lit(key, pl.Int32).alias("key"),
        pl.col("o").struct.field("status"), pl.col("o").struct.field("pass"),
        pl.col("o").struct.field("score"), pl.col("o").struct.field("reason"),
        pl.col("o").struct.field("named_scores")).collect()


def compile_assertion(p: Planned, rows: pl.DataFrame, providers: dict | None = None) -> Compiled:
    """The type's verdict, plus what every type shares: negation, non-text outputs, reasons,
    and rows whose value cannot be used (a template or a value that does not compile)."""
    spec, atype = p.spec, p.atype
    assert isinstance(atype, VectorType), f"{atype.name} is no vector type"
    row = RowValues.of(spec, atype.fields, atype.prepare_row or atype.prepare, rows)
    ctx = _context(p, row, rows, providers or {})
    verdict: Verdict = atype.fn(ctx)
    name = f"__r{p.key}_"
    expect = verdict.expect if isinstance(verdict.expect, pl.Expr) else pl.lit(verdict.expect)
    raw_exprs = {
        name + "passed": verdict.passed,
        name + "score": (verdict.score if verdict.score is not None
                         else verdict.passed.cast(pl.Float64)),
        name + "detail": (verdict.detail if verdict.detail is not None
                          else pl.lit(None, pl.String)),
        name + "named": (verdict.named if verdict.named is not None
                         else pl.lit(None, NAMED_SCORES)),
    }
    raw, detail = pl.col(name + "passed"), pl.col(name + "detail")
    # `expect` is read here once, in place: Polars joins nested concatenations into one, so
    # a per-row text is built once for its reason (a column in between would be a copy)
    failed = pl.concat_str([pl.lit("Expected output to " + ("not " if spec.negate else "")),
                            expect.cast(pl.String),
                            pl.concat_str([pl.lit(": "), detail]).fill_null("")])
    kind = pl.col("output_kind")
    stops = [Stop(e.is_not_null(), "error", e) for e in ctx.errors]  # the row's value
    if atype.needs_text:
        accepted = ["text", "json"] if atype.json_ok else ["text"]
        stops.append(Stop(~kind.is_in(accepted), "fail",
                          pl.when(kind == "null").then(pl.lit("output is null"))
                          .otherwise(pl.lit("output is not text (a JSON value)"))))
    if verdict.fails is not None:
        raw_exprs[name + "fails"] = verdict.fails.fill_null(False)
        stops.append(Stop(pl.col(name + "fails"), "fail", detail))
    fields = outcome(raw, pl.col(name + "score"), Reasons(
        failed=failed, error=pl.coalesce(detail, pl.lit("could not be evaluated")), other=detail),
        negate=spec.negate, stops=stops)
    named = pl.when(stopped(raw, stops)).then(None).otherwise(pl.col(name + "named"))
    outcome_struct = pl.struct(*(e.alias(k) for k, e in fields.items()),
                               named.alias("named_scores"))
    return Compiled(p.key, ctx.stash, raw_exprs, outcome_struct)


def _context(p: Planned, row: RowValues | None, rows: pl.DataFrame, providers: dict) -> Ctx:
    spec, atype = p.spec, p.atype
    assert isinstance(atype, VectorType)
    threshold = spec.threshold if spec.threshold is not None else atype.default_threshold
    context = partial(Ctx, spec=spec, threshold=threshold, key=p.key, providers=providers)
    if row is not None:
        ctx = context(value=row.value, literal=None, row=row)
        ctx.errors.append(row.error)
    else:
        fixed = atype.prepare(spec.value, spec) if atype.prepare else spec.value
        ctx = context(value=template.text(spec.value, rows), literal=spec.value, fixed=fixed)
    if atype.prepared_dtype is None:
        return ctx
    return dataclasses.replace(ctx, prepared=ctx.column(lambda v: v, atype.prepared_dtype,
                                                        atype.prepare_column))


def _error_rows(p: Planned, rows: pl.DataFrame, reason: str) -> pl.DataFrame:
    return rows.select(
        "case_id", pl.col("test_index").cast(pl.Int32), pl.lit(p.key, pl.Int32).alias("key"),
        pl.lit("error").alias("status"), pl.lit(None, pl.Boolean).alias("pass"),
        pl.lit(None, pl.Float64).alias("score"), pl.lit(reason).alias("reason"))


def combine_tests(plan: Plan, cases: pl.DataFrame, results: pl.DataFrame) -> pl.DataFrame:
    """One test result per case from its top-level assertions (`verdict.py`), in one query."""
    top = results.lazy().filter(pl.col("parent_index").is_null())
    if "test_index" not in results.columns:  # results read back from the store
        top = top.join(cases.lazy().select("case_id", pl.col("test_index").cast(pl.Int32)),
                       on="case_id")
    thresholds = pl.LazyFrame(
        {"test_index": [t.index for t in plan.suite.tests],
         "threshold": [t.threshold for t in plan.suite.tests]},
        schema={"test_index": pl.Int32, "threshold": pl.Float64})
    # in memory: Polars' default (streaming) engine spends twice the CPU on this small query
    return (cases.lazy().select("case_id", pl.col("test_index").cast(pl.Int32))
            .join(aggregate(top, ["case_id"], plan.order), on="case_id", how="left",
                  maintain_order="left")
            .join(thresholds, on="test_index", how="left", maintain_order="left")
            .select("case_id", **verdict(pl.col("score"))).collect(engine="in-memory"))
