"""Text matching: contains*, starts-with, equals, regex. All vectorised Polars expressions."""

from __future__ import annotations

import json
from typing import Any

import orjson
import polars as pl

from .distinct import over_distinct
from .jsregex import JsRegex, compile_js
from .registry import Ctx, Verdict, assertion


def js_string(value: Any) -> str:
    """`String(value)` as JavaScript prints a YAML scalar (1.0 -> "1", true -> "true")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def quoted(value: pl.Expr | str, limit: int = 80) -> pl.Expr:
    """The value in quotes for a reason, shortened to `limit` characters."""
    value = value if isinstance(value, pl.Expr) else pl.lit(value)
    short = pl.when(value.str.len_chars() > limit).then(
        pl.concat_str([value.str.slice(0, limit - 1), pl.lit("…")])).otherwise(value)
    return pl.concat_str([pl.lit('"'), short, pl.lit('"')])


def _text_value(ctx: Ctx) -> pl.Expr:
    if ctx.literal is not None:
        return pl.lit(js_string(ctx.literal))
    return ctx.value.cast(pl.String)


@assertion("contains", prepare=lambda v, s: _scalar(v, s))
def contains(ctx: Ctx) -> Verdict:
    """Output contains the value (case-sensitive substring)."""
    value = _text_value(ctx)
    return Verdict(ctx.output.str.contains(value, literal=True),
                   pl.concat_str([pl.lit("contain "), quoted(value)]))


@assertion("icontains", prepare=lambda v, s: _scalar(v, s))
def icontains(ctx: Ctx) -> Verdict:
    """Output contains the value, ignoring case."""
    value = _text_value(ctx)
    found = ctx.output.str.to_lowercase().str.contains(value.str.to_lowercase(), literal=True)
    return Verdict(found, pl.concat_str([pl.lit("contain (any case) "), quoted(value)]))


@assertion("starts-with", prepare=lambda v, s: _scalar(v, s))
def starts_with(ctx: Ctx) -> Verdict:
    """Output starts with the value (no trimming)."""
    value = _text_value(ctx)
    return Verdict(ctx.output.str.starts_with(value),
                   pl.concat_str([pl.lit("start with "), quoted(value)]))


def _scalar(value: Any, spec: Any) -> None:
    if isinstance(value, (dict, list)) or value is None or value == "":
        raise ValueError("value must be a non-empty string or number")


def split_items(value: Any) -> list[str]:
    """promptfoo's list parsing for contains-any/all: a list, or a quoted-CSV-like string."""
    if isinstance(value, list):
        return [js_string(v) for v in value]
    text, items, i = js_string(value), [], 0
    while i < len(text):
        if text[i] in " \t\r\n,":
            i += 1
        elif text[i] == '"':
            j, buf = i + 1, []
            while j < len(text) and text[j] != '"':
                if text[j] == "\\" and j + 1 < len(text):
                    j += 1
                elif text[j] == '"' and text[j + 1: j + 2] == '"':
                    j += 1
                buf.append(text[j])
                j += 1
            if j >= len(text):
                raise ValueError(f"unterminated quote in {text!r}")
            items.append("".join(buf))
            i = j + 1
        else:
            j = text.find(",", i)
            j = len(text) if j < 0 else j
            items.append(text[i:j].strip())
            i = j
    return [s for s in items if s]


def _items(value: Any, spec: Any) -> list[str]:
    items = split_items(value)
    if not items:
        raise ValueError("value must list at least one item")
    return items


def _listing(items: list[str]) -> str:
    return ", ".join(json.dumps(s, ensure_ascii=False) for s in items)


def _any(ctx: Ctx, fold: bool) -> Verdict:
    items: list[str] = ctx.prepared
    text = ctx.output.str.to_lowercase() if fold else ctx.output
    found = text.str.contains_any([s.lower() for s in items] if fold else items)
    return Verdict(found, f"contain{' (any case)' if fold else ''} one of {_listing(items)}")


def _all(ctx: Ctx, fold: bool) -> Verdict:
    items: list[str] = ctx.prepared
    text = ctx.output.str.to_lowercase() if fold else ctx.output
    hits = [text.str.contains(s.lower() if fold else s, literal=True) for s in items]
    missing = pl.concat_list([pl.when(~h).then(pl.lit(s)) for h, s in zip(hits, items)])
    detail = pl.concat_str([pl.lit("missing: "),
                            missing.list.drop_nulls().list.join(", ")])
    return Verdict(pl.all_horizontal(hits),
                   f"contain{' (any case)' if fold else ''} all of {_listing(items)}",
                   detail=detail)


@assertion("contains-any", literal_value=True, prepare=_items)
def contains_any(ctx: Ctx) -> Verdict:
    """Output contains at least one of the listed values."""
    return _any(ctx, fold=False)


@assertion("icontains-any", literal_value=True, prepare=_items)
def icontains_any(ctx: Ctx) -> Verdict:
    """Output contains at least one of the listed values, ignoring case."""
    return _any(ctx, fold=True)


@assertion("contains-all", literal_value=True, prepare=_items)
def contains_all(ctx: Ctx) -> Verdict:
    """Output contains every listed value."""
    return _all(ctx, fold=False)


@assertion("icontains-all", literal_value=True, prepare=_items)
def icontains_all(ctx: Ctx) -> Verdict:
    """Output contains every listed value, ignoring case."""
    return _all(ctx, fold=True)


def _canonical(value: Any) -> Any:
    """JSON value normalised so that == is JavaScript's deep strict equality."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, (int, float)):
        return ("num", float(value))
    if isinstance(value, list):
        return ("list", tuple(_canonical(v) for v in value))
    return ("obj", frozenset((k, _canonical(v)) for k, v in value.items()))


@assertion("equals", literal_value=True, json_ok=True)
def equals(ctx: Ctx) -> Verdict:
    """Output equals the value exactly; a mapping/list value is compared as parsed JSON."""
    if isinstance(ctx.literal, (dict, list)) or ctx.literal is None:
        expected = _canonical(ctx.literal)

        def same(text: str | None) -> tuple[bool, str | None]:
            try:
                return _canonical(orjson.loads(text)) == expected, None
            except (orjson.JSONDecodeError, TypeError):
                return False, "output is not valid JSON"

        result = ctx.once(over_distinct(ctx.output, same))
        return Verdict(result.struct.field("ok"),
                       f"equal the JSON value {json.dumps(ctx.literal, ensure_ascii=False)}",
                       detail=result.struct.field("detail"))
    value = pl.lit(js_string(ctx.literal))
    return Verdict(ctx.output == value, pl.concat_str([pl.lit("equal "), quoted(value)]))


def _regex(value: Any, spec: Any) -> JsRegex:
    if not isinstance(value, str) or not value:
        raise ValueError("value must be a non-empty regular expression string")
    return compile_js(value)


@assertion("regex", literal_value=True, prepare=_regex)
def regex(ctx: Ctx) -> Verdict:
    """Output matches the JavaScript regular expression (search anywhere, no flags)."""
    rx: JsRegex = ctx.prepared
    expect = f"match /{rx.source}/"
    if not rx.backtracking:
        return Verdict(ctx.output.str.contains(rx.pattern), expect)
    result = ctx.once(over_distinct(ctx.output, lambda text: (rx.search(text), None)))
    return Verdict(result.struct.field("ok"), expect)
