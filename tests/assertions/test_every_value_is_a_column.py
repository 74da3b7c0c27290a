"""Every value is a column: each type's table of cases, run again with the value and each
other field moved into a per-row var (`{{var}}`), gives the same status, score and reason.

The tables are the types' own, shared with their test modules in tests/fixtures/tables/ (a
table module's `COLUMN_CASES`, rows of (assertion, row, ...), is found without being named
here), plus the cases below for types whose tables are written in another shape. A
registered type without cases fails.
"""

from __future__ import annotations

import importlib
import json
import math
from typing import Any

import polars as pl
import pytest
import yaml
from conftest import ROOT
from fixtures.judges import multi_step, scripted
from fixtures.tables.distance import CASES as DISTANCE
from fixtures.tables.json import CASES as JSON_CASES
from fixtures.tables.overlap import CASES as OVERLAP
from fixtures.tables.overlap import METEOR
from fixtures.tables.promptkit import WEATHER as CALLS
from fixtures.tables.promptkit import call as pk_call
from fixtures.tables.provider import CASES as METADATA
from fixtures.tables.structure import F1, FUNCTIONS, HTML, SQL, TOOLS, WEATHER, XML
from fixtures.tables.text import CASES as TEXT
from fixtures.tables.text import ROW_CASES as TEXT_ROWS

import checkllm_batch as cb
from checkllm_batch.assertions.registry import REGISTRY, Kind, VectorType, lookup
from checkllm_batch.errors import ConfigError
from checkllm_batch.judge.protocol import ScriptedJudge

TABLES = ROOT / "tests" / "fixtures" / "tables"

# (assertion, outputs row); cross-case types: (assertions of the test, its rows)
Case = tuple[dict[str, Any] | list[dict[str, Any]], dict[str, Any] | list[dict[str, Any]]]

TOOL_CALLS = json.dumps(CALLS)
SKILLS = json.dumps({"skillCalls": [{"name": "token-skill", "source": "tool"},
                                    {"name": "project:check"}]})
