"""assert-set: a group of assertions with its own threshold, weight and metric.

A set is part of the suite, not an assertion type: it is read here, its members each by
the reader of one assertion (the registry's, handed in); evaluate/plan.py plans the members
and evaluate/sets.py combines their results into the set's, the rule a test passes by.
Problems are placed as assertions' are: "assert 2 (assert-set)", members "assert 2.1 (...)".
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from ..errors import Where, did_you_mean
from ..js import template
from . import schema
from .model import ASSERT_SET, AssertionSpec
from .problems import Problems, at, validate

# one assertion as written -> its spec (None: a problem was added): (raw, index, the
# test's vars, the folder file:// paths are read from, the test's place, the problems)
ReadAssertion = Callable[[Any, Any, dict, Path, Where, Problems], "AssertionSpec | None"]
# what a set may say besides schema.Assertion's fields (the judge's, as any assertion may)
FIELDS = {"assert", "value", "provider", "rubricPrompt"}


def read_assertion(raw: Any, index: int | str, vars_: dict, base: Path, test_where: Where,
                   problems: Problems, one: ReadAssertion, nested: bool = False
                   ) -> AssertionSpec | None:
    """An assertion of a test: an assert-set read here, any other by `one`."""
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind not in (ASSERT_SET, "not-" + ASSERT_SET):
        return one(raw, index, vars_, base, test_where, problems)
    where = at(raw, replace(test_where, assertion=f"assert {assertion_number(index)} ({kind})"))
    found = validate(schema.Assertion, raw, where)
    if found:
        problems.extend(found)
        return None
    if kind != ASSERT_SET:
        problems.add(where, f'"{kind}": {ASSERT_SET} has no not- form')
        return None
    if nested:
        problems.add(where, "an assert-set cannot contain another assert-set")
        return None
    return _read_set(raw, index, vars_, base, test_where, where, problems, one)


def _read_set(raw: dict, index: int | str, vars_: dict, base: Path, test_where: Where,
              where: Where, problems: Problems, one: ReadAssertion) -> AssertionSpec | None:
    known = {*schema.Assertion.model_fields, *FIELDS}
    for key in raw:
        if key not in known:
            problems.add(where, f'unknown field "{key}" for {ASSERT_SET}' + did_you_mean(key, known))
    if raw.get("assert") is None:
        problems.add(where, f"{ASSERT_SET} needs `assert`")
        return None
    if raw.get("value") is not None:
        problems.add(where, f"{ASSERT_SET} takes no value")
    threshold, weight, metric = raw.get("threshold"), raw.get("weight", 1), raw.get("metric")
    return AssertionSpec(
        type=ASSERT_SET, value=raw.get("value"),
        children=_members(raw["assert"], index, vars_, base, test_where, problems, one),
        threshold=float(threshold) if threshold is not None else None, weight=float(weight),
        metric=None if metric is None else template.render(metric, vars_),
        metric_only=weight == 0 or bool(raw.get("metricOnly")),
        args={k: raw[k] for k in ("provider", "rubricPrompt", "config") if k in raw},
        where=where)


def _members(raw: Any, index: int | str, vars_: dict, base: Path, test_where: Where,
             problems: Problems, one: ReadAssertion) -> tuple[AssertionSpec, ...]:
    """A set's members, numbered "<set>.<member>" in messages."""
    if not isinstance(raw, list) or not raw:
        problems.add(replace(test_where, assertion=f"assert {assertion_number(index)}"),
                     f"{ASSERT_SET} needs `assert`: a non-empty list of assertions")
        return ()
    read = (read_assertion(a, f"{assertion_number(index)}.{i + 1}", vars_, base, test_where, problems,
                           one, nested=True) for i, a in enumerate(raw))
    return tuple(a for a in read if a is not None)


def assertion_number(index: int | str) -> str:
    """How messages number an assertion: from 1, a set's members "<set>.<member>"."""
    return str(index + 1) if isinstance(index, int) else index
