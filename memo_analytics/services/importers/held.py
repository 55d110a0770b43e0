"""Work an import left out because an issued invoice billed its session: kept so the digest can
say it (``import_held_back``), not only the import's own output, which a watcher prints once.

A transcript grown after its session was invoiced holds turns and minutes no report counts: the
import leaves an invoiced session as the invoice billed it (SPEC §2.3's "an issued invoice is
never changed"). Which files did so, for which session and invoice, is kept in
``<vault>/.memo/held-back.json``: ``{"files": {"<source>\\t<path>": {"source", "path",
"since" (UTC ISO, when first held), "sessions": [{"project", "sessionId", "invoice",
"turns" (held turns), "minutes" (how much later its work now ends)}]}}}``. The import that takes
a file in whole (once the invoice is credited) drops its entry; a file deleted is dropped by
the digest's reading. A state that cannot be read is read as empty (the next import of a held
file writes it again).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...domain.clock import to_iso
from ...vault.io import read_json_state, write_json_state

#: The file, under the vault's ``.memo`` folder.
HELD_FILE = "held-back.json"


def _key(source: str, path: str) -> str:
    return f"{source}\t{path}"


def note_held(memo_dir: Path, source: str, files: dict[str, list[dict[str, Any]]]) -> None:
    """Record what one import of ``source`` held back: ``{path: [held session, …]}`` for each
    file it read (an empty list: the file was taken in whole, its entry dropped). The caller
    holds the vault lock. Nothing is written when nothing changes."""
    path = Path(memo_dir) / HELD_FILE
    data = read_json_state(path, "files") or {"files": {}}
    entries: dict[str, Any] = data["files"]
    changed = False
    for file, sessions in files.items():
        key = _key(source, file)
        if not sessions:
            changed |= entries.pop(key, None) is not None
            continue
        before = entries.get(key) if isinstance(entries.get(key), dict) else {}
        entry = {"source": source, "path": file, "sessions": sessions,
                 "since": before.get("since") or to_iso(datetime.now(tz=timezone.utc))}
        if entry != before:
            entries[key], changed = entry, True
    if changed:
        write_json_state(path, data)


def held_files(memo_dir: Path) -> list[dict[str, Any]]:
    """The files whose work an import held back, as :func:`note_held` kept them (only entries of
    the expected shape; a file no longer there is left out)."""
    data = read_json_state(Path(memo_dir) / HELD_FILE, "files") or {"files": {}}
    found = []
    for entry in data["files"].values():
        if not (isinstance(entry, dict) and isinstance(entry.get("path"), str) and isinstance(entry.get("source"), str)
                and isinstance(entry.get("since"), str) and isinstance(entry.get("sessions"), list)):
            continue
        sessions = [s for s in entry["sessions"] if isinstance(s, dict) and all(
            isinstance(s.get(k), str) and s[k] for k in ("project", "sessionId", "invoice"))]
        if sessions and Path(entry["path"]).is_file():
            found.append({**entry, "sessions": sessions})
    return found
