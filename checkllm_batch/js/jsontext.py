"""JSON text as promptfoo reads it: JavaScript's JSON.parse (js_json_loads), and the JSON
objects found inside free text (extract_json_objects)."""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

import numpy as np
import orjson
import yaml

from . import yaml12
from .jsvalue import as_double


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def js_json_loads(text: str) -> Any:
    """JavaScript's JSON.parse: strict JSON, where a number too large for a double is
    ±Infinity (`1e400`), a lone surrogate escape (`"\\ud800"`) is a valid string, and any
    depth parses (orjson stops at 1024 levels, json at Python's recursion limit)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as e:
        try:
            return json.loads(text, parse_constant=_reject_constant)
        except RecursionError:
            return _deep_loads(text, str(e))
        except (ValueError, TypeError):
            raise ValueError(str(e)) from None


_SPACE = r"[ \t\n\r]*"
_STRING = r'"(?:[^"\\\x00-\x1f]|\\.)*"'  # its escapes checked by json.loads
_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_VALUE = re.compile(rf"{_SPACE}([\[{{]|{_STRING}|{_NUMBER}|true|false|null)")
_KEY = re.compile(rf"{_SPACE}({_STRING}){_SPACE}:")
_AFTER = re.compile(rf"{_SPACE}([,\]}}])")


def _deep_loads(text: str, error: str) -> Any:
    """JSON.parse without recursion, for text nested too deep for the parsers above: the
    open arrays and objects are a stack (each with the key its next value goes under)."""
    stack: list[list] = []
    pos, value = 0, None  # type: int, Any
    while True:
        m = _VALUE.match(text, pos)
        if m is None:
            raise ValueError(error)
        pos, token = m.end(), m.group(1)
        if token in "[{":
            close = _AFTER.match(text, pos)
            if close is None or close.group(1) != "]}"["[{".index(token)]:
                stack.append([[] if token == "[" else {}, None])
                if token == "{":
                    pos = _next_key(text, pos, stack[-1], error)
                continue
            pos, value = close.end(), [] if token == "[" else {}
        else:
            value = json.loads(token)  # a string, number or literal
        while True:  # the value goes into its container; close what it completes
            if not stack:
                if text[pos:].strip(" \t\n\r"):
                    raise ValueError(error)
                return value
            container = stack[-1]
            if isinstance(container[0], list):
                container[0].append(value)
            else:
                container[0][container[1]] = value
            after = _AFTER.match(text, pos)
            if after is None:
                raise ValueError(error)
            pos = after.end()
            if after.group(1) == ",":
                if isinstance(container[0], dict):
                    pos = _next_key(text, pos, container, error)
                break
            if after.group(1) != ("]" if isinstance(container[0], list) else "}"):
                raise ValueError(error)
            value = stack.pop()[0]


def _next_key(text: str, pos: int, container: list, error: str) -> int:
    m = _KEY.match(text, pos)
    if m is None:
        raise ValueError(error)
    container[1] = json.loads(m.group(1))
    return m.end()


MAX_SPAN = 100_000


class _JsYamlLoader(yaml12._Loader):
    """js-yaml's reading: YAML 1.2 core types (a key written twice is an error), a
    timestamp is a JavaScript Date, which a JSON Schema sees as an object without
    properties, and `!!set` is a mapping to nulls."""


# js-yaml's timestamps: a date is yyyy-mm-dd; one or two digits for month and day with a time
_TIMESTAMP = re.compile(r"""([0-9]{4})-([0-9]{2})-([0-9]{2})|([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})
    (?:[Tt]|[ \t]+)([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]*)?
    (?:[ \t]*(?:Z|[-+]([0-9]{1,2})(?::([0-9]{2}))?))?""", re.X)


def _timestamp(loader: _JsYamlLoader, node: yaml.ScalarNode) -> Any:
    """A Date (`{}`) when the fields make a real date and time, else the text, as js-yaml
    leaves `2024-02-30` or `2024-01-01 25:00:00` a string."""
    text = loader.construct_scalar(node)
    m = _TIMESTAMP.fullmatch(text)
    if m is None:  # `!!timestamp` on other text
        raise yaml.constructor.ConstructorError(None, None, "cannot resolve a timestamp",
                                                node.start_mark)
    year, month, day, *clock = [int(g) for g in m.groups() if g is not None]
    limits = (23, 59, 59, 23, 59)  # hour, minute, second, then the zone's hour and minute
    try:
        datetime.date(year or 2000, month, day)  # JavaScript has a year 0, a leap year
    except ValueError:
        return text
    return text if any(v > top for v, top in zip(clock, limits)) else {}


def _set(loader: _JsYamlLoader, node: yaml.MappingNode) -> dict:
    found = loader.construct_mapping(node)
    if any(v is not None for v in found.values()):
        raise yaml.constructor.ConstructorError(None, None, "cannot resolve a set item",
                                                node.start_mark)
    return found


_JsYamlLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)
_JsYamlLoader.add_constructor("tag:yaml.org,2002:set", _set)
_JsYamlLoader.add_implicit_resolver("tag:yaml.org,2002:timestamp", re.compile(
    f"(?:{_TIMESTAMP.pattern})$", re.X), list("0123456789"))


class _FlowLoader(_JsYamlLoader):
    """js-yaml's reading of a span (`{json: true}`): a key written twice keeps its last
    value, an integer beyond 64 bits is an inexact double, a tab separates tokens as a
    space does (`{a:\tb}`; PyYAML's scanner skips spaces only), and `{a: -}` is refused."""

    def check_plain(self) -> bool:
        """js-yaml: in a flow collection, `-` before `,[]{}` starts no plain scalar."""
        if self.flow_level and self.peek() == "-" and self.peek(1) in ",[]{}":
            return False
        return super().check_plain()

    def scan_plain_spaces(self, indent: int, start_mark: Any) -> list[str] | None:
        """PyYAML's, with a tab as a space: `{a: x\ty}` reads "x\ty", as js-yaml does."""
        length = 0
        while self.peek(length) in " \t":
            length += 1
        spaces = self.prefix(length)
        self.forward(length)
        if self.peek() not in "\r\n\x85\u2028\u2029":
            return [spaces] if spaces else []
        line_break, breaks = self.scan_line_break(), []
        self.allow_simple_key = True
        while self.peek() in " \t\r\n\x85\u2028\u2029":
            if self.peek() in " \t":
                self.forward()
            else:
                breaks.append(self.scan_line_break())
        if self.prefix(3) in ("---", "...") and self.peek(3) in "\0 \t\r\n\x85\u2028\u2029":
            return None  # a document marker ends the scalar
        return ([line_break] if line_break != "\n" else [] if breaks else [" "]) + breaks

    def scan_to_next_token(self) -> None:
        while True:
            while self.peek() in " \t":
                self.forward()
            if self.peek() == "#":
                while self.peek() not in "\0\r\n\x85\u2028\u2029":
                    self.forward()
            if not self.scan_line_break():
                return


def js_yaml_loads(text: str) -> Any:
    """promptfoo's loadYaml of a schema's text (raises yaml.YAMLError)."""
    return yaml.load(text, Loader=_JsYamlLoader)  # noqa: S506 (a safe loader)


def _int(loader: _FlowLoader, node: yaml.ScalarNode) -> int | float:
    try:
        return yaml12._int(loader, node)
    except yaml.constructor.ConstructorError:  # beyond 64 bits
        text = str(loader.construct_scalar(node)).lstrip("+")
        digits = text.lstrip("-")
        base = {"0x": 16, "0o": 8}.get(digits[:2], 10)
        value = int(digits[2:] if base != 10 else digits, base)
        return as_double(-value if text.startswith("-") else value)


def _map(loader: _FlowLoader, node: yaml.MappingNode) -> dict:
    return loader.construct_mapping(node, deep=True)  # a key written twice: the last wins


_FlowLoader.add_constructor("tag:yaml.org,2002:int", _int)
_FlowLoader.add_constructor("tag:yaml.org,2002:map", _map)


def extract_json_objects(text: str) -> list[Any]:
    """promptfoo's extraction: brace-balanced spans from each `{` but a last character,
    truncated ones auto-closed, parsed leniently (strict JSON first, then a YAML flow mapping as js-yaml would)."""
    found: list[Any] = []
    spans = _Spans(text)
    start = text.find("{")
    while 0 <= start < len(text) - 1:  # a `{` that ends the text is never tried
        end, depth = spans.end(start)
        span = text[start:end] if end else text[start:start + MAX_SPAN] + "}" * depth
        parsed = None if spans.too_deep(start, span) else _lenient(span)
        if isinstance(parsed, dict):
            found.append(parsed)
            start = text.find("{", start + len(span) if end else len(text))
        else:
            start = text.find("{", start + 1)
    return found


class _Spans:
    """Where each span ends, and whether it surely nests deeper than js-yaml allows. A text
    with more brackets than that limit (thousands of nested `{`, say) has its depths counted
    once, with NumPy: each span is then found, and one nested too deep refused, without a
    walk of the text or a parse per `{` (quadratic in such a text)."""

    def __init__(self, text: str):
        self.text = text
        self.braces = self.brackets = None
        if text.count("{") + text.count("[") > MAX_YAML_DEPTH:
            points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
            self.braces = np.cumsum((points == ord("{")).astype(np.int32)
                                    - (points == ord("}")).astype(np.int32))
            self.brackets = self.braces + np.cumsum((points == ord("[")).astype(np.int32)
                                                    - (points == ord("]")).astype(np.int32))

    def end(self, start: int) -> tuple[int | None, int]:
        """_balanced_end's answer, from the counted depths when there are any."""
        if self.braces is None:
            return _balanced_end(self.text, start)
        depth = self.braces[start:start + MAX_SPAN] - (self.braces[start - 1] if start else 0)
        closed = int(np.argmax(depth <= 0))  # the first point back at depth 0, if any
        return (start + closed + 1, 0) if depth[closed] == 0 else (None, int(depth[-1]))

    def too_deep(self, start: int, span: str) -> bool:
        """Decided from the brackets alone, for a span without quotes or comments (where
        every bracket opens or closes a collection); for any other span, no: it is parsed."""
        if self.brackets is None:
            return False
        depth = self.brackets[start:start + len(span)]
        deepest = depth.max() - (self.brackets[start - 1] if start else 0)
        # bracket n opens a collection inside n - 1 others; a margin of two past the limit
        return deepest > MAX_YAML_DEPTH + 2 and not any(c in span for c in ('"', "'", "#", "//"))


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
    """The span as js-yaml reads it (strict JSON first, the common case), or None when it
    does not parse or nests a node deeper than js-yaml's limit (maxDepth 100)."""
    try:
        found = orjson.loads(span)
    except orjson.JSONDecodeError as e:
        if str(e).startswith("depth limit exceeded"):  # JSON, valid until 1024 levels down:
            return None  # js-yaml reads the same nesting and refuses it at 100
        try:
            found = yaml.load(_hash_comments(span), Loader=_FlowLoader)  # noqa: S506 (safe)
        except (yaml.YAMLError, RecursionError):
            return None
    if span.count("{") + span.count("[") <= MAX_YAML_DEPTH:  # too few brackets to nest so deep
        return found
    return None if _nested_beyond(found, MAX_YAML_DEPTH) else found


MAX_YAML_DEPTH = 98  # js-yaml (maxDepth 100) refuses a node inside 99 collections


def _nested_beyond(value: Any, room: int) -> bool:
    """Whether some node of `value` (a key, an item, a value) sits more than `room`
    collections down; the walk goes no deeper than `room + 1` levels."""
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) \
        else ()
    if not children:
        return False
    return room == 0 or any(_nested_beyond(c, room - 1) for c in children)


