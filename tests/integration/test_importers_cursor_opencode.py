"""The Cursor and OpenCode importers (SPEC §7) through ``memo import cursor|opencode``.

No real Cursor or OpenCode sample is in ``../shared/realdata``: every fixture here is built in
the test from the documented shape, and the expected counts are worked out beside each one.

* Cursor ``state.vscdb``: a real SQLite file with Cursor's two tables (``ItemTable`` and
  ``cursorDiskKV``, ``key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB``) and the
  ``composerData:<composerId>`` / ``bubbleId:<composerId>:<bubbleId>`` rows as described by
  michaeldhood/chatrxiv ``docs/cursor/storage-reference.md`` (composerData ``_v`` 10, bubble
  ``_v`` 3: ``fullConversationHeadersOnly``, ``createdAt`` ms / ISO, ``timingInfo``,
  ``tokenCount``, ``modelInfo``, ``workspaceUris``), DavidBerdik/cursor-view
  (``sources/bubbles.py``, ``projects/workspace_identifier.py``: ``task-…`` sub-agent
  composers, ``workspaceIdentifier.uri``) and Dicklesworthstone/coding_agent_session_search
  ``src/connectors/cursor.rs`` (the inline ``conversation`` of older versions), with a
  ``cursorAuth/accessToken`` row in both tables that must never be read.
* Cursor "Export Chat" Markdown: the header and turn markers of real exports kept in public
  repositories ("# <title>", "_Exported on 8/21/2025 at 18:13:28 GMT+2 from Cursor (1.4.5)_",
  "**User**" / "**Cursor**" separated by "---"); the stamps of the parser test are copied
  from such exports.
* OpenCode: the JSON storage (``storage/session/<projectID>/<sessionID>.json``,
  ``message/<sessionID>/<messageID>.json``, ``part/<messageID>/<partID>.json``), the
  ``opencode.db`` tables (``session``, ``message``, ``part`` with ``data`` JSON, columns from
  OpenCode's ``session.sql.ts`` and its first migration) and ``opencode export`` output, with
  the message and part shapes of OpenCode's ``session/message-v2.ts`` (synthetic text parts,
  compaction parts, assistant ``tokens``, ``path``) and a pending ``revert``
  (``session/revert.ts``).
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memo_analytics.vault.io import read_record
from tests.inprocess import memo

from .test_importers_gemini_copilot import counts, digest, imported, session, turns  # noqa: F401 (shared helpers)

SECRET = "sk-CURSOR-AUTH-8f3a9c2e7b1d4f60a5e9"  # looks like a token; must never reach the vault


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def everything_written(vault: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(vault.rglob("*")) if p.is_file())


# ---------------------------------------------------------------- Cursor state.vscdb

COMPOSER = "0f6c2b1e-5a4d-4e2f-9b7a-3c1d2e4f5a6b"
LEGACY = "b7e1c9d0-1111-4c2a-8e3f-000000000002"


def lexical(*paragraphs: str) -> str:
    """``richText`` as Cursor's Lexical editor saves it (a JSON string)."""
    return json.dumps({"root": {"type": "root", "children": [
        {"type": "paragraph", "children": [{"type": "text", "text": p}]} for p in paragraphs]}})


