"""Record promptfoo 0.123.1's verdicts for model-graded cases (a developer tool, not a test).

    python tests/promptfoo_kit/record_graded.py cases.json tests/promptfoo_kit/graded/<area>.jsonl

As record.py, with a scripted judge: each case of `cases.json` also has "replies", the
judge's reply texts in the order the grader asks (one per chat call; the last one answers any
further call), or pairs [marker, reply]: a call gets the reply of the first marker found in its
request messages (for types whose calls may run in any order); and optionally "prompt" (the rendered prompt, for types that read it; default
"x") and "options" (the test's options, e.g. {"factuality": {...}} or a rubricPrompt).

A local OpenAI-compatible server on 127.0.0.1 answers the grader. It picks a case's replies by
the request path: case i's grading provider is `openai:chat:gpt-4o-mini` with the base URL
`http://127.0.0.1:PORT/c<i>/v1` (set in the test's options, never in the stored case), so
every case has its own queue whatever order promptfoo grades in. Embeddings (answer-relevance)
are tests/judge_server.py's `vector` of each input, as our tests' judge gives them, unless the
case scripts them: "embeddings", a map text -> vector (for similar: exact similarities, zero
vectors, distances); "replies" may then be left out. The messages promptfoo sent are kept
in the row as "promptfoo_request" when they are short (custom prompts).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml
from record import KIT, _verdict

sys.path.insert(0, str(Path(__file__).parents[1]))
from judge_server import vector  # noqa: E402

SHORT = 1500  # characters of request messages kept in a row


def pick(replies: list, request: str) -> str:
    """The reply to one call: by marker (pairs), else the next of the queue (consumed)."""
    if replies and isinstance(replies[0], list):
        return next((r for marker, r in replies
                     if json.dumps(marker, ensure_ascii=False)[1:-1] in request),
                    replies[-1][1])
    return replies.pop(0) if len(replies) > 1 else replies[0]


class ScriptedJudge:
    """Chat completions on /c<i>/v1/chat/completions answered from case i's replies."""

    def __init__(self, cases: list[dict]):
        self.replies = [list(c.get("replies", [""])) for c in cases]
        self.vectors = [c.get("embeddings", {}) for c in cases]
        self.sent: list[list[Any]] = [[] for _ in cases]
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, i: int) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/c{i}/v1"

    def answer(self, i: int, body: dict) -> str:
        with self.lock:
            self.sent[i].append(body.get("messages"))
            return pick(self.replies[i], json.dumps(body.get("messages"), ensure_ascii=False))

    def _handler(self):
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                case = int(self.path.split("/")[1][1:])
                if self.path.endswith("/embeddings"):
                    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    scripted = judge.vectors[case]
                    return self._send({"object": "list", "model": body.get("model"), "data": [
                        {"object": "embedding", "index": i,
                         "embedding": scripted[t] if t in scripted else vector(t)}
                        for i, t in enumerate(inputs)], "usage": {"prompt_tokens": 1,
                                                                  "total_tokens": 1}})
                text = judge.answer(case, body)
                self._send({
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                    "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                })

            def _send(self, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def grade(cases: list[dict]) -> tuple[list[dict], list[list[Any]]]:
    judge = ScriptedJudge(cases)
    work = Path(tempfile.mkdtemp(prefix="pf-graded-"))
    tests = []
    for i, case in enumerate(cases):
        out = case["output"].encode("utf-8", "surrogatepass")
        config = {"apiBaseUrl": judge.url(i), "apiKey": "x"}
        provider = {"text": {"id": "openai:chat:gpt-4o-mini", "config": config},
                    "embedding": {"id": "openai:embedding:text-embedding-3-large",
                                  "config": config}}
        tests.append({"vars": {"out_b64": base64.b64encode(out).decode(),
                               "pf_prompt": case.get("prompt", "x"), **case.get("vars", {})},
                      "options": {**case.get("options", {}), "provider": provider},
                      "assert": [case["assert"]]})
    config = {"prompts": ["{{pf_prompt}}"], "providers": [f"file://{KIT}/providers/verbatim.js"],
              "tests": tests}
    (work / "c.yaml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    cmd = (f"source {KIT}/env.sh && export NO_PROXY=127.0.0.1,localhost "
           f"no_proxy=127.0.0.1,localhost && cd {work} && promptfoo eval -c c.yaml -o out.json "
           "--no-write --no-cache --no-table --no-share -j 1")
    subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=False)
    judge.httpd.shutdown()
    results = json.loads((work / "out.json").read_text())["results"]["results"]
    return [_verdict(r) for r in sorted(results, key=lambda r: r["testIdx"])], judge.sent


def main(src: str, dest: str) -> None:
    cases = json.loads(Path(src).read_text(encoding="utf-8"))
    verdicts, sent = grade(cases)
    with open(dest, "w", encoding="utf-8") as f:
        for case, verdict, messages in zip(cases, verdicts, sent, strict=True):
            row = {**case, "promptfoo": verdict}
            if messages and len(json.dumps(messages, ensure_ascii=False)) <= SHORT:
                row["promptfoo_request"] = messages
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
