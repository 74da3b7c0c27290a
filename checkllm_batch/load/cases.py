"""Turn outputs batches into cases: join rows to tests, normalise outputs, expose vars.

A case has the columns the engine reads: case_id, test_index, output (text), output_kind
('text', 'json' or 'null'), provider, prompt, latency_ms, cost, finish_reason, logprobs
(list of floats), tool_calls (JSON text; null when the outputs have no such column, `[]` for
a row without calls), tools (JSON text or null), and `var.<name>` for each var a
`{{template}}` uses. Other outputs columns are vars (a template reads them as `{{name}}`). A missing column is null.
A var column marked JSON_VAR (a JSON file's, see json_rows.py) holds each row's JSON text, or
null where the row has no such key: the case's `vars` embed it as JSON, or leave it out.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

import polars as pl
import pyarrow as pa

from ..errors import InputError, did_you_mean
from ..js import template
from ..suites.model import Suite

CORE = {"output", "output_kind", "test_id", "__test_index", "provider", "prompt", "latency_ms",
        "cost", "logprobs", "tool_calls", "tools", "metadata", "finish_reason", "description"}
JSON_VAR = b"checkllm:json"  # Arrow field metadata: a var column of JSON texts
_NUMERIC = ("latency_ms", "cost")
_NUMBER = r"(?:-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|null)"
_NUMBER_LIST = rf"^\s*\[\s*(?:{_NUMBER}(?:\s*,\s*{_NUMBER})*)?\s*\]\s*$"


class Plan(Protocol):
    """What cases are built for (evaluate.plan.Plan): the suite, and the vars its templates
    read."""

    @property
    def suite(self) -> Suite: ...

    @property
    def template_vars(self) -> frozenset[str]: ...


class CaseBuilder:
    """Built once from the first batch's schema; turns every batch into a cases frame."""

    def __init__(self, plan: Plan, schema: pa.Schema, source: str):
        self.plan, self.suite, self.source, self.schema = plan, plan.suite, source, schema
        names = set(schema.names)
        if "output" not in names:
            guess = did_you_mean("output", names)
            raise InputError(f"{source}: no `output` column{guess}; columns are: "
                             + ", ".join(schema.names))
        self.row_vars = [n for n in schema.names if n not in CORE]
        self.json_vars = {f.name for f in schema if JSON_VAR in (f.metadata or {})}
        self.by_name = _test_names(self.suite)
        self.tests = self._tests_frame()

    def _tests_frame(self) -> pl.DataFrame:
        row_vars = set(self.row_vars)
        frame: dict[str, list[Any]] = {"test_index": [], "description": [], "__test_id": [], "__vars_head": [],
                 "__test_prompt": []}
        test_only = sorted(self.plan.template_vars - row_vars)
        for name in test_only:
            frame[template.var_column(name)] = []
        for t in self.suite.tests:
            frame["test_index"].append(t.index)
            frame["description"].append(t.description)
            frame["__test_id"].append(t.id or t.description if self.suite.inline_tests else None)
            own = {k: v for k, v in t.vars.items() if k not in row_vars}
            head = json.dumps(own, ensure_ascii=False, default=str)[:-1]
            frame["__vars_head"].append(head + ("," if own and self.row_vars else ""))
            frame["__test_prompt"].append(template.render(t.prompt, t.vars) if t.prompt else None)
            resolved = template.resolve_vars(t.vars)
            for name in test_only:
                value = resolved.get(name)
                frame[template.var_column(name)].append(
                    None if value is None else template.stringify(value))
        return pl.DataFrame(frame, schema_overrides={
            "test_index": pl.Int32, **{template.var_column(n): pl.String for n in test_only}})

    def vars_heads(self) -> list[str | None]:
        """Per test index, the JSON text a case's `vars` starts with: its test's own vars,
        then the row's (`build` appends those)."""
        heads = dict(zip(self.tests["test_index"].to_list(), self.tests["__vars_head"].to_list()))
        return [heads.get(i) for i in range(max(heads, default=-1) + 1)]

    def build(self, batch: pa.RecordBatch, first_case_id: int) -> pl.DataFrame:
        df = pl.from_arrow(batch)
        assert isinstance(df, pl.DataFrame)
        df = df.with_columns(case_id=pl.int_range(first_case_id, first_case_id + df.height,
                                                  dtype=pl.Int64))
        df = df.with_columns(test_index=self._test_index(df))
        columns = [
            "case_id", "test_index",
            *_output(df),
            *(pl.col(c).cast(pl.String) if c in df.columns else pl.lit(None, pl.String).alias(c)
              for c in ("provider", "prompt")),
            *(self._number(df, c) for c in _NUMERIC),
            _json_text(df, "tool_calls"),
            *_provider_metadata(df),
            pl.col("test_id").cast(pl.String) if "test_id" in df.columns
            else pl.lit(None, pl.String).alias("test_id"),
            (pl.col("description").cast(pl.String) if "description" in df.columns
             else pl.lit(None, pl.String)).alias("__row_description"),
            self._row_json().alias("__row_vars"),
            *((_json_as_text(name) if name in self.json_vars else _as_text(df, name))
              .alias(template.var_column(name))
              for name in self.plan.template_vars if name in self.row_vars),
        ]
        cases = df.select(columns).join(self.tests, on="test_index", how="left")
        return cases.with_columns(
            test_id=pl.coalesce("test_id", "__test_id"),
            prompt=pl.coalesce("prompt", "__test_prompt"),
            description=pl.coalesce("__row_description", "description"),  # the row's own first
            vars=self._vars(),
        ).drop("__test_id", "__test_prompt", "__vars_head", "__row_vars", "__row_description")

    def _row_json(self) -> pl.Expr:
        """The row's vars as the end of a JSON object: '"a":1,"b":"x"}'. A JSON var's text
        goes in as it is, and a row without it leaves it out."""
        if not self.json_vars:
            return (pl.struct(self.row_vars).struct.json_encode().str.slice(1)
                    if self.row_vars else pl.lit("}"))
        members = []
        for name in self.row_vars:
            if name in self.json_vars:
                members.append(pl.concat_str(pl.lit(json.dumps(name) + ":"), pl.col(name)))
            else:
                encoded = pl.struct(name).struct.json_encode()  # '{"<name>":<json>}'
                members.append(encoded.str.slice(1, encoded.str.len_chars() - 2))
        return pl.concat_str(pl.concat_str(members, separator=",", ignore_nulls=True), pl.lit("}"))

    def _vars(self) -> pl.Expr:
        """A case's vars: its test's own, then its row's (no comma after the test's where
        the row has none: every one of its vars is a JSON var it lacks)."""
        head, row = pl.col("__vars_head"), pl.col("__row_vars")
        if self.json_vars:
            head = pl.when(row == "}").then(head.str.strip_suffix(",")).otherwise(head)
        return pl.concat_str(head, row)

    def _number(self, df: pl.DataFrame, name: str) -> pl.Expr:
        """latency_ms / cost as floats; text that is no number is null for its row."""
        if name not in df.columns:
            return pl.lit(None, pl.Float64).alias(name)
        dtype = df.schema[name]
        if not (dtype.is_numeric() or dtype in (pl.String, pl.Null, pl.Boolean)):
            raise InputError(f"{self.source}: column {name!r} must hold numbers, got {dtype}")
        return pl.col(name).cast(pl.Float64, strict=False)

    def _test_index(self, df: pl.DataFrame) -> pl.Expr:
        if "__test_index" in df.columns:
            return pl.col("__test_index").cast(pl.Int32)
        if not self.suite.inline_tests:
            return pl.lit(0, pl.Int32)
        if "test_id" not in df.columns:
            if len(self.suite.tests) == 1:
                return pl.lit(0, pl.Int32)
            raise InputError(f"{self.source}: no `test_id` column to join rows to the suite's "
                             f"{len(self.suite.tests)} tests (by test id or description)")
        ids = df["test_id"].cast(pl.String)
        index = ids.replace_strict(self.by_name, default=None, return_dtype=pl.Int32)
        bad = index.is_null()
        if bad.any():
            row = int(bad.arg_true()[0])
            name = ids[row]
            if name is None:
                raise InputError(f"{self.source}: row {int(df['case_id'][row]) + 1} has no "
                                 "test_id (the id or description of the test it answers)")
            shared = [t.where.test or f"test {t.index + 1}" for t in self.suite.tests
                      if t.description == name]
            if len(shared) > 1:
                raise InputError(
                    f"{self.source}: row {int(df['case_id'][row]) + 1}: test_id {name!r} is the "
                    f"description of {len(shared)} tests ({', '.join(shared)}): give them ids")
            raise InputError(
                f"{self.source}: row {int(df['case_id'][row]) + 1}: test_id {name!r} matches no "
                f"test in the suite" + did_you_mean(str(name), self.by_name))
        return pl.lit(index)