def cursor_db(path: Path) -> Path:
    """A global ``state.vscdb``. Worked out: composer COMPOSER has 2 prompts (u1; u2, its text
    only in ``richText``) — u3 is named in the headers without a row (a problem), ``draft`` is
    a row the headers do not list, ``broken`` a row that is not JSON (a problem); LEGACY (inline
    ``conversation``, no bubble times) has 1; the draft composer and the sub-agent's none →
    2 sessions, 3 turns, 2 skipped."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("INSERT INTO ItemTable VALUES ('cursorAuth/accessToken', ?)", (SECRET,))
    rows: list[tuple[str, object]] = [
        ("cursorAuth/accessToken", b"\xff\xfe" + SECRET.encode() + b"\x00 not json"),  # garbage: reading it would fail
        ("COMPOSERDATA:" + COMPOSER, b"\xff " + SECRET.encode()),  # LIKE would match it; the exact test does not
        ("composerData:" + COMPOSER, {
            "_v": 10, "composerId": COMPOSER, "name": "Fix the cart total", "createdAt": ms("2026-01-05T09:00:00Z"),
            "lastUpdatedAt": ms("2026-01-05T09:40:00Z"),  # bumped by opening the chat: not activity here
            "modelConfig": {"modelName": "claude-4-sonnet", "maxMode": False}, "status": "completed",
            "text": "a draft still in the input box",
            "fullConversationHeadersOnly": [
                {"bubbleId": "u1", "type": 1}, {"bubbleId": "a1", "type": 2, "serverBubbleId": "s1"},
                {"bubbleId": "a2", "type": 2}, {"bubbleId": "u2", "type": 1}, {"bubbleId": "a3", "type": 2},
                {"bubbleId": "u3", "type": 1}]}),
        (f"bubbleId:{COMPOSER}:u1", {
            "_v": 3, "type": 1, "bubbleId": "u1", "text": "the cart total is off by a cent",
            "richText": lexical("the cart total is off by a cent"), "createdAt": "2026-01-05T09:00:05.000Z",
            "tokenCount": {"inputTokens": 0, "outputTokens": 0}, "modelInfo": {"modelName": "claude-4-sonnet"},
            "workspaceUris": ["file:///home/ana/shop-api"]}),
        (f"bubbleId:{COMPOSER}:a1", {
            "_v": 3, "type": 2, "bubbleId": "a1", "text": "Looking at the rounding in cart.py",
            "timingInfo": {"clientStartTime": 4745281.3, "clientRpcSendTime": ms("2026-01-05T09:00:06Z"),
                           "clientSettleTime": ms("2026-01-05T09:01:10Z"), "clientEndTime": ms("2026-01-05T09:01:10Z")},
            "tokenCount": {"inputTokens": 1200, "outputTokens": 300}}),
        (f"bubbleId:{COMPOSER}:a2", {
            "_v": 3, "type": 2, "bubbleId": "a2", "text": "Fixed: totals are rounded once",
            "createdAt": "2026-01-05T09:02:00.000Z", "tokenCount": {"inputTokens": 800, "outputTokens": 150}}),
        (f"bubbleId:{COMPOSER}:u2", {
            "_v": 3, "type": 1, "bubbleId": "u2", "text": "", "richText": lexical("now add a test", "for the rounding"),
            "createdAt": "2026-01-05T09:10:00.000Z", "modelInfo": {"modelName": "default"}}),
        (f"bubbleId:{COMPOSER}:a3", {
            "_v": 3, "type": 2, "bubbleId": "a3", "text": "Added test_total_rounding",
            "createdAt": "2026-01-05T09:12:00.000Z", "modelInfo": {"modelName": "gpt-5"},
            "tokenCount": {"inputTokens": 500, "outputTokens": 90}}),
        (f"bubbleId:{COMPOSER}:draft", {"_v": 3, "type": 1, "bubbleId": "draft", "text": "an edited-away message",
                                         "createdAt": "2026-01-05T09:05:00.000Z"}),
        (f"bubbleId:{COMPOSER}:broken", "{not json"),
        ("composerData:" + LEGACY, {
            "composerId": LEGACY, "createdAt": ms("2026-01-06T14:00:00Z"), "lastUpdatedAt": ms("2026-01-06T14:20:00Z"),
            "workspaceIdentifier": {"id": "ws1", "uri": {"fsPath": "/home/ana/billing", "scheme": "file"}},
            "conversation": [{"type": 1, "bubbleId": "x1", "text": "explain the retry loop in invoices.py"},
                             {"type": 2, "bubbleId": "x2", "text": "It retries three times"}]}),
        ("composerData:c0ffee00-draft", {"_v": 10, "composerId": "c0ffee00-draft", "text": "half typed",
                                         "fullConversationHeadersOnly": [], "createdAt": ms("2026-01-07T08:00:00Z")}),
        ("composerData:task-toolu_01ABC", {"_v": 10, "composerId": "task-toolu_01ABC", "createdAt": ms("2026-01-05T09:03:00Z"),
                                           "fullConversationHeadersOnly": [{"bubbleId": "t1", "type": 1}]}),
        ("bubbleId:task-toolu_01ABC:t1", {"_v": 3, "type": 1, "text": "Explore the cart module and report back",
                                          "createdAt": "2026-01-05T09:03:00.000Z"}),
    ]
    for key, value in rows:
        conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)",
                     (key, json.dumps(value).encode() if isinstance(value, dict) else value))
    conn.commit()
    conn.close()
    return path


def test_cursor_database_has_one_session_per_composer_and_only_typed_prompts(tmp_path):
    vault, db = tmp_path / "v", cursor_db(tmp_path / "state.vscdb")
    result = imported(vault, "cursor", db)
    assert counts(result) == (1, 2, 3, 2)
    assert [e.split("state.vscdb: ", 1)[1] for e in result["errors"]] == [
        f"row bubbleId:{COMPOSER}:broken: not JSON",
        f"composer {COMPOSER}: user bubble u3 has no bubbleId row; its prompt is left out"]
    got = [(t["created"], t["body"], t["project"], t["model"], t.get("tokens")) for t in turns(vault)]
    assert got == [
        # a1 + a2 answered it: 1200+800 in, 300+150 out; the model its own bubble names
        ("2026-01-05T09:00:05.000Z", "the cart total is off by a cent", "shop-api", "claude-4-sonnet",
         {"input": 2000, "output": 450}),
        # text only in richText; "default" is no model, a3's gpt-5 is
        ("2026-01-05T09:10:00.000Z", "now add a test\nfor the rounding", "shop-api", "gpt-5",
         {"input": 500, "output": 90}),
        # no bubble time: the composer's createdAt; the folder of workspaceIdentifier
        ("2026-01-06T14:00:00.000Z", "explain the retry loop in invoices.py", "billing", None, None)]
    bodies = " ".join(t["body"] for t in turns(vault))
    for not_a_turn in ("Looking at the rounding", "Fixed: totals", "Added test_", "edited-away", "half typed",
                       "Explore the cart module", "a draft still", "It retries"):
        assert not_a_turn not in bodies
    meta = session(vault, "shop-api", f"cursor-{COMPOSER}-1")
    # createdAt to the last bubble time (a3); lastUpdatedAt (09:40) is not activity when bubbles have times
    assert (meta["startTime"], meta["endTime"], meta["summary"], meta["ide"], meta["model"], meta["transcriptId"]) == (
        "2026-01-05T09:00:00.000Z", "2026-01-05T09:12:00.000Z", "Fix the cart total", "cursor", "claude-4-sonnet",
        COMPOSER)
    legacy = session(vault, "billing", f"cursor-{LEGACY}-1")  # no bubble time: createdAt .. lastUpdatedAt
    assert (legacy["startTime"], legacy["endTime"], legacy["summary"]) == (
        "2026-01-06T14:00:00.000Z", "2026-01-06T14:20:00.000Z", "explain the retry loop in invoices.py")


def test_cursor_reimport_adds_nothing_and_changes_no_byte(tmp_path):
    vault, db = tmp_path / "v", cursor_db(tmp_path / "state.vscdb")
    assert counts(imported(vault, "cursor", db)) == (1, 2, 3, 2)
    before = digest(vault)
    assert counts(imported(vault, "cursor", db)) == (1, 0, 0, 2)  # the two bad rows are named again
    assert digest(vault) == before


def test_cursor_secret_rows_are_never_selected(tmp_path, monkeypatch):
    """Every statement run on the Cursor file is recorded: only the schema and the two
    prefixes are ever selected, ``ItemTable`` is never named, and the token's text (garbage
    in ``cursorDiskKV``, plain in ``ItemTable``) reaches neither the vault nor the errors."""
    from memo_analytics.index import foreign

    vault, db = tmp_path / "v", cursor_db(tmp_path / "state.vscdb")
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(target, *args, **kwargs):
        conn = connect(target, *args, **kwargs)
        if "state.vscdb" in str(target):
            assert "mode=ro" in str(target) and "immutable=1" in str(target)
            conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(foreign.sqlite3, "connect", traced)
    result = imported(vault, "cursor", db)
    assert counts(result) == (1, 2, 3, 2)
    selects = [s for s in statements if "cursorDiskKV" in s and s.lstrip().upper().startswith("SELECT KEY")]
    assert selects == ["SELECT key, value FROM cursorDiskKV WHERE (key LIKE 'composerData:%' OR key LIKE 'bubbleId:%') "
                       "AND (key GLOB 'composerData:*' OR key GLOB 'bubbleId:*')"]
    assert not any("ItemTable" in s for s in statements), statements
    assert not any(s.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE", "CREATE", "DROP")) for s in statements)
    assert SECRET.encode() not in everything_written(vault)
    assert not any("cursorAuth" in e or SECRET in e or "COMPOSERDATA" in e for e in result["errors"])
    assert not (tmp_path / "state.vscdb-wal").exists() and not (tmp_path / "state.vscdb-shm").exists()


def test_an_imported_cursor_chat_supersedes_the_session_its_hook_captured(tmp_path):
    vault, db, cwd = tmp_path / "v", cursor_db(tmp_path / "state.vscdb"), tmp_path / "shop-api"
    cwd.mkdir()
    payload = {"conversation_id": COMPOSER, "generation_id": "g1", "hook_event_name": "beforeSubmitPrompt",
               "prompt": "the cart total is off by a cent", "workspace_roots": [str(cwd)]}
    ran = memo("hook", "cursor", vault=vault, input=json.dumps(payload), check=False)
    assert ran.returncode == 0 and ran.stdout == ""
    result = imported(vault, "cursor", db)
    assert result["superseded"] == 2  # the hook's session and its one turn
    # the hook's cwd is no repository: the folder's name, as the import files the chat (it was `default`)
    hook = session(vault, "shop-api", f"cursor-{COMPOSER}")
    assert (hook["status"], hook["supersededBy"]) == ("superseded", [f"shop-api/cursor-{COMPOSER}-1"])


def test_a_sqlite_file_that_is_not_cursors_is_refused(tmp_path):
    other = tmp_path / "other.vscdb"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.commit()
    conn.close()
    (tmp_path / "junk.vscdb").write_bytes(b"this is not a database at all" * 10)
    ran = memo("import", "cursor", str(other), str(tmp_path / "junk.vscdb"), vault=tmp_path / "v", check=False)
    assert ran.returncode == 1 and "error: nothing recognised" in ran.stderr
    assert "other.vscdb: not a cursor transcript (a VS Code state database without Cursor's cursorDiskKV table)" \
        in ran.stderr
    assert "junk.vscdb: not a cursor transcript (not a SQLite database (file is not a database))" in ran.stderr


def small_cursor_db(path: Path, composers: dict[str, tuple[dict, dict[str, dict]]]) -> Path:
    """A global ``state.vscdb`` of ``{composerId: (composerData, {bubbleId: bubble})}``."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    for composer_id, (composer, bubbles) in composers.items():
        conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"composerData:{composer_id}", json.dumps(composer)))
        conn.executemany("INSERT INTO cursorDiskKV VALUES (?, ?)",
                         [(f"bubbleId:{composer_id}:{b}", json.dumps(bubble)) for b, bubble in bubbles.items()])
    conn.commit()
    conn.close()
    return path


