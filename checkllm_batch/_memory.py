"""Polars' allocator keeps freed pages for ten seconds (jemalloc's own default) instead of
the half second Polars sets, so a run's next batch reuses its last batch's buffers instead
of faulting fresh pages in: on a 1M-case run 1.9M page faults -> 1.2M, 0.94x the CPU time,
peak RSS +250 MiB (benchmarks/README.md). An idle process still returns them after ten
seconds.

jemalloc reads the setting once, when Polars loads: this module is imported before Polars
is. It leaves alone a process that loaded Polars first and a setting of the user's own; the
one a parent process's Polars exported (its defaults) is not the user's."""

import os
import sys

SETTING = "_RJEM_MALLOC_CONF"  # Polars' prefixed name for jemalloc's MALLOC_CONF
POLARS_DEFAULT = "dirty_decay_ms:500,muzzy_decay_ms:1000"  # what `import polars` exports
KEEP_FREED_PAGES = "dirty_decay_ms:10000,muzzy_decay_ms:10000"

if "polars" not in sys.modules and os.environ.get(SETTING, POLARS_DEFAULT) == POLARS_DEFAULT:
    os.environ[SETTING] = KEEP_FREED_PAGES
