"""The problems a suite has, each a record naming its place (errors.Problem), collected
while reading (Problems) and raised once; pydantic's validation errors as such problems.

    validate(schema.Test, raw, Where("suite.yaml", 4, "test 2"), "test field")
    -> [Problem(Where("suite.yaml", 4, "test 2"), "threshold must be a number, got 'high'")]

The place is the innermost mapping's (YAML mappings remember their line, the mappings of a
suite given as data their key path); errors at one place (a union's alternatives) are one
problem; an unknown key gets the closest valid name.
"""

from __future__ import annotations

import reprlib
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from ..errors import Problem, Where, did_you_mean

SECRET_FIELDS = {"api_key_env"}  # a key given here by mistake is never echoed
_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 60, 60, 40


class Problems(list[Problem]):
    """The problems found, and on the way every file the suite reads (its inputs, which
    nothing may overwrite: see Suite.files)."""

    def __init__(self, found: list[Problem], files: list[Path]) -> None:
        super().__init__(found)
        self.files = files

    def add(self, where: Where, message: str) -> None:
        self.append(Problem(where, message))

    def read(self, file: Path) -> Path:
        self.files.append(file)
        return file


def at(node: Any, where: Where) -> Where:
    """`where`, moved to `node`'s own place when it has one: its line in a YAML file, its key
    path in a suite given as a mapping."""
    line, key = getattr(node, "line", None), getattr(node, "key", None)
    return where if line is None and key is None else replace(where, line=line, key=key)


def validate(model: Any, raw: Any, where: Where, noun: str = "field") -> list[Problem]:
    """Every way `raw` breaks `model` (a pydantic model or a type), one problem each."""
    try:
        _adapter(model).validate_python(raw)
    except ValidationError as e:
        return _lines(e.errors(), model, raw, where, noun)
    return []


@cache
def _adapter(model: Any) -> TypeAdapter:
    return TypeAdapter(model)


def _lines(errors: list[ErrorDetails], model: Any, raw: Any, where: Where,
           noun: str) -> list[Problem]:
    """Errors at the same place (a union's alternatives) become one line."""
    by_place: dict[tuple, list[ErrorDetails]] = {}
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


def _line(path: tuple, errors: list[ErrorDetails], model: Any, raw: Any, where: Where,
          noun: str) -> Problem:
    return Problem(_place_of(raw, path, where), _message(path, errors, model, raw, noun))


def _message(path: tuple, errors: list[ErrorDetails], model: Any, raw: Any, noun: str) -> str:
    first = errors[0]
    if first["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
        known = _field_names(model, first["loc"][:-1])
        return (f'unknown {noun if len(path) == 1 else "field"} "{_name(path)}"'
                + did_you_mean(str(path[-1]), known))
    if first["type"] == "invalid_key" or first["loc"][-1:] == ("[key]",):
        return f"{_name(path[:-1]) or 'the mapping'}: key {path[-1]!r} must be a string"
    phrases = list(dict.fromkeys(_phrase(e) for e in errors))
    said = phrases[0] + "".join(
        (" or " if i == len(phrases) - 1 else ", ") + p.removeprefix("must be ")
        for i, p in enumerate(phrases[1:], 1))
    if first["type"] == "value_error" and isinstance(first["input"], dict):  # a whole entry's
        return f"{_name(path)}: {said}"
    shown = "" if path and path[-1] in SECRET_FIELDS or first["type"] == "missing" \
        else ", got null" + (" (leave the field out for none)" if path and isinstance(
            path[-1], str) else "") if first["input"] is None \
        else f", got {_SHORT.repr(first['input'])}"
    return f"{_name(path) or 'the value'} {said}{shown}"


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


def _phrase(error: ErrorDetails) -> str:
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


def _place_of(raw: Any, path: tuple, where: Where) -> Where:
    """The place of the innermost mapping on `path` that remembers one (else `where`)."""
    place, node = at(raw, where), raw
    for part in path:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
        place = at(node, place)
    return place


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