def _test_names(suite: Suite) -> dict[str, int]:
    """test_id -> test index: by id, else by a description no other test shares."""
    described: dict[str, list[int]] = {}
    for t in suite.tests:
        if t.description is not None:
            described.setdefault(t.description, []).append(t.index)
    names = {d: tests[0] for d, tests in described.items() if len(tests) == 1}
    names.update({t.id: t.index for t in suite.tests if t.id is not None})  # an id wins
    return names


def _output(df: pl.DataFrame) -> list[pl.Expr]:
    dtype = df.schema["output"]
    if dtype == pl.String:
        text = pl.col("output")
        kind = pl.when(text.is_null()).then(pl.lit("null")).otherwise(pl.lit("text"))
        if "output_kind" in df.columns:
            kind = pl.coalesce(pl.col("output_kind"), kind)
        return [text, kind.alias("output_kind")]
    encoded = pl.struct("output").struct.json_encode()  # '{"output":<json>}'
    text = pl.when(pl.col("output").is_null()).then(None).otherwise(
        encoded.str.slice(10, encoded.str.len_chars() - 11))
    kind = pl.when(pl.col("output").is_null()).then(pl.lit("null")).otherwise(pl.lit("json"))
    return [text.alias("output"), kind.alias("output_kind")]


def _json_text(df: pl.DataFrame, name: str) -> pl.Expr:
    """A JSON-valued column (e.g. OpenAI `tool_calls`) as JSON text; a null row is `[]`."""
    if name not in df.columns:
        return pl.lit(None, pl.String).alias(name)
    if df.schema[name] == pl.String:
        text = pl.col(name)
    else:
        encoded = pl.struct(name).struct.json_encode()  # '{"<name>":<json>}'
        text = encoded.str.slice(len(name) + 4, encoded.str.len_chars() - len(name) - 5)
    return pl.when(pl.col(name).is_null()).then(pl.lit("[]")).otherwise(text).alias(name)


