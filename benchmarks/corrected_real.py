"""Issue 44's real-data run: corrected pass rates against people's ratings.

The data: the human sentiment ratings shipped in the `vadersentiment` 3.3.2 sdist
(additional_resources/hutto_ICWSM_2014.tar.gz: 23,703 short texts, tweets, movie and
Amazon review snippets and NYT editorial snippets, each the mean of 10-20+ raters' -4..+4
ratings; MIT), fetched here with `pip download` into the cache (never committed). A seeded
sample of `--texts` texts is judged by a real llama.cpp server with SmolLM2-135M-Instruct
(prepared by tests/fixtures/realserver/prepare.py) on an `llm-rubric` "the text is
positive", structured output; the people's verdict is mean rating > 0.

Printed: the people's rate over every judged text (the truth here), the judge's rate with
its Wilson interval, the judge's agreement (kappa, tpr, tnr); one uniform and one
by-verdict sample of `--labels` labels drawn, imported and corrected through the product
(Results.sample_labels, add_labels, corrected_pass_rates); and over `--draws` random label
samples, how often each interval covers the people's rate and how wide it is.

    .venv/bin/python benchmarks/corrected_real.py [--texts 300] [--labels 60] [--draws 1000]

The judged run is kept in the cache (its judge calls too), so a second call re-reads it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fixtures.realserver import prepare  # noqa: E402
from fixtures.realserver.server import LlamaServer  # noqa: E402

import checkllm_batch as cb  # noqa: E402
from checkllm_batch.analysis.corrected import estimate  # noqa: E402

VADER = "vadersentiment==3.3.2"
CORPORA = ["tweets", "amazonReviewSnippets", "movieReviewSnippets", "nytEditorialSnippets"]
RUBRIC = "The text is positive: it expresses a favourable opinion or a good feeling."
SUITE = """judge:
  model: smollm2
  base_url: {url}
  api_key_env: CHECKLLM_BENCH_NO_KEY
  structured: true
  concurrency: 4
defaultTest:
  assert:
    - type: llm-rubric
      value: "{rubric}"
"""


def ratings(cache: Path) -> pl.DataFrame:
    """Every text with its corpus and mean rating, from the sdist (downloaded once)."""
    folder = cache / "vader"
    if not (folder / "hutto_ICWSM_2014").exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", VADER, "--no-deps",
                        "--no-binary", ":all:", "-d", str(folder)], check=True)
        with tarfile.open(next(folder.glob("vaderSentiment-3.3.2.tar.*"))) as sdist:
            inner = sdist.extractfile("vaderSentiment-3.3.2/additional_resources/"
                                      "hutto_ICWSM_2014.tar.gz")
            with tarfile.open(fileobj=inner) as data:
                data.extractall(folder, filter="data")
    frames = []
    for corpus in CORPORA:
        path = folder / "hutto_ICWSM_2014" / f"{corpus}_GroundTruth.txt"
        lines = path.read_text(encoding="utf-8-sig", errors="replace").splitlines()
        rows = [line.split("\t", 2) for line in lines if line.count("\t") >= 2]
        frames.append(pl.DataFrame({"id": [r[0] for r in rows],
                                    "rating": [float(r[1]) for r in rows],
                                    "output": [r[2].strip() for r in rows]})
                      .with_columns(corpus=pl.lit(corpus)))
    return pl.concat(frames)


def judged_run(cache: Path, texts: pl.DataFrame, threads: int) -> tuple[cb.Results, str, float]:
    """The run judging `texts` (kept in the cache; judged once)."""
    db = cache / f"vader-run-{texts.height}.duckdb"
    if db.exists():
        results = cb.Results(db)
        return results, results.run_id("last"), float("nan")
    server = LlamaServer(prepare.server_path(), prepare.smollm2_path(), threads=threads,
                         slots=4).start()
    try:
        suite = cache / "vader-suite.yaml"
        suite.write_text(SUITE.format(url=server.url, rubric=RUBRIC))
        start = time.perf_counter()
        run = cb.evaluate(suite, texts, db=db)
        elapsed = time.perf_counter() - start
        run.con.close()
    finally:
        server.close()
    results = cb.Results(db)
    return results, results.run_id("last"), elapsed


def through_the_product(results: cb.Results, run: str, texts: pl.DataFrame, n: int,
                        by: list[str], seed: int) -> dict:
    """A sample drawn, labelled with the people's verdicts, imported and corrected."""
    sheet = results.sample_labels(n, by, seed, run=run)
    people = dict(zip(texts["id"], texts["people"]))
    cases = results.query("SELECT case_id, json_extract_string(vars, '$.id') AS id FROM "
                          "cases WHERE run_id = ?", [run])
    ids = dict(zip(cases["case_id"], cases["id"]))
    labels = sheet.select("case_id").with_columns(human=pl.Series(
        [people[ids[c]] for c in sheet["case_id"]]))
    results.add_labels(labels, "human", run=run)
    return results.corrected_pass_rates("human", run=run).row(0, named=True)


def draws(y: np.ndarray, f: np.ndarray, n: int, count: int, seed: int) -> pl.DataFrame:
    """`count` uniform samples of n labels, each corrected (one query for all)."""
    rng = np.random.default_rng(seed)
    chosen = np.zeros((count, len(y)), dtype=bool)
    for d in range(count):  # one draw of n cases each
        chosen[d, rng.choice(len(y), n, replace=False)] = True
    frame = pl.DataFrame({"draw": np.repeat(np.arange(count), len(y)),
                          "y": np.where(chosen, np.tile(y, (count, 1)), np.nan).ravel(),
                          "f": np.tile(f, count)}).with_columns(pl.col("y").fill_nan(None))
    return estimate(frame, ["draw"])


