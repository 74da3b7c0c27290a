"""The vectorised path has no row loops: a deliberate fallback says why, with '# row-wise:'."""

import re

from conftest import ROOT

LOOP = re.compile(r"map_elements|iter_rows\(|\.apply\(")


def test_no_unflagged_row_loops():
    offenders = []
    for folder in ("assertions", "evaluate"):
        for path in (ROOT / "checkllm_batch" / folder).rglob("*.py"):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if LOOP.search(line) and "# row-wise:" not in line:
                    offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