_LETTER = re.compile("[a-zA-Z]")


def _hash_comments(text: str) -> str:
    """promptfoo's convertSlashCommentsToHash: on each line, a `//` outside quotes (and not
    in a token holding `://`) starts a comment, written as half as many `#`."""
    return "\n".join(_hash_comment(line) if "//" in line else line
                     for line in text.split("\n"))


def _hash_comment(line: str) -> str:
    out: list[str] = []
    state = ""
    for i, ch in enumerate(line):
        nxt, prev = line[i + 1:i + 2], line[i - 1:i] if i else ""
        if state == "'":
            state = "" if ch == "'" and not _escaped(line, i) and not _LETTER.match(nxt) else state
        elif state == '"':
            state = "" if ch == '"' and not _escaped(line, i) else state
        elif ch == "'" and not _LETTER.match(prev):
            state = "'"
        elif ch == '"':
            state = '"'
        elif ch == "/" and nxt == "/":
            start = max(line.rfind(c, 0, i) for c in " \t\n\r\f\v") + 1
            if "://" not in line[start:i + 2]:
                slashes = len(line[i:]) - len(line[i:].lstrip("/"))
                return "".join(out) + "#" * (slashes // 2) + line[i + slashes:]
        out.append(ch)
    return "".join(out)


def _escaped(line: str, i: int) -> bool:
    return (len(line[:i]) - len(line[:i].rstrip("\\"))) % 2 == 1
