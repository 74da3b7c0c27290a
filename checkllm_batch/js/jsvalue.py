"""JavaScript's value semantics over JSON-like Python values, for the Nunjucks templates.

None is `null`, a jinja2 `Undefined` is `undefined`, int and float are JavaScript numbers,
lists are arrays and mappings are objects. The functions follow the ECMAScript rules that
Nunjucks inherits: `String(v)`, `Number(v)`, truthiness, `==`, `<`, `+` and `JSON.stringify`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import jinja2

from .whitespace import JS_SPACE  # (trim, Number(), parseInt): not str.isspace

_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")
_RADIX = re.compile(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+")


def is_nullish(value: Any) -> bool:
    return value is None or isinstance(value, jinja2.Undefined)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def js_number(value: float) -> str:
    """A number as JavaScript prints it: 1.0 -> "1", 1e21 -> "1e+21", 1e-7 -> "1e-7"."""
    value = as_double(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    mantissa, _, exp = repr(abs(value)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    point = len(whole) + int(exp or 0) - (len(whole + frac) - len(digits))
    digits = digits.rstrip("0")  # the value is 0.<digits> * 10**point
    sign, k = ("-" if value < 0 else ""), len(digits)
    if k <= point <= 21:
        return sign + digits + "0" * (point - k)
    if 0 < point <= 21:
        return f"{sign}{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    e = point - 1
    rest = f".{digits[1:]}" if k > 1 else ""
    return f"{sign}{digits[0]}{rest}e{'+' if e >= 0 else '-'}{abs(e)}"


def as_double(value: float) -> float:
    """An int as the double JavaScript would hold (big ints lose digits, huge ones overflow)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def js_string(value: Any) -> str:
    """`String(value)`: undefined -> "undefined", null -> "null", [1, null] -> "1,"."""
    if isinstance(value, jinja2.Undefined):
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if is_number(value):
        return js_number(value)
    if isinstance(value, (list, tuple)):
        return ",".join(js_print(v) for v in value)
    if isinstance(value, Mapping):
        return "[object Object]"
    return str(value)


def js_print(value: Any) -> str:
    """A value as Nunjucks prints it: `String(value)`, with null and undefined as ""."""
    return "" if is_nullish(value) else js_string(value)


def js_length(text: str) -> int:
    """`text.length`: UTF-16 code units, so an emoji counts 2."""
    return len(text.encode("utf-16-le")) // 2


def to_number(value: Any) -> float:
    """`Number(value)`: null -> 0, undefined -> NaN, " 12 " -> 12, "1e3" -> 1000, "x" -> NaN."""
    if is_number(value):
        return as_double(value)
    if isinstance(value, bool) or value is None:
        return float(bool(value))
    if isinstance(value, (str, list, tuple)):
        text = js_string(value).strip(JS_SPACE)
        if not text:
            return 0.0
        if _RADIX.fullmatch(text):
            return float(int(text, 0))
        return float(text) if _DECIMAL.fullmatch(text) else math.nan
    return math.nan


def as_js_number(value: float) -> int | float:
    """A result kept as an int where it is one (so it can index a list), else a float."""
    if isinstance(value, int):
        return value if abs(value) < 2**53 else float(value)
    return int(value) if math.isfinite(value) and value.is_integer() and abs(value) < 2**53 else value


def truthy(value: Any) -> bool:
    """JavaScript truthiness: [] and {} are true, NaN is false."""
    if isinstance(value, (list, tuple, Mapping)):
        return True
    if isinstance(value, float) and math.isnan(value):
        return False
    return bool(value) and not isinstance(value, jinja2.Undefined)


def _primitive(value: Any) -> Any:
    return js_string(value) if isinstance(value, (list, tuple, Mapping)) else value


def loose_equal(a: Any, b: Any) -> bool:
    """JavaScript `==` (Nunjucks compiles `==` to it): null == undefined, "1" == 1, [1] == "1"."""
    if is_nullish(a) or is_nullish(b):
        return is_nullish(a) and is_nullish(b)
    objects = isinstance(a, (list, tuple, Mapping)), isinstance(b, (list, tuple, Mapping))
    if all(objects):
        return a is b
    a, b = (_primitive(a), _primitive(b)) if any(objects) else (a, b)
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return to_number(a) == to_number(b)


