"""JSON text as promptfoo reads it: JavaScript's JSON.parse (js_json_loads), and the JSON
objects found inside free text (extract_json_objects)."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson
import yaml


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def js_json_loads(text: str) -> Any:
    """JavaScript's JSON.parse: strict JSON, where a number too large for a double is
    ±Infinity (`1e400`) and a lone surrogate escape (`"\\ud800"`) is a valid string."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as e:
        try:
            return json.loads(text, parse_constant=_reject_constant)
        except (ValueError, TypeError, RecursionError):
            raise ValueError(str(e)) from None


_LINE_COMMENT = re.compile(r'("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')|(?<![:\w])//[^\n]*')
MAX_SPAN = 100_000


def extract_json_objects(text: str) -> list[Any]:
    """promptfoo's extraction: brace-balanced spans from each `{`, truncated ones auto-closed,
    parsed leniently (strict JSON first, then a YAML flow mapping as js-yaml would)."""
    found: list[Any] = []
    start = text.find("{")
    while start >= 0:
        end, depth = _balanced_end(text, start)
        span = text[start:end] if end else text[start:start + MAX_SPAN] + "}" * depth
        parsed = _lenient(span)
        if isinstance(parsed, dict):
            found.append(parsed)
            start = text.find("{", start + len(span) if end else len(text))
        else:
            start = text.find("{", start + 1)
    return found


def _balanced_end(text: str, start: int) -> tuple[int | None, int]:
    """(end of the brace-balanced span opening at `start`, 0), or (None, braces left open)
    when it does not close within MAX_SPAN characters. Braces are counted anywhere, inside
    strings too, as promptfoo does; str.find skips the text between them at C speed."""
    limit = start + MAX_SPAN
    depth, opening, closing = 1, text.find("{", start + 1, limit), text.find("}", start, limit)
    while closing >= 0:
        if 0 <= opening < closing:
            depth += 1
            opening = text.find("{", opening + 1, limit)
            continue
        depth -= 1
        if depth == 0:
            return closing + 1, 0
        closing = text.find("}", closing + 1, limit)
    return None, depth + (text.count("{", opening, limit) if opening >= 0 else 0)


def _lenient(span: str) -> Any:
    try:
        return orjson.loads(span)
    except orjson.JSONDecodeError:
        pass
    try:
        return yaml.safe_load(_LINE_COMMENT.sub(lambda m: m.group(1) or "", span))
    except yaml.YAMLError:
        return None
