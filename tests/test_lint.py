"""The package, its tests and benchmarks stay clean under the project's ruff rules."""

import shutil
import subprocess
import sys

import pytest
from conftest import ROOT


def test_ruff_is_clean():
    if shutil.which("ruff") is None and not (ROOT / ".venv" / "bin" / "ruff").exists():
        pytest.skip("ruff is not installed")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "checkllm_batch", "benchmarks",
                           "tests"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_layers_point_one_way():
    """.importlinter: cli -> api -> analysis -> metrics -> store -> judge -> evaluate ->
    assertions / load -> spec; nothing imports a layer above its own."""
    lint = ROOT / ".venv" / "bin" / "lint-imports"
    proc = subprocess.run([str(lint) if lint.exists() else "lint-imports"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr


def test_no_merge_conflict_markers():
    markers = ("<<<<<<< ", ">>>>>>> ")
    offenders = [
        str(path.relative_to(ROOT))
        for pattern in ("*.py", "*.md", "*.toml", "*.yaml", "*.ipynb")
        for path in ROOT.rglob(pattern)
        if ".venv" not in path.parts and any(
            line.startswith(markers) for line in path.read_text(errors="ignore").splitlines())
    ]
    assert not offenders, offenders
