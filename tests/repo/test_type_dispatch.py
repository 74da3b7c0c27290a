"""A type's behaviour is declared on the type and dispatched on, never looked up by its name
elsewhere (issue 13): no module compares a registered type's name unless it registers it."""

from __future__ import annotations

import ast

import pytest
from conftest import ROOT

from checkllm_batch.assertions.reading.cells import PROMPTFOO_TYPES
from checkllm_batch.assertions.registry import ALIASES, REGISTRY


def owners() -> dict[str, str]:
    """Each registered name and alias -> the module that registers it."""
    out = {name: atype.fn.__module__ for name, atype in REGISTRY.items()}
    out.update({alias: REGISTRY[name].fn.__module__ for alias, name in ALIASES.items()})
    return out


def _type_name(node: ast.AST, names: set[str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        name = node.value.removeprefix("not-")
        return name if name in names else None
    return None


def type_name_tests(source: str, names: set[str], vocabulary: set[str]) -> list[str]:
    """The type names in `names` that `source` dispatches on: compared with == / != or
    matched in a `case`, tested with startswith / endswith, or listed in a set, tuple, list
    or as dict keys made only of type names (a table of types, e.g. `base in {...}`); every
    name in `vocabulary` (all type names, promptfoo's we do not register too) counts as a
    type name in a table. A type name among other strings (a column list holding `cost`) or
    looked up in a container (`"cost" in frame.columns`) is not dispatch."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and all(isinstance(op, (ast.Eq, ast.NotEq))
                                                 for op in node.ops):
            parts = [node.left, *node.comparators]
        elif isinstance(node, ast.MatchValue):
            parts = [node.value]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("startswith", "endswith")):
            parts = list(node.args)
        elif isinstance(node, (ast.Set, ast.Tuple, ast.List, ast.Dict)):
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            table = [item is not None and _type_name(item, vocabulary) for item in items]
            parts = [item for item in items if item is not None] if items and all(table) else []
        else:
            continue
        found += [name for part in parts if (name := _type_name(part, names))]
    return found


NAMES = {"cost", "similar", "contains", "regex"}  # other modules' types
VOCABULARY = NAMES | {"equals", "classifier"}  # and the module's own, and one we do not register
CASES = [
    ('if spec.type == "cost":\n    pass', ["cost"]),
    ('if "not-cost" != label:\n    pass', ["cost"]),
    ('_SHARED = {"contains", "regex"}', ["contains", "regex"]),
    ('x = 0.8 if base in ("similar",) else 0.75', ["similar"]),
    ('RULES = {"similar": 0.8, "regex": None}', ["similar", "regex"]),
    ('T = {"similar", "classifier", "not-contains"}', ["similar", "contains"]),
    ('T = {"equals", "similar"}', ["similar"]),  # the module's own type beside another's
    ('T = {"classifier": 0.75}', []),  # a type we do not register has no module to own it
    ('T = ("cost", "not-similar")', ["cost", "similar"]),
    ('T = ("cost", "Ünïcödé")', []),
    ('ok = name.startswith("similar")', ["similar"]),
    ('match name:\n    case "regex":\n        pass', ["regex"]),
    # not dispatch: columns, fields and data that happen to share a type's name
    ('CORE = {"output", "cost", "latency_ms"}', []),
    ('if "cost" in frame.columns:\n    pass', []),
    ('row = {"cost": 1.0, "output": ""}', []),
    ('out = {"type": "regex", "value": "x"}', []),
    ('x = {"type": "equals"}["type"]', []),
    ('if fmt == "csv" or name == "":\n    pass', []),
    ('if name == "Ünïcödé" or name is None:\n    pass', []),
    ("x = ()", []),
]


@pytest.mark.parametrize("source,found", CASES)
def test_the_guard_finds_type_name_dispatch(source, found):
    assert sorted(type_name_tests(source, NAMES, VOCABULARY)) == sorted(found)


def test_no_type_name_is_tested_outside_its_module():
    """Declare what a type does on its `@assertion(...)` (AssertionType's attributes) and
    read it through the registry, as assertions/reading/cells.py reads the CSV rules."""
    owner = owners()
    vocabulary = set(owner) | set(PROMPTFOO_TYPES)
    offenders = []
    for path in sorted((ROOT / "checkllm_batch").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        mine = {name for name, where in owner.items() if where == module}
        names = set(owner) - mine
        source = path.read_text(encoding="utf-8")
        offenders += [f"{path.relative_to(ROOT)}: {name}"
                      for name in type_name_tests(source, names, vocabulary)]
    assert not offenders, offenders
