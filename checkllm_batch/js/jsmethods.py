"""JavaScript methods of strings, arrays, numbers and objects, as Nunjucks templates call them.

Nunjucks looks `s.split` up on the JavaScript value itself, so `{{ s.toUpperCase() }}`,
`{{ s.split(',') | join('|') }}` or `{{ n.toFixed(2) }}` work in promptfoo. These are the
common ones, with ECMAScript's argument rules (a missing or NaN index is 0, a negative one
counts from the end where the method says so). Strings index by code point here, by UTF-16
unit in JavaScript: they differ only around astral characters such as emoji.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import jinja2

from .jsvalue import is_number, js_number, js_print, js_string, strict_equal, to_number
from .whitespace import JS_SPACE

_MISSING = jinja2.Undefined()  # an argument not given is undefined, as in JavaScript


def _int(value: Any, default: int = 0) -> int:
    """ECMAScript's ToIntegerOrInfinity, clamped to a Python int; undefined gives default."""
    if isinstance(value, jinja2.Undefined):
        return default
    number = to_number(value)
    if math.isnan(number):
        return 0
    return int(max(min(number, 2**53), -(2**53)))


def _at(size: int, index: int) -> int:
    """A relative index (negative counts from the end), clamped to [0, size]."""
    return max(size + index, 0) if index < 0 else min(index, size)


def _slice(items: Any, start: Any = _MISSING, end: Any = _MISSING) -> Any:
    size = len(items)
    return items[_at(size, _int(start)):_at(size, _int(end, size))]


def _substring(text: str, start: Any = _MISSING, end: Any = _MISSING) -> str:
    a, b = (max(0, min(_int(v, len(text)), len(text))) for v in (start, end))
    return text[min(a, b):max(a, b)]


def _item_at(items: Any, index: Any = _MISSING) -> Any:
    i = _int(index)
    i = i + len(items) if i < 0 else i
    return items[i] if 0 <= i < len(items) else jinja2.ChainableUndefined()


def _split(text: str, sep: Any = _MISSING, limit: Any = _MISSING) -> list[str]:
    if isinstance(sep, jinja2.Undefined):
        parts = [text]
    else:
        sep = js_string(sep)
        parts = list(text) if sep == "" else text.split(sep)
    return parts if isinstance(limit, jinja2.Undefined) else parts[:max(0, _int(limit))]


