"""Adaptive rate limiting: requests and tokens per minute, learnt from the endpoint.

Calls are paced (not bursted) at the target rate. The target starts at the configured
`rpm` / `tpm`, or at the limits the endpoint announces in `x-ratelimit-limit-*` headers.
A 429 pauses every call for its `Retry-After` and cuts the rate (once per episode); each
success raises it again towards the limit (AIMD). `x-ratelimit-remaining-*` at 0 waits
for `x-ratelimit-reset-*`.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque

HEADROOM = 1.0  # pace at an announced limit (the server allows a little burst)
DECREASE, EPISODE = 0.7, 2.0  # on 429: rate x0.7, at most once per 2 s episode
MIN_RPM = 6.0
PROBE = 0.002  # without a known limit, each success raises the rate by 0.2 %
BURST = 0.25  # seconds of lag a paced stream may catch up at once

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str | None) -> float | None:
    """'6m0s' -> 360.0, '20ms' -> 0.02, '1.5' -> 1.5 (seconds)."""
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        parts = _DURATION.findall(text)
        return sum(float(n) * _UNIT[u] for n, u in parts) if parts else None


class Limiter:
    def __init__(self, rpm: float | None = None, tpm: float | None = None):
        self.cap_rpm, self.cap_tpm = rpm, tpm  # the user's limits: never exceeded
        self.max_rpm, self.max_tpm = rpm, tpm  # the ceilings the rate climbs back to
        self.rpm = rpm  # current target (None: not paced until a limit is known)
        self.lock = threading.Lock()
        self.next_request = self.next_token = self.paused_until = 0.0
        self.last_cut = 0.0
        self.done: deque[float] = deque(maxlen=2000)

    def acquire(self, tokens: int) -> None:
        """Block until a call estimated at `tokens` tokens may start."""
        with self.lock:
            now = time.monotonic()
            start = max(now, self.paused_until)
            if self.rpm:
                self.next_request = max(self.next_request, now - BURST)
                start = max(start, self.next_request)
                self.next_request = start + 60.0 / self.rpm
            if self.max_tpm:
                self.next_token = max(self.next_token, now - BURST)
                start = max(start, self.next_token)
                self.next_token = start + 60.0 * tokens / self.max_tpm
        if start > now:
            time.sleep(start - now)

    def success(self, headers: dict[str, str]) -> None:
        with self.lock:
            now = time.monotonic()
            self.done.append(now)
            self._learn(headers, now)
            if self.rpm and self.max_rpm:  # additive increase towards the ceiling
                self.rpm = min(self.max_rpm, self.rpm + self.max_rpm * 0.01)
            elif self.rpm:  # no known ceiling: probe upwards until the next 429
                self.rpm += max(0.5, self.rpm * PROBE)

    def throttle(self, retry_after: float | None, headers: dict[str, str]) -> None:
        """A 429: pause everyone for Retry-After, and cut the rate once per episode."""
        with self.lock:
            now = time.monotonic()
            self._learn(headers, now)
            self.paused_until = max(self.paused_until,
                                    now + (1.0 if retry_after is None else retry_after))
            if now - self.last_cut < EPISODE:
                return
            self.last_cut = now
            if self.rpm is None:  # not paced yet: start from what was achieved, if anything
                recent = [t for t in self.done if t > now - 2.0]
                if not recent:
                    return  # nothing to go by: Retry-After alone
                self.rpm = len(recent) * 30.0
            self.rpm = max(MIN_RPM, self.rpm * DECREASE)

    def _learn(self, headers: dict[str, str], now: float) -> None:
        limit = _number(headers.get("x-ratelimit-limit-requests"))
        if limit:
            ceiling = limit * HEADROOM
            self.max_rpm = min(ceiling, self.cap_rpm) if self.cap_rpm else ceiling
            self.rpm = self.max_rpm if self.rpm is None else min(self.rpm, self.max_rpm)
        tokens = _number(headers.get("x-ratelimit-limit-tokens"))
        if tokens:
            ceiling = tokens * HEADROOM
            self.max_tpm = min(ceiling, self.cap_tpm) if self.cap_tpm else ceiling
        for kind in ("requests", "tokens"):
            if _number(headers.get(f"x-ratelimit-remaining-{kind}")) == 0:
                reset = parse_duration(headers.get(f"x-ratelimit-reset-{kind}"))
                if reset:
                    self.paused_until = max(self.paused_until, now + reset)


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None
