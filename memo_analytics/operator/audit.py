"""The operator's audit trail (SPEC §6 phase 3): one JSON line per action — proposed and
applied by a person, or run automatically under a delegation — in ``.memo/audit.jsonl``,
appended and flushed to disk, never rewritten."""

from __future__ import annotations

import json
import os
from typing import Any

from ..domain.clock import to_iso, utcnow
from ..services.store import VaultStore

AUDIT_FILE = "audit.jsonl"


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
    """Audit records, oldest first (the last ``limit`` when given); a line that is not JSON
    (a torn tail after a crash) is skipped."""
    try:
        lines = (store.layout.meta_dir / AUDIT_FILE).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records[-limit:] if limit else records