def _points(value: float | None, scale: float = 100) -> str:
    return "-" if value is None else f"{scale * value:.{0 if scale == 1 else 1}f}"


def _figure(row: dict, name: str, prefix: str) -> str:
    """`corrected 54.1 [41.0, 67.2]`."""
    return (f"{name} {_points(row[name])} [{_points(row[prefix + '_low'])}, "
            f"{_points(row[prefix + '_high'])}]")


def figure(rows: list[tuple[str, float, float, float]], truth: float) -> str:
    """An SVG of each estimate's 95 % interval (label, estimate, low, high) against the
    people's rate (a vertical line), on a 0-100 % axis."""
    width, left, step = 640, 230, 34
    height = 50 + step * len(rows)

    def x(v: float) -> float:
        return left + v * (width - left - 20)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             'font-family="sans-serif" font-size="12">']
    for i, (name, value, low, high) in enumerate(rows):  # one interval each
        y = 30 + step * i
        parts += [f'<text x="8" y="{y + 4}">{name}</text>',
                  f'<line x1="{x(low):.1f}" x2="{x(high):.1f}" y1="{y}" y2="{y}" '
                  'stroke="#333" stroke-width="2"/>',
                  f'<circle cx="{x(value):.1f}" cy="{y}" r="4" fill="#333"/>']
    parts += [f'<line x1="{x(truth):.1f}" x2="{x(truth):.1f}" y1="12" y2="{height - 24}" '
              'stroke="#c00" stroke-dasharray="4 3"/>',
              f'<text x="{x(truth) + 4:.1f}" y="{height - 26}" fill="#c00">people '
              f'{100 * truth:.1f} %</text>']
    for tick in range(0, 101, 20):
        parts.append(f'<text x="{x(tick / 100) - 8:.1f}" y="{height - 6}">{tick} %</text>')
    return "".join(parts) + "</svg>"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--labels", type=int, default=60)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=44)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-chars", type=int, default=240)
    parser.add_argument("--figure", help="Write the intervals of both samples as an SVG here.")
    args = parser.parse_args()
    cache = prepare.cache_dir()
    every = ratings(cache)
    texts = every.filter(pl.col("output").str.len_chars() <= args.max_chars).sample(
        args.texts, seed=args.seed).with_columns(
        people=pl.when(pl.col("rating") > 0).then(pl.lit("pass")).otherwise(pl.lit("fail")))
    print(f"{every.height} rated texts in the sdist; {texts.height} drawn (seed "
          f"{args.seed}, at most {args.max_chars} characters)")
    results, run, elapsed = judged_run(cache, texts, args.threads)
    if elapsed == elapsed:
        print(f"judged in {elapsed:.0f} s wall")
    verdicts = results.query(
        "SELECT (status = 'pass')::INTEGER AS f, human::INTEGER AS y, status "
        "FROM judge_labels('people') WHERE run_id = ? ORDER BY case_id", [run])
    errors = verdicts.filter(pl.col("status") == "error").height
    ok = verdicts.filter(pl.col("status").is_in(["pass", "fail"]))
    y, f = ok["y"].to_numpy().astype(float), ok["f"].to_numpy().astype(float)
    truth = y.mean()
    agreement = results.judge_agreement("people", run=run).row(0, named=True)
    print(f"judged {len(y)} texts ({errors} errors): people's rate {100 * truth:.1f} %; "
          f"agreement {100 * agreement['agreement']:.1f} %, kappa {agreement['kappa']:.2f}, "
          f"tpr {agreement['tpr']:.2f}, tnr {agreement['tnr']:.2f}")
    shown = []
    for by in ([], ["verdict"]):
        row = through_the_product(results, run, texts, args.labels, by, args.seed)
        how = "by verdict" if by else "uniform"
        shown += [(f"judge only ({len(y)} verdicts)", row["judge_only"], row["judge_low"],
                   row["judge_high"])] if not by else []
        shown += [(f"labels alone ({args.labels}, {how})", row["labels_only"],
                   row["labels_low"], row["labels_high"]),
                  (f"corrected ({args.labels}, {how})", row["corrected"],
                   row["corrected_low"], row["corrected_high"])]
        print(f"labels sample --n {args.labels}{' --by verdict' if by else ''}: "
              + "; ".join(_figure(row, k, p) for k, p in
                          (("judge_only", "judge"), ("labels_only", "labels"),
                           ("corrected", "corrected")))
              + f"; n_effective {_points(row['n_effective'], 1)} of {row['n_labelled']} "
              f"labels{'; ' + row['note'] if row['note'] else ''}")
    if args.figure:
        Path(args.figure).write_text(figure(shown, truth))
    table = draws(y, f, args.labels, args.draws, args.seed)
    print(f"over {args.draws} uniform samples of {args.labels} labels (people's rate "
          f"{100 * truth:.1f} %):")
    for name in ("judge", "labels", "corrected"):
        low = table[f"{name}_low"].to_numpy()
        high = table[f"{name}_high"].to_numpy()
        covered = np.mean((low <= truth) & (truth <= high))
        print(f"  {name}: covers {100 * covered:.1f} %, mean half-width "
              f"{50 * np.mean(high - low):.1f} points")
    print(f"  lambda median {table['lam'].median():.2f}, n_effective median "
          f"{table['n_effective'].median():.0f} of {args.labels}")


if __name__ == "__main__":
    main()
