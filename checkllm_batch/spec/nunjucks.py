"""promptfoo's template language (Nunjucks 3.2.4), rendered by jinja2 configured to match it.

promptfoo 0.123.1 renders assertion values with `nunjucks.renderString(value, vars)`
(autoescape off, undefined names print as nothing, a `load` filter = JSON.parse, an `env`
global) after normalising the vars: one trailing "\\n" is cut from each string var, then a var
holding `{{other}}` takes the other var's value (`resolve_vars`). jinja2 is bent to Nunjucks
where they differ: values print as JavaScript's `String()` does, `+`, `~`, `==` and `<` follow
JavaScript, `[]` and `{}` are true, `a.b` reads a key (never a Python method), and the filters
below are Nunjucks' own. docs/templates.md lists what still differs.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any

import jinja2
import jinja2.meta
from jinja2 import nodes
from jinja2.compiler import CodeGenerator
from jinja2.ext import Extension
from jinja2.lexer import Token, TokenStream
from jinja2.sandbox import SandboxedEnvironment

from .jsvalue import (
    JS_SPACE,
    arithmetic,
    as_js_number,
    is_nullish,
    is_number,
    js_length,
    js_number,
    js_print,
    js_string,
    json_stringify,
    loose_equal,
    plus,
    relation,
    strict_equal,
    to_number,
    truthy,
)

__all__ = ["TemplateError", "js_number", "js_print", "referenced_vars", "render",
           "resolve_vars", "syntax_error"]


class TemplateError(ValueError):
    """A template that does not parse, or fails while rendering."""


class _Silent(jinja2.ChainableUndefined):
    """Undefined names and attributes print as nothing, as in Nunjucks."""

    def __str__(self) -> str:
        return ""


class _Array(list):
    """A JavaScript array: true even when empty."""

    def __bool__(self) -> bool:
        return True


class _Object(dict):
    """A JavaScript object: true even when empty; `for k, v in obj` walks its entries."""

    def __bool__(self) -> bool:
        return True

    def __iter__(self):
        return iter(self.items())


class _Safe(str):
    """Nunjucks' SafeString: `escape` leaves it alone."""


