"""JSON (docs/assertions/json.md): is-json and contains-json, each with an optional JSON Schema.

Parsing and schema validation need a library to look at each value: they run once per
distinct output of a batch (orjson, strict like JavaScript's JSON.parse; jsonschema-rs).
"""

from __future__ import annotations

import re
from typing import Any, Callable

import jsonschema_rs
import orjson
import polars as pl
import yaml

from ..js.jsonformats import AJV_DIALECTS, AJV_FORMATS, AJV_KEYWORDS, ajv_spelled
from ..js.jsontext import (
    MAX_SPAN,
    MAX_YAML_DEPTH,
    extract_json_objects,
    js_json_loads,
    js_yaml_loads,
)
from ..js.jsvalue import as_double
from .batch.distinct import Outcome
from .compiled import Ctx, Verdict
from .registry import CsvValue, Kind, Value, assertion, promptkit_names

# (instance, whether it may hold what JavaScript reads differently: _not_python of its text)
# -> None when the instance conforms, else the error
Validator = Callable[[Any, bool], str | None]


def compile_schema(value: Any, spec: Any = None) -> Validator | None:
    """A validator for a JSON Schema given as a mapping or as YAML/JSON text. As in
    promptfoo, a value JavaScript finds false (none, "", false, 0) is no schema, and text may
    hold a boolean schema (`true` takes any JSON, `false` none)."""
    if value is None or value is False or value == "" or (
            isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0):
        return None
    try:
        schema = js_yaml_loads(value) if isinstance(value, str) else value
    except yaml.YAMLError as e:
        raise ValueError(f"the JSON Schema is not valid JSON or YAML: "
                         f"{getattr(e, 'problem', None) or e}") from None
    if not isinstance(schema, dict) and not (isinstance(value, str) and isinstance(schema, bool)):
        raise ValueError("the JSON Schema must be a mapping (or, as text, true or false)")
    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    if dialect is not None and str(dialect) not in AJV_DIALECTS:
        raise ValueError(f"invalid JSON Schema: $schema {dialect!r} is not draft-07, the only "
                         "dialect promptfoo's validator knows")
    try:
        validator = jsonschema_rs.Draft7Validator(
            ajv_spelled(_as_javascript(schema)), validate_formats=True,
            ignore_unknown_formats=False, formats=AJV_FORMATS, keywords=AJV_KEYWORDS)
    except (jsonschema_rs.ValidationError, ValueError) as e:
        raise ValueError(f"invalid JSON Schema: {str(e).splitlines()[0]}") from None

    def check(instance: Any, javascript: bool = True) -> str | None:
        try:
            if javascript:
                instance = _as_javascript(instance)
            return _first_error(validator, instance)
        except Exception as e:  # a value the validator cannot take (inf)
            return f"cannot check against the schema: {type(e).__name__}: {e}"

    return check


def _first_error(validator: Any, instance: Any) -> str | None:
    if validator.is_valid(instance):
        return None
    error = next(iter(validator.iter_errors(instance)))
    return f"{error.message} (at {'/'.join(map(str, error.instance_path)) or 'root'})"


