"""What reading a judge reply shares across the model-graded types: a reply we cannot read
raises Unparsable (the assertion is an error with that reason, never a pass and never a
silent 0); the first JSON object in a reply, read as promptfoo reads it; scores in [0, 1],
booleans and reasons. Each type's own parser is in its module."""

from __future__ import annotations

import json
import math
import re
from typing import Any, Iterable

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


def reason_text(value: Any) -> str | None:
    return None if value is None else str(value)


# The verdict token's probability: how sure the judge was (a cascade stage's `logprobs`
# confidence, evaluate/judging/certify.py).
_PASS_KEY = re.compile(r'"pass"\s*:\s*$')

# a reply's logprobs: each generated token with its logprob and its top alternatives
Token = dict[str, Any]  # {"token": str, "logprob": float, "top_logprobs": [{token, logprob}]}


def side(token: str) -> bool | None:
    """True / False for a token that reads as a pass / fail word, None for any other."""
    word = token.strip().strip('"\'.,:;!()[]{}').lower()
    return True if word in _TRUE else False if word in _FALSE else None


def verdict_position(tokens: list[Token]) -> int | None:
    """The index of the token that gave the verdict: the JSON `pass` value's, else the last
    token reading as a verdict word; None when there is none."""
    text, last = "", None
    for i, token in enumerate(tokens):
        piece = token.get("token") or ""
        if piece.strip() and _PASS_KEY.search(text):
            return i if side(piece) is not None else None
        if side(piece) is not None:
            last = i
        text += piece
    return None if '"pass"' in text else last


def verdict_probability(tokens: list[Token] | None) -> float | None:
    """The probability of the verdict the reply gave, over the pass and fail readings of its
    verdict token's alternatives (the token itself included); None: no verdict token, or no
    alternative on either side to weigh it by."""
    if not tokens:
        return None
    at = verdict_position(tokens)
    if at is None:
        return None
    chosen = side(tokens[at]["token"])
    sides = {True: 0.0, False: 0.0}
    for alt in _alternatives(tokens[at]):
        reads = side(alt["token"])
        if reads is not None:
            sides[reads] += math.exp(alt["logprob"])
    total = sides[True] + sides[False]
    return None if total <= 0 or chosen is None else sides[chosen] / total


def _alternatives(token: Token) -> Iterable[Token]:
    """The position's top alternatives, the token itself counted once."""
    seen = set()
    for alt in [token, *(token.get("top_logprobs") or [])]:
        if alt.get("logprob") is None or alt["token"] in seen:
            continue
        seen.add(alt["token"])
        yield alt
