"""One small exception hierarchy. The library raises; the CLI prints one clean line each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Where:
    """The place a problem comes from: file, line, test, assertion. A suite given as a mapping
    has no lines: its places are key paths (`<suite>: tests[2].assert[0]`)."""

    file: str | None = None
    line: int | None = None
    test: str | None = None
    assertion: str | None = None
    key: str | None = None  # the key path in a suite given as a mapping

    def __str__(self) -> str:
        place = self.file or "<suite>"
        if self.line is not None:
            place += f":{self.line}"
        if self.key:
            place += f": {self.key}"
        parts = [place]
        if self.test:
            parts.append(self.test)
        if self.assertion:
            parts.append(self.assertion)
        return ", ".join(parts)


@dataclass(frozen=True)
class Problem:
    """One thing wrong, and where (None: an option, not a place in a suite); printed as
    "<where>: <message>"."""

    where: Where | None
    message: str

    def __str__(self) -> str:
        return self.message if self.where is None else f"{self.where}: {self.message}"


class CheckLLMError(Exception):
    """Base class of every error the library raises on purpose."""


class ConfigError(CheckLLMError):
    """A suite (or option) is invalid. Carries every problem found, not only the first, as
    records until printed (one line each); a plain string is a problem with no place."""

    def __init__(self, problems: Iterable[Problem | str]):
        self.problems = [p if isinstance(p, Problem) else Problem(None, p) for p in problems]
        super().__init__("\n".join(map(str, self.problems)))


class InputError(CheckLLMError):
    """An outputs dataset (or a results database) cannot be used as given."""


class StorageError(CheckLLMError):
    """The results database, or a file beside it, cannot be written: the disk is full, or
    the place is read-only or not ours. The run is left resumable (`interrupted`)."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """' (did you mean "x"?)' for the closest choice, or '' when nothing is close."""
    from rapidfuzz import process  # here, not at the top: only a mistake needs it
    from rapidfuzz.distance import DamerauLevenshtein

    found = process.extract(name, sorted(choices), scorer=DamerauLevenshtein.normalized_similarity,
                            score_cutoff=0.5, limit=None)
    if not found:
        return ""
    # ties go to the name of the closest length ("modle": "model", not "mode"), then A-Z
    best = max(found, key=lambda f: (f[1], -abs(len(f[0]) - len(name)), [-ord(c) for c in f[0]]))
    return f' (did you mean "{best[0]}"?)'


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a run: the run is recorded as `interrupted` and can be resumed."""

    def __init__(self, run_id: str):
        super().__init__(run_id)
        self.run_id = run_id
