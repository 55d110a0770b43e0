"""Nothing redacted reaches the Markdown, the index or a response, whichever way a text
comes in (SPEC §2.4): the credential corpus through the CLI, the MCP tool, the Claude Code
importer and sync ingress, each with the real parts (the CLI's entry point in Typer's runner, the SDK's client,
the real vault and SQLite index). Every look-alike in the corpus is kept byte for byte.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from mcp import Client

from memo_analytics.config import Settings
from memo_analytics.services.store import VaultStore
from memo_analytics.vault.layout import VaultLayout
from tests.inprocess import memo as run_memo
from tests.secret_corpus import LOOK_ALIKES, NEW_SHAPES, SECRETS

# one text holding the whole corpus: every credential shape, then every look-alike
BODY = "\n\n".join([text for text, _ in SECRETS] + LOOK_ALIKES)
# the new shapes' markers as the body must hold them (one per occurrence)
NEW_MARKERS = {kind: sum(1 for _, _, k in NEW_SHAPES if k == kind) for _, _, kind in NEW_SHAPES}


def test_the_corpus_is_large_enough():
    assert len({secret for _, secret in SECRETS}) >= 40 and len(LOOK_ALIKES) >= 12


def memo(*args: str, vault: Path) -> str:
    """The stdout of ``memo --vault-root VAULT --json ARGS`` (in-process, through the console-script
    entry point), which must succeed."""
    return run_memo("--json", *args, vault=vault).stdout


def leaks(blobs: dict[str, bytes | str]) -> list[tuple[str, str]]:
    """Every (where, secret) for a secret that occurs in one of ``blobs``."""
    found = []
    for where, blob in blobs.items():
        data = blob.encode("utf-8") if isinstance(blob, str) else blob
        for _, secret in SECRETS:
            if secret.encode("utf-8") in data:
                found.append((where, secret))
    return found


def vault_files(vault: Path) -> dict[str, bytes]:
    """Every file under the vault: records, views, and ``.memo/`` (the index, its WAL, state)."""
    files = {str(p.relative_to(vault)): p.read_bytes() for p in vault.rglob("*") if p.is_file()}
    assert VaultLayout(vault).index_path.relative_to(vault).as_posix() in files
    return files


def index_texts(vault: Path) -> dict[str, str]:
    """Every text value of every table of the SQLite index (overflow pages hide nothing here)."""
    conn = sqlite3.connect(f"file:{VaultLayout(vault).index_path}?mode=ro", uri=True)
    try:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        texts = {}
        for table in tables:
            for number, row in enumerate(conn.execute(f'SELECT * FROM "{table}"')):
                texts[f"{table}[{number}]"] = "\n".join(v for v in row if isinstance(v, str))
        return texts
    finally:
        conn.close()


def indexed(vault: Path, column: str, kind: str = "prompt") -> list[str]:
    """``column`` (body, summary) of each indexed record of ``kind``."""
    conn = sqlite3.connect(f"file:{VaultLayout(vault).index_path}?mode=ro", uri=True)
    try:
        return [row[0] for row in conn.execute(f"SELECT {column} FROM records WHERE kind = ?", (kind,))]
    finally:
        conn.close()


def record_files(vault: Path, kind: str = "prompt") -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted((vault / "projects").glob(f"*/{kind}s/*.md"))]


def assert_redacted(text: str, where: str) -> None:
    """``text`` holds every look-alike byte for byte and each new shape's exact marker."""
    lost = [alike for alike in LOOK_ALIKES if alike not in text]
    assert lost == [], f"look-alikes changed in {where}"
    for kind, times in NEW_MARKERS.items():
        assert text.count(f"[REDACTED:{kind}]") >= times, (where, kind)


def assert_vault_clean(vault: Path, responses: dict[str, str]) -> None:
    assert leaks({**vault_files(vault), **index_texts(vault), **responses}) == []


