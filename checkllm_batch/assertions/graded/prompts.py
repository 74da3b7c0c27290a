"""How a grading prompt is rendered. A prompt is a list of (role, template) messages; each
type's default (promptfoo's) is in the type's module. Templates use `{{ name }}`; `render`
fills them from a dict, `to_exprs` as Polars expressions over a batch's distinct inputs. A
user's `rubricPrompt` (a string, or a JSON list of {role, content} messages) replaces the
default.
"""

from __future__ import annotations

import json
import re
from typing import Any

import polars as pl

from ...js import nunjucks

Messages = list[tuple[str, str]]
_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}")
_ANY_TAG = re.compile(r"\{\{|\{%|\{#")


def to_exprs(messages: Messages, columns: set[str]) -> list[pl.Expr] | None:
    """Each message rendered as a Polars expression over input columns (concat_str), or
    None when the template names something that is not a column (then render per item)."""
    out = []
    for _, text in messages:
        if _full_template(text):
            return None
        parts: list[pl.Expr] = []
        pos = 0
        for m in _VAR.finditer(text):
            if m.group(1) not in columns:
                return None
            parts += [pl.lit(text[pos:m.start()]),
                      pl.col(m.group(1)).cast(pl.String).fill_null("")]
            pos = m.end()
        parts.append(pl.lit(text[pos:]))
        out.append(pl.concat_str(parts))
    return out


def render(messages: Messages, values: dict[str, Any]) -> Messages:
    """The messages with `values` filled in; a user's prompt with more than `{{ name }}`
    (filters such as `{{ output | dump }}`, `{% if %}`) renders as Nunjucks does."""
    return [(role, _render_text(text, values)) for role, text in messages]


def _full_template(text: str) -> bool:
    return bool(_ANY_TAG.search(_VAR.sub("", text)))


def _render_text(text: str, values: dict[str, Any]) -> str:
    if _full_template(text):
        try:
            return nunjucks.render(text, values)
        except nunjucks.TemplateError:
            pass  # a filter failing on this item's values: its placeholders filled plainly
    return _VAR.sub(lambda m: _text(values.get(m.group(1))), text)


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def from_rubric_prompt(value: Any) -> Messages:
    """A user's rubricPrompt: a plain prompt, or a (JSON) list of {role, content} messages."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return [("user", value)]
    if isinstance(value, list) and all(isinstance(m, dict) and "content" in m for m in value):
        return [(str(m.get("role", "user")), str(m["content"])) for m in value]
    if isinstance(value, str):
        return [("user", value)]
    raise ValueError("rubricPrompt must be a string or a list of {role, content} messages")
