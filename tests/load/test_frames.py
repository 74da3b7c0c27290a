"""Outputs as any dataframe (load/frames.py), and cb.score (score.py): each kind of frame is
scored row for row as the same rows given as a Parquet file, read batch by batch, and comes
back as the caller's kind of frame with the verdict columns; anything else is refused."""

from __future__ import annotations

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from conftest import ROOT, write_suite

import checkllm_batch as cb
from checkllm_batch.errors import InputError
from checkllm_batch.load import frames
from checkllm_batch.load.frames import Keep, frame_source

# empty, null and unicode rows; a category-like provider; expected per row
ROWS = pa.table({
    "output": ["yes", "no", "", None, "café ☕ a", "banana", "a" * 9, "x"],
    "expected": ["yes", "yes", "", "x", "café ☕ a", "banana", "a" * 9, "y"],
    "provider": ["p1", "p2", "p1", "p2", "p1", "p2", "p1", "p2"],
})
SUITE = {"defaultTest": {"assert": [
    {"type": "equals", "value": "{{expected}}"},
    {"type": "contains", "value": "a", "metric": "has_a"},
    {"type": "max-length", "value": 5},
]}}
ASSERTIONS = ["equals_0", "has_a", "max-length_2"]


class CStream:
    """Nothing but the Arrow C stream interface (as a library unknown to us would offer)."""

    def __init__(self, table: pa.Table):
        self.table = table

    def __arrow_c_stream__(self, requested_schema=None):
        return self.table.__arrow_c_stream__(requested_schema)


def hf_dataset(table: pa.Table):
    import datasets  # test extras

    return datasets.Dataset.from_polars(pl.from_arrow(table))


INDEX = [f"row-{i}" for i in range(ROWS.num_rows)][::-1]  # a non-default index, reversed
KINDS = [  # (name, the rows as that kind of frame, the kind of frame cb.score returns)
    ("pandas", lambda t, p: t.to_pandas().set_axis(INDEX), pd.DataFrame),
    ("polars", lambda t, p: pl.from_arrow(t), pl.DataFrame),
    ("polars lazy", lambda t, p: pl.scan_parquet(p), pl.DataFrame),
    ("polars lazy, filtered", lambda t, p: pl.scan_parquet(p).filter(  # not read by slices
        pl.col("provider").is_not_null()), pl.DataFrame),
    ("arrow table", lambda t, p: t, pa.Table),
    ("arrow reader", lambda t, p: pa.RecordBatchReader.from_batches(
        t.schema, t.to_batches(max_chunksize=3)), pa.Table),
    ("arrow dataset", lambda t, p: pads.dataset(p), pa.Table),
    ("duckdb relation", lambda t, p: duckdb.connect().read_parquet(str(p)), pa.Table),
    ("c stream", lambda t, p: CStream(t), pa.Table),
    ("hugging face", lambda t, p: hf_dataset(t), pa.Table),
]


@pytest.fixture
def parquet(tmp_path):
    path = tmp_path / "outputs.parquet"
    pq.write_table(ROWS, path, row_group_size=3)
    return path


def reference(suite, path) -> pl.DataFrame:
    """The file's verdicts, read from the run's tables: a row per case, in case order."""
    run = cb.evaluate(suite, str(path))
    tests = run.test_results.select("case_id", "status", "pass", "score", "reason")
    top = run.assertion_results.filter(pl.col("parent_index").is_null())
    wide = top.pivot("assertion_index", index="case_id", values="pass").sort("case_id")
    return tests.join(wide, on="case_id").sort("case_id")


def as_polars(frame) -> pl.DataFrame:
    return pl.from_pandas(frame) if isinstance(frame, pd.DataFrame) else pl.DataFrame(frame)