def prompt_bubbles(*texts: object, **first) -> tuple[dict, dict[str, dict]]:
    """A composer whose user bubbles ``u1``, ``u2`` … hold ``texts`` (one minute apart), an
    answer after each; ``first`` changes the first bubble."""
    headers, bubbles = [], {}
    for number, text in enumerate(texts, 1):
        headers += [{"bubbleId": f"u{number}", "type": 1}, {"bubbleId": f"a{number}", "type": 2}]
        bubbles[f"u{number}"] = {"_v": 3, "type": 1, "text": text, "createdAt": f"2026-01-05T09:0{number}:00.000Z"}
        bubbles[f"a{number}"] = {"_v": 3, "type": 2, "text": "Done"}
    bubbles["u1"].update(first)
    return {"_v": 10, "fullConversationHeadersOnly": headers}, bubbles


def test_a_cursor_bubble_or_composer_of_the_wrong_type_is_named_and_the_other_turns_come_in(tmp_path):
    """Found by mutating a database: a user bubble whose ``text`` is a number, and a composer
    whose ``fullConversationHeadersOnly`` is not a list, were dropped without a word; a bubble
    with a ``createdAt`` beyond 9000 was said to have no row. Each is named once, as what it is;
    the other prompts come in. A bubble without ``type`` is the person's when its header says so; a
    ``richText`` that is text but not the editor's JSON state is named too (it counted as empty)."""
    db = small_cursor_db(tmp_path / "state.vscdb", {
        "c1": prompt_bubbles(12345, "second"),
        "c2": ({"_v": 10, "fullConversationHeadersOnly": "x"}, prompt_bubbles("lost")[1]),
        "c3": prompt_bubbles("far future", "third", createdAt=10**16),
        "c4": prompt_bubbles("typeless", type=None),
        "c5": prompt_bubbles({"rich": True}, "fourth", richText=[]),
    })
    result = imported(tmp_path / "v", "cursor", db)
    assert counts(result) == (1, 4, 4, 4)
    assert [e.split("state.vscdb: ", 1)[1] for e in result["errors"]] == [
        "row bubbleId:c3:u1: unreadable or out-of-range createdAt '10000000000000000' "
        "(a record's instant lies in 1970–9000); the bubble is left out",
        "composer c1: user bubble u1: text is a number, not text; its prompt is left out",
        "row composerData:c2: fullConversationHeadersOnly is text, not a list; the conversation is left out",
        "composer c5: user bubble u1: text is an object, not text; its prompt is left out"]
    assert sorted(t["body"] for t in turns(tmp_path / "v")) == ["fourth", "second", "third", "typeless"]
    assert counts(imported(tmp_path / "v", "cursor", small_cursor_db(tmp_path / "empty.vscdb", {
        "c6": prompt_bubbles("", "fifth", richText=lexical())}))) == (1, 1, 1, 0)  # empty: not a problem
    result = imported(tmp_path / "v", "cursor", small_cursor_db(tmp_path / "plain.vscdb", {
        "c7": prompt_bubbles("", "sixth", richText="fix the cart total")}))  # text, but not the editor's JSON
    assert counts(result) == (1, 1, 1, 1)
    assert [e.split("plain.vscdb: ", 1)[1] for e in result["errors"]] == [
        "composer c7: user bubble u1: richText is not the editor's JSON state; its prompt is left out"]


