"""The suite's schema: every key a suite may carry and the type of its value, as pydantic
models, checked before parse.py builds specs. Unknown keys are errors with the closest
valid name. The models follow promptfoo's own config schema (zod, `TestCaseSchema`,
`TestSuiteConfigSchema`) for the keys we accept; keys that would change a verdict and that
we cannot honour (`options.transform`, ...) are errors that say so.

`problems(model, raw, where, noun)` turns pydantic's errors into our one-line problems:
"suite.yaml:4, test 2: threshold must be a number, got 'high'".
"""

from __future__ import annotations

import reprlib
from functools import cache
from typing import Annotated, Any, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic import Strict as _Strict

from ..errors import Where, did_you_mean

# strict scalars: no "5" -> 5, no true -> 1; numbers are finite (10**400, .nan, .inf refused)
Str = Annotated[str, _Strict()]
Bool = Annotated[bool, _Strict()]
Int = Annotated[int, _Strict()]
Number = Annotated[float, _Strict(), Field(allow_inf_nan=False)]
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
    threshold: Number | None = None
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
    threshold: Number | None = None
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


SECRET_FIELDS = {"api_key_env"}  # a key given here by mistake is never echoed
_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 60, 60, 40


def problems(model: Any, raw: Any, where: Where, noun: str = "field") -> list[str]:
    """Every way `raw` breaks `model` (a pydantic model or a type), one line each."""
    try:
        _adapter(model).validate_python(raw)
    except ValidationError as e:
        return _lines(e.errors(), model, raw, where, noun)
    return []


@cache
def _adapter(model: Any) -> TypeAdapter:
    return TypeAdapter(model)


def _lines(errors: list[dict], model: Any, raw: Any, where: Where, noun: str) -> list[str]:
    """Errors at the same place (a union's alternatives) become one line."""
    by_place: dict[tuple, list[dict]] = {}
    for error in errors:
        path = _data_path(raw, error["loc"])
        if error["type"] == "missing":  # a required field: named, though not in the data
            path += error["loc"][-1:]
        by_place.setdefault(path, []).append(error)
    # an error inside a value makes the other alternatives' "must be a string" at the value
    # itself noise: the deepest places are the ones to fix
    deepest = {p: e for p, e in by_place.items()
               if not any(q[:len(p)] == p and len(q) > len(p) for q in by_place)}
    return [_line(path, errs, model, raw, where, noun) for path, errs in deepest.items()]


def _line(path: tuple, errors: list[dict], model: Any, raw: Any, where: Where, noun: str) -> str:
    place = Where(where.file, _line_of(raw, path) or where.line, where.test, where.assertion)
    first = errors[0]
    if first["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
        known = _field_names(model, first["loc"][:-1])
        return (f'{place}: unknown {noun if len(path) == 1 else "field"} "{_name(path)}"'
                + did_you_mean(str(path[-1]), known))
    if first["type"] == "invalid_key" or first["loc"][-1] == "[key]":
        return f"{place}: {_name(path[:-1]) or 'the mapping'}: key {path[-1]!r} must be a string"
    phrases = list(dict.fromkeys(_phrase(e) for e in errors))
    said = phrases[0] + "".join(
        (" or " if i == len(phrases) - 1 else ", ") + p.removeprefix("must be ")
        for i, p in enumerate(phrases[1:], 1))
    if first["type"] == "value_error" and isinstance(first["input"], dict):  # a whole entry's
        return f"{place}: {_name(path)}: {said}"
    shown = "" if path and path[-1] in SECRET_FIELDS or first["type"] == "missing" \
        else f", got {_SHORT.repr(first['input'])}"
    return f"{place}: {_name(path) or 'the value'} {said}{shown}"


def _name(path: tuple) -> str:
    """('tests', 0, 'vars') -> 'tests #1.vars' (items counted from 1, as in every message)."""
    return "".join(f" #{p + 1}" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


_PHRASES = {
    "float_type": "a number", "float_parsing": "a number", "finite_number": "a finite number",
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
    "string_type": "a string", "bool_type": "true or false", "list_type": "a list",
    "tuple_type": "a list", "dict_type": "a mapping", "model_type": "a mapping",
    "dataclass_type": "a mapping", "model_attributes_type": "a mapping",
}


def _phrase(error: dict) -> str:
    if error["type"] in _PHRASES:
        return "must be " + _PHRASES[error["type"]]
    if error["type"] == "missing":
        return "is required"
    bound = {"greater_than": ">", "greater_than_equal": ">=", "too_short": "at least"}
    if error["type"] in bound:
        limit = next(iter(error.get("ctx", {}).values()), "")
        return f"must be {bound[error['type']]} {limit:g}" + (
            " long" if error["type"] == "too_short" else "")
    message = error["msg"].removeprefix("Value error, ")
    return message.replace("Input should be", "must be").replace("String should", "must")


def _data_path(raw: Any, loc: tuple) -> tuple:
    """`loc` without pydantic's union tags: only the keys and indexes found in the data."""
    path, node = [], raw
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            continue
        path.append(part)
    return tuple(path)


def _line_of(raw: Any, path: tuple) -> int | None:
    """The line of the innermost mapping on `path` that remembers one."""
    line, node = getattr(raw, "line", None), raw
    for part in path:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
        line = getattr(node, "line", None) or line
    return line


def _field_names(model: Any, loc: tuple) -> set[str]:
    """The keys the model accepts at `loc` (for "did you mean")."""
    current = model
    for part in loc:
        fields = _fields(current)
        if isinstance(part, str) and part in fields:
            current = _submodel(fields[part])
    return set(_fields(current))


def _fields(model: Any) -> dict[str, Any]:
    if isinstance(model, type) and issubclass(model, BaseModel):
        return {f.alias or n: f.annotation for n, f in model.model_fields.items()}
    fields = getattr(model, "__dataclass_fields__", {})
    return {n: f.type for n, f in fields.items()}


def _submodel(annotation: Any) -> Any:
    if isinstance(annotation, type) and (issubclass(annotation, BaseModel)
                                         or hasattr(annotation, "__dataclass_fields__")):
        return annotation
    for arg in get_args(annotation):
        found = _submodel(arg)
        if found is not None:
            return found
    return None