@pytest.mark.parametrize("name, make, returned", KINDS, ids=[k[0] for k in KINDS])
def test_each_kind_scores_row_for_row_as_its_file(tmp_path, parquet, name, make, returned):
    suite = write_suite(tmp_path, SUITE)
    want = reference(suite, parquet)
    got = cb.score(make(ROWS, parquet), suite, batch_rows=3)  # three batches
    assert type(got) is returned
    if returned is pd.DataFrame:
        assert list(got.index) == INDEX
    frame = as_polars(got)
    assert frame.columns == [*ROWS.column_names, "status", "pass", "score", "reason",
                             *(f"{a}_{v}" for a in ASSERTIONS for v in ("pass", "score"))]
    assert frame.select(ROWS.column_names).to_arrow().cast(ROWS.schema).equals(ROWS)
    for column in ("status", "pass", "score", "reason"):
        assert frame[column].to_list() == want[column].to_list(), column
    for index, assertion in enumerate(ASSERTIONS):
        assert frame[f"{assertion}_pass"].to_list() == want[str(index)].to_list(), assertion


def test_the_run_is_in_the_frames_attrs_and_results_read_it(tmp_path):
    scored = cb.score(ROWS.to_pandas(), write_suite(tmp_path, SUITE))
    failed = scored[~scored["pass"]]  # pandas copies attrs into a filtered frame
    run = failed.attrs["run"]
    assert run is scored.attrs["run"] and run.status == "finished"
    rates = cb.Results(run.con).pass_rates().sort("provider")
    assert rates["provider"].to_list() == ["p1", "p2"]
    assert run.summary()["pass"].sum() == int(scored["pass"].sum())


def test_a_db_given_holds_the_run(tmp_path):
    db = tmp_path / "r.duckdb"
    frame, run = cb.score(pl.from_arrow(ROWS), write_suite(tmp_path, SUITE), db=db,
                          with_run=True)
    run.con.close()
    cases = cb.Results(db).cases()
    assert cases.height == ROWS.num_rows
    assert cases.sort("case_id")["status"].to_list() == frame["status"].to_list()


SLICED = [  # (a query over the file, whether Polars reads a slice of it at its scans alone)
    ("scan", lambda p: pl.scan_parquet(p), True),
    ("columns", lambda p: pl.scan_parquet(p).select("output", n=pl.col("output").str.len_chars()),
     True),
    ("ipc", lambda p: pl.read_parquet(p).write_ipc(p.with_suffix(".arrow")) or pl.scan_ipc(
        p.with_suffix(".arrow")), True),
    ("filter", lambda p: pl.scan_parquet(p).filter(pl.col("output") != "x"), False),
    ("sort", lambda p: pl.scan_parquet(p).sort("output"), False),
    ("row index", lambda p: pl.scan_parquet(p).with_row_index(), True),  # at the scan too
    ("concat", lambda p: pl.concat([pl.scan_parquet(p)] * 2), False),
    ("csv", lambda p: pl.read_parquet(p).write_csv(p.with_suffix(".csv")) or pl.scan_csv(
        p.with_suffix(".csv")), False),  # would read every line before each slice
    ("in memory", lambda p: pl.read_parquet(p).lazy(), False),
]


@pytest.mark.parametrize("name, query, sliced", SLICED, ids=[s[0] for s in SLICED])
def test_a_lazy_scan_is_read_slice_by_slice_where_polars_slices_at_the_scan(
        parquet, name, query, sliced):
    """Polars decodes a scan far ahead of collect_batches' consumer (pola-rs/polars#28569):
    a query it slices at its scans is read a slice at a time, each slice alone; the rows
    are the query's either way."""
    lazy = query(parquet)
    assert frames._sliced_at_scans(lazy, 2) is sliced
    batches = list(frames._lazy(lazy, 2))
    assert max(b.num_rows for b in batches) <= 2
    assert pa.Table.from_batches(batches).equals(lazy.collect().to_arrow())