# ---------------------------------------------------------------- Cursor "Export Chat" Markdown

EXPORT = """# Fix the cart total
_Exported on 1/7/2026 at 09:30:00 EST from Cursor (2.3.23)_

---

**User**

the cart total is off by a cent

---

**Cursor**

Looking at the rounding in `cart.py`.

---

**User**

Use this front matter for the changelog:

---
title: cart
---

and keep it short

---

**Cursor**

Done.

"""

SPECSTORY = """# Cart fix (2025-04-26 16:30:55)

_**User**_

a prompt SpecStory saved

---

_**Assistant**_

Looking at it.
"""


def test_cursor_export_turns_are_the_user_blocks_at_the_export_instant(tmp_path):
    vault, path = tmp_path / "v", tmp_path / "cursor_fix_the_cart_total.md"
    path.write_text(EXPORT, encoding="utf-8")
    result = imported(vault, "cursor", path)
    assert counts(result) == (1, 1, 2, 0)
    # EST is UTC-5: 09:30 → 14:30Z, the moment of the export, for every turn
    assert [(t["created"], t["body"], t["project"], t["ide"]) for t in turns(vault)] == [
        ("2026-01-07T14:30:00.000Z", "the cart total is off by a cent", "default", "cursor"),
        ("2026-01-07T14:30:00.000Z", "Use this front matter for the changelog:\n\n---\ntitle: cart\n---\n\nand keep it short",
         "default", "cursor")]
    [meta] = [read_record(p)[0] for p in (vault / "projects" / "default" / "sessions").glob("*.md")]
    assert (meta["startTime"], meta["endTime"], meta["summary"]) == (
        "2026-01-07T14:30:00.000Z", "2026-01-07T14:30:00.000Z", "Fix the cart total")
    before = digest(vault)
    moved = tmp_path / "elsewhere" / "renamed.md"  # the id comes from the content, not the path
    moved.parent.mkdir()
    moved.write_text(EXPORT, encoding="utf-8")
    assert counts(imported(vault, "cursor", moved)) == (1, 0, 0, 0)
    assert digest(vault) == before


