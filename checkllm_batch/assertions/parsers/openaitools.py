"""OpenAI tools/function calls (and Google function calls) checked against declared schemas,
for is-valid-openai-tools-call and is-valid-openai-function-call (structure.py). Each check
takes one distinct pair {calls, tools} (JSON text) and says whether it holds, and why not.

A declaration the check cannot use gives ok None: no tools at all, none usable (a function
needs a name and a `parameters` schema, as promptfoo 0.123.1 finds it), or a schema that does
not compile. structure.py fails such a row outright, `not-` included (a configuration
problem, not a property of the output).
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema_rs
import orjson

NO_TOOLS = ("no tools declared: give them in the assertion (value or config.tools), in the "
            "config of the case's provider under `providers:`, or in a `tools` column")
NO_USABLE = "no usable function declared (each needs a name and a `parameters` schema)"


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
    validator = jsonschema_rs.validator_for(schema)  # callers check it compiles (_compiles)
    if validator.is_valid(args):
        return None
    error = next(iter(validator.iter_errors(args)))
    return f'Call to "{name}" does not match schema: {error.message}'


def _compiles(name: str, schema: Any) -> str | None:
    """Why the `parameters` of `name` is not a usable JSON Schema, if it is not."""
    try:
        jsonschema_rs.validator_for(schema)
    except (jsonschema_rs.ValidationError, ValueError) as e:
        return f'tool "{name}" has an invalid parameters schema: {e}'
    return None


def _usable(functions: list) -> dict[str, dict]:
    """The declared functions promptfoo can check a call against, by name: those with a
    non-empty name and a `parameters` mapping (the first of a name counts)."""
    by_name: dict[str, dict] = {}
    for f in functions:
        if isinstance(f, dict) and isinstance(f.get("name"), str) and f["name"]:
            by_name.setdefault(f["name"], f)
    return {name: f for name, f in by_name.items() if isinstance(f.get("parameters"), dict)}


def _call_problem(name: str, arguments: str, functions: dict[str, dict]
                  ) -> tuple[bool | None, str] | None:
    """A call checked against the usable functions: None when it holds."""
    if name not in functions:
        return False, f'Called "{name}", but there is no function with that name'
    schema = functions[name]["parameters"]
    unusable = _compiles(name, schema)
    if unusable:
        return None, unusable
    problem = _validate_args(name, arguments, schema)
    return (False, problem) if problem else None


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
    functions = _usable([t["function"] for t in tools if isinstance(t, dict)
                         and t.get("type") == "function" and isinstance(t.get("function"), dict)])
    if not functions:
        return None, NO_USABLE
    for call in calls:
        fn = call["function"]
        problem = _call_problem(fn["name"], fn["arguments"], functions)
        if problem:
            return problem
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
    usable = _usable(functions)
    if not usable:
        return None, NO_USABLE
    return _call_problem(call["name"], call["arguments"], usable) or (True, None)


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
            unusable = _compiles(name, _lower_types(schema))
            if unusable:
                return None, unusable
            problem = _schema_problem(name, args, _lower_types(schema))
            if problem:
                return False, problem
        elif args or schema:
            return False, f'Call to "{name}" does not match schema: {json.dumps(by_name[name])}'
    return True, None
