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
