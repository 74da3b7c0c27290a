"""Labels after the run: people's labels read from a file or a frame and matched to a run's
cases (by `case_id`, or by the dataset's own id columns, read from each case's vars), and
random samples of judged cases drawn for labelling, uniform or by strata, each candidate's
inclusion probability recorded (store/labels.py writes both).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ..errors import InputError
from ..store import runs as store
from ..store.labels import write_labels, write_sample

# columns of a label file that are not keys: the label is the one named by `label`
OPTIONAL = ("assertion_index", "labelled_by")
READERS = {".csv": lambda p: pl.read_csv(p, infer_schema=False),
           ".jsonl": pl.read_ndjson, ".ndjson": pl.read_ndjson, ".parquet": pl.read_parquet}


def read_label_file(path: str | Path) -> pl.DataFrame:
    """A CSV (every cell text), JSONL or Parquet file of labels."""
    path = Path(path)
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise InputError(f"{path}: a label file is .csv, .jsonl or .parquet")
    if not path.exists():
        raise InputError(f"{path}: label file not found")
    try:
        return reader(path)
    except Exception as e:  # a reader's own error: the file is not what its name says
        raise InputError(f"{path}: not a readable {path.suffix} file ({e})") from None


def run_vars(con: Any, run_id: str) -> list[str]:
    """The var names of a run's cases."""
    return store.frame(con, "SELECT DISTINCT unnest(json_keys(vars)) AS name FROM cases "
                       "WHERE run_id = ? ORDER BY 1", [run_id])["name"].to_list()


def _keys(frame: pl.DataFrame, label: str, names: list[str], where: str) -> list[str]:
    if "case_id" in frame.columns:
        return ["case_id"]
    keys = [c for c in frame.columns if c in names and c not in (label, *OPTIONAL)]
    if not keys:
        raise InputError(f"{where}: no case_id column and no column named as a var of the "
                         f"run (its vars: {', '.join(names[:20]) or 'none'}): give --key")
    return keys


def _match(con: Any, run_id: str, frame: pl.DataFrame, keys: list[str], where: str
           ) -> pl.DataFrame:
    """The frame with each row's case_id(s): by case_id, or by the key vars (a key
    matching several cases, e.g. one row run under several tests, labels each)."""
    if keys == ["case_id"]:
        cases = store.frame(con, "SELECT case_id FROM case_rows WHERE run_id = ?", [run_id])
        frame = frame.with_columns(pl.col("case_id").cast(pl.Int64, strict=False))
        found = frame.join(cases, on="case_id", how="left",
                           coalesce=False).rename({"case_id_right": "_case"})
        return found.with_columns(case_id=pl.col("_case")).drop("_case")
    extract = ", ".join(f"json_extract_string(vars, '$.\"' || ? || '\"') AS \"{k}\""
                        for k in keys)
    cases = store.frame(con, f"SELECT case_id, {extract} FROM cases WHERE run_id = ?",
                        [*keys, run_id])
    text = frame.with_columns(pl.col(keys).cast(pl.String))
    return text.join(cases, on=keys, how="left")