@pytest.fixture
def outside_any_repository(tmp_path, monkeypatch):
    """Run from a folder outside every repository: no product's .memoignore applies."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def assert_record_and_get_clean(vault, recorded: str, got: str) -> None:
    """No secret in the vault or the two answers; the record file, its index row and the
    ``get`` answer each hold the redacted body with every look-alike intact."""
    assert_vault_clean(vault, {"record response": recorded, "get response": got})
    [on_disk] = record_files(vault)
    [in_index] = indexed(vault, "body")
    for where, text in {"record file": on_disk, "index": in_index, "get": json.loads(got)["body"]}.items():
        assert_redacted(text, where)


def test_cli_record_stores_and_answers_no_secret(outside_any_repository):
    vault = outside_any_repository / "v"
    recorded = memo("prompt", "record", "--body", BODY, "--session-id", "corpus", "--project", "acme", vault=vault)
    record_id = json.loads(recorded)["id"]
    got = memo("prompt", "get", record_id, vault=vault)
    assert_record_and_get_clean(vault, recorded, got)


def test_mcp_record_stores_and_answers_no_secret(outside_any_repository):
    from memo_analytics.interfaces.mcp import build_server

    vault = outside_any_repository / "v"

    async def scenario():
        async with Client(build_server(Settings(vault_root=vault, timezone="UTC"))) as client:
            recorded = await client.call_tool("prompt", {"action": "record", "body": BODY, "sessionId": "corpus",
                                                         "projectId": "acme"})
            assert not recorded.is_error, recorded.content[0].text
            record_id = json.loads(recorded.content[0].text)["id"]
            got = await client.call_tool("prompt", {"action": "get", "id": record_id})
            assert not got.is_error, got.content[0].text
            return recorded.content[0].text, got.content[0].text

    recorded, got = asyncio.run(scenario())
    assert_record_and_get_clean(vault, recorded, got)


def test_claude_code_import_stores_no_secret(outside_any_repository):
    vault = outside_any_repository / "v"
    transcript = outside_any_repository / "transcripts" / "5e55a0a1-0000-4000-8000-00000000c0de.jsonl"
    transcript.parent.mkdir()
    sid = "5e55a0a1-0000-4000-8000-00000000c0de"
    lines = [
        {"type": "user", "sessionId": sid, "uuid": "u1", "cwd": "/home/ana/work/acme", "timestamp": "2026-03-02T09:00:00Z",
         "message": {"role": "user", "content": BODY}},
        {"type": "assistant", "sessionId": sid, "uuid": "a1", "cwd": "/home/ana/work/acme",
         "timestamp": "2026-03-02T09:05:00Z",
         "message": {"role": "assistant", "model": "claude-opus-4-5", "content": [{"type": "text", "text": "done"}]}},
        {"type": "user", "sessionId": sid, "uuid": "u2", "cwd": "/home/ana/work/acme", "timestamp": "2026-03-02T09:10:00Z",
         "message": {"role": "user", "content": [{"type": "text", "text": BODY}]}},
    ]
    transcript.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")

    imported = memo("import", "claude-code", str(transcript.parent), "--project", "acme", vault=vault)
    assert (json.loads(imported)["sessions"], json.loads(imported)["turns"]) == (1, 2), imported

    assert_vault_clean(vault, {"import response": imported})
    files, bodies = record_files(vault), indexed(vault, "body")
    assert len(files) == len(bodies) == 2
    for number, text in enumerate(files + bodies):
        assert_redacted(text, f"imported text {number}")


def test_sync_ingress_stores_no_secret(tmp_path):
    from memo_analytics.services.sync import apply_incoming
    from memo_analytics.vault.io import dump_record, read_record

    meta = {"id": "session-synced", "kind": "session", "project": "acme", "status": "completed",
            "created": "2026-03-02T09:00:00Z", "updated": "2026-03-02T10:00:00Z", "source": "mcp",
            "sessionId": "synced", "startTime": "2026-03-02T09:00:00Z", "endTime": "2026-03-02T10:00:00Z",
            "durationMinutes": 60, "summary": BODY}
    text = dump_record(meta, BODY)
    assert all(secret in text for _, secret in SECRETS)  # the pushed file really holds them

    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    try:
        results = apply_incoming(store, [{"id": "session-synced", "text": text, "base": None}])
    finally:
        store.close()

    assert [r["outcome"] for r in results] == ["applied"], results
    vault = tmp_path / "v"
    assert_vault_clean(vault, {"sync response": json.dumps(results)})
    [path] = (vault / "projects").glob("acme/sessions/*.md")
    stored_meta, stored_body = read_record(path)
    [indexed_body], [indexed_summary] = indexed(vault, "body", "session"), indexed(vault, "summary", "session")
    for where, value in {"synced body": stored_body, "synced summary": stored_meta["summary"],
                         "indexed body": indexed_body, "indexed summary": indexed_summary}.items():
        assert_redacted(value, where)
