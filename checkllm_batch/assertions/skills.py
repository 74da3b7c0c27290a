"""skill-used (docs/assertions/tools.md): the skills an agent used, as its provider reported
them in the case's `metadata` column: `{"skillCalls": [{"name", "source"?, "path"?,
"is_error"?}, ...]}`, the shape promptfoo's agent SDK providers give. Each distinct metadata
value is parsed once (orjson).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Any

import orjson
import polars as pl

from .batch.distinct import Outcome
from .compiled import Ctx, Verdict
from .registry import Kind, assertion

Matcher = tuple[str | None, str | None]  # (exact name, glob pattern): each set one must match


@dataclass(frozen=True)
class Skills:
    """What a value asks: every matcher used (a name or a list of names), or, for a mapping,
    its one matcher used between `low` and `high` times. `negate`: `not-skill-used`, which
    promptfoo decides on its own terms (none of the names used; the matcher never used)."""

    matchers: tuple[Matcher, ...]
    counted: bool = False
    low: int = 1
    high: int | None = None
    negate: bool = False


def _trimmed(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _count(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value) and value == int(value) and value >= 0


def _skills(value: Any, spec: Any) -> Skills:
    """promptfoo's reading of the value, its errors worded as promptfoo words them."""
    if _trimmed(value):
        return Skills(((_trimmed(value), None),), negate=spec.negate)
    if isinstance(value, list) and value and all(_trimmed(v) for v in value):
        return Skills(tuple((_trimmed(v), None) for v in value), negate=spec.negate)
    if not isinstance(value, dict):
        raise ValueError("skill-used assertion must have a string, string array, or object value")
    name, pattern = _trimmed(value.get("name")), _trimmed(value.get("pattern"))
    if not name and not pattern:
        raise ValueError("skill-used assertion object must include a name or pattern property")
    for bound in ("min", "max"):
        if bound in value and not _count(value[bound]):
            raise ValueError(f"skill-used assertion object {bound} must be a finite non-negative "
                             "integer")
    low, high = (None if value.get(b) is None else int(value[b]) for b in ("min", "max"))
    if low is not None and high is not None and high < low:
        raise ValueError("skill-used assertion object max must be greater than or equal to min")
    if spec.negate and (low is not None or high not in (None, 0)):
        raise ValueError("not-skill-used object assertions only support name/pattern with no "
                         "count bounds, or max: 0")
    return Skills(((name, pattern),), counted=True, high=high, negate=spec.negate,
                  low=low if low is not None else 0 if high is not None else 1)


@functools.cache
def _glob(pattern: str) -> re.Pattern:
    """promptfoo's name pattern: `*` any run, `?` one character, whole name, any case."""
    return re.compile("".join("[^\n\r\u2028\u2029]*" if c == "*" else "[^\n\r\u2028\u2029]"
                              if c == "?" else re.escape(c) for c in pattern), re.I)


def _matches(call: dict, matcher: Matcher) -> bool:
    name, pattern = matcher
    return (name is None or call["name"] == name) and (
        pattern is None or _glob(pattern).fullmatch(call["name"]) is not None)


def _label(call: dict) -> str:
    where = ", ".join(str(call[k]) for k in ("source", "path") if call.get(k))
    return f"{call['name']} ({where})" if where else call["name"]


def _calls(metadata: str | None) -> list[dict]:
    """The skill calls that count: objects with a text `name`, not marked `is_error`."""
    parsed = orjson.loads(metadata) if metadata is not None else None
    calls = parsed.get("skillCalls") if isinstance(parsed, dict) else None
    return [c for c in calls if isinstance(c, dict) and isinstance(c.get("name"), str)
            and c.get("is_error") is not True] if isinstance(calls, list) else []


def _used(metadata: str | None, skills: Skills) -> Outcome:
    """Whether the skills asked for were used; the engine flips it for `not-skill-used`, so
    a negated check answers the opposite of promptfoo's own inverse rule."""
    try:
        calls = _calls(metadata)
    except orjson.JSONDecodeError as e:
        return None, f"metadata is not valid JSON: {e}"
    used = ", ".join(_label(c) for c in calls) or "(none)"
    if skills.counted:
        n = sum(_matches(c, skills.matchers[0]) for c in calls)
        within = n >= skills.low and (skills.high is None or n <= skills.high)
        return (n > 0 if skills.negate else within), f"used {n} time(s); skills used: {used}"
    found = sum(any(_matches(c, m) for c in calls) for m in skills.matchers)
    return (found > 0 if skills.negate else found == len(skills.matchers)), \
        f"skills used: {used}"


def _expect(skills: Skills) -> str:
    name, pattern = skills.matchers[0]
    if not skills.counted:
        return "use the skills " + ", ".join(str(m[0]) for m in skills.matchers)
    times = (f"at least {skills.low}" if skills.high is None
             else f"{skills.low} to {skills.high}")
    return f'use skill "{pattern or name}" {times} time(s)'


@assertion("skill-used", kind=Kind.DISTINCT, needs_text=False, prepare=_skills)
def skill_used(ctx: Ctx) -> Verdict:
    """The agent used the named skills (or one matching a pattern, a number of times), as
    its provider reported in the case's `metadata.skillCalls`."""
    return ctx.checked(_used, _expect, over=pl.col("metadata"))
