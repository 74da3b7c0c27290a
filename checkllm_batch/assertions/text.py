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
    """`String(value)` as JavaScript prints a YAML value (1.0 -> "1", true -> "true",
    null -> "null", a list -> its items joined by commas, a mapping -> "[object Object]")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "[object Object]"
    if isinstance(value, list):
        return ",".join("" if v is None else js_string(v) for v in value)
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


JS_TRIM = " \t\n\x0b\f\r\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008" \
          "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"  # JavaScript's \\s and trim()


def split_items(value: Any) -> list[str]:
    """promptfoo's list for contains-any/all: a list's items as strings, or a string split as
    its parseCommaSeparatedValues splits it (quotes keep commas; inside quotes `""`, `\\"`
    and `\\\\` escape, any other backslash is kept; `""` is an empty item; repeated
    commas are skipped; a quoted item must be followed by a comma or the end)."""
    if isinstance(value, list):
        return [js_string(v) for v in value]
    if not isinstance(value, str):
        raise ValueError("value must be a list or a comma-separated string")
    items, i = [], 0
    while True:
        while i < len(value) and value[i] in JS_TRIM + ",":
            i += 1
        if i >= len(value):
            return items
        if value[i] != '"':
            end = value.find(",", i)
            end = len(value) if end < 0 else end
            items.append(value[i:end].strip(JS_TRIM))
            i = end
            continue
        item, i = _quoted_item(value, i + 1)
        items.append(item)
        while i < len(value) and value[i] in JS_TRIM:
            i += 1
        if i < len(value) and value[i] != ",":
            raise ValueError(f"expected a comma after the quoted item {item!r} in {value!r}")


def _quoted_item(text: str, i: int) -> tuple[str, int]:
    """The quoted item starting after its opening quote at `i`, and where it ends."""
    buf = []
    while i < len(text):
        pair = text[i:i + 2]
        if pair in ('\\"', "\\\\", '""'):
            buf.append(pair[1])
            i += 2
        elif text[i] == '"':
            return "".join(buf), i + 1
        else:
            buf.append(text[i])
            i += 1
    raise ValueError(f"unterminated quoted item in {text!r}")


def _items(value: Any, spec: Any) -> list[str]:
    if value is None or value == "" or value is False or value == 0:
        raise ValueError("value must list the texts to look for")
    return split_items(value)  # an empty list: contains-any fails, contains-all passes


def _listing(items: list[str]) -> str:
    return ", ".join(json.dumps(s, ensure_ascii=False) for s in items)


def _any(ctx: Ctx, fold: bool) -> Verdict:
    items: list[str] = ctx.prepared
    text = ctx.output.str.to_lowercase() if fold else ctx.output
    found = (text.str.contains_any([s.lower() for s in items] if fold else items) if items
             else pl.lit(False))
    return Verdict(found, f"contain{' (any case)' if fold else ''} one of {_listing(items)}")


def _all(ctx: Ctx, fold: bool) -> Verdict:
    items: list[str] = ctx.prepared
    text = ctx.output.str.to_lowercase() if fold else ctx.output
    hits = [text.str.contains(s.lower() if fold else s, literal=True) for s in items]
    if not hits:  # all of nothing: a pass, as in promptfoo
        return Verdict(pl.lit(True), "contain all of an empty list")
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
    return Verdict(ctx.once(rx.matches(ctx.output)), f"match /{rx.source}/")
