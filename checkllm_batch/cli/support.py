"""What every CLI command shares: exit codes, one-line user errors, printing a frame.

Exit codes: 0 every test passed, 1 some failed (or a gate failed), 2 bad input or settings,
3 an unexpected error (a bug: one line naming the log file that holds its traceback), 130
interrupted. Which exception means which code is EXIT_CODES, one table."""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import tempfile
import traceback
import unicodedata

import click
import duckdb
import orjson
import polars as pl

from ..errors import CheckLLMError, Interrupted

EXIT_FAILED, EXIT_USAGE, EXIT_CRASH, EXIT_INTERRUPTED = 1, 2, 3, 130

# the library's exceptions a user can act on, and their exit code (the first class of an
# error's MRO found here); any other exception is unexpected: EXIT_CRASH
EXIT_CODES: dict[type[BaseException], int] = {CheckLLMError: EXIT_USAGE}


class UserError(click.ClickException):
    exit_code = EXIT_USAGE


def exit_code(error: BaseException) -> int:
    return next((EXIT_CODES[c] for c in type(error).__mro__ if c in EXIT_CODES), EXIT_CRASH)


def printable(text: str) -> str:
    """`text` with control and line-separator characters (other than newline and tab)
    escaped, so that a name read from a damaged file cannot break or hide an error line."""
    return "".join(c if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Zl", "Zp")
                   else c.encode("unicode_escape").decode() for c in text)


def user_errors(fn):
    """Turn the library's errors into one clean line and their exit code (no traceback); an
    unexpected error into one line naming the log file of its traceback, exit 3."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):  # click's own
            raise
        except Exception as e:
            code = exit_code(e)
            click.echo(f"Error: {crash_line(e) if code == EXIT_CRASH else printable(str(e))}",
                       err=True)
            raise SystemExit(code) from None
        except Interrupted as e:  # Ctrl-C in a run: say how to take it up again
            click.echo(f"interrupted: run {e.run_id} is recorded as interrupted; resume it "
                       f"with the same command and --resume {e.run_id} (judge answers already "
                       "received are not asked again)", err=True)
            raise SystemExit(EXIT_INTERRUPTED) from None
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            raise SystemExit(EXIT_INTERRUPTED) from None

    return wrapped


def crash_line(error: Exception) -> str:
    """The traceback written to a log file; one line for the person: what broke, where."""
    fd, path = tempfile.mkstemp(prefix="checkllm-batch-error-", suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8") as log:
        traceback.print_exception(error, file=log)
    text = printable(str(error)).splitlines()[0][:200] if str(error) else ""
    return (f"unexpected error ({type(error).__name__}{': ' + text if text else ''}); "
            f"this is a bug: the traceback is in {path}")


FLOATS = ("DOUBLE", "FLOAT", "REAL")


def for_people(relation: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
    """`relation` with its floating-point columns rounded for reading: four significant
    digits, whole numbers from 1,000 up (0.7142857142857143 -> 0.7143); JSON and CSV
    output never goes through it."""
    def rounded(name: str, type_: object) -> str:
        col = '"' + name.replace('"', '""') + '"'
        if str(type_) not in FLOATS:
            return col
        return (f"CASE WHEN {col} = 0 OR NOT isfinite({col}) THEN {col} ELSE round({col}, "
                f"greatest(0, 3 - floor(log10(abs({col}))))::INTEGER) END AS {col}")
    if not any(str(t) in FLOATS for t in relation.types):
        return relation
    return relation.project(", ".join(rounded(n, t) for n, t in
                                      zip(relation.columns, relation.types)))


def show(query: str = "SELECT * FROM frame", max_rows: int = 50, **frames: pl.DataFrame) -> None:
    """Print `query` over the given frames as a DuckDB table, floats rounded for people."""
    local = duckdb.connect()
    for name, frame in frames.items():
        local.register(name, frame.to_arrow())
    for_people(local.sql(query)).show(max_rows=max_rows, max_width=200)


FORMATS = ("table", "json", "csv")


def emit(document: dict, fmt: str, table: pl.DataFrame) -> None:
    """For scripts: `json` prints `document` (frames as lists of row objects, or `table`
    alone when the document is empty) as one JSON value; `csv` prints `table`."""
    if fmt == "csv":  # a cell is text: a list or struct value is written as its JSON
        nested = [c for c, dtype in table.schema.items() if dtype.is_nested()]
        table = table.with_columns(pl.struct(c).struct.json_encode().str.json_path_match(
            f"$['{c}']" if "'" not in c else f'$["{c}"]').alias(c) for c in nested)
        click.echo(table.write_csv(), nl=False)
        return
    value = {k: v.to_dicts() if isinstance(v, pl.DataFrame) else v
             for k, v in document.items()} if document else table.to_dicts()
    click.echo(orjson.dumps(value, default=str, option=orjson.OPT_SERIALIZE_NUMPY).decode())


def show_relation(relation: duckdb.DuckDBPyRelation, max_rows: int, max_width: int) -> None:
    """Print a query's table, floats rounded for people; when rows or columns were cut, say so on stderr and how to
    see the rest."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for_people(relation).show(max_rows=max_rows or 2**62, max_width=max_width or 2**31)
    text = out.getvalue()
    click.echo(text, nl=False)
    footer = " ".join(text.rsplit("┘", 1)[-1].split())  # may wrap over two lines
    cut = [f"{shown} of {total} {what}" for total, what, shown in
           re.findall(r"(\d+) (rows|columns) \((\d+) shown", footer)]
    if cut:
        click.echo(f"showing {' and '.join(cut)}: --max-rows 0 and --max-width 0 show "
                   "everything, --format csv or json print every row", err=True)
