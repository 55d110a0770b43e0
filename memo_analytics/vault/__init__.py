"""The vault's files: layout, atomic Markdown I/O, the vault lock and redaction."""