def _provider_metadata(df: pl.DataFrame) -> list[pl.Expr]:
    """finish_reason as text, logprobs as a list of floats, tools and metadata as JSON text."""
    out = [pl.col("finish_reason").cast(pl.String) if "finish_reason" in df.columns
           else pl.lit(None, pl.String).alias("finish_reason")]
    logprobs = pl.List(pl.Float64)
    dtype = df.schema.get("logprobs")
    if dtype is None:
        out.append(pl.lit(None, logprobs).alias("logprobs"))
    elif isinstance(dtype, pl.List) and (dtype.inner.is_numeric() or dtype.inner == pl.Null):
        out.append(pl.col("logprobs").cast(logprobs, strict=False))
    else:  # text, or JSON of another shape: null unless it is a JSON list of numbers
        text = _json_or_null(df, "logprobs")
        out.append(pl.when(text.str.contains(_NUMBER_LIST)).then(text).otherwise(None)
                   .str.json_decode(logprobs).alias("logprobs"))
    out += [_json_or_null(df, name).alias(name) for name in ("tools", "metadata")]
    return out


def _json_or_null(df: pl.DataFrame, name: str) -> pl.Expr:
    """A JSON-valued column as JSON text; a null row stays null."""
    if name not in df.columns or df.schema[name] == pl.Null:
        return pl.lit(None, pl.String)
    if df.schema[name] == pl.String:
        return pl.col(name)
    encoded = pl.struct(name).struct.json_encode()  # '{"<name>":<json>}'
    head = len(name) + 4
    return pl.when(pl.col(name).is_null()).then(None).otherwise(
        encoded.str.slice(head, encoded.str.len_chars() - head - 1))


