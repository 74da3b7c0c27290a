"""The unit of work on a cluster: a Parquet fragment (whole row groups of one file), with
its first case id computed on the driver from the files' footers. Case ids are then the
rows' positions in the dataset (files in name order), as in the single-machine run."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import PurePosixPath
from typing import Iterator

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ..errors import InputError

WILDCARDS = "*?["


@dataclass(frozen=True)
class Fragment:
    index: int
    path: str  # a path of `uri`'s filesystem
    row_groups: tuple[int, ...]
    first_case_id: int
    rows: int

    def record(self) -> dict:
        return {**asdict(self), "row_groups": list(self.row_groups)}

    @property
    def name(self) -> str:
        return self.path

    def batches(self, data: tuple[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        """Its rows, read from its file (data: the dataset's path, naming its filesystem)."""
        with dataset_fs(data[0]).open_input_file(self.path) as f:
            # pre_buffer=False: a worker holds the row group it reads, not its fragment so far
            yield from pq.ParquetFile(f, pre_buffer=False).iter_batches(
                batch_size=batch_rows, row_groups=list(self.row_groups))


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem of a path or URI (s3://, gs://, file://...) and the path on it."""
    if "://" not in uri:  # absolute: the cluster's workers have their own directories
        return pafs.LocalFileSystem(), os.path.abspath(uri)
    try:
        return pafs.FileSystem.from_uri(uri)
    except (pa.ArrowException, OSError) as e:
        raise InputError(f"{uri}: {str(e).splitlines()[0]}") from None


def dataset_fs(outputs: str) -> pafs.FileSystem:
    """The filesystem the dataset's files are on."""
    return filesystem(_base(outputs))[0]


def parquet_files(outputs: str) -> tuple[pafs.FileSystem, list[str]]:
    """The Parquet files of a file, a directory (every .parquet below it) or a glob, in
    name order."""
    fs, path = filesystem(_base(outputs))
    pattern = outputs[len(_base(outputs)):]
    info = fs.get_file_info(path)
    if info.type == pafs.FileType.File and not pattern:
        return fs, [path]
    if info.type != pafs.FileType.Directory:
        raise InputError(f"{outputs}: outputs not found")
    listed = fs.get_file_info(pafs.FileSelector(path, recursive=True))
    want = path.rstrip("/") + "/" + pattern if pattern else None  # `*` stays in one folder
    files = sorted(f.path for f in listed if f.type == pafs.FileType.File and (
        PurePosixPath(f.path).match(want) if want else f.path.endswith(".parquet")))
    if not files:
        raise InputError(f"{outputs}: no Parquet file matches")
    return fs, files


def _base(outputs: str) -> str:
    """The directory part before the first wildcard (the whole path without one)."""
    cut = min((outputs.find(c) for c in WILDCARDS if c in outputs), default=-1)
    return outputs if cut < 0 else outputs[:outputs.rfind("/", 0, cut) + 1]


def plan_fragments(fs: pafs.FileSystem, files: list[str], rows: int) -> list[Fragment]:
    """Fragments of about `rows` rows (whole row groups), read from the footers only."""
    fragments: list[Fragment] = []
    first = 0
    for path in files:
        meta = _footer(fs, path)
        sizes = [meta.row_group(rg).num_rows for rg in range(meta.num_row_groups)]
        for group in group_sizes(sizes, rows):
            size = sum(sizes[rg] for rg in group)
            fragments.append(Fragment(len(fragments), path, tuple(group), first, size))
            first += size
    return fragments


def group_sizes(sizes: list[int], rows: int) -> list[list[int]]:
    """The indices of `sizes` in runs of about `rows` (a run holds at least one; empty
    pieces are left out)."""
    runs: list[list[int]] = []
    run: list[int] = []
    total = 0
    for i, n in enumerate(sizes):
        if not n:
            continue
        if run and total + n > rows:
            runs.append(run)
            run, total = [], 0
        run.append(i)
        total += n
    return runs + [run] if run else runs


def _footer(fs: pafs.FileSystem, path: str) -> pq.FileMetaData:
    try:
        with fs.open_input_file(path) as f:
            return pq.ParquetFile(f).metadata
    except (pa.ArrowException, OSError) as e:
        raise InputError(f"{path}: cannot read: {str(e).splitlines()[0]}") from None
