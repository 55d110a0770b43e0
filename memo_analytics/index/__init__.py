"""The SQLite index: ``records`` + ``records_fts`` (FTS5), always rebuildable from the files."""