def strict_equal(a: Any, b: Any) -> bool:
    """JavaScript `===` (Nunjucks' `sameas`, `eq` and `ne` tests): no conversion at all."""
    if is_number(a) and is_number(b):
        return as_double(a) == as_double(b)
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, jinja2.Undefined) or isinstance(b, jinja2.Undefined):
        return isinstance(a, jinja2.Undefined) and isinstance(b, jinja2.Undefined)
    return a is b


def relation(compare: Callable[[Any, Any], bool], a: Any, b: Any) -> bool:
    """JavaScript `<`, `<=`, `>`, `>=`: strings compare as text, anything else as numbers
    (NaN compares false)."""
    a, b = _primitive(a), _primitive(b)
    if isinstance(a, str) and isinstance(b, str):
        return compare(a, b)
    return compare(to_number(a), to_number(b))


def plus(a: Any, b: Any) -> Any:
    """JavaScript `+`: text if either side is text (or an array or object), else a sum."""
    a, b = _primitive(a), _primitive(b)
    if isinstance(a, str) or isinstance(b, str):
        return js_string(a) + js_string(b)
    return as_js_number(to_number(a) + to_number(b))


def arithmetic(op: str, a: Any, b: Any) -> int | float:
    """JavaScript `-`, `*`, `/`, `%`, `**` and Nunjucks' `//` (Math.floor(a / b))."""
    x, y = to_number(a), to_number(b)
    try:
        if op == "-":
            result = x - y
        elif op == "*":
            result = x * y
        elif op in ("/", "//"):
            result = x / y if y else (math.nan if x == 0 or math.isnan(x) else
                                      math.copysign(math.inf, x) * math.copysign(1, y))
            result = math.floor(result) if op == "//" and math.isfinite(result) else result
        elif op == "%":
            result = math.fmod(x, y) if y and math.isfinite(x) else (x if math.isinf(y) else math.nan)
        else:
            result = math.pow(x, y)
    except OverflowError:
        result = math.inf
    except ValueError:
        result = math.nan
    return as_js_number(result)


def _step(indent: Any) -> str:
    """JSON.stringify's `space`: a number is that many spaces (0 to 10), a string its first 10
    characters, anything else (true, a list, null) no indentation."""
    if is_number(indent):
        return " " * int(max(0, min(10, indent))) if not math.isnan(indent) else ""
    return indent[:10] if isinstance(indent, str) else ""


def json_stringify(value: Any, indent: Any = None, level: int = 0) -> str | None:
    """`JSON.stringify(value, null, indent)`; None where JavaScript returns undefined."""
    if isinstance(value, jinja2.Undefined):
        return None
    if value is None or isinstance(value, (bool, str)):
        return json.dumps(value, ensure_ascii=False)
    if is_number(value):
        return js_number(value) if math.isfinite(as_double(value)) else "null"
    step = _step(indent)
    pad, inner = "\n" + step * level, "\n" + step * (level + 1)
    if isinstance(value, Mapping):
        items = [(json.dumps(str(k), ensure_ascii=False), json_stringify(v, indent, level + 1))
                 for k, v in value.items()]
        parts = [f"{k}:{' ' if step else ''}{v}" for k, v in items if v is not None]
        ends = "{}"
    elif isinstance(value, (list, tuple)):
        parts = [json_stringify(v, indent, level + 1) or "null" for v in value]
        ends = "[]"
    else:
        return json.dumps(str(value), ensure_ascii=False)
    if not parts:
        return ends
    if not step:
        return ends[0] + ",".join(parts) + ends[1]
    return ends[0] + inner + ("," + inner).join(parts) + pad + ends[1]


def through_json(value: Any) -> Any:
    """`value` as Python reads it after JavaScript's `JSON.stringify` (promptfoo hands a
    script its arguments that way): every number is a double written as JavaScript writes
    it, so 3.0 -> 3, 12345678901234567 -> 12345678901234568, 1e21 stays a float; NaN and
    Infinity -> None."""
    text = json_stringify(value)
    return None if text is None else json.loads(text)
