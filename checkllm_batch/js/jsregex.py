"""JavaScript regular expressions (no flags, as promptfoo's `new RegExp(value)`), run in Polars.

Polars runs Rust's `regex` crate, whose syntax and classes differ from JavaScript's:
JS `.` excludes \\n \\r \\u2028 \\u2029, `\\d`/`\\w`/`\\b` are ASCII-only, `\\s` is a fixed set,
`{` may be a literal, `[^]` matches anything. `translate` rewrites a JS pattern so that Rust
(or, for what Rust cannot run: lookaround and backreferences, the backtracking `regex`
module) gives JavaScript's answer. Matching a whole column (once per distinct text where
Rust cannot) is the assertions' (assertions/text.py `js_matches`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl
import regex as backtracking

from .whitespace import JS_SPACE_RANGES

# JavaScript's \d, \w and \s as ranges of code points (ASCII digits and word characters)
_CLASS_RANGES = {"d": [(0x30, 0x39)], "w": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F),
                                            (0x61, 0x7A)],
                 "s": JS_SPACE_RANGES}


def _complement(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    starts = [0] + [hi + 1 for _, hi in ranges]
    ends = [lo - 1 for lo, _ in ranges] + [0x10FFFF]
    return [(lo, hi) for lo, hi in zip(starts, ends) if lo <= hi]


def _class_body(ranges: list[tuple[int, int]], rust: bool) -> str:
    """The ranges as the inside of a character class, for Rust or for the `regex` module."""
    def char(c: int) -> str:
        return f"\\x{{{c:X}}}" if rust else f"\\U{c:08X}"
    return "".join(char(lo) if lo == hi else f"{char(lo)}-{char(hi)}" for lo, hi in ranges)


# \d \w \s and, for use inside a class, their negations \D \W \S: {(letter, rust): body}
_CLASS_ESCAPES = {(letter, rust): _class_body(ranges if letter.islower() else
                                              _complement(ranges), rust)
                  for lower, ranges in _CLASS_RANGES.items()
                  for letter in (lower, lower.upper()) for rust in (True, False)}
_WORD = "[A-Za-z0-9_]"
_QUANTIFIER = re.compile(r"\{\d+(,\d*)?\}")
_NEEDS_BACKTRACKING = re.compile(r"\(\?<?[=!]|\\[1-9]|\\k<")


_GROUP = re.compile(r"\((?!\?)|\(\?<(?![=!])")  # a capturing group opens
_NAMED = re.compile(r"\(\?<([A-Za-z_$][\w$]*)>")
_NAME_REF = re.compile(r"k<([A-Za-z_$][\w$]*)>")
_JS_GROUP_OPENERS = re.compile(r"\(\?(?:[:=!]|<[=!]|<[A-Za-z_$][\w$]*>)")
_QUANTIFIED = re.compile(r"(?:[*+?]|\{\d+(?:,\d*)?\})\??")
ASTRAL = r"[\x{10000}-\x{10FFFF}]"  # Polars: a character beyond U+FFFF
ASTRAL_CHAR = re.compile("[\U00010000-\U0010FFFF]")
_UNIT_SENSITIVE = re.compile(r"\.|\[\^|\\[SWDu]|[\U00010000-\U0010FFFF]")


@dataclass(frozen=True)
class JsRegex:
    source: str
    pattern: str  # for the chosen engine
    backtracking: bool  # True: Rust cannot run it; use the `regex` module over distinct values
    units: str | None = None  # for texts beyond U+FFFF, over UTF-16 code units (see utf16)

    def search(self, text: str) -> bool:
        return bool(backtracking.search(self.pattern, text))

    def search_units(self, text: str) -> bool:
        """The verdict over UTF-16 code units; only for a pattern with `units` set."""
        if self.units is None:
            raise ValueError(f"{self.source!r} has no UTF-16 translation")
        return bool(backtracking.search(self.units, utf16(text)))

    def test(self, text: str) -> bool:
        """Whether one text matches, as JavaScript's `RegExp.test` says (for a few texts;
        a column goes through assertions/text.py `js_matches`, in Polars)."""
        if self.units is not None and ASTRAL_CHAR.search(text):
            return self.search_units(text)
        if self.backtracking:
            return self.search(text)
        return bool(pl.select(pl.lit(text, pl.String).str.contains(self.pattern)).item())


def utf16(text: str) -> str:
    """`text` with each character beyond U+FFFF as its two UTF-16 surrogates: JavaScript
    (without the `u` flag) matches `.`, `[^a]`, `\\S` against one of them."""
    return ASTRAL_CHAR.sub(_surrogates, text)


def _surrogates(m: re.Match) -> str:
    c = ord(m.group()) - 0x10000
    return chr(0xD800 + (c >> 10)) + chr(0xDC00 + (c & 0x3FF))


def compile_js(source: str, *, rust_checked: bool = True) -> JsRegex:
    """Translate and check a JS pattern; ValueError says why it is invalid. Without
    `rust_checked`, a pattern Rust might run is not compiled here: the caller matches with
    `strict=False` and sends what Rust could not compile (null) to `compile_js` again."""
    _check_js_syntax(source)
    units = translate(utf16(source), rust=False) if _UNIT_SENSITIVE.search(source) else None
    if units is not None and ASTRAL_CHAR.search(source):  # JavaScript reads the pattern
        _compiled(source, units)  # as UTF-16 units: [😀-😂] is \\uDE00-\\uD83D, out of order
    if not _NEEDS_BACKTRACKING.search(source):
        rust = translate(source, rust=True)
        if not rust_checked:
            return JsRegex(source, rust, backtracking=False, units=units)
        try:
            pl.select(pl.lit("").str.contains(rust))
            return JsRegex(source, rust, backtracking=False, units=units)
        except pl.exceptions.PolarsError:
            pass  # try the backtracking engine, which accepts more
    python = translate(source, rust=False)
    _compiled(source, python)
    return JsRegex(source, python, backtracking=True, units=units)


def _compiled(source: str, pattern: str) -> None:
    """ValueError if the `regex` module cannot compile the translation `pattern`."""
    try:
        backtracking.compile(pattern)
    except backtracking.error as e:
        raise ValueError(f"invalid regex {source!r}: {e}") from None


def _check_js_syntax(source: str) -> None:
    """What Rust and Python accept but JavaScript does not: inline flags and other `(?`
    groups (`(?i)`, `(?P<n>`, `(?#`, `(?>`), and a quantifier with nothing to repeat: at the
    start of an alternative, on a quantifier (`a++`), or on an assertion (`^*`, `$?`, `\\b+`,
    a lookbehind; a lookahead may be repeated); in a pattern with named groups, a name used
    twice and a `\\k` that names no group."""
    names = _NAMED.findall(source)
    if len(set(names)) < len(names):
        raise ValueError(f"invalid regex {source!r}: a group name is used twice")
    i, n = 0, len(source)
    last = ""  # what a quantifier at `i` would repeat: "" (nothing), atom, assertion, quantifier
    groups: list[str] = []  # the open groups' openers
    while i < n:
        ch = source[i]
        if m := _QUANTIFIED.match(source, i):
            if last != "atom":
                raise ValueError(f"invalid regex {source!r}: nothing to repeat at "
                                 f"{source[i:m.end()]!r}")
            last, i = "quantifier", m.end()
            continue
        last = "atom"
        if ch == "\\":
            last = "assertion" if source[i + 1:i + 2] in ("b", "B") else "atom"
            ref = _NAME_REF.match(source, i + 1)
            if names and source[i + 1:i + 2] == "k" and not (ref and ref.group(1) in names):
                raise ValueError(f"invalid regex {source!r}: \\k names no group")
            i += 1
        elif ch == "[":
            i = _class_end(source, i)
        elif ch in "^$":
            last = "assertion"
        elif ch == "|":
            last = ""
        elif ch == "(":
            opener = _JS_GROUP_OPENERS.match(source, i)
            if source.startswith("(?", i) and not opener:
                raise ValueError(f"invalid regex {source!r}: JavaScript has no "
                                 f"{source[i:i + 3]!r} group (no inline flags)")
            groups.append(opener.group() if opener else "(")
            last, i = "", opener.end() - 1 if opener else i
        elif ch == ")" and groups:
            last = "assertion" if groups.pop() in ("(?<=", "(?<!") else "atom"
        i += 1


def _class_end(source: str, i: int) -> int:
    """Where the character class opening at `i` ends (its `]`; JS: `[]` and `[^]` too)."""
    j = i + 1 + (source[i + 1:i + 2] == "^")
    if source[j:j + 1] == "]":
        return j
    while j < len(source) and source[j] != "]":
        j += 2 if source[j] == "\\" else 1
    return j


def translate(source: str, *, rust: bool) -> str:
    out: list[str] = []
    i, n = 0, len(source)
    in_class = False
    groups = len(_GROUP.findall(re.sub(r"\\.|\[(?:\\.|[^\]\\])*\]", "", source)))  # not \( or [(]
    named = "(?<" in source.replace("(?<=", "").replace("(?<!", "")
    opened: list[tuple[str, ...]] = []  # the groups open at `i`: (number, name?) if capturing
    captures = 0
    set_before = False  # the class's last item was a set (\\d): a "-" after it is a literal
    while i < n:
        ch = source[i]
        if ch == "\\" and i + 1 < n:
            text, used = _escape(source, i + 1, in_class, rust, groups, named, opened)
            out.append(text)
            set_before = source[i + 1] in "dwsDWS"
            i += 1 + used
            continue
        if in_class:
            if ch == "]":
                in_class = False
                out.append("]")
            elif ch in "[&~" or (ch == "-" and (set_before or source[i + 1: i + 2] == "-" or
                                                 _CLASS_ESCAPE.match(source, i + 1))):
                # (JS: [a-\\d] and [\\d-a] are a, "-" or a digit)
                out.append("\\" + ch)  # set operators in Rust classes; literals in JS
            else:
                out.append(ch)
        elif ch == "[":
            if source.startswith("[^]", i):
                out.append(r"[\s\S]")
                i += 3
                continue
            if source.startswith("[]", i):  # JS: an empty class, matching nothing
                out.append(r"[^\x00-\x{10FFFF}]" if rust else r"[^\x00-\U0010FFFF]")
                i += 2
                continue
            in_class = True
            out.append("[")
            if source[i + 1: i + 2] == "^":
                out.append("^")
                i += 1
        elif ch == ".":
            out.append(r"[^\n\r\u2028\u2029]" if not rust else r"[^\n\r\x{2028}\x{2029}]")
        elif ch in "()":
            if ch == "(" and _GROUP.match(source, i):
                captures += 1
                name = _NAMED.match(source, i)
                opened.append((str(captures), name.group(1)) if name else (str(captures),))
            elif ch == "(":
                opened.append(())
            elif opened:
                opened.pop()
            out.append(ch)
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
        set_before = False
        i += 1
    return "".join(out)


def _closes_quantifier(out: list[str]) -> bool:
    text = "".join(out[-12:])
    return bool(re.search(r"\{\d+(,\d*)?$", text))


_CONTROL = {"f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\x0b"}
# (a legacy octal escape is at most \\377: `\\477` is `\\47` and "7")
_CLASS_ESCAPE = re.compile(r"\\[dwsDWS]")  # a set inside a class
_CLASS_CONTROL = re.compile(r"()()c([0-9_])")
_HEX = re.compile(r"x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4})|c([A-Za-z])|([0-3][0-7]{0,2}|[4-7][0-7]?)")


def _escape(source: str, i: int, in_class: bool, rust: bool, groups: int, named: bool,
            opened: list[tuple[str, ...]]) -> tuple[str, int]:
    """The translation of the escape whose letter is at `i`, and how many characters it
    used. JavaScript without the `u` flag: unknown escapes (`\\A`, `\\Z`, `\\p`, `\\h`) are
    the plain letter; `\\1` beyond the groups and `\\x`/`\\u`/`\\c` without digits are
    octal or plain; `\\k` is a plain `k` unless the pattern names a group."""
    ch = source[i]
    if (ch, rust) in _CLASS_ESCAPES:
        body = _CLASS_ESCAPES[ch, rust]
        return (body if in_class else f"[{body}]"), 1
    if ch in "bB" and not in_class:
        if rust:
            return f"(?-u:\\{ch})", 1
        boundary = f"(?:(?<={_WORD})(?!{_WORD})|(?<!{_WORD})(?={_WORD}))"
        return (boundary if ch == "b" else
                f"(?:(?<={_WORD})(?={_WORD})|(?<!{_WORD})(?!{_WORD}))"), 1
    if ch == "b":
        return _literal("\b", rust), 1  # backspace inside a class
    if ch in _CONTROL:
        return _literal(_CONTROL[ch], rust), 1
    # a backreference to a group that has not matched (yet), or is still open, matches the
    # empty text in JavaScript (`(a)|\1b` finds "b"); the `regex` module's would fail
    name = _NAME_REF.match(source, i)
    if name and named and not in_class:
        return _backreference(name.group(1), f"(?P={name.group(1)})", opened), name.end() - i
    # ASCII digits only (`\²` or `\٣` is the character itself in JavaScript)
    number = re.match(r"[1-9][0-9]*", source[i:])
    if number and int(number.group()) <= groups and not in_class:  # [\1] is octal
        return _backreference(number.group(), "\\" + number.group(), opened), number.end()
    m = _HEX.match(source, i)
    if not m and in_class:  # in a class, \\c also takes a digit or "_" (`[\\c1]` is \\x11)
        m = _CLASS_CONTROL.match(source, i)
    if m:
        code = (int(m.group(1) or m.group(2), 16) if m.group(1) or m.group(2) else
                ord(m.group(3)) % 32 if m.group(3) else int(m.group(4), 8))
        return _literal(chr(code), rust), m.end() - i
    if ch == "c":
        return _literal("\\", rust) + "c", 1
    return _literal(ch, rust), 1


def _backreference(group: str, ref: str, opened: list[tuple[str, ...]]) -> str:
    """`ref` to `group` when it has matched, else the empty text (a conditional); the
    empty text while the group is still open."""
    return "(?:)" if any(group in g for g in opened) else f"(?({group}){ref}|)"


def _literal(ch: str, rust: bool) -> str:
    """`ch` matched as itself by either engine."""
    if ch.isascii() and ch.isalnum():
        return ch
    if rust:
        return f"\\x{{{ord(ch):X}}}"
    return backtracking.escape(ch, special_only=False)
