"""YAML 1.2 core-schema loading (as js-yaml does for promptfoo) with line numbers.

PyYAML implements YAML 1.1: `yes`/`no`/`on`/`off` become booleans, `1e3` stays a string and
`2024-01-01` becomes a date. promptfoo users write YAML 1.2, so we swap the implicit
resolvers for the 1.2 core ones. Mappings remember the line they start on, for errors.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError, Problem, Where


class LineDict(dict):
    """A mapping that remembers the (1-based) line it was written on (or, in a suite given as
    a mapping, its key path: `tests[2].assert[0]`)."""

    line: int | None = None
    key: str | None = None


class _Loader(yaml.SafeLoader):
    pass


_YAML11_ONLY = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:int",
                "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp"}
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _YAML11_ONLY]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
    list("-+0123456789"))
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
               r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."))


def _int(loader: _Loader, node: yaml.ScalarNode) -> int | float:
    text = loader.construct_scalar(node)
    if text.startswith("-") and not text.strip("-0"):  # -0: a JavaScript number, not 0
        return -0.0
    if text.startswith("0o"):
        value = int(text[2:], 8)
    else:
        value = int(text, 0) if text.startswith("0x") else int(text, 10)
    return checked_int(value, node.start_mark)


INT64 = 2**63


def checked_int(value: int, mark: Any = None) -> int:
    """Integers beyond 64 bits fit neither Polars nor DuckDB (nor JavaScript): refused."""
    if not -INT64 <= value < INT64:
        raise yaml.constructor.ConstructorError(
            None, None, f"integer {str(value)[:20]}... is too large (64 bits at most)", mark)
    return value


def _float(loader: _Loader, node: yaml.ScalarNode) -> float:
    text = loader.construct_scalar(node).lower()
    if text.endswith("inf"):
        return float("-inf") if text.startswith("-") else float("inf")
    return float("nan") if text == ".nan" else float(text)


def _mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    own = [k for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"]
    seen: set = set()
    for key_node in own:  # a key written twice: PyYAML would keep the last silently
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, Hashable) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key) if isinstance(key, Hashable) else None
    out = LineDict(loader.construct_mapping(node, deep=True))
    out.line = node.start_mark.line + 1
    return out


_Loader.add_constructor("tag:yaml.org,2002:int", _int)
_Loader.add_constructor("tag:yaml.org,2002:float", _float)
_Loader.add_constructor("tag:yaml.org,2002:map", _mapping)

MAX_DEPTH = 100  # nesting levels; deeper documents are refused before they are built
MAX_NODES = 1_000_000  # values after aliases are expanded (an "alias bomb" is refused)


def load_yaml_text(text: str, source: str) -> Any:
    loader = None
    try:
        loader = _Loader(text)  # reads (and checks) the first characters already
        node = loader.get_single_node()
        if node is None:
            return None
        _check_size(node, source)
        return loader.construct_document(node)
    except yaml.reader.ReaderError as e:  # a control character: no mark, a position
        line = text[:e.position].count("\n") + 1
        code = e.character if isinstance(e.character, int) else ord(e.character)
        raise ConfigError([Problem(Where(source, line), f"invalid YAML: control character "
                                   f"U+{code:04X} is not allowed")]) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = Where(source, mark.line + 1 if mark else None)
        raise ConfigError([Problem(where, f"invalid YAML: {getattr(e, 'problem', e)}")]) from None
    except RecursionError:
        raise ConfigError([Problem(Where(source), "invalid YAML: nested too deeply")]) from None
    finally:
        if loader is not None:
            loader.dispose()


def _check_size(root: yaml.Node, source: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH, and aliases that expand past MAX_NODES values
    (each alias counted at its full size, as building the document would copy it)."""
    sizes: dict[int, int] = {}
    stack = [(root, 1, False)]
    while stack:
        node, depth, children_done = stack.pop()
        if depth > MAX_DEPTH:
            raise ConfigError([Problem(Where(source, node.start_mark.line + 1),
                                       f"invalid YAML: nested more than {MAX_DEPTH} levels deep")])
        children = _children(node)
        if id(node) in sizes:
            continue
        if not children_done and children:
            stack.append((node, depth, True))
            stack.extend((c, depth + 1, False) for c in children if id(c) not in sizes)
            continue
        sizes[id(node)] = 1 + sum(sizes.get(id(c), 1) for c in children)
        if sizes[id(node)] > MAX_NODES:
            raise ConfigError([Problem(Where(source, node.start_mark.line + 1),
                                       f"invalid YAML: aliases expand it past {MAX_NODES:,} values")])


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def load_yaml(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ConfigError([Problem(Where(str(path)), f"cannot read: {e.strerror}")]) from None
    return load_yaml_text(decode(data, path), str(path))


def decode(data: bytes, path: Path | str) -> str:
    """UTF-8 text (a BOM is dropped); other bytes are a ConfigError naming the line."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ConfigError([Problem(Where(str(path), line), f"not UTF-8 text (byte "
                                   f"{data[e.start]:#04x} at offset {e.start}); save the file as "
                                   "UTF-8")]) from None
