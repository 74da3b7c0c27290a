"""Judge settings: one typed, documented object, recorded with every run (never the key)."""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, Strict, TypeAdapter

from ..errors import ConfigError, Problem, Where, did_you_mean
from .problems import validate
from .schema import Number, Str

Positive = Annotated[Number, Field(gt=0)]
NonNegative = Annotated[Number, Field(ge=0)]
# the name of an environment variable, never a key given here by mistake (its value is not
# shown in errors, nor stored)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def _env_name(value: str) -> str:
    if not _ENV_NAME.fullmatch(value):
        raise ValueError("must name an environment variable (e.g. OPENAI_API_KEY), not hold "
                         "the key (the value given is not shown)")
    return value


EnvName = Annotated[str, Strict(), AfterValidator(_env_name)]

# how a jury's verdicts make one: most jurors, every juror, any juror, mean score vs threshold
VOTES = ("majority", "all", "any", "mean")


def _vote(value: str) -> str:
    if value not in VOTES:
        raise ValueError(f"must be one of {', '.join(VOTES)}"
                         + did_you_mean(value, VOTES))
    return value


Vote = Annotated[str, Strict(), AfterValidator(_vote)]

# USD per 1M tokens (input, output), synchronous prices. Batch mode bills half.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00), "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00), "gpt-4.1-mini": (0.40, 1.60), "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00), "gpt-5-mini": (0.25, 2.00), "gpt-5-nano": (0.05, 0.40),
    "o4-mini": (1.10, 4.40),
    "text-embedding-3-large": (0.13, 0.0), "text-embedding-3-small": (0.02, 0.0),
}


CASCADE_FIELDS = ("cascade", "agreement", "risk", "reference", "calibration", "abstain")


