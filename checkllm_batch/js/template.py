"""Assertion fields as columns: a literal is a constant, a template is rendered on each row.

promptfoo renders assertion values with Nunjucks over the case's vars (`nunjucks.py`). A
template that is only text and `{{ name }}` placeholders compiles to a column expression
over the `var.<name>` columns (the vars as Nunjucks prints them); any other template renders
once per distinct `vars` of a batch. A list or mapping holding templates renders item by
item, as promptfoo does, into JSON text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import polars as pl

from . import nunjucks

_SIMPLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_ANY_TAG = re.compile(r"\{\{|\{%|\{#")
RENDERED = pl.Struct({"text": pl.String, "error": pl.String})

VAR_PREFIX = "var."
stringify = nunjucks.js_print
resolve_vars = nunjucks.resolve_vars


def var_column(name: str) -> str:
    return VAR_PREFIX + name


def is_template(value: Any) -> bool:
    return isinstance(value, str) and bool(_ANY_TAG.search(value))


def has_template(value: Any) -> bool:
    """A template anywhere in a value: the value itself, a list item or a mapping value."""
    if isinstance(value, list):
        return any(has_template(v) for v in value)
    if isinstance(value, dict):
        return any(has_template(v) for v in value.values())
    return is_template(value)


def value_has_template(value: Any) -> bool:
    """What promptfoo renders in an assertion's value: a string, or a list's strings (a
    mapping, and anything inside a list item that is not a string, stays as written)."""
    if isinstance(value, list):
        return any(is_template(v) for v in value)
    return is_template(value)


def render_value(value: Any, vars: dict[str, Any]) -> Any:
    """An assertion's value rendered over resolved vars, as promptfoo does (see above)."""
    if isinstance(value, list):
        return [nunjucks.render(v, vars) if is_template(v) else v for v in value]
    return nunjucks.render(value, vars) if is_template(value) else value


def render_field(value: Any, vars: dict[str, Any]) -> Any:
    """Any other field rendered over resolved vars: every template string in it."""
    return _render(value, vars)


def _strings(value: Any) -> list[str]:
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return [value] if is_template(value) else []


def template_vars(value: Any) -> set[str]:
    """The vars the templates in `value` read (empty for a template that does not parse)."""
    names: set[str] = set()
    for text in _strings(value):
        if nunjucks.syntax_error(text) is None:
            names |= nunjucks.referenced_vars(text)
    return names


def syntax_error(value: Any) -> str | None:
    """Why a template in `value` does not parse, if one does not."""
    return next((e for e in map(nunjucks.syntax_error, _strings(value)) if e), None)


def render(value: Any, vars: dict[str, Any]) -> Any:
    """`value` with its templates rendered over one case's vars, as promptfoo does: strings,
    and the strings of a list (other items stay as they are)."""
    return _render(value, nunjucks.resolve_vars(vars))


def _render(value: Any, vars: dict[str, Any]) -> Any:
    if isinstance(value, list):
        return [_render(v, vars) for v in value]
    if isinstance(value, dict):
        return {k: _render(v, vars) for k, v in value.items()}
    return nunjucks.render(value, vars) if is_template(value) else value


def _simple_parts(text: str) -> list[str | tuple[str]] | None:
    """Text and `(name,)` placeholders, when the template is nothing else."""
    parts: list[str | tuple[str]] = []
    pos = 0
    for m in _SIMPLE.finditer(text):
        parts += [text[pos:m.start()], (m.group(1),)]
        pos = m.end()
    parts.append(text[pos:])
    return None if any(isinstance(p, str) and _ANY_TAG.search(p) for p in parts) else parts


def rendered(value: Any, rows: pl.DataFrame | None) -> pl.Expr:
    """Struct {text, error} per row: a template string rendered, or a list / mapping holding
    templates rendered into JSON text."""
    if isinstance(value, str):
        parts = _simple_parts(value)
        names = [p[0] for p in parts or () if isinstance(p, tuple)]
        if parts is not None and rows is not None and not _self_referencing(rows, names):
            text = pl.concat_str([pl.lit(p) if isinstance(p, str)
                                  else pl.col(var_column(p[0])).fill_null("") for p in parts if p])
            return pl.struct(text=text, error=pl.lit(None, pl.String))
        return over_vars(lambda vars: _render(value, vars))
    return over_vars(lambda vars: json.dumps(_render(value, vars), ensure_ascii=False))


def text(value: Any, rows: pl.DataFrame | None = None) -> pl.Expr:
    """A field's text on each row: a literal's (JSON for a list or mapping), or its rendering
    (a row whose template fails to render is null)."""
    if has_template(value):
        return rendered(value, rows).struct.field("text")
    if value is None:
        return pl.lit(None, pl.String)
    if isinstance(value, (dict, list)):
        return pl.lit(json.dumps(value, ensure_ascii=False))
    return pl.lit(stringify(value))


def _self_referencing(rows: pl.DataFrame, names: list[str]) -> bool:
    """Some var used holds a `{{...}}` of its own: promptfoo resolves it from the other vars."""
    return any(var_column(n) in rows.columns
               and rows[var_column(n)].str.contains("{{", literal=True).any() for n in names)


def json_printed(texts: pl.Expr) -> pl.Expr:
    """JSON texts as JavaScript's String() prints their values (null stays null), once per
    distinct text: an array's items joined by "," (a nested object "[object Object]")."""

    def run(values: pl.Series) -> pl.Series:
        uniq = values.drop_nulls().unique()
        printed = [stringify(json.loads(v)) for v in uniq.to_list()]  # per distinct value
        table = pl.DataFrame({"v": uniq, "t": printed}, schema={"v": pl.String, "t": pl.String})
        return values.to_frame("v").join(table, on="v", how="left", maintain_order="left")["t"]

    return texts.map_batches(run, return_dtype=pl.String)


def over_vars(render_one: Callable[[dict[str, Any]], str]) -> pl.Expr:
    """{text, error} per row, rendering once per distinct `vars` of the batch."""

    def run(values: pl.Series) -> pl.Series:
        uniq = values.unique()
        texts: list[str | None] = []
        errors: list[str | None] = []
        for raw in uniq.to_list():  # row-wise: a template engine, once per distinct vars
            try:
                texts.append(render_one(nunjucks.resolve_vars(json.loads(raw) if raw else {})))
                errors.append(None)
            except nunjucks.TemplateError as e:
                texts.append(None)
                errors.append(str(e))
        table = pl.DataFrame({"v": uniq, "text": texts, "error": errors},
                             schema={"v": pl.String, "text": pl.String, "error": pl.String})
        return (values.to_frame("v").join(table, on="v", how="left", maintain_order="left",
                                          nulls_equal=True)
                .select(pl.struct("text", "error")).to_series())

    return pl.col("vars").map_batches(run, return_dtype=RENDERED)
