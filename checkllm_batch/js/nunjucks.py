"""promptfoo's template language (Nunjucks 3.2.4), rendered by jinja2 configured to match it.

promptfoo 0.123.1 renders assertion values with `nunjucks.renderString(value, vars)`
(autoescape off, undefined names print as nothing, a `load` filter = JSON.parse, an `env`
global) after normalising the vars: one trailing "\\n" is cut from each string var, then a var
holding `{{other}}` takes the other var's value (`resolve_vars`). jinja2 is bent to Nunjucks
where they differ: values print as JavaScript's `String()` does, `+`, `~`, `==` and `<` follow
JavaScript (precedence too: `_Parser`), `[]` and `{}` are true, `a.b` reads a key or a
JavaScript method (never a Python one), and the filters, tests and globals are Nunjucks' own
(`nunjucks_filters`, `jsmethods`). docs/templates.md lists what still differs.
"""

from __future__ import annotations

import functools
import inspect
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any

import jinja2
import jinja2.meta
from jinja2 import nodes
from jinja2.compiler import CodeGenerator
from jinja2.ext import Extension
from jinja2.lexer import Token, TokenStream
from jinja2.parser import Parser
from jinja2.runtime import LoopContext
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import Cycler, Joiner

from .jsvalue import (
    arithmetic,
    as_js_number,
    js_number,
    js_print,
    js_string,
    loose_equal,
    plus,
    relation,
    strict_equal,
    to_number,
)
from .nunjucks_filters import FILTERS, TESTS, Array, Undefined, is_js, js, js_get, js_object
from .whitespace import JS_SPACE

__all__ = ["TemplateError", "js_number", "js_print", "referenced_vars", "render",
           "resolve_vars", "syntax_error"]


class TemplateError(ValueError):
    """A template that does not parse, or fails while rendering."""


# --- operators and lookups: JavaScript's, as Nunjucks compiles them -----------------------

def _relation(op: Any) -> Any:
    return lambda a, b: relation(op, a, b)


_COMPARE = {"eq": loose_equal, "ne": lambda a, b: not loose_equal(a, b),
            "lt": _relation(operator.lt), "lteq": _relation(operator.le),
            "gt": _relation(operator.gt), "gteq": _relation(operator.ge)}


def _contains(item: Any, container: Any) -> bool:
    """Nunjucks' `in`: a substring, an array element or an object key."""
    if isinstance(container, (list, tuple)):
        return any(strict_equal(v, item) for v in container)  # indexOf: ===
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

    def visit_List(self, node: Any, frame: Any) -> None:  # `[]` literal: a JavaScript array
        self.write("environment.array(")
        super().visit_List(node, frame)
        self.write(")")

    def visit_Dict(self, node: Any, frame: Any) -> None:  # `{}` literal: a JavaScript object
        self.write("environment.object(")
        super().visit_Dict(node, frame)
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


_BINARY = (nodes.Add, nodes.Sub, nodes.Mul, nodes.Div, nodes.Mod)


def _not_first(node: nodes.Expr) -> nodes.Expr:
    """`not x` as Nunjucks runs it: it emits `!` before the JavaScript of `x` without
    brackets, so `not a == b` is `(!a) == b`: the `!` takes the first operand."""
    if getattr(node, "bracketed", False):
        return nodes.Not(node, lineno=node.lineno)
    if isinstance(node, nodes.Compare):
        return nodes.Compare(_not_first(node.expr), node.ops, lineno=node.lineno)
    if isinstance(node, _BINARY):
        return type(node)(_not_first(node.left), node.right, lineno=node.lineno)
    if isinstance(node, nodes.Concat):
        return nodes.Concat([_not_first(node.nodes[0]), *node.nodes[1:]], lineno=node.lineno)
    return nodes.Not(node, lineno=node.lineno)