def test_other_markdown_and_specstory_files_are_not_cursor_exports(tmp_path):
    vault, folder = tmp_path / "v", tmp_path / "chats"
    folder.mkdir()
    (folder / "export.md").write_text(EXPORT, encoding="utf-8")
    (folder / "README.md").write_text("# shop-api\n\nA small shop.\n\n**User**\n\nnot a chat\n", encoding="utf-8")
    (folder / "2025-04-26_20-30-55Z-cart-fix.md").write_text(SPECSTORY, encoding="utf-8")
    result = imported(vault, "cursor", folder)
    assert counts(result) == (3, 1, 2, 0) and (result["recognised"], result["unrecognised"]) == (1, 2)
    assert sorted(e.split("/chats/", 1)[1] for e in result["errors"]) == [
        "2025-04-26_20-30-55Z-cart-fix.md: not a cursor transcript (a SpecStory history file: "
        "import it with `memo import specstory`)",
        "README.md: not a cursor transcript (no Cursor export header (`# title`, then "
        "`_Exported on … from Cursor (…)_`))"]
    assert not any("SpecStory saved" in t["body"] or "not a chat" in t["body"] for t in turns(vault))
    ran = memo("import", "cursor", str(folder / "2025-04-26_20-30-55Z-cart-fix.md"), vault=tmp_path / "w", check=False)
    assert ran.returncode == 1 and "a SpecStory history file" in ran.stderr and "error: nothing recognised" in ran.stderr
    assert not (tmp_path / "w" / "projects").exists()


@pytest.mark.parametrize(("stamp", "expected"), [
    ("8/21/2025 at 18:13:28 GMT+2", "2025-08-21T16:13:28"),  # en-US order, offset zone
    ("19/10/2025 at 12:29:42 GMT+8", "2025-10-19T04:29:42"),  # 19 is no month: day first
    ("7/8/2025 at 19:03:40 PDT", "2025-07-09T02:03:40"),  # both ≤ 12, unpadded: month first
    ("01/04/2026 at 23:26:26 GMT+8", "2026-04-01T15:26:26"),  # padded: day first (en-GB)
    ("28/9/2026 at 17:49:33 VET", "2026-09-28T21:49:33"),
    ("2025. 6. 27. at 14시 17분 35초 GMT+9", "2025-06-27T05:17:35"),  # Korean
    ("21.8.2025 at 6:13:28 PM GMT+05:30", "2025-08-21T12:43:28"),
])
def test_export_stamps_in_the_locales_cursor_writes(stamp, expected):
    from memo_analytics.services.importers.cursor_export import export_instant

    assert export_instant(stamp, None) == datetime.fromisoformat(expected).replace(tzinfo=timezone.utc)


def test_an_export_stamp_with_an_unknown_zone_is_read_in_the_import_zone_and_said(tmp_path):
    from memo_analytics.services.importers.cursor_export import UnknownZoneError, export_instant

    with pytest.raises(UnknownZoneError):
        export_instant("1/7/2026 at 09:30:00 XYZT", None)
    vault, path = tmp_path / "v", tmp_path / "chat.md"
    path.write_text(EXPORT.replace("EST", "XYZT"), encoding="utf-8")
    result = imported(vault, "cursor", path, "--tz", "America/New_York")
    assert counts(result) == (1, 1, 2, 1)
    assert result["errors"][0].endswith("line 2: the export stamp's zone 'XYZT' is not one memo knows; "
                                        "it is read in the import's zone (--tz)")
    assert {t["created"] for t in turns(vault)} == {"2026-01-07T14:30:00.000Z"}


