"""Judge settings: one typed, documented object, recorded with every run (never the key)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from ..errors import ConfigError, did_you_mean

# USD per 1M tokens (input, output), synchronous prices. Batch mode bills half.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00), "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00), "gpt-4.1-mini": (0.40, 1.60), "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00), "gpt-5-mini": (0.25, 2.00), "gpt-5-nano": (0.05, 0.40),
    "o4-mini": (1.10, 4.40),
    "text-embedding-3-large": (0.13, 0.0), "text-embedding-3-small": (0.02, 0.0),
}


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
    """

    model: str | None = None
    embedding_model: str = "text-embedding-3-large"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 16
    rpm: float | None = None
    tpm: float | None = None
    timeout: float = 60.0
    retries: int = 6
    max_cost: float | None = None
    cache: bool = True
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    mode: str = "online"
    temperature: float | None = 0.0
    max_tokens: int | None = 1024
    batch_poll_seconds: float = 10.0
    backoff_initial: float = 0.5  # seconds, the first wait between attempts (then doubling)
    backoff_max: float = 60.0  # seconds, the longest wait between attempts

    @classmethod
    def from_sources(cls, suite: dict[str, Any] | None = None, **options: Any) -> JudgeConfig:
        """The suite's `judge:` block, then command-line options (not None) over it."""
        names = {f.name for f in fields(cls)}
        raw = {**(suite or {}), **{k: v for k, v in options.items() if v is not None}}
        bad = [k for k in raw if k not in names]
        if bad:
            raise ConfigError([f'judge: unknown setting "{k}"' + did_you_mean(k, names)
                               for k in bad])
        prices = {m: tuple(map(float, p)) for m, p in (raw.pop("prices", None) or {}).items()}
        config = replace(cls(), **raw, prices=prices)
        config.check()
        return config

    def check(self) -> None:
        problems = []
        if self.mode not in ("online", "batch"):
            problems.append(f'judge: mode must be "online" or "batch", got {self.mode!r}')
        for name in ("concurrency", "rpm", "tpm", "timeout"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, (int, float)) or value <= 0):
                problems.append(f"judge: {name} must be a positive number, got {value!r}")
        if self.max_cost is not None and self.max_cost < 0:
            problems.append(f"judge: max_cost must be >= 0, got {self.max_cost!r}")
        if self.max_cost is not None and self.model and self.price(self.model) is None:
            problems.append(f"judge: no price known for {self.model!r}: a budget needs one "
                            f"(judge: prices: {{{self.model}: [input, output]}}, "
                            "USD per 1M tokens)")
        if problems:
            raise ConfigError(problems)

    @property
    def enabled(self) -> bool:
        return bool(self.model)

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
        raise ConfigError([f"judge: set {self.api_key_env} (the judge's API key) or a base_url"])

    def record(self) -> dict[str, Any]:
        """What is stored with the run: every setting, the key's variable name, never the key."""
        return asdict(self)
