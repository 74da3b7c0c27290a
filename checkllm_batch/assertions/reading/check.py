"""Each assertion of a suite checked against the registry while the suite is read
(suites/parse.py reads the rest and hands each assertion here): its type by name (PromptKit's
translated, "did you mean" for a typo), its fields, its required value, its templates, and
the value its type's `prepare` must accept. Problems are added with their place.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ...errors import Where, did_you_mean
from ...js import template
from ...suites import schema
from ...suites.model import AssertionSpec
from ...suites.parse import TOOL_KEYS, load_value
from ...suites.problems import Problems, at, validate
from ...suites.sets import assertion_number
from ..registry import AssertionType, Value, lookup
from . import promptkit

_CUSTOM = ("write the check as `python` (a Python expression or file://checks.py:fn) or "
           "`expression` (a DuckDB SQL / Polars expression over the case's columns)")
# promptfoo types that checkllm-batch cannot run, and why: a clear parse-time error
# instead of "unknown type"
CANNOT_RUN = {
    "javascript": _CUSTOM,
    "ruby": _CUSTOM,
    "classifier": "it needs a HuggingFace text-classification model; " + _CUSTOM,
    "moderation": "it needs a provider's moderation API; " + _CUSTOM,
    "guardrails": "it reads a provider's guardrail flags, which stored outputs do not carry",
    "pi": "it needs the remote Pi Labs scorer; use llm-rubric or g-eval with a judge",
    "search-rubric": "it needs a judge that searches the web; use llm-rubric",
    "human": "it is a grade a person gives in promptfoo's web viewer; use llm-rubric with a "
             "judge",
    "agent-rubric": "it needs an agentic grader (a coding-agent SDK); use llm-rubric with a "
                    "judge",
    **{t: "outputs datasets carry no traces" for t in
       ("trace-span-count", "trace-span-duration", "trace-error-spans")},
    **{f"trajectory:{t}": "it reads an agent's trace (its steps), which outputs datasets do not "
       "carry; tool calls stored in a `tool_calls` column are checked by tools-called, "
       "tool-call-sequence, tool-args and tool-call-count" for t in
       ("tool-used", "tool-args-match", "tool-sequence", "step-count", "goal-success")},
}
COMMON_FIELDS = {"value", "provider", "rubricPrompt"}  # besides schema.Assertion's


def read_assertion(raw: Any, index: int | str, vars_: dict, base: Path, test_where: Where,
                   problems: Problems) -> AssertionSpec | None:
    """One assertion as written, checked against the registry: its spec, or None when a
    problem was added (each with its place: the test's, then "assert N (type)"). An
    assert-set is the suite reader's (suites/sets.py), which reads its members here."""
    kind = raw.get("type") if isinstance(raw, dict) else None
    label = f"assert {assertion_number(index)}" + (f" ({kind})" if kind else "")
    where = at(raw, replace(test_where, assertion=label))
    found = _registered(raw, where, problems)
    if found is None:
        return None
    raw, negate, name, atype = found
    fields = dict(raw)
    aliases = atype.reading.value_aliases
    known = {*schema.Assertion.model_fields, *COMMON_FIELDS, *atype.fields, *aliases}
    for key in fields:
        if key not in known:
            problems.add(where, f'unknown field "{key}" for {name}' + did_you_mean(key, known))
    value = fields.get("value")
    for alias in aliases:
        if value is None and fields.get(alias) is not None:
            value = fields[alias]
    value = _script_ref(value, base, problems) if atype.reading.code_ref else \
        load_value(value, base, where, problems)
    args = {k: fields[k] for k in atype.fields if k in fields}
    given = atype.reading.null_value and "value" in fields  # `value: null` given, not left out
    if not given and not _required_present(atype, value, args, where, problems):
        return None
    if atype.value is Value.NONE and value is not None:
        problems.add(where, f"{name} takes no value")
    threshold, weight = fields.get("threshold"), fields.get("weight", 1)
    config = fields.get("config")
    if isinstance(config, dict):  # declared tools may live in a file, as in promptfoo
        fields["config"] = {k: load_value(v, base, where, problems) if k in TOOL_KEYS else v
                            for k, v in config.items()}
    spec = AssertionSpec(
        type=atype.name, negate=negate, value=value,
        threshold=float(threshold) if threshold is not None else None, weight=float(weight),
        metric=_metric(fields.get("metric"), vars_),
        metric_only=weight == 0 or bool(fields.get("metricOnly")),
        args={**args, **{k: fields[k] for k in ("provider", "rubricPrompt", "config") if k in fields}},
        where=where)
    _check_value(atype, spec, where, problems)
    return spec


def _registered(raw: Any, where: Where, problems: Problems) -> tuple[dict, bool, str, AssertionType] | None:
    """The assertion (PromptKit's translated), whether negated, the type's name as written
    and its registered type; None when a problem was added."""
    kind = raw.get("type") if isinstance(raw, dict) else None
    if promptkit.is_promptkit(raw):
        try:
            raw = promptkit.translate(raw)
        except ValueError as e:
            problems.add(where, str(e))
            return None
        kind = raw["type"]
    if not isinstance(raw, dict) or not isinstance(kind, str):
        problems.add(where, "an assertion must be a mapping with a string `type`")
        return None
    found = validate(schema.Assertion, raw, where)
    if found:
        problems.extend(found)
        return None
    negate = kind.startswith("not-")
    name = kind[4:] if negate else kind
    if name.startswith("not-"):
        problems.add(where, f'"{kind}": double negation is not allowed')
        return None
    if name in CANNOT_RUN:
        problems.add(where, f'"{name}" cannot run here: {CANNOT_RUN[name]}')
        return None
    try:
        atype = lookup(name)
    except KeyError as e:
        problems.add(where, str(e.args[0]))
        return None
    if negate and not atype.negatable:
        problems.add(where, f'"{kind}": {name} has no not- form')
        return None
    return raw, negate, name, atype


def _script_ref(value: Any, base: Path, problems: Problems) -> Any:
    """`file://checks.py:fn` with the path made absolute (relative to the suite file)."""
    if isinstance(value, str) and value.startswith("file://"):
        path, sep, fn = value[len("file://"):].partition(":")
        return "file://" + str(problems.read(base / path).resolve()) + sep + fn
    return value


def _required_present(atype: AssertionType, value: Any, args: dict, where: Where, problems: Problems) -> bool:
    needs = list(atype.required) or (["value"] if atype.value is Value.REQUIRED else [])
    for need in needs:
        options = need.split("|")
        present = [o for o in options if (value if o == "value" else args.get(o)) is not None]
        if not present:
            names = " or ".join(f"`{o}`" for o in [*options, *atype.reading.value_aliases] if o)
            problems.add(where, f"{atype.name} needs {names}")
            return False
    return True


def _check_value(atype: AssertionType, spec: AssertionSpec, where: Where, problems: Problems) -> None:
    """Templates must parse; a literal value (without templates) must prepare."""
    bad = template.syntax_error([spec.value, *spec.args.values()])
    if bad:
        problems.add(where, bad)
        return
    templated = template.value_has_template(spec.value) or any(
        template.has_template(spec.args.get(f)) for f in atype.fields)
    if templated and not atype.reading.templated:
        problems.add(where, f"the value of {atype.name} cannot be a template: it is code or an "
                     "address, compiled once; read per-row values from the case's vars instead")
        return
    if atype.prepare is not None and not templated:
        try:
            atype.prepare(spec.value, spec)
        except ValueError as e:
            problems.add(where, str(e))
        except Exception as e:  # a type's check that did not expect this value: still ours
            problems.add(where, f"invalid value {str(spec.value)[:40]!r}: "
                                f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


def _metric(value: Any, vars_: dict) -> str | None:
    return None if value is None else template.render(value, vars_)