@dataclass(frozen=True)
class JudgeConfig:
    """How model-graded assertions reach their judge.

    model: chat model that grades (None: no judge, graded assertions end as errors).
    embedding_model: for `similar` and `answer-relevance`.
    base_url: an OpenAI-compatible endpoint (None: api.openai.com).
    api_key_env: the environment variable holding the key (the key itself is never stored).
    concurrency: calls in flight at most. rpm / tpm: requests and tokens per minute
    (None: learnt from the endpoint's x-ratelimit-* headers). timeout: seconds per call.
    retries: attempts after the first, on 429 / 5xx / timeouts / connection errors.
    cache: answer from judge_calls recorded earlier (False: --no-cache, send every call).
    max_cost: USD budget for the run (None: unlimited). prices: USD per 1M (input, output)
    tokens per model, over the built-in table. mode: "online" or "batch" (OpenAI Batch API).
    structured: send each chat request with `response_format` json_schema, the shape its
    graded type reads, so the server constrains the reply to it (off: promptfoo's requests).
    """

    __pydantic_config__ = ConfigDict(extra="forbid", allow_inf_nan=False)

    model: Str | None = None
    embedding_model: Str = "text-embedding-3-large"
    base_url: Str | None = None
    api_key_env: EnvName = "OPENAI_API_KEY"
    concurrency: Annotated[int, Strict(), Field(gt=0)] = 16
    rpm: Positive | None = None
    tpm: Positive | None = None
    timeout: Positive = 60.0
    retries: Annotated[int, Strict(), Field(ge=0)] = 6
    max_cost: NonNegative | None = None
    cache: Annotated[bool, Strict()] = True  # False: ask again even what judge_calls holds
    prices: dict[Str, tuple[NonNegative, NonNegative]] = field(default_factory=dict)
    mode: Literal["online", "batch"] = "online"
    temperature: NonNegative | None = 0.0
    max_tokens: Annotated[int, Strict(), Field(gt=0)] | None = 1024
    structured: Annotated[bool, Strict()] = False
    batch_poll_seconds: Positive = 10.0
    backoff_initial: NonNegative = 0.5  # seconds, the first wait between attempts (then doubling)
    backoff_max: NonNegative = 60.0  # seconds, the longest wait between attempts
    models: tuple[Str, ...] | None = None  # a jury (instead of `model`)
    vote: Vote = "majority"
    repeat: Annotated[int, Strict(), Field(ge=1)] = 1
    # ask each chat reply's token logprobs with this many alternatives (None: not asked); a
    # cascade stage with `confidence: logprobs` asks 5
    top_logprobs: Annotated[int, Strict(), Field(ge=1, le=20)] | None = None
    # a certified cascade (suites/cascade.py): its stages, each a mapping of these settings
    # over the block's own, and what it promises; recorded only when a cascade is given
    cascade: tuple[dict[Str, Any], ...] | None = None
    agreement: Annotated[Number, Field(gt=0, lt=1)] = 0.9
    risk: Annotated[Number, Field(gt=0, lt=1)] = 0.1
    reference: Str = "last"  # or a label name
    calibration: Annotated[int, Strict(), Field(ge=1)] = 300
    abstain: Literal["person", "last"] = "person"

    @classmethod
    def from_sources(cls, suite: dict[str, Any] | None = None, **options: Any) -> JudgeConfig:
        """The suite's `judge:` block, then command-line options (not None) over it."""
        given = {k: v for k, v in options.items() if v is not None}
        suite = {k: v for k, v in (suite or {}).items()  # a model or jury given on the
                 if not ({"model", "models"} & set(given) and k in ("model", "models",
                                                                     "cascade"))}
        raw = {**suite, **given}  # command line replaces the suite's, whichever it names
        _raise(validate(cls, raw, Where("judge"), "judge setting"))
        config = TypeAdapter(cls).validate_python(raw)
        config._check_jury()
        config._check_cascade()
        config._check_price()
        return config

    def check(self) -> JudgeConfig:
        """Every setting's type and range, also for a config built in code (a dataclass
        does not check what it is given); ConfigError lists what is wrong."""
        _raise(validate(type(self), asdict(self), Where("judge"), "judge setting"))
        self._check_jury()
        self._check_cascade()
        self._check_price()
        return self

    def _check_cascade(self) -> None:
        from .cascade import problems

        _raise(problems(self, Where("judge")))

    def _check_jury(self) -> None:
        """A jury names its jurors in `models`, never beside a `model`."""
        found = []
        if self.models is not None and self.model:
            found.append(f"give model or models, not both (did you mean \"models: "
                         f"[{', '.join([self.model, *self.models])}]\"?)")
        if self.models is not None and not self.models:
            found.append("models is empty: name the jurors (models: [a, b, c]) or give one "
                         "model (did you mean \"model\"?)")
        if self.models and len(set(self.models)) < len(self.models):
            found.append(f"models names a juror twice ({list(self.models)}): to grade more "
                         "than once, use repeat")
        _raise([Problem(Where("judge"), message) for message in found])

    def _check_price(self) -> None:
        if self.max_cost is None:
            return
        for model in self.jurors:
            if self.price(model) is None:
                raise ConfigError([Problem(Where("judge"), f"no price known for {model!r}: a "
                                           f"budget needs one (judge: prices: {{{model}: "
                                           "[input, output]}, USD per 1M tokens)")])

    @property
    def jurors(self) -> tuple[str, ...]:
        """The models that grade: the jury, or the one model (none: no judge); a cascade's:
        every stage's."""
        if self.cascade:
            from .cascade import stages

            return tuple(dict.fromkeys(j for s in stages(self) for j in s.config.jurors))
        if self.models:
            return tuple(self.models)
        return (self.model,) if self.model else ()

    @property
    def enabled(self) -> bool:
        return bool(self.jurors)

    def price(self, model: str) -> tuple[float, float] | None:
        price = self.prices.get(model) or PRICES.get(model)
        if price is None:
            return None
        return (price[0] / 2, price[1] / 2) if self.mode == "batch" else price

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        price = self.price(model)
        if price is None:
            return None
        return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6

    def api_key(self) -> str:
        key = os.environ.get(self.api_key_env)
        if key:
            return key
        if self.base_url:  # local OpenAI-compatible servers often need no key
            return "EMPTY"
        if self._key_env_shown() == self.api_key_env:
            raise ConfigError([Problem(Where("judge"), f"set {self.api_key_env} (the judge's "
                                       "API key) or a base_url")])
        raise ConfigError([Problem(Where("judge"), "api_key_env names no variable of the "
                                   "environment, and looks like a key given by mistake (it is "
                                   "not shown): give the NAME of the variable holding the key, "
                                   "e.g. OPENAI_API_KEY")])

    def record(self) -> dict[str, Any]:
        """What is stored with the run: every setting, the key's variable name, never the key."""
        out = {**asdict(self), "api_key_env": self._key_env_shown()}
        if not self.cascade:  # a run without a cascade records what it always did
            for name in CASCADE_FIELDS:
                out.pop(name)
        if self.top_logprobs is None:
            out.pop("top_logprobs")
        return out

    def _key_env_shown(self) -> str:
        """The key's variable name, as it may be shown: a name that is neither set in the
        environment nor written as variables are (upper case) may be a key given by mistake,
        and is withheld."""
        name = self.api_key_env
        return name if name in os.environ or name.upper() == name else "(withheld)"


def _raise(found: list[Problem]) -> None:
    if found:
        raise ConfigError(found)
