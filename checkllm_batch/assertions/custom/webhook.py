"""How the `webhook` type (custom.py) runs: POST each distinct case to a URL, promptfoo's request and response shapes.

Request body: `{"output": ..., "context": {"prompt": ..., "vars": {...}}}`, the vars as
promptfoo processes them (`caseframe.context`), written as JavaScript's JSON.stringify
writes them (3.0 as 3). Response: JSON
with `pass` (required), optional `score` and `reason`. Requests run with bounded concurrency
(`config.concurrency`, default 8), a timeout (`config.timeout_ms`, else `WEBHOOK_TIMEOUT`,
else 5000 ms) and retries with exponential backoff (`config.retries`, default 3) on
transport errors, timeouts, 429 and 5xx. A request that still fails is an `error`, not a fail.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import polars as pl

from ...js.jsvalue import json_stringify
from ..batch import caseframe

RESULT = {"ok": pl.Boolean, "score": pl.Float64, "detail": pl.String}


class _Retryable(Exception):
    pass


def settings(value: Any, spec: Any) -> dict[str, Any]:
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ValueError("value must be an http(s):// URL")
    config = (spec.args.get("config") if spec is not None else None) or {}
    if not isinstance(config, dict):
        raise ValueError("config must be a mapping")
    timeout = config.get("timeout_ms", os.environ.get("WEBHOOK_TIMEOUT", "5000"))
    out = {"url": value, "concurrency": config.get("concurrency", 8),
           "retries": config.get("retries", 3), "timeout": _milliseconds(timeout) / 1000}
    if not (isinstance(out["concurrency"], int) and out["concurrency"] >= 1):
        raise ValueError("config.concurrency must be an integer >= 1")
    if not (isinstance(out["retries"], int) and out["retries"] >= 0):
        raise ValueError("config.retries must be an integer >= 0")
    return out


def _milliseconds(value: Any) -> float:
    try:
        ms = float(value)
    except (TypeError, ValueError, OverflowError):
        ms = math.nan
    if isinstance(value, bool) or not math.isfinite(ms) or ms <= 0:
        raise ValueError(f"config.timeout_ms must be a positive number of milliseconds, "
                         f"got {value!r}")
    return ms


def _post(url: str, body: bytes, timeout: float) -> Any:
    import urllib.error  # here, not at the top: only a suite with a webhook check posts
    import urllib.request

    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return orjson.loads(response.read())
    except urllib.error.HTTPError as e:
        if e.code == 429 or e.code >= 500:
            raise _Retryable(f"HTTP {e.code}") from None
        raise ValueError(f"HTTP {e.code}") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
        raise _Retryable(str(getattr(e, "reason", e))) from None


def _one(cfg: dict[str, Any], row: dict[str, Any]) -> tuple[bool | None, float | None, str | None]:
    # here, not at the top: only a suite with a webhook check needs tenacity
    from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

    ctx = caseframe.context(row)
    body = json_stringify({"output": caseframe.output_value(row.get("output"), row.get("output_kind")),
                           "context": {"prompt": ctx["prompt"], "vars": ctx["vars"]}})
    assert body is not None  # a mapping always stringifies
    retrying = Retrying(stop=stop_after_attempt(cfg["retries"] + 1), reraise=True,
                        wait=wait_exponential(multiplier=0.1, max=2),
                        retry=retry_if_exception(lambda e: isinstance(e, _Retryable)))
    try:
        reply = retrying(_post, cfg["url"], body.encode(), cfg["timeout"])
    except (_Retryable, ValueError, orjson.JSONDecodeError) as e:
        return None, None, f"Webhook error: {e}"
    if not isinstance(reply, dict) or not isinstance(reply.get("pass"), bool):
        return None, None, f"Webhook error: response has no boolean `pass`: {str(reply)[:200]}"
    score = reply.get("score")
    if not isinstance(score, (int, float)) or isinstance(score, bool):
        score = float(reply["pass"])
    reason = reply.get("reason")
    return reply["pass"], float(score), None if reason is None else str(reason)


def post_cases(cfg: dict[str, Any], rows: list[dict]) -> dict[str, list]:
    with ThreadPoolExecutor(max_workers=cfg["concurrency"]) as pool:
        results = list(pool.map(lambda row: _one(cfg, row), rows))  # row-wise: one POST per case
    return {name: [r[i] for r in results] for i, name in enumerate(RESULT)}