def _js(value: Any) -> Any:
    if isinstance(value, Mapping):
        return _Object({k: _js(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return _Array(_js(v) for v in value)
    return value


# --- filters: Nunjucks' own (nunjucks/src/filters.js), where jinja2's differ --------------

def _text(value: Any) -> str:
    """Nunjucks' normalize(value, ""): null, undefined and false are ""; a string stays."""
    if is_nullish(value) or value is False:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{js_string(value)} is not a string")
    return value


def _capitalize(value: Any) -> str:
    text = _text(value).lower()
    return text[:1].upper() + text[1:]


def _string(value: Any) -> str:
    if is_nullish(value):
        raise TypeError(f"cannot convert {js_string(value)} to a string")
    return js_string(value)


def _trim(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"cannot trim {js_string(value)}")
    return value.strip(JS_SPACE)


def _length(value: Any) -> Any:
    if is_nullish(value) or value is False:
        return 0
    if isinstance(value, str):
        return js_length(value)
    return len(value) if isinstance(value, (list, tuple, Mapping)) else _Silent()


def _join(items: Any, sep: Any = "", attr: Any = None) -> str:
    if is_nullish(items) or isinstance(items, (str, Mapping)) or not hasattr(items, "__iter__"):
        raise TypeError(f"cannot join {js_string(items)}")
    if attr:
        items = [_ENV.getitem(v, attr) for v in items]
    return (js_string(sep) if truthy(sep) else "").join(js_print(v) for v in items)


def _index(items: Any, at: int) -> Any:
    if is_nullish(items):
        raise TypeError(f"cannot read an item of {js_string(items)}")
    if isinstance(items, (str, list, tuple)) and len(items):
        return items[at]
    return _Silent()


def _replace(text: Any, old: Any, new: Any, max_count: Any = -1) -> Any:
    text = js_number(text) if is_number(text) else text
    old = js_number(old) if is_number(old) else old
    if not isinstance(old, str) or not isinstance(text, str):
        return text
    count = int(to_number(max_count)) if old else -1
    return text.replace(old, js_string(new), count) if count >= -1 else text


def _truncate(value: Any, length: Any = 255, killwords: Any = False, end: Any = None) -> str:
    text, length = _text(value), int(to_number(length or 255))
    if len(text) <= length:
        return text
    cut = text.rfind(" ", 0, length + 1)
    text = text[:length if truthy(killwords) or cut == -1 else cut]
    return text + ("..." if is_nullish(end) else js_string(end))


def _parse_int(value: Any, default: Any = None, base: int = 10) -> Any:
    """parseInt(String(value), base): the longest run of digits after a sign, else default."""
    text = js_string(value).lstrip(JS_SPACE)
    sign = -1 if text[:1] == "-" else 1
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"[:base]
    run = re.match(f"[{digits}]+", text[1:] if text[:1] in "+-" else text, re.IGNORECASE)
    if not run:
        return _Silent() if default is None else default
    return sign * int(run.group(), base)


def _parse_float(value: Any, default: Any = None) -> Any:
    """parseFloat(String(value)): the longest number at the start, else default."""
    run = re.match(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)",
                   js_string(value).lstrip(JS_SPACE))
    if not run:
        return _Silent() if default is None else default
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


_ESCAPES = {"&": "&amp;", '"': "&quot;", "'": "&#39;", "<": "&lt;", ">": "&gt;", "\\": "&#92;"}


def _escape(value: Any) -> str:
    if isinstance(value, _Safe):
        return value
    return _Safe(re.sub(r"[&\"'<>\\]", lambda m: _ESCAPES[m.group()], js_print(value)))


def _default(value: Any, default: Any = None, boolean: bool = False) -> Any:
    default = _Silent() if default is None else default
    if boolean:
        return value if truthy(value) else default
    return default if isinstance(value, jinja2.Undefined) else value


def _dump(value: Any, indent: Any = None) -> Any:
    text = json_stringify(value, indent)
    return _Silent() if text is None else text


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _load(text: Any) -> Any:
    return _js(json.loads(js_string(text), parse_constant=_no_constant))


_FILTERS = {
    "upper": lambda v: _text(v).upper(), "lower": lambda v: _text(v).lower(),
    "capitalize": _capitalize, "title": lambda v: " ".join(map(_capitalize, _text(v).split(" "))),
    "string": _string, "trim": _trim, "truncate": _truncate, "length": _length, "join": _join,
    "replace": _replace,
    "first": lambda v: _index(v, 0), "last": lambda v: _index(v, -1),
    "int": _parse_int, "float": _parse_float, "round": _round,
    "abs": lambda v: as_js_number(abs(to_number(v))),
    "safe": lambda v: v if isinstance(v, _Safe) else _Safe(js_print(v)),
    "escape": _escape, "e": _escape, "default": _default, "d": _default,
    "dump": _dump, "load": _load,
    "_array_only": lambda v: _Array() if isinstance(v, Mapping) else v,
    "nl2br": lambda v: "" if is_nullish(v) else re.sub(r"\r\n|\n", "<br />\n", js_string(v)),
}


# --- operators and lookups: JavaScript's, as Nunjucks compiles them -----------------------

def _relation(op: Any) -> Any:
    return lambda a, b: relation(op, a, b)


_COMPARE = {"eq": loose_equal, "ne": lambda a, b: not loose_equal(a, b),
            "lt": _relation(operator.lt), "lteq": _relation(operator.le),
            "gt": _relation(operator.gt), "gteq": _relation(operator.ge)}
_TESTS = {
    "null": lambda v: v is None, "number": is_number, "truthy": truthy,
    "falsy": lambda v: not truthy(v),
    "eq": strict_equal, "equalto": strict_equal, "sameas": strict_equal,
    "ne": lambda a, b: not strict_equal(a, b),
    "lt": _COMPARE["lt"], "lessthan": _COMPARE["lt"], "le": _COMPARE["lteq"],
    "gt": _COMPARE["gt"], "greaterthan": _COMPARE["gt"], "ge": _COMPARE["gteq"],
}


def _contains(item: Any, container: Any) -> bool:
    """Nunjucks' `in`: a substring, an array element or an object key."""
    if isinstance(container, (list, tuple)):
        return item in container
    if isinstance(container, (str, Mapping)):
        return js_string(item) in container
    raise TypeError(f'cannot use "in" to search for {js_string(item)} in {js_string(container)}')


class _Generator(CodeGenerator):
    """Compiles `a == b`, `a < b` and `a ~ b` to the environment's JavaScript operators, and
    never folds an expression into a constant with Python's operators."""

    def _output_child_to_const(self, node: Any, frame: Any, finalize: Any) -> str:
        if not isinstance(node, nodes.TemplateData):
            raise nodes.Impossible()
        return super()._output_child_to_const(node, frame, finalize)

    def visit_Compare(self, node: Any, frame: Any) -> None:
        for op in reversed(node.ops):  # a < b < c is (a < b) < c, as in JavaScript
            self.write(f"environment.compare({op.op!r}, ")
        self.visit(node.expr, frame)
        for op in node.ops:
            self.write(", ")
            self.visit(op.expr, frame)
            self.write(")")

    def visit_Concat(self, node: Any, frame: Any) -> None:
        self.write("environment.concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _ElseIf(Extension):
    """Nunjucks' `{% elseif %}`, another name for `{% elif %}`."""

    def filter_stream(self, stream: TokenStream) -> Iterator[Token]:
        previous = None
        for token in stream:
            if previous == "block_begin" and token.type == "name" and token.value == "elseif":
                token = Token(token.lineno, "name", "elif")
            previous = token.type
            yield token


class _Nunjucks(SandboxedEnvironment):
    code_generator_class = _Generator
    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})
    intercepted_unops = frozenset({"+", "-"})

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        for loop in tree.find_all(nodes.For):  # Nunjucks walks an object only as `k, v`
            if not isinstance(loop.target, nodes.Tuple):
                loop.iter = nodes.Filter(loop.iter, "_array_only", [], [], None, None,
                                         lineno=loop.lineno)
        return tree

    def call_binop(self, context: Any, op: str, left: Any, right: Any) -> Any:
        return plus(left, right) if op == "+" else arithmetic(op, left, right)

    def call_unop(self, context: Any, op: str, arg: Any) -> Any:
        return as_js_number(-to_number(arg) if op == "-" else to_number(arg))

    @staticmethod
    def compare(op: str, left: Any, right: Any) -> bool:
        if op in ("in", "notin"):
            return _contains(left, right) == (op == "in")
        return _COMPARE[op](left, right)

    @staticmethod
    def concat(parts: Iterable[Any]) -> str:
        return "".join(map(js_string, parts))

    def getattr(self, obj: Any, attribute: str) -> Any:
        return self.getitem(obj, attribute)

    def getitem(self, obj: Any, key: Any) -> Any:
        """`obj.key` / `obj[key]` as JavaScript reads them: keys, indexes and `length`."""
        if isinstance(obj, Mapping):
            return obj[key] if key in obj else obj.get(js_string(key), self.undefined(name=key))
        if isinstance(obj, (str, list, tuple)):
            if key == "length":
                return js_length(obj) if isinstance(obj, str) else len(obj)
            if isinstance(key, str) and re.fullmatch("0|[1-9][0-9]*", key):
                key = int(key)
            if isinstance(key, slice) or (is_number(key) and 0 <= key < len(obj) and key == int(key)):
                return obj[key if isinstance(key, slice) else int(key)]
            return self.undefined(name=key)
        if is_nullish(obj) or isinstance(obj, (bool, int, float)):
            return self.undefined(name=key)
        return super().getitem(obj, key)


_ENV = _Nunjucks(autoescape=False, undefined=_Silent, finalize=js_print, optimized=False,
                 keep_trailing_newline=True, extensions=[_ElseIf])
_ENV.filters.update(_FILTERS)
_ENV.tests.update(_TESTS)
_ENV.globals.update(env={}, null=None)  # promptfoo's `env`; never the process environment


def _syntax_error(text: str, e: jinja2.TemplateSyntaxError) -> TemplateError:
    return TemplateError(f"template syntax error: {e.message} (line {e.lineno}) in {text!r}")


@lru_cache(maxsize=4096)
def _compile(text: str) -> jinja2.Template:
    try:
        return _ENV.from_string(text)
    except jinja2.TemplateSyntaxError as e:
        raise _syntax_error(text, e) from None


def syntax_error(text: str) -> str | None:
    """Why `text` is not a valid template, or None."""
    try:
        _compile(text)
    except TemplateError as e:
        return str(e)
    return None


@lru_cache(maxsize=4096)
def referenced_vars(text: str) -> frozenset[str]:
    """The top-level names a template reads (globals such as `env` and `range` excluded)."""
    try:
        return frozenset(jinja2.meta.find_undeclared_variables(_ENV.parse(text)))
    except jinja2.TemplateSyntaxError as e:
        raise _syntax_error(text, e) from None


def render(text: str, vars: Mapping[str, Any]) -> str:
    """Render `text` over `vars` (already normalised by `resolve_vars`)."""
    template = _compile(text)
    try:
        return template.render({k: _js(v) for k, v in vars.items()})
    except Exception as e:  # a filter or expression failing on this row's values
        raise TemplateError(f"cannot render {text!r}: {e}") from None


_PLACEHOLDER = re.compile(f"\\{{\\{{[{JS_SPACE}]*([A-Za-z0-9_]+)[{JS_SPACE}]*\\}}\\}}")
_DOLLAR = re.compile(r"\$([$&`'])")  # JavaScript's String.replace patterns


def _replace_first(text: str, match: re.Match, value: Any) -> str:
    """`text.replace(placeholder, value)` in JavaScript, `$&`, `$$`, `` $` `` and `$'` included."""
    before, after = text[:match.start()], text[match.end():]
    parts = {"$": "$", "&": match.group(), "`": before, "'": after}
    return before + _DOLLAR.sub(lambda m: parts[m.group(1)], js_string(value)) + after


def resolve_vars(vars: Mapping[str, Any]) -> dict[str, Any]:
    """promptfoo's var normalisation before rendering: cut one trailing "\\n" from each string
    var, then replace the first `{{other}}` inside each string var by the other var's value
    (null as "null"; an unknown name is left, and stops that var), up to five passes."""
    out = {k: (v[:-1] if isinstance(v, str) and v.endswith("\n") else v) for k, v in vars.items()}
    for _ in range(5):
        changed = False
        for key, value in out.items():
            m = _PLACEHOLDER.search(value) if isinstance(value, str) else None
            if m and m.group(1) in out:
                out[key] = _replace_first(value, m, out[m.group(1)])
                changed = True
        if not changed:
            break
    return out
