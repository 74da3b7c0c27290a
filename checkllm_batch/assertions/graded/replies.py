"""Strict parsing of judge replies. A reply we cannot read raises Unparsable: the assertion
is an error with that reason, never a pass and never a silent 0 (SPEC §4)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ...errors import ConfigError
from ...js.yaml12 import load_yaml_text

Outcome = tuple[bool | None, float | None, str | None]  # (passed, score, reason); None: error
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)
_TRUE, _FALSE = {"true", "yes", "pass", "y"}, {"false", "no", "fail", "n"}


class Unparsable(ValueError):
    pass


def failure(reply: Any) -> str | None:
    """Why this reply (a judge Reply, or a string saying why there is none) cannot be used,
    or None."""
    if isinstance(reply, str):
        return reply
    if not reply.ok:
        return reply.error if reply.error == "budget exhausted" else f"judge: {reply.error}"
    return None


def first_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in the reply: the whole text, else the first object promptfoo
    finds (read leniently, as below), else one in a code fence or embedded."""
    try:
        value = json.loads(text)
        if isinstance(value, dict):
            return value
    except ValueError:
        pass
    found = _lenient_object(text)
    if found is not None:
        return found
    for candidate in _FENCE.findall(text):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise Unparsable(f"no JSON object in judge reply: {snippet(text)}")


def _lenient_object(text: str) -> dict[str, Any] | None:
    """promptfoo's reading of a judge's JSON: from each "{", the text up to where the braces
    (counted naively) balance, or to the end with the missing "}" added, read as a YAML flow
    mapping (unquoted keys, single quotes, trailing commas, // comments); the first that reads
    as an object wins."""
    for start in (i for i, c in enumerate(text) if c == "{"):
        depth = 0
        for end in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth and end < len(text) - 1:
                continue
            value = _flow_mapping(text[start:end + 1] + "}" * depth)
            if isinstance(value, dict):
                return value
            break
    return None


def _flow_mapping(candidate: str) -> Any:
    try:
        return json.loads(candidate)
    except ValueError:
        pass
    lines = [re.sub(r'^((?:[^"/]|"(?:[^"\\]|\\.)*"|/(?!/))*?)(?<!:)//', r"\1 #", ln)
             for ln in candidate.split("\n")]
    try:  # YAML 1.2 as js-yaml reads it, with our size and depth limits
        return load_yaml_text("\n".join(lines), "judge reply")
    except ConfigError:
        return None


def snippet(text: str | None, size: int = 80) -> str:
    text = (text or "").strip().replace("\n", " ")
    return repr(text if len(text) <= size else text[:size] + "...")


