"""YAML 1.2 core-schema loading (as js-yaml does for promptfoo) with line numbers.

PyYAML implements YAML 1.1: `yes`/`no`/`on`/`off` become booleans, `1e3` stays a string and
`2024-01-01` becomes a date. promptfoo users write YAML 1.2, so we swap the implicit
resolvers for the 1.2 core ones. Mappings remember the line they start on, for errors.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError


class LineDict(dict):
    """A mapping that remembers the (1-based) line it was written on."""

    line: int | None = None


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


def _int(loader: _Loader, node: yaml.Node) -> int:
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    return int(text, 0) if text.startswith("0x") else int(text, 10)


def _float(loader: _Loader, node: yaml.Node) -> float:
    text = loader.construct_scalar(node).lower()
    if text.endswith("inf"):
        return float("-inf") if text.startswith("-") else float("inf")
    return float("nan") if text == ".nan" else float(text)


def _mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    out = LineDict(loader.construct_mapping(node, deep=True))
    out.line = node.start_mark.line + 1
    return out


_Loader.add_constructor("tag:yaml.org,2002:int", _int)
_Loader.add_constructor("tag:yaml.org,2002:float", _float)
_Loader.add_constructor("tag:yaml.org,2002:map", _mapping)


def load_yaml_text(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigError([f"{source}{line}: invalid YAML: {getattr(e, 'problem', e)}"]) from None


def load_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError([f"{path}: cannot read: {e.strerror}"]) from None
    return load_yaml_text(text, str(path))