class _Parser(Parser):
    """Nunjucks' grammar where jinja2's differs. Nunjucks compiles an expression to
    JavaScript text without brackets, so JavaScript's precedence decides: `+`, `-` and `~`
    (`+ "" +`) are one left-to-right chain (`1 + 2 ~ 3` is "33", `'a' ~ 1 + 2` is "a12"),
    and `not` takes only the first operand (`_not_first`). Only lowercase `true`, `false`
    and `none` are literals (`True`, `False` and `None` are names, undefined unless a var)."""

    def parse_not(self) -> nodes.Expr:
        if self.stream.current.test("name:not"):
            next(self.stream)
            return _not_first(self.parse_not())
        return self.parse_compare()

    def parse_math1(self) -> nodes.Expr:
        lineno = self.stream.current.lineno
        left = self.parse_math2()
        while self.stream.current.type in ("add", "sub", "tilde"):
            kind, right = next(self.stream).type, self.parse_math2()
            if kind == "tilde":
                left = nodes.Concat([left, right], lineno=lineno)
            else:
                left = (nodes.Add if kind == "add" else nodes.Sub)(left, right, lineno=lineno)
            lineno = self.stream.current.lineno
        return left

    def parse_primary(self, with_namespace: bool = False) -> nodes.Expr:
        token = self.stream.current
        if token.type == "name" and token.value in ("True", "False", "None"):
            next(self.stream)
            return nodes.Name(token.value, "load", lineno=token.lineno)
        node = super().parse_primary(with_namespace)
        node.bracketed = token.type == "lparen"  # type: ignore[attr-defined]  # `not (a == b)`
        return node


def _loop_items(value: Any, pairs: bool) -> Any:
    """What `{% for %}` walks in Nunjucks: an array or a string; an object only as `k, v`;
    anything else (null, undefined, a number) not at all."""
    if isinstance(value, Mapping):
        return value if pairs else Array()
    return value if isinstance(value, (str, list, tuple)) else Array()


def _range(start: Any, stop: Any = None, step: Any = 1) -> Array:
    """Nunjucks' `range(start, stop, step)`: an array, compared and counted as JavaScript
    does (`range('3')` is 0, 1, 2)."""
    start, stop = (0, start) if stop is None else (start, stop)
    if not (relation(operator.gt, step, 0) or relation(operator.lt, step, 0)):
        raise ValueError("range() step must not be zero")
    items, i, up = Array(), start, relation(operator.gt, step, 0)
    while relation(operator.lt, i, stop) if up else relation(operator.gt, i, stop):
        items.append(i)
        i = plus(i, step)
    return items


_LOOP = frozenset({"index", "index0", "revindex", "revindex0", "first", "last", "length"})
_MACROS = frozenset({"sort", "int"})  # Nunjucks filters that take keyword arguments by name


def _js_call(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    """A filter called as Nunjucks calls one: keyword arguments arrive as one last object
    (`truncate(length=5)` is `truncate(s, {length: 5})`), except for its macros; and, as in
    JavaScript, arguments beyond the function's own are ignored."""
    if name in _MACROS:
        return f
    params = inspect.signature(f).parameters.values()
    most = None if any(p.kind == p.VAR_POSITIONAL for p in params) else len(params)

    @functools.wraps(f)
    def call(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = (*args, js_object({**kwargs, "__keywords": True}))
        return f(*args[:most])

    return call


class _Nunjucks(SandboxedEnvironment):
    code_generator_class = _Generator
    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})
    intercepted_unops = frozenset({"+", "-"})

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = _Parser(self, source, name, filename).parse()
        for loop in tree.find_all(nodes.For):
            pairs = nodes.Const(isinstance(loop.target, nodes.Tuple))
            loop.iter = nodes.Filter(loop.iter, "_loop_items", [pairs], [], None, None,
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

    array = staticmethod(Array)
    object = staticmethod(js_object)

    @staticmethod
    def concat(parts: Iterable[Any]) -> str:
        return "".join(map(js_string, parts))

    def getattr(self, obj: Any, attribute: str) -> Any:
        return self.getitem(obj, attribute)

    def getitem(self, obj: Any, key: Any) -> Any:
        if isinstance(obj, LoopContext) and key not in _LOOP:
            return self.undefined(name=key)  # jinja2's loop.depth, .cycle(), ...: not Nunjucks'
        return js_get(obj, key) if is_js(obj) else super().getitem(obj, key)  # or `loop.index`


_ENV = _Nunjucks(autoescape=False, undefined=Undefined, finalize=js_print, optimized=False,
                 keep_trailing_newline=True, extensions=[_ElseIf])
# Nunjucks' filters, tests and globals only: jinja2's own (`min`, `map`, `dict`, ...) are unknown
_ENV.filters = {name: _js_call(name, f) for name, f in FILTERS.items()}
_ENV.filters["_loop_items"] = _loop_items
_ENV.tests = dict(TESTS)
_ENV.globals = {"range": _range, "cycler": Cycler, "joiner": Joiner,
                "env": {}, "null": None}  # promptfoo's `env`; never the process environment


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
        return template.render({k: js(v) for k, v in vars.items()})
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
