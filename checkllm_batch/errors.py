"""One small exception hierarchy. The library raises; the CLI prints one clean line each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Where:
    """The place a problem comes from: file, line, test, assertion."""

    file: str | None = None
    line: int | None = None
    test: str | None = None
    assertion: str | None = None

    def __str__(self) -> str:
        place = self.file or "<suite>"
        if self.line is not None:
            place += f":{self.line}"
        parts = [place]
        if self.test:
            parts.append(self.test)
        if self.assertion:
            parts.append(self.assertion)
        return ", ".join(parts)


class CheckLLMError(Exception):
    """Base class of every error the library raises on purpose."""


class ConfigError(CheckLLMError):
    """A suite (or option) is invalid. Carries every problem found, not only the first."""

    def __init__(self, problems: Iterable[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class InputError(CheckLLMError):
    """An outputs dataset (or a results database) cannot be used as given."""


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
