"""Nunjucks 3.2.4's values, filters and tests (nunjucks/src/filters.js, tests.js) in Python.

The filters are exactly Nunjucks' (a jinja2 filter Nunjucks lacks, such as `min`, `map` or
`tojson`, is unknown), each following its JavaScript: what it accepts, what it returns, and
where JavaScript throws (`{{ 5 | upper }}`: `toUpperCase` is not a function of a number).
"""

from __future__ import annotations

import json
import math
import operator
import random
import re
from collections.abc import Callable, Iterator, Mapping
from functools import cmp_to_key
from typing import Any
from urllib.parse import quote

import jinja2

from .jsmethods import method
from .jsvalue import (
    arithmetic,
    as_js_number,
    is_nullish,
    is_number,
    js_length,
    js_number,
    js_print,
    js_string,
    json_stringify,
    plus,
    relation,
    strict_equal,
    to_number,
    truthy,
)
from .whitespace import JS_SPACE


class Undefined(jinja2.ChainableUndefined):
    """Undefined names and attributes print as nothing, as in Nunjucks."""

    def __str__(self) -> str:
        return ""


class Array(list):
    """A JavaScript array: true even when empty."""

    def __bool__(self) -> bool:
        return True


class Object(dict):
    """A JavaScript object: true even when empty; `for k, v in obj` walks its entries."""

    def __bool__(self) -> bool:
        return True

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items())


class Safe(str):
    """Nunjucks' SafeString: `escape` leaves it alone."""


_INDEX = re.compile("0|[1-9][0-9]*")


def _is_index(key: str) -> bool:
    return bool(_INDEX.fullmatch(key)) and int(key) < 2**32 - 1


def js_object(pairs: Mapping[Any, Any]) -> Object:
    """An object with JavaScript's string keys in JavaScript's order: array-index keys
    ("0", "1", ...) first, ascending, then the others as inserted."""
    items = [(k if isinstance(k, str) else js_string(k), v) for k, v in pairs.items()]
    indexes = sorted((kv for kv in items if _is_index(kv[0])), key=lambda kv: int(kv[0]))
    return Object(indexes + [kv for kv in items if not _is_index(kv[0])])


