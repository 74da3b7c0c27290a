"""The Python API: evaluate frames or files, read results as Polars, copy runs."""

import os
import subprocess
import sys

import polars as pl
import pytest
from conftest import ROOT, write_suite

import checkllm_batch as cb

SUITE = {"defaultTest": {"assert": [{"type": "contains", "value": "{{expected}}",
                                     "metric": "hit"}]}}


def test_evaluate_an_arrow_table_and_read_frames(tmp_path):
    table = pl.DataFrame({"output": ["a b", "c"], "expected": ["b", "x"],
                          "provider": ["p", "p"]}).to_arrow()
    run = cb.evaluate(write_suite(tmp_path, SUITE), table)
    assert isinstance(run.test_results, pl.DataFrame)
    assert run.test_results["status"].to_list() == ["pass", "fail"]
    assert run.summary().row(0, named=True)["pass_rate"] == 0.5
    assert run.cases["vars"].to_list() == ['{"expected":"b"}', '{"expected":"x"}']


def test_write_copies_a_run_into_another_database(tmp_path):
    run = cb.evaluate(ROOT / "data" / "suite.yaml", ROOT / "data" / "outputs.jsonl")
    copy = cb.write(run, tmp_path / "archive.duckdb")
    assert copy.run_id == run.run_id
    assert copy.test_results.equals(run.test_results)
    assert copy.derived_metrics.sort("provider", "name").equals(
        run.derived_metrics.sort("provider", "name"))
    assert cb.get_run(tmp_path / "archive.duckdb").run_id == run.run_id
    again = cb.write(cb.get_run(tmp_path / "archive.duckdb"), tmp_path / "again.duckdb")
    assert again.test_results.equals(run.test_results)  # from a read-only reader
    again.con.close()
    with pytest.raises(cb.InputError, match=f"again.duckdb: already holds run {run.run_id}"):
        cb.write(run, tmp_path / "again.duckdb")
    assert cb.Results(tmp_path / "again.duckdb").runs().height == 1


def test_suite_spec_is_stored_with_the_run(tmp_path):
    run = cb.evaluate(write_suite(tmp_path, SUITE), pl.DataFrame({"output": ["x"],
                                                                  "expected": ["x"]}))
    specs = run.table("assertions")
    assert specs["type"].to_list() == ["contains"]
    assert '"value": "{{expected}}"' in specs["spec"][0]


SET = {"type": "assert-set", "assert": [{"type": "contains", "value": "b"},
                                        {"type": "icontains", "value": "Ü"}]}
# (a test's assertions, the outputs, (assertion_index, parent_index, type) of case 0's rows):
# each assert-set is followed by its members, in both readers
READ_ORDER = [
    ([{"type": "contains", "value": "a"}, SET, {"type": "equals", "value": "ab"}], ["ab", "üb"],
     [(0, None, "contains"), (1, None, "assert-set"), (0, 1, "contains"), (1, 1, "icontains"),
      (2, None, "equals")]),
    ([SET, {"type": "contains", "value": "a"}], [""],
     [(0, None, "assert-set"), (0, 0, "contains"), (1, 0, "icontains"), (1, None, "contains")]),
    ([{"type": "contains", "value": "Ünï"}], [None], [(0, None, "contains")]),
]


@pytest.mark.parametrize("asserts,outputs,order", READ_ORDER)
def test_run_and_results_read_a_run_alike(tmp_path, asserts, outputs, order):
    suite = write_suite(tmp_path, {"tests": [{"assert": asserts}]})
    run = cb.evaluate(suite, pl.DataFrame({"output": outputs}, schema={"output": pl.String}))
    res = cb.Results(run.con)
    assert res.run().run_id == cb.get_run(run.con).run_id == run.run_id
    assert res.run().test_results.equals(run.test_results)
    rows = run.assertion_results.filter(pl.col("case_id") == 0)
    assert rows.select("assertion_index", "parent_index", "type").rows() == order
    assert res.results().equals(run.assertion_results)


def test_a_stored_batch_is_let_go_while_the_next_is_evaluated(tmp_path, monkeypatch):
    """Once the writer has stored batch k, nothing holds its cases, results and test results
    while batch k + 1 is evaluated: at 64 MiB batches they are ~100 MB of a run's peak."""
    import gc
    import time
    import weakref

    from checkllm_batch.run import batches

    held: list[list[weakref.ref]] = []
    real = batches.evaluate_batch

    def evaluate_batch(plan, cases, judge=None):
        if held:  # the previous batch's frames: gone once the writer is done with them
            deadline = time.monotonic() + 10
            while any(r() is not None for r in held[-1]) and time.monotonic() < deadline:
                gc.collect()
                time.sleep(0.01)
            assert [r() is None for r in held[-1]] == [True, True, True]
        results, tests = real(plan, cases, judge=judge)
        held.append([weakref.ref(cases), weakref.ref(results), weakref.ref(tests)])
        return results, tests

    monkeypatch.setattr(batches, "evaluate_batch", evaluate_batch)
    suite = write_suite(tmp_path, {"tests": [{"assert": [
        {"type": "equals", "value": "{{expected}}"}, {"type": "contains", "value": "a"}]}]})
    outputs = pl.DataFrame({"output": [f"a{i}" for i in range(3000)],
                            "expected": [f"a{i % 7}" for i in range(3000)]})
    run = cb.evaluate(suite, outputs, db=tmp_path / "r.duckdb", batch_rows=1000)
    assert len(held) == 3
    assert run.assertion_results.height == 6000