# ---------------------------------------------------------------- OpenCode

SID, CHILD, PID = "ses_4f2a9c1e7ffeAbCdEf012345", "ses_4f2a9d00000eChildAgent01", "4b0ea68d7af9a6031a7ffda7ad66e0cb83315750"


def opencode_messages(sid: str) -> list[tuple[dict, list[dict]]]:
    """The messages of one session and their parts, as OpenCode stores them. Worked out: the
    prompts are msg_01 (its synthetic part left out) and msg_06; msg_03 (a compaction) and
    msg_05 (synthetic only) are OpenCode's, msg_08 is under a pending revert → 2 turns; tokens:
    msg_02 + the compaction summary msg_04 for the first, msg_07 for the second."""
    def user(mid, at, *parts, model="claude-sonnet-4"):
        return ({"id": mid, "sessionID": sid, "role": "user", "time": {"created": ms(at)}, "agent": "build",
                 "model": {"providerID": "anthropic", "modelID": model}},
                [{"id": f"prt_{mid[4:]}{n}", "sessionID": sid, "messageID": mid, **p} for n, p in enumerate(parts)])

    def assistant(mid, parent, start, end, tokens, *parts, summary=False):
        info = {"id": mid, "sessionID": sid, "role": "assistant", "time": {"created": ms(start), "completed": ms(end)},
                "parentID": parent, "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "build",
                "agent": "build", "path": {"cwd": "/home/ana/shop-api/src", "root": "/home/ana/shop-api"}, "cost": 0.01,
                "tokens": {"input": tokens[0], "output": tokens[1], "reasoning": tokens[2],
                           "cache": {"read": tokens[3], "write": tokens[4]}}}
        if summary:
            info["summary"] = True
        return info, [{"id": f"prt_{mid[4:]}{n}", "sessionID": sid, "messageID": mid, **p} for n, p in enumerate(parts)]

    return [
        user("msg_01", "2026-01-05T10:00:05Z", {"type": "text", "text": "fix the rounding of the cart total"},
             {"type": "text", "synthetic": True, "text": "Called the Read tool with the following input: {\"filePath\": \"cart.py\"}"},
             {"type": "file", "mime": "text/plain", "filename": "cart.py", "url": "file:///home/ana/shop-api/cart.py"}),
        assistant("msg_02", "msg_01", "2026-01-05T10:00:06Z", "2026-01-05T10:01:00Z", (1000, 200, 50, 3000, 100),
                  {"type": "step-start"}, {"type": "text", "text": "Rounding once at the end now.",
                                           "time": {"start": ms("2026-01-05T10:00:50Z"), "end": ms("2026-01-05T10:00:59Z")}},
                  {"type": "tool", "callID": "c1", "tool": "edit", "state": {
                      "status": "completed", "input": {}, "output": "ok", "title": "cart.py", "metadata": {},
                      "time": {"start": ms("2026-01-05T10:00:20Z"), "end": ms("2026-01-05T10:00:21Z")}}},
                  {"type": "step-finish", "reason": "stop", "cost": 0.01, "tokens": {
                      "input": 1000, "output": 200, "reasoning": 50, "cache": {"read": 3000, "write": 100}}}),
        user("msg_03", "2026-01-05T10:20:00Z", {"type": "compaction", "auto": True}),
        assistant("msg_04", "msg_03", "2026-01-05T10:20:01Z", "2026-01-05T10:20:30Z", (500, 100, 0, 0, 0),
                  {"type": "text", "text": "Summary: we fixed rounding."}, summary=True),
        user("msg_05", "2026-01-05T10:20:31Z", {"type": "text", "synthetic": True, "text": "Continue if you have next steps"}),
        user("msg_06", "2026-01-05T10:25:00Z", {"type": "text", "text": "now add a test for it"},
             {"type": "text", "text": "ignored draft", "ignored": True}),
        assistant("msg_07", "msg_06", "2026-01-05T10:25:01Z", "2026-01-05T10:26:00Z", (700, 120, 0, 4000, 0),
                  {"type": "text", "text": "Added test_cart_rounding."}),
        user("msg_08", "2026-01-05T10:30:00Z", {"type": "text", "text": "actually rewrite it all in Rust"}),
        assistant("msg_09", "msg_08", "2026-01-05T10:30:01Z", "2026-01-05T10:31:00Z", (900, 300, 0, 0, 0),
                  {"type": "text", "text": "Starting the rewrite."}),
    ]


