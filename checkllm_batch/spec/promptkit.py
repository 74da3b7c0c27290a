"""PromptKit checks (`type` + `params`) translated onto our registered types, before parsing.

    - type: banned_words                      - type: content-excludes
      params: {words: [foo, bar]}       ==>     value: [foo, bar]
                                                match_mode: word_boundary

An assertion is PromptKit-shaped when it has `params`, or when its type is a PromptKit-only
name (e.g. `tools_called`). Parameter aliases (`words` -> `patterns`, `max_chars` -> `max`,
...) are PromptKit's own. The translated mapping is then checked like any other assertion.
"""

from __future__ import annotations

from typing import Any

from ..errors import did_you_mean
from .yaml12 import LineDict

# PromptKit type -> (our type, {param or param alias: our field}, fixed fields)
_PATTERNS = {"patterns": "value"}
_EXCLUDES = {"patterns": "value", "words": "value", "match_mode": "match_mode"}
_JSON_PATH = {"expression": "value", "jmespath_expression": "value",
              **{k: k for k in ("expected", "contains", "min_results", "max_results", "min", "max",
                                "allow_wrapped", "extract_json")}}
CHECKS: dict[str, tuple[str, dict[str, str], dict[str, Any]]] = {
    "contains": ("icontains-all", _PATTERNS, {}),
    "content_includes": ("icontains-all", _PATTERNS, {}),
    "regex": ("regex", {"pattern": "value"}, {}),
    "content_matches": ("regex", {"pattern": "value"}, {}),
    "content_excludes": ("content-excludes", _EXCLUDES, {}),
    "content_not_includes": ("content-excludes", _EXCLUDES, {}),
    "banned_words": ("content-excludes", _EXCLUDES, {"match_mode": "word_boundary"}),
    "contains_any": ("icontains-any", _PATTERNS, {}),
    "content_includes_any": ("icontains-any", _PATTERNS, {}),
    "min_length": ("min-length", {"min": "value", "min_characters": "value", "min_chars": "value"},
                   {}),
    "max_length": ("max-length", {"max": "value", "max_characters": "value", "max_chars": "value"},
                   {}),
    "length": ("max-length", {"max": "value", "max_characters": "value", "max_chars": "value"}, {}),
    "sentence_count": ("sentence-count", {"max": "max", "max_sentences": "max", "min": "min"}, {}),
    "max_sentences": ("sentence-count", {"max": "max", "max_sentences": "max", "min": "min"}, {}),
    "field_presence": ("field-presence", {"fields": "value", "required_fields": "value"}, {}),
    "required_fields": ("field-presence", {"fields": "value", "required_fields": "value"}, {}),
    "json_valid": ("is-json", {}, {}),
    "is_valid_json": ("is-json", {}, {}),
    "valid_json": ("is-json", {}, {}),
    "json_schema": ("is-json", {"schema": "value"}, {}),
    "json_path": ("json-path", _JSON_PATH, {}),
    "tools_called": ("tools-called", {"tool_names": "value"}, {}),
    "tool_called": ("tools-called", {"tool_names": "value"}, {}),
    "tools_not_called": ("tools-not-called", {"tool_names": "value"}, {}),
    "tool_args": ("tool-args", {"tool_name": "tool_name", "expected_args": "expected_args"}, {}),
    "tool_call_count": ("tool-call-count", {"tool": "tool", "min": "min", "max": "max"}, {}),
    "tool_call_sequence": ("tool-call-sequence", {"sequence": "value"}, {}),
    "no_tool_errors": ("no-tool-errors", {"tools": "tools"}, {}),
    "latency_budget": ("latency", {"max_ms": "threshold"}, {}),
    "llm_judge": ("llm_judge", {k: k for k in ("criteria", "rubric", "model", "system_prompt",
                                               "min_score", "extra")}, {}),
}
_SHARED_NAMES = {"contains", "regex"}  # also promptfoo types: PromptKit only with `params`
DROPPED = {"message", "id", "trigger", "severity"}  # PromptKit bookkeeping, no effect here


def is_promptkit(raw: Any) -> bool:
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        return False
    return "params" in raw or (raw["type"] in CHECKS and raw["type"] not in _SHARED_NAMES)


def translate(raw: dict) -> dict:
    """The promptfoo-shaped assertion for a PromptKit check; ValueError says what is wrong."""
    name, params = raw["type"], raw.get("params") or {}
    if name not in CHECKS:
        raise ValueError(f'unknown PromptKit check "{name}"' + did_you_mean(name, CHECKS))
    if not isinstance(params, dict):
        raise ValueError(f"{name}: params must be a mapping")
    target, names, fixed = CHECKS[name]
    out = LineDict({k: v for k, v in raw.items() if k not in ("type", "params", *DROPPED)})
    out.line = getattr(raw, "line", None)
    out["type"] = target
    out.update(fixed)
    for key, value in params.items():
        if key not in names:
            raise ValueError(f'{name}: unknown param "{key}"' + did_you_mean(key, names)
                             + (f"; params are: {', '.join(names)}" if names else "; it takes none"))
        field = names[key]
        if field in out and out[field] != value and field not in fixed:
            raise ValueError(f'{name}: "{key}" repeats another param for {field}')
        out[field] = value
    return out
