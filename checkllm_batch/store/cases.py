"""The cases' text, read from a stable source file or from Parquet parts instead of copied.

A run over a Parquet file stores its cases' facts in `case_rows` without their text: the
output and the vars a row carries are read back from that file, by row number, in the
public `cases` view. A case's id is its row in the file (a resumed run keeps them), and its
vars are its test's own vars (`vars_heads`, JSON text up to the row's) followed by the row's
var columns, as the case builder wrote them.

A run over a dataframe, which has no file to read back, writes its cases' text (case_id,
output, vars as the case builder made them) as Parquet parts beside a file database, one
per batch (`Parts`): pyarrow writes them in a quarter of the time DuckDB takes to store the
same text. Every other source, an in-memory database, a Parquet file whose text columns are
not plain text, and a run asked to (`copy_outputs`) keep the copy in `case_rows`.

The file's size and modification time are recorded: `changed_sources` tells a reader whose
file (or parts folder) is gone or was rewritten, so its `output` and `vars` are no longer
the text scored.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import duckdb
import polars as pl
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


class Parts:
    """A run's cases' text as Parquet parts in `folder`, one per batch, named by its first
    case (`000000100000.parquet`: case_id, output, vars). A part is written before its batch
    commits: one whose batch never committed joins no case row, and a resume removes it
    (`parts`) before it writes that batch again."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._recorded = False

    def write(self, cases: pl.DataFrame, first: int) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        part = cases.select(pl.col("case_id").cast(pl.Int64), "output",
                            pl.col("vars").cast(pl.String))
        pq.write_table(part.to_arrow(), self.folder / f"{first:012d}.parquet")

    def record(self, con: duckdb.DuckDBPyConnection, run_id: str) -> None:
        """In the first batch's transaction: `cases` reads this run's text from its parts
        once there is one (read_parquet refuses a folder with none)."""
        if not self._recorded:
            con.execute("INSERT OR REPLACE INTO case_parts VALUES (?, ?)",
                        [run_id, str(self.folder)])
            create_cases_view(con)
            self._recorded = True


def parts(con: duckdb.DuckDBPyConnection, run_id: str, done: int) -> Parts | None:
    """Where `run_id` writes its cases' text, beside a file database
    (`results.duckdb.cases/<run_id>/`); None for an in-memory one, or one whose path
    read_parquet would take for a glob. The parts of batches past the `done` rows committed
    (written before a crash) are removed."""
    path = con.execute("SELECT path FROM duckdb_databases() "
                       "WHERE database_name = current_database()").fetchall()[0][0]
    if path is None:
        return None
    folder = Path(path).resolve().parent / f"{Path(path).name}.cases" / run_id
    if any(c in str(folder) for c in "*?[{"):
        return None
    for part in folder.glob("*.parquet"):
        if int(part.stem) >= done:
            part.unlink()
    return Parts(folder)


def drop_parts(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """The run's parts and their record removed (its rows are being deleted)."""
    folder = con.execute("SELECT folder FROM case_parts WHERE run_id = ?", [run_id]).fetchall()
    if folder:
        con.execute("DELETE FROM case_parts WHERE run_id = ?", [run_id])
        create_cases_view(con)
        shutil.rmtree(folder[0][0], ignore_errors=True)


def changed_sources(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(run_id, path) of every referenced file that is gone or no longer the one scored,
    and every parts folder that is gone."""
    folders = con.execute("SELECT run_id, folder FROM case_parts").fetchall() \
        if _has_sources(con, "case_parts") else []
    changed = [(run_id, folder) for run_id, folder in folders if not Path(folder).is_dir()]
    if not _has_sources(con):
        return changed
    rows = con.execute("SELECT run_id, path, bytes, modified_ns FROM case_sources").fetchall()
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
    """Stored cases, and one branch per run whose text is read from its file or parts."""
    sources = con.execute("SELECT run_id, path, var_names FROM case_sources ORDER BY run_id"
                          ).fetchall() if _has_sources(con) else []
    folders = con.execute("SELECT run_id, folder FROM case_parts ORDER BY run_id").fetchall() \
        if _has_sources(con, "case_parts") else []
    if not sources and not folders:
        return "SELECT * FROM case_rows"
    runs = ", ".join(sql_string(run) for run, *_ in sources + folders)
    branches = [f"SELECT * FROM case_rows WHERE run_id NOT IN ({runs})"]
    branches += [_branch(run, path, names) for run, path, names in sources]
    branches += [_parts_branch(run, folder) for run, folder in folders]
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


def _parts_branch(run_id: str, folder: str) -> str:
    """The run's stored rows with their text from its parts where none is stored."""
    return f"""SELECT r.* REPLACE (COALESCE(r.vars, s.vars::JSON) AS vars,
        COALESCE(r.output, s.output) AS output)
    FROM case_rows r
    LEFT JOIN read_parquet({sql_string(folder + '/*.parquet')}) s ON s.case_id = r.case_id
    WHERE r.run_id = {sql_string(run_id)}"""


def _has_sources(con: duckdb.DuckDBPyConnection, table: str = "case_sources") -> bool:
    return bool(con.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = ? "
                            "AND schema_name = current_schema() "
                            "AND database_name = current_database()", [table]).fetchall())


def sql_string(text: str) -> str:
    """`text` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