def label_rows(con: Any, run_id: str, frame: pl.DataFrame, label: str, *,
               keys: list[str] | None = None, labelled_by: str | None = None,
               source: str = "frame") -> tuple[pl.DataFrame, int]:
    """(rows for the labels table, empty labels skipped) from a frame of labels: its
    column `label` holds each value, its keys find the case; every row must find one."""
    where = f"{source}"
    if label not in frame.columns:
        raise InputError(f"{where}: no column {label!r} (its columns: "
                         f"{', '.join(frame.columns)})")
    keys = keys or _keys(frame, label, run_vars(con, run_id), where)
    missing = [k for k in keys if k not in frame.columns]
    if missing:
        raise InputError(f"{where}: no key column {', '.join(map(repr, missing))}")
    if frame.select(keys + [c for c in ("assertion_index",) if c in frame.columns]
                    ).is_duplicated().any():
        raise InputError(f"{where}: a key ({', '.join(keys)}) is given more than once")
    value = pl.col(label).cast(pl.String).str.strip_chars()
    given = frame.with_columns(value.alias("value")).filter(
        pl.col("value").is_not_null() & (pl.col("value") != ""))
    matched = _match(con, run_id, given, keys, where)
    lost = matched.filter(pl.col("case_id").is_null())
    if lost.height:
        first = ", ".join(f"{k}={lost[k][0]!r}" for k in keys)
        raise InputError(f"{where}: {lost.height} label(s) match no case of run {run_id} "
                         f"(first: {first})")
    rows = matched.select(
        pl.lit(run_id).alias("run_id"), "case_id",
        (pl.col("assertion_index").cast(pl.Int32, strict=False)
         if "assertion_index" in matched.columns else pl.lit(None, pl.Int32)
         ).alias("assertion_index"),
        pl.lit(label).alias("label"), "value",
        (pl.col("labelled_by").cast(pl.String) if "labelled_by" in matched.columns
         else pl.lit(labelled_by, pl.String)).alias("labelled_by"),
        pl.lit(source).alias("source"))
    return rows, frame.height - given.height


def add_labels(con: Any, run_id: str, frame: pl.DataFrame, label: str, *,
               anchor: bool = False, **options) -> dict:
    """Match and store labels (with `anchor`, frozen as an anchor set too); what was
    stored: labels, cases, empty ones skipped."""
    rows, empty = label_rows(con, run_id, frame, label, **options)
    write_labels(con, rows, anchor)
    return {"run_id": run_id, "label": label, "labels": rows.height,
            "cases": rows["case_id"].n_unique(), "empty": empty, "anchor": anchor}


def drift(con: Any, label: str, alpha: float = 0.05, metric: str | None = None,
          type_: str | None = None) -> pl.DataFrame:
    """judge_drift (store/anchors.py) in run order: the judge on the anchor set of `label`
    run over run, with the exact McNemar test against the previous run."""
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha}")
    if not store.frame(con, "SELECT count(*) AS n FROM anchor_labels WHERE label = ?",
                       [label])["n"][0]:
        raise InputError(f"no anchor set is frozen under the label {label!r}: label a set of "
                         f"cases once and freeze it with `checkllm-batch labels import FILE "
                         f"--label {label} --anchor`, then keep those rows in every run's "
                         "outputs")
    return store.frame(con, "SELECT * FROM judge_drift(?, alpha := ?, metric := ?, "
                       "type := ?) ORDER BY started_at, run_id, judge_model, type, "
                       "metric NULLS FIRST", [label, alpha, metric, type_])


STRATA = {"provider": "provider", "prompt": "prompt", "verdict": "status", "type": "type",
          "metric": "metric", "judge_model": "judge_model"}


def _candidates(con: Any, run_id: str, by: list[str], type_: str | None,
                metric: str | None, judge_model: str | None) -> pl.DataFrame:
    """One judged graded verdict per case (pass or fail): the sampling frame."""
    columns = [f"json_extract_string(v.vars, '$.\"{b}\"') AS \"{b}\"" for b in by
               if b not in STRATA]
    frame = store.frame(con, f"""
        SELECT g.case_id, g.provider, g.prompt, g.type, g.metric, g.judge_model,
               g.status, g.score, g.reason, v.output, v.vars{''.join(', ' + c for c in columns)}
        FROM graded_verdicts g JOIN cases v USING (run_id, case_id)
        WHERE g.run_id = ? AND g.status IN ('pass', 'fail') AND (? IS NULL OR g.type = ?)
              AND (? IS NULL OR g.metric = ?) AND (? IS NULL OR g.judge_model = ?)
        ORDER BY g.case_id""", [run_id, type_, type_, metric, metric, judge_model,
                                judge_model])
    if frame.is_empty():
        raise InputError(f"run {run_id} has no judged model-graded verdict to sample")
    if frame["case_id"].is_duplicated().any():
        graded = frame.select("type", "metric", "judge_model").unique().sort(
            pl.all(), nulls_last=True).rows()
        raise InputError(f"run {run_id}: its cases have {len(graded)} graded verdicts each "
                         f"({'; '.join(map(str, graded[:5]))}): name one with --type, "
                         "--metric or --judge-model")
    return frame


