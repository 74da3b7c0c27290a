"""The results database: a versioned public schema, changed only through named migrations.

Public tables (columns may be added, never renamed): runs, cases (a view since 0007: see
store/cases.py), cascade_calibration and cascade_thresholds (a judge cascade's), assertion_results
(assert-set members carry `parent_index`), test_results, named_metrics, derived_metrics.
`assertions` keeps each assertion's spec. `case_labels` holds people's labels given after a run,
`label_samples` the samples of cases drawn for labelling, `anchor_labels` the labels frozen as an anchor set. `judge_calls` is the judge's ledger and cache (one
row per call, by request hash); `judge_batches` / `judge_batch_requests` remember Batch API
jobs so a crashed run resumes them. A migration is SQL text or a function of the connection.
Analysis views (store/views.py) are re-created after any migration is applied, so they
always match the tables present.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

from .views import create_views

MIGRATIONS: list[tuple[str, str | Callable[[duckdb.DuckDBPyConnection], None]]] = [
    ("0001_initial", """
    CREATE TABLE runs (
        run_id VARCHAR PRIMARY KEY, started_at TIMESTAMP, finished_at TIMESTAMP,
        status VARCHAR, suite_path VARCHAR, outputs_path VARCHAR, config JSON, suite JSON,
        cases BIGINT, error VARCHAR);
    CREATE TABLE assertions (
        run_id VARCHAR, test_index INTEGER, test_id VARCHAR, assertion_index INTEGER,
        type VARCHAR, metric VARCHAR, weight DOUBLE, metric_only BOOLEAN, spec JSON);
    CREATE TABLE cases (
        run_id VARCHAR, case_id BIGINT, test_id VARCHAR, test_index INTEGER,
        description VARCHAR, provider VARCHAR, prompt VARCHAR, vars JSON, output VARCHAR,
        output_kind VARCHAR, latency_ms DOUBLE, cost DOUBLE);
    CREATE TABLE assertion_results (
        run_id VARCHAR, case_id BIGINT, assertion_index INTEGER, type VARCHAR,
        metric VARCHAR, weight DOUBLE, metric_only BOOLEAN, status VARCHAR, pass BOOLEAN,
        score DOUBLE, reason VARCHAR);
    CREATE TABLE test_results (
        run_id VARCHAR, case_id BIGINT, status VARCHAR, pass BOOLEAN, score DOUBLE,
        reason VARCHAR);
    CREATE TABLE named_metrics (
        run_id VARCHAR, provider VARCHAR, prompt VARCHAR, metric VARCHAR, sum DOUBLE,
        weight DOUBLE, count BIGINT);
    CREATE TABLE derived_metrics (
        run_id VARCHAR, provider VARCHAR, prompt VARCHAR, name VARCHAR, value DOUBLE);
    """),
    ("0002_analysis_views", lambda con: None),  # views: re-created after every migration
    # assert-set members get their own rows: parent_index = the set's assertion_index, and
    # assertion_index = the member's position in the set. Top-level rows: parent_index NULL.
    ("0003_assertion_parent_index", """
    ALTER TABLE assertion_results ADD COLUMN parent_index INTEGER;
    """),
    ("0004_judge_calls", """
    CREATE TABLE judge_calls (
        request_hash VARCHAR, run_id VARCHAR, kind VARCHAR, model VARCHAR, request JSON,
        reply VARCHAR, embedding DOUBLE[], prompt_tokens BIGINT, completion_tokens BIGINT,
        cost DOUBLE, latency_ms DOUBLE, attempts INTEGER, status VARCHAR, error VARCHAR,
        mode VARCHAR, batch_id VARCHAR, created_at TIMESTAMP DEFAULT current_timestamp);
    CREATE INDEX judge_calls_hash ON judge_calls (request_hash);
    CREATE TABLE judge_batches (
        batch_id VARCHAR PRIMARY KEY, run_id VARCHAR, model VARCHAR, input_file_id VARCHAR,
        requests BIGINT, status VARCHAR, output_file_id VARCHAR, error_file_id VARCHAR,
        created_at TIMESTAMP DEFAULT current_timestamp, finished_at TIMESTAMP);
    CREATE TABLE judge_batch_requests (batch_id VARCHAR, request_hash VARCHAR, request JSON);
    """),
    # scores an assertion reports under other metric names (a python GradingResult's
    # namedScores): they feed named_metrics like assertions tagged with those metrics
    ("0005_named_scores", """
    ALTER TABLE assertion_results ADD COLUMN named_scores STRUCT(metric VARCHAR, score DOUBLE)[];
    """),
    # a batch is the unit of durability: its rows and its run_batches row land in one
    # transaction; resume continues after the last one. The run keeps what it ran on
    # (content hashes) and which process runs it (a killed one is found out).
    ("0006_run_batches", """
    ALTER TABLE runs ADD COLUMN suite_hash VARCHAR;
    ALTER TABLE runs ADD COLUMN outputs_hash VARCHAR;
    ALTER TABLE runs ADD COLUMN host VARCHAR;
    ALTER TABLE runs ADD COLUMN pid INTEGER;
    CREATE TABLE run_batches (
        run_id VARCHAR, batch INTEGER, first_case BIGINT, rows BIGINT,
        committed_at TIMESTAMP DEFAULT current_timestamp);
    """),
    # the cases' text stays in a stable source file: `cases` becomes a view over the stored
    # facts (`case_rows`) that reads each referencing run's output and row vars from its
    # Parquet file by row number (case_sources); copying 1M outputs cost a third of a run
    ("0007_case_sources", """
    ALTER TABLE cases RENAME TO case_rows;
    CREATE TABLE case_sources (
        run_id VARCHAR PRIMARY KEY, path VARCHAR, bytes BIGINT, modified_ns BIGINT,
        var_names VARCHAR[], vars_heads VARCHAR[]);
    """),
    # the pass-rate views gain their 95 % Wilson interval (pass_rate_low, pass_rate_high):
    # no table changes, applying it re-creates the views in databases written before
    ("0008_pass_rate_intervals", lambda con: None),
    # a jury's or repeated judge's gradings of each result (judge models / repeat): one
    # struct per juror x repeat, as the assertion reads them; NULL for a single grading.
    # The views juror_verdicts, judge_consistency and jury_agreement read them.
    ("0009_judge_votes", """
    ALTER TABLE assertion_results ADD COLUMN votes
        STRUCT(juror VARCHAR, repeat INTEGER, pass BOOLEAN, score DOUBLE, reason VARCHAR)[];
    """),
    # auditing the judge: graded_verdicts, judge_labels, judge_agreement; the pass-rate
    # views count `skipped` cases (outside a judge sample) apart, with finite-population
    # intervals where a rate is of a sample. Views only: applying it re-creates them.
    ("0010_judge_audit", lambda con: None),
    # a dataframe's cases' text (it has no file to read back) is written as Parquet parts
    # beside the database, one per batch, and read back by `cases` (store/cases.py):
    # storing 1M outputs and vars in DuckDB cost a frame a third more than its file
    ("0011_case_parts", "CREATE TABLE case_parts (run_id VARCHAR PRIMARY KEY, folder VARCHAR)"),
    # people's labels given after a run (`labels import`, Results.add_labels): a case's label
    # (assertion_index NULL: for each of its graded assertions) or one assertion's; and the
    # samples drawn for labelling (`labels sample`): each candidate case's stratum and
    # inclusion probability, so corrected estimates weigh the labels as they were drawn
    ("0012_labels", """
    CREATE TABLE case_labels (
        run_id VARCHAR, case_id BIGINT, assertion_index INTEGER, label VARCHAR, value VARCHAR,
        labelled_by VARCHAR, labelled_at TIMESTAMP DEFAULT current_timestamp, source VARCHAR);
    CREATE TABLE label_samples (
        run_id VARCHAR, sample_id VARCHAR, case_id BIGINT, stratum VARCHAR,
        inclusion_prob DOUBLE, sampled BOOLEAN, strata_by VARCHAR, seed BIGINT,
        drawn_at TIMESTAMP DEFAULT current_timestamp);
    """),
    # a frame's text is stored in the database unless a run asks for parts (text_parts), and
    # parts are found from where the database is now: the folder recorded relative to it
    ("0013_case_parts_relative",
     r"UPDATE case_parts SET folder = regexp_extract(folder, '[^/\\]+[/\\][^/\\]+$')"),
    # a stream (a dataframe) is fingerprinted batch by batch as it is read: each committed
    # batch's rows' sha256 (load/fingerprint.py), checked again by a resume
    ("0014_batch_digests", "ALTER TABLE run_batches ADD COLUMN digest VARCHAR"),
    # an anchor set (`labels import --anchor`): labels frozen by their case's content (the
    # output and vars hashed: store/anchors.py), judged again by every run that holds them
    ("0016_anchor_labels", """
    CREATE TABLE anchor_labels (
        label VARCHAR, anchor_key VARCHAR, output_md5 VARCHAR, assertion_index INTEGER,
        value VARCHAR, run_id VARCHAR, case_id BIGINT, labelled_by VARCHAR,
        frozen_at TIMESTAMP DEFAULT current_timestamp);
    """),
    # certified judge cascades (evaluate/judging/cascade.py): each call's token logprobs (a
    # `logprobs` stage's confidence, served again from the cache); per graded result the
    # stage that decided it, its confidence, and whether a certified threshold kept it (an
    # `abstain: last` verdict is not); per run the calibration cases and each stage's
    # certified threshold per graded assertion
    # (judge_calls is 0004's: a database made without it, in tests, has none to change)
    ("0017_cascade", """
    ALTER TABLE IF EXISTS judge_calls ADD COLUMN logprobs JSON;
    ALTER TABLE assertion_results ADD COLUMN cascade_stage INTEGER;
    ALTER TABLE assertion_results ADD COLUMN confidence DOUBLE;
    ALTER TABLE assertion_results ADD COLUMN certified BOOLEAN;
    CREATE TABLE cascade_calibration (run_id VARCHAR, case_id BIGINT);
    CREATE TABLE cascade_thresholds (
        run_id VARCHAR, key INTEGER, type VARCHAR, metric VARCHAR, stage INTEGER,
        models VARCHAR[], confidence VARCHAR, threshold DOUBLE, n BIGINT, k BIGINT,
        bound DOUBLE, tried INTEGER, calibrated BIGINT, agreement DOUBLE, risk DOUBLE,
        reference VARCHAR);
    """),
]


def pending(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The migrations this database has not seen yet."""
    exists = con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = "
                         "current_database() AND table_name = 'schema_migrations'").fetchall()
    done = {r[0] for r in con.sql("SELECT name FROM schema_migrations").fetchall()} \
        if exists[0][0] else set()
    return [name for name, _ in MIGRATIONS if name not in done]


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Apply, in order, every migration this database has not seen yet."""
    con.execute("CREATE TABLE IF NOT EXISTS schema_migrations "
                "(name VARCHAR PRIMARY KEY, applied_at TIMESTAMP DEFAULT current_timestamp)")
    names = set(pending(con))
    todo = [(name, ddl) for name, ddl in MIGRATIONS if name in names]
    for name, ddl in todo:
        con.execute("BEGIN")
        ddl(con) if callable(ddl) else con.execute(ddl)
        con.execute("INSERT INTO schema_migrations (name) VALUES (?)", [name])
        con.execute("COMMIT")
    if todo:
        create_views(con)
