"""The notebooks run top to bottom on the bundled example data with a real Jupyter kernel;
any cell error fails the test. They must also draw their charts (SVG outputs)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).parents[2] / "notebooks"

CASES = [  # (notebook, SVG charts it draws at least, text its outputs show)
    ("quickstart.ipynb", 1, "best provider:"),
    ("metrics.ipynb", 4, "regressed"),
    ("dataframes.ipynb", 0, "failures: 3"),
    ("audit.ipynb", 0, "the corrected interval covers the people's rate"),
]


@pytest.mark.parametrize("name, charts, text", CASES)
def test_notebook_runs_without_errors(name, charts, text):
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(book, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    outputs = [o for cell in book.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    svgs = [o for o in outputs if "image/svg+xml" in o.get("data", {})]
    assert len(svgs) >= charts
    shown = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                    for o in outputs)
    assert text in shown


def test_the_notebooks_extra_installs_a_kernel_and_pandas():
    import tomllib

    root = NOTEBOOKS.parent
    extra = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["notebooks"]
    assert {d.split(">")[0] for d in extra} >= {"ipykernel", "pandas"}
    assert "pip install 'checkllm-batch[notebooks]'" in (root / "README.md").read_text()