def opencode_session(sid: str, **extra) -> dict:
    return {"id": sid, "slug": "brave-otter", "version": "0.15.8", "projectID": PID, "directory": "/home/ana/shop-api",
            "title": "Fix cart rounding", "time": {"created": ms("2026-01-05T10:00:00Z"), "updated": ms("2026-01-05T10:31:00Z")},
            "revert": {"messageID": "msg_08", "snapshot": "abc123"}, **extra}


CHILD_MESSAGES = [({"id": "msg_c1", "sessionID": CHILD, "role": "user", "time": {"created": ms("2026-01-05T10:00:30Z")},
                    "agent": "explore", "model": {"providerID": "anthropic", "modelID": "claude-haiku-4"}},
                   [{"id": "prt_c1", "sessionID": CHILD, "messageID": "msg_c1", "type": "text",
                     "text": "Find every place the cart total is computed"}])]


def opencode_storage(data: Path) -> Path:
    """``~/.local/share/opencode`` with the JSON storage of one session, a sub-agent's session,
    a part that is not JSON (a problem) and ``auth.json`` (never opened)."""
    storage = data / "storage"
    (storage / "project").mkdir(parents=True)
    (storage / "project" / f"{PID}.json").write_text(json.dumps({"id": PID, "worktree": "/home/ana/shop-api", "vcs": "git"}))
    (data / "auth.json").write_text(json.dumps({"anthropic": {"type": "api", "key": SECRET}}))
    for sid, info, messages in ((SID, opencode_session(SID), opencode_messages(SID)),
                                (CHILD, opencode_session(CHILD, parentID=SID, title="Explore (@explore subagent)",
                                                         revert=None), CHILD_MESSAGES)):
        (storage / "session" / PID).mkdir(parents=True, exist_ok=True)
        (storage / "session" / PID / f"{sid}.json").write_text(json.dumps(info, indent=2))
        for message, parts in messages:
            (storage / "message" / sid).mkdir(parents=True, exist_ok=True)
            (storage / "message" / sid / f"{message['id']}.json").write_text(json.dumps(message, indent=2))
            (storage / "part" / message["id"]).mkdir(parents=True, exist_ok=True)
            for part in parts:
                (storage / "part" / message["id"] / f"{part['id']}.json").write_text(json.dumps(part, indent=2))
    (storage / "part" / "msg_06" / "prt_06zz.json").write_text("{oops")
    return data


