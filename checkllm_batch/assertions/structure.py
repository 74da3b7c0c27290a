"""Structure checks (docs/assertions/structure.md): is-xml, contains-xml, is-html,
contains-html, is-sql, contains-sql, is-valid-openai-tools-call, is-valid-openai-function-call,
tool-call-f1.

The parser-backed checks (lxml, lexbor, sqlglot, JSON Schema) live in parsers/ (markup.py,
sql.py, openaitools.py) and run once per distinct output of a batch, on every core when a
batch holds many (Ctx.checked / over_distinct_pool with pooled=True); contains-html is a
vectorised count of promptfoo's HTML indicators.

The tool-call types read the calls from the case's `tool_calls` column when it is set, else
from the output (an OpenAI `tool_calls` array, or a message object holding one). Declared
tools come from the case's `tools` column when set, else from the assertion (`value` or
`config.tools` / `config.functions`), else from the case's provider under `providers:`.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from ..js import template
from .batch.pool import over_distinct_pool
from .compiled import Ctx, Verdict
from .parsers.markup import MAX_HTML, contains_xml_check, html_check, xml_check
from .parsers.openaitools import function_call_check, tools_call_check
from .parsers.sql import contains_sql_check, sql_check, sql_options
from .parsers.toolnames import ToolCallParseError, tool_names
from .registry import Kind, Value, assertion

# a library parses each distinct output (DISTINCT), on every core when a batch holds many
PARSED: dict[str, Any] = {"kind": Kind.DISTINCT, "pooled": True}

# --- XML ------------------------------------------------------------------------------------


def _required(value: Any, spec: Any) -> tuple[str, ...]:
    """Required element paths: a comma string, a list, or {requiredElements: [...]}. As in
    promptfoo, any string is split, so "" requires an element named "" (never found)."""
    if value is None or value == [] or value == {}:
        return ()
    if isinstance(value, str):
        return tuple(s.strip() for s in value.split(","))
    if isinstance(value, list):
        return tuple(str(v) for v in value)
    if isinstance(value, dict) and isinstance(value.get("requiredElements"), list):
        return tuple(str(v) for v in value["requiredElements"])
    raise ValueError("value must be a comma-separated string, a list, or {requiredElements: [...]}")


@assertion("is-xml", value=Value.OPTIONAL, prepare=_required, **PARSED)
def is_xml(ctx: Ctx) -> Verdict:
    """The whole output is well-formed XML holding the required element paths, if any."""
    return ctx.checked(xml_check, "be valid XML", pooled=True)


@assertion("contains-xml", value=Value.OPTIONAL, prepare=_required, **PARSED)
def contains_xml(ctx: Ctx) -> Verdict:
    """Some balanced XML region of the output parses and holds the required element paths."""
    return ctx.checked(contains_xml_check, "contain valid XML", pooled=True)


# --- HTML -----------------------------------------------------------------------------------

@assertion("is-html", value=Value.NONE, **PARSED)
def is_html(ctx: Ctx) -> Verdict:
    """The output is an HTML document or fragment: recognised elements, no bare text outside."""
    return ctx.checked(html_check, "be valid HTML", pooled=True)


_INDICATORS = [
    (r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?/>", 1),
    (r"&(?:[a-zA-Z]+|#[0-9]+|#x[0-9a-fA-F]+);", 1),
    (r"(?i)<!DOCTYPE\s+html", 2),
    (r"<!--[^-]*(?:-[^-]+)*-->", 1),
    (r"\s[a-zA-Z-]+=\s*[\"'][^\"']*[\"']", 1),
    (r"(?i)<(?:html|head|body|div|span|p|a|img|h[1-6]|ul|ol|li|table|tr|td|th|form|input|button"
     r"|script|style|link|meta|br|hr)\b", 2),
]


@assertion("contains-html", value=Value.NONE)
def contains_html(ctx: Ctx) -> Verdict:
    """The output holds HTML: at least two of promptfoo's indicators (tags, entities, ...)."""
    out = ctx.output
    opening = out.str.contains(r"<[a-zA-Z][a-zA-Z0-9-]*(?:\s[^>]*)?>")
    closing = out.str.contains(r"</[a-zA-Z][a-zA-Z0-9-]*\s*>")
    tags = (pl.when(opening & closing).then(2).when(opening | closing).then(1).otherwise(0))
    points = pl.sum_horizontal(tags, *(out.str.contains(p).cast(pl.Int32) * w
                                       for p, w in _INDICATORS))
    found = (points >= 2) & (out.str.len_chars() <= MAX_HTML)
    return Verdict(found, "contain HTML", detail=pl.format("{} HTML indicators", points))


# --- SQL ------------------------------------------------------------------------------------

