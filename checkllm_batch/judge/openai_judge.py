"""The judge over any OpenAI-compatible endpoint, through the `openai` client.

The client's own retries are off (`max_retries=0`): the runner's tenacity layer owns them,
so retries never stack. Errors are classified: 429 / 5xx / timeouts / connection errors may
be retried; 400 / 401 / 404 and `insufficient_quota` may not. A connection refused or a host
that does not resolve is `unreachable` (the runner stops judging when the endpoint never
answered). Every error names the endpoint's URL.
"""

from __future__ import annotations

import time
from dataclasses import replace

import openai

from ..suites.judge import JudgeConfig
from .limiter import parse_duration
from .protocol import JudgeError, Reply, Request


def client(config: JudgeConfig) -> openai.OpenAI:
    return openai.OpenAI(
        api_key=config.api_key(), base_url=config.base_url, timeout=config.timeout,
        max_retries=0,
        http_client=openai.DefaultHttpxClient(limits=_limits(config), timeout=config.timeout))


def _limits(config: JudgeConfig):
    """A connection pool that fits the concurrency (the client's default is 100)."""
    try:  # the HTTP library of openai 3.x; 1.x and 2.x use httpx
        import httpx2 as httpx
    except ImportError:
        import httpx  # type: ignore[no-redef]
    return httpx.Limits(max_connections=max(100, config.concurrency * 2),
                        max_keepalive_connections=max(20, config.concurrency))


STRUCTURED_REFUSED = ("the endpoint rejected structured output (judge `structured: true` / "
                      "--judge-structured sends response_format json_schema): turn the "
                      "setting off, or use a server that constrains replies to a JSON schema")


class OpenAIJudge:
    def __init__(self, config: JudgeConfig):
        self.config = config
        self.client = client(config)

    def redact(self, text: str | None) -> str | None:
        """An endpoint may echo the key (in an error or a reply): it never goes further,
        however short it is."""
        return redact(text, self.client.api_key)

    def redact_reply(self, reply: Reply) -> Reply:
        return replace(reply, text=self.redact(reply.text), error=self.redact(reply.error))

    def send(self, request: Request) -> Reply:
        try:
            return self.redact_reply(self._send(request))
        except JudgeError as e:
            raise JudgeError(self.redact(f"{e} ({request.model} at {self.client.base_url})")
                             or "", retry=e.retry, status=e.status,
                             retry_after=e.retry_after, rate_limited=e.rate_limited,
                             headers=e.headers, structured=e.structured,
                             unreachable=e.unreachable) from None

    def _send(self, request: Request) -> Reply:
        start = time.perf_counter()
        try:
            if request.kind == "embedding":
                raw = self.client.embeddings.with_raw_response.create(**request.body())
            else:
                raw = self.client.chat.completions.with_raw_response.create(**request.body())
        except openai.APIStatusError as e:
            error = classify(e)
            if "response_format" in dict(request.params) and refuses_schema(error):
                raise JudgeError(f"{STRUCTURED_REFUSED}; {error}", retry=False,
                                 status=error.status, structured=True) from None
            raise error from None
        except openai.APITimeoutError:
            raise JudgeError(f"timeout after {self.config.timeout:g}s", retry=True) from None
        except openai.APIConnectionError as e:
            refused = _refused(e)
            raise JudgeError(f"cannot connect: {refused}" if refused
                             else f"connection error: {e}", retry=True,
                             unreachable=refused is not None) from None
        headers = {k.lower(): v for k, v in raw.headers.items()}
        try:
            parsed = raw.parse()
        except Exception as e:  # a 200 whose body is not the endpoint's shape
            raise JudgeError(f"malformed response body: {e}", retry=True) from None
        return to_reply(request, parsed, headers, (time.perf_counter() - start) * 1000)


def _refused(error: openai.APIConnectionError) -> str | None:
    """Why no connection could be made (refused, no such host: httpx's ConnectError), or None
    for a connection lost on the way (worth a retry)."""
    cause = error.__cause__
    if type(cause).__name__ != "ConnectError":
        return None
    text = str(cause) or type(cause).__name__
    return text.split("] ", 1)[-1].lower() if text.startswith("[Errno") else text


def redact(text: str | None, key: str | None) -> str | None:
    """`text` with every occurrence of `key` replaced by ***; "EMPTY" (the placeholder for
    servers that need no key) is no secret."""
    if not text or not key or key == "EMPTY":
        return text
    return text.replace(key, "***")


def to_reply(request: Request, parsed, headers: dict[str, str],
             latency_ms: float | None) -> Reply:
    usage = getattr(parsed, "usage", None)
    prompt = getattr(usage, "prompt_tokens", 0) or 0
    completion = getattr(usage, "completion_tokens", 0) or 0
    if request.kind == "embedding":
        data = getattr(parsed, "data", None) or []
        if not data or not getattr(data[0], "embedding", None):
            raise JudgeError("embedding response has no vector", retry=True)
        return Reply(vector=list(data[0].embedding), prompt_tokens=prompt,
                     latency_ms=latency_ms, headers=headers)
    choices = getattr(parsed, "choices", None) or []
    if not choices:
        raise JudgeError("chat response has no choices", retry=True)
    choice = choices[0]
    text = choice.message.content if choice.message else None
    if choice.finish_reason == "length":
        return Reply(text=text, error="judge reply truncated (finish_reason=length): raise "
                     "max_tokens", prompt_tokens=prompt, completion_tokens=completion,
                     latency_ms=latency_ms, headers=headers)
    if text is None:
        raise JudgeError("chat response has no content", retry=True)
    return Reply(text=text, prompt_tokens=prompt, completion_tokens=completion,
                 latency_ms=latency_ms, headers=headers, logprobs=token_logprobs(choice))


def token_logprobs(choice) -> list[dict] | None:
    """The choice's tokens with their logprobs and top alternatives (None: not given)."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    return [{"token": t.token, "logprob": t.logprob,
             "top_logprobs": [{"token": a.token, "logprob": a.logprob}
                              for a in (t.top_logprobs or [])]} for t in content]


def refuses_schema(error: JudgeError) -> bool:
    """A structured request's failure that says the endpoint will not constrain replies:
    a 400 / 422 (llama.cpp: "Failed to initialize samplers"; OpenAI: response_format not
    supported), or any error naming the setting (llama-cpp-python answers 500 "Input should
    be 'text' or 'json_object'"). Never retried, never silently sent without the schema."""
    text = str(error).lower()
    return error.status in (400, 422) or any(
        word in text for word in ("response_format", "json_schema", "json_object"))


def classify(e: openai.APIStatusError) -> JudgeError:
    status = e.status_code
    headers = {k.lower(): v for k, v in e.response.headers.items()}
    message = f"HTTP {status}: {_message(e)}"
    if status == 429:
        if "insufficient_quota" in message:  # billing, not pacing: retrying cannot help
            return JudgeError(message, retry=False, status=status)
        after = parse_duration(headers.get("retry-after-ms"))
        after = after / 1000 if after is not None else parse_duration(headers.get("retry-after"))
        return JudgeError(message, retry=True, status=status, retry_after=after,
                          rate_limited=True, headers=headers)
    return JudgeError(message, retry=status >= 500 or status in (408, 409), status=status)


def _message(e: openai.APIStatusError) -> str:
    body = e.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            return str(inner.get("code") or "") + " " + str(inner.get("message") or "")
    return str(e.message)[:300]
