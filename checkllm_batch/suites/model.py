"""Frozen, serialisable specs: what a suite says, before anything is compiled or run."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import Where

# a group of assertions with its own threshold, weight and metric, scored like a small test
# (suites/sets.py reads it; evaluate/sets.py combines its members' results)
ASSERT_SET = "assert-set"


@dataclass(frozen=True)
class AssertionSpec:
    """One assertion as written, after aliases are resolved and arguments checked."""

    type: str  # canonical base type, without "not-"
    negate: bool = False
    value: Any = None
    threshold: float | None = None
    weight: float = 1.0
    metric: str | None = None
    metric_only: bool = False
    args: dict[str, Any] = field(default_factory=dict)  # every other field, by canonical name
    children: tuple[AssertionSpec, ...] = ()  # assert-set members
    where: Where = field(default_factory=Where, compare=False)

    @property
    def is_set(self) -> bool:
        """An assert-set: its members (`children`) are the assertions evaluated."""
        return self.type == ASSERT_SET

    @property
    def label(self) -> str:
        return ("not-" if self.negate else "") + self.type

    def eval_key(self) -> str:
        """Identity for evaluation: equal keys give equal verdicts on the same case."""
        return json.dumps(
            [self.type, self.negate, self.value, self.threshold, self.args,
             [c.eval_key() for c in self.children]],
            sort_keys=True, default=str)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("where")
        out["children"] = [c.to_json() for c in self.children]
        return out


@dataclass(frozen=True)
class TestSpec:
    """One test case of the suite, with defaultTest already merged in."""

    __test__ = False  # not a pytest class

    index: int
    id: str | None
    description: str | None
    vars: dict[str, Any]
    asserts: tuple[AssertionSpec, ...]
    threshold: float | None = None
    output: Any = None  # inline providerOutput / output, if any
    prompt: str | None = None  # CheckLLM: the test's prompt template
    options: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    where: Where = field(default_factory=Where, compare=False)

    @property
    def name(self) -> str:
        return self.id or self.description or f"test {self.index + 1}"


@dataclass(frozen=True)
class DerivedMetric:
    name: str
    value: str | None = None  # arithmetic over named-metric sums and __count
    sql: str | None = None  # or any DuckDB scalar expression over the same columns


@dataclass(frozen=True)
class Suite:
    path: str
    tests: tuple[TestSpec, ...]
    derived_metrics: tuple[DerivedMetric, ...] = ()
    inline_tests: bool = True  # False: every outputs row is a case of the one default test
    judge: dict[str, Any] = field(default_factory=dict)
    description: str | None = None
    # the tools / functions each provider of the suite's `providers:` declares in its config,
    # by provider id and label: what promptfoo's tool-call checks validate against
    provider_tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    # every file the suite read, resolved: itself, its defaultTest and tests files, the
    # files its values and python checks name; inputs, which -o must not overwrite
    files: tuple[str, ...] = ()

    @property
    def metrics(self) -> set[str]:
        def walk(specs: tuple[AssertionSpec, ...]) -> set[str]:
            return {m for s in specs for m in ({s.metric} | walk(s.children)) if m}
        return set().union(*(walk(t.asserts) for t in self.tests)) if self.tests else set()

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "description": self.description,
            "inline_tests": self.inline_tests,
            "tests": [
                {"index": t.index, "id": t.id, "description": t.description, "vars": t.vars,
                 "threshold": t.threshold, "asserts": [a.to_json() for a in t.asserts]}
                for t in self.tests
            ],
            "derived_metrics": [asdict(d) for d in self.derived_metrics],
        }
