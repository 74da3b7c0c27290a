"""How many cases does a comparison need, and what can a run detect? Paired runs (the same
cases scored twice) tested with McNemar's exact test, as `compare` does; the figures come
from stats.sample_size (Connor 1987). A flip rate (the share of cases whose verdict changes
between two runs) measured on two runs is the best input; without one, the runs are taken
as independent, which over-states the cases needed."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ..errors import InputError
from . import stats

if TYPE_CHECKING:
    from .database import Results


def fractions(**values: float | None) -> None:
    """Rates and drops are fractions, in Python and on the command line alike (0.9 for
    90 %, 0.05 for 5 points): a value above 1 is refused, never read as a percent."""
    for name, value in values.items():
        if value is not None and not 0 <= value <= 1:
            raise InputError(f"{name} {value:g} is not a fraction: give 0.9 for 90 % and "
                             f"0.05 for 5 points (rates and drops are fractions)")


def sample_size(pass_rate: float, drop: float, power: float = 0.8, alpha: float = 0.05,
                flip_rate: float | None = None) -> int:
    """stats.sample_size, with bad figures as the library's input error."""
    fractions(pass_rate=pass_rate, drop=drop, flip_rate=flip_rate)
    try:
        return stats.sample_size(pass_rate, drop, power, alpha, flip_rate)
    except ValueError as e:
        raise InputError(str(e)) from None


def detectable(results: Results, run: str | None, against: str | None, power: float,
               alpha: float) -> pl.DataFrame:
    """Per provider x prompt of `run`: cases, pass rate, the flip rate measured against run
    `against` (null without one: independent runs assumed) and the smallest drop (a
    fraction) its cases detect with `power` at `alpha`."""
    rates = results.pass_rates(run, intervals=False).select("provider", "prompt", "cases",
                                                             "pass_rate")
    if against is not None:
        changed = results.compare(against, run or "last").cases.group_by(
            "provider", "prompt").agg(flip_rate=pl.col("change").is_in(
                ["regressed", "improved"]).mean())
        rates = rates.join(changed, on=["provider", "prompt"], how="left", nulls_equal=True)
    else:
        rates = rates.with_columns(flip_rate=pl.lit(None, pl.Float64))
    drops = [stats.detectable_drop(n, p, power, alpha, f) for n, p, f in
             rates.select("cases", "pass_rate", "flip_rate").iter_rows()]  # one per group
    return rates.with_columns(detectable_drop=pl.Series(drops, dtype=pl.Float64))
