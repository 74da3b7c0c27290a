"""A local OpenAI-compatible server on 127.0.0.1 for judge tests and benchmarks.

Chat completions, embeddings, files and batches. It can enforce a requests-per-minute
limit (429 + Retry-After), inject 500s, slow replies down, answer with malformed content,
and counts every request (per path, and per request body).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

KEY_ENV, SECRET = "CHECKLLM_TEST_JUDGE_KEY", "sk-test-SECRET-0123456789"
# a suite's judge block and one test's assertions, to which a test adds its own lines
JUDGE_HEADER = f"""
judge:
  model: gpt-4o-mini
  api_key_env: {KEY_ENV}
tests:
  - description: t
    assert:
"""
RUBRIC_SUITE = JUDGE_HEADER + """\
      - type: llm-rubric
        value: the answer is good
"""


def graded_outputs(n: int, distinct: int | None = None):
    """Rows of test t: every third distinct output "bad" (failed by rubric_reply), with a
    unicode tail."""
    import polars as pl

    distinct = distinct or n
    texts = [f"{'good' if i % distinct % 3 else 'bad'} answer {i % distinct} ✓" for i in range(n)]
    return pl.DataFrame({"test_id": ["t"] * n, "output": texts})


def rubric_reply(body: dict[str, Any]) -> str:
    """Default grader: an output containing "good" passes; "garble" gets a malformed reply."""
    text = "\n".join(m["content"] for m in body.get("messages", []))
    output = text.split("<Output>")[-1].split("</Output>")[0] if "<Output>" in text else text
    if "garble" in output:
        return "Sure, looks fine to me!"
    if "good" in output:
        return '{"reason": "it is good", "pass": true, "score": 1.0}'
    return '{"reason": "not good", "pass": false, "score": 0.0}'


def cascade_reply(body: dict[str, Any]) -> str:
    """A judge cascade's two models (fixtures/judges.py cascade_world, over HTTP): "large" is
    always right (an output with "good" passes); "small" too on an "easy" output, and on a
    "hard" one right about 45 % of the time, at random on each call (its repeats differ)."""
    text = "\n".join(m["content"] for m in body.get("messages", []))
    output = text.split("<Output>")[-1].split("</Output>")[0]
    good = "good" in output
    if body.get("model") == "small" and "hard" in output and random.random() >= 0.45:
        good = not good
    return f'{{"reason": "because", "pass": {"true" if good else "false"}, "score": {int(good)}}}'


def vector(text: str, dims: int = 8) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255.0 for b in digest[:dims]]


class JudgeServer:
    def __init__(self, *, rpm: float | None = None, fail_rate: float = 0.0,
                 latency: float = 0.0, answer: Callable[[dict], str] = rubric_reply,
                 seed: int = 0, batch_polls: int = 0,
                 reject: Callable[[dict], int | None] | None = None, announce: bool = True):
        self.rpm, self.fail_rate, self.latency, self.answer = rpm, fail_rate, latency, answer
        self.batch_polls = batch_polls  # polls a batch stays in_progress before completing
        self.rng = random.Random(seed)
        self.reject = reject  # body -> an HTTP status to answer with instead (e.g. 400)
        self.announce = announce  # send x-ratelimit-* headers
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()  # path -> requests (any outcome)
        self.bodies: Counter[str] = Counter()  # request body hash -> successful answers
        self.status: Counter[int] = Counter()
        self.files: dict[str, bytes] = {}
        self.first = self.last = 0.0  # when the first and the last call were answered
        self.batches: dict[str, dict[str, Any]] = {}
        self.capacity = (rpm / 60.0) if rpm else 0.0
        self.tokens, self.refilled = self.capacity, time.monotonic()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def start(self) -> JudgeServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def config(self, **kw: Any):
        """The JudgeConfig of a run judged by this server (fast retries for tests)."""
        from checkllm_batch.suites.judge import JudgeConfig

        base = dict(model="gpt-4o-mini", base_url=self.url, api_key_env=KEY_ENV,
                    concurrency=8, backoff_initial=0.01, backoff_max=0.5,
                    batch_poll_seconds=0.01)
        return JudgeConfig(**{**base, **kw})

    @property
    def answered(self) -> int:
        return sum(self.bodies.values())

    def _admit(self) -> float | None:
        """None when the request may proceed, else seconds until it could."""
        if not self.rpm:
            return None
        with self.lock:
            now = time.monotonic()
            rate = self.rpm / 60.0
            self.tokens = min(self.capacity, self.tokens + (now - self.refilled) * rate)
            self.refilled = now
            if self.tokens >= 1.0:
                self.tokens -= 1.0
                return None
            return (1.0 - self.tokens) / rate

    def _limit_headers(self) -> dict[str, str]:
        if not self.rpm or not self.announce:
            return {}
        return {"x-ratelimit-limit-requests": str(int(self.rpm)),
                "x-ratelimit-remaining-requests": str(max(0, int(self.tokens))),
                "x-ratelimit-reset-requests": f"{int(60000 / self.rpm)}ms"}

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        content = self.answer(body)
        prompt = sum(len(m.get("content") or "") for m in body.get("messages", [])) // 4
        return {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": len(content) // 4,
                          "total_tokens": prompt + len(content) // 4}}

    def embed(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return {"object": "list", "model": body.get("model"),
                "data": [{"object": "embedding", "index": i, "embedding": vector(t)}
                         for i, t in enumerate(inputs)],
                "usage": {"prompt_tokens": 1, "total_tokens": 1}}

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None,
                      raw: bytes | None = None):
                data = raw if raw is not None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
                with server.lock:
                    server.status[status] += 1

            def do_GET(self):
                path = self.path.split("?")[0]
                with server.lock:
                    server.counts["GET " + path] += 1
                parts = path.strip("/").split("/")
                if parts[:2] == ["v1", "batches"] and len(parts) == 3:
                    return self._send(200, server.poll(parts[2]))
                if parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content":
                    return self._send(200, None, raw=server.files[parts[2]])
                self._send(404, {"error": {"message": f"no route {path}"}})

            def do_POST(self):
                path = self.path.split("?")[0]
                data = self.rfile.read(int(self.headers.get("content-length") or 0))
                with server.lock:
                    server.counts["POST " + path] += 1
                if path == "/v1/files":
                    return self._send(200, server.upload(self.headers["content-type"], data))
                if path == "/v1/batches":
                    return self._send(200, server.create_batch(json.loads(data)))
                wait = server._admit()
                if wait is not None:
                    return self._send(429, {"error": {"message": "rate limit", "code":
                                                      "rate_limit_exceeded"}},
                                      {"retry-after-ms": str(math.ceil(wait * 1000)),
                                       "retry-after": str(math.ceil(wait)),
                                       **server._limit_headers()})
                if server.latency:
                    time.sleep(server.latency)
                with server.lock:
                    fail = server.fail_rate and server.rng.random() < server.fail_rate
                if fail:
                    return self._send(500, {"error": {"message": "injected fault"}})
                body = json.loads(data)
                status = server.reject(body) if server.reject else None
                if status:  # a careless endpoint that echoes the key it was given
                    echo = self.headers.get("authorization", "")
                    return self._send(status, {"error": {"message": f"rejected {status}: {echo}"}})
                if path == "/v1/chat/completions":
                    reply = server.complete(body)
                elif path == "/v1/embeddings":
                    reply = server.embed(body)
                else:
                    return self._send(404, {"error": {"message": f"no route {path}"}})
                with server.lock:
                    server.bodies[hashlib.sha256(data).hexdigest()] += 1
                    server.first = server.first or time.monotonic()
                    server.last = time.monotonic()
                self._send(200, reply, server._limit_headers())

        return Handler

    def upload(self, content_type: str, data: bytes) -> dict[str, Any]:
        boundary = content_type.split("boundary=")[1].strip('"').encode()
        content = b""
        for part in data.split(b"--" + boundary):
            head, _, body = part.partition(b"\r\n\r\n")
            if b'name="file"' in head:
                content = body.rsplit(b"\r\n", 1)[0]
        with self.lock:
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = content
        return {"id": file_id, "object": "file", "bytes": len(content), "purpose": "batch",
                "created_at": int(time.time()), "filename": "batch.jsonl", "status": "processed"}

    def create_batch(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            batch_id = f"batch_{len(self.batches) + 1}"
            lines = self.files[body["input_file_id"]].decode().splitlines()
            self.batches[batch_id] = {
                "id": batch_id, "object": "batch", "endpoint": body["endpoint"],
                "input_file_id": body["input_file_id"], "completion_window": "24h",
                "status": "in_progress", "created_at": int(time.time()),
                "output_file_id": None, "error_file_id": None,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "_polls": 0}
        return self._public(batch_id)

    def _public(self, batch_id: str) -> dict[str, Any]:
        return {k: v for k, v in self.batches[batch_id].items() if not k.startswith("_")}

    def poll(self, batch_id: str) -> dict[str, Any]:
        with self.lock:
            batch = self.batches[batch_id]
            batch["_polls"] += 1
            if batch["status"] != "in_progress" or batch["_polls"] <= self.batch_polls:
                return self._public(batch_id)
            out, errors = [], []
            for line in self.files[batch["input_file_id"]].decode().splitlines():
                request = json.loads(line)
                body = request["body"]
                self.bodies[hashlib.sha256(json.dumps(body).encode()).hexdigest()] += 1
                if self.fail_rate and self.rng.random() < self.fail_rate:
                    errors.append({"id": "r", "custom_id": request["custom_id"], "response": None,
                                   "error": {"code": "server_error", "message": "injected"}})
                    continue
                reply = self.embed(body) if request["url"] == "/v1/embeddings" \
                    else self.complete(body)
                out.append({"id": "r", "custom_id": request["custom_id"], "error": None,
                            "response": {"status_code": 200, "request_id": "x", "body": reply}})
            for kind, rows in (("output_file_id", out), ("error_file_id", errors)):
                if rows:
                    file_id = f"file-{len(self.files) + 1}"
                    self.files[file_id] = "\n".join(json.dumps(r) for r in rows).encode()
                    batch[kind] = file_id
            batch["status"] = "completed"
            batch["request_counts"] = {"total": len(out) + len(errors), "completed": len(out),
                                       "failed": len(errors)}
            return self._public(batch_id)