def _pad(text: str, length: Any, fill: Any, start: bool) -> str:
    fill = " " if isinstance(fill, jinja2.Undefined) else js_string(fill)
    missing = _int(length) - len(text)
    if missing <= 0 or not fill:
        return text
    pad = (fill * (missing // len(fill) + 1))[:missing]
    return pad + text if start else text + pad


def _replace(text: str, old: Any, new: Any, every: bool) -> str:
    old, new = js_string(old), js_string(new)
    return text.replace(old, new) if every else text.replace(old, new, 1)


def _index_of(items: Any, item: Any, start: Any = _MISSING) -> int:
    if isinstance(items, str):
        return items.find(js_string(item), max(0, _int(start)))
    begin = _at(len(items), _int(start))
    return next((i for i in range(begin, len(items)) if strict_equal(items[i], item)), -1)


def _last_index_of(items: Any, item: Any) -> int:
    if isinstance(items, str):
        return items.rfind(js_string(item))
    return next((i for i in reversed(range(len(items))) if strict_equal(items[i], item)), -1)


def _includes(items: Any, item: Any, start: Any = _MISSING) -> bool:
    if isinstance(items, str):
        return js_string(item) in items[max(0, _int(start)):]
    return any(strict_equal(v, item) or _both_nan(v, item) for v in items[_at(len(items), _int(start)):])


def _both_nan(a: Any, b: Any) -> bool:
    return isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)


def _concat(items: Any, *more: Any) -> Any:
    if isinstance(items, str):
        return items + "".join(map(js_string, more))
    out = list(items)
    for v in more:
        out.extend(v) if isinstance(v, (list, tuple)) else out.append(v)
    return type(items)(out)


def _to_fixed(number: Any, digits: Any = _MISSING) -> str:
    """Number.prototype.toFixed: the exact binary value rounded half up, at most 100 digits."""
    x, d = to_number(number), _int(digits)
    if not 0 <= d <= 100:
        raise ValueError("toFixed() digits argument must be between 0 and 100")
    if not math.isfinite(x) or abs(x) >= 1e21:
        return js_number(x)
    text = str(Decimal(abs(x)).quantize(Decimal(1).scaleb(-d), rounding=ROUND_HALF_UP))
    return ("-" if x < 0 and float(text) != 0 else "") + text


def _string_methods(s: str) -> dict[str, Callable[..., Any]]:
    return {
        "toUpperCase": s.upper, "toLowerCase": s.lower,
        "toLocaleUpperCase": s.upper, "toLocaleLowerCase": s.lower,
        "trim": lambda: s.strip(JS_SPACE), "trimStart": lambda: s.lstrip(JS_SPACE),
        "trimEnd": lambda: s.rstrip(JS_SPACE),
        "includes": lambda x=_MISSING, i=_MISSING: _includes(s, x, i),
        "startsWith": lambda x=_MISSING, i=_MISSING: s.startswith(js_string(x), max(0, _int(i))),
        "endsWith": lambda x=_MISSING, i=_MISSING: s[:_int(i, len(s))].endswith(js_string(x)),
        "indexOf": lambda x=_MISSING, i=_MISSING: _index_of(s, x, i),
        "lastIndexOf": lambda x=_MISSING: _last_index_of(s, x),
        "split": lambda sep=_MISSING, limit=_MISSING: _split(s, sep, limit),
        "slice": lambda a=_MISSING, b=_MISSING: _slice(s, a, b),
        "substring": lambda a=_MISSING, b=_MISSING: _substring(s, a, b),
        "charAt": lambda i=_MISSING: s[_int(i)] if 0 <= _int(i) < len(s) else "",
        "at": lambda i=_MISSING: _item_at(s, i),
        "concat": lambda *more: _concat(s, *more),
        "repeat": lambda n=_MISSING: s * max(0, _int(n)),
        "padStart": lambda n=_MISSING, fill=_MISSING: _pad(s, n, fill, start=True),
        "padEnd": lambda n=_MISSING, fill=_MISSING: _pad(s, n, fill, start=False),
        "replace": lambda a=_MISSING, b=_MISSING: _replace(s, a, b, every=False),
        "replaceAll": lambda a=_MISSING, b=_MISSING: _replace(s, a, b, every=True),
        "normalize": lambda form="NFC": unicodedata.normalize(js_string(form), s),  # type: ignore[arg-type]
        "localeCompare": lambda other=_MISSING: (s > js_string(other)) - (s < js_string(other)),
        "toString": lambda: s, "valueOf": lambda: s,
    }


def _array_methods(items: list[Any]) -> dict[str, Callable[..., Any]]:
    return {
        "join": lambda sep=_MISSING: ("," if isinstance(sep, jinja2.Undefined) else js_string(sep)).join(
            map(js_print, items)),
        "includes": lambda x=_MISSING, i=_MISSING: _includes(items, x, i),
        "indexOf": lambda x=_MISSING, i=_MISSING: _index_of(items, x, i),
        "lastIndexOf": lambda x=_MISSING: _last_index_of(items, x),
        "slice": lambda a=_MISSING, b=_MISSING: type(items)(_slice(items, a, b)),
        "concat": lambda *more: _concat(items, *more),
        "at": lambda i=_MISSING: _item_at(items, i),
        "toString": lambda: js_string(items),
    }


def method(value: Any, name: str) -> Callable[..., Any] | None:
    """The JavaScript method `name` of `value`, bound to it, or None."""
    if isinstance(value, str):
        return _string_methods(value).get(name)
    if isinstance(value, (list, tuple)):
        return _array_methods(value).get(name)  # type: ignore[arg-type]
    methods: dict[str, Callable[..., Any]] = {}
    if is_number(value):
        methods = {"toFixed": lambda d=_MISSING: _to_fixed(value, d),
                   "toString": lambda: js_number(value)}
    elif isinstance(value, bool):
        methods = {"toString": lambda: js_string(value)}
    elif isinstance(value, Mapping):
        methods = {"hasOwnProperty": lambda k=_MISSING: js_string(k) in value,
                   "toString": lambda: "[object Object]"}
    return methods.get(name)
