"""promptfoo's template language (Nunjucks), rendered by jinja2 configured to match it.

promptfoo renders assertion values with `nunjucks.renderString(value, vars)` (autoescape off,
undefined names print as nothing) after normalising the vars: one trailing newline is cut
from each string var, and a var holding `{{other}}` takes the other var's value. Values print
as JavaScript's `String()` does: null as "", true as "true", 1.0 as "1", a list joined by
",", a mapping as "[object Object]". `dump` is JSON.stringify, `load` is JSON.parse.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import jinja2
import jinja2.meta


class TemplateError(ValueError):
    """A template that does not parse, or fails while rendering."""


def js_print(value: Any) -> str:
    """`String(value)` as Nunjucks prints a var (null and undefined as "")."""
    if value is None or isinstance(value, jinja2.Undefined):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, (list, tuple)):
        return ",".join("" if v is None else js_print(v) for v in value)
    if isinstance(value, Mapping):
        return "[object Object]"
    return str(value)


def js_number(value: float) -> str:
    """A float as JavaScript prints a number (1.0 -> "1", nan -> "NaN")."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def _dump(value: Any, indent: int | None = None) -> str:
    if isinstance(value, jinja2.Undefined):
        return ""
    return json.dumps(value, ensure_ascii=False, indent=indent,
                      separators=None if indent else (",", ":"))


def _load(text: Any) -> Any:
    return json.loads(text)


class _Silent(jinja2.ChainableUndefined):
    """Undefined names and attributes print as nothing, as in Nunjucks."""

    def __str__(self) -> str:
        return ""


_ENV = jinja2.Environment(autoescape=False, undefined=_Silent, finalize=js_print,
                          keep_trailing_newline=True)
_ENV.filters.update(dump=_dump, load=_load)


@lru_cache(maxsize=4096)
def _compile(text: str) -> jinja2.Template:
    try:
        return _ENV.from_string(text)
    except jinja2.TemplateSyntaxError as e:
        raise TemplateError(f"template syntax error: {e.message} in {text!r}") from None


def syntax_error(text: str) -> str | None:
    """Why `text` is not a valid template, or None."""
    try:
        _compile(text)
    except TemplateError as e:
        return str(e)
    return None


@lru_cache(maxsize=4096)
def referenced_vars(text: str) -> frozenset[str]:
    """The top-level names a template reads."""
    try:
        return frozenset(jinja2.meta.find_undeclared_variables(_ENV.parse(text)))
    except jinja2.TemplateSyntaxError as e:
        raise TemplateError(f"template syntax error: {e.message} in {text!r}") from None


def render(text: str, vars: Mapping[str, Any]) -> str:
    """Render `text` over `vars` (already normalised by `resolve_vars`)."""
    try:
        return _compile(text).render(vars)
    except TemplateError:
        raise
    except Exception as e:  # a filter or expression failing on this row's values
        raise TemplateError(f"cannot render {text!r}: {e}") from None


_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def resolve_vars(vars: Mapping[str, Any]) -> dict[str, Any]:
    """promptfoo's var normalisation before rendering: cut one trailing newline from each
    string var, then replace `{{other}}` inside a string var by the other var's value (the
    first placeholder of each var per pass, up to five passes)."""
    out = {k: (v[:-1] if isinstance(v, str) and v.endswith("\n") else v) for k, v in vars.items()}
    for _ in range(5):
        changed = False
        for key, value in out.items():
            if not isinstance(value, str):
                continue
            m = _PLACEHOLDER.search(value)
            if m and m.group(1) in out:  # JavaScript: undefined is skipped, null is "null"
                other = out[m.group(1)]
                text = "null" if other is None else js_print(other)
                out[key] = value[:m.start()] + text + value[m.end():]
                changed = True
        if not changed:
            break
    return out
