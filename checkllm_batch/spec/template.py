"""`{{ var }}` templates, compiled to Polars expressions so per-row values stay columnar.

promptfoo renders assertion values with Nunjucks over the test's vars. We support the form
that suites use for per-row values, `{{ name }}` (whitespace allowed), and compile it to a
column reference, or a `concat_str` when mixed with text. Vars render as Nunjucks does:
null as "", booleans as true/false, lists joined with ",".
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_ANY_TAG = re.compile(r"\{\{|\{%|\{#")

VAR_PREFIX = "var."


def var_column(name: str) -> str:
    return VAR_PREFIX + name


def is_template(value: Any) -> bool:
    return isinstance(value, str) and bool(_ANY_TAG.search(value))


def template_vars(text: str) -> list[str]:
    return _VAR.findall(text)


def unsupported_syntax(text: str) -> str | None:
    """The part of `text` that is template syntax we cannot compile, if any."""
    rest = _VAR.sub("", text)
    m = _ANY_TAG.search(rest)
    return rest[m.start(): m.start() + 30] if m else None


def to_expr(value: Any) -> pl.Expr:
    """A literal, or for a template string the expression rendering it on each row."""
    if not is_template(value):
        return pl.lit(value)
    parts: list[pl.Expr] = []
    pos = 0
    for m in _VAR.finditer(value):
        if m.start() > pos:
            parts.append(pl.lit(value[pos:m.start()]))
        parts.append(pl.col(var_column(m.group(1))).fill_null(""))
        pos = m.end()
    if pos < len(value):
        parts.append(pl.lit(value[pos:]))
    return parts[0] if len(parts) == 1 else pl.concat_str(parts)


def render(value: Any, vars: dict[str, Any]) -> Any:
    """Render a template against one set of vars (used at parse time, e.g. metric names)."""
    if not is_template(value):
        return value
    return _VAR.sub(lambda m: stringify(vars.get(m.group(1))), value)


def stringify(value: Any) -> str:
    """A var as Nunjucks prints it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ",".join(stringify(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)
