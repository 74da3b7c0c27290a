"""Record promptfoo 0.123.1's test-level verdicts for a list of tests (a developer tool).

    python tests/promptfoo_kit/record_tests.py cases.json tests/promptfoo_kit/combine/<name>.jsonl

`cases.json` is a list of {"output": str, "test": {"assert": [...], "threshold"?, "vars"?,
"options"?}, "defaultTest": {...}?, "differs": why?}. Where record.py keeps one assertion's
verdict, this keeps the whole test's, as promptfoo combines its assertions (weights,
thresholds, assert-sets, defaultTest's asserts first): the test's pass, score and reason
(results[].gradingResult), and its componentResults' pass and score in promptfoo's order
(each assert-set followed by its members), and its named scores with their weights. A test whose assertion throws is an error cell
in promptfoo: pass and score are then null. Cases sharing a defaultTest are graded in one
promptfoo run (the kit's `verbatim` provider returns each output as is).
"""

from __future__ import annotations

import base64
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from record import evaluate  # noqa: E402


def grade(cases: list[dict]) -> list[dict]:
    groups: dict[str, list[int]] = {}
    for i, case in enumerate(cases):
        groups.setdefault(json.dumps(case.get("defaultTest"), sort_keys=True), []).append(i)
    verdicts: list[dict] = [{} for _ in cases]
    for indices in groups.values():
        default = cases[indices[0]].get("defaultTest")
        tests = [_test(cases[i]) for i in indices]
        results = evaluate(Path(tempfile.mkdtemp(prefix="pf-tests-")),
                           {"tests": tests, **({"defaultTest": default} if default else {})})
        for n, i in enumerate(indices):
            verdicts[i] = (_verdict(results[n]) if not isinstance(results, str) else
                           {"pass": None, "score": None, "reason": results, "components": []})
    return verdicts


def _test(case: dict) -> dict:
    out = base64.b64encode(case["output"].encode("utf-8", "surrogatepass")).decode()
    test = case["test"]
    return {**test, "vars": {"out_b64": out, **test.get("vars", {})}}


def _verdict(result: dict) -> dict:
    grading = result.get("gradingResult") or {}
    error = result.get("error") if not grading else None
    reason = grading.get("reason") or result.get("error") or ""
    return {"pass": None if error or not grading else grading.get("pass"),
            "score": None if error or not grading else grading.get("score"),
            "reason": reason.splitlines()[0][:300] if reason else "",
            "components": [[c.get("pass"), c.get("score")]
                           for c in grading.get("componentResults") or []],
            "named": {k: [v, (grading.get("namedScoreWeights") or {}).get(k)]
                      for k, v in (grading.get("namedScores") or {}).items()}}


def main(src: str, dest: str) -> None:
    cases = json.loads(Path(src).read_text(encoding="utf-8"))
    Path(dest).parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "w", encoding="utf-8") as f:
        for case, verdict in zip(cases, grade(cases), strict=True):
            f.write(json.dumps({**case, "promptfoo": verdict}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
