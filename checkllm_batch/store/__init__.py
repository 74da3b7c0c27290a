"""The DuckDB results database."""
