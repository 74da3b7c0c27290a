"""A certified judge cascade in the suite's `judge:` block: its stages and what it promises.

    judge:
      cascade:
        - {model: small, confidence: repeats, repeat: 5, temperature: 0.8}  # or logprobs, jury
        - {model: large}
      agreement: 0.9        # with the reference, among the rows a stage keeps
      risk: 0.1             # the promise holds with probability 1 - risk
      reference: last       # or a label name (people's labels)
      calibration: 300      # random cases graded by every stage
      abstain: person       # rows no stage keeps: listed for a person (or `last`: its verdict)

Each stage takes the settings a `judge:` block takes, over the block's own (a stage names
its own model or jury). Every stage needs a usable confidence (confidence.py) except the
last when it is the reference: `repeats` (repeat >= 2 at a temperature above 0), `jury`
(two jurors or more; a jury's stage uses it unless told otherwise), or `logprobs` (the
verdict token's probability, asked of the server with each request). Everything is checked
here, at parse time, every problem named by file and field.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Mapping

from ..errors import Problem, Where, did_you_mean
from .judge import CASCADE_FIELDS, JudgeConfig
from .problems import at, validate

CONFIDENCES = ("logprobs", "repeats", "jury")
TOP_LOGPROBS = 5  # alternatives asked for the verdict token: enough to see both sides
_LABEL = re.compile(r"[A-Za-z_][\w-]{0,127}")
# settings of the whole cascade, never of one stage
_NOT_IN_STAGE = (*CASCADE_FIELDS, "max_cost", "cache")


@dataclass(frozen=True)
class Stage:
    """One stage: the judge settings it grades with, and how it is sure (None: the last
    stage, the reference, keeps every row it is given)."""

    index: int
    config: JudgeConfig
    confidence: str | None

    @property
    def name(self) -> str:
        return f"stage {self.index + 1} ({', '.join(self.config.jurors)})"

    def record(self) -> dict[str, Any]:
        return {"stage": self.index + 1, "models": list(self.config.jurors),
                "confidence": self.confidence, "repeat": self.config.repeat,
                "vote": self.config.vote, "temperature": self.config.temperature}


def stages(config: JudgeConfig) -> tuple[Stage, ...]:
    """The cascade's stages (none: no cascade), each with its settings over the block's."""
    if not config.cascade:
        return ()
    base = replace(config, model=None, models=None, cascade=None)
    last = len(config.cascade) - 1
    out = []
    for i, raw in enumerate(config.cascade):
        settings = {k: v for k, v in raw.items() if k != "confidence"}
        stage = replace(base, **settings)
        confidence = raw.get("confidence") or _implied(stage)
        if i == last and config.reference == "last":
            confidence = None
        if confidence == "logprobs" and stage.top_logprobs is None:
            stage = replace(stage, top_logprobs=TOP_LOGPROBS)
        out.append(Stage(i, stage, confidence))
    return tuple(out)


def _implied(config: JudgeConfig) -> str | None:
    """The confidence a stage has without being told: its jury's vote share, or its
    repeats' agreement."""
    if config.models and len(config.models) > 1:
        return "jury"
    return "repeats" if config.repeat > 1 else None


def fewest(agreement: float, risk: float) -> int:
    """The fewest kept calibration rows any test can certify: agreement ** n <= risk (even n
    agreeing of n certify no less)."""
    return max(1, math.ceil(math.log(risk) / math.log(agreement) - 1e-12))


def problems(config: JudgeConfig, where: Where) -> list[Problem]:
    """Every problem of a cascade built in code (a JudgeConfig)."""
    return check({k: v for k, v in asdict(config).items() if v is not None}, where) \
        if config.cascade else []


def check(raw: Mapping[str, Any], where: Where) -> list[Problem]:
    """Every problem of the cascade in a `judge:` mapping (none without one)."""
    chain = raw.get("cascade")
    if chain is None:
        return []
    if not isinstance(chain, (list, tuple)) or not chain:
        return [Problem(where, "cascade must list its stages, cheapest first "
                        "(cascade: [{model: small, confidence: logprobs}, {model: large}])")]
    found = _block(raw, chain, where)
    reference = raw.get("reference", "last")
    for i, stage in enumerate(chain):
        here = at(stage, replace(where, test=f"judge cascade stage {i + 1}"))
        last = i == len(chain) - 1
        found += _stage(stage, raw, here, reference == "last" and last)
    return found