OWN: list[Case] = [
    ({"type": "skill-used", "value": "token-skill"}, {"output": "", "metadata": SKILLS}),
    ({"type": "skill-used", "value": ["token-skill", "nope"]}, {"output": "", "metadata": SKILLS}),
    ({"type": "not-skill-used", "value": ["nope", "project:check"]},
     {"output": "", "metadata": SKILLS}),
    ({"type": "skill-used", "value": {"pattern": "PROJECT:*", "min": 1, "max": 1}},
     {"output": "", "metadata": SKILLS}),
    ({"type": "skill-used", "value": {"name": "token-skill", "max": 0}},
     {"output": "", "metadata": SKILLS}),
    ({"type": "min-length", "value": 3}, {"output": "abcd"}),
    ({"type": "min-length", "value": 5}, {"output": "abc"}),
    ({"type": "max-length", "value": 3}, {"output": "ab"}),
    ({"type": "max-length", "value": 3}, {"output": "日本語です"}),
    ({"type": "not-max-length", "value": 0}, {"output": ""}),
    ({"type": "sentence-count", "min": 1, "max": 2}, {"output": "One. Two."}),
    ({"type": "sentence-count", "max": 1}, {"output": "One. Two! Three?"}),
    ({"type": "sentence-count", "value": 2}, {"output": ""}),
    ({"type": "field-presence", "value": ["name", "Age"]}, {"output": '{"NAME": 1, "age": 2}'}),
    ({"type": "field-presence", "value": "name, city"}, {"output": "name only"}),
    ({"type": "content-excludes", "value": ["secret", "ünï"]}, {"output": "a SECRET"}),
    ({"type": "content-excludes", "value": ["cat"], "match_mode": "word_boundary"},
     {"output": "concatenate"}),
    ({"type": "content-excludes", "value": ["cat"], "match_mode": "word_boundary"},
     {"output": "a cat"}),
    ({"type": "json-path", "value": "order.status", "expected": "confirmed"},
     {"output": '{"order": {"status": "confirmed"}}'}),
    ({"type": "json-path", "value": "order.status", "expected": "confirmed"},
     {"output": '{"order": {"status": "pending"}}'}),
    ({"type": "json-path", "value": "items", "min_results": 2}, {"output": '{"items": [1]}'}),
    ({"type": "tools-called", "value": ["get_weather", "lookup_customer"]},
     {"output": "", "tool_calls": TOOL_CALLS}),
    ({"type": "tools-called", "value": "get_weather, book"}, {"output": "", "tool_calls": "[]"}),
    ({"type": "tools-not-called", "value": ["delete_account"]},
     {"output": "", "tool_calls": TOOL_CALLS}),
    ({"type": "tools-not-called", "value": "get_weather"}, {"output": "", "tool_calls": TOOL_CALLS}),
    ({"type": "tool-call-sequence", "value": ["lookup_customer", "get_weather"]},
     {"output": "", "tool_calls": TOOL_CALLS}),
    ({"type": "tool-call-sequence", "value": ["get_weather", "lookup_customer"]},
     {"output": "", "tool_calls": TOOL_CALLS}),
    ({"type": "tool-args", "tool_name": "get_weather", "expected_args": {"city": "Paris"}},
     {"output": "", "tool_calls": TOOL_CALLS}),
    ({"type": "tool-args", "tool_name": "get_weather", "expected_args": {"city": "Rome"}},
     {"output": "", "tool_calls": TOOL_CALLS}),
    ({"type": "tool-call-count", "tool": "get_weather", "max": 1},
     {"output": "", "tool_calls": TOOL_CALLS}),
    ({"type": "tool-call-count", "min": 3}, {"output": "", "tool_calls": TOOL_CALLS}),
    ({"type": "no-tool-errors", "tools": ["get_weather"]},
     {"output": "", "tool_calls": json.dumps([{**pk_call("get_weather", {}), "error": "x"}])}),
    ({"type": "no-tool-errors", "tools": "lookup_customer"},
     {"output": "", "tool_calls": json.dumps([{**pk_call("get_weather", {}), "error": "x"}])}),
    ({"type": "latency", "value": 100}, {"output": "x", "latency_ms": 80}),
    ({"type": "latency", "value": 100}, {"output": "x", "latency_ms": 120.5}),
    ({"type": "python", "value": "len(output) > 3"}, {"output": "Paris"}),
    ({"type": "python", "value": "output.startswith('Lyon')"}, {"output": "Paris"}),
    ({"type": "llm-rubric", "value": "names the capital"}, {"output": "Paris"}),
    ({"type": "llm-rubric", "value": "names the capital"}, {"output": "Lyon"}),
    ({"type": "model", "prompt": "Is it right?"}, {"output": "Paris"}),
    ({"type": "model-graded-closedqa", "value": "names Paris"}, {"output": "Rome"}),
    ({"type": "factuality", "value": "Paris"}, {"output": "Paris"}),
    ({"type": "llm_judge", "criteria": "helpful", "min_score": 0.5}, {"output": "Paris"}),
    ({"type": "similar", "value": "Paris is the capital"}, {"output": "Lyon"}),
    ({"type": "similar:dot", "value": "Paris"}, {"output": "Paris"}),
    ({"type": "similar:euclidean", "value": "Paris", "threshold": 0.5}, {"output": "Lyon"}),
    ({"type": "g-eval", "value": "correct"}, {"output": "Paris"}),
    ({"type": "context-faithfulness", "context": "Paris is the capital of France.",
      "query": "capital?"}, {"output": "Paris"}),
    ({"type": "answer-relevance", "query": "capital?"}, {"output": "Paris"}),
    ({"type": "context-recall", "value": "Paris", "context": "Paris is the capital."},
     {"output": "Paris"}),
    ({"type": "context-relevance", "context": "a\nb\nc\nd", "query": "q"}, {"output": "Paris"}),
    ({"type": "select-best", "value": "correct"}, [{"output": "Lyon"}, {"output": "Paris"}]),
    ([{"type": "llm-rubric", "value": "names the capital"},
      {"type": "max-score", "value": {"method": "average"}}],
     [{"output": "Lyon"}, {"output": "Paris"}, {"output": "Rome"}]),
    ({"type": "cost", "value": 1.0}, {"output": "Paris"}),
]
MULTI_STEP = {"g-eval", "context-faithfulness", "answer-relevance", "context-recall",
              "context-relevance"}
