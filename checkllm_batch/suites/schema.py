"""The suite's schema: every key a suite may carry and the type of its value, as pydantic
models, checked before parse.py builds specs. Unknown keys are errors with the closest
valid name. The models follow promptfoo's own config schema (zod, `TestCaseSchema`,
`TestSuiteConfigSchema`) for the keys we accept; keys that would change a verdict and that
we cannot honour (`options.transform`, ...) are errors that say so.

spec.problems turns pydantic's errors into our one-line problems.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic import Strict as _Strict

# strict scalars: no "5" -> 5, no true -> 1; numbers are finite (10**400, .nan, .inf refused)
Str = Annotated[str, _Strict()]
Bool = Annotated[bool, _Strict()]
Int = Annotated[int, _Strict()]
Number = Annotated[float, _Strict(), Field(allow_inf_nan=False)]
# a threshold may be left out, not given as null (promptfoo refuses `threshold: null`)
NO_THRESHOLD: Any = Field(default=None)
Mapping = dict[Str, Any]
STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, populate_by_name=False)


class _Model(BaseModel):
    model_config = STRICT


def _cannot(reason: str):
    def refuse(value: Any) -> Any:
        if value is not None:
            raise ValueError(f"cannot run here: {reason}")
        return value
    return AfterValidator(refuse)


_JS = "it is JavaScript run on each output or its vars; apply it to the outputs before scoring"


class Factuality(_Model):
    subset: Number | None = None
    superset: Number | None = None
    agree: Number | None = None
    disagree: Number | None = None
    differButFactual: Number | None = None


class Options(_Model):
    """A test's `options` (promptfoo's PromptConfig + OutputConfig + GradingConfig)."""

    prefix: Str | None = None
    suffix: Str | None = None
    provider: Any = None  # the grading provider: an id or a provider object
    rubricPrompt: Str | list[Any] | Mapping | None = None
    factuality: Factuality | None = None
    transform: Annotated[Any, _cannot(_JS)] = None
    postprocess: Annotated[Any, _cannot(_JS)] = None
    transformVars: Annotated[Any, _cannot(_JS)] = None
    # no effect on scoring outputs that already exist:
    storeOutputAs: Str | None = None
    disableVarExpansion: Bool | None = None
    disableConversationVar: Bool | None = None
    disableDefaultAsserts: Bool | None = None
    runSerially: Bool | None = None
    repeat: Int | None = None


class DefaultTest(_Model):
    """What `defaultTest:` (and every test) may set for all tests."""

    vars: Mapping | None = None
    assert_: list[Any] | None = Field(None, alias="assert")
    threshold: Number = NO_THRESHOLD
    options: Options | None = None
    metadata: Mapping | None = None
    provider: Any = None
    providers: Str | list[Str] | None = None
    prompts: Str | list[Str] | None = None


class Test(DefaultTest):
    """One test of `tests:` (inline, or a row of a tests file)."""

    id: Str | Int | None = None
    description: Str | None = None
    providerOutput: Any = None
    output: Any = None
    prompt: Str | None = None  # CheckLLM: the test's prompt template


class Assertion(BaseModel):
    """The fields every assertion shares; a type's own fields are checked by its registry
    entry (parse.py), so other keys pass here."""

    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)
    type: Str
    threshold: Number = NO_THRESHOLD
    weight: Annotated[float, _Strict(), Field(ge=0, allow_inf_nan=False)] = 1.0
    metric: Annotated[str, _Strict(), Field(min_length=1)] | None = None
    metricOnly: Bool | None = None
    config: Mapping | None = None


class DerivedMetric(_Model):
    name: Annotated[str, _Strict(), Field(min_length=1)]
    value: Str | Number | None = None  # a mathjs expression (a number is a constant)
    sql: Str | None = None  # or one DuckDB scalar expression

    @model_validator(mode="after")
    def _one_of(self) -> DerivedMetric:
        if (self.value is None) == (self.sql is None):
            raise ValueError(f'"{self.name}" needs exactly one of `value`, `sql`')
        return self


class Suite(_Model):
    """The top level of a suite file."""

    description: Str | None = None
    tests: Str | Mapping | list[Str | Mapping] | None = None
    defaultTest: Str | Mapping | None = None
    assert_: list[Any] | None = Field(None, alias="assert")
    derivedMetrics: list[DerivedMetric] | None = None
    judge: Mapping | None = None  # JudgeConfig checks each setting
    # promptfoo keys with no effect on scoring outputs that already exist
    prompts: Any = None
    providers: Str | Mapping | list[Any] | None = None
    outputPath: Str | list[Str] | None = None
    env: Mapping | None = None
    evaluateOptions: Mapping | None = None
    commandLineOptions: Mapping | None = None
    sharing: Bool | Mapping | None = None
    tags: Mapping | None = None
    metadata: Mapping | None = None
    scenarios: list[Any] | None = None
    extensions: list[Str] | None = None
    nunjucksFilters: Mapping | None = None
    tracing: Mapping | None = None
    writeLatestResults: Bool | None = None
