"""The cases' text, read from a stable source file instead of copied.

A run over a Parquet file stores its cases' facts in `case_rows` without their text: the
output and the vars a row carries are read back from that file, by row number, in the
public `cases` view. A case's id is its row in the file (a resumed run keeps them), and its
vars are its test's own vars (`vars_heads`, JSON text up to the row's) followed by the row's
var columns, as the case builder wrote them. Every other source, a Parquet file whose text
columns are not plain text, and a run asked to (`copy_outputs`) keep the copy.

The file's size and modification time are recorded: `changed_sources` tells a reader whose
file is gone or was rewritten, so its `output` and `vars` are no longer the text scored.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

# What DuckDB's json_object writes exactly as Polars' struct.json_encode does.
_PLAIN = (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer,
          pa.types.is_boolean)


def referable(source: str, var_names: Sequence[str]) -> bool:
    """True when `source` is a Parquet file whose output is text and whose var columns
    DuckDB prints as the case builder does (text, integers, booleans)."""
    if not source.endswith(".parquet") or not Path(source).is_file() \
            or any(c in source for c in "*?[{"):  # read_parquet would take it for a glob
        return False
    try:
        schema = pq.read_schema(source)
    except (pa.ArrowException, OSError):
        return False
    fields = {f.name: f.type for f in schema}
    text = fields.get("output")
    return (text is not None and (pa.types.is_string(text) or pa.types.is_large_string(text))
            and all(n in fields and any(ok(fields[n]) for ok in _PLAIN) for n in var_names))


def leave_in_file(con: duckdb.DuckDBPyConnection, run_id: str, source: str | None,
                  var_names: Sequence[str], vars_heads: Sequence[str | None]) -> bool:
    """Whether `run_id`'s cases read their text from `source` (recorded if so)."""
    if source is None or not referable(source, var_names):
        return False
    reference(con, run_id, source, var_names, vars_heads)
    return True


def reference(con: duckdb.DuckDBPyConnection, run_id: str, source: str,
              var_names: Sequence[str], vars_heads: Sequence[str | None]) -> None:
    """Record that `run_id`'s cases read their text from `source`, and re-create `cases`."""
    path = Path(source).resolve()
    stat = path.stat()
    con.execute("INSERT OR REPLACE INTO case_sources VALUES (?, ?, ?, ?, ?, ?)",
                [run_id, str(path), stat.st_size, stat.st_mtime_ns, list(var_names),
                 list(vars_heads)])
    create_cases_view(con)


def changed_sources(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(run_id, path) of every referenced file that is gone or no longer the one scored."""
    if not _has_sources(con):
        return []
    rows = con.execute("SELECT run_id, path, bytes, modified_ns FROM case_sources").fetchall()
    changed = []
    for run_id, path, size, modified in rows:
        try:
            stat = os.stat(path)
        except OSError:
            changed.append((run_id, path))
            continue
        if (stat.st_size, stat.st_mtime_ns) != (size, modified):
            changed.append((run_id, path))
    return changed


def create_cases_view(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"CREATE OR REPLACE VIEW cases AS {cases_sql(con)}")
    con.execute("COMMENT ON VIEW cases IS 'one row per scored output: test, provider, prompt, "
                "vars (JSON), output, cost'")


def cases_sql(con: duckdb.DuckDBPyConnection) -> str:
    """Stored cases, and one branch per run whose text is read from its file."""
    sources = con.execute("SELECT run_id, path, var_names FROM case_sources ORDER BY run_id"
                          ).fetchall() if _has_sources(con) else []
    if not sources:
        return "SELECT * FROM case_rows"
    runs = ", ".join(sql_string(run) for run, _, _ in sources)
    branches = [f"SELECT * FROM case_rows WHERE run_id NOT IN ({runs})"]
    branches += [_branch(run, path, names) for run, path, names in sources]
    return "\nUNION ALL\n".join(branches)


def _branch(run_id: str, path: str, var_names: list[str]) -> str:
    """The run's stored rows with their text from the file where none is stored (a row the
    file no longer has keeps its case, text null)."""
    pairs = ", ".join(f"{sql_string(n)}, s.{_identifier(n)}" for n in var_names)
    row_vars = f"(json_object({pairs})::VARCHAR)[2:]" if var_names else "'}'"
    return f"""SELECT r.* REPLACE (
        COALESCE(r.vars, (k.vars_heads[r.test_index + 1] || {row_vars})::JSON) AS vars,
        COALESCE(r.output, s.output) AS output)
    FROM case_rows r JOIN case_sources k ON k.run_id = r.run_id
    LEFT JOIN read_parquet({sql_string(path)}, file_row_number = true) s
      ON s.file_row_number = r.case_id
    WHERE r.run_id = {sql_string(run_id)}"""


def _has_sources(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(con.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = 'case_sources' "
                            "AND schema_name = current_schema() "
                            "AND database_name = current_database()").fetchall())


def sql_string(text: str) -> str:
    """`text` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
