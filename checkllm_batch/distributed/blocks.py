"""A Ray Dataset as the outputs (`cb.evaluate(suite, ray.data.read_parquet(...),
engine="ray")`, transformed or not): the driver executes it with Ray Data in its own row
order (`preserve_order`), and the blocks it yields, cut into units of about `batch_rows`
rows, take the place of fragments. Only the blocks' row counts reach the driver: a unit's
first case id is the number of rows before it, so case ids are the rows' positions in the
Dataset, as when `cb.evaluate` scores the same rows in the same order in one process."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterator

import pyarrow as pa

from ..load.columns import check_columns
from .fragments import group_sizes

DATASET = "<ray dataset>"  # the name of the outputs in the run's record and in errors


@dataclass(frozen=True)
class Block:
    """A unit of work: rows of consecutive Ray Data blocks, (start, rows) in each."""

    index: int
    first_case_id: int
    rows: int
    slices: tuple[tuple[int, int], ...]

    def record(self) -> dict:
        return {**asdict(self), "slices": [list(s) for s in self.slices]}

    @property
    def name(self) -> str:
        return DATASET

    def batches(self, blocks: tuple, batch_rows: int) -> Iterator[pa.RecordBatch]:
        """Its rows, from its Ray blocks (given to the task, in order)."""
        for block, (start, rows) in zip(blocks, self.slices):
            yield from _arrow(block).slice(start, rows).to_batches(max_chunksize=batch_rows)


def is_dataset(outputs: Any) -> bool:
    return type(outputs).__module__.startswith("ray.data") and hasattr(
        outputs, "iter_internal_ref_bundles")


def plan_blocks(dataset, rows: int) -> tuple[list[Block], dict[int, list]]:
    """The units of a Dataset, and each unit's block refs (kept by the driver, so the blocks
    stay in Ray's object store while the run lasts)."""
    pieces = _pieces(dataset)
    schema = dataset.schema()  # None when no block came out: no rows, said by the caller
    if schema is not None:
        check_columns(list(schema.names), DATASET)
    units: list[Block] = []
    refs: dict[int, list] = {}
    first = 0
    for group in group_sizes([n for _, _, n in pieces], rows):
        slices = tuple((pieces[i][1], pieces[i][2]) for i in group)
        size = sum(n for _, n in slices)
        units.append(Block(len(units), first, size, slices))
        refs[len(units) - 1] = [pieces[i][0] for i in group]
        first += size
    return units, refs


def _pieces(dataset) -> list[tuple[Any, int, int]]:
    """(block ref, first row, rows) of every block the Dataset yields, in its order."""
    options = dataset.context.execution_options
    before, options.preserve_order = options.preserve_order, True
    try:
        return [piece for bundle in dataset.iter_internal_ref_bundles()
                for piece in _bundle_pieces(bundle)]
    finally:
        options.preserve_order = before


def _bundle_pieces(bundle) -> Iterator[tuple[Any, int, int]]:
    slices = getattr(bundle, "slices", None) or [None] * len(bundle.blocks)
    for entry, part in zip(bundle.blocks, slices):
        ref, meta = (entry.ref, entry.metadata) if hasattr(entry, "ref") else entry
        if part is not None:
            yield ref, part.start_offset, part.end_offset - part.start_offset
        else:
            yield ref, 0, meta.num_rows if meta.num_rows is not None else _count(ref)


def _count(ref) -> int:
    import ray

    return ray.get(ray.remote(lambda block: _arrow(block).num_rows).remote(ref))


def _arrow(block) -> pa.Table:
    """A Ray Data block as an Arrow table (it may be a pandas frame)."""
    if isinstance(block, pa.Table):
        return block
    from ray.data.block import BlockAccessor

    return BlockAccessor.for_block(block).to_arrow()
