"""The record of a registered assertion type, one per kind: what every type declares
(`AssertionType`), and what only its kind has, with the function it registers called the
kind's own way (`VectorType`, `JudgeType`, `AcrossType`). Options few types set are grouped
in `Reading`. The decorator (registry.py) builds the record of the kind it is given.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from dataclasses import fields as fields_of
from typing import TYPE_CHECKING, Any, Callable

import polars as pl

from ..suites.model import AssertionSpec

if TYPE_CHECKING:
    from polars._typing import PolarsDataType  # pl.String or pl.List(pl.String)

    from .compiled import Ctx, Verdict
    from .graded.context import Graded
    from .graded.replies import Outcome


class Kind(enum.Enum):
    VECTOR = "vector"  # pure Polars expressions over the batch
    DISTINCT = "distinct"  # a library looks at each distinct value of a batch (flagged fallback)
    JUDGE = "judge"  # model-graded: becomes judge requests
    ACROSS = "across"  # decided across the outputs of one test row, after every batch


class Value(enum.Enum):
    REQUIRED = "required"
    OPTIONAL = "optional"
    NONE = "none"


class CsvValue(enum.Enum):
    """How a CSV `__expected` cell's text after "type:" becomes the value."""

    TRIMMED = "trimmed"  # stripped of surrounding spaces
    ITEMS = "items"  # split into items at commas (quoted items may hold commas)
    AS_IS = "as-is"  # kept as written; nothing after the type means no value


@dataclass(frozen=True)
class Reading:
    """How the suite reader takes an assertion of this type, where a few types differ from
    the rest (each option is set by one to thirteen of the types)."""

    null_value: bool = False  # an explicit `value: null` is a value (JSON null), not a missing one
    templated: bool = True  # False: the value is code or an address, never a template
    code_ref: bool = False  # a `file://x.py:fn` value names code to run, not a file to read
    value_aliases: tuple[str, ...] = ()  # fields that may hold the value (CheckLLM: reference, ...)
    # promptfoo's CSV reading rule (assertionFromString) for a cell naming this type:
    csv_threshold: float | None = None  # the threshold when the cell writes no "(N)"
    csv_value: CsvValue = CsvValue.TRIMMED  # how the text after "type:" becomes the value


@dataclass(frozen=True, kw_only=True)
class AssertionType:
    """What every registered type declares, whatever its kind. The kind's record adds its
    `fn` (each kind calls it its own way) and the options only that kind has."""

    name: str
    fn: Callable[..., Any]
    kind: Kind
    value: Value
    doc: str
    fields: tuple[str, ...] = ()  # extra fields this type reads, besides value/threshold
    required: tuple[str, ...] = ()  # of those (or value-like), the ones that must be present
    default_threshold: float | None = None
    negatable: bool = True
    prepare: Callable[[Any, AssertionSpec], Any] | None = None  # parse-time check, raises ValueError
    # its result waits on another process or a server (promptfoo adds it after the quick
    # checks started with it: evaluate/plan.py adding_order)
    waits: bool = False
    reading: Reading = Reading()

    def kind_for(self, spec: AssertionSpec) -> Kind:
        """This type's kind for one assertion (`cost` is graded by the judge in some forms)."""
        return self.kind

    def reads_judge_cost(self, spec: AssertionSpec) -> bool:
        """Whether this assertion checks what the judge spent on the case's other assertions."""
        return False

    def needs_judge(self, spec: AssertionSpec) -> bool:
        """Whether this assertion needs a configured judge (else it ends as an error)."""
        return self.kind_for(spec) is Kind.JUDGE


@dataclass(frozen=True, kw_only=True)
class VectorType(AssertionType):
    """A VECTOR or DISTINCT type: `fn(Ctx) -> Verdict`, Polars expressions over the batch."""

    fn: Callable[[Ctx], Verdict]
    needs_text: bool = True  # a null or non-text output fails it
    json_ok: bool = False  # a structured (JSON) output is checked as its JSON text
    prepared_dtype: PolarsDataType | None = None  # `Ctx.prepared` is a column of this type
    # prepares rendered values in Polars where it can (null where it cannot)
    prepare_column: Callable[[pl.Expr], pl.Expr] | None = None
    # what `prepare` does for a per-row value when the evaluation checks the rest itself
    # (a regex is compiled by the engine that matches it: no second compile per value)
    prepare_row: Callable[[Any, AssertionSpec], Any] | None = None
    pooled: bool = False  # checks distinct values on the process pool (pool.py)
    # the specs that check the judge's cost for the case instead of `fn`: those are graded
    # by the judge hook (evaluate/judging/cost.py), after the case's other graded assertions
    judge_cost: Callable[[AssertionSpec], bool] | None = None

    def kind_for(self, spec: AssertionSpec) -> Kind:
        return Kind.JUDGE if self.reads_judge_cost(spec) else self.kind

    def reads_judge_cost(self, spec: AssertionSpec) -> bool:
        return self.judge_cost is not None and self.judge_cost(spec)


@dataclass(frozen=True, kw_only=True)
class JudgeType(AssertionType):
    """A model-graded type: `fn(Graded) -> a frame of outcomes` (case_id, test_index,
    passed, score, reason, and the judge's cost per case)."""

    fn: Callable[[Graded], pl.DataFrame]
    waits: bool = True  # on the judge
    test_options: tuple[str, ...] = ()  # the test `options` keys it reads (Graded.options)


@dataclass(frozen=True, kw_only=True)
class AcrossType(AssertionType):
    """A type decided across the outputs of one test row, once every batch is stored:
    `fn(Graded or None, spec, groups)` -> an outcome per case in order, each case a dict of
    case_id, output and scores (its other assertions' (type, score))."""

    fn: Callable[[Graded | None, AssertionSpec, list[list[dict[str, Any]]]], list[Outcome]]
    uses_judge: bool = False  # `fn` asks the judge (it is given a Graded)

    def needs_judge(self, spec: AssertionSpec) -> bool:
        return self.uses_judge


RECORDS: dict[Kind, type[AssertionType]] = {
    Kind.VECTOR: VectorType, Kind.DISTINCT: VectorType, Kind.JUDGE: JudgeType,
    Kind.ACROSS: AcrossType}
READING = {f.name for f in fields_of(Reading)}


