"""What a vector type's function gets and returns: `Ctx`, one assertion compiled for one batch
(its value as a Polars expression, its threshold and parse-time prepared arguments), and
`Verdict`, Polars expressions giving each row's outcome over the whole batch."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import polars as pl

from ..suites.model import AssertionSpec
from .batch.distinct import Outcome, over_distinct
from .batch.pool import over_distinct_pool
from .batch.values import PREPARED_ERROR, RowValues, literal_column

if TYPE_CHECKING:
    from polars._typing import PolarsDataType  # pl.String or pl.List(pl.String)


@dataclass(frozen=True)
class Ctx:
    """What a type function gets: one assertion, compiled for one batch.

    Every field is a column: `value` is the value's text on each row, and `prepared` what the
    type's `prepare` made of each row's value, as a column of the type's `prepared_dtype`.
    When the value is the same on every row (`row` is None), `literal` is it and `fixed` is
    its prepared form as a Python object, for types that take a faster literal path."""

    spec: AssertionSpec
    value: pl.Expr  # the value's text on each row (JSON text for a list or mapping)
    literal: Any  # the value when it is the same on every row
    threshold: float | None  # the spec's threshold, else the type's default
    prepared: Any = None  # a column of the type's prepared_dtype (None without one)
    fixed: Any = None  # `prepare(literal)` as a Python object, when `row` is None
    output: pl.Expr = field(default_factory=lambda: pl.col("output"))
    key: int = 0
    stash: dict[str, pl.Expr] = field(default_factory=dict)
    providers: dict[str, dict] = field(default_factory=dict)  # Suite.provider_tools
    row: RowValues | None = None  # the templated value and fields, rendered per row
    errors: list[pl.Expr] = field(default_factory=list)  # rows whose value is unusable, and why

    def once(self, expr: pl.Expr, shared: str | None = None) -> pl.Expr:
        """Compute `expr` once per batch and refer to its column. Use it for anything opaque
        or costly (a library call through map_batches), which Polars would otherwise run
        again for every reference. Assertions passing the same `shared` key (naming what is
        computed, e.g. the distance between the output and a value) compute it once."""
        name = (f"__shared_{hashlib.sha1(shared.encode()).hexdigest()[:12]}" if shared
                else f"__k{self.key}_{len(self.stash)}")
        self.stash[name] = expr
        return pl.col(name)

    def column(self, fn: Callable[[Any], Any], dtype: PolarsDataType,
               vectorised: Callable[[pl.Expr], pl.Expr] | None = None) -> pl.Expr:
        """`fn(prepared value)` on each row, as a column of `dtype` (once per distinct value).
        `vectorised`, if given, prepares rendered text values in Polars where it can (null
        where it cannot: those rows are prepared in Python)."""
        if self.row is None:
            return literal_column(fn(self.fixed), dtype)
        # computed once: both the rows left to Python and the result read it
        fast = (self.once(vectorised(self.row.key)) if vectorised and not self.row.structured
                else None)
        key = self.row.key if fast is None else pl.when(fast.is_null()).then(self.row.key)
        result = self.once(self.row.per_key(fn, dtype, key))
        self.errors.append(result.struct.field(PREPARED_ERROR))
        slow = result.struct.field("value")
        return slow if fast is None else pl.coalesce(fast, slow)

    def checked(self, check: Callable[[Any, Any], Outcome],
                expect: pl.Expr | str | Callable[[Any], str],
                over: pl.Expr | None = None, pooled: bool = False, where: pl.Expr | None = None,
                valid: pl.Expr | None = None) -> Verdict:
        """The verdict of `check(x, prepared value)` run once per distinct (x, value) pair,
        x being the output (or `over`); its detail is the reason. `expect` may depend on the
        prepared value. `pooled`: share the work with the process pool (literal values).
        `where`: only the rows to check (the others get null). `valid`: rows whose value the
        type knows to be usable, not prepared again to find its errors."""
        over = self.output if over is None else over
        if self.row is None:
            over = over if where is None else pl.when(where).then(over).otherwise(None)
            fixed = self.fixed
            result = self.once(over_distinct_pool(over, check, fixed) if pooled
                               else over_distinct(over, lambda x: check(x, fixed)))
            text = expect(fixed) if callable(expect) else expect
            return Verdict(result.struct.field("ok"), text, detail=result.struct.field("detail"))
        row = self.row

        def pair(p: dict | None) -> Outcome:
            if p is None:
                return None, None
            prepared, error = row.prepared(p["k"])
            return (None, None) if error or p["k"] is None else check(p["x"], prepared)

        pairs = pl.struct(x=over, k=row.key)
        result = self.once(over_distinct(
            pairs if where is None else pl.when(where).then(pairs).otherwise(None),
                                         pair))
        known = None if valid is None else lambda _: pl.when(valid).then(True)
        wording: pl.Expr | str = (self.column(expect, pl.String) if callable(expect)
                                  else (self.column(lambda _: True, pl.Boolean, known), expect)[1])
        return Verdict(result.struct.field("ok"), wording, detail=result.struct.field("detail"))


@dataclass(frozen=True)
class Verdict:
    """Polars expressions giving each row's outcome. `passed` null means error."""

    passed: pl.Expr
    expect: pl.Expr | str  # completes "Expected output to ...", e.g. 'contain "Paris"'
    score: pl.Expr | None = None  # default: 1.0 when passed, else 0.0
    detail: pl.Expr | None = None  # why, e.g. "distance 7"; also the reason of an error
    named: pl.Expr | None = None  # extra named scores (a GradingResult's), as NAMED_SCORES
    # rows that fail outright, `not-` included, with `detail` as the reason (promptfoo's
    # outputs a type cannot read at all, e.g. tool calls beyond its parser's limits)
    fails: pl.Expr | None = None


# named scores an assertion reports besides its own metric (promptfoo's `namedScores`)
NAMED_SCORES = pl.List(pl.Struct({"metric": pl.String, "score": pl.Float64}))