def unit_score(value: Any, name: str = "score") -> float:
    """A judge score that must be a number in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise Unparsable(f"judge {name} is not a number: {value!r}") from None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise Unparsable(f"judge {name} {value!r} is outside [0, 1]")
    return float(value)


def boolean(value: Any, name: str = "pass") -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise Unparsable(f"judge {name} is not a boolean: {value!r}")


def rubric(text: str, threshold: float | None) -> Outcome:
    """llm-rubric: {pass, score, reason}. Needs pass or score; score must be in [0, 1]."""
    obj = first_json_object(text)
    given = obj.get("pass") is not None  # {"pass": null} is no pass, {"score": null} no score
    if not given and obj.get("score") is None:
        raise Unparsable(f"judge reply has neither pass nor score: {snippet(text)}")
    score = unit_score(obj["score"]) if obj.get("score") is not None else None
    passed = boolean(obj["pass"]) if given or score is None else score >= (threshold or 0.5)
    if score is None:  # {"pass": true, "score": null} scores 0, as in promptfoo
        score = 0.0 if "score" in obj else float(passed)
    if threshold is not None and score < threshold:
        return False, score, f"Score {score:g} below threshold {threshold:g}: {obj.get('reason')}"
    return passed, score, _reason(obj.get("reason"))


def scored(text: str, threshold: float, reason_key: str = "reason") -> Outcome:
    """model / llm_judge: {score, reason}; pass is score >= threshold."""
    obj = first_json_object(text)
    if "score" not in obj:
        raise Unparsable(f"judge reply has no score: {snippet(text)}")
    score = unit_score(obj["score"])
    return score >= threshold, score, _reason(obj.get(reason_key))


def judged(text: str, min_score: float | None) -> Outcome:
    """PromptKit llm_judge: {passed, score, reasoning}; min_score, when given, decides."""
    obj = first_json_object(text)
    if "score" not in obj:
        raise Unparsable(f"judge reply has no score: {snippet(text)}")
    score = unit_score(obj["score"])
    if min_score is not None:
        return score >= min_score, score, _reason(obj.get("reasoning"))
    if "passed" not in obj:
        raise Unparsable(f"judge reply has no passed (and no min_score is set): {snippet(text)}")
    return boolean(obj["passed"], "passed"), score, _reason(obj.get("reasoning"))


def closedqa(text: str) -> Outcome:
    end = text.rstrip()
    if end.endswith("Y"):
        return True, 1.0, "The submission meets the criterion"
    if end.endswith("N"):
        return False, 0.0, f"The submission does not meet the criterion: {snippet(text, 200)}"
    raise Unparsable(f"closedqa reply does not end with Y or N: {snippet(text[-80:])}")


FACTUALITY_KEYS = {"A": "subset", "B": "superset", "C": "agree", "D": "disagree",
                   "E": "differButFactual"}


def factuality(text: str, scores: dict[str, float]) -> Outcome:
    reason, category = None, None
    try:
        obj = first_json_object(text)
        if isinstance(obj.get("category"), str) and obj["category"]:
            category, reason = obj["category"].strip().upper(), obj.get("reason")
    except Unparsable:
        pass
    if category is None:  # no JSON verdict: the first "(X)" or "X)", as promptfoo reads it
        m = re.search(r"\(?([A-Ea-e])\)", text)
        category = m.group(1).upper() if m else ""
    if category not in FACTUALITY_KEYS:
        raise Unparsable(f"factuality reply has no category A-E: {snippet(text)}")
    default = 0.0 if category == "D" else 1.0
    score = float(scores.get(FACTUALITY_KEYS[category], default))
    return score > 0, score, f"category {category}: {reason or FACTUALITY_KEYS[category]}"


def geval_steps(text: str) -> list[str]:
    for line in text.splitlines():
        start = line.find('{"steps"')
        end = line.rfind("}")
        if start >= 0 and end > start:
            try:
                steps = json.loads(line[start:end + 1])["steps"]
            except (ValueError, KeyError, TypeError):
                break
            if isinstance(steps, list) and steps and all(
                    isinstance(s, str) and s.strip() for s in steps):
                return steps
            break
    raise Unparsable(f'g-eval steps reply has no one-line {{"steps": [...]}}: {snippet(text)}')


def geval_score(text: str, max_score: int = 10) -> tuple[float, str | None]:
    for line in text.splitlines():
        m = re.search(r"\{.*\}", line)
        if m:
            try:
                obj = json.loads(m.group(0))
            except ValueError:
                continue
            if isinstance(obj, dict) and "score" in obj:
                raw = _number(obj["score"])
                if raw is None or not 0 <= raw <= max_score:
                    raise Unparsable(f"g-eval score {obj['score']!r} is not a number in "
                                     f"[0, {max_score}]")
                if not isinstance(obj.get("reason"), str) or not obj["reason"].strip():
                    raise Unparsable(f"g-eval reply has no reason: {snippet(text)}")
                return raw / max_score, obj["reason"]
    raise Unparsable(f'g-eval reply has no one-line {{"score": ...}}: {snippet(text)}')


def _number(value: Any) -> float | None:
    """A finite number, or a numeric string (promptfoo's Number()); else None."""
    if isinstance(value, str) and value.strip():
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def attributed(text: str) -> float:
    lines = [ln.lower() for ln in text.splitlines() if ln.strip()]
    classified = [ln for ln in lines if "[attributed]" in ln or "[not attributed]" in ln]
    if not classified:
        raise Unparsable(f"context-recall reply classifies no sentence: {snippet(text)}")
    return sum("[attributed]" in ln for ln in classified) / len(classified)


_MARKER_ONLY = re.compile(r"^\d+[.)]$")
_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*])\s*")


def lines(text: str) -> list[str]:
    """The non-blank lines, as they are (promptfoo's splitIntoSentences)."""
    return [ln for ln in text.split("\n") if ln.strip()]


def sentences(text: str) -> list[str]:
    """Units of a text: its non-blank lines when it has two or more, else its sentences
    (split after . ! ?); bare list markers ("1.") are no unit."""
    found = lines(text)
    parts = found if len(found) > 1 else re.split(r"(?<=[.!?])\s+", text)
    return [p.strip() for p in parts if p.strip() and not _MARKER_ONLY.match(p.strip())]


def relevant_units(text: str, context: str, presegmented: bool) -> int:
    """context-relevance: distinct units the judge quoted (by line for a context given by line
    or chunk, else by sentence); 0 for "Insufficient Information". A reply quoting nothing of
    the context is unreadable."""
    if "Insufficient Information" in text:
        return 0
    quoted = set(lines(text) if presegmented else sentences(text))
    flat = " ".join(context.lower().split())
    if quoted and not any(" ".join(_LIST_MARKER.sub("", q, count=1).lower().split()) in flat
                          for q in quoted):
        raise Unparsable(f"context-relevance reply quotes nothing of the context: {snippet(text)}")
    return len(quoted)


def nli_supported(text: str, statements: int) -> float:
    """Share of statements supported; a statement without a verdict is unsupported."""
    low = text.lower().strip()
    marker = "final verdict for each statement in order:"
    if marker in low:
        verdicts = [p for p in low[low.index(marker) + len(marker):].split(".") if p.strip()]
        if not verdicts or not all(re.search(r"\b(?:yes|no)\b", v) for v in verdicts):
            raise Unparsable(f"faithfulness reply has unreadable verdicts: {snippet(text)}")
        unsupported = sum("yes" not in v for v in verdicts) + max(0, statements - len(verdicts))
    else:
        no, yes = low.count("verdict: no"), low.count("verdict: yes")
        if not no and not yes:
            raise Unparsable(f"faithfulness reply has no verdicts: {snippet(text)}")
        unsupported = no + max(0, statements - no - yes)
    return min(1.0, max(0.0, 1.0 - unsupported / statements))


def first_digit(text: str) -> int:
    m = re.search(r"\d", text.strip())
    if not m:
        raise Unparsable(f"select-best reply has no index: {snippet(text)}")
    return int(m.group(0))


def _reason(value: Any) -> str | None:
    return None if value is None else str(value)