def _as_javascript(value: Any) -> Any:
    """The value as JavaScript holds it, for the schema validator (which takes no lone
    surrogates): a lone surrogate stands in as U+FFFD (one unit), an integer beyond 2**53 is
    the double nearest to it (`9007199254740993` is `9007199254740992`)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2 ** 53:
        return as_double(value)
    if isinstance(value, list):
        return [_as_javascript(v) for v in value]
    if isinstance(value, dict):
        return {_as_javascript(k): _as_javascript(v) for k, v in value.items()}
    return value


def _parsed(text: str | None, validate: Validator | None) -> Outcome:
    if text is None:  # a row outside `where`: _json_verdict decides it vectorised
        return None, None
    try:
        parsed = js_json_loads(text)
    except ValueError as e:
        return False, f"invalid JSON: {e}"
    problem = validate(parsed, _not_python(text)) if validate else None
    return problem is None, problem


def _contained(text: str | None, validate: Validator | None) -> Outcome:
    found = extract_json_objects(text or "")
    if not found:
        return False, "no JSON object found"
    if validate is None:
        return True, None
    javascript = _not_python(text or "")
    problems = [validate(obj, javascript) for obj in found]
    if None in problems:
        return True, None
    return False, problems[0]


def _one_object(text: str | None, validate: Validator | None) -> Outcome:
    """_contained for an output with one "{", fewer "[" than js-yaml's depth limit and nothing
    JavaScript reads differently (contains_json picks them in Polars): its brace-balanced span
    runs from the "{" to the next "}" and, when strict JSON, is the one object found."""
    if text is None:  # a row outside `where`: _json_verdict decides it vectorised
        return None, None
    start = text.find("{")
    end = text.find("}", start, start + MAX_SPAN) + 1
    try:
        found = orjson.loads(text[start:end]) if end else None
    except orjson.JSONDecodeError:
        found = None
    if not isinstance(found, dict):
        return _contained(text, validate)
    problem = validate(found, False) if validate else None
    return problem is None, problem


def _json_verdict(ctx: Ctx, checks: list[tuple[Callable[[Any, Any], Outcome], pl.Expr]],
                  what: str, otherwise: str) -> Verdict:
    """Each (check, rows) over the distinct outputs of its rows, a row going to the first that
    takes it; the rows none takes fail vectorised with `otherwise`."""
    passed, detail, taken = pl.lit(False), pl.lit(otherwise), pl.lit(False)
    for check, rows in checks:
        rows = ctx.once(rows & ~taken)
        verdict = ctx.checked(check, lambda validate: what + (" matching the schema" if validate
                                                              else ""), where=rows)
        passed = pl.when(rows).then(verdict.passed).otherwise(passed)
        detail = pl.when(rows).then(verdict.detail).otherwise(detail)
        taken = taken | rows
    return Verdict(passed, verdict.expect, detail=detail)


JSON_CHECK: dict[str, Any] = {"kind": Kind.DISTINCT, "value": Value.OPTIONAL, "json_ok": True,
              "prepare": compile_schema, "csv_value": CsvValue.AS_IS}


@assertion("is-json", **JSON_CHECK)
def is_json(ctx: Ctx) -> Verdict:
    """The whole output is valid JSON (strict), conforming to the schema if one is given."""
    candidate = ctx.output.str.contains(r"^[ \t\n\r]*[\[{\"\-0-9tfn]")
    return _json_verdict(ctx, [(_parsed, candidate)], "be valid JSON",
                         "invalid JSON: does not start like a JSON value")


@assertion("contains-json", **JSON_CHECK)
def contains_json(ctx: Ctx) -> Verdict:
    """The output contains a JSON object, conforming to the schema if one is given."""
    out = ctx.output
    one_object = ((out.str.count_matches("{", literal=True) == 1)
                  & (out.str.count_matches("[", literal=True) < MAX_YAML_DEPTH)
                  & ~out.str.contains(_NOT_PYTHON))
    return _json_verdict(ctx, [(_one_object, one_object),
                               (_contained, out.str.contains("{", literal=True))],
                         "contain a JSON object", "no JSON object found")


_SURROGATE = re.compile("[\ud800-\udfff]")
# what a parsed value needs _as_javascript for: a lone surrogate (only ever from an escape,
# JSON's \uD800 or YAML's) or an integer of 16 digits or more
_SURROGATE_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F]")
# _not_python as a Polars regex, over a whole batch
_NOT_PYTHON = f"[0-9]{{16}}|{_SURROGATE_ESCAPE.pattern}"
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))  # a digit "0", the rest " "


def _not_python(source: str) -> bool:
    """Whether the text may parse to a value the validator must see as JavaScript holds it.
    A run of 16 digits is found on the bytes, each digit as "0" and the rest blanked: 6x
    faster than a regex scan of every position (0.6 against 3.7 us a 500-character text)."""
    return bool("\\" in source and _SURROGATE_ESCAPE.search(source)) or b"0" * 16 in source.encode(
        "utf-8", "surrogatepass").translate(_DIGITS)


# PromptKit's names for these checks (assertions/reading/promptkit.py translates `type` + `params`)
promptkit_names("is-json", "json_valid", "is_valid_json", "valid_json", params={})
promptkit_names("is-json", "json_schema", params={"schema": "value"})