def test_a_lazy_frame_and_a_pandas_frame_are_read_batch_by_batch():
    lazy = Keep(pl.LazyFrame(ROWS).filter(pl.col("provider") == "p1"))
    batches = list(frame_source(lazy, 2).batches)
    assert sum(b.num_rows for b in batches) == 4 and len(lazy.batches) >= 2
    frame = Keep(ROWS.to_pandas())
    list(frame_source(frame, 3).batches)
    assert [b.num_rows for b in frame.batches] == [3, 3, 2]


def test_the_bundled_example_as_pandas_matches_its_file():
    """Several tests (routed by test_id): an assertion a row's test lacks is <NA>."""
    frame = pd.read_json(ROOT / "data" / "outputs.jsonl", lines=True, dtype=False)
    scored = cb.score(frame, ROOT / "data" / "suite.yaml")
    want = cb.evaluate(ROOT / "data" / "suite.yaml", str(ROOT / "data" / "outputs.jsonl"))
    assert scored["status"].tolist() == want.test_results["status"].to_list()
    first = scored[scored["test_id"] == "review-001"]
    assert first["false_positives_pass"].isna().all()
    assert first["false_negatives_pass"].notna().all()


CLASHES = [  # input columns -> the verdict / assertion names they push aside
    (["score"], "test_score", "has_a_pass"),
    (["has_a_pass"], "score", "has_a_1_pass"),
]


@pytest.mark.parametrize("extra, verdict, assertion", CLASHES)
def test_names_never_replace_an_input_column(tmp_path, extra, verdict, assertion):
    frame = ROWS.to_pandas().assign(**{c: "mine" for c in extra})
    scored = cb.score(frame, write_suite(tmp_path, SUITE))
    assert (scored[extra[0]] == "mine").all()
    assert verdict in scored.columns and assertion in scored.columns


REFUSED = [  # (outputs, what the message says)
    ([{"output": "x"}], "a list is neither a path nor a dataframe"),
    ({"output": ["x"]}, "a dict is neither a path nor a dataframe"),
    (pd.DataFrame({"output": ["x"], "case_id": [1]}),
     "<pandas.DataFrame>: column 'case_id' is reserved"),
    (pl.LazyFrame({"output": ["x"], "__x": [1]}), "<polars.LazyFrame>: column '__x' is reserved"),
    (pd.DataFrame({"output": ["x", 1j]}), "<pandas.DataFrame>: rows 1-2: cannot be read"),
]


@pytest.mark.parametrize("outputs, message", REFUSED)
def test_what_is_not_a_frame_or_a_readable_one_is_refused_by_name(tmp_path, outputs, message):
    with pytest.raises(InputError) as e:
        cb.evaluate(write_suite(tmp_path, SUITE), outputs)
    assert message in str(e.value)
    assert "not found" not in str(e.value)


def test_the_refusal_lists_what_is_accepted(tmp_path):
    with pytest.raises(InputError, match="a path .*pandas or Polars DataFrame.*__arrow_c_st"):
        cb.score(object(), write_suite(tmp_path, SUITE))


def test_score_takes_a_frame_not_a_path(tmp_path, parquet):
    with pytest.raises(InputError, match=r"cb.score takes a dataframe \(a pandas .*use cb.eval"):
        cb.score(str(parquet), write_suite(tmp_path, SUITE))


def test_a_category_column_is_read_as_its_values(tmp_path):
    frame = ROWS.to_pandas().astype({"expected": "category"})
    scored = cb.score(frame, write_suite(tmp_path, SUITE))
    assert scored["equals_0_pass"].tolist() == [o == e for o, e in zip(
        ROWS["output"].to_pylist(), ROWS["expected"].to_pylist())]
    assert str(scored["expected"].dtype) == "category"  # the input's own column, as given


def test_a_dict_suite_scores_as_its_file(tmp_path):
    frame = ROWS.to_pandas()
    from_file = cb.score(frame, write_suite(tmp_path, SUITE))
    from_dict = cb.score(frame, SUITE)
    pd.testing.assert_frame_equal(from_dict, from_file)
