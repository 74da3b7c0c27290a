"""JavaScript regular expressions (no flags, as promptfoo's `new RegExp(value)`), run in Polars.

Polars runs Rust's `regex` crate, whose syntax and classes differ from JavaScript's:
JS `.` excludes \\n \\r \\u2028 \\u2029, `\\d`/`\\w`/`\\b` are ASCII-only, `\\s` is a fixed set,
`{` may be a literal, `[^]` matches anything. `translate` rewrites a JS pattern so that Rust
(or, for what Rust cannot run: lookaround and backreferences, the backtracking `regex`
module) gives JavaScript's answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl
import regex as backtracking

_JS_SPACE = r"\t\n\x0B\f\r \xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000\uFEFF"
_CLASS_ESCAPES = {"d": "0-9", "w": "A-Za-z0-9_", "s": _JS_SPACE}
_WORD = "[A-Za-z0-9_]"
_QUANTIFIER = re.compile(r"\{\d+(,\d*)?\}")
_NEEDS_BACKTRACKING = re.compile(r"\(\?<?[=!]|\\[1-9]|\\k<")


@dataclass(frozen=True)
class JsRegex:
    source: str
    pattern: str  # for the chosen engine
    backtracking: bool  # True: Rust cannot run it; use the `regex` module over distinct values

    def search(self, text: str) -> bool:
        return bool(backtracking.search(self.pattern, text))


def compile_js(source: str) -> JsRegex:
    """Translate and check a JS pattern; ValueError says why it is invalid."""
    if not _NEEDS_BACKTRACKING.search(source):
        rust = translate(source, rust=True)
        try:
            pl.select(pl.lit("").str.contains(rust))
            return JsRegex(source, rust, backtracking=False)
        except pl.exceptions.PolarsError:
            pass  # try the backtracking engine, which accepts more
    python = translate(source, rust=False)
    try:
        backtracking.compile(python)
    except backtracking.error as e:
        raise ValueError(f"invalid regex {source!r}: {e}") from None
    return JsRegex(source, python, backtracking=True)


def translate(source: str, *, rust: bool) -> str:
    out: list[str] = []
    i, n = 0, len(source)
    in_class = False
    while i < n:
        ch = source[i]
        if ch == "\\" and i + 1 < n:
            out.append(_escape(source[i + 1], in_class, rust))
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
                out.append("]")
            elif ch in "[&~" or (ch == "-" and source[i + 1: i + 2] == "-"):
                out.append("\\" + ch)  # set operators in Rust classes; literals in JS
            else:
                out.append(ch)
        elif ch == "[":
            if source.startswith("[^]", i):
                out.append(r"[\s\S]")
                i += 3
                continue
            in_class = True
            out.append("[")
            if source[i + 1: i + 2] == "^":
                out.append("^")
                i += 1
            if source[i + 1: i + 2] == "]":  # JS: "[]" is an empty class, "[]a]" is not valid
                out.append(r"\]")
                i += 1
        elif ch == ".":
            out.append(r"[^\n\r\u2028\u2029]" if not rust else r"[^\n\r\x{2028}\x{2029}]")
        elif ch == "$" and not rust:
            out.append(r"\Z")
        elif ch == "{" and not _QUANTIFIER.match(source, i):
            out.append(r"\{")
        elif ch == "}" and not (out and _closes_quantifier(out)):
            out.append(r"\}")
        elif ch == "]":
            out.append(r"\]")
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _closes_quantifier(out: list[str]) -> bool:
    text = "".join(out[-12:])
    return bool(re.search(r"\{\d+(,\d*)?$", text))


def _escape(ch: str, in_class: bool, rust: bool) -> str:
    lower = ch.lower()
    if lower in _CLASS_ESCAPES:
        body = _CLASS_ESCAPES[lower]
        if rust:
            body = re.sub(r"\\u([0-9A-F]{4})", r"\\x{\1}", body)
        if in_class:
            return body if ch.islower() else "\\" + ch  # negated escapes inside a class: rare
        return f"[{body}]" if ch.islower() else f"[^{body}]"
    if ch in "bB" and not in_class:
        if rust:
            return f"(?-u:\\{ch})"
        boundary = f"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))"
        return boundary if ch == "b" else f"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))"
    if ch == "/":
        return "/"
    if ch == "0":
        return r"\x00"
    if ch == "u" and rust:
        return r"\u"  # \uXXXX is accepted by both engines
    if ch.isalnum() or ch in "\\":
        return "\\" + ch
    return "\\" + ch if not ch.isspace() else ch
