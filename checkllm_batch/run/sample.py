"""Judging a sample (`--judge-sample 2%`): model-graded assertions of a seeded sample of the
cases only, every deterministic check on every row.

Membership is a hash of (seed, the case's stratum, its case id): a stratum is provider x
prompt x test, a case id its row in the dataset, so the same cases are judged at any batch
size and on --resume. Each case is in with the same probability (the rate) whatever its
stratum: every stratum gets its share in expectation, and given how many of a stratum were
judged, they are a simple random sample of it, which is what the views' finite-population
intervals assume (store/views.py). A count (`--judge-sample 2000`) is turned into that rate
over the source's rows, so about that many are judged. The others' graded assertions end
`skipped`, "not in the judge sample", and so does their test: rates that involve the judge
count judged cases only.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from ..errors import InputError
from ..evaluate.batch import JudgeHook
from ..evaluate.outcome import RESULT_SCHEMA
from ..evaluate.plan import Planned
from ..evaluate.verdict import NOT_SAMPLED

SEED = 35
_STRATUM = ["provider", "prompt", "test_index"]
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class JudgeSample:
    """A sample of cases to judge: each case in with probability `rate`, drawn by `seed`;
    `asked` is what was given (2%, 0.02, 2000)."""

    rate: float
    seed: int = SEED
    asked: str = ""

    @classmethod
    def parse(cls, value: Any, total: int | None, seed: int = SEED) -> JudgeSample:
        """'2%' or 0.02 (a share of the cases), or 2000 (about that many): a count needs
        the source's length (a file or a table, not a stream)."""
        text = str(value).strip()
        share = text.endswith("%")
        number = _number(text[:-1] if share else text, text)
        if share:
            rate = number / 100
        elif isinstance(value, float) or not text.lstrip("-").isdigit():
            rate = number if number <= 1 else -1.0  # a share is at most 1
        elif total is None:
            raise InputError(f"--judge-sample {text}: a count needs a source of known "
                             "length; give a share instead (e.g. 2%)")
        else:
            rate = min(1.0, number / max(total, 1))
        if not 0 < rate <= 1:
            raise InputError(f"--judge-sample {text}: expected a share in (0, 100 %] "
                             "(2%, 0.02) or a count of cases (2000)")
        return cls(rate, seed, text)

    def record(self) -> dict[str, Any]:
        """What the run's config keeps: a resume judges the same cases."""
        return {"rate": self.rate, "seed": self.seed, "asked": self.asked}

    @classmethod
    def from_record(cls, record: dict[str, Any] | None) -> JudgeSample | None:
        return None if not record else cls(record["rate"], record["seed"], record["asked"])

    def members(self, cases: pl.DataFrame) -> pl.Series:
        """True for the cases of the sample (a frame with case_id, provider, prompt,
        test_index), vectorised: a stable 64-bit mix, the same in any Polars version."""
        if self.rate >= 1:
            return pl.Series("judged", [True] * cases.height, pl.Boolean)
        strata = cases.select(_STRATUM).unique()
        keys = [_stratum_hash(self.seed, row) for row in strata.iter_rows()]  # few rows
        hashed = cases.join(strata.with_columns(h=pl.Series(keys, dtype=pl.UInt64)),
                            on=_STRATUM, how="left", nulls_equal=True, maintain_order="left")
        x = hashed["h"].to_numpy() ^ (hashed["case_id"].to_numpy().astype(np.uint64) * _GOLDEN)
        u = (_mix64(x) >> np.uint64(11)).astype(np.float64) / 2.0 ** 53
        return pl.Series("judged", u < self.rate)


def _number(text: str, given: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InputError(f"--judge-sample {given}: expected a share (2%, 0.02) or a count "
                         "of cases (2000)") from None


def _stratum_hash(seed: int, row: tuple) -> int:
    digest = hashlib.blake2b(repr((seed, *row)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every input bit moves every output bit."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


class SampledHook:
    """The run's judge hook, handed only the sampled cases; the others' rows end
    `skipped`. Anything else (the runner, the config) is the hook's own."""

    def __init__(self, hook: Any, sample: JudgeSample):
        self.hook, self.sample = hook, sample

    def __call__(self, p: Planned, rows: pl.DataFrame) -> pl.DataFrame:
        chosen = self.sample.members(rows)
        judged = self.hook(p, rows.filter(chosen))
        skipped = rows.filter(~chosen).select(
            "case_id", pl.col("test_index").cast(pl.Int32), key=pl.lit(p.key, pl.Int32),
            status=pl.lit("skipped"), **{"pass": pl.lit(None, pl.Boolean)},
            score=pl.lit(None, pl.Float64), reason=pl.lit(NOT_SAMPLED))
        return pl.concat([judged, skipped.cast(pl.Schema(RESULT_SCHEMA))], how="diagonal")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.hook, name)


def sampled(hook: Any, sample: JudgeSample | None) -> JudgeHook:
    """The hook the engine calls: `hook` itself, or it behind the sample."""
    return hook if sample is None else SampledHook(hook, sample)


def recorded(config: dict[str, Any] | None) -> JudgeSample | None:
    """The sample a run's config records (a resume keeps it)."""
    return JudgeSample.from_record((config or {}).get("judge_sample"))


def resumed_sample(con: Any, run_id: str, given: JudgeSample | None) -> JudgeSample | None:
    """The sample of a run taken up again: the one it began with (recorded in its config),
    so its remaining cases are drawn as its first ones were; another one is refused."""
    [(config,)] = con.execute("SELECT config FROM runs WHERE run_id = ?", [run_id]).fetchall()
    began = recorded(json.loads(config) if config else None)
    if given is not None and (began is None or (given.rate, given.seed)
                              != (began.rate, began.seed)):
        was = f"--judge-sample {began.asked}" if began else "no judge sample"
        raise InputError(f"run {run_id} began with {was}: resume it with the same sample "
                         "(or none: it keeps its own)")
    return began
