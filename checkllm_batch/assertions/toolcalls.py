"""Checks on the `tool_calls` column (OpenAI shape: [{id, type, function: {name, arguments}}]).

These come from PromptKit's tool checks (tools_called, tool_args, ...). Checks on the called
tools' names decode the column with Polars (vectorised) and use list expressions; those that
read arguments or errors parse each distinct `tool_calls` value once (orjson). A case without the column at all is an
`error` ("no tool_calls recorded"); a null value in an existing column means no calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import polars as pl

from .distinct import OUTCOME, Outcome, over_distinct
from .registry import Ctx, Kind, Value, Verdict, assertion
from .text import split_items

Call = tuple[str, Any, Any]  # (name, parsed arguments, error or None)


def parse_calls(text: str) -> list[Call]:
    """The calls as (name, arguments, error); arguments given as JSON text are parsed."""
    calls = orjson.loads(text)
    if isinstance(calls, dict):
        calls = calls.get("tool_calls", [calls])
    if not isinstance(calls, list):
        raise ValueError("tool_calls is not a list")
    out = []
    for call in calls:
        if not isinstance(call, dict):
            raise ValueError(f"a tool call is not an object: {str(call)[:80]}")
        fn = call.get("function", call)
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise ValueError(f"a tool call has no function name: {str(call)[:80]}")
        args = fn.get("arguments", fn.get("args"))
        if isinstance(args, str):
            try:
                args = orjson.loads(args) if args.strip() else {}
            except orjson.JSONDecodeError:
                pass  # kept as text: only an exact expected_args comparison can fail on it
        out.append((fn["name"], args, call.get("error") or fn.get("error")))
    return out


def _over_calls(check: Callable[[list[Call]], Outcome]) -> pl.Expr:
    def run(text: str | None) -> Outcome:
        if text is None:
            return None, "no tool_calls recorded for this case (add a `tool_calls` column)"
        try:
            calls = parse_calls(text)
        except (orjson.JSONDecodeError, ValueError) as e:
            return None, f"tool_calls is not valid: {e}"
        return check(calls)

    return over_distinct(pl.col("tool_calls"), run)


def _verdict(ctx: Ctx, check: Callable[[list[Call]], Outcome], expect: str) -> Verdict:
    result = ctx.once(_over_calls(check))
    return Verdict(result.struct.field("ok"), expect, detail=result.struct.field("detail"))


_NAMES = pl.List(pl.Struct({"function": pl.Struct({"name": pl.String}), "name": pl.String}))
NAMES = pl.Struct({"names": pl.List(pl.String), "problem": pl.String})
_MISSING = "no tool_calls recorded for this case (add a `tool_calls` column)"


def _decode_names(values: pl.Series) -> pl.Series:
    """{names, problem} per row: Polars decodes the JSON (vectorised); a batch with a value it
    cannot decode is parsed once per distinct value instead, to say which and why."""
    try:
        names = values.str.json_decode(_NAMES).list.eval(pl.coalesce(
            pl.element().struct.field("function").struct.field("name"),
            pl.element().struct.field("name")))
        problem = pl.Series([None] * len(values), dtype=pl.String)
    except pl.exceptions.PolarsError:
        def one(text: str | None) -> Outcome:
            try:
                return True, orjson.dumps([c[0] for c in parse_calls(text)]).decode()
            except (orjson.JSONDecodeError, ValueError, TypeError) as e:
                return False, f"tool_calls is not valid: {e}"
        out = over_distinct(pl.col("v"), one).alias("o")
        o = values.to_frame("v").select(out).to_series()
        ok, text = o.struct.field("ok").fill_null(False), o.struct.field("detail")
        none = pl.Series([None] * len(values), dtype=pl.String)
        names = text.zip_with(ok, none).str.json_decode(pl.List(pl.String))
        problem = text.zip_with(~ok, none)
    problem = pl.select(pl.when(values.is_null()).then(pl.lit(_MISSING))
                        .otherwise(pl.lit(problem))).to_series()
    return pl.DataFrame({"names": names, "problem": problem}).to_struct()


def _names_verdict(ctx: Ctx, check: Callable[[pl.Expr], pl.Expr], expect: str) -> Verdict:
    """A verdict from list expressions over the called tools' names (vectorised)."""
    decoded = ctx.once(pl.col("tool_calls").map_batches(_decode_names, return_dtype=NAMES))
    names, problem = decoded.struct.field("names"), decoded.struct.field("problem")
    called = pl.concat_str([pl.lit("called: "), pl.when(names.list.len() > 0)
                            .then(names.list.join(", ")).otherwise(pl.lit("no tools"))])
    return Verdict(pl.when(problem.is_null()).then(check(names)), expect,
                   detail=pl.coalesce(problem, called))


