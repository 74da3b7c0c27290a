"""Batch mode: the OpenAI Batch API (half price, up to 24 h).

Requests are split into JSONL files of at most 50,000 lines and 200 MB (one model and
endpoint per file), uploaded, and submitted. Each batch and the hashes of its requests are
stored in DuckDB (`judge_batches`, `judge_batch_requests`) as soon as it is created, so a
crashed run finds and polls its batches again instead of paying twice. Results are matched
by `custom_id` (the request hash); failed lines are recorded as errors (not cached: a later
run sends them again).
"""

from __future__ import annotations

import io
import json
import time
import uuid
from typing import Protocol

import pyarrow as pa

from ..suites.judge import JudgeConfig
from .budget import EXHAUSTED, Budget
from .ledger import Ledger
from .openai_judge import OpenAIJudge, to_reply
from .protocol import Judge, JudgeError, Reply, Request

MAX_LINES, MAX_BYTES = 50_000, 200 * 1024 * 1024
TERMINAL = {"completed", "failed", "expired", "cancelled"}


def shards(requests: list[Request], max_lines: int = MAX_LINES,
           max_bytes: int = MAX_BYTES) -> list[list[tuple[Request, bytes]]]:
    """JSONL lines grouped by (endpoint, model), split at max_lines / max_bytes."""
    groups: dict[tuple[str, str], list[list[tuple[Request, bytes]]]] = {}
    sizes: dict[tuple[str, str], int] = {}
    for r in requests:
        line = json.dumps({"custom_id": r.hash, "method": "POST", "url": r.url,
                           "body": r.body()}, ensure_ascii=False).encode() + b"\n"
        key = (r.url, r.model)
        parts = groups.setdefault(key, [[]])
        if len(parts[-1]) >= max_lines or (parts[-1] and sizes[key] + len(line) > max_bytes):
            parts.append([])
            sizes[key] = 0
        parts[-1].append((r, line))
        sizes[key] = sizes.get(key, 0) + len(line)
    return [part for parts in groups.values() for part in parts if part]


class BatchRunner(Protocol):
    """What batch mode uses of the runner that hands it requests (runner.py's Runner): its
    settings, ledger and budget, its cost estimate, and its count of each reply."""

    config: JudgeConfig
    ledger: Ledger
    budget: Budget

    def estimate(self, request: Request) -> tuple[int, int, float]: ...

    def count(self, reply: Reply, sent: bool = True) -> None: ...


def run_batches(runner: BatchRunner, judge: Judge | None, missing: list[Request]
                ) -> dict[str, Reply]:
    """A reply for each of the `missing` requests, through batches: those a crashed run
    submitted first, then new ones for the rest (each reserved against the budget)."""
    if not isinstance(judge, OpenAIJudge):
        raise JudgeError("batch mode needs the OpenAI-compatible judge", retry=False)
    con, lock = runner.ledger.con, runner.ledger.lock
    wanted = {r.hash: r for r in missing}
    out: dict[str, Reply] = {}
    batches = _pending(con, lock, list(wanted))  # batch_id -> hashes, from a crashed run
    covered = {h for hs in batches.values() for h in hs}
    todo = []
    held: dict[str, float] = {}  # reserved until the batch's usage settles it
    for r in missing:
        if r.hash in covered:
            continue
        estimate = runner.estimate(r)[2]
        if runner.budget.reserve(estimate):
            todo.append(r)
            held[r.hash] = estimate
        else:
            out[r.hash] = Reply(error=EXHAUSTED)
            runner.count(out[r.hash], sent=False)
    for shard in shards(todo):
        batch_id = _submit(judge, con, lock, runner.ledger.run_id, shard)
        batches[batch_id] = [r.hash for r, _ in shard]
    for batch_id, hashes in batches.items():
        mine = {h: wanted[h] for h in hashes if h in wanted}
        out.update(_collect(runner, judge, batch_id, mine, held))
    for h in wanted:
        if h not in out:
            out[h] = Reply(error="missing from the batch output")
    return out


