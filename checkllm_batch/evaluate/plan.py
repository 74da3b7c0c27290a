"""A plan: the suite's distinct assertions, and which test uses which at what index.

Identical assertions (same type, value template, arguments) shared by many tests are
compiled and evaluated once over all their rows: a `{{expected}}` value is a column.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from ..assertions.registry import AssertionType, Kind, lookup
from ..spec import template
from ..spec.model import AssertionSpec, Suite

SET_SCHEMA = {"test_index": pl.Int32, "assertion_index": pl.Int32, "threshold": pl.Float64,
              "type": pl.String, "metric": pl.String, "weight": pl.Float64,
              "metric_only": pl.Boolean}


@dataclass(frozen=True)
class Planned:
    key: int
    spec: AssertionSpec
    atype: AssertionType
    tests: frozenset[int] | None  # None: every test has it

    @property
    def kind(self) -> Kind:
        return self.atype.kind_for(self.spec)


@dataclass(frozen=True)
class Plan:
    suite: Suite
    assertions: tuple[Planned, ...]
    slots: pl.DataFrame  # test_index, assertion_index, key, type, metric, weight, metric_only,
    #                      parent_index (an assert-set member: its set's index; else null)
    template_vars: frozenset[str]
    sets: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=SET_SCHEMA))


def build_plan(suite: Suite) -> Plan:
    keys: dict[str, int] = {}
    specs: list[AssertionSpec] = []
    users: dict[int, set[int]] = {}
    rows, sets = [], []

    def add(test_index: int, index: int, spec: AssertionSpec, parent: int | None) -> None:
        key = keys.setdefault(spec.eval_key(), len(keys))
        if key == len(specs):
            specs.append(spec)
        users.setdefault(key, set()).add(test_index)
        rows.append((test_index, index, key, spec.label, spec.metric, spec.weight,
                     spec.metric_only, parent))

    for test in suite.tests:
        for index, spec in enumerate(test.asserts):
            if lookup(spec.type).kind is not Kind.SET:
                add(test.index, index, spec, None)
                continue
            sets.append((test.index, index, spec.threshold, spec.label, spec.metric, spec.weight,
                         spec.metric_only))
            for child_index, child in enumerate(spec.children):
                add(test.index, child_index, child, index)
    every = {t.index for t in suite.tests}
    planned = tuple(
        Planned(k, s, lookup(s.type), None if users[k] == every else frozenset(users[k]))
        for k, s in enumerate(specs))
    slots = pl.DataFrame(
        rows, orient="row",
        schema={"test_index": pl.Int32, "assertion_index": pl.Int32, "key": pl.Int32,
                "type": pl.String, "metric": pl.String, "weight": pl.Float64,
                "metric_only": pl.Boolean, "parent_index": pl.Int32})
    names = {v for s in specs for v in template.template_vars(_texts(s))}
    return Plan(suite, planned, slots, frozenset(names),
                pl.DataFrame(sets, orient="row", schema=SET_SCHEMA))


def _texts(spec: AssertionSpec) -> list:
    """Fields whose `{{var}}`s come from the case (a rubricPrompt's are the judge's own)."""
    return [spec.value, *(v for k, v in spec.args.items() if k != "rubricPrompt")]
