"""Tool-call checks: OpenAI tools/function calls (and Google function calls) against declared
schemas, and tool-call-f1.

The calls come from the case's `tool_calls` column when it is set, else from the output
(an OpenAI `tool_calls` array, or a message object holding one). Declared tools come from
the case's `tools` column when set, else from the assertion (`value` or `config.tools` /
`config.functions`). Each distinct (calls, tools) pair is checked once.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema_rs
import orjson
import polars as pl

from ..spec import template
from ._support.pool import over_distinct_pool
from ._support.toolnames import ToolCallParseError, tool_names
from .registry import Ctx, Kind, Value, Verdict, assertion

NO_TOOLS = ("no tools declared: give them in the assertion (value or config.tools), in the "
            "config of the case's provider under `providers:`, or in a `tools` column")


def _declared(value: Any, spec: Any, key: str) -> list | None:
    """The declared tools: `value`, else `config.<key>`; function calls also read
    `config.tools` (where Google's declarations live)."""
    config = spec.args.get("config") if spec is not None else None
    config = config if isinstance(config, dict) else {}
    found = value
    for name in (key, "tools"):
        found = config.get(name) if found is None else found
    if isinstance(found, dict) and key in found:
        found = found[key]
    if found is not None and not isinstance(found, list):
        raise ValueError(f"{key} must be a list of tool declarations")
    return found


def _calls_and_tools(ctx: Ctx, key: str) -> pl.Expr:
    """The calls, and the declared tools: the case's `tools` column, else the assertion's,
    else those of the case's provider in the suite's `providers:` (promptfoo's source)."""
    fallback = ctx.column(lambda declared: None if declared is None else json.dumps(declared),
                          pl.String)
    by_provider = {name: found for name, config in ctx.providers.items()
                   if (found := config.get(key, config.get("tools"))) is not None}
    of_provider = pl.lit(None, pl.String)
    for name, found in by_provider.items():  # rendered with each case's vars, as promptfoo does
        of_provider = pl.when(pl.col("provider") == name).then(template.text(found)) \
            .otherwise(of_provider)
    return pl.struct(calls=_calls(ctx),
                     tools=pl.coalesce(pl.col("tools"), fallback, of_provider))


def _calls(ctx: Ctx) -> pl.Expr:
    """The case's `tool_calls` column when it holds calls, else the output."""
    recorded = pl.col("tool_calls")
    return pl.when(recorded.is_null() | (recorded == "[]")).then(ctx.output).otherwise(recorded)


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def _validate_args(name: str, arguments: str, schema: dict | None) -> str | None:
    try:
        args = orjson.loads(arguments)
    except orjson.JSONDecodeError as e:
        return f'Call to "{name}": arguments are not JSON: {e}'
    return _schema_problem(name, args, schema)


def _schema_problem(name: str, args: Any, schema: dict | None) -> str | None:
    if schema is None:
        return None
    try:
        validator = jsonschema_rs.validator_for(schema)
    except (jsonschema_rs.ValidationError, ValueError) as e:
        return f'tool "{name}" has an invalid parameters schema: {e}'
    if validator.is_valid(args):
        return None
    error = next(iter(validator.iter_errors(args)))
    return f'Call to "{name}" does not match schema: {error.message}'


_MCP_ERROR = re.compile(r"MCP Tool Error \(([^)]+)\): (.+)")


def tools_call_check(pair: dict, _: Any = None) -> tuple[bool | None, str | None]:
    raw = pair["calls"] or ""
    if "MCP Tool Error" in raw:
        m = _MCP_ERROR.search(raw)
        return False, (f"MCP tool call failed for {m[1]}: {m[2]}" if m
                       else "MCP tool call failed for unknown: unknown error")
    if "MCP Tool Result" in raw:
        return True, None
    calls = _loads(raw)
    if isinstance(calls, dict) and "tool_calls" in calls:
        calls = calls["tool_calls"]
    if not isinstance(calls, list) or not calls or any(
            not isinstance(c, dict) or not isinstance(c.get("function"), dict)
            or not isinstance(c["function"].get("name"), str)
            or not isinstance(c["function"].get("arguments"), str) for c in calls):
        return False, f"not a valid-looking tools response: {raw[:200]}"
    tools = _loads(pair["tools"])
    if not isinstance(tools, list):
        return None, NO_TOOLS
    functions = {t["function"]["name"]: t["function"] for t in tools
                 if isinstance(t, dict) and t.get("type") == "function"
                 and isinstance(t.get("function"), dict) and "name" in t["function"]}
    for call in calls:
        fn = call["function"]
        if fn["name"] not in functions:
            return False, f'Called "{fn["name"]}", but there is no function with that name'
        problem = _validate_args(fn["name"], fn["arguments"], functions[fn["name"]].get("parameters"))
        if problem:
            return False, problem
    return True, None


def function_call_check(pair: dict, _: Any = None) -> tuple[bool | None, str | None]:
    """A legacy OpenAI function call, or Google function calls when the declared tools are
    Google's (`functionDeclarations`), as promptfoo decides by provider."""
    functions = _loads(pair["tools"])
    if isinstance(functions, list) and any(isinstance(f, dict) and "functionDeclarations" in f
                                           for f in functions):
        return _google_calls_check(_loads(pair["calls"] or ""), functions)
    call = _loads(pair["calls"] or "")
    if isinstance(call, dict) and "function_call" in call:
        call = call["function_call"]
    if not isinstance(call, dict) or not isinstance(call.get("name"), str) \
            or not isinstance(call.get("arguments"), str):
        return False, f"not a valid-looking function call: {str(pair['calls'])[:200]}"
    if not isinstance(functions, list):
        return None, NO_TOOLS.replace("config.tools", "config.functions")
    by_name = {f.get("name"): f for f in functions if isinstance(f, dict)}
    if isinstance(functions, list) and not by_name.get(call["name"]):  # tools-shaped list
        by_name.update({t["function"].get("name"): t["function"] for t in functions
                        if isinstance(t, dict) and isinstance(t.get("function"), dict)})
    schema = (by_name.get(call["name"]) or {}).get("parameters")
    if call["name"] not in by_name or schema is None:
        return False, f'Called "{call["name"]}", but there is no function with that name'
    problem = _validate_args(call["name"], call["arguments"], schema)
    return (False, problem) if problem else (True, None)


_GEMINI_TYPES = {"TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"}


def _lower_types(schema: Any) -> Any:
    """A Gemini schema as JSON Schema: its upper-case `type` names lowered."""
    if isinstance(schema, list):
        return [_lower_types(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _lower_types(v) for k, v in schema.items()}
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _GEMINI_TYPES:
        out["type"] = kind.lower()
    elif isinstance(kind, list):
        out["type"] = [t.lower() if t in _GEMINI_TYPES else t for t in kind]
    return out


def _google_calls_check(output: Any, tools: list) -> tuple[bool | None, str | None]:
    """promptfoo's Google rule: the calls are `toolCall.functionCalls`, or the `functionCall`
    parts of a list; each names a declared function and its `args` match its parameters (no
    args are allowed only without parameters). Unlike promptfoo, no call at all fails."""
    if isinstance(output, dict) and isinstance(output.get("toolCall"), dict):
        calls = output["toolCall"].get("functionCalls")
    elif isinstance(output, list):
        calls = [p["functionCall"] for p in output if isinstance(p, dict) and "functionCall" in p]
    else:
        calls = None
    if not isinstance(calls, list) or not calls or not all(
            isinstance(c, dict) and isinstance(c.get("name"), str) for c in calls):
        return False, f"Google did not return a valid-looking function call: {str(output)[:200]}"
    declared = next(t for t in tools if isinstance(t, dict) and "functionDeclarations" in t)
    by_name = {f.get("name"): f for f in declared["functionDeclarations"] or []
               if isinstance(f, dict)}
    for call in calls:
        name, args = call["name"], _loads(call.get("args") or {})
        if name not in by_name:
            return False, f'Called "{name}", but there is no function with that name'
        schema = by_name[name].get("parameters")
        if args and schema:
            problem = _schema_problem(name, args, _lower_types(schema))
            if problem:
                return False, problem
        elif args or schema:
            return False, f'Call to "{name}" does not match schema: {json.dumps(by_name[name])}'
    return True, None


def _tools_value(value: Any, spec: Any) -> list | None:
    return _declared(value, spec, "tools")


def _functions_value(value: Any, spec: Any) -> list | None:
    return _declared(value, spec, "functions")


@assertion("is-valid-openai-tools-call", kind=Kind.DISTINCT, pooled=True,
           value=Value.OPTIONAL, needs_text=False, prepare=_tools_value)
def is_valid_openai_tools_call(ctx: Ctx) -> Verdict:
    """Every tool call names a declared tool and its JSON arguments match its parameters."""
    result = ctx.once(over_distinct_pool(_calls_and_tools(ctx, "tools"), tools_call_check))
    return Verdict(result.struct.field("ok"), "be a valid OpenAI tools call",
                   detail=result.struct.field("detail"))


@assertion("is-valid-openai-function-call", kind=Kind.DISTINCT, pooled=True,
           aliases=("is-valid-function-call",), value=Value.OPTIONAL, needs_text=False, prepare=_functions_value)
def is_valid_openai_function_call(ctx: Ctx) -> Verdict:
    """The output is a function call (legacy OpenAI, or Google's when the declared tools are
    Google's) whose arguments match the declared function."""
    result = ctx.once(over_distinct_pool(_calls_and_tools(ctx, "functions"),
                                         function_call_check))
    return Verdict(result.struct.field("ok"), "be a valid OpenAI function call",
                   detail=result.struct.field("detail"))


# --- tool-call-f1 ---------------------------------------------------------------------------

def _expected_tools(value: Any, spec: Any) -> tuple[str, ...]:
    if isinstance(value, list):
        items = [str(v).strip() for v in value]
    elif isinstance(value, str):
        items = [s.strip() for s in value.split(",")]
    else:
        raise ValueError("value must be a list of tool names or a comma-separated string")
    items = [s for s in items if s]
    if not items:
        raise ValueError("value must name at least one expected tool")
    return tuple(dict.fromkeys(items))


def _f1_check(calls: Any, expected: tuple[str, ...]) -> tuple[bool | None, str | None]:
    try:
        actual = tool_names(calls)
    except ToolCallParseError as e:
        return True, f"0.0|{e}"
    hit = len(set(expected) & actual)
    p = hit / len(actual) if actual else 0.0
    r = hit / len(expected)
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    called = ", ".join(sorted(actual)) or "(none)"
    return True, f"{f1!r}|F1 {f1:.3f} (precision={p:.3f}, recall={r:.3f}); called: [{called}]"


@assertion("tool-call-f1", kind=Kind.DISTINCT, pooled=True,
           needs_text=False, default_threshold=1.0, prepare=_expected_tools)
def tool_call_f1(ctx: Ctx) -> Verdict:
    """F1 between the expected tool names and the tools called (as sets) >= threshold (1.0)."""
    checked = ctx.checked(_f1_check, lambda expected: f"call the tools {', '.join(expected)}"
                          f" with F1 >= {ctx.threshold:g}", over=_calls(ctx), pooled=True)
    parts = checked.detail.str.split_exact("|", 1)
    f1 = parts.struct.field("field_0").cast(pl.Float64)
    return Verdict(f1 >= ctx.threshold, checked.expect, score=f1,
                   detail=parts.struct.field("field_1"))