def _pending(con, lock, hashes: list[str]) -> dict[str, list[str]]:
    wanted = pa.table({"h": pa.array(hashes, pa.string())})  # noqa: F841
    with lock:
        rows = con.execute("""
            SELECT b.batch_id, list(r.request_hash) FROM judge_batches b
            JOIN judge_batch_requests r USING (batch_id)
            WHERE b.status NOT IN ('ingested', 'failed', 'expired', 'cancelled', 'submitting')
              AND r.request_hash IN (SELECT h FROM wanted) GROUP BY b.batch_id""").fetchall()
    return {batch_id: hashes for batch_id, hashes in rows}


def _submit(judge: OpenAIJudge, con, lock, run_id, shard) -> str:
    provisional = f"submitting-{uuid.uuid4().hex}"
    first = shard[0][0]
    with lock:  # remembered before upload: a crash leaves a trace, not a lost bill
        con.execute("INSERT INTO judge_batches (batch_id, run_id, model, requests, status) "
                    "VALUES (?, ?, ?, ?, 'submitting')", [provisional, run_id, first.model,
                                                         len(shard)])
    data = b"".join(line for _, line in shard)
    file = judge.client.files.create(file=("judge.jsonl", io.BytesIO(data)), purpose="batch")
    batch = judge.client.batches.create(input_file_id=file.id, endpoint=first.url,
                                        completion_window="24h")
    rows = pa.table({"batch_id": [batch.id] * len(shard),  # noqa: F841
                     "request_hash": [r.hash for r, _ in shard],
                     "request": [json.dumps(r.body(), ensure_ascii=False) for r, _ in shard]})
    with lock:
        con.execute("BEGIN")
        con.execute("UPDATE judge_batches SET batch_id = ?, input_file_id = ?, status = ? "
                    "WHERE batch_id = ?", [batch.id, file.id, batch.status, provisional])
        con.execute("INSERT INTO judge_batch_requests SELECT * FROM rows")
        con.execute("COMMIT")
    return batch.id


def _collect(runner: BatchRunner, judge: OpenAIJudge, batch_id: str, wanted: dict[str, Request],
             held: dict[str, float]) -> dict[str, Reply]:
    con, lock = runner.ledger.con, runner.ledger.lock
    while True:
        batch = judge.client.batches.retrieve(batch_id)
        if batch.status in TERMINAL:
            break
        time.sleep(runner.config.batch_poll_seconds)
    out: dict[str, Reply] = {}
    for file_id in (batch.output_file_id, batch.error_file_id):
        if not file_id:
            continue
        text = judge.client.files.content(file_id).text
        for line in text.splitlines():
            if line.strip():
                row = json.loads(line)
                request = wanted.get(row.get("custom_id"))
                if request is not None:
                    out[request.hash] = judge.redact_reply(_reply(runner, request, row))
                    runner.budget.settle(held.pop(request.hash, 0.0), out[request.hash].cost)
                    runner.ledger.record(request, out[request.hash], batch_id)
                    runner.count(out[request.hash])
    with lock:
        con.execute("UPDATE judge_batches SET status = 'ingested', output_file_id = ?, "
                    "error_file_id = ?, finished_at = current_timestamp WHERE batch_id = ?",
                    [batch.output_file_id, batch.error_file_id, batch_id])
    if batch.status != "completed":
        for h in wanted:
            out.setdefault(h, Reply(error=f"batch {batch_id} {batch.status}"))
    return out


def _reply(runner: BatchRunner, request: Request, row: dict) -> Reply:
    from openai.types import CreateEmbeddingResponse
    from openai.types.chat import ChatCompletion

    response = row.get("response") or {}
    if row.get("error") or response.get("status_code") != 200:
        error = row.get("error") or (response.get("body") or {}).get("error")
        return Reply(error=f"batch line failed: {json.dumps(error)[:300]}", attempts=1)
    kind = CreateEmbeddingResponse if request.kind == "embedding" else ChatCompletion
    try:
        reply = to_reply(request, kind.model_validate(response["body"]), {}, None)
    except (JudgeError, ValueError) as e:
        return Reply(error=f"batch line unreadable: {e}", attempts=1)
    reply.attempts = 1
    reply.cost = runner.config.cost(request.model, reply.prompt_tokens, reply.completion_tokens)
    return reply
