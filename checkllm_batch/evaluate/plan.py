"""A plan: the suite's distinct assertions, and which test uses which at what index.

Identical assertions (same type, value template, arguments) shared by many tests are
compiled and evaluated once over all their rows: a `{{expected}}` value is a column.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import polars as pl

from ..assertions.registry import AssertionType, Kind, lookup
from ..js import template
from ..suites.model import AssertionSpec, Suite

ORDER_SCHEMA = {"test_index": pl.Int32, "parent_index": pl.Int32, "assertion_index": pl.Int32,
                "order": pl.Int32}
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

    @property
    def reads_judge_cost(self) -> bool:
        """Graded by the judge hook from the cost of the case's other graded assertions."""
        return self.atype.reads_judge_cost(self.spec)


@dataclass(frozen=True)
class Plan:
    suite: Suite
    assertions: tuple[Planned, ...]
    slots: pl.DataFrame  # test_index, assertion_index, key, type, metric, weight, metric_only,
    #                      parent_index (an assert-set member: its set's index; else null)
    template_vars: frozenset[str]
    sets: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=SET_SCHEMA))
    # the order promptfoo adds each result to its test's (or set's) total: parent_index -1
    # for top-level rows (`adding_order`)
    order: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=ORDER_SCHEMA))


def build_plan(suite: Suite) -> Plan:
    keys: dict[str, int] = {}
    specs: list[AssertionSpec] = []
    users: dict[int, set[int]] = {}
    rows, sets, order = [], [], []

    def add(test_index: int, index: int, spec: AssertionSpec, parent: int | None) -> None:
        key = keys.setdefault(spec.eval_key(), len(keys))
        if key == len(specs):
            specs.append(spec)
        users.setdefault(key, set()).add(test_index)
        rows.append((test_index, index, key, spec.label, spec.metric, spec.weight,
                     spec.metric_only, parent))

    for test in suite.tests:
        for index, spec in enumerate(test.asserts):
            if not spec.is_set:
                add(test.index, index, spec, None)
                continue
            sets.append((test.index, index, spec.threshold, spec.label, spec.metric, spec.weight,
                         spec.metric_only))
            for child_index, child in enumerate(spec.children):
                add(test.index, child_index, child, index)
        order += [(test.index, *slot) for slot in adding_order(test.asserts)]
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
                pl.DataFrame(sets, orient="row", schema=SET_SCHEMA),
                pl.DataFrame(order, orient="row", schema=ORDER_SCHEMA))


def adding_order(asserts: tuple[AssertionSpec, ...]) -> list[tuple[int, int, int]]:
    """(parent_index or -1, assertion_index, order) of a test's assertions and set members.

    promptfoo runs a test's assertions, sets' members inline, three at a time, and adds each
    result to its total as it finishes: a check that waits on a process or a server (python,
    webhook, a judge) finishes after the quick ones started with or after it; the sets' own
    results are added last, in order. The last bit of a score, and which failure's reason is
    the last, follow this order."""
    flat = [(i, j, c) for i, a in enumerate(asserts)
            for j, c in (enumerate(a.children) if a.is_set else [(-1, a)])]
    done: list[tuple[int, int]] = []
    running: deque[tuple[int, int]] = deque()
    for i, j, spec in flat:
        if len(running) == 3:
            done.append(running.popleft())
        slot = (i, j) if j >= 0 else (-1, i)
        (running if _waits(spec) else done).append(slot)
    done += running
    done += [(-1, i) for i, a in enumerate(asserts) if a.is_set]
    return [(parent, index, n) for n, (parent, index) in enumerate(done)]


def _waits(spec: AssertionSpec) -> bool:
    return lookup(spec.type).waits


def _texts(spec: AssertionSpec) -> list:
    """Fields whose `{{var}}`s come from the case (a rubricPrompt's are the judge's own)."""
    return [spec.value, *(v for k, v in spec.args.items() if k != "rubricPrompt")]
