"""An assertion's value on each row, and what the type's `prepare` makes of it.

Every field of an assertion is a column: a literal is the same on every row, a template is
rendered per row (`js/template.py`). A row's value and templated fields make one text key
(the rendered value, or JSON of {value, args} when more than the value is templated). A type
that compiles its value (a regex, a schema, a list of items) compiles each distinct key once,
cached across batches; a key that fails to compile is an error on its rows, with the reason.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from ...js import template
from ...suites.model import AssertionSpec

if TYPE_CHECKING:
    from polars._typing import PolarsDataType  # pl.String or pl.List(pl.String)

PREPARED_ERROR = "error"
# per assertion (its evaluation key): row value -> (prepared, error); bounded
_CACHE: dict[str, dict[str, tuple[Any, str | None]]] = {}
_CACHE_MAX = 100_000


@dataclass(frozen=True)
class RowValues:
    """The templated parts of one assertion, rendered on each row of a batch."""

    spec: AssertionSpec
    prepare: Callable[[Any, AssertionSpec], Any] | None
    key: pl.Expr  # String: the rendered value, or JSON {value, args} when `structured`
    error: pl.Expr  # String: why the row's templates could not be rendered
    structured: bool
    identity: str  # the spec's evaluation key: cached values are this assertion's

    @staticmethod
    def of(spec: AssertionSpec, fields: tuple[str, ...], prepare, rows: pl.DataFrame
           ) -> RowValues | None:
        """None when nothing in the value or the type's fields is templated."""
        args = {k: v for k, v in spec.args.items() if k in fields and template.has_template(v)}
        if not args and not template.value_has_template(spec.value):
            return None
        structured = bool(args) or not isinstance(spec.value, str)
        r = template.rendered(spec.value, rows) if not structured else template.over_vars(
            lambda vars: json.dumps({"value": template.render_value(spec.value, vars),
                                     "args": template.render_field(args, vars)},
                                    ensure_ascii=False))
        return RowValues(spec, prepare, r.struct.field("text"), r.struct.field("error"),
                         structured, spec.eval_key())

    @property
    def value(self) -> pl.Expr:
        """The rendered value as text (JSON text for a list or mapping)."""
        if not self.structured:
            return self.key
        return self.key.str.json_path_match("$.value")

    def spec_for(self, key: str) -> tuple[Any, AssertionSpec]:
        """(the row's value, the spec with the row's fields)."""
        if not self.structured:
            return key, self.spec
        decoded = json.loads(key)
        return decoded["value"], dataclasses.replace(
            self.spec, value=decoded["value"], args={**self.spec.args, **decoded["args"]})

    def prepared(self, key: str | None) -> tuple[Any, str | None]:
        """(what `prepare` makes of this row value, or why it cannot), once per distinct key."""
        if key is None:
            return None, None  # the template failed: `error` says why
        cache = _CACHE.setdefault(self.identity, {})
        hit = cache.get(key)
        if hit is None:
            value, spec = self.spec_for(key)
            try:
                hit = (self.prepare(value, spec) if self.prepare else value), None
            except ValueError as e:
                hit = None, f"value {short_value(value)}: {e}"
            if len(cache) >= _CACHE_MAX:
                cache.clear()
            cache[key] = hit
        return hit

    def per_key(self, fn: Callable[[Any], Any], dtype: PolarsDataType,
                key: pl.Expr | None = None) -> pl.Expr:
        """Struct {value, error} per row: `fn(prepared)` once per distinct key (of `key`, the
        rows to prepare, when not all are)."""
        out = pl.Struct({"value": dtype, PREPARED_ERROR: pl.String})

        def run(keys: pl.Series) -> pl.Series:
            if keys.null_count() == len(keys):  # every row prepared in Polars, or none renders
                return pl.select(pl.struct(
                    pl.repeat(None, len(keys), dtype=dtype).alias("value"),
                    pl.repeat(None, len(keys), dtype=pl.String).alias(PREPARED_ERROR))
                ).to_series()
            uniq = keys.unique()
            values, errors = [], []
            for key in uniq.to_list():  # per-distinct: prepare (compile) each value once
                prepared, error = self.prepared(key)
                values.append(None if error or key is None else fn(prepared))
                errors.append(error)
            table = pl.DataFrame({"k": uniq, "value": _series(values, dtype),
                                  PREPARED_ERROR: errors},
                                 schema={"k": pl.String, "value": dtype, PREPARED_ERROR: pl.String})
            return (keys.to_frame("k").join(table, on="k", how="left", maintain_order="left",
                                            nulls_equal=True)
                    .select(pl.struct("value", PREPARED_ERROR)).to_series())

        return (self.key if key is None else key).map_batches(run, return_dtype=out)


def _series(values: list, dtype: PolarsDataType) -> pl.Series:
    """A Series of `dtype`; lists of strings go through one vectorised split (Polars builds
    nested lists from Python objects one element at a time)."""
    if dtype == pl.List(pl.String):
        joined = [None if v is None else "\x1f".join(v) for v in values]
        empty = pl.Series([v is not None and not v for v in values], dtype=pl.Boolean)
        lists = pl.Series(joined, dtype=pl.String).str.split("\x1f")  # "" splits to [""]
        return pl.select(pl.when(empty).then(pl.lit([], dtype)).otherwise(lists)).to_series()
    return pl.Series(values, dtype=dtype)


def literal_column(value: Any, dtype: PolarsDataType) -> pl.Expr:
    """A constant column of `dtype` holding `value`."""
    return pl.lit(pl.Series([value], dtype=dtype)).first()


def number(value: Any) -> float | None:
    """A number, or the text of one (a rendered template); None for anything else."""
    if isinstance(value, str):
        try:
            value = float(value.strip()) if value.strip() else None
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def short_value(value: Any) -> str:
    """A value as a reason quotes it: repr, shortened to 60 characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return repr(text if len(text) <= 60 else text[:59] + "…")
