"""Record promptfoo 0.123.1's verdicts for a table of cases (a developer tool, not a test).

    python tests/promptfoo_kit/record.py cases.json tests/promptfoo_kit/<area>.jsonl

`cases.json` is a list of {"output": str, "assert": {...}, "files": {name: text}?,
"columns": {"cost": n, "latency_ms": n}?, "vars": {name: value}?, "differs": why?}. Each case is graded by the real promptfoo with the offline kit
(/work/shared/tools/promptfoo-offline, its `verbatim` provider returns the output as is);
the output file gets one line per case with promptfoo's pass, score and reason beside it.
Rows we decide to grade differently keep promptfoo's answer and say why in "differs".
A suite promptfoo refuses when it loads it (a schema error) gives every case that error:
record such a case on its own. The kit's `verbatim` provider passes cost and latency on, not
a finish reason: unit-misc.jsonl's finish-reason rows were recorded with a copy of the kit
whose provider also sets `resp.finishReason = vars.finish_reason` when that var is given,
and skill-used.jsonl's rows with one whose provider sets `resp.metadata = vars.metadata`
(the row's `columns.metadata`).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

KIT = Path(os.environ.get("PROMPTFOO_KIT", "/work/shared/tools/promptfoo-offline"))


def grade(cases: list[dict]) -> list[dict]:
    work = Path(tempfile.mkdtemp(prefix="pf-kit-"))
    tests = []
    for case in cases:
        out = case["output"].encode("utf-8", "surrogatepass")
        extra = case.get("columns", {})  # cost / latency_ms: the verbatim provider reports them
        tests.append({"vars": {"out_b64": base64.b64encode(out).decode(), **extra,
                               **case.get("vars", {})},
                      "assert": [case["assert"]]})
        for name, text in case.get("files", {}).items():
            (work / name).write_text(text, encoding="utf-8")
    results = evaluate(work, {"tests": tests})
    if isinstance(results, str):  # refused at load: no case was graded
        return [{"pass": None, "score": None, "reason": results} for _ in cases]
    return [_verdict(r) for r in results]


def evaluate(work: Path, suite: dict) -> list[dict] | str:
    """promptfoo's results for `suite` (tests, defaultTest) over the verbatim provider, in
    test order, or the line saying why it refused the suite."""
    config = {"prompts": ["x"], "providers": [f"file://{KIT}/providers/verbatim.js"], **suite}
    (work / "c.yaml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    cmd = (f"source {KIT}/env.sh && cd {work} && promptfoo eval -c c.yaml -o out.json "
           "--no-write --no-cache --no-table --no-share -j 1")
    run = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=False)
    if not (work / "out.json").exists():
        error = next((line for line in run.stderr.splitlines() if line.startswith(
            ("Error", "AssertValidationError"))), "promptfoo refused the suite")
        return error[:300]
    results = json.loads((work / "out.json").read_text())["results"]["results"]
    return sorted(results, key=lambda r: r["testIdx"])


def _verdict(result: dict) -> dict:
    grading = result.get("gradingResult") or {}
    part = (grading.get("componentResults") or [grading])[0]
    reason = str(part.get("reason") or result.get("error") or "")  # a judge's reply may hold a number
    return {"pass": part.get("pass"), "score": part.get("score"),
            "reason": reason.splitlines()[0][:300] if reason else ""}


def main(src: str, dest: str) -> None:
    cases = json.loads(Path(src).read_text(encoding="utf-8"))
    with open(dest, "w", encoding="utf-8") as f:
        for case, verdict in zip(cases, grade(cases), strict=True):
            f.write(json.dumps({**case, "promptfoo": verdict}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
