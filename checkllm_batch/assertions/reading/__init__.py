"""Reading a suite with the assertion types: suites/ reads the suite's structure, and is handed
how each assertion is checked against the registry (check.py, PromptKit's checks translated
by promptkit.py) and how a CSV `__expected` cell names one (cells.py).

    load_suite("suite.yaml")              # a file
    load_suite({"tests": [...]})          # the same suite as a mapping
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ...suites.model import Suite
from ...suites.parse import Vocabulary, read_suite
from ...suites.testfiles import read_test_file as _read_rows
from .cells import assertion_from_string
from .check import read_assertion

VOCABULARY = Vocabulary(assertion=read_assertion, cell=assertion_from_string)


def load_suite(source: str | Path | Mapping) -> Suite:
    """Read and check a suite file (or the same suite as a mapping, its file:// paths read
    from the current folder); ConfigError lists every problem found."""
    return read_suite(source, VOCABULARY)


def read_test_file(path: Path) -> list[dict]:
    """The tests of a `tests: file://...` file, `__expected` cells read as assertions."""
    return _read_rows(path, assertion_from_string)
