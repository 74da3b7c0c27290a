"""One registry of assertion types, looked up by name (with "did you mean" for typos).

A type is one small function registered under its YAML name, with a record of its kind:
a `VectorType`'s function receives a `Ctx` and returns a `Verdict` (compiled.py); a
`JudgeType`'s grades rows through the judge; an `AcrossType`'s decides between the outputs
of one test row. The engine adds what every type
shares: negation, null/non-text outputs, reasons, statuses. An assert-set is no type: the
suite reader reads it (suites/sets.py); its name is known here for "did you mean".
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import did_you_mean
from ..suites.model import ASSERT_SET
from .records import (
    READING,
    RECORDS,
    AcrossType,
    AssertionType,
    CsvValue,
    JudgeType,
    Kind,
    Reading,
    Value,
    VectorType,
)

# the records (records.py) are read through the registry, where types are looked up
__all__ = ["ALIASES", "PROMPTKIT", "REGISTRY", "AcrossType", "AssertionType", "CsvValue",
           "JudgeType", "Kind", "Reading", "Value", "VectorType", "assertion", "known_names",
           "lookup", "promptkit_names"]

REGISTRY: dict[str, AssertionType] = {}
ALIASES: dict[str, str] = {}  # other vocabularies' names -> our canonical name
# PromptKit check name -> (our type, {PromptKit param or its alias: our field}, fixed fields)
PROMPTKIT: dict[str, tuple[str, dict[str, str], dict[str, Any]]] = {}


def assertion(name: str, *, kind: Kind = Kind.VECTOR, value: Value = Value.REQUIRED,
              aliases: tuple[str, ...] = (), **options: Any) -> Callable:
    """Register the decorated function as the assertion type `name`: the record of its kind
    (`RECORDS`), the options of `Reading` gathered into its own record."""

    def register(fn: Callable) -> Callable:
        if name == ASSERT_SET:
            raise RuntimeError(f"{name!r} is the suite's group of assertions, not a type")
        if name in REGISTRY or name in ALIASES:
            raise RuntimeError(f"assertion type {name!r} registered twice")
        doc = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        REGISTRY[name] = record(name, fn, kind, value, doc, options)
        for alias in aliases:
            ALIASES[alias] = name
        return fn

    return register


def record(name: str, fn: Callable, kind: Kind, value: Value, doc: str,
           options: dict[str, Any]) -> AssertionType:
    """The record of `kind` for a type declared with `options` (the decorator's keywords)."""
    reading = Reading(**{k: options.pop(k) for k in READING & set(options)})
    if kind not in (Kind.VECTOR, Kind.DISTINCT) and options.pop("needs_text", False):
        # judged types read any output: a null one fails by the judge's rule (judging/rows.py)
        raise TypeError(f"{name}: needs_text is a choice of vector and distinct types")
    return RECORDS[kind](name=name, fn=fn, kind=kind, value=value, doc=doc, reading=reading,
                         **options)


def promptkit_names(target: str, *names: str, params: dict[str, str],
                    fixed: dict[str, Any] | None = None) -> None:
    """Declare PromptKit's checks `names` (`type` + `params`) as our type `target`, beside
    its declaration: `params` maps each PromptKit param (and its aliases) onto our field;
    `fixed` fields are set as given. assertions/reading/promptkit.py translates with these."""
    for name in names:
        if name in PROMPTKIT:
            raise RuntimeError(f"PromptKit check {name!r} declared twice")
        PROMPTKIT[name] = (target, params, dict(fixed or {}))


def known_names() -> list[str]:
    """Every name an assertion's `type` may give: the types, their aliases, assert-set."""
    return sorted([*REGISTRY, *ALIASES, ASSERT_SET])


def lookup(name: str) -> AssertionType:
    """The type registered as `name` (or an alias of it); KeyError says what was meant."""
    canonical = ALIASES.get(name, name)
    if canonical in REGISTRY:
        return REGISTRY[canonical]
    if canonical == ASSERT_SET:  # read by the suite reader (suites/sets.py), never looked up
        raise KeyError(f'"{name}" is a group of assertions, not a type')
    raise KeyError(f'unknown assertion type "{name}"' + did_you_mean(name, known_names()))
