"""PromptKit checks (`type` + `params`) translated onto our registered types, before parsing.

    - type: banned_words                      - type: content-excludes
      params: {words: [foo, bar]}       ==>     value: [foo, bar]
                                                match_mode: word_boundary

An assertion is PromptKit-shaped when it has `params`, or when its type is a PromptKit-only
name (e.g. `tools_called`). Parameter aliases (`words` -> `patterns`, `max_chars` -> `max`,
...) are PromptKit's own. Each type declares its PromptKit names where it is declared
(`promptkit_names` in assertions/); the translated mapping is then checked like any other
assertion.
"""

from __future__ import annotations

import functools
from typing import Any

from ...errors import did_you_mean
from ...js.yaml12 import LineDict
from ..registry import PROMPTKIT, known_names
from .cells import PROMPTFOO_TYPES

# PromptKit check -> (our type, {param or param alias: our field}, fixed fields), declared
# beside each type (assertions/*.py, `promptkit_names`)
CHECKS = PROMPTKIT
DROPPED = {"message", "id", "trigger", "severity"}  # PromptKit bookkeeping, no effect here


def is_promptkit(raw: Any) -> bool:
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        return False
    return "params" in raw or (raw["type"] in CHECKS and raw["type"] not in _shared_names())


@functools.cache
def _shared_names() -> frozenset[str]:
    """PromptKit names that are also promptfoo types we register (`contains`, `regex`):
    PromptKit only with `params`. PromptKit's own names we register (`llm_judge`) stay
    PromptKit-shaped. (Asked once every type is registered.)"""
    return frozenset(CHECKS) & frozenset(PROMPTFOO_TYPES) & frozenset(known_names())


def translate(raw: dict) -> dict:
    """The promptfoo-shaped assertion for a PromptKit check; ValueError says what is wrong."""
    name, params = raw["type"], raw.get("params") or {}
    if name not in CHECKS:
        raise ValueError(f'unknown PromptKit check "{name}"' + did_you_mean(name, CHECKS))
    if not isinstance(params, dict):
        raise ValueError(f"{name}: params must be a mapping")
    target, names, fixed = CHECKS[name]
    out = LineDict({k: v for k, v in raw.items() if k not in ("type", "params", *DROPPED)})
    out.line, out.key = getattr(raw, "line", None), getattr(raw, "key", None)
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
