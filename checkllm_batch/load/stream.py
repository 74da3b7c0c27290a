"""Outputs as a stream of even batches: cut to a size (rows and bytes), read one batch ahead
in a thread, and the rows a resumed run committed skipped."""

from __future__ import annotations

from queue import Queue
from threading import Event, Semaphore, Thread
from typing import Iterable, Iterator

import pyarrow as pa

BATCH_ROWS = 100_000  # rows per batch unless asked otherwise (--batch-rows)

# A batch's memory in flight (read ahead, built into cases, evaluated, written) grows with its
# bytes, not its rows: 100,000 rows of 1.1 KB peaked at 2.2 GiB, 50,000 at 1.5 GiB, in the
# same CPU time. Narrow rows still come `batch_rows` at a time.
BATCH_BYTES = 64 << 20


def rechunk(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """The batches cut (without copying) into even slices of at most `rows` rows and about
    BATCH_BYTES each: wide rows make shorter batches."""
    for batch in batches:
        pieces = max(round(batch.nbytes / BATCH_BYTES), -(-batch.num_rows // rows), 1)
        step = max(1, -(-batch.num_rows // pieces))  # an empty batch yields nothing
        for start in range(0, batch.num_rows, step):
            yield batch.slice(start, step)


def read_ahead(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Decode the next batch in a thread while the caller works on this one (Arrow's
    readers release the GIL). One batch ahead, no more: the next read starts when the
    caller takes the batch read before it (a bounded queue would let the reader hold one
    more, ~64 MiB, while it waits to hand it over). Reader errors surface in order. When
    the caller stops early (an error in a later stage), the reader stops too and closes its
    source (a file, a DuckDB connection) instead of holding it to the end of the process."""
    queue: Queue = Queue()
    taken = Semaphore(1)  # a read may start
    stop = Event()
    done = object()

    def produce() -> None:
        try:
            while taken.acquire() and not stop.is_set() and \
                    (batch := next(batches, done)) is not done:
                queue.put(batch)
        except BaseException as e:  # handed to the consumer, raised there
            queue.put(e)
        finally:
            getattr(batches, "close", lambda: None)()
        queue.put(done)

    reader = Thread(target=produce, daemon=True)
    reader.start()
    try:
        while (item := queue.get()) is not done:
            taken.release()
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        taken.release()
        reader.join(timeout=10)  # a read under way ends first: then its source is closed


def skip_rows(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """The batches after their first `rows` rows (a resumed run's committed ones)."""
    for batch in batches:
        if rows >= batch.num_rows:
            rows -= batch.num_rows
            continue
        yield batch.slice(rows) if rows else batch
        rows = 0
