"""Send a set of judge requests: de-duplicated, answered from the ledger when possible,
then budgeted, rate-limited and retried, each answer recorded as it completes. An endpoint
that cannot be connected to before it ever answered (refused, no such host) stops the
judging of the run at once: the rest end as errors naming it, none retried."""

from __future__ import annotations

import random
import threading
import warnings
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from tqdm import tqdm

from ..suites.judge import JudgeConfig
from .budget import EXHAUSTED, Budget
from .ledger import Ledger
from .limiter import Limiter
from .protocol import Judge, JudgeError, JudgeRunner, Reply, Request, Stats

DRY = "dry run: not sent"
RATE_LIMITED_PATIENCE = 4


class Runner(JudgeRunner):
    def __init__(self, config: JudgeConfig, judge: Judge | None, ledger: Ledger, *,
                 dry_run: bool = False, progress: bool = False):
        self.config, self.judge, self.ledger, self.dry_run = config, judge, ledger, dry_run
        self.limiter = Limiter(config.rpm, config.tpm)
        self.budget = Budget(config.max_cost)
        self.stats = Stats()
        self.unread: dict[str, Reply] = {}  # unparsed replies: not asked again in this run
        self.refused: str | None = None  # why the endpoint refuses structured output, once seen
        self.reached = False  # the endpoint answered once (even with an HTTP error)
        self.unreachable: str | None = None  # why judging stopped: no connection at all
        self.stopping = threading.Lock()
        self.bar = tqdm(total=0, unit="calls", desc="judge", leave=False,
                        disable=None if progress else True)
        self.pool = ThreadPoolExecutor(max_workers=config.concurrency)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.bar.close()

    def run(self, requests: list[Request]) -> dict[str, Reply]:
        """An answer (or an error) for every request, by hash."""
        unique = {r.hash: r for r in requests}
        self.stats.requested += len(requests)
        self.stats.unique += len(unique)
        final = {h for h, r in unique.items() if r.deterministic}
        replies = self.ledger.lookup(list(unique), final) if self.config.cache else {}
        self.stats.cached += len(replies)
        self.stats.known_unreadable += sum(r.known_unreadable for r in replies.values())
        replies.update((h, self.unread[h]) for h in unique if h in self.unread)
        missing = [r for h, r in unique.items() if h not in replies]
        if self.dry_run:
            return {**replies, **self._plan(missing)}
        if missing:
            self.bar.total = (self.bar.total or 0) + len(missing)
            self.bar.refresh()
            if self.config.mode == "batch":
                from .batch import run_batches

                replies.update(run_batches(self, self.judge, missing))
            else:
                replies.update(self._online(missing))
        for h, reply in replies.items():
            reply.request_hash = h
        return replies

    def unparsed(self, reply: Reply) -> None:
        """The grader could not read this reply: it is recorded so, and not asked again in
        this run. At temperature 0 it is final: later runs read it from judge_calls (and
        find it unreadable again) without a call. Otherwise the next run asks again, once."""
        if reply.request_hash is None or reply.request_hash in self.unread:
            return
        self.unread[reply.request_hash] = reply
        if reply.known_unreadable:  # counted when it was read from judge_calls
            return
        self.stats.unparsed += 1
        if not self.dry_run:
            self.ledger.unparsed(reply.request_hash)

    def estimate(self, request: Request) -> tuple[int, int, float]:
        """(prompt tokens, completion tokens, cost) before sending: ~4 characters a token."""
        prompt = request.prompt_chars() // 4 + 8
        completion = 0 if request.kind == "embedding" else (self.config.max_tokens or 1024)
        return prompt, completion, self.config.cost(request.model, prompt, completion) or 0.0

    def _plan(self, missing: list[Request]) -> dict[str, Reply]:
        for r in missing:
            prompt, completion, cost = self.estimate(r)
            self.stats.sent += 1
            self.stats.est_tokens += prompt + completion
            self.stats.est_cost += cost
        return {r.hash: Reply(error=DRY) for r in missing}

    def _online(self, missing: list[Request]) -> dict[str, Reply]:
        out: dict[str, Reply] = {}
        pending: dict[Future, tuple[Request, float]] = {}
        queue = iter(missing)
        while True:
            while len(pending) < 2 * self.config.concurrency:
                request = next(queue, None)
                if request is None:
                    break
                estimate = self.estimate(request)[2]
                if self.refused and "response_format" in dict(request.params):
                    self._finish(request, Reply(error=self.refused), out, sent=False)
                    continue
                if self.unreachable:
                    self._finish(request, Reply(error=self.unreachable), out, sent=False)
                    continue
                if not self.budget.reserve(estimate):
                    self._finish(request, Reply(error=EXHAUSTED), out, sent=False)
                    continue
                pending[self.pool.submit(self._call_and_record, request)] = (request, estimate)
            if not pending:
                return out
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                request, estimate = pending.pop(future)
                reply = future.result()
                self.budget.settle(estimate, reply.cost)
                self._finish(request, reply, out)

    def _call_and_record(self, request: Request) -> Reply:
        """In the worker: a crash loses only the calls still on the wire."""
        reply = self._call(request)
        self.ledger.record(request, reply)
        return reply

    def _finish(self, request: Request, reply: Reply, out: dict[str, Reply],
                sent: bool = True) -> None:
        out[request.hash] = reply
        self.count(reply, sent)

    def count(self, reply: Reply, sent: bool = True) -> None:
        """A reply in the stats and on the progress bar (`sent`: it reached the endpoint)."""
        if sent:
            self.stats.sent += 1
        self.stats.failed += not reply.ok
        self.bar.update(1)
        self.bar.set_postfix(retries=self.stats.retries, failed=self.stats.failed,
                             cost=f"${self.budget.spent:.4f}", refresh=False)

    def _call(self, request: Request) -> Reply:
        """One request through the limiter, retried with exponential back-off and jitter."""
        from tenacity import Retrying, retry_if_exception  # here: only a judge call needs it

        tokens = sum(self.estimate(request)[:2])
        retrying = Retrying(
            stop=self._stop, wait=self._wait,
            retry=retry_if_exception(self._retried),
            reraise=True)
        attempts = 0
        try:
            for attempt in retrying:
                with attempt:
                    attempts = attempt.retry_state.attempt_number
                    if attempts > 1:
                        self.stats.retries += 1
                    self.limiter.acquire(tokens)
                    reply = self._send(request)
        except JudgeError as e:
            if e.structured:  # the same refusal for every other structured request: not sent
                self.refused = self.refused or str(e)
            if e.unreachable and not self.reached:
                return Reply(error=self._stop_judging(e), attempts=attempts)
            return Reply(error=f"{e} (after {attempts} attempt{'s' * (attempts > 1)})",
                         attempts=attempts)
        except Exception as e:  # a judge bug must not kill the run: that call is an error
            return Reply(error=f"{type(e).__name__}: {e}", attempts=attempts)
        reply.attempts = attempts
        reply.cost = self.config.cost(request.model, reply.prompt_tokens, reply.completion_tokens)
        return reply

    def _send(self, request: Request) -> Reply:
        assert self.judge is not None
        if self.unreachable:  # found so while this request waited: not sent
            raise JudgeError(self.unreachable, retry=False, unreachable=True)
        try:
            reply = self.judge.send(request)
        except JudgeError as e:
            self.reached = self.reached or not e.unreachable
            if e.rate_limited:
                self.limiter.throttle(e.retry_after, e.headers)
            raise
        self.reached = True
        self.limiter.success(reply.headers)
        return reply

    def _retried(self, error: BaseException) -> bool:
        """A retryable error, unless it is an endpoint never reached: no retry helps that."""
        return isinstance(error, JudgeError) and error.retry and not (
            error.unreachable and not self.reached)

    def _stop_judging(self, error: JudgeError) -> str:
        """The first request that found no endpoint stops the judging, said once."""
        with self.stopping:
            if self.unreachable is not None:
                return self.unreachable
            self.unreachable = (f"unreachable: {error}; judging stopped for this run "
                                "(check the judge's base_url and that its server runs)")
        warnings.warn(f"judge {self.unreachable}", stacklevel=2)
        return self.unreachable

    def _stop(self, state) -> bool:
        """`retries` more attempts; four times as many while the endpoint only says 429
        (pacing, not failure: a busy endpoint must not cost results)."""
        error = state.outcome.exception() if state.outcome else None
        limit = self.config.retries + 1
        if isinstance(error, JudgeError) and error.rate_limited:
            limit *= RATE_LIMITED_PATIENCE
        return state.attempt_number >= limit

    def _wait(self, state) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, JudgeError) and error.retry_after is not None:
            return min(self.config.backoff_max, error.retry_after) + random.uniform(0, 0.05)
        from tenacity import wait_exponential_jitter

        first = self.config.backoff_initial
        return wait_exponential_jitter(multiplier=first, jitter=first,
                                       max=self.config.backoff_max)(state)
