"""What a person watching a long run sees on stderr: a labelled bar with cases/s, the pass /
fail / error counts so far, the run id, and, when a judge runs, the calls sent and their
cost. Only on a terminal (tqdm's own rule), unless turned off."""

from __future__ import annotations

import polars as pl
from tqdm import tqdm


class RunProgress:
    def __init__(self, run_id: str, total: int | None, enabled: bool, runner=None,
                 done: int = 0):
        self.run_id, self.runner = run_id, runner
        self.counts = {"pass": 0, "fail": 0, "error": 0}
        # smoothing=0: the rate (and so the estimate) is the mean over the run so far, not
        # the last batch's, which start-up (pool, first judge calls) skews.
        self.bar = tqdm(total=total, unit=" cases", unit_scale=True, desc=f"run {run_id}",
                        disable=None if enabled else True, leave=False, smoothing=0,
                        dynamic_ncols=True, initial=done)

    def update(self, tests: pl.DataFrame, rows: int) -> None:
        """After a batch: its test verdicts counted, the bar moved by its rows."""
        for status, n in tests.group_by("status").len().iter_rows():  # three rows at most
            if status in self.counts:
                self.counts[status] += n
        self.bar.set_postfix_str(self.postfix(), refresh=False)
        self.bar.update(rows)

    def postfix(self) -> str:
        text = " ".join(f"{k} {v:,}" for k, v in self.counts.items())
        if self.runner is not None:
            stats = self.runner.stats
            text += (f" | judge {stats.sent:,} sent, {stats.cached:,} cached, "
                     f"{stats.failed:,} failed, ${self.runner.budget.spent:.4f}")
        return text

    def close(self) -> None:
        self.bar.close()