def opencode_db(path: Path, sid: str = SID) -> Path:
    """``opencode.db`` with the tables of OpenCode's first migration and the same messages."""
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE project (id text PRIMARY KEY, worktree text NOT NULL, vcs text, name text,
            time_created integer NOT NULL, time_updated integer NOT NULL);
        CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, slug text NOT NULL,
            directory text NOT NULL, title text NOT NULL, version text NOT NULL, share_url text, revert text,
            permission text, time_created integer NOT NULL, time_updated integer NOT NULL, time_compacting integer,
            time_archived integer);
        CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
            time_updated integer NOT NULL, data text NOT NULL);
        CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
            time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
    """)
    now = ms("2026-01-05T10:31:00Z")
    conn.execute("INSERT INTO project VALUES (?, '/home/ana/shop-api', 'git', NULL, ?, ?)", (PID, now, now))
    for session_id, parent, messages in ((sid, None, opencode_messages(sid)), (CHILD, sid, CHILD_MESSAGES)):
        revert = None if parent else json.dumps({"messageID": "msg_08"})
        conn.execute("INSERT INTO session VALUES (?, ?, ?, 'brave-otter', '/home/ana/shop-api', 'Fix cart rounding', "
                     "'1.2.0', NULL, ?, NULL, ?, ?, NULL, NULL)", (session_id, PID, parent, revert,
                                                                  ms("2026-01-05T10:00:00Z"), now))
        for message, parts in messages:
            data = {k: v for k, v in message.items() if k not in ("id", "sessionID")}
            conn.execute("INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                         (message["id"], session_id, message["time"]["created"], now, json.dumps(data)))
            for part in parts:
                data = {k: v for k, v in part.items() if k not in ("id", "sessionID", "messageID")}
                conn.execute("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                             (part["id"], message["id"], session_id, message["time"]["created"], now, json.dumps(data)))
    conn.execute("INSERT INTO part VALUES ('prt_06zz', 'msg_06', ?, 0, 0, '{oops')", (sid,))
    conn.commit()
    conn.close()
    return path


def expected_opencode_turns(sid: str) -> list[tuple]:
    return [
        # msg_02 + the compaction summary msg_04: input 1000+500, output 200+100, reasoning 50, cache 3000/100
        ("2026-01-05T10:00:05.000Z", "fix the rounding of the cart total", "shop-api", "claude-sonnet-4-5",
         {"input": 1500, "output": 300, "reasoning": 50, "cacheRead": 3000, "cacheWrite": 100}, sid),
        ("2026-01-05T10:25:00.000Z", "now add a test for it", "shop-api", "claude-sonnet-4-5",
         {"input": 700, "output": 120, "reasoning": 0, "cacheRead": 4000, "cacheWrite": 0}, sid)]


def opencode_turns(vault: Path) -> list[tuple]:
    return [(t["created"], t["body"], t["project"], t["model"], t.get("tokens"), t["transcriptId"]) for t in turns(vault)]


def test_opencode_json_storage_session_with_its_messages_and_parts(tmp_path):
    vault, data = tmp_path / "v", opencode_storage(tmp_path / "opencode")
    result = imported(vault, "opencode", data)
    # the walker sees auth.json (not opened) and the two session files; message/, part/, project/ are not entered
    assert counts(result) == (3, 1, 2, 1) and result["unrecognised"] == 0
    assert [e.split("/opencode/", 1)[1] for e in result["errors"]] == [
        f"storage/session/{PID}/{SID}.json: part/msg_06/prt_06zz.json: not a JSON object"]
    assert opencode_turns(vault) == expected_opencode_turns(SID)
    bodies = " ".join(t["body"] for t in turns(vault))
    for not_a_turn in ("Called the Read tool", "Continue if you have", "ignored draft", "Rust", "Find every place",
                       "Rounding once", "Summary:"):
        assert not_a_turn not in bodies
    meta = session(vault, "shop-api", f"opencode-{SID.lower()}-1")  # memo ids are lower case
    # the session's creation to the last activity (msg_09, under the revert, still happened)
    assert (meta["startTime"], meta["endTime"], meta["durationMinutes"], meta["summary"], meta["ide"]) == (
        "2026-01-05T10:00:00.000Z", "2026-01-05T10:31:00.000Z", 31, "Fix cart rounding", "opencode")
    assert SECRET.encode() not in everything_written(vault)
    before = digest(vault)
    assert counts(imported(vault, "opencode", data)) == (3, 0, 0, 1)
    assert digest(vault) == before


def test_opencode_database_gives_the_same_turns_and_a_session_in_both_is_one(tmp_path):
    vault, db = tmp_path / "v", opencode_db(tmp_path / "opencode.db")
    result = imported(vault, "opencode", db)
    assert counts(result) == (1, 1, 2, 1)
    assert result["errors"][0].endswith("opencode.db: part prt_06zz: its data is not a JSON object")
    assert opencode_turns(vault) == expected_opencode_turns(SID)
    assert not (tmp_path / "opencode.db-wal").exists()
    data = opencode_storage(tmp_path / "share")  # the same session still in the old JSON storage
    both = imported(vault, "opencode", db, data)
    assert (both["sessions"], both["turns"]) == (0, 0)
    assert len(turns(vault)) == 2


def test_opencode_export_document_is_read_like_the_storage(tmp_path):
    vault, path = tmp_path / "v", tmp_path / "session-export.json"
    path.write_text(json.dumps({"info": opencode_session(SID), "messages": [
        {"info": info, "parts": parts} for info, parts in opencode_messages(SID)], "todos": []}, indent=2))
    assert counts(imported(vault, "opencode", path)) == (1, 1, 2, 0)
    assert opencode_turns(vault) == expected_opencode_turns(SID)


def test_files_that_are_not_opencodes_are_refused_by_name(tmp_path):
    vault = tmp_path / "v"
    gemini = tmp_path / "session-1.json"
    gemini.write_text(json.dumps({"sessionId": "s1", "projectHash": "ab" * 32, "messages": []}))
    cursor = cursor_db(tmp_path / "state.db")
    ran = memo("import", "opencode", str(gemini), str(cursor), vault=vault, check=False)
    assert ran.returncode == 1 and "error: nothing recognised" in ran.stderr
    assert "session-1.json: not an opencode transcript (a Gemini CLI chat: import it with `memo import gemini`)" \
        in ran.stderr
    assert "state.db: not an opencode transcript (a Cursor state database: import it with `memo import cursor`)" \
        in ran.stderr
    assert SECRET not in ran.stderr


# ---------------------------------------------------------------- both, where they keep their chats


def test_import_auto_finds_cursor_and_opencode_where_they_keep_their_chats(tmp_path):
    home, vault = tmp_path / "home", tmp_path / "v"
    (home / ".config" / "Cursor" / "User" / "globalStorage").mkdir(parents=True)
    cursor_db(home / ".config" / "Cursor" / "User" / "globalStorage" / "state.vscdb")
    data = opencode_storage(home / ".local" / "share" / "opencode")
    opencode_db(data / "opencode.db")  # the same session in the database and the old storage: one
    found = json.loads(memo("--json", "import", "auto", vault=vault, env={"HOME": str(home)}).stdout)["sources"]
    assert {s["source"]: counts(s) for s in found} == {"cursor": (1, 2, 3, 2), "opencode": (4, 1, 2, 2)}
    assert SECRET.encode() not in everything_written(vault)
