"""Named and derived metrics, computed in DuckDB."""