def _names(value: Any, spec: Any) -> list[str]:
    names = split_items(value) if value is not None else []
    if not names:
        raise ValueError("value must list at least one tool name")
    return names


TOOL = {"kind": Kind.DISTINCT, "needs_text": False, "literal_value": True}


@assertion("tools-called", prepare=_names, **TOOL)
def tools_called(ctx: Ctx) -> Verdict:
    """Every listed tool was called at least once."""
    wanted: list[str] = ctx.prepared
    return _names_verdict(ctx, lambda names: pl.all_horizontal(
        names.list.contains(pl.lit(w)) for w in wanted), f"call the tools {', '.join(wanted)}")


@assertion("tools-not-called", prepare=_names, **TOOL)
def tools_not_called(ctx: Ctx) -> Verdict:
    """None of the listed tools was called."""
    banned: list[str] = ctx.prepared
    return _names_verdict(ctx, lambda names: ~pl.any_horizontal(
        names.list.contains(pl.lit(b)) for b in banned), f"call none of the tools {', '.join(banned)}")


@assertion("tool-call-sequence", prepare=_names, **TOOL)
def tool_call_sequence(ctx: Ctx) -> Verdict:
    """The listed tools were called in this order (other calls may come in between)."""
    sequence: list[str] = ctx.prepared

    def in_order(joined: str | None) -> Outcome:
        names = iter(joined.split("\x1f") if joined else [])
        return all(step in names for step in sequence), None

    def check(names: pl.Expr) -> pl.Expr:  # Python once per distinct list of names
        return over_distinct(names.list.join("\x1f"), in_order).struct.field("ok")

    return _names_verdict(ctx, check, f"call the tools in order {' -> '.join(sequence)}")


def _args_spec(value: Any, spec: Any) -> tuple[str, dict]:
    name, expected = spec.args.get("tool_name"), spec.args.get("expected_args")
    if not isinstance(name, str) or not name:
        raise ValueError("tool-args needs `tool_name`")
    if not isinstance(expected, dict):
        raise ValueError("tool-args needs `expected_args`, a mapping")
    return name, expected


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) \
            and not isinstance(a, bool) and not isinstance(b, bool):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


_ARGS = pl.List(pl.Struct({
    "function": pl.Struct({"name": pl.String, "arguments": pl.String}),
    "name": pl.String, "arguments": pl.String}))


def _args_match(expected: dict) -> Callable[[Any], bool]:
    def match(args: Any) -> bool:
        if isinstance(args, str):
            try:
                args = orjson.loads(args) if args.strip() else {}
            except orjson.JSONDecodeError:
                return False
        return isinstance(args, dict) and all(k in args and _same(args[k], v)
                                              for k, v in expected.items())
    return match


