"""Pure domain layer: records, ids, clock and the error tree (no I/O)."""
