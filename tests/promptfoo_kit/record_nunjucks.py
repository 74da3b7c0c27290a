"""Record how promptfoo 0.123.1 renders templates (a developer tool, not a test).

    PROMPTFOO_KIT=/work/kit python tests/promptfoo_kit/record_nunjucks.py cases.json out.yaml

`cases.json` is a list of [id, template, vars]. Each case becomes a test whose one assertion
is an `equals` (a `contains-any` for a list of templates) with the template as its value, over
the output "" from the kit's `verbatim` provider. `out.yaml` holds the suite as run and, per
test, promptfoo's `renderedAssertionValue` and pass; its reason when it recorded no rendered
value (the template rendered to itself, or a list); or the test's error (stack trace cut).
The suite is written as JSON so that js-yaml reads exactly the values given (PyYAML would
leave `1e3` unquoted, which js-yaml reads as a number). A var holding an array whose first
item is a string is expanded by promptfoo into one test per item: nest such arrays.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

KIT = Path(os.environ.get("PROMPTFOO_KIT", "/work/shared/tools/promptfoo-offline"))


def _result(case_id: str, result: dict) -> dict:
    grading = result.get("gradingResult") or {}
    part = (grading.get("componentResults") or [grading])[0] if grading else {}
    metadata = part.get("metadata") or {}
    if result.get("error") and not part:
        lines = [line for line in result["error"].split("\n")[:3] if not line.strip().startswith("at ")]
        return {"id": case_id, "error": "\n".join(lines)}
    if "renderedAssertionValue" in metadata:
        return {"id": case_id, "renderedAssertionValue": metadata["renderedAssertionValue"],
                "pass": part.get("pass")}
    return {"id": case_id, "pass": part.get("pass"), "reason": part.get("reason")}


def main(src: str, dest: str) -> None:
    cases = json.loads(Path(src).read_text(encoding="utf-8"))
    work = Path(tempfile.mkdtemp(prefix="pf-nunjucks-"))
    (work / "providers").mkdir()
    (work / "providers" / "verbatim.js").write_text((KIT / "providers" / "verbatim.js").read_text())
    tests = [{"description": case_id, "vars": {"out_b64": "", **vars},
              "assert": [{"type": "contains-any" if isinstance(template, list) else "equals",
                          "value": template}]}
             for case_id, template, vars in cases]
    suite = {"prompts": ["p"], "providers": ["file://providers/verbatim.js"], "tests": tests}
    (work / "suite.yaml").write_text(json.dumps(suite))
    cmd = (f"source {KIT}/env.sh && cd {work} && promptfoo eval -c suite.yaml -o out.json "
           "--no-write --no-cache --no-table --no-share -j 1")
    run = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=False)
    if not (work / "out.json").exists():
        sys.exit(f"promptfoo did not run the suite:\n{run.stderr[-3000:]}")
    results = sorted(json.loads((work / "out.json").read_text())["results"]["results"],
                     key=lambda r: r["testIdx"])
    if len(results) != len(cases):  # an array var promptfoo expanded into several tests
        sys.exit(f"{len(cases)} cases gave {len(results)} results")
    out = [_result(case[0], r) for case, r in zip(cases, results, strict=True)]
    Path(dest).write_text(yaml.safe_dump({"suite": suite, "results": out}, allow_unicode=True,
                                         sort_keys=False, width=100), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:3])