def test_a_file_database_lets_written_blocks_go_past_the_write_buffer(tmp_path, monkeypatch):
    """While batches go in, a file database keeps at most WRITE_BUFFER of written blocks in
    memory (so a 10M-case run peaks where a 1M one does), under the usual memory limit (a
    lower one makes DuckDB hand memory back to the system after nearly every batch). An
    in-memory database's blocks are its data: they stay."""
    from checkllm_batch.store import runs as store

    monkeypatch.setattr(store, "WRITE_BUFFER", 8 * 2**20)
    suite = write_suite(tmp_path, {"tests": [{"assert": [{"type": "contains", "value": "x"}]}]})
    outputs = pl.DataFrame({"output": [f"x {i} " * 8 for i in range(300_000)]})
    held: list[tuple[int, int]] = []  # after each batch: (written blocks, in-memory tables)
    append = store.append

    def watched(con, *args, **kwargs):
        append(con, *args, **kwargs)
        held.append(con.execute(
            "SELECT SUM(memory_usage_bytes) FILTER (tag = 'BASE_TABLE'), SUM(memory_usage_bytes)"
            " FILTER (tag = 'IN_MEMORY_TABLE') FROM duckdb_memory()").fetchall()[0])

    monkeypatch.setattr(store, "append", watched)
    for db in (tmp_path / "r.duckdb", ":memory:"):
        held.clear()
        run = cb.evaluate(suite, outputs, db=db, batch_rows=50_000,
                          copy_outputs=True)  # the text in DuckDB, as a file's is
        assert run.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0] \
            == "488.2 MiB"
        assert run.summary()["cases"].to_list() == [300_000]
        written, in_memory = zip(*held)
        if db == ":memory:":  # its tables held in memory past the buffer, none let go
            assert max(written) == 0 and in_memory[-1] > 8 * 2**20
        else:  # a few batches fill the buffer, then written blocks are let go
            assert len(written) == 6 and max(written) <= 8 * 2**20
            assert any(later < earlier for earlier, later in zip(written, written[1:]))


def test_letting_blocks_go_gives_way_to_pinned_memory(tmp_path, monkeypatch):
    """When what is pinned (another cursor's open transaction) does not fit under the lowered
    limit, the blocks stay for a later batch: the writer goes on under the usual limit."""
    from checkllm_batch.store import runs as store

    con = store.connect(tmp_path / "r.duckdb")
    con.execute("CREATE TABLE t AS SELECT range AS a, repeat('x', 50) AS s FROM range(300000)")
    other = con.cursor()
    other.execute("BEGIN")
    other.execute("INSERT INTO t SELECT range, 'y' FROM range(1000000)")
    monkeypatch.setattr(store, "WRITE_BUFFER", 4096)  # the floor: 1 KiB
    store._let_go(con)
    assert con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0] == "488.2 MiB"
    other.execute("COMMIT")
    assert con.execute("SELECT count(*) FROM t").fetchall()[0][0] == 1_300_000
    con.close()


KEEP = "dirty_decay_ms:500,muzzy_decay_ms:1000,dirty_decay_ms:10000,muzzy_decay_ms:10000"


def allocator_setting(code: str, setting: str | None) -> str:
    """_RJEM_MALLOC_CONF after `code` then `import checkllm_batch`, in a fresh process."""
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    if setting is not None:
        env["_RJEM_MALLOC_CONF"] = setting
    show = code + "import os, checkllm_batch; print(os.environ['_RJEM_MALLOC_CONF'])"
    return subprocess.run([sys.executable, "-c", show], env=env, capture_output=True,
                          text=True, check=True, cwd=ROOT).stdout.strip()


@pytest.mark.parametrize("code, setting, expected", [
    ("", None, KEEP),
    # a child of a process whose Polars exported its defaults (a benchmark's CLI run)
    ("", "dirty_decay_ms:500,muzzy_decay_ms:1000", KEEP),
    ("import polars; ", None, "dirty_decay_ms:500,muzzy_decay_ms:1000"),  # Polars' own
    ("", "narenas:2", "dirty_decay_ms:500,muzzy_decay_ms:1000,narenas:2"),  # the user's own
])
def test_polars_keeps_freed_pages_when_checkllm_batch_loads_it(code, setting, expected):
    """Importing checkllm_batch before Polars sets Polars' allocator to keep freed pages for
    the next batch (Polars appends a setting it finds to its own defaults: the last wins);
    loaded after Polars, it changes nothing; a user's own setting is left alone."""
    assert allocator_setting(code, setting) == expected
