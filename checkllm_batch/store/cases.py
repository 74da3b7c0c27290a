"""The cases' text: stored in the database, or read from a stable source file or from
Parquet parts beside it.

A run over a Parquet file stores its cases' facts in `case_rows` without their text: the
output and the vars a row carries are read back from that file, by row number, in the
public `cases` view. A case's id is its row in the file (a resumed run keeps them), and its
vars are its test's own vars (`vars_heads`, JSON text up to the row's) followed by the row's
var columns, as the case builder wrote them.

Every other source (a dataframe, a CSV or JSON file, a Parquet file whose text columns are
not plain text) and a run asked to (`copy_outputs`) store the text in `case_rows`: the
database is then one file to move, copy or archive. A run asked to (`text_parts`) writes
that text as Parquet parts beside a file database instead, one per batch (`Parts`), in
`<database file name>.cases/<run_id>/`, found from where the database is now: moved with
its folder it reads them, copied alone it does not (the copy's own folder is missing).

`cases` is resolved when a connection opens the database (`create_cases_view`): a run
whose file is gone or changed (its size and modification time are recorded), or whose
parts are gone or damaged, reads null text, and `changed_sources` names it; no other run
is touched, and nothing fails to read.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError

_PART = re.compile(r"\d{12}\.parquet")  # a part's name: its first case

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
        """In the first batch's transaction: this run's text is in its parts (the folder
        recorded relative to the database's own folder); `cases` reads them once the run
        ends (`finish_run`) or the database is opened again."""
        if not self._recorded:
            relative = f"{self.folder.parent.name}/{self.folder.name}"
            con.execute("INSERT OR REPLACE INTO case_parts VALUES (?, ?)", [run_id, relative])
            self._recorded = True


def database_path(con: duckdb.DuckDBPyConnection) -> Path | None:
    """The file of the connection's database; None in memory."""
    path = con.execute("SELECT path FROM duckdb_databases() "
                       "WHERE database_name = current_database()").fetchall()[0][0]
    return None if path is None else Path(path).resolve()


def parts_root(con: duckdb.DuckDBPyConnection) -> Path:
    """The folder of a file database's parts, `results.duckdb.cases/` beside it, checked
    usable before a run starts (an InputError names the path otherwise)."""
    path = database_path(con)
    if path is None:
        raise InputError("text_parts: an in-memory database keeps its cases' text; give db= "
                         "a file to write parts beside it")
    root = path.parent / f"{path.name}.cases"
    if any(c in str(root) for c in "*?[{"):
        raise InputError(f"text_parts: {root}: a folder named with *, ?, [ or {{ cannot be "
                         "read back; rename the database or keep the text in it")
    if root.exists() and not root.is_dir():
        raise InputError(f"{root}: exists and is not a folder, where a run's cases' text goes "
                         "(text_parts): move it away, or evaluate without text_parts")
    return root


def parts(con: duckdb.DuckDBPyConnection, run_id: str, done: int) -> Parts:
    """Where `run_id` writes its cases' text (`results.duckdb.cases/<run_id>/`). The parts
    of batches past the `done` rows committed (written before a crash) are removed; any
    other file there is left alone, and never read."""
    folder = parts_root(con) / run_id
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder}: exists and is not a folder: move it away to resume")
    for part in folder.glob("*.parquet") if folder.is_dir() else []:
        if _PART.fullmatch(part.name) and int(part.stem) >= done:
            part.unlink()
    return Parts(folder)


def has_parts(con: duckdb.DuckDBPyConnection, run_id: str) -> bool:
    return bool(con.execute("SELECT 1 FROM case_parts WHERE run_id = ?", [run_id]).fetchall())


def drop_parts(con: duckdb.DuckDBPyConnection, run_id: str) -> None:
    """The run's parts and their record removed (its rows are being deleted)."""
    if has_parts(con, run_id):
        con.execute("DELETE FROM case_parts WHERE run_id = ?", [run_id])
        create_cases_view(con)
        path = database_path(con)
        if path is not None:
            shutil.rmtree(path.parent / f"{path.name}.cases" / run_id, ignore_errors=True)


@dataclass(frozen=True)
class Unreadable:
    """A run whose cases' text cannot be read where it was left: `cases` gives it null."""

    run_id: str
    path: str
    why: str
    parts: bool = False

    def __str__(self) -> str:
        fix = ("keep that folder beside the database, moved or copied with it" if self.parts
               else "evaluate with --copy-outputs to keep the text in the database")
        return (f"run {self.run_id} reads its cases' output and vars from {self.path}, "
                f"which {self.why}: null for that run only ({fix})")


def changed_sources(con: duckdb.DuckDBPyConnection) -> list[Unreadable]:
    """Each run whose cases' text is in a file that is gone or no longer the one scored, or
    in parts that are gone or damaged."""
    return _resolved(con)[1]


