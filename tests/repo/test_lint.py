"""The package, its tests and benchmarks stay clean under the project's ruff rules, its
layers point one way, and the package passes mypy."""

import ast
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT


def test_ruff_is_clean():
    if shutil.which("ruff") is None and not (ROOT / ".venv" / "bin" / "ruff").exists():
        pytest.skip("ruff is not installed")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "checkllm_batch", "benchmarks",
                           "tests"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_layers_point_one_way():
    """.importlinter: cli -> api -> analysis -> metrics -> store -> evaluate ->
    assertions / load -> judge -> suites -> js; nothing imports a layer above its own."""
    lint = ROOT / ".venv" / "bin" / "lint-imports"
    proc = subprocess.run([str(lint) if lint.exists() else "lint-imports"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr


def test_package_type_checks():
    """mypy with pyproject.toml's [tool.mypy]. Its cache lives in the temp dir, one per
    checkout: a first run takes ~30 s (mostly openai's and polars' types), later ones ~2 s."""
    pytest.importorskip("mypy")
    cache = Path(tempfile.gettempdir()) / (
        "checkllm_batch-mypy-" + hashlib.sha256(str(ROOT).encode()).hexdigest()[:12])
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache)], cwd=ROOT,
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


def private_imports(source: str) -> list[str]:
    """Names with a leading underscore that `source` imports from the package's modules."""
    return [alias.name for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom)
            and (node.level or (node.module or "").startswith("checkllm_batch"))
            for alias in node.names if alias.name.startswith("_")]


@pytest.mark.parametrize("source,found", [
    ("from .text import _items", ["_items"]),
    ("from checkllm_batch.assertions.overlap import _references", ["_references"]),
    ("from ._support.grading import messages_for", []),
    ("from .batch.distinct import Outcome", []),
    ("from __future__ import annotations", []),
])
def test_the_guard_finds_private_imports(source, found):
    assert private_imports(source) == found


def test_assertion_modules_share_only_public_names():
    """What one assertion module uses from another is public (in _support/ when it is not a
    type); a private name imported across modules is a helper that belongs there."""
    offenders = [f"{path.relative_to(ROOT)}: {', '.join(names)}"
                 for path in sorted((ROOT / "checkllm_batch" / "assertions").rglob("*.py"))
                 if (names := private_imports(path.read_text(encoding="utf-8")))]
    assert not offenders, offenders


# the assertions' own helper packages: how a check runs over a batch, and what it parses with
ASSERTION_HELPERS = ("assertions.batch", "assertions.parsers")


def private_modules(source: str) -> list[str]:
    """The package's private modules (a path part with a leading underscore, e.g.
    `assertions._support`, or one of the assertions' helper packages) that `source` imports
    from."""
    return [node.module or "" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(
                "checkllm_batch"))
            and (any(part.startswith("_") and part != "__future__"
                     for part in (node.module or "").split("."))
                 or any(f"{h}." in f"{node.module}." for h in ASSERTION_HELPERS))]


@pytest.mark.parametrize("source,found", [
    ("from ..assertions._support.values import RowValues", ["assertions._support.values"]),
    ("from .assertions._support import pool", ["assertions._support"]),
    ("from ..assertions.batch.values import RowValues", ["assertions.batch.values"]),
    ("from .assertions.parsers import sql", ["assertions.parsers"]),
    ("from ..assertions import RowValues, pool", []),
    ("from __future__ import annotations", []),
])
def test_the_guard_finds_private_modules(source, found):
    assert private_modules(source) == found


def test_assertion_helpers_stay_inside_assertions():
    """assertions/_support, batch/ and parsers/ are the assertions' own: the rest of the
    pipeline uses what `checkllm_batch.assertions` exports."""
    package = ROOT / "checkllm_batch"
    offenders = [f"{path.relative_to(ROOT)}: {', '.join(names)}"
                 for path in sorted(package.rglob("*.py"))
                 if (package / "assertions") not in path.parents
                 and (names := private_modules(path.read_text(encoding="utf-8")))]
    assert not offenders, offenders


# libraries only some suites need: imported inside the function that uses them, so that
# `checkllm-batch` (and `import checkllm_batch`) starts without them
AT_FIRST_USE = ["asyncio", "rapidfuzz", "sqlglot", "tenacity", "urllib.request"]


def test_the_cli_starts_without_what_only_some_suites_need():
    code = "import sys, checkllm_batch.cli; print(*sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert [m for m in AT_FIRST_USE if m in proc.stdout.split()] == []


def imported_test_modules(source: str) -> list[str]:
    """The test modules (`test_*`, at any depth of a dotted path) that `source` imports."""
    modules = [alias.name for node in ast.walk(ast.parse(source))
               if isinstance(node, ast.Import) for alias in node.names]
    modules += [node.module or "" for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.ImportFrom)]
    return [m for m in modules if any(part.startswith("test_") for part in m.split("."))]


@pytest.mark.parametrize("source,found", [
    ("from test_text import CASES", ["test_text"]),
    ("from assertions.test_text import CASES", ["assertions.test_text"]),
    ("import e2e.test_promptfoo_kit as kit", ["e2e.test_promptfoo_kit"]),
    ("from fixtures.tables.text import CASES", []),
    ("from conftest import run", []),
    ("def f():\n    from test_webhook import Server", ["test_webhook"]),
])
def test_the_guard_finds_imports_of_test_modules(source, found):
    assert imported_test_modules(source) == found


def test_no_test_module_imports_another():
    """What several test modules share lives in tests/fixtures/ (or conftest.py): a test
    module's tables are its own, and running one never imports (and collects) another."""
    offenders = [f"{path.relative_to(ROOT)}: {', '.join(names)}"
                 for path in sorted((ROOT / "tests").rglob("*.py"))
                 if (names := imported_test_modules(path.read_text(encoding="utf-8")))]
    assert not offenders, offenders