def js(value: Any) -> Any:
    """A JSON-like value as Nunjucks sees it: Array and Object in place of list and dict."""
    if isinstance(value, Mapping):
        return js_object({k: js(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return Array(js(v) for v in value)
    return value


def is_js(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, list, tuple, Mapping,
                                               jinja2.Undefined))


def js_get(obj: Any, key: Any) -> Any:
    """`obj[key]` as Nunjucks reads it: keys, array and string indexes, `length`, common
    JavaScript methods (`jsmethods`); any key of null or undefined is undefined."""
    found = _own(obj, key)
    if isinstance(found, jinja2.Undefined) and isinstance(key, str):
        return method(obj, key) or found
    return found


def _own(obj: Any, key: Any) -> Any:
    if isinstance(obj, Mapping):
        return obj[key] if key in obj else obj.get(js_string(key), Undefined(name=str(key)))
    if isinstance(obj, (str, list, tuple)):
        if key == "length":
            return js_length(obj) if isinstance(obj, str) else len(obj)
        if isinstance(key, str) and _INDEX.fullmatch(key):
            key = int(key)
        if isinstance(key, slice) or (is_number(key) and 0 <= key < len(obj) and key == int(key)):
            return obj[key if isinstance(key, slice) else int(key)]
        return Undefined(name=str(key))
    return Undefined(name=str(key))  # of null, undefined, a number, a boolean


def _items(value: Any) -> list[Any]:
    """`lib.map(value, v => v)`: an array's or a string's items; anything else has none."""
    return list(value) if isinstance(value, (str, list, tuple)) else []


def _indexed(value: Any) -> list[Any]:
    """`value[0 .. value.length)`: as `_items`, but null and undefined throw."""
    if is_nullish(value):
        raise TypeError(f"Cannot read properties of {js_string(value)} (reading 'length')")
    return _items(value)


def _attr_getter(attr: Any) -> Callable[[Any], Any]:
    """`lib.getAttrGetter`: a dotted path of own properties, else undefined."""
    parts = (attr.split(".") if isinstance(attr, str) else [attr]) if truthy(attr) else []

    def get(item: Any) -> Any:
        for part in parts:
            if item is None:
                raise TypeError("Cannot convert undefined or null to object")
            item = js_get(item, part)
            if isinstance(item, jinja2.Undefined):
                return item
        return item

    return get


def _present(item: Any) -> Any:
    """`item[attr]` throws on null and undefined."""
    if is_nullish(item):
        raise TypeError(f"Cannot read properties of {js_string(item)}")
    return item


def _sorted(items: list[Any], compare: Callable[[Any, Any], int]) -> Array:
    return Array(sorted(items, key=cmp_to_key(compare)))  # stable, as V8's sort


def _safeness(source: Any, text: str) -> str:
    """`r.copySafeness`: text stays safe when its source was."""
    return Safe(text) if isinstance(source, Safe) else text


# --- text ---------------------------------------------------------------------------------

def _text(value: Any) -> str:
    """`normalize(value, "")` then a string method: null, undefined and false are ""."""
    if is_nullish(value) or value is False:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{js_string(value)} is not a string")
    return value


def _capitalize(value: Any) -> str:
    text = _text(value).lower()
    return _safeness(value, text[:1].upper() + text[1:])


def _title(value: Any) -> str:
    return _safeness(value, " ".join(map(_capitalize, _text(value).split(" "))))


def _string(value: Any) -> str:
    if is_nullish(value):
        raise TypeError(f"Cannot read properties of {js_string(value)} (reading 'toString')")
    return _safeness(value, js_string(value))


def _trim(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"cannot trim {js_string(value)}")
    return _safeness(value, value.strip(JS_SPACE))


def _repeat(n: Any) -> str:
    """`lib.repeat(" ", n)`: a space for each i = 0, 1, ... while i < n."""
    count = to_number(n)
    return " " * math.ceil(count) if 0 < count < math.inf else ""


def _center(value: Any, width: Any = 80) -> Any:
    value = "" if is_nullish(value) or value is False else value
    width, size = (width if truthy(width) else 80), js_get(value, "length")
    if relation(operator.ge, size, width):
        return value
    spaces = to_number(width) - to_number(size)
    pre, post = _repeat(spaces / 2 - math.fmod(spaces, 2)), _repeat(spaces / 2)
    return _safeness(value, pre + js_string(value) + post)


def _indent(value: Any, width: Any = 4, first: Any = False) -> str:
    text = _text(value)
    if text == "":
        return ""
    space = _repeat(width if truthy(width) else 4)
    return _safeness(value, "\n".join(
        line if i == 0 and not truthy(first) else space + line
        for i, line in enumerate(text.split("\n"))))


def _truncate(value: Any, length: Any = 255, killwords: Any = False, end: Any = None) -> Any:
    if isinstance(value, (list, tuple)) and len(value) <= to_number(length or 255):
        return value  # short enough: returned as it is, whatever it is
    text, length = _text(value), int(to_number(length or 255))
    if len(text) <= length:
        return text
    cut = text.rfind(" ", 0, length + 1)
    text = text[:length if truthy(killwords) or cut == -1 else cut]
    return _safeness(value, text + ("..." if is_nullish(end) else js_string(end)))


def _replace(text: Any, old: Any = None, new: Any = None, max_count: Any = -1) -> Any:
    old = js_number(old) if is_number(old) else old
    if not isinstance(old, str):
        return text
    source, text = text, (js_number(text) if is_number(text) else text)
    if not isinstance(text, str):
        return text
    new = js_string(new)
    if old == "":
        return _safeness(source, new + new.join(text) + new)
    count = to_number(max_count)
    count = int(count) if math.isfinite(count) else 0  # `n < NaN` is false: nothing replaced
    return _safeness(source, text.replace(old, new, count) if count >= -1 else text)


_WORD = re.compile(r"\w+", re.ASCII)
_SPACES = re.compile(f"[{JS_SPACE}]+")
_TAGS = re.compile(r"</?([a-z][a-z0-9]*)\b[^>]*>|<!--[\s\S]*?-->", re.IGNORECASE | re.ASCII)


def _wordcount(value: Any) -> int | None:
    text = js_print(value) if is_nullish(value) or value is False else value
    if not truthy(text):
        return None
    if not isinstance(text, str):
        raise TypeError(f"{js_string(text)}.match is not a function")
    return len(_WORD.findall(text)) or None


def _striptags(value: Any, preserve_linebreaks: Any = False) -> str:
    text = _TAGS.sub("", _text(value)).strip(JS_SPACE)
    if truthy(preserve_linebreaks):
        text = re.sub(r"^ +| +$", "", text, flags=re.MULTILINE)
        text = re.sub(r"\n\n\n+", "\n\n", re.sub(" +", " ", text).replace("\r\n", "\n"))
    else:
        text = _SPACES.sub(" ", text)
    return _safeness(value, text)


def _nl2br(value: Any) -> str:
    if is_nullish(value):
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{js_string(value)}.replace is not a function")
    return _safeness(value, re.sub(r"\r\n|\n", "<br />\n", value))


def _encode_uri_component(value: Any) -> str:
    return quote(js_string(value), safe="-_.!~*'()")


def _urlencode(value: Any) -> str:
    if isinstance(value, str):
        return _encode_uri_component(value)
    if is_nullish(value):
        raise TypeError(f"Cannot convert {js_string(value)} to object")
    pairs = value if isinstance(value, (list, tuple)) else (
        Array(Array(kv) for kv in value.items()) if isinstance(value, Mapping) else [])
    return "&".join(f"{_encode_uri_component(js_get(p, 0))}={_encode_uri_component(js_get(p, 1))}"
                    for p in pairs)


_PUNCTUATION = re.compile(r"(?:\(|<|&lt;)?(.*?)(?:\.|,|\)|\n|&gt;)?\Z", re.DOTALL)
_EMAIL = re.compile(r"[\w.!#$%&'*+\-/=?^`{|}~]+@[a-z\d\-]+(\.[a-z\d\-]+)+\Z",
                    re.IGNORECASE | re.ASCII)


def _urlize(value: Any, length: Any = None, nofollow: Any = False) -> str:
    if not isinstance(value, str):
        raise TypeError(f"Cannot read properties of {js_string(value)} (reading 'split')")
    text = value
    rel = ' rel="nofollow"' if nofollow is True else ""

    def link(word: str) -> str:
        url = _PUNCTUATION.match(word).group(1)  # type: ignore[union-attr]
        short = url[:max(0, int(to_number(length)))] if is_number(length) else url
        if re.match(r"https?://", url):
            return f'<a href="{url}"{rel}>{short}</a>'
        if url.startswith("www."):
            return f'<a href="http://{url}"{rel}>{short}</a>'
        if _EMAIL.match(url):
            return f'<a href="mailto:{url}">{url}</a>'
        if re.search(r"\.(?:org|net|com)(?::|/|\Z)", url):
            return f'<a href="http://{url}"{rel}>{short}</a>'
        return word

    return "".join(link(w) for w in re.split(f"([{JS_SPACE}]+)", text) if w)


# --- numbers ------------------------------------------------------------------------------

def _parse_int(value: Any, default: Any = None, base: int = 10) -> Any:
    """parseInt(String(value), base): the longest run of digits after a sign, else default."""
    text = js_string(value).lstrip(JS_SPACE)
    sign = -1 if text[:1] == "-" else 1
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"[:base]
    run = re.match(f"[{digits}]+", text[1:] if text[:1] in "+-" else text, re.IGNORECASE)
    if not run:
        return Undefined() if default is None else default
    return sign * int(run.group(), base)


def _parse_float(value: Any, default: Any = None) -> Any:
    """parseFloat(String(value)): the longest number at the start, else default."""
    run = re.match(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)",
                   js_string(value).lstrip(JS_SPACE))
    if not run:
        return Undefined() if default is None else default
    return float(run.group().replace("Infinity", "inf"))


def _round(value: Any, precision: Any = 0, method: str = "common") -> int | float:
    factor = math.pow(10, to_number(precision) if precision else 0)
    x = to_number(value) * factor
    if not math.isfinite(x):
        return as_js_number(x / factor)
    if method == "ceil":
        rounded = math.ceil(x)
    elif method == "floor":
        rounded = math.floor(x)
    else:  # Math.round: half-way goes up, toward +Infinity
        rounded = math.floor(x) + (1 if x - math.floor(x) >= 0.5 else 0)
    return as_js_number(rounded / factor)


def _sum(items: Any, attr: Any = None, start: Any = 0) -> Any:
    if truthy(attr):
        items = [js_get(_present(v), attr) for v in _items(items)]
    elif not isinstance(items, (list, tuple)):
        raise TypeError(f"{js_string(items)}.reduce is not a function")
    total: Any = 0
    for v in items:
        total = plus(total, v)
    return plus(start, total)


# --- lists and objects --------------------------------------------------------------------

def _length(value: Any) -> Any:
    if is_nullish(value) or value is False:
        return 0
    if isinstance(value, str):
        return js_length(value)
    return len(value) if isinstance(value, (list, tuple, Mapping)) else Undefined()


def _join(items: Any, sep: Any = "", attr: Any = None) -> str:
    if truthy(attr):
        items = [js_get(_present(v), attr) for v in _items(items)]
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"{js_string(items)}.join is not a function")
    return (js_string(sep) if truthy(sep) else "").join(js_print(v) for v in items)