def _args_batch(values: pl.Series, name: str, expected: dict) -> pl.Series:
    """{ok, detail} per row. Polars decodes the calls; each distinct arguments text of a
    `name` call is parsed once. A batch Polars cannot decode is parsed per distinct value."""
    match = _args_match(expected)
    try:
        decoded = values.str.json_decode(_ARGS)
    except pl.exceptions.PolarsError:
        def check(calls: list[Call]) -> Outcome:
            args = [c[1] for c in calls if c[0] == name]
            ok = any(match(a) for a in args)
            return ok, None if ok else (f"{name} was not called" if not args else
                                        f"arguments: {str(args[0])[:200]}")
        return values.to_frame("tool_calls").select(_over_calls(check)).to_series()
    calls = (pl.DataFrame({"row": pl.int_range(len(values), eager=True), "c": decoded})
             .explode("c").select("row", name=pl.coalesce(
                 pl.col("c").struct.field("function").struct.field("name"),
                 pl.col("c").struct.field("name")),
                 args=pl.coalesce(pl.col("c").struct.field("function").struct.field("arguments"),
                                  pl.col("c").struct.field("arguments")))
             .filter(pl.col("name") == name))
    distinct = calls["args"].unique()
    table = pl.DataFrame({"args": distinct, "ok": [match(a) for a in distinct.to_list()]},
                         schema={"args": pl.String, "ok": pl.Boolean})  # row-wise: per distinct
    per_row = (calls.join(table, on="args", how="left", nulls_equal=True)
               .group_by("row").agg(pl.col("ok").any(), first=pl.col("args").first()))
    out = (pl.DataFrame({"row": pl.int_range(len(values), eager=True), "v": values})
           .join(per_row, on="row", how="left", maintain_order="left"))
    return out.select(
        ok=pl.when(pl.col("v").is_null()).then(None).otherwise(pl.col("ok").fill_null(False)),
        detail=pl.when(pl.col("v").is_null()).then(pl.lit(_MISSING))
        .when(pl.col("first").is_null()).then(pl.lit(f"{name} was not called"))
        .when(~pl.col("ok")).then(pl.concat_str([pl.lit("arguments: "),
                                                 pl.col("first").str.slice(0, 200)]))).to_struct()


@assertion("tool-args", value=Value.NONE, fields=("tool_name", "expected_args"),
           required=("tool_name", "expected_args"), prepare=_args_spec, **TOOL)
def tool_args(ctx: Ctx) -> Verdict:
    """Some call of `tool_name` has every key of `expected_args` with that value."""
    name, expected = _args_spec(None, ctx.spec)
    result = ctx.once(pl.col("tool_calls").map_batches(
        lambda values: _args_batch(values, name, expected), return_dtype=OUTCOME))
    return Verdict(result.struct.field("ok"),
                   f"call {name} with {orjson.dumps(expected).decode()}",
                   detail=result.struct.field("detail"))


def _count_spec(value: Any, spec: Any) -> tuple[str | None, int | None, int | None]:
    tool, lo, hi = spec.args.get("tool"), spec.args.get("min"), spec.args.get("max")
    for bound in (lo, hi):
        if bound is not None and (not isinstance(bound, int) or isinstance(bound, bool) or bound < 0):
            raise ValueError(f"min and max must be integers >= 0, got {bound!r}")
    if lo is None and hi is None:
        raise ValueError("tool-call-count needs `min` or `max`")
    return tool, lo, hi


@assertion("tool-call-count", value=Value.NONE, fields=("tool", "min", "max"),
           prepare=_count_spec, **TOOL)
def tool_call_count(ctx: Ctx) -> Verdict:
    """The number of calls (of `tool`, or of all tools) is within [min, max]."""
    tool, lo, hi = _count_spec(None, ctx.spec)

    def check(names: pl.Expr) -> pl.Expr:
        n = names.list.len() if tool is None else names.list.count_matches(pl.lit(tool))
        return (n >= (lo or 0)) & (n <= hi if hi is not None else pl.lit(True))

    bounds = " and ".join(s for s in (lo is not None and f"at least {lo}",
                                      hi is not None and f"at most {hi}") if s)
    return _names_verdict(ctx, check, f"make {bounds} calls" + (f" of {tool}" if tool else ""))


def _tools_filter(value: Any, spec: Any) -> list[str] | None:
    tools = spec.args.get("tools")
    return None if tools is None else split_items(tools)


@assertion("no-tool-errors", value=Value.NONE, fields=("tools",), prepare=_tools_filter, **TOOL)
def no_tool_errors(ctx: Ctx) -> Verdict:
    """No tool call (of `tools`, if given) carries an `error` field."""
    tools = _tools_filter(None, ctx.spec)

    def check(calls: list[Call]) -> Outcome:
        bad = [c for c in calls if c[2] and (tools is None or c[0] in tools)]
        return not bad, "; ".join(f"{c[0]}: {c[2]}" for c in bad) or None

    result = ctx.once(_over_calls(check))
    return Verdict(result.struct.field("ok"), "have no tool errors",
                   detail=result.struct.field("detail"))
