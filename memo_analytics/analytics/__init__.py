"""Analytics over the vault: polars frames from the index, DuckDB for the reports (SPEC §4)."""