def _block(raw: Mapping[str, Any], chain: list | tuple, where: Where) -> list[Problem]:
    """The cascade's own settings."""
    found = []
    if raw.get("model") or raw.get("models"):
        found.append(Problem(where, "a cascade names its models in its stages: remove "
                             "judge `model` / `models`"))
    reference = raw.get("reference", "last")
    if not isinstance(reference, str) or not _LABEL.fullmatch(reference):
        found.append(Problem(where, f"reference must be `last` or a label name, got "
                             f"{reference!r}"))
    elif reference == "last" and len(chain) < 2:
        found.append(Problem(where, "a cascade whose reference is its last stage needs two "
                             "stages at least (or reference: a label name)"))
    agreement, risk = raw.get("agreement", 0.9), raw.get("risk", 0.1)
    calibration = raw.get("calibration", 300)
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool)
                  for v in (agreement, risk, calibration))
    if numbers and 0 < agreement < 1 and 0 < risk < 1 and calibration >= 1:
        need = fewest(agreement, risk)
        if calibration < need:
            found.append(Problem(where, f"calibration: {calibration} cases cannot certify "
                                 f"agreement {agreement} at risk {risk}: even all agreeing, "
                                 f"{need} are needed (a few hundred in practice)"))
    return found


def _stage(stage: Any, raw: Mapping[str, Any], where: Where, reference: bool) -> list[Problem]:
    if not isinstance(stage, Mapping):
        return [Problem(where, f"a stage is a mapping of judge settings ({{model: small, "
                        f"confidence: logprobs}}), got {stage!r}")]
    found = [Problem(where, f"{k} is a setting of the whole cascade, not of one stage")
             for k in stage if k in _NOT_IN_STAGE]
    known = [f.name for f in fields(JudgeConfig) if f.name not in _NOT_IN_STAGE]
    found += [Problem(where, f"unknown stage setting {k!r}" + did_you_mean(
        str(k), [*known, "confidence"])) for k in stage
        if k not in (*known, *_NOT_IN_STAGE, "confidence")]
    settings = {k: v for k, v in stage.items() if k in known}
    found += validate(JudgeConfig, settings, where, "judge setting")
    if not (settings.get("model") or settings.get("models")):
        found.append(Problem(where, "a stage names its judge: model or models"))
    if found:
        return found
    base = {k: v for k, v in raw.items() if k not in (*CASCADE_FIELDS, "model", "models")}
    config = JudgeConfig(**{**base, **settings})
    return found + _confidence(stage.get("confidence"), config, where, reference)


def _confidence(given: Any, config: JudgeConfig, where: Where,
                reference: bool) -> list[Problem]:
    """A stage's confidence, usable or refused."""
    if given is not None and given not in CONFIDENCES:
        return [Problem(where, f"confidence must be one of {', '.join(CONFIDENCES)}, got "
                        f"{given!r}" + did_you_mean(str(given), CONFIDENCES))]
    confidence = given or _implied(config)
    if confidence is None:
        if reference:
            return []
        return [Problem(where, "this stage has no confidence to be trusted by: give "
                        "confidence: logprobs, or repeat: 5 with a temperature above 0 "
                        "(repeats), or a jury (models: [a, b, c])")]
    if confidence == "repeats" and (config.repeat < 2 or config.temperature == 0):
        return [Problem(where, f"confidence: repeats needs repeat: 2 or more at a "
                        f"temperature above 0 (got repeat {config.repeat}, temperature "
                        f"{config.temperature}): repeats at temperature 0 repeat one answer")]
    if confidence == "jury" and not (config.models and len(config.models) > 1):
        return [Problem(where, "confidence: jury needs a jury (models: [a, b, c])")]
    if confidence == "logprobs" and config.mode == "batch":
        return [Problem(where, "confidence: logprobs needs mode: online (the Batch API's "
                        "replies are not read for logprobs)")]
    return []
