"""Read a promptfoo-shaped suite (a YAML file, or the same as a mapping) into frozen specs,
checking everything before any row is read.

This reads the suite's structure: tests, defaultTest, test files, providers, judge, ids.
Each assertion is checked against the registry by the layer that has it, handed in as a
`Vocabulary` (assertions/reading: `load_suite`). Every problem is collected with its place
(file:line, or the key path of a mapping, then test and assertion) and raised once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError, Problem, Where
from ..js.yaml12 import LineDict, load_yaml
from . import cascade, schema
from .judge import JudgeConfig
from .model import DerivedMetric, Suite, TestSpec
from .problems import Problems, at, validate
from .sets import ReadAssertion, read_assertion
from .testfiles import Cell, read_test_file


@dataclass(frozen=True)
class Vocabulary:
    """What reading a suite needs from the assertion types, given by the layer that has
    them: how one assertion is checked (an assert-set's members too: the set is read here,
    sets.py), and how a CSV `__expected` cell is read."""

    assertion: ReadAssertion
    cell: Cell


def read_suite(source: str | Path | Mapping, vocabulary: Vocabulary) -> Suite:
    """Read and check a suite file, or a suite given as a mapping (file:// paths in it are
    read from the current folder); ConfigError lists every problem found."""
    if isinstance(source, Mapping):
        raw, file, base, files = _keyed(source), None, Path(), []
    elif not isinstance(source, (str, os.PathLike)):
        raise InputError(f"suite: takes a suite file path, a mapping read as a suite file "
                         f"is, or a loaded Suite (cb.load), not {type(source).__name__} "
                         f"{source!r}"[:200])
    else:
        path = Path(source)
        raw, file, base, files = load_yaml(path), str(path), path.parent, [path]
    if not isinstance(raw, dict):
        raise ConfigError([Problem(Where(file), "a suite must be a YAML mapping with `tests:`")])
    problems = Problems(validate(schema.Suite, raw, Where(file), "top-level key"), files)
    if problems:  # what follows relies on the top level's types
        raise ConfigError(problems)
    return _suite(raw, file, base, vocabulary, problems)


def _suite(raw: dict, file: str | None, base: Path, vocabulary: Vocabulary,
           problems: Problems) -> Suite:
    default = _default_test(raw, file, base, problems)
    raw_tests = _raw_tests(raw.get("tests"), file, base, vocabulary.cell, problems)
    inline = bool(raw_tests)
    if not inline:
        raw_tests = [({"description": "default test"}, file)]
    tests = tuple(t for t in (_test(i, t, default, source, base, vocabulary, problems)
                              for i, (t, source) in enumerate(raw_tests)) if t is not None)
    _check_ids(tests, problems)
    if tests and not problems and not any(t.asserts for t in tests):
        problems.add(Where(file), "no assertions: every case would pass; add `assert:` "
                     "to the tests or to defaultTest")
    derived = tuple(DerivedMetric(name=d["name"], sql=d.get("sql"), value=None if d.get(
        "value") is None else str(d["value"])) for d in raw.get("derivedMetrics") or [])
    judge = raw.get("judge") or {}
    problems.extend(validate(JudgeConfig, judge, at(judge, Where(file, test="judge")),
                             "judge setting"))
    problems.extend(cascade.check(judge, at(judge, Where(file, test="judge"))))
    provider_tools = _provider_tools(raw.get("providers"), file, base, problems)
    if problems:
        raise ConfigError(problems)
    suite = Suite(path=file or "<suite>", tests=tests, derived_metrics=derived,
                  inline_tests=inline, judge=dict(judge), description=raw.get("description"),
                  provider_tools=provider_tools,
                  files=tuple(dict.fromkeys(str(f.resolve()) for f in problems.files)))
    _check_derived_names(suite, file)
    return suite


_NAME = re.compile(r"[A-Za-z_$][\w$-]*")


def _keyed(value: Any, key: str = "") -> Any:
    """A suite given as data, copied as the YAML reader would give it (mappings that know
    their place), each mapping remembering its key path: `tests[2].assert[0]`."""
    if isinstance(value, Mapping):
        out = LineDict({k: _keyed(v, _child(key, k)) for k, v in value.items()})
        out.key = key or None
        return out
    if isinstance(value, (list, tuple)):
        return [_keyed(v, f"{key}[{i}]") for i, v in enumerate(value)]
    return value


def _child(key: str, name: Any) -> str:
    if isinstance(name, str) and _NAME.fullmatch(name):
        return f"{key}.{name}" if key else name
    return f"{key}[{name!r}]"


def _default_test(raw: dict, file: str | None, base: Path, problems: Problems) -> dict:
    """`defaultTest` (inline or file://) with the top-level `assert:` appended, checked."""
    default = raw.get("defaultTest") or {}
    source = file
    if isinstance(default, str):
        if not default.startswith("file://"):
            problems.add(at(raw, Where(file)),
                         f"defaultTest must be a mapping or file://, got {default!r}")
            return {}
        path = problems.read(base / default[len("file://"):])
        source, default = str(path), load_yaml(path)
    found = validate(schema.DefaultTest, default, at(default, Where(source, test="defaultTest")),
                     "defaultTest field")
    if found:
        problems.extend(found)
        return {}
    default = dict(default)
    if raw.get("assert"):  # top-level assertions apply to every test, like defaultTest's
        default["assert"] = [*(default.get("assert") or []), *raw["assert"]]
    return default


def _check_ids(tests: tuple[TestSpec, ...], problems: Problems) -> None:
    """Two tests of one id would send every row of that id to the last one."""
    seen: dict[str, TestSpec] = {}
    for t in tests:
        if t.id is not None and t.id in seen:
            problems.add(t.where, f'duplicate test id "{t.id}" (also {seen[t.id].where.test})')
        elif t.id is not None:
            seen[t.id] = t


TOOL_KEYS = ("tools", "functions")


def _provider_tools(value: Any, file: str | None, base: Path,
                    problems: Problems) -> dict[str, dict]:
    """{provider id or label: {"tools": [...], "functions": [...]}} from `providers:` entries
    whose config declares them (`file://` paths loaded). Other provider settings have no
    effect on scoring outputs that already exist."""
    entries = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
    found: dict[str, dict] = {}
    for entry in entries:
        if isinstance(entry, dict) and "id" not in entry and len(entry) == 1:
            (pid, entry), = entry.items()  # the {"openai:gpt-4o": {config: ...}} form
            entry = {**entry, "id": pid} if isinstance(entry, dict) else {"id": pid}
        if not isinstance(entry, dict) or not isinstance(entry.get("config"), dict):
            continue
        where = at(entry, Where(file, test=f"provider {entry.get('id')}"))
        declared = {k: load_value(entry["config"][k], base, where, problems)
                    for k in TOOL_KEYS if entry["config"].get(k) is not None}
        for name in (entry.get("id"), entry.get("label")):
            if declared and isinstance(name, str):
                found[name] = declared
    return found


def _raw_tests(value: Any, file: str | None, base: Path, cell: Cell,
               problems: Problems) -> list[tuple[Any, str | None]]:
    """Each test as written, with the file it comes from (the suite, or a tests file)."""
    if value is None:
        return []
    refs = value if isinstance(value, list) else [value]
    tests: list[tuple[Any, str | None]] = []
    for item in refs:
        if isinstance(item, str) and item.startswith("file://"):
            path = problems.read(base / item[len("file://"):])
            try:
                tests.extend((t, str(path)) for t in read_test_file(path, cell))
            except ConfigError as e:
                problems.extend(e.problems)
        elif isinstance(item, dict):
            tests.append((item, file))
        else:
            problems.add(Where(file), f"tests: expected a test mapping or file://, got {item!r}")
    return tests


def _test(index: int, raw: Any, default: dict, source: str | None, base: Path,
          vocabulary: Vocabulary, problems: Problems) -> TestSpec | None:
    where = at(raw, Where(source, test=_test_label(index, raw)))
    found = validate(schema.Test, raw, where, "test field")
    if found:
        problems.extend(found)
        return None
    options = {**(default.get("options") or {}), **(raw.get("options") or {})}
    vars_ = {**(default.get("vars") or {}), **(raw.get("vars") or {})}
    inherited = [] if options.get("disableDefaultAsserts") else default.get("assert") or []
    asserts = [*inherited, *(raw.get("assert") or [])]
    threshold = raw.get("threshold", default.get("threshold"))
    parsed = tuple(read_assertion(a, i, vars_, base, where, problems, vocabulary.assertion)
                   for i, a in enumerate(asserts))
    output = raw.get("providerOutput", raw.get("output"))
    return TestSpec(
        index=index, id=_str_or_none(raw.get("id")), description=_str_or_none(raw.get("description")),
        vars=vars_, asserts=tuple(a for a in parsed if a is not None),
        threshold=float(threshold) if threshold is not None else None,
        output=None if output == "" else output,
        prompt=_str_or_none(raw.get("prompt")),
        options=options,
        metadata={**(default.get("metadata") or {}), **(raw.get("metadata") or {})},
        where=where)


def _test_label(index: int, raw: Any) -> str:
    desc = raw.get("description") if isinstance(raw, dict) else None
    return f'test {index + 1} ("{desc}")' if desc else f"test {index + 1}"


def load_value(value: Any, base: Path, where: Where, problems: Problems) -> Any:
    """A value, with each `file://` (of a .json, .yaml or .txt file) read in its place."""
    if isinstance(value, list):  # promptfoo loads each file:// item of a list value too
        return [load_value(v, base, where, problems) for v in value]
    if not (isinstance(value, str) and value.startswith("file://")):
        return value
    file = problems.read(base / value[len("file://"):])
    try:
        if file.suffix in (".json", ".yaml", ".yml"):
            return load_yaml(file)
        if file.suffix in (".txt", ".md"):
            return file.read_text(encoding="utf-8").strip()
    except (OSError, ConfigError) as e:
        problems.add(where, f"cannot load {value}: {e}")
        return None
    problems.add(where, f"cannot load {value}: use a .json, .yaml or .txt file")
    return None


def _check_derived_names(suite: Suite, file: str | None) -> None:
    from .derived import check_expressions

    problems = check_expressions(suite)
    if problems:
        raise ConfigError([Problem(Where(file), p) for p in problems])


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)
