"""DuckDB `judge_calls`: every call, written as it completes. It is also the cache: a
request whose hash has an `ok` row is answered from here and never sent again. A reply the
grader could not read becomes `unparsed`: the next run asks again, unless the request was
sampled at temperature 0 (the same request gets the same reply): then the unreadable reply
is the answer, read again from here."""

from __future__ import annotations

import json
import threading

import duckdb
import pyarrow as pa

from .protocol import Reply, Request

COLUMNS = ("request_hash, run_id, kind, model, request, reply, embedding, prompt_tokens, "
           "completion_tokens, cost, latency_ms, attempts, status, error, mode, batch_id, "
           "logprobs")


class Ledger:
    def __init__(self, con: duckdb.DuckDBPyConnection, run_id: str | None, mode: str = "online"):
        # its own cursor: the run's writer thread stores batches on the main connection
        self.con, self.run_id, self.mode = con.cursor(), run_id, mode
        self.lock = threading.Lock()

    def lookup(self, hashes: list[str], final: set[str] | frozenset[str] = frozenset()
               ) -> dict[str, Reply]:
        """Stored answers for these request hashes: `ok` ones, and for the hashes in `final`
        (requests sampled deterministically) also a reply known unreadable (`unparsed`, or
        `truncated` at max_tokens): asking again would give the same one."""
        if not hashes:
            return {}
        wanted = pa.table({"h": pa.array(sorted(set(hashes)), pa.string()),  # noqa: F841
                           "final": pa.array([h in final for h in sorted(set(hashes))])})
        with self.lock:
            rows = self.con.execute("""
                SELECT request_hash, arg_min(status, status <> 'ok'),
                       arg_min(reply, status <> 'ok'), arg_min(embedding, status <> 'ok'),
                       arg_min(prompt_tokens, status <> 'ok'),
                       arg_min(completion_tokens, status <> 'ok'), arg_min(cost, status <> 'ok'),
                       arg_min(error, status <> 'ok'), arg_min(logprobs, status <> 'ok')
                FROM judge_calls JOIN wanted ON request_hash = h
                WHERE status = 'ok' OR (final AND status IN ('unparsed', 'truncated'))
                GROUP BY request_hash""").fetchall()
        return {h: Reply(text=text, vector=vector, prompt_tokens=p or 0, completion_tokens=c or 0,
                         cost=cost, cached=True, error=error if status == "truncated" else None,
                         known_unreadable=status != "ok",
                         logprobs=json.loads(logprobs) if logprobs else None)
                for h, status, text, vector, p, c, cost, error, logprobs in rows}

    def record(self, request: Request, reply: Reply, batch_id: str | None = None) -> None:
        status = "ok" if reply.ok else ("truncated" if reply.text is not None else "error")
        row = [request.hash, self.run_id, request.kind, request.model,
               json.dumps(request.body(), ensure_ascii=False), reply.text, reply.vector,
               reply.prompt_tokens, reply.completion_tokens, reply.cost, reply.latency_ms,
               reply.attempts, status, reply.error, self.mode, batch_id,
               json.dumps(reply.logprobs, ensure_ascii=False) if reply.logprobs else None]
        with self.lock:
            self.con.execute(f"INSERT INTO judge_calls ({COLUMNS}) VALUES "
                             f"({', '.join('?' * len(row))})", row)

    def unparsed(self, request_hash: str) -> None:
        """The `ok` replies to this request could not be read: not to be served again."""
        with self.lock:
            self.con.execute("UPDATE judge_calls SET status = 'unparsed' "
                             "WHERE request_hash = ? AND status = 'ok'", [request_hash])