# Types whose value is code or an address: a template there is a parse-time error.
NOT_TEMPLATED = {"expression": {"type": "expression", "value": "length(output) > 2"},
                 "webhook": {"type": "webhook", "value": "http://127.0.0.1:9/check"}}
# Judge settings read once per assertion, not per row (numbers, models): never templated.
LITERAL_ONLY = {"min_score", "model", "extra"}
# Types with no value and no field to move: nothing of theirs can come from a var.
NOTHING_TO_MOVE = {"is-refusal", "perplexity", "perplexity-score", "contains-html",
                   "is-html", "assert-set", "conversation-relevance"}


def _pool() -> list[Case]:
    out = [(a, {"output": o}) for a, o, _ in TEXT + DISTANCE + JSON_CASES]
    out += [(a, r) for a, r, *_ in TEXT_ROWS + METADATA]
    out += [({"type": k, "value": v}, {"output": o}) for k, o, v, _ in OVERLAP]
    out += [({"type": "meteor", "value": ref}, {"output": o}) for o, ref in METEOR]
    out += [(a, {"output": o}) for a, o, _ in XML + HTML + SQL]
    out += [({"type": "is-valid-openai-tools-call", "value": [WEATHER]}, r) for r, _ in TOOLS]
    out += [({"type": "is-valid-openai-function-call", "value": FUNCTIONS},
             {"output": json.dumps({"name": "get_weather", "arguments": '{"city": "Lima"}'})})]
    out += [({"type": "tool-call-f1", "value": v},
             {"output": c if isinstance(c, str) else json.dumps(c)}) for c, v, _ in F1]
    return out + OWN + _type_cases()


def _type_cases() -> list[Case]:
    """The `COLUMN_CASES` tables in tests/fixtures/tables/: a new type's table counts here as
    written."""
    modules = [f"fixtures.tables.{p.stem}" for p in sorted(TABLES.glob("*.py"))
               if "\nCOLUMN_CASES" in p.read_text(encoding="utf-8")]
    return [(a, r) for m in modules for a, r, *_ in importlib.import_module(m).COLUMN_CASES]


def _base(name: str) -> str:
    return lookup(name.removeprefix("not-")).name


TABLE: dict[str, list[Case]] = {}
for _case in _pool():
    _last = _case[0][-1] if isinstance(_case[0], list) else _case[0]
    TABLE.setdefault(_base(_last["type"]), []).append(_case)


def moved_case(case: Case, tag: str) -> Case:
    """A case with every assertion's value and fields read from vars of its rows."""
    asserts, rows = case
    if isinstance(asserts, dict) and isinstance(rows, dict):
        return moved(asserts, rows, tag)
    asserts = asserts if isinstance(asserts, list) else [asserts]
    rows = rows if isinstance(rows, list) else [rows]
    extra: dict[str, Any] = {}
    out = []
    for j, a in enumerate(asserts):
        a, more = moved(a, {}, f"{tag}_{j}")
        out.append(a)
        extra.update(more)
    return out, [{**r, **extra} for r in rows]


