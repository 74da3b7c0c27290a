"""The same evaluation on a Ray cluster (`--engine ray`, the `checkllm-batch[ray]` extra):
Parquet fragments (or a Ray Dataset's blocks) evaluated by Ray tasks into Parquet shards,
loaded into the results database as one run. See docs/ray.md."""

from ..run.batches import evaluate_frames
from .driver import evaluate_ray

__all__ = ["evaluate_frames", "evaluate_ray"]
