"""What every CLI command shares: exit codes, one-line user errors, printing a frame."""

from __future__ import annotations

import functools

import click
import duckdb
import polars as pl

from .errors import CheckLLMError

EXIT_FAILED, EXIT_USAGE = 1, 2


class UserError(click.ClickException):
    exit_code = EXIT_USAGE


def user_errors(fn):
    """Turn the library's errors into one clean line and exit code 2 (no traceback)."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except CheckLLMError as e:
            raise UserError(str(e)) from None

    return wrapped


def show(query: str = "SELECT * FROM frame", max_rows: int = 50, **frames: pl.DataFrame) -> None:
    """Print `query` over the given frames as a DuckDB table."""
    local = duckdb.connect()
    for name, frame in frames.items():
        local.register(name, frame.to_arrow())
    local.sql(query).show(max_rows=max_rows, max_width=200)
