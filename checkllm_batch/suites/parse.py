"""Parse a promptfoo-shaped suite into frozen specs, checking everything before any row is read.

Every problem is collected with its place (file:line, test, assertion) and raised once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..assertions.registry import Kind, Value, lookup
from ..errors import ConfigError, Where, did_you_mean
from ..js import template
from ..js.yaml12 import load_yaml
from . import promptkit, schema
from .judge import JudgeConfig
from .model import AssertionSpec, DerivedMetric, Suite, TestSpec
from .problems import validate

_CUSTOM = ("write the check as `python` (a Python expression or file://checks.py:fn) or "
           "`expression` (a DuckDB SQL / Polars expression over the case's columns)")
# promptfoo types that checkllm-batch cannot run, and why (SPEC §2): a clear parse-time error
# instead of "unknown type"
CANNOT_RUN = {
    "javascript": _CUSTOM,
    "ruby": _CUSTOM,
    "classifier": "it needs a HuggingFace text-classification model; " + _CUSTOM,
    "moderation": "it needs a provider's moderation API; " + _CUSTOM,
    "guardrails": "it reads a provider's guardrail flags, which stored outputs do not carry",
    "pi": "it needs the remote Pi Labs scorer; use llm-rubric or g-eval with a judge",
    "search-rubric": "it needs a judge that searches the web; use llm-rubric",
    "human": "it is a grade a person gives in promptfoo's web viewer; use llm-rubric with a "
             "judge",
    "agent-rubric": "it needs an agentic grader (a coding-agent SDK); use llm-rubric with a "
                    "judge",
    **{t: "outputs datasets carry no traces" for t in
       ("trace-span-count", "trace-span-duration", "trace-error-spans")},
    **{f"trajectory:{t}": "it reads an agent's trace (its steps), which outputs datasets do not "
       "carry; tool calls stored in a `tool_calls` column are checked by tools-called, "
       "tool-call-sequence, tool-args and tool-call-count" for t in
       ("tool-used", "tool-args-match", "tool-sequence", "step-count", "goal-success")},
}
COMMON_FIELDS = {"value", "provider", "rubricPrompt"}  # besides schema.Assertion's


class _Problems(list):
    """The problems found, and on the way every file the suite reads (its inputs, which
    nothing may overwrite: see Suite.files)."""

    def __init__(self, found: list[str], path: Path) -> None:
        super().__init__(found)
        self.files = [path]

    def add(self, where: Where, message: str) -> None:
        self.append(f"{where}: {message}")

    def read(self, file: Path) -> Path:
        self.files.append(file)
        return file


def load_suite(path: str | Path) -> Suite:
    """Read and check a suite file; ConfigError lists every problem found."""
    path = Path(path)
    raw = load_yaml(path)
    if not isinstance(raw, dict):
        raise ConfigError([f"{path}: a suite must be a YAML mapping with `tests:`"])
    problems = _Problems(validate(schema.Suite, raw, Where(str(path)), "top-level key"), path)
    if problems:  # what follows relies on the top level's types
        raise ConfigError(problems)
    default = _default_test(raw, path, problems)
    raw_tests = _raw_tests(raw.get("tests"), path, problems)
    inline = bool(raw_tests)
    if not inline:
        raw_tests = [({"description": "default test"}, str(path))]
    tests = tuple(t for t in (_test(i, t, default, source, path.parent, problems)
                              for i, (t, source) in enumerate(raw_tests)) if t is not None)
    _check_ids(tests, problems)
    if tests and not problems and not any(t.asserts for t in tests):
        problems.add(Where(str(path)), "no assertions: every case would pass; add `assert:` "
                     "to the tests or to defaultTest")
    derived = tuple(DerivedMetric(name=d["name"], sql=d.get("sql"), value=None if d.get(
        "value") is None else str(d["value"])) for d in raw.get("derivedMetrics") or [])
    judge = raw.get("judge") or {}
    problems.extend(validate(JudgeConfig, judge, Where(str(path), getattr(
        judge, "line", None), "judge"), "judge setting"))
    provider_tools = _provider_tools(raw.get("providers"), path, problems)
    if problems:
        raise ConfigError(problems)
    suite = Suite(path=str(path), tests=tests, derived_metrics=derived, inline_tests=inline,
                  judge=dict(judge), description=raw.get("description"),
                  provider_tools=provider_tools,
                  files=tuple(dict.fromkeys(str(f.resolve()) for f in problems.files)))
    _check_derived_names(suite, path)
    return suite


def _default_test(raw: dict, path: Path, problems: _Problems) -> dict:
    """`defaultTest` (inline or file://) with the top-level `assert:` appended, checked."""
    default = raw.get("defaultTest") or {}
    source = path
    if isinstance(default, str):
        if not default.startswith("file://"):
            problems.add(Where(str(path), getattr(raw, "line", None)),
                         f"defaultTest must be a mapping or file://, got {default!r}")
            return {}
        source = problems.read(path.parent / default[len("file://"):])
        default = load_yaml(source)
    found = validate(schema.DefaultTest, default, Where(
        str(source), getattr(default, "line", None), "defaultTest"), "defaultTest field")
    if found:
        problems.extend(found)
        return {}
    default = dict(default)
    if raw.get("assert"):  # top-level assertions apply to every test, like defaultTest's
        default["assert"] = [*(default.get("assert") or []), *raw["assert"]]
    return default


def _check_ids(tests: tuple[TestSpec, ...], problems: _Problems) -> None:
    """Two tests of one id would send every row of that id to the last one."""
    seen: dict[str, TestSpec] = {}
    for t in tests:
        if t.id is not None and t.id in seen:
            problems.add(t.where, f'duplicate test id "{t.id}" (also {seen[t.id].where.test})')
        elif t.id is not None:
            seen[t.id] = t


def _provider_tools(value: Any, path: Path, problems: _Problems) -> dict[str, dict]:
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
        where = Where(str(path), getattr(entry, "line", None), test=f"provider {entry.get('id')}")
        declared = {k: _load_value(entry["config"][k], path.parent, where, problems)
                    for k in TOOL_KEYS if entry["config"].get(k) is not None}
        for name in (entry.get("id"), entry.get("label")):
            if declared and isinstance(name, str):
                found[name] = declared
    return found


def _raw_tests(value: Any, path: Path, problems: _Problems) -> list[tuple[Any, str]]:
    """Each test as written, with the file it comes from (the suite, or a tests file)."""
    from .testfiles import read_test_file

    if value is None:
        return []
    refs = value if isinstance(value, list) else [value]
    tests: list[tuple[Any, str]] = []
    for item in refs:
        if isinstance(item, str) and item.startswith("file://"):
            file = problems.read(path.parent / item[len("file://"):])
            try:
                tests.extend((t, str(file)) for t in read_test_file(file))
            except ConfigError as e:
                problems.extend(e.problems)
        elif isinstance(item, dict):
            tests.append((item, str(path)))
        else:
            problems.add(Where(str(path)), f"tests: expected a test mapping or file://, got {item!r}")
    return tests


def _test(index: int, raw: Any, default: dict, source: str, base: Path,
          problems: _Problems) -> TestSpec | None:
    where = Where(source, getattr(raw, "line", None), _test_label(index, raw))
    found = validate(schema.Test, raw, where, "test field")
    if found:
        problems.extend(found)
        return None
    options = {**(default.get("options") or {}), **(raw.get("options") or {})}
    vars_ = {**(default.get("vars") or {}), **(raw.get("vars") or {})}
    inherited = [] if options.get("disableDefaultAsserts") else default.get("assert") or []
    asserts = [*inherited, *(raw.get("assert") or [])]
    threshold = raw.get("threshold", default.get("threshold"))
    parsed = tuple(
        _assertion(a, i, vars_, base, where, problems) for i, a in enumerate(asserts))
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


def _assertion(raw: Any, index: int | str, vars_: dict, base: Path, test_where: Where,
               problems: _Problems, nested: bool = False) -> AssertionSpec | None:
    kind = raw.get("type") if isinstance(raw, dict) else None
    where = Where(test_where.file, getattr(raw, "line", None) or test_where.line,
                  test_where.test, f"assert {_number(index)}" + (f" ({kind})" if kind else ""))
    if promptkit.is_promptkit(raw):
        try:
            raw = promptkit.translate(raw)
        except ValueError as e:
            problems.add(where, str(e))
            return None
        kind = raw["type"]
    if not isinstance(raw, dict) or not isinstance(kind, str):
        problems.add(where, "an assertion must be a mapping with a string `type`")
        return None
    found = validate(schema.Assertion, raw, where)
    if found:
        problems.extend(found)
        return None
    negate = kind.startswith("not-")
    name = kind[4:] if negate else kind
    if name.startswith("not-"):
        problems.add(where, f'"{kind}": double negation is not allowed')
        return None
    if name in CANNOT_RUN:
        problems.add(where, f'"{name}" cannot run here: {CANNOT_RUN[name]}')
        return None
    try:
        atype = lookup(name)
    except KeyError as e:
        problems.add(where, str(e.args[0]))
        return None
    if negate and not atype.negatable:
        problems.add(where, f'"{kind}": {name} has no not- form')
        return None
    if nested and atype.kind is Kind.SET:
        problems.add(where, "an assert-set cannot contain another assert-set")
        return None
    fields = dict(raw)
    known = {*schema.Assertion.model_fields, *COMMON_FIELDS, *atype.fields, *atype.value_aliases}
    for key in fields:
        if key not in known:
            problems.add(where, f'unknown field "{key}" for {name}' + did_you_mean(key, known))
    value = fields.get("value")
    for alias in atype.value_aliases:
        if value is None and fields.get(alias) is not None:
            value = fields[alias]
    value = _script_ref(value, base, problems) if atype.code_ref else \
        _load_value(value, base, where, problems)
    args = {k: fields[k] for k in atype.fields if k in fields}
    given = atype.null_value and "value" in fields  # `value: null` given, not left out
    if not given and not _required_present(atype, value, args, where, problems):
        return None
    if atype.value is Value.NONE and value is not None:
        problems.add(where, f"{name} takes no value")
    threshold, weight = fields.get("threshold"), fields.get("weight", 1)
    children = _children(args.pop("assert", None), index, vars_, base, test_where, problems) \
        if atype.kind is Kind.SET else ()
    config = fields.get("config")
    if isinstance(config, dict):  # declared tools may live in a file, as in promptfoo
        fields["config"] = {k: _load_value(v, base, where, problems) if k in TOOL_KEYS else v
                            for k, v in config.items()}
    spec = AssertionSpec(
        type=atype.name, negate=negate, value=value, children=children,
        threshold=float(threshold) if threshold is not None else None, weight=float(weight),
        metric=_metric(fields.get("metric"), vars_),
        metric_only=weight == 0 or bool(fields.get("metricOnly")),
        args={**args, **{k: fields[k] for k in ("provider", "rubricPrompt", "config") if k in fields}},
        where=where)
    _check_value(atype, spec, where, problems)
    return spec


TOOL_KEYS = ("tools", "functions")


def _number(index: int | str) -> str:
    return str(index + 1) if isinstance(index, int) else index


def _children(raw: Any, index: int | str, vars_: dict, base: Path, test_where: Where,
              problems: _Problems) -> tuple[AssertionSpec, ...]:
    """An assert-set's members, numbered "<set>.<child>" in messages."""
    where = Where(test_where.file, test_where.line, test_where.test, f"assert {_number(index)}")
    if not isinstance(raw, list) or not raw:
        problems.add(where, "assert-set needs `assert`: a non-empty list of assertions")
        return ()
    parsed = (_assertion(a, f"{_number(index)}.{i + 1}", vars_, base, test_where, problems,
                         nested=True) for i, a in enumerate(raw))
    return tuple(a for a in parsed if a is not None)


def _script_ref(value: Any, base: Path, problems: _Problems) -> Any:
    """`file://checks.py:fn` with the path made absolute (relative to the suite file)."""
    if isinstance(value, str) and value.startswith("file://"):
        path, sep, fn = value[len("file://"):].partition(":")
        return "file://" + str(problems.read(base / path).resolve()) + sep + fn
    return value


def _required_present(atype, value: Any, args: dict, where: Where, problems: _Problems) -> bool:
    needs = list(atype.required) or (["value"] if atype.value is Value.REQUIRED else [])
    for need in needs:
        options = need.split("|")
        present = [o for o in options if (value if o == "value" else args.get(o)) is not None]
        if not present:
            names = " or ".join(f"`{o}`" for o in [*options, *atype.value_aliases] if o)
            problems.add(where, f"{atype.name} needs {names}")
            return False
    return True


def _check_value(atype, spec: AssertionSpec, where: Where, problems: _Problems) -> None:
    """Templates must parse; a literal value (without templates) must prepare."""
    bad = template.syntax_error([spec.value, *spec.args.values()])
    if bad:
        problems.add(where, bad)
        return
    templated = template.value_has_template(spec.value) or any(
        template.has_template(spec.args.get(f)) for f in atype.fields)
    if templated and not atype.templated:
        problems.add(where, f"the value of {atype.name} cannot be a template: it is code or an "
                     "address, compiled once; read per-row values from the case's vars instead")
        return
    if atype.prepare is not None and not templated:
        try:
            atype.prepare(spec.value, spec)
        except ValueError as e:
            problems.add(where, str(e))
        except Exception as e:  # a type's check that did not expect this value: still ours
            problems.add(where, f"invalid value {str(spec.value)[:40]!r}: "
                                f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


def _load_value(value: Any, base: Path, where: Where, problems: _Problems) -> Any:
    if isinstance(value, list):  # promptfoo loads each file:// item of a list value too
        return [_load_value(v, base, where, problems) for v in value]
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


def _metric(value: Any, vars_: dict) -> str | None:
    return None if value is None else template.render(value, vars_)


def _check_derived_names(suite: Suite, path: Path) -> None:
    from .derived import check_expressions

    problems = check_expressions(suite)
    if problems:
        raise ConfigError([f"{path}: {p}" for p in problems])


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)
