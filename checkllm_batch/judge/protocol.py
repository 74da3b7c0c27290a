"""A tiny judge protocol: a Request goes in, a Reply comes out (or a JudgeError is raised).

Two implementations: `OpenAIJudge` (any OpenAI-compatible endpoint, over HTTP) and
`ScriptedJudge` (in-process, for unit tests). Everything else (dedup, cache, limits,
retries, budget) sits around the protocol, in a `JudgeRunner`: what model-graded types
send their requests through (`Runner` in a process, `RecordingRunner` on a Ray worker).
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol


@dataclass(frozen=True)
class Request:
    """One judge call. Its hash (model, full messages or input, parameters) is its identity;
    `repeat` (the n-th grading of the same request, at the judge's temperature) is part of
    it from the second on, so each repeat is cached apart and the first keeps its hash."""

    kind: str  # "chat" or "embedding"
    model: str
    messages: tuple[tuple[str, str], ...] = ()  # (role, content), for chat
    input: str | None = None  # for embedding
    params: tuple[tuple[str, Any], ...] = ()  # sorted (name, value): temperature, max_tokens...
    repeat: int = 0  # not sent: the endpoint sees the same body each time

    def body(self) -> dict[str, Any]:
        """The JSON body sent to the endpoint (no key, no headers)."""
        if self.kind == "embedding":
            return {"model": self.model, "input": self.input}
        return {"model": self.model, **dict(self.params),
                "messages": [{"role": r, "content": c} for r, c in self.messages]}

    @property
    def hash(self) -> str:
        identity = [self.kind, self.body()] + ([self.repeat] if self.repeat else [])
        text = json.dumps(identity, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def url(self) -> str:
        return "/v1/embeddings" if self.kind == "embedding" else "/v1/chat/completions"

    @property
    def deterministic(self) -> bool:
        """Sampled at temperature 0: the same request gets the same reply (near enough: a
        server may differ in the last bits, never from unreadable to readable)."""
        return self.kind == "chat" and dict(self.params).get("temperature") == 0

    def prompt_chars(self) -> int:
        return len(self.input or "") + sum(len(c) for _, c in self.messages)


def chat(model: str, messages: list[tuple[str, str]], repeat: int = 0, **params: Any) -> Request:
    return Request("chat", model, tuple(messages),
                   params=tuple(sorted((k, v) for k, v in params.items() if v is not None)),
                   repeat=repeat)


def embedding(model: str, text: str) -> Request:
    return Request("embedding", model, input=text)


@dataclass
class Reply:
    """What came back: the text (chat) or vector (embedding), or why there is none."""

    text: str | None = None
    vector: list[float] | None = None
    error: str | None = None  # set: the call failed (after retries), was not sent, ...
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    latency_ms: float | None = None
    attempts: int = 0
    cached: bool = False
    known_unreadable: bool = False  # from judge_calls: a reply already found unreadable
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    request_hash: str | None = None  # set by the runner: the request this answers
    # each generated token's logprob and top alternatives, when asked (judge top_logprobs):
    # [{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}]
    logprobs: list[dict[str, Any]] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class JudgeError(Exception):
    """A call failed. `retry` says whether trying again may help; `retry_after` in seconds."""

    def __init__(self, message: str, *, retry: bool, status: int | None = None,
                 retry_after: float | None = None, rate_limited: bool = False,
                 headers: dict[str, str] | None = None, structured: bool = False,
                 unreachable: bool = False):
        super().__init__(message)
        self.retry, self.status, self.retry_after = retry, status, retry_after
        self.rate_limited, self.headers = rate_limited, headers or {}
        self.structured = structured  # the endpoint refuses response_format: ask no more
        self.unreachable = unreachable  # no connection at all (refused, no such host)


@dataclass
class Stats:
    graded: int = 0  # (case, assertion) pairs graded by the judge
    requested: int = 0  # requests built from their distinct inputs, before de-duplication
    unique: int = 0  # distinct requests
    cached: int = 0  # answered from judge_calls
    sent: int = 0  # sent (or, in a dry run, planned to be sent)
    failed: int = 0
    unparsed: int = 0  # replies the grader could not read (recorded as such)
    known_unreadable: int = 0  # of `cached`: replies found unreadable before, at temperature
    # 0, answered from judge_calls (asking again would give the same reply): not sent
    retries: int = 0
    est_tokens: int = 0  # dry run: estimated prompt + completion tokens of what would be sent
    est_cost: float = 0.0
    # a judge cascade's dry run: per stage, its models and the calls and cost estimated
    stages: list[dict[str, Any]] = field(default_factory=list)


class JudgeRunner(ABC):
    """What a model-graded type sends its requests through: a set in, an answer (or an
    error) for each out; a reply it could not read is reported back."""

    stats: Stats

    @abstractmethod
    def run(self, requests: list[Request]) -> dict[str, Reply]:
        """An answer (or an error) for every request, by hash."""

    @abstractmethod
    def unparsed(self, reply: Reply) -> None:
        """The grader could not read this reply: it must not be served again."""


class Judge(Protocol):
    def send(self, request: Request) -> Reply:
        """Send one request; raise JudgeError on failure."""


class ScriptedJudge:
    """In-process judge for unit tests: `answer(request)` gives the reply text (or vector)."""

    def __init__(self, answer: Callable[[Request], str | list[float]]):
        self.answer = answer
        self.sent: list[Request] = []

    def send(self, request: Request) -> Reply:
        self.sent.append(request)
        out = self.answer(request)
        if isinstance(out, Exception):
            raise out
        if isinstance(out, list):
            return Reply(vector=out, prompt_tokens=len(request.input or "") // 4 + 1)
        return Reply(text=out, prompt_tokens=request.prompt_chars() // 4 + 1,
                     completion_tokens=len(out) // 4 + 1)
