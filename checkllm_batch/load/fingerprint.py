"""What identifies an outputs dataset's content: a resumed run must score the same rows."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow as pa


def fingerprint(outputs: str | pa.Table | None) -> str | None:
    """The content hash of an outputs dataset: its file's bytes (a DuckDB source: the
    database file), or an in-memory table's Arrow data; None for a stream, which can only be
    read once."""
    if isinstance(outputs, pa.Table):
        digest = hashlib.sha256()
        for batch in outputs.combine_chunks().to_batches():
            digest.update(batch.serialize())
        return digest.hexdigest()
    if outputs is None:
        return None
    path = Path(outputs.split(":", 2)[1] if outputs.startswith("duckdb:") else outputs)
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