def refuse_unreadable(con: duckdb.DuckDBPyConnection, run_id: str, doing: str) -> None:
    """An InputError naming where `run_id`'s text was, if it cannot be read."""
    for lost in changed_sources(con):
        if lost.run_id == run_id:
            raise InputError(f"{doing}: {lost}")


def create_cases_view(con: duckdb.DuckDBPyConnection) -> list[Unreadable]:
    """`cases`, resolved now: each run's text read from its file or parts where they are
    readable, null where not (returned). Every connection this package opens re-creates it,
    so a moved or copied database reads its own folder, and one run's lost text never fails
    the view: stored in a writable database, a temporary view over a read-only one."""
    query, unreadable = _resolved(con)
    readonly = con.execute("SELECT readonly FROM duckdb_databases() "
                           "WHERE database_name = current_database()").fetchall()[0][0]
    if readonly:
        con.execute(f"CREATE OR REPLACE TEMP VIEW cases AS {query}")
        return unreadable
    con.execute(f"CREATE OR REPLACE VIEW cases AS {query}")
    con.execute("COMMENT ON VIEW cases IS 'one row per scored output: test, provider, prompt, "
                "vars (JSON), output, cost'")
    return unreadable


def cases_sql(con: duckdb.DuckDBPyConnection) -> str:
    return _resolved(con)[0]


def _resolved(con: duckdb.DuckDBPyConnection) -> tuple[str, list[Unreadable]]:
    """The `cases` query: stored cases, and one branch per run whose text is read from its
    file or parts; and the runs whose text cannot be read (they keep the stored branch)."""
    sources = con.execute("SELECT run_id, path, bytes, modified_ns, var_names FROM "
                          "case_sources ORDER BY run_id").fetchall() \
        if _has_sources(con) else []
    parted = [r[0] for r in con.execute("SELECT run_id FROM case_parts ORDER BY run_id"
                                        ).fetchall()] if _has_sources(con, "case_parts") else []
    branches, unreadable = [], []
    for run_id, path, size, modified, names in sources:
        why = _file_changed(path, size, modified)
        if why:
            unreadable.append(Unreadable(run_id, path, why))
        else:
            branches.append((run_id, _branch(run_id, path, names)))
    for run_id in parted:
        files, lost = _readable_parts(con, run_id)
        if lost:
            unreadable.append(Unreadable(run_id, *lost, parts=True))
        if files:
            branches.append((run_id, _parts_branch(run_id, files)))
    if not branches:
        return "SELECT * FROM case_rows", unreadable
    runs = ", ".join(sql_string(run) for run, _ in branches)
    return "\nUNION ALL\n".join(
        [f"SELECT * FROM case_rows WHERE run_id NOT IN ({runs})"] + [b for _, b in branches]
    ), unreadable


def _file_changed(path: str, size: int, modified: int) -> str | None:
    try:
        stat = os.stat(path)
    except OSError:
        return "is gone"
    if (stat.st_size, stat.st_mtime_ns) != (size, modified):
        return "has changed since it was scored"
    return None


def _readable_parts(con: duckdb.DuckDBPyConnection, run_id: str
                    ) -> tuple[list[str], tuple[str, str] | None]:
    """The run's parts that are whole (one per committed batch, its rows all there), and
    (folder, what is wrong) when any is missing or damaged."""
    path = database_path(con)
    if path is None:
        return [], ("an in-memory database", "has no folder beside it")
    folder = path.parent / f"{path.name}.cases" / run_id
    if any(c in str(folder) for c in "*?[{"):
        return [], (str(folder), "is named with *, ?, [ or { (read_parquet would glob it)")
    batches = con.execute("SELECT first_case, rows FROM run_batches WHERE run_id = ? "
                          "ORDER BY first_case", [run_id]).fetchall()
    whole, bad = [], 0
    for first, rows in batches:
        part = folder / f"{first:012d}.parquet"
        try:
            if pq.read_metadata(part).num_rows == rows:
                whole.append(str(part))
                continue
        except (OSError, pa.ArrowException):
            pass
        bad += 1
    if not bad:
        return whole, None
    why = "is gone" if not folder.is_dir() else f"lacks or has damaged {bad} of its " \
        f"{len(batches)} parts"
    return whole, (str(folder), why)


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


def _parts_branch(run_id: str, files: list[str]) -> str:
    """The run's stored rows with their text from its whole parts where none is stored."""
    listed = "[" + ", ".join(sql_string(f) for f in files) + "]"
    return f"""SELECT r.* REPLACE (COALESCE(r.vars, s.vars::JSON) AS vars,
        COALESCE(r.output, s.output) AS output)
    FROM case_rows r
    LEFT JOIN read_parquet({listed}) s ON s.case_id = r.case_id
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
