"""Tool-call checks (docs/assertions/tools.md) on the `tool_calls` column (OpenAI shape: [{id, type, function: {name, arguments}}]).

These come from PromptKit's tool checks (tools_called, tool_args, ...). Checks on the called
tools' names decode the column with Polars (vectorised) and use list expressions; those that
read arguments or errors parse each distinct `tool_calls` value once (orjson). A case without the column at all is an
`error` ("no tool_calls recorded"); a null value in an existing column means no calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
import polars as pl

from ..js.jsonvalue import same_value
from .batch.distinct import Outcome, over_distinct
from .batch.values import number
from .compiled import Ctx, Verdict
from .registry import Kind, Value, assertion, promptkit_names
from .text import plain_items, split_items

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
        if len(names) != len(values):  # Polars decodes a batch of only "" into no rows
            raise pl.exceptions.ShapeError("an empty JSON document")
        problem = pl.Series([None] * len(values), dtype=pl.String)
    except pl.exceptions.PolarsError:
        def one(text: str | None) -> Outcome:
            if text is None:
                return False, _MISSING  # what every null value says below
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


def _names_verdict(ctx: Ctx, check: Callable[[pl.Expr], pl.Expr], expect: pl.Expr | str
                   ) -> Verdict:
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


TOOL: dict[str, Any] = {"kind": Kind.DISTINCT, "needs_text": False}
NAMED: dict[str, Any] = {"prepare": _names, "prepared_dtype": pl.List(pl.String), "prepare_column": plain_items,
         **TOOL}


def _listed(ctx: Ctx, text: str, sep: str = ", ") -> pl.Expr:
    return pl.concat_str([pl.lit(text), ctx.prepared.list.join(sep)])


@assertion("tools-called", **NAMED)
def tools_called(ctx: Ctx) -> Verdict:
    """Every listed tool was called at least once."""
    return _names_verdict(ctx, lambda names: ctx.prepared.list.set_difference(names).list.len()
                          == 0, _listed(ctx, "call the tools "))


@assertion("tools-not-called", **NAMED)
def tools_not_called(ctx: Ctx) -> Verdict:
    """None of the listed tools was called."""
    return _names_verdict(ctx, lambda names: ctx.prepared.list.set_intersection(names).list.len()
                          == 0, _listed(ctx, "call none of the tools "))


def _in_order(joined: str | None, sequence: list[str]) -> Outcome:
    names = iter(joined.split("\x1f") if joined else [])
    return all(step in names for step in sequence), None


@assertion("tool-call-sequence", **NAMED)
def tool_call_sequence(ctx: Ctx) -> Verdict:
    """The listed tools were called in this order (other calls may come in between)."""
    expect = _listed(ctx, "call the tools in order ", " -> ")
    return _names_verdict(  # Python once per distinct (names, sequence)
        ctx, lambda names: ctx.checked(_in_order, expect, over=names.list.join("\x1f")).passed,
        expect)


def _args_spec(value: Any, spec: Any) -> tuple[str, dict]:
    name, expected = spec.args.get("tool_name"), spec.args.get("expected_args")
    if not isinstance(name, str) or not name:
        raise ValueError("tool-args needs `tool_name`")
    if isinstance(expected, str):  # a rendered template: its JSON text
        try:
            expected = orjson.loads(expected)
        except orjson.JSONDecodeError:
            pass
    if not isinstance(expected, dict):
        raise ValueError("tool-args needs `expected_args`, a mapping")
    return name, expected


def _matches(args: Any, expected: dict) -> bool:
    return isinstance(args, dict) and all(k in args and same_value(args[k], v)
                                          for k, v in expected.items())


def _on_calls(check: Callable[[list[Call], Any], Outcome]) -> Callable[[Any, Any], Outcome]:
    """`check(calls, prepared)` on a row's `tool_calls` text, parsed; a missing or broken
    value is an error that says so."""

    def run(text: str | None, prepared: Any) -> Outcome:
        if text is None:
            return None, _MISSING
        try:
            calls = parse_calls(text)
        except (orjson.JSONDecodeError, ValueError) as e:
            return None, f"tool_calls is not valid: {e}"
        return check(calls, prepared)

    return run


def _args_check(calls: list[Call], spec: tuple[str, dict]) -> Outcome:
    name, expected = spec
    args = [c[1] for c in calls if c[0] == name]
    if any(_matches(a, expected) for a in args):
        return True, None
    return False, (f"{name} was not called" if not args else
                   "arguments: " + (a if isinstance(a := args[0], str)
                                    else json.dumps(a, ensure_ascii=False))[:200])


@assertion("tool-args", value=Value.NONE, fields=("tool_name", "expected_args"),
           required=("tool_name", "expected_args"), prepare=_args_spec, **TOOL)
def tool_args(ctx: Ctx) -> Verdict:
    """Some call of `tool_name` has every key of `expected_args` with that value."""
    return ctx.checked(_on_calls(_args_check), lambda p: f"call {p[0]} with "
                       + orjson.dumps(p[1]).decode(), over=pl.col("tool_calls"))


def _count_spec(value: Any, spec: Any) -> tuple[str | None, int | None, int | None]:
    tool, lo, hi = spec.args.get("tool"), spec.args.get("min"), spec.args.get("max")
    lo, hi = (b if b is None or isinstance(b, bool) else _whole(b) for b in (lo, hi))
    for bound in (lo, hi):
        if bound is not None and (not isinstance(bound, int) or isinstance(bound, bool) or bound < 0):
            raise ValueError(f"min and max must be integers >= 0, got {bound!r}")
    if lo is None and hi is None:
        raise ValueError("tool-call-count needs `min` or `max`")
    return tool, lo, hi


def _whole(value: Any) -> Any:
    n = number(value)
    return int(n) if n is not None and n == int(n) else value


def _count_check(calls: list[Call], spec: tuple[str | None, int | None, int | None]) -> Outcome:
    tool, lo, hi = spec
    n = sum(1 for c in calls if tool is None or c[0] == tool)
    return (n >= (lo or 0)) and (hi is None or n <= hi), \
        "called: " + (", ".join(c[0] for c in calls) or "no tools")


def _count_expect(spec: tuple[str | None, int | None, int | None]) -> str:
    tool, lo, hi = spec
    bounds = " and ".join(s for s in (lo is not None and f"at least {lo}",
                                      hi is not None and f"at most {hi}") if s)
    return f"make {bounds} calls" + (f" of {tool}" if tool else "")


@assertion("tool-call-count", value=Value.NONE, fields=("tool", "min", "max"),
           prepare=_count_spec, **TOOL)
def tool_call_count(ctx: Ctx) -> Verdict:
    """The number of calls (of `tool`, or of all tools) is within [min, max]."""
    return ctx.checked(_on_calls(_count_check), _count_expect, over=pl.col("tool_calls"))


def _tools_filter(value: Any, spec: Any) -> list[str] | None:
    tools = spec.args.get("tools")
    return None if tools is None else split_items(tools)


def _errors_check(calls: list[Call], tools: list[str] | None) -> Outcome:
    bad = [c for c in calls if c[2] and (tools is None or c[0] in tools)]
    return not bad, "; ".join(f"{c[0]}: {c[2]}" for c in bad) or None


@assertion("no-tool-errors", value=Value.NONE, fields=("tools",), prepare=_tools_filter, **TOOL)
def no_tool_errors(ctx: Ctx) -> Verdict:
    """No tool call (of `tools`, if given) carries an `error` field."""
    return ctx.checked(_on_calls(_errors_check), "have no tool errors", over=pl.col("tool_calls"))


def _repeat_spec(value: Any, spec: Any) -> tuple[list[str] | None, int]:
    limit = _whole(spec.args.get("max_repeats", 1))
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"max_repeats must be a whole number >= 1, got {limit!r}")
    return _tools_filter(value, spec), limit


def _repeats_check(calls: list[Call], spec: tuple[list[str] | None, int]) -> Outcome:
    """PromptKit's rule: each call that extends a run of one tool beyond `limit` is a
    violation, reported as name(run length)."""
    tools, limit = spec
    found, run = [], 1
    for before, (name, _, _) in zip(calls, calls[1:]):
        run = run + 1 if name == before[0] else 1
        if run > limit and (tools is None or name in tools):
            found.append(f"{name}({run}x)")
    return not found, (f"repeated tool calls detected (max {limit}): " + ", ".join(found)
                       if found else None)


@assertion("tool-no-repeat", value=Value.NONE, fields=("tools", "max_repeats"),
           prepare=_repeat_spec, **TOOL)
def tool_no_repeat(ctx: Ctx) -> Verdict:
    """No tool (of `tools`, if given) is called more than `max_repeats` (1) times in a row."""
    return ctx.checked(_on_calls(_repeats_check),
                       lambda p: f"call no tool more than {p[1]} time(s) in a row",
                       over=pl.col("tool_calls"))

# PromptKit's names for these checks (assertions/reading/promptkit.py translates `type` + `params`)
promptkit_names("tools-called", "tools_called", "tool_called", params={"tool_names": "value"})
promptkit_names("tools-not-called", "tools_not_called", params={"tool_names": "value"})
promptkit_names("tool-args", "tool_args",
                params={"tool_name": "tool_name", "expected_args": "expected_args"})
promptkit_names("tool-call-count", "tool_call_count",
                params={"tool": "tool", "min": "min", "max": "max"})
promptkit_names("tool-call-sequence", "tool_call_sequence", params={"sequence": "value"})
promptkit_names("no-tool-errors", "no_tool_errors", params={"tools": "tools"})
promptkit_names("tool-no-repeat", "tool_no_repeat",
                params={"tools": "tools", "max_repeats": "max_repeats"})
