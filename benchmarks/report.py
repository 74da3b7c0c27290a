"""The HTML report of a large run: its size, the time to write it, and how fast it opens.

    .venv/bin/python benchmarks/report.py [N] [--keep DIR]     (default N = 1_000_000)

With --keep DIR the database stays in DIR, and a second call with the same DIR reports
its two runs again without evaluating them.

Two runs of N cases each (3 providers, a gold-label var and a text var of ~120 characters,
outputs of 300-600 characters, 20 % wrong), then `report --against` of the second: its
write time (wall and CPU), its size in bytes, and in headless Chromium (Debian's
/usr/bin/chromium through playwright; no browser download) at 1280 x 900, the time to first
paint and first contentful paint, the load event, and the time to draw the matrix when asked
(a click on "Show the matrix"). Opened three times; each figure's median is printed. The
targets (issue 42): under 5 MB, open in a second or two."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

import checkllm_batch as cb

SUITE = """
defaultTest:
  assert:
    - {type: contains, value: "{{label}}", metric: accuracy}
    - {type: not-icontains, value: "as an ai", metric: no_refusal}
    - {type: max-length, value: 560}
derivedMetrics:
  - {name: accuracy_rate, value: "accuracy / __count"}
"""
WORDS = np.array("the a review product works broke great terrible fine price quality "
                 "delivery box battery screen sound ✓ café naïve".split())
CHROMIUM = "/usr/bin/chromium"


def _texts(rng: np.random.Generator, n: int, low: int, high: int, pool: int = 5000) -> np.ndarray:
    """n texts of low..high characters, drawn from a pool of distinct ones."""
    made = []
    for _ in range(pool):  # a pool of texts, then indexed: building n of them would be slow
        words = WORDS[rng.integers(0, len(WORDS), high // 4)]
        made.append(" ".join(words)[: int(rng.integers(low, high))])
    return np.array(made)[rng.integers(0, pool, n)]


def outputs(n: int, seed: int) -> pl.DataFrame:
    labels = np.array(["positive", "negative", "neutral"])
    gold = labels[np.random.default_rng(0).integers(0, 3, n)]  # the same cases in every run
    rng = np.random.default_rng(seed)
    said = np.where(rng.random(n) < 0.2, labels[rng.integers(0, 3, n)], gold)
    body = _texts(rng, n, 300, 600)
    return pl.DataFrame({"provider": np.array(["a", "b", "c"])[np.arange(n) % 3],
                         "item": np.arange(n) // 3, "label": gold,
                         "review": _texts(np.random.default_rng(1), n, 80, 160),
                         "output": np.char.add(np.char.add(said, ": "), body)})


def timed(name: str, fn):
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    print(f"| {name} | {time.perf_counter() - start:.2f} s | {time.process_time() - cpu:.2f} s |")
    return result


def open_in_chromium(path: Path, rounds: int = 3) -> dict[str, float]:
    """Median milliseconds to first paint, first contentful paint, load event, and to draw
    the matrix after the click."""
    from playwright.sync_api import sync_playwright

    seen: dict[str, list[float]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu"])
        for _ in range(rounds):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(path.as_uri())
            page.wait_for_load_state("load")
            timing = page.evaluate("""() => {
                const paint = Object.fromEntries(performance.getEntriesByType('paint')
                    .map(e => [e.name, e.startTime]));
                const nav = performance.getEntriesByType('navigation')[0];
                return {first_paint: paint['first-paint'],
                        first_contentful_paint: paint['first-contentful-paint'],
                        load: nav.loadEventEnd};
            }""")
            timing["matrix_drawn"] = page.evaluate("""() => {
                const start = performance.now();
                document.getElementById('show-matrix').click();
                return performance.now() - start;
            }""")
            timing["overflow_px"] = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth")
            for k, v in timing.items():
                if v is not None:  # headless Chromium may not report first-paint
                    seen.setdefault(k, []).append(v)
            page.close()
        browser.close()
    return {k: statistics.median(v) for k, v in seen.items()}


def main(n: int, keep: Path | None) -> None:
    directory = keep or Path(tempfile.mkdtemp())
    directory.mkdir(parents=True, exist_ok=True)
    suite_path = directory / "suite.yaml"
    suite_path.write_text(SUITE)
    db = directory / "results.duckdb"
    print(f"| step ({n:,} cases per run, 3 providers) | wall | CPU |\n|---|---|---|")
    runs = []
    if db.exists():  # a kept database: its two runs
        runs = cb.Results(db).runs()["run_id"].to_list()[-2:]
    for seed in (1, 2) if not runs else ():
        run = timed(f"evaluate run {seed}", lambda s=seed: cb.evaluate(suite_path, outputs(n, s),
                                                                       db=db))
        runs.append(run.run_id)
        run.con.close()
    res = cb.Results(db)
    path = timed("report --against (HTML written)", lambda: res.report(
        directory / "report.html", runs[1], against=runs[0], by="label"))
    size = path.stat().st_size
    print(f"| report size | {size:,} bytes ({size / 2**20:.2f} MiB) | |")
    for name, ms in open_in_chromium(path).items():
        print(f"| Chromium 1280 px, median of 3: {name} | {ms:.0f} ms | |"
              if name != "overflow_px" else f"| horizontal overflow | {ms:.0f} px | |")


if __name__ == "__main__":
    args = sys.argv[1:]
    keep = Path(args[args.index("--keep") + 1]) if "--keep" in args else None
    numbers = [a for a in args if a.isdigit()]
    main(int(numbers[0]) if numbers else 1_000_000, keep)