def moved(assertion: dict, row: dict, tag: str) -> tuple[dict, dict]:
    """The assertion with its value and fields read from vars of the row."""
    atype = lookup(assertion["type"].removeprefix("not-"))
    out, row = dict(assertion), dict(row)

    def into_var(value: Any, path: str, top: bool = True) -> Any:
        if isinstance(value, list):  # promptfoo renders the strings of a list, keeps the rest
            return [into_var(v, f"{path}_{i}", False) for i, v in enumerate(value)]
        if isinstance(value, dict):  # keys stay; string leaves come from vars
            return {k: into_var(v, f"{path}_{i}", False) for i, (k, v) in enumerate(value.items())}
        if not top and not isinstance(value, str):
            return value
        name = f"vv{tag}_{path}"
        row[name] = value
        return "{{ " + name + " }}"

    for field in ("value", *atype.fields, *atype.reading.value_aliases):
        value = out.get(field)
        if value is None or field in LITERAL_ONLY:
            continue
        if field == "value" and isinstance(value, dict):
            continue  # promptfoo renders a value's strings and a list's strings, not a mapping
        if field == "value" and isinstance(value, list):
            out[field] = [into_var(v, f"value_{i}") if isinstance(v, str) else v
                          for i, v in enumerate(value)]
            continue
        out[field] = into_var(value, field)
    return out, row


def outcomes(tmp_path, type_name: str, cases: list[Case]) -> list[tuple]:
    atype = REGISTRY[type_name]  # the judged types, the ones decided across cases, cost
    graded = atype.kind in (Kind.JUDGE, Kind.ACROSS) or (
        isinstance(atype, VectorType) and atype.judge_cost is not None)
    suite = {**({"judge": {"model": "gpt-4o-mini"}} if graded else {}),
             "tests": [{"description": f"c{i}", "prompt": "What is the capital of France?",
                        "assert": a if isinstance(a, list) else [a]}
                       for i, (a, _) in enumerate(cases)]}
    path = tmp_path / f"{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False, allow_unicode=True))
    rows = [{"test_id": f"c{i}", **r} for i, (_, rs) in enumerate(cases)
            for r in (rs if isinstance(rs, list) else [rs])]
    judge = ScriptedJudge(multi_step if type_name in MULTI_STEP else scripted) if graded else None
    frame = pl.DataFrame(rows, infer_schema_length=None)
    result = cb.evaluate(path, frame, judge=judge).assertion_results.sort("case_id",
                                                                          "assertion_index")
    return [(s, None if v is None else round(v, 9), r)
            for s, v, r in result.select("status", "score", "reason").rows()]


@pytest.mark.parametrize("type_name", sorted(REGISTRY))
def test_a_value_from_a_var_gives_the_literal_verdict(tmp_path, type_name):
    if type_name in NOT_TEMPLATED:
        assertion, _ = moved(NOT_TEMPLATED[type_name], {}, "0")
        path = tmp_path / "s.yaml"
        path.write_text(yaml.safe_dump({"tests": [{"assert": [assertion]}]}))
        with pytest.raises(ConfigError, match="cannot be a template"):
            cb.load(path)
        return
    if type_name in NOTHING_TO_MOVE:
        atype = REGISTRY[type_name]
        assert atype.value.value == "none" and not set(atype.fields) - {"assert"}, \
            f"{type_name} now takes a value: give it cases here"
        return
    cases = TABLE.get(type_name)
    assert cases, f"{type_name} has no table of cases for per-row values"
    literal = outcomes(tmp_path, type_name, cases)
    assert any(s != "error" for s, _, _ in literal), "the table only makes errors"
    per_row = outcomes(tmp_path, type_name,
                       [moved_case(c, str(i)) for i, c in enumerate(cases)])
    assert len(per_row) == len(literal)
    for want, got in zip(literal, per_row):
        assert got == want or _close(got, want), (cases, want, got)


def _close(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] and a[2] == b[2] and a[1] is not None and b[1] is not None \
        and math.isclose(a[1], b[1], abs_tol=1e-9)