@assertion("is-sql", value=Value.OPTIONAL, prepare=sql_options, **PARSED)
def is_sql(ctx: Ctx) -> Verdict:
    """The whole output parses as SQL of `databaseType` (sqlglot), within the allow-lists."""
    return ctx.checked(sql_check, "be valid SQL", pooled=True)


@assertion("contains-sql", value=Value.OPTIONAL, prepare=sql_options, **PARSED)
def contains_sql(ctx: Ctx) -> Verdict:
    """A ```sql fenced block (or the whole output) is valid SQL, within the allow-lists."""
    return ctx.checked(contains_sql_check, "contain valid SQL", pooled=True)


# --- OpenAI tool and function calls ---------------------------------------------------------

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
    tools = pl.coalesce(pl.col("tools"), fallback, of_provider)
    # a declaration holding a template is rendered with the case's vars, as promptfoo does
    return pl.struct(calls=_calls(ctx), tools=tools, vars=pl.when(
        tools.str.contains("{{", literal=True) | tools.str.contains("{%", literal=True))
        .then(pl.col("vars")))


def _rendered(pair: dict) -> dict:
    """The pair with its declared tools rendered over the case's vars (when it has some)."""
    if pair.get("vars") is None:
        return pair
    tools = template.render(json.loads(pair["tools"]), json.loads(pair["vars"]))
    return {**pair, "tools": json.dumps(tools)}


def _tools_check(pair: dict, _: Any = None) -> tuple[bool | None, str | None]:
    return tools_call_check(_rendered(pair))


def _function_check(pair: dict, _: Any = None) -> tuple[bool | None, str | None]:
    return function_call_check(_rendered(pair))


def _call_verdict(result: pl.Expr, expect: str) -> Verdict:
    """ok null: the declarations cannot be used (none, none usable, a schema that does not
    compile): the row fails outright, `not-` included."""
    ok = result.struct.field("ok")
    return Verdict(ok.fill_null(False), expect, detail=result.struct.field("detail"),
                   fails=ok.is_null())


def _calls(ctx: Ctx) -> pl.Expr:
    """The case's `tool_calls` column when it holds calls, else the output."""
    recorded = pl.col("tool_calls")
    return pl.when(recorded.is_null() | (recorded == "[]")).then(ctx.output).otherwise(recorded)


def _tools_value(value: Any, spec: Any) -> list | None:
    return _declared(value, spec, "tools")


def _functions_value(value: Any, spec: Any) -> list | None:
    return _declared(value, spec, "functions")


@assertion("is-valid-openai-tools-call", value=Value.OPTIONAL, needs_text=False,
           prepare=_tools_value, **PARSED)
def is_valid_openai_tools_call(ctx: Ctx) -> Verdict:
    """Every tool call names a declared tool and its JSON arguments match its parameters."""
    result = ctx.once(over_distinct_pool(_calls_and_tools(ctx, "tools"), _tools_check))
    return _call_verdict(result, "be a valid OpenAI tools call")


@assertion("is-valid-openai-function-call", aliases=("is-valid-function-call",),
           value=Value.OPTIONAL, needs_text=False, prepare=_functions_value, **PARSED)
def is_valid_openai_function_call(ctx: Ctx) -> Verdict:
    """The output is a function call (legacy OpenAI, or Google's when the declared tools are
    Google's) whose arguments match the declared function."""
    result = ctx.once(over_distinct_pool(_calls_and_tools(ctx, "functions"), _function_check))
    return _call_verdict(result, "be a valid OpenAI function call")


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
        return False, str(e)  # promptfoo fails the row, negated or not
    hit = len(set(expected) & actual)
    p = hit / len(actual) if actual else 0.0
    r = hit / len(expected)
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    called = ", ".join(sorted(actual)) or "(none)"
    return True, f"{f1!r}|F1 {f1:.3f} (precision={p:.3f}, recall={r:.3f}); called: [{called}]"


@assertion("tool-call-f1", needs_text=False, default_threshold=1.0, prepare=_expected_tools,
           **PARSED)
def tool_call_f1(ctx: Ctx) -> Verdict:
    """F1 between the expected tool names and the tools called (as sets) >= threshold (1.0)."""
    checked = ctx.checked(_f1_check, lambda expected: f"call the tools {', '.join(expected)}"
                          f" with F1 >= {ctx.threshold:g}", over=_calls(ctx), pooled=True)
    assert checked.detail is not None  # Ctx.checked always words a detail
    read = checked.passed  # False: the output's tool calls could not be read
    parts = checked.detail.str.split_exact("|", 1)
    # unread rows fail before negation (`fails`); their F1 text is the reason, not a number
    f1 = pl.when(read).then(parts.struct.field("field_0").cast(pl.Float64, strict=False))
    return Verdict(f1 >= ctx.threshold, checked.expect, score=f1,
                   detail=pl.when(read).then(parts.struct.field("field_1"))
                   .otherwise(checked.detail), fails=~read)