def _first(items: Any) -> Any:
    _indexed(items)  # of null or undefined: an error
    return js_get(items, 0)


def _last(items: Any) -> Any:
    if isinstance(items, (str, list, tuple)):
        return items[-1] if items else Undefined()
    _indexed(items)
    return Undefined()


def _list(value: Any) -> Array:
    if isinstance(value, str):
        return Array(value)
    if isinstance(value, Mapping):
        return Array(Object(key=k, value=v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return Array(value)
    raise TypeError("list filter: type not iterable")


def _reverse(value: Any) -> Any:
    if isinstance(value, str):
        return _safeness(value, value[::-1])
    return Array(reversed(_items(value)))


def _sort(value: Any, reverse: Any = False, case_sensitive: Any = False,
          attribute: Any = None) -> Array:
    get = _attr_getter(attribute) if truthy(attribute) else (lambda v: v)

    def compare(a: Any, b: Any) -> int:
        x, y = get(a), get(b)
        if not truthy(case_sensitive) and isinstance(x, str) and isinstance(y, str):
            x, y = x.lower(), y.lower()
        if relation(operator.lt, x, y):
            return 1 if truthy(reverse) else -1
        if relation(operator.gt, x, y):
            return -1 if truthy(reverse) else 1
        return 0

    return _sorted(_items(value), compare)


def _dictsort(value: Any, case_sensitive: Any = False, by: Any = None) -> Array:
    if not isinstance(value, Mapping):
        raise TypeError("dictsort filter: val must be an object")
    if by is not None and not isinstance(by, jinja2.Undefined) and by not in ("key", "value"):
        raise TypeError("dictsort filter: You can only sort by either key or value")
    at = 1 if by == "value" else 0

    def compare(t1: Any, t2: Any) -> int:
        a, b = t1[at], t2[at]
        if not truthy(case_sensitive):
            a, b = (v.upper() if isinstance(v, str) else v for v in (a, b))
        return 1 if relation(operator.gt, a, b) else 0 if strict_equal(a, b) else -1

    return _sorted([Array(kv) for kv in value.items()], compare)


def _groupby(items: Any, attr: Any = None) -> Object:
    get, groups = _attr_getter(attr), dict[str, Array]()
    for item in _indexed(items):
        groups.setdefault(js_string(get(item)), Array()).append(item)
    return js_object(groups)


def _batch(items: Any, size: Any = None, fill: Any = None) -> Array:
    n, out, chunk = to_number(size), Array(), Array()
    for i, item in enumerate(_indexed(items)):
        if len(chunk) and n and math.isfinite(n) and math.fmod(i, n) == 0:
            out.append(chunk)
            chunk = Array()
        chunk.append(item)
    if len(chunk):
        if truthy(fill):
            chunk.extend([fill] * max(0, math.ceil(n) - len(chunk) if math.isfinite(n) else 0))
        out.append(chunk)
    return out


def _slice(items: Any, slices: Any = None, fill: Any = None) -> Array:
    if not isinstance(items, (str, list, tuple)):
        raise TypeError(f"{js_string(items)}.slice is not a function")
    values, n = items, int(to_number(slices))
    size, extra = divmod(len(values), n) if n > 0 else (0, 0)
    out, offset = Array(), 0
    for i in range(n):
        start = offset + i * size
        offset += i < extra
        chunk = values[start:offset + (i + 1) * size]
        if truthy(fill) and i >= extra:
            if isinstance(chunk, str):
                raise TypeError("currSlice.push is not a function")  # a string's slice
            chunk = [*chunk, fill]
        out.append(chunk if isinstance(chunk, str) else Array(chunk))
    return out


def _select(keep: bool) -> Callable[..., Array]:
    def select(items: Any, test: str = "truthy", arg: Any = None) -> Array:
        if test not in TESTS:
            raise TypeError(f"test not found: {test}")
        return Array(v for v in _indexed(items) if TESTS[test](v, arg) is keep)
    return select


def _select_attr(keep: bool) -> Callable[..., Array]:
    def select(items: Any, attr: Any = None, *_: Any) -> Array:
        if not isinstance(items, (list, tuple)):
            raise TypeError(f"{js_string(items)}.filter is not a function")
        return Array(v for v in items if truthy(js_get(v, attr)) is keep)
    return select


def _random(items: Any) -> Any:
    values = _indexed(items)
    return random.choice(values) if values else Undefined()  # noqa: S311 - not for security


# --- HTML, JSON, defaults -----------------------------------------------------------------

_ESCAPES = {"&": "&amp;", '"': "&quot;", "'": "&#39;", "<": "&lt;", ">": "&gt;", "\\": "&#92;"}


def _forceescape(value: Any) -> Safe:
    return Safe(re.sub(r"[&\"'<>\\]", lambda m: _ESCAPES[m.group()], js_print(value)))


def _escape(value: Any) -> str:
    return value if isinstance(value, Safe) else _forceescape(value)


def _default(value: Any, default: Any = None, boolean: bool = False) -> Any:
    default = Undefined() if default is None else default
    if boolean:
        return value if truthy(value) else default
    return default if isinstance(value, jinja2.Undefined) else value


def _dump(value: Any, indent: Any = None) -> Any:
    text = json_stringify(value, indent)
    return Undefined() if text is None else text


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _load(text: Any) -> Any:
    return js(json.loads(js_string(text), parse_constant=_no_constant))


FILTERS: dict[str, Callable[..., Any]] = {
    "abs": lambda v: as_js_number(abs(to_number(v))), "batch": _batch,
    "capitalize": _capitalize, "center": _center, "default": _default, "d": _default,
    "dictsort": _dictsort, "dump": _dump, "escape": _escape, "e": _escape,
    "safe": lambda v: v if isinstance(v, Safe) else Safe(js_print(v)),
    "first": _first, "forceescape": _forceescape, "groupby": _groupby, "indent": _indent,
    "join": _join, "last": _last, "length": _length, "list": _list,
    "lower": lambda v: _text(v).lower(), "nl2br": _nl2br, "random": _random,
    "reject": _select(False), "rejectattr": _select_attr(False), "select": _select(True),
    "selectattr": _select_attr(True), "replace": _replace, "reverse": _reverse,
    "round": _round, "slice": _slice, "sum": _sum, "sort": _sort, "string": _string,
    "striptags": _striptags, "title": _title, "trim": _trim, "truncate": _truncate,
    "upper": lambda v: _text(v).upper(), "urlencode": _urlencode, "urlize": _urlize,
    "wordcount": _wordcount, "float": _parse_float, "int": _parse_int,
    "load": _load,  # promptfoo's own: JSON.parse
}


def _case_test(convert: Callable[[str], str]) -> Callable[..., bool]:
    def test(value: Any, *_: Any) -> bool:
        if not isinstance(value, str):
            raise TypeError(f"{js_string(value)} has no case")
        return convert(value) == value and not isinstance(value, Safe)
    return test


def _remainder_is(n: int) -> Callable[..., bool]:
    return lambda v, *_: arithmetic("%", v, 2) == n


def _relation(op: Any) -> Callable[..., bool]:
    return lambda a, b=None, *_: relation(op, a, b)


TESTS: dict[str, Callable[..., bool]] = {
    "callable": lambda v, *_: callable(v) and not isinstance(v, jinja2.Undefined),
    "defined": lambda v, *_: not isinstance(v, jinja2.Undefined),
    "undefined": lambda v, *_: isinstance(v, jinja2.Undefined),
    "divisibleby": lambda a, b=None, *_: arithmetic("%", a, b) == 0,
    "escaped": lambda v, *_: isinstance(v, Safe),
    "equalto": lambda a, b=None, *_: strict_equal(a, b),
    "ne": lambda a, b=None, *_: not strict_equal(a, b),
    "even": _remainder_is(0), "odd": _remainder_is(1),
    "truthy": lambda v, *_: truthy(v), "falsy": lambda v, *_: not truthy(v),
    "ge": _relation(operator.ge), "greaterthan": _relation(operator.gt),
    "le": _relation(operator.le), "lessthan": _relation(operator.lt),
    "lower": _case_test(str.lower), "upper": _case_test(str.upper),
    "null": lambda v, *_: v is None, "number": lambda v, *_: is_number(v),
    "string": lambda v, *_: isinstance(v, str) and not isinstance(v, Safe),
    "iterable": lambda v, *_: bool(_indexed(v) or True) and isinstance(v, (str, list, tuple)),
    "mapping": lambda v, *_: isinstance(v, Mapping),
}
TESTS.update(eq=TESTS["equalto"], sameas=TESTS["equalto"], gt=TESTS["greaterthan"],
             lt=TESTS["lessthan"], none=TESTS["null"])  # `is none`: Nunjucks reads null
