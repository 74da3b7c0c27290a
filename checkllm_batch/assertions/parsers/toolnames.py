"""Tool names called in an output, found as promptfoo 0.123.1's tool-call-f1 finds them.

The output is parsed as JSON; if it is not JSON, JSON blocks are taken from the text: a
bracket-balanced `{...}` or `[...]` counts only where it starts and ends its own lines
(so a payload quoted inside a sentence is prose, not a call), strings may hold brackets,
fenced code blocks and list items are followed as Markdown has them, and a block that does
not parse is searched again one level down. The scan is iterative: no input can exhaust the
stack; one with too many unmatched brackets, or too much nesting to re-scan, is refused with
a reason (promptfoo's limits).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from ...js.jsontext import js_json_loads

MAX_UNMATCHED = 65536
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-+*]|\d+[.)])[ \t]+")
_NOT_SPACE = re.compile(r"[^\s\ufeff]")


class ToolCallParseError(ValueError):
    """The output is too malformed to scan within promptfoo's limits."""


class Token(NamedTuple):
    char: str
    at: int  # its index in the text (`index` would shadow tuple.index)
    starts_line: bool
    ends_line: bool


def _width(text: str) -> int:
    column = 0
    for ch in text:
        column += 4 - column % 4 if ch == "\t" else 1
    return column


class _Lines:
    """Markdown state while scanning line by line: an open code fence, list indents."""

    def __init__(self) -> None:
        self.fence, self.fence_container = "", 0
        self.containers: list[int] = []

    def skips(self, content: str, indent: int) -> tuple[bool, bool]:
        """(skip this line, reset the bracket stack before it)."""
        reset = False
        if self.fence and content and indent < self.fence_container:
            self.fence, reset = "", True
        if self.fence:
            m = _FENCE.match(content)
            if (m and indent <= self.fence_container + 3 and m[1][0] == self.fence[0]
                    and len(m[1]) >= len(self.fence) and not content[m.end():].strip()):
                self.fence = ""
            return True, reset
        while content and self.containers and indent < self.containers[-1]:
            self.containers.pop()
        item = _LIST_ITEM.match(content)
        if item:
            self.containers.append(_width(item[0]))
        container = self.containers[-1] if self.containers else 0
        text = content[item.end():] if item else content
        m = _FENCE.match(text)
        if m and (item or indent <= container + 3) and (
                m[1][0] != "`" or "`" not in text[m.end():]):
            self.fence, self.fence_container = m[1], container
            return True, True
        return False, reset


def _delimiters(text: str) -> Iterator[Token | None]:
    """Brackets outside strings, line by line; None where the bracket stack resets."""
    lines, offset = _Lines(), 0
    for line in text.split("\n"):
        start, offset = offset, offset + len(line) + 1
        content = line.rstrip()
        first = _NOT_SPACE.search(content)
        first_col = first.start() if first else -1
        skip, reset = lines.skips(content, _width(content[:max(0, first_col)]))
        if reset:
            yield None
        if skip:
            continue
        in_string = escaped = False
        for column, ch in enumerate(content):
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch in "{[]}":
                yield Token(ch, start + column, column == first_col, column == len(content) - 1)
        if in_string:
            yield None


def _unmatched(text: str) -> list[int]:
    unmatched: list[int] = []
    base = 0
    for token in _delimiters(text):
        if token is None:
            base = len(unmatched)
        elif token.char in "{[":
            unmatched.append(token.at)
        elif len(unmatched) > base and text[unmatched[-1]] == ("{" if token.char == "}" else "["):
            unmatched.pop()
        else:
            unmatched.append(token.at)
            base = len(unmatched)
        if len(unmatched) > MAX_UNMATCHED:
            raise ToolCallParseError(
                f"Tool Call F1 exceeded its delimiter limit ({MAX_UNMATCHED})")
    return unmatched


def _blocks(text: str, skip_root: bool = False) -> Iterator[tuple[str, bool]]:
    """(block, starts its line) for each balanced block that ends its line."""
    unmatched = set(_unmatched(text))
    depth, start, start_depth, starts_line = 0, -1, 0, False
    for token in _delimiters(text):
        if token is None or token.at in unmatched:
            continue
        if token.char in "{[":
            if start < 0 and depth == (1 if skip_root else 0):
                start, start_depth, starts_line = token.at, depth, token.starts_line
            depth += 1
            continue
        depth -= 1
        if start >= 0 and depth == start_depth:
            if token.ends_line:
                yield text[start:token.at + 1], starts_line
            start = -1


def json_blocks(text: str) -> Iterator[Any]:
    """The parsed JSON blocks of a text, a block that fails to parse searched inside."""
    pending = [_blocks(text)]
    budget = 4 * len(text)
    while pending:
        found = next(pending[-1], None)
        if found is None:
            pending.pop()
            continue
        block, starts_line = found
        if len(block) > budget:
            raise ToolCallParseError(
                "Tool Call F1 could not finish parsing malformed output within its work limit")
        budget -= len(block)
        try:
            parsed = js_json_loads(block)
        except ValueError:
            pending.append(_blocks(block, skip_root=True))
            continue
        if starts_line:
            yield parsed


def tool_names(output: Any) -> set[str]:
    """Tool names called in an output: OpenAI, Anthropic tool_use, Google functionCall, JSON
    blocks in text. Raises ToolCallParseError for text beyond promptfoo's limits."""
    if isinstance(output, str):
        try:
            parsed = js_json_loads(output)
        except ValueError:
            return {name for block in json_blocks(output) for name in tool_names(block)}
        return tool_names(parsed)  # a JSON string holding the text is read again
    if isinstance(output, dict):
        return _object_names(output)
    if isinstance(output, list):
        return {name for item in output if isinstance(item, dict)
                for name in _item_names(item)}
    return set()


def _name(value: Any) -> set[str]:
    return {value["name"]} if isinstance(value, dict) and isinstance(value.get("name"), str) \
        else set()


def _object_names(obj: dict) -> set[str]:
    if isinstance(obj.get("tool_calls"), list):
        return {n for tc in obj["tool_calls"] if isinstance(tc, dict)
                for n in _name(tc.get("function")) | _name(tc)}
    if obj.get("type") in ("tool_use", "function_call"):
        return _name(obj)
    if isinstance(obj.get("functionCall"), dict):
        return _name(obj["functionCall"])
    if isinstance(obj.get("toolCall"), dict):
        calls = obj["toolCall"].get("functionCalls")
        return {n for c in calls for n in _name(c)} if isinstance(calls, list) else set()
    return set()


def _item_names(item: dict) -> set[str]:
    if item.get("type") == "tool_use":
        return _name(item)
    for key in ("functionCall", "function"):
        if isinstance(item.get(key), dict):
            return _name(item[key])
    return _name(item)