def _stratum(frame: pl.DataFrame, by: list[str]) -> pl.Expr:
    """Each case's stratum: `name=value` for each of `by`, joined by `|`."""
    if not by:
        return pl.lit("all")
    parts = [pl.lit(f"{b}=") + pl.col(STRATA.get(b, b)).cast(pl.String).fill_null("")
             for b in by]
    return pl.concat_str(parts, separator="|")


def draw(con: Any, run_id: str, n: int, by: list[str], seed: int | None = None, *,
         type_: str | None = None, metric: str | None = None,
         judge_model: str | None = None, allocation: str = "proportional"
         ) -> tuple[pl.DataFrame, int]:
    """(every candidate case with its stratum, inclusion probability and whether it was
    drawn; the seed). Labels split over the strata by `allocation`, drawn without
    replacement within each; the draw is reproducible from the seed."""
    if n < 1:
        raise InputError(f"--n must be at least 1, got {n}")
    seed = secrets.randbits(31) if seed is None else seed
    frame = _candidates(con, run_id, by, type_, metric, judge_model)
    frame = frame.with_columns(stratum=_stratum(frame, by))
    sizes = frame.group_by("stratum").len().sort("stratum")
    quota = dict(zip(sizes["stratum"], allocate(sizes["len"].to_numpy(), n, allocation)))
    rng = np.random.default_rng(seed)
    drawn = frame.with_columns(_key=pl.Series(rng.random(frame.height))).with_columns(
        sampled=pl.col("_key").rank("ordinal").over("stratum")
        <= pl.col("stratum").replace_strict(quota, return_dtype=pl.Int64),
        inclusion_prob=pl.col("stratum").replace_strict(quota, return_dtype=pl.Float64)
        / pl.len().over("stratum")).drop("_key")
    return drawn, seed


def allocate(sizes: np.ndarray, n: int, allocation: str = "proportional") -> list[int]:
    """n labels over strata of `sizes`: in proportion to their sizes (largest remainders)
    or evenly, each of several strata at least 2 where it has them (a stratum needs two
    labels for a variance), none beyond its size; what a full stratum cannot take goes to the others."""
    if allocation not in ("proportional", "equal"):
        raise InputError(f"allocation is proportional or equal, not {allocation!r}")
    sizes = np.asarray(sizes, dtype=np.int64)
    quota = np.minimum(sizes, 2 if len(sizes) > 1 else 0)
    if quota.sum() > n:
        raise InputError(f"{n} labels cannot give each of {len(sizes)} strata 2: draw at "
                         f"least {int(quota.sum())} or stratify by less")
    total = min(n, int(sizes.sum()))
    ideal = (total * sizes / max(sizes.sum(), 1) if allocation == "proportional"
             else np.full(len(sizes), total / max(len(sizes), 1)))
    left = total - int(quota.sum())
    while left > 0:
        room = np.flatnonzero(quota < sizes)
        weight = np.maximum(ideal[room] - quota[room], 0)
        weight = weight if weight.sum() > 0 else sizes[room].astype(float)
        share = left * weight / weight.sum()
        give = np.floor(share).astype(np.int64)
        extra = np.argsort(give - share)[: left - int(give.sum())]  # largest remainders
        give[extra] += 1
        give = np.minimum(give, sizes[room] - quota[room])
        quota[room] += give
        left -= int(give.sum())
    return quota.tolist()


def record_sample(con: Any, run_id: str, drawn: pl.DataFrame, by: list[str], seed: int
                  ) -> str:
    """Store a drawn sample (every candidate); its id."""
    sample_id = store.new_run_id()
    write_sample(con, drawn.select(
        pl.lit(run_id).alias("run_id"), pl.lit(sample_id).alias("sample_id"), "case_id",
        "stratum", "inclusion_prob", "sampled", pl.lit(",".join(by)).alias("strata_by"),
        pl.lit(seed, pl.Int64).alias("seed")))
    return sample_id
