"""promptfoo's CSV `__expected` cells (its assertionFromString): `[not-]type[(threshold)][:value]`
read as the assertion it writes, by the names we and promptfoo know and each type's CSV rule
(`csv_value`, `csv_threshold`). suites/testfiles.py reads the rows; this reads the cells."""

from __future__ import annotations

import functools
import re
from typing import Any

from ..registry import REGISTRY, CsvValue, known_names
from ..text import split_items

# promptfoo's CSV default threshold for `classifier`, a promptfoo type we do not register (the
# cell then fails at parse as one we cannot run); registered types declare theirs (csv_threshold)
_UNREGISTERED_CSV_THRESHOLDS = {"classifier": 0.75}
# promptfoo 0.123.1's base types, in its own order (BaseAssertionTypesSchema): a cell naming one
# is that type even where we do not have it (then parsing says it cannot run here), never
# silently an `equals`. Its CSV regex tries them in this order, the first that reads the whole
# cell wins: "similar:dot:x" is `similar` with the value "dot:x", as promptfoo reads it.
PROMPTFOO_TYPES = (
    "agent-rubric answer-relevance bleu classifier contains contains-all contains-any "
    "contains-html contains-json contains-sql contains-xml context-faithfulness context-recall "
    "context-relevance conversation-relevance cost equals factuality finish-reason g-eval gleu "
    "guardrails icontains icontains-all icontains-any is-html is-json is-refusal is-sql "
    "is-valid-function-call is-valid-openai-function-call is-valid-openai-tools-call is-xml "
    "javascript latency levenshtein llm-rubric pi meteor model-graded-closedqa "
    "model-graded-factuality moderation perplexity perplexity-score python regex rouge-n ruby "
    "similar similar:cosine similar:dot similar:euclidean starts-with skill-used "
    "trajectory:goal-success trajectory:tool-args-match trajectory:step-count "
    "trajectory:tool-sequence trajectory:tool-used trace-error-spans trace-span-count "
    "trace-span-duration search-rubric webhook word-count select-best human max-score "
    "assert-set").split()


@functools.cache
def _cell_pattern() -> re.Pattern[str]:
    """promptfoo's CSV cell regex: `[not-]type[(threshold)][:value]`, its types first in its
    order, then the names only we know (CheckLLM's, PromptKit's), longest first."""
    ours = sorted(set(known_names()) - set(PROMPTFOO_TYPES), key=len, reverse=True)
    names = "|".join(re.escape(n) for n in [*PROMPTFOO_TYPES, *ours])
    return re.compile(rf"^(not-)?({names})(?:\((\d+(?:\.\d+)?)\))?(?::(.*))?$", re.S)


def assertion_from_string(cell: str) -> dict[str, Any]:
    """promptfoo's assertionFromString for an `__expected` cell (already trimmed)."""
    for prefix in ("javascript:", "fn:", "eval:"):
        if cell.startswith(prefix):
            return {"type": "javascript", "value": cell[len(prefix):].strip()}
    if cell.startswith("file://") and re.search(r"\.(js|cjs|mjs|ts)(:|$)", cell):
        return {"type": "javascript", "value": cell}
    if cell.startswith("file://") and re.search(r"\.py(:|$)", cell):
        return {"type": "python", "value": cell}  # promptfoo strips file:// here (a bug)
    for prefix in ("grade:", "llm-rubric:"):
        if cell.startswith(prefix):
            return {"type": "llm-rubric", "value": cell[len(prefix):]}
    if cell.startswith("python:"):
        return {"type": "python", "value": cell[len("python:"):].strip()}
    m = _cell_pattern().match(cell)
    if not m:
        return {"type": "equals", "value": cell}
    negate, base, threshold, rest = m.groups()
    out: dict[str, Any] = {"type": (negate or "") + base}
    # each type declares its CSV rule (csv_value, csv_threshold); promptfoo's rules name
    # types, never one of our aliases (similar:cosine, model-graded-relevance): those read plain
    atype = REGISTRY.get(base)
    reading = atype.reading.csv_value if atype else CsvValue.TRIMMED
    if reading is CsvValue.ITEMS:
        if not rest:  # promptfoo keeps "" or nothing as it is: the type needs a value
            return out  # (and these types take no threshold)
        try:
            out["value"] = split_items(rest)  # [N]: quoted items may hold commas
        except ValueError:
            out["value"] = rest  # the assertion's own check reports it, with the place
    elif reading is CsvValue.AS_IS:
        if rest:
            out["value"] = rest
    elif rest is not None:
        out["value"] = rest.strip()
    # only the types with a CSV threshold take one; promptfoo ignores `(N)` on the others
    default = atype.reading.csv_threshold if atype else _UNREGISTERED_CSV_THRESHOLDS.get(base)
    if default is not None:
        out["threshold"] = default if threshold is None else float(threshold)
    return out
