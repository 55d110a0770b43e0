"""The operator's audit trail (SPEC §6 phase 3): one JSON line per action — proposed and
applied by a person, or run automatically under a delegation — in ``.memo/audit.jsonl``,
appended and flushed to disk, never rewritten."""

from __future__ import annotations

import json
import os
from typing import Any

from ..domain.clock import from_iso, to_iso, utcnow
from ..domain.errors import InvalidDateError
from ..services.store import VaultStore

AUDIT_FILE = "audit.jsonl"
#: what every audit record holds, as text; a line without one of them is not a record of the audit
FIELDS = ("at", "actor", "actionClass", "subject", "project", "policyRule", "fingerprint", "outcome")


def append(store: VaultStore, *, actor: str, action_class: str, subject: str, project: str, policy_rule: str,
           fingerprint: str, outcome: str, now=None, detail: dict[str, Any] | None = None) -> dict[str, Any]:
    """Append one audit record and return it. ``actor`` is ``person`` or ``operator``;
    ``policy_rule`` names what allowed the action; ``outcome`` is ``applied``,
    ``refused: …`` or ``failed: …``."""
    record = {"at": to_iso(now or utcnow()), "actor": actor, "actionClass": action_class, "subject": subject,
              "project": project, "policyRule": policy_rule, "fingerprint": fingerprint, "outcome": outcome,
              **({"detail": detail} if detail else {})}
    store.layout.meta_dir.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(store.layout.meta_dir / AUDIT_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return record


def read(store: VaultStore, limit: int | None = None) -> list[dict[str, Any]]:
    """Audit records, oldest first (the last ``limit`` when given); a line that is not a JSON
    record of the audit (a torn tail after a crash — cut inside a character too —, a line edited
    by hand) is skipped."""
    try:
        lines = (store.layout.meta_dir / AUDIT_FILE).read_bytes().splitlines()
    except FileNotFoundError:
        return []
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:  # UnicodeDecodeError included
            continue
        if isinstance(record, dict) and all(isinstance(record.get(key), str) for key in FIELDS):
            try:
                from_iso(record["at"])
            except (ValueError, InvalidDateError):
                continue
            records.append(record)
    return records[-limit:] if limit else records