def _js_decimal(text: pl.Expr) -> pl.Expr:
    """Polars' text of a float as JavaScript prints it: in decimals, not with an exponent,
    from 1e-6 to below 1e21 (Polars: "1.5e-6", "1.2345e+19"; JavaScript: "0.0000015",
    "12345000000000000000"), and a whole number without ".0"."""
    parts = text.str.extract_groups(r"^(-?)(\d)\.?(\d*)e([+-]\d+)$")
    sign, digits = parts.struct[0], pl.concat_str(parts.struct[1], parts.struct[2])
    exp = parts.struct[3].cast(pl.Int32)
    big = pl.concat_str(digits, pl.lit("0" * 21)).str.slice(0, (exp + 1).clip(0, 21))
    small = pl.concat_str(pl.lit("0." + "0" * 6).str.slice(0, (1 - exp).clip(0, 8)), digits)
    return (pl.when((exp >= 0) & (exp < 21)).then(pl.concat_str(sign, big))
            .when((exp < 0) & (exp >= -6)).then(pl.concat_str(sign, small))
            .otherwise(text.str.strip_suffix(".0")))  # 2**53 and up: "9007199254740994.0"


def _as_text(df: pl.DataFrame, name: str) -> pl.Expr:
    """A var column as Nunjucks would print it into a template."""
    dtype = df.schema[name]
    if dtype == pl.String:  # promptfoo cuts one trailing newline from a string var
        return pl.col(name).str.strip_suffix("\n")
    return _printed(pl.col(name), dtype)


def _json_as_text(name: str) -> pl.Expr:
    """A JSON var as `_as_text` prints its value: a string's text (one trailing newline cut),
    a number, true or false as JavaScript prints them, an object as "[object Object]", an
    array's items joined by "," (template.json_printed); null, or no value, is null."""
    text = pl.col(name)
    first = text.str.head(1)
    string, number, array = first == '"', first.is_in(list("-0123456789")), first == "["

    def only(rows: pl.Expr) -> pl.Expr:  # those rows' text, the others null: not decoded
        return pl.when(rows).then(text)

    return (pl.when(string).then(only(string).str.json_decode(pl.String).str.strip_suffix("\n"))
            .when(number).then(_printed(only(number).cast(pl.Float64), pl.Float64))
            .when(text.is_in(["true", "false"])).then(text)
            .when(first == "{").then(pl.lit("[object Object]"))
            .when(array).then(template.json_printed(only(array))))


def _printed(col: pl.Expr, dtype: pl.DataType | pl.datatypes.DataTypeClass) -> pl.Expr:
    """Values of `dtype` as JavaScript's String() prints them (a list's items joined by ",",
    a null item as nothing)."""
    if dtype.is_float():  # as JavaScript prints a number: 1.0 -> "1", inf -> "Infinity"
        whole = (col == col.round()) & (col.abs() < 2**53)  # beyond: shortest digits
        return (pl.when(col.is_nan()).then(pl.lit("NaN"))
                .when(col == float("inf")).then(pl.lit("Infinity"))
                .when(col == float("-inf")).then(pl.lit("-Infinity"))
                .when(whole).then(col.cast(pl.Int64, strict=False).cast(pl.String))
                .otherwise(_js_decimal(col.cast(pl.String))))
    if dtype.is_integer():  # JavaScript holds a double: 123456789012345678 prints ...680
        exact = (col < 2**53) & (col > -(2**53))
        return pl.when(exact).then(col.cast(pl.String)).otherwise(
            _js_decimal(col.cast(pl.Float64).cast(pl.String)))
    if isinstance(dtype, pl.List):
        item = _printed(pl.element(), dtype.inner).fill_null("")
        return col.list.eval(item).list.join(",")
    if isinstance(dtype, pl.Struct):
        return pl.when(col.is_null()).then(None).otherwise(pl.lit("[object Object]"))
    return col.cast(pl.String)
