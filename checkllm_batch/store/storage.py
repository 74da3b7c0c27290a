"""The disk under a results database: an error of the disk (full, read-only, no permission),
from DuckDB or from a file written beside it, said in one line naming the path and what to
free or fix (a StorageError), rather than as the library's own exception."""

from __future__ import annotations

import errno
import os
import re

import duckdb

from ..errors import StorageError

FULL = {errno.ENOSPC: "free space on that disk", errno.EDQUOT: "free space in your quota"}
SHUT = {errno.EROFS: "make it writable", errno.EACCES: "make it writable by you",
        errno.EPERM: "make it writable by you"}
# DuckDB says which file it could not write, then the system's reason
_DUCKDB = re.compile(r'(?:file|File) "([^"]+)"[^"]*?: ?(' + "|".join(
    re.escape(os.strerror(code)) for code in (*FULL, *SHUT)) + ")")


def storage_error(error: BaseException, database: str) -> StorageError | None:
    """The one line for `error` if the disk caused it (`database`: the path named when the
    error names none), else None."""
    if isinstance(error, OSError) and error.errno in {**FULL, **SHUT}:
        path, code = error.filename or database, error.errno
    elif isinstance(error, duckdb.Error):
        found = _DUCKDB.search(str(error))
        said = next((c for c in (*FULL, *SHUT) if os.strerror(c) in str(error)), None)
        if said is None:
            return None
        path, code = (found[1] if found else database), said
    else:
        return None
    return StorageError(f"{path}: {os.strerror(code)}: {({**FULL, **SHUT})[code]}")
