"""The three transcript importers on real, published transcripts (SPEC §7).

The transcripts live outside the repository, in ``<repo>/../shared/realdata`` (see its
README; the ``realdata`` fixture of ``tests/conftest.py`` finds them and errors out when
they are missing); they are read in place, never copied. Every expected count below was made by
reading the file directly (json/grep exploration, independent of the parsers) and the
comment next to it says how.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from memo_analytics.config import Settings
from memo_analytics.domain.records import RecordKind
from memo_analytics.index import store as index
from memo_analytics.services.importers import claude_code, codex, specstory
from memo_analytics.services.importers.common import ImportOptions, run_import, walk_files
from memo_analytics.services.store import VaultStore
from memo_analytics.vault.io import read_record

UTC = timezone.utc
SHANGHAI = ZoneInfo("Asia/Shanghai")
NEW_YORK = ZoneInfo("America/New_York")  # edobry's old-Cursor titles: 16:30:55 local, file name 20-30 UTC
PARSERS = {"claude-code-jsonl": claude_code, "specstory-md": specstory, "codex-rollouts": codex}
FEISHU = "codex-rollouts/7567491-Feishu_ClaudeCode"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


CC = "claude-code-jsonl/"
SS = "specstory-md/"
CX = f"{FEISHU}/.codex/sessions/2025/11/"
MA = "multi-agent/Mai0313-VibeCodingTracker/tests/fixtures/sessions/"
GSS = SS + "specstoryai-getspecstory/specstory-cli/.specstory/history/"

# (parser, file, [(prompt count, start of first prompt) per transcript])
CASES = [
    # 16 user records: 13 carry toolUseResult + a tool_result block, 2 are isMeta "Stop hook
    # feedback" → 1 prompt (line 2)
    (claude_code, CC + "DRMacIver-claude-reliability/snapshot-tests/tests/coverage-test-fix/transcript.jsonl",
     [(1, "Add a function called multiply_numbers(a: int, b: int)")]),
    # 24 user records: 7 tool results, 3 <task-notification>, 4 isMeta (2 caveats, 2 command
    # expansions), 2 local /plugin commands + their 2 <local-command-stdout>, 1 "[Request
    # interrupted by user]" → 5: lines 2, 44 (/publish-session), 70 (/publish-session), 74, 82;
    # plus the messages typed while the agent worked (queue-operation enqueue, lines 16, 17, 34;
    # the task-notification ones are noise): line 82 delivers line 34's text, the same turn → 7
    (claude_code, CC + "moredip-session-share/samples/claude-code-projects/0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl",
     [(7, "Spaw sub-agents to write poems about Thai green curry")]),
    # 175 user records: 167 tool results (156 of them in sidechains), 5 isSidechain briefs,
    # line 3 the isMeta expansion of line 2 (/orchestrator with args), line 434 "Thanks! ..." → 2
    (claude_code, CC + "d-kimuson-claude-code-viewer/mock-global-claude-dir/projects/sample-project/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
     [(2, "/orchestrator create TODO app by Next.js")]),
    # 10 "type":"user" lines: 1, 3, 12 are text; 5, 18 tool results; 6 bare caveat text; 7
    # test-command answered by 8 <local-command-stdout>; 10 (no content) and 11 (message is a
    # string) are malformed → 3 (skipped lines tested below)
    (claude_code, CC + "daaain-claude-code-log/test/test_data/edge_cases.jsonl",
     [(3, "Here's a message with some **markdown** formatting")]),
    # two sessionIds. e9f146fa: 22 user records, 19 tool results, line 20 "[Request interrupted
    # by user for tool use]" → 2 (lines 1, 21). b162b1ae: 22 user records, 13 tool results, 2
    # caveats, /mcp and /exit each answered by a <local-command-stdout> (4 records), line 63
    # interrupt → 2 (lines 54, 64)
    (claude_code, MA + "claude_code.jsonl",
     [(2, "幫我檢查一下 go.mod 裡面 為何 go版本是 1.23"), (2, "幫我查一下 golang文檔 透過 context7")]),
    # grep -c '^_\*\*User\*\*_' = 6; three of them follow an Assistant turn whose ``` fences are
    # unbalanced (a fence-tracking reader loses them); none is a caveat/command → 6
    (specstory, SS + "edobry-minsky/.specstory/history/2025-05-01_20-45-existing-guidelines-for-cursor-rules.md",
     [(6, "do we have any existing cursor rules ABOUT making cursor rules?")]),
    # grep -c '^_\*\*User\*\*_' = 26, all plain requests → 26
    (specstory, SS + "edobry-minsky/.specstory/history/2025-04-26_20-30-setting-up-minsky-cli-with-bun.md",
     [(26, "initialize a bun typescript project for a CLI tool called minsky")]),
    # grep '^_\*\*User' → 4 × "_**User (2025-10-14 22:25Z)**_", all plain → 4
    (specstory, SS + "hpm27-agente-bsc-rag/.specstory/history/2025-10-15_00-22Z-me-ajude-a-resolver.md",
     [(4, "me ajude a resolver")]),
    # 11 User blocks: /code-review (kept), its same-second "## Context" expansion, 6 plain, then
    # /exit + "<local-command-stdout>Goodbye!" + caveat → 7
    (specstory, GSS + "2026-01-16_16-26-02Z.md", [(7, "/code-review")]),
    # 21 User blocks: /model + its stdout + caveat, 4 "[Request interrupted by user…]" → 14
    (specstory, SS + "specstoryai-getspecstory/.specstory/history/2026-07-02_15-28-22Z.md",
     [(14, "OK, we're implementing chunk 1 of @specstory-cli/docs/CLOUD-RESUME.md")]),
    # 3 User blocks: /exit, its stdout, the caveat → nothing
    (specstory, GSS + "2026-01-16_16-46-41Z-command-name-exit-command.md", []),
    # a hand-written summary, no User block at all → nothing
    (specstory, SS + "edobry-minsky/.specstory/history/2025-05-21_improve-mcp-error-handling.md", []),
    # grep -c '"type":"user_message"' = 4 (response_item user messages also hold an
    # <environment_context> wrapper, not counted) → 4
    (codex, CX + "27/rollout-2025-11-27T11-39-23-019ac364-f0dc-7043-9750-594e12f5fd21.jsonl", [(4, "阅读readme")]),
    # grep -c '"type":"user_message"' = 23 (plus AGENTS.md and environment wrappers as items) → 23
    (codex, CX + "28/rollout-2025-11-28T22-33-42-019acae2-56c7-73c2-a045-02820622bdaa.jsonl", [(23, "阅读readme")]),
    # grep -c '"type":"user_message"' = 12 → 12
    (codex, CX + "29/rollout-2025-11-29T04-46-22-019acc37-86ce-7730-9043-dc2bafe2e2c2.jsonl",
     [(12, "查看日志，告诉我为什么生成飞书文档这件事情重复了那么多次")]),
    # 1 user_message event, itself a VS Code wrapper "# Context from my IDE setup: ... ## My
    # request for Codex:" → 1, the request only
    (codex, MA + "codex.jsonl", [(1, "幫我檢查一下 go.mod 裡面 為何 go版本是 1.24?")]),
]


@pytest.mark.parametrize("parser, relative, expected", CASES, ids=[Path(c[1]).name[:48] for c in CASES])
def test_human_prompt_counts(realdata, parser, relative, expected):
    result = parser.parse(realdata / relative, ImportOptions(zone=NEW_YORK))
    got = [(len(t.prompts), t.prompts[0].text) for t in result.transcripts]
    assert [n for n, _ in got] == [n for n, _ in expected]
    for (_, first), (_, start) in zip(got, expected):
        assert first.startswith(start)
    for transcript in result.transcripts:
        assert transcript.activity and all(s.utcoffset() == timedelta(0) for s in transcript.activity)


def test_a_transcript_whose_lines_were_written_twice_has_its_turns_once(realdata, tmp_path):
    """Found by a tester of bad files: a Claude Code transcript whose lines were written again
    (``cat a a``) had three turns twice — the messages typed while the agent worked
    (``queue-operation``, which carry no ``uuid``) counted at each copy. The same operation at the
    same instant with the same text is one."""
    source = realdata / case("0ccf1a04")
    doubled = tmp_path / source.name
    doubled.write_bytes(source.read_bytes() * 2)
    once = claude_code.parse(source, ImportOptions())
    twice = claude_code.parse(doubled, ImportOptions())
    assert [[(p.text, p.at) for p in t.prompts] for t in twice.transcripts] == \
        [[(p.text, p.at) for p in t.prompts] for t in once.transcripts]
    assert sum(len(t.prompts) for t in twice.transcripts) == 7


@pytest.mark.parametrize("how", ["appended", "each line twice"])
def test_a_codex_rollout_whose_lines_were_written_twice_has_its_turns_and_tokens_once(realdata, tmp_path, how):
    """Found by a tester of bad files: a Codex rollout written again (``cat a a``, or each line
    twice) had its 4 turns twice, and the copy appended counted its cost twice (0.3053 against
    0.1575): rollout lines carry no id. The same user message at the same instant is one, and a
    running token total below the last one is a line written again."""
    [source] = sorted((realdata / FEISHU).rglob("rollout-2025-11-27T11-39-23-*.jsonl"))
    lines = source.read_bytes().splitlines(keepends=True)
    doubled = tmp_path / source.name
    doubled.write_bytes(b"".join(lines) * 2 if how == "appended" else b"".join(line * 2 for line in lines))
    once = codex.parse(source, ImportOptions())
    twice = codex.parse(doubled, ImportOptions())
    [first], [again] = once.transcripts, twice.transcripts
    assert [(p.text, p.at, p.tokens) for p in again.prompts] == [(p.text, p.at, p.tokens) for p in first.prompts]
    assert len(again.prompts) == 4 and any(p.tokens for p in again.prompts)


def case(name: str) -> str:
    """The relative path of the CASES file whose name starts with ``name``."""
    [relative] = [c[1] for c in CASES if Path(c[1]).name.startswith(name)]
    return relative


def span(parser, path, zone=None):
    [transcript] = parser.parse(path, ImportOptions(zone=zone)).transcripts
    return min(transcript.activity), max(transcript.activity)


def test_start_and_end_are_the_first_and_last_timestamps(realdata):
    # min/max of every "timestamp" field of the file, computed with json alone
    assert span(claude_code, realdata / case("transcript.jsonl")) == (at("2026-01-21T06:19:38.048Z"), at("2026-01-21T06:20:29.268Z"))
    assert span(claude_code, realdata / case("0ccf1a04")) == (at("2026-01-22T19:38:12.032Z"), at("2026-01-22T21:21:28.260Z"))
    # session_meta.payload.timestamp (…23.740Z) precedes its envelope stamp (…23.746Z)
    assert span(codex, realdata / case("rollout-2025-11-27")) == (at("2025-11-27T03:39:23.740Z"), at("2025-11-27T03:42:00.997Z"))
    # old Cursor: only the title stamp "(2025-04-26 16:30:55)", local time of the author
    assert span(specstory, realdata / case("2025-04-26_20-30"), NEW_YORK) == (at("2025-04-26T20:30:55Z"),) * 2


def test_edge_cases_file_counts_its_malformed_lines(realdata):
    # lines 10 (no content), 11 (message is a string), 13 "massive error", 14 {"silly"}, 15 42,
    # 16 [1]; line 17 is a well-formed assistant record of another session (no prompt)
    result = claude_code.parse(realdata / case("edge_cases"), ImportOptions())
    assert result.skipped_lines == 6
    assert [t.transcript_id for t in result.transcripts] == ["edge_cases"]


def test_codex_session_across_the_local_date_line_keeps_utc_instants(realdata):
    # Saved under 2025/11/29 (local UTC+8 date, file name 04-46-22 local), but every instant
    # is on 2025-11-28 in UTC. (No rollout here runs through local midnight itself: the
    # 11/28 one ends at 23:53:31 local.)
    [transcript] = codex.parse(realdata / case("rollout-2025-11-29"), ImportOptions(zone=SHANGHAI)).transcripts
    start, end = min(transcript.activity), max(transcript.activity)
    assert (start, end) == (at("2025-11-28T20:46:22.414Z"), at("2025-11-28T21:50:08.925Z"))
    assert start.astimezone(SHANGHAI).isoformat() == "2025-11-29T04:46:22.414000+08:00"
    assert transcript.prompts[0].at == at("2025-11-28T20:46:56.319Z")
    assert transcript.prompts[-1].at == at("2025-11-28T21:36:33.270Z")
    [evening] = codex.parse(realdata / case("rollout-2025-11-28"), ImportOptions(zone=SHANGHAI)).transcripts
    assert max(evening.activity).astimezone(SHANGHAI).isoformat() == "2025-11-28T23:53:31.197000+08:00"


def test_same_session_saved_under_three_names_has_one_id(realdata):
    folder = realdata / GSS
    ids = {specstory.parse(p, ImportOptions()).transcripts[0].transcript_id for p in folder.glob("2026-01-16_16-26-02Z*.md")}
    assert ids == {"0a57f201-e967-4d94-a191-eef5c4419091"}


# Every file of each folder, for the import totals. Claude Code: each count checked as above
# (DRMacIver: one prompt + tool results + isMeta stop hooks each; d-kimuson 1af7/5c03: /init or
# /orchestrator + isMeta expansion + tool results/sidechains; daaain: text user records minus
# tool results; moredip 4b20: 1 text + 1 tool result). subagents/ are not walked.
# moredip 0ccf1a04: 5 user-record prompts + 2 messages queued while the agent worked (the third
# queued one is delivered later as a user record: the same turn) → 7.
CLAUDE_PROMPTS = 7 * 1 + (1 + 1 + 2) + (3 + 4 + 2 + 2) + (7 + 1)  # = 30
# SpecStory: old Cursor files = grep -c '^_\*\*User\*\*_' (26+24+2+5+23+1+1+17+6); hpm27 =
# 2+1+4 User blocks; CLI v2 = User blocks minus local commands/output/caveats, interrupts,
# image notes, expansions and task notifications (each listed and checked by hand):
# 2026-07-02 14, 2025-06-30 1, 2026-01-16 7 (three identical files, imported once), exit 0,
# 01-25 1 (4 − /exit trio), 02-10 13 (19 − 3 − 3 interrupts), 02-11 5 (9 − expansion − 3),
# 02-20 4, 03-02 2 (6 − expansion − 3), 06-11 35 (58 − 12 local − 6 images − 2 interrupts
# − 3 exit), 06-18 4, 06-23 76 (97 − 10 interrupts − 10 image notes − 1 task notification), 08-03 1
SPECSTORY_PROMPTS = 105 + 7 + (14 + 1 + 7 + 0 + 1 + 13 + 5 + 4 + 2 + 35 + 4 + 76 + 1)  # = 275
CODEX_PROMPTS = 4 + 23 + 12
# Sessions: one per work interval (idle gap 30 min). Claude Code: 16 transcripts, 0ccf1a04
# pauses 19:51 → 21:11 → 17. SpecStory: 24 distinct transcripts; 2026-07-02 has 3 intervals
# (07-02, 07-03, 07-06), 02-11 has 2 (02-11, 02-12), 06-11 has 11 (prompts on 8 days, 06-18
# alone split in 4) → 24 + 2 + 1 + 10 = 37; the /exit of 0a57f201 nine days later is no prompt,
# so that session is not stretched to it. Codex: 3 rollouts without a long pause → 3.
EXPECTED = {
    "claude-code-jsonl": dict(files=16, sessions=17, turns=CLAUDE_PROMPTS, skipped=6),
    "specstory-md": dict(files=28, sessions=37, turns=SPECSTORY_PROMPTS, skipped=0),
    "codex-rollouts": dict(files=3, sessions=3, turns=CODEX_PROMPTS, skipped=0),
}


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def import_all(store: VaultStore, realdata: Path) -> dict[str, dict]:
    summaries = {}
    for folder, parser in PARSERS.items():
        files = list(walk_files([realdata / folder], parser.SUFFIXES, parser.EXCLUDE_DIRS))
        result = run_import(store, files, parser.parse, ImportOptions(zone=NEW_YORK), source=parser.SOURCE)
        # every skipped line is named with its reason (daaain's edge cases: malformed on purpose)
        assert [e.split(f"{realdata}/", 1)[1] for e in result.errors] == (  # wherever MEMO_REALDATA puts them
            [f"claude-code-jsonl/daaain-claude-code-log/test/test_data/edge_cases.jsonl: line {n}: not a Claude Code "
             "record (no type, or a malformed message)" for n in (10, 11, 13, 14, 15, 16)]
            if folder == "claude-code-jsonl" else [])
        assert (result.recognised, result.unrecognised) == (result.files, 0)
        summaries[folder] = dict(files=result.files, sessions=result.sessions, turns=result.turns, skipped=result.skipped)
    return summaries


@pytest.fixture(scope="module")
def vault(realdata, tmp_path_factory):
    store = VaultStore(Settings(vault_root=tmp_path_factory.mktemp("realdata") / "vault", timezone="UTC"))
    first = import_all(store, realdata)
    before = tree_digest(store.layout.projects_dir)
    second = import_all(store, realdata)
    after = tree_digest(store.layout.projects_dir)
    yield store, first, second, before, after
    store.close()


@pytest.mark.slow
def test_import_summaries_match_the_per_file_counts(vault):
    store, first, _, _, _ = vault
    assert first == EXPECTED
    rows = dict(store.conn.execute("SELECT source, count(*) FROM records WHERE kind = 'prompt' GROUP BY source"))
    assert rows == {"import:claude-code": CLAUDE_PROMPTS, "import:specstory": 275, "import:codex": 39}


@pytest.mark.slow
def test_second_import_adds_nothing_and_changes_no_byte(vault):
    _, _, second, before, after = vault
    assert {k: (v["sessions"], v["turns"]) for k, v in second.items()} == {k: (0, 0) for k in PARSERS}
    records = [name for name in before if "/prompts/" in name or "/sessions/" in name]
    assert len(records) == 17 + 37 + 3 + CLAUDE_PROMPTS + 275 + 39
    assert after == before  # records and compiled views alike


@pytest.mark.slow
def test_no_fake_token_reaches_the_vault_or_the_index(vault, realdata):
    store = vault[0]
    pattern = re.compile(r"github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{20,}")
    tokens = {t for p in (realdata / FEISHU).rglob("*.jsonl") for t in pattern.findall(p.read_text(encoding="utf-8"))}
    assert any(t.startswith("github_pat_eReRXVRK") for t in tokens)
    assert any(t.startswith("sk-xIM8icuB") for t in tokens)
    store.conn.execute("PRAGMA wal_checkpoint(FULL)")
    files = [p for p in store.root.rglob("*") if p.is_file()]
    assert store.layout.index_path in files
    for path in files:
        data = path.read_bytes()
        for token in tokens:
            assert token.encode() not in data, f"{token[:16]}… found in {path}"
    conn = sqlite3.connect(store.layout.index_path)
    try:
        for token in tokens:
            hits = conn.execute("SELECT count(*) FROM records WHERE instr(meta, ?) OR instr(body, ?) OR instr(path, ?)",
                                (token, token, token)).fetchone()[0]
            assert hits == 0
        assert conn.execute("SELECT count(*) FROM records WHERE kind = 'prompt' AND source = 'import:codex'").fetchone()[0] == 39
    finally:
        conn.close()


def cc_line(ts: str, kind: str, text: str = "ok", sid: str = "5e55a0a1-0000-4000-8000-000000000001") -> str:
    record = {"type": kind, "sessionId": sid, "timestamp": ts, "cwd": "/home/ana/shop-api", "uuid": f"{kind}-{ts}",
              "message": {"role": kind, "content": text} if kind == "user" else
              {"role": "assistant", "model": "claude-opus-4-5", "content": [{"type": "text", "text": text}]}}
    return json.dumps(record) + "\n"


def import_file(store: VaultStore, path: Path):
    return run_import(store, [path], claude_code.parse, ImportOptions())


def test_idle_gap_makes_one_session_per_work_interval(tmp_path, store):
    path = tmp_path / "5e55a0a1-0000-4000-8000-000000000001.jsonl"
    path.write_text("".join([
        cc_line("2026-01-05T10:00:00Z", "user", "plan the cart fix"), cc_line("2026-01-05T10:05:00Z", "assistant"),
        cc_line("2026-01-05T10:12:00Z", "user", "add tests"), cc_line("2026-01-05T10:20:00Z", "assistant"),
        cc_line("2026-01-07T09:00:00Z", "user", "two days later: ship it"), cc_line("2026-01-07T09:15:00Z", "assistant"),
    ]), encoding="utf-8")
    result = import_file(store, path)
    assert (result.sessions, result.turns, result.skipped) == (2, 3, 0)
    base = "claude-code-5e55a0a1-0000-4000-8000-000000000001"
    metas = [store.read("shop-api", RecordKind.SESSION, f"session-{base}-{n}")[0] for n in (1, 2)]
    assert [(m["transcriptId"], m["interval"]) for m in metas] == [("5e55a0a1-0000-4000-8000-000000000001", 1),
                                                                    ("5e55a0a1-0000-4000-8000-000000000001", 2)]
    # each interval bills its own minutes, not the two days between them
    assert [(m["startTime"], m["endTime"], m["durationMinutes"]) for m in metas] == [
        ("2026-01-05T10:00:00.000Z", "2026-01-05T10:20:00.000Z", 20),
        ("2026-01-07T09:00:00.000Z", "2026-01-07T09:15:00.000Z", 15),
    ]
    assert store.read("shop-api", RecordKind.PROMPT, f"prompt-{base}-2-t1")[1].strip() == "two days later: ship it"


def test_grown_transcript_adds_only_new_turns_and_moves_the_end(tmp_path, store):
    path = tmp_path / "5e55a0a1-0000-4000-8000-000000000001.jsonl"
    path.write_text(cc_line("2026-01-05T10:00:00Z", "user", "one") + cc_line("2026-01-05T10:02:00Z", "assistant")
                    + cc_line("2026-01-05T10:05:00Z", "user", "two") + cc_line("2026-01-05T10:08:00Z", "assistant"),
                    encoding="utf-8")
    base = "claude-code-5e55a0a1-0000-4000-8000-000000000001-1"
    first = import_file(store, path)
    assert (first.sessions, first.turns) == (1, 2)
    session = store.read("shop-api", RecordKind.SESSION, f"session-{base}")[0]
    assert (session["endTime"], session["durationMinutes"]) == ("2026-01-05T10:08:00.000Z", 8)
    turn_one = store.path_for("shop-api", RecordKind.PROMPT, f"prompt-{base}-t1").read_bytes()
    with path.open("a", encoding="utf-8") as handle:
        handle.write(cc_line("2026-01-05T10:15:00Z", "user", "three") + cc_line("2026-01-05T10:18:00Z", "assistant")
                     + cc_line("2026-01-05T10:22:00Z", "user", "four") + cc_line("2026-01-05T10:26:00Z", "assistant"))
    grown = import_file(store, path)
    assert (grown.sessions, grown.turns) == (0, 2)
    session = store.read("shop-api", RecordKind.SESSION, f"session-{base}")[0]
    assert (session["startTime"], session["endTime"], session["durationMinutes"]) == (
        "2026-01-05T10:00:00.000Z", "2026-01-05T10:26:00.000Z", 26)
    bodies = [store.read("shop-api", RecordKind.PROMPT, f"prompt-{base}-t{n}")[1].strip() for n in (3, 4)]
    assert bodies == ["three", "four"]
    assert store.path_for("shop-api", RecordKind.PROMPT, f"prompt-{base}-t1").read_bytes() == turn_one


@pytest.mark.slow
def test_imported_sessions_are_summarised_by_title_or_first_meaningful_line(vault):
    """Issue 15 point 5: a session's description is its transcript's title or the first line of
    its prompts that says what the work is — never an image placeholder or an acknowledgement."""
    from memo_analytics.services.describe import _meaningful

    store = vault[0]
    rows = store.conn.execute("SELECT summary FROM records WHERE kind = 'session'").fetchall()
    summaries = [r[0] for r in rows]
    described = [s for s in summaries if s]
    assert len(described) >= 0.9 * len(summaries) and all(len(s) <= 120 for s in described)
    assert not [s for s in described if not _meaningful(s) and not s.startswith("/")]
    for placeholder in ("[Image #", "[Image: source", "k, done"):
        assert not any(s.startswith(placeholder) for s in described)


@pytest.mark.slow
def test_activity_and_timesheet_pdf_agree_on_the_real_vault(vault, tmp_path):
    from pypdf import PdfReader

    from memo_analytics.analytics.activity import ActivityRequest, activity_report
    from memo_analytics.reports.timesheet import render_timesheet_pdf

    store = vault[0]
    report = activity_report(store, ActivityRequest(tz="Asia/Shanghai"))
    assert report.total_duration_minutes > 0 and len(report.sessions) == 17 + 37 + 3
    pdf = render_timesheet_pdf(report, tmp_path / "real.pdf")
    text = "\n".join(page.extract_text() for page in PdfReader(str(pdf)).pages)
    assert f"Total billable hours: {report.total_billable_hours:.2f}" in text
    assert "All times in Asia/Shanghai" in text


def test_the_real_lines_carrying_fake_tokens_are_redacted_when_recorded(realdata, store):
    """The fake tokens sit in tool output and git URLs, not in human prompts; record the very
    lines that carry them as bodies so that redaction itself is exercised on real text."""
    pattern = re.compile(r"github_pat_[A-Za-z0-9_]{20,}|sk-[A-Za-z0-9_-]{20,}")
    lines = []
    for path in sorted((realdata / FEISHU).rglob("*.jsonl")):
        for raw in path.read_text(encoding="utf-8").splitlines():
            if pattern.search(raw):
                lines.append(json.loads(raw))
    texts = []
    for record in lines:
        stack, found = [record], []
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, str) and pattern.search(item):
                found.append(item)
        texts.extend(found)
    assert len(texts) >= 3
    tokens = {t for text in texts for t in pattern.findall(text)}
    from memo_analytics.services.prompts import record_prompt
    from memo_analytics.services.requests import RecordPromptRequest

    for text in texts:
        record = record_prompt(store, RecordPromptRequest(body=text[:900_000], session_id="tok", project="p"))
        assert not pattern.search(record["body"]) or all(t not in record["body"] for t in tokens if len(t) > 30)
    store.conn.execute("PRAGMA wal_checkpoint(FULL)")
    blobs = [p.read_bytes() for p in store.root.rglob("*") if p.is_file()]
    for token in tokens:
        if len(token) > 30:  # the real fake tokens; placeholders like github_pat_xxx are not secrets
            assert not any(token.encode() in blob for blob in blobs), token[:16]


def test_reimport_with_another_idle_gap_is_refused_instead_of_double_billing(tmp_path, store):
    path = tmp_path / "gap.jsonl"
    path.write_text(cc_line("2026-01-05T09:00:00Z", "user", "first") + cc_line("2026-01-05T09:20:00Z", "assistant")
                    + cc_line("2026-01-05T10:05:00Z", "user", "second") + cc_line("2026-01-05T10:15:00Z", "assistant"))
    first = run_import(store, [path], claude_code.parse, ImportOptions(idle_gap=timedelta(minutes=30)))
    assert (first.sessions, first.turns) == (2, 2)
    again = run_import(store, [path], claude_code.parse, ImportOptions(idle_gap=timedelta(minutes=60),
                                                                       idle_gap_given=True))
    assert (again.sessions, again.turns, again.skipped) == (0, 0, 1)
    assert again.errors[0].endswith("was imported with --idle-gap 30; import it with --idle-gap 30 (a transcript "
                                    "keeps the gap of its first import)")
    # the config's gap changed (not asked for on the command line): the transcript keeps its own
    kept = run_import(store, [path], claude_code.parse, ImportOptions(idle_gap=timedelta(minutes=60)))
    assert (kept.sessions, kept.turns, kept.skipped, kept.errors) == (0, 0, 0, [])
    minutes = store.conn.execute("SELECT sum(duration_minutes) FROM records WHERE kind = 'session'").fetchone()[0]
    assert minutes == 20 + 10


def test_one_conversation_in_two_files_keeps_every_prompt_and_bills_each_interval(tmp_path, store):
    folder = tmp_path / "dup"
    folder.mkdir()
    sid = "5e55a0a1-0000-4000-8000-0000000000aa"
    (folder / "a.jsonl").write_text(cc_line("2026-01-01T10:00:00Z", "user", "first day", sid)
                                    + cc_line("2026-01-01T10:05:00Z", "assistant", "ok", sid))
    (folder / "b.jsonl").write_text(cc_line("2026-01-02T10:00:00Z", "user", "second day", sid)
                                    + cc_line("2026-01-02T10:05:00Z", "assistant", "ok", sid))
    (folder / "copy-of-a.jsonl").write_text((folder / "a.jsonl").read_text())
    result = run_import(store, list(walk_files([folder], claude_code.SUFFIXES)), claude_code.parse, ImportOptions())
    assert (result.sessions, result.turns, result.skipped) == (2, 2, 0)
    rows = store.conn.execute("SELECT start_time, duration_minutes FROM records WHERE kind = 'session' ORDER BY 1").fetchall()
    assert [tuple(r) for r in rows] == [("2026-01-01T10:00:00.000Z", 5), ("2026-01-02T10:00:00.000Z", 5)]


def test_reimport_in_another_zone_is_refused_instead_of_stretching_sessions(tmp_path, store):
    from memo_analytics.services.importers import specstory

    path = tmp_path / ".specstory" / "history" / "old-chat.md"  # no UTC time in the name: the zone decides
    path.parent.mkdir(parents=True)
    path.write_text("<!-- Generated by SpecStory -->\n\n# Old chat (2025-04-26 16:30:55)\n\n_**User**_\n\nhello there\n\n"
                    "---\n\n_**Assistant**_\n\nhi\n\n---\n\n")
    first = run_import(store, [path], specstory.parse, ImportOptions(zone=ZoneInfo("UTC")))
    assert (first.sessions, first.turns) == (1, 1)
    before = store.conn.execute("SELECT start_time, end_time FROM records WHERE kind = 'session'").fetchall()
    again = run_import(store, [path], specstory.parse, ImportOptions(zone=ZoneInfo("America/Los_Angeles")))
    assert (again.sessions, again.turns, again.skipped) == (0, 0, 1)
    assert "re-import with the same --tz" in again.errors[0]
    assert store.conn.execute("SELECT start_time, end_time FROM records WHERE kind = 'session'").fetchall() == before


def test_a_bad_line_or_prompt_never_stops_the_run(tmp_path, store):
    folder = tmp_path / "bad"
    folder.mkdir()
    sid = "5e55a0a1-0000-4000-8000-0000000000bb"
    (folder / "deep.jsonl").write_text("[" * 50_000 + "]" * 50_000 + "\n" + cc_line("2026-01-01T10:00:00Z", "user", "kept", sid))
    (folder / "surrogate.jsonl").write_text(
        '{"type": "user", "sessionId": "5e55a0a1-0000-4000-8000-0000000000cc", "timestamp": "2026-01-01T11:00:00Z", '
        '"cwd": "/x/shop", "message": {"role": "user", "content": "broken \\udc00 text"}}\n')
    (folder / "huge.jsonl").write_text(cc_line("2026-01-01T12:00:00Z", "user", "x" * 1_100_000, "5e55a0a1-0000-4000-8000-0000000000dd")
                                       + cc_line("2026-01-01T12:01:00Z", "user", "small", "5e55a0a1-0000-4000-8000-0000000000dd"))
    result = run_import(store, list(walk_files([folder], claude_code.SUFFIXES)), claude_code.parse, ImportOptions())
    bodies = sorted(r[0] for r in store.conn.execute("SELECT body FROM records WHERE kind = 'prompt'"))
    assert bodies[:3] == ["broken \ufffd text", "kept", "small"] and len(bodies) == 4
    assert bodies[3].startswith("xxx") and bodies[3].endswith("a turn keeps at most 1,000,000]")  # kept cut
    assert result.skipped >= 1 and result.cut == 1  # the too-deep line; the oversized prompt cut
    open_sessions = store.conn.execute("SELECT count(*) FROM records WHERE kind = 'session' AND status != 'completed'")
    assert open_sessions.fetchone()[0] == 0


def test_messages_typed_while_the_agent_worked_are_turns_at_the_time_they_were_typed(realdata, tmp_path):
    path = realdata / CC / "moredip-session-share/samples/claude-code-projects/0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
    [transcript] = claude_code.parse(path, ImportOptions()).transcripts
    queued = {p.text: p.at for p in transcript.prompts if p.text in (
        "is the 3rd tool still running?", "??", "are they still being written?")}
    assert queued == {"is the 3rd tool still running?": at("2026-01-22T19:51:28.994Z"),
                      "??": at("2026-01-22T19:51:49.343Z"),
                      "are they still being written?": at("2026-01-22T21:17:32.736Z")}  # typed, not delivered
    assert [p.text for p in transcript.prompts].count("are they still being written?") == 1


def printed(history: str, lines: int | None = None) -> str:
    """A Bash call of the agent that printed ``history`` (whole, or its first ``lines``), as
    SpecStory CLI v2 renders tool use (the shape of every real v2 file in the shared data)."""
    output = history if lines is None else "\n".join(history.split("\n")[:lines])
    return ('<tool-use data-tool-type="shell" data-tool-name="Bash"><details>\n'
            "<summary>Tool use: **Bash**</summary>\n```bash\ncat .specstory/history/old.md\n```\n\n"
            f"```text\n{output}\n```\n</details></tool-use>\n")


def test_markers_in_tool_output_or_a_fence_of_the_person_are_not_turns(realdata, tmp_path):
    """Issue 14 point 6: an agent that printed an earlier history (a real v2 file with 7 turns
    in 11 User blocks, see CASES) adds no turn; a history pasted in a fence of the person's
    prompt is that one prompt."""
    old = (realdata / GSS / "2026-01-16_16-26-02Z.md").read_text(encoding="utf-8")
    users = [n for n, line in enumerate(old.split("\n")) if line.startswith("_**User")]
    assert len(users) == 11 and users[0] < 20
    pasted = "\n".join(old.split("\n")[:20])
    text = ("<!-- Claude Code Session 7a6c1d2e-0000-4000-8000-000000000001 (2026-03-01 10:00:00Z) -->\n\n"
            "_**User (2026-03-01 10:00:01Z)**_\n\nshow me the old history\n\n---\n\n"
            "_**Agent (claude-opus-4-6 2026-03-01 10:00:05Z)**_\n\n" + printed(old) + "\n---\n\n"
            "_**User (2026-03-01 10:01:00Z)**_\n\nwhy does this import twice?\n\n````markdown\n" + pasted
            + "\n````\n\n---\n\n_**Agent (claude-opus-4-6 2026-03-01 10:01:09Z)**_\n\nBecause.\n\n---\n\n"
            "_**User (2026-03-01 10:02:00Z)**_\n\nthanks\n")
    path = tmp_path / "proj" / ".specstory" / "history" / "2026-03-01_10-00-00Z.md"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    [transcript] = specstory.parse(path, ImportOptions()).transcripts
    assert [p.text.split("\n")[0] for p in transcript.prompts] == [
        "show me the old history", "why does this import twice?", "thanks"]
    assert transcript.prompts[1].text.endswith(pasted + "\n````")
    assert max(transcript.activity) == at("2026-03-01T10:02:00Z")  # no stamp of the printed history


def test_an_agent_printing_its_own_history_again_and_again_stores_each_prompt_once(realdata, tmp_path):
    """The issue's case (the first prompt stored 31 times): the session prints its own file 31
    times, each print cut off inside a tool block of the copy — so the bracket matching cannot
    hide it — and each prompt is still one turn."""
    whole = (realdata / GSS / "2026-01-16_16-26-02Z.md").read_text(encoding="utf-8").split("\n")
    users = [n for n, line in enumerate(whole) if line.startswith("_**User")]
    block = next(n for n, line in enumerate(whole) if n > users[2] and line.startswith("<tool-use"))
    cut = block + 2  # inside a tool block, after at least three User blocks
    assert not any(line.startswith("</details></tool-use>") for line in whole[block:cut])
    head = "\n".join(whole[:block - 1])
    prints = "".join("\n_**Agent (claude-opus-4-5-20251101 2026-01-16 16:30:00Z)**_\n\n"
                     + printed("\n".join(whole), cut) for _ in range(31))
    path = tmp_path / "proj" / ".specstory" / "history" / "2026-01-16_16-26-02Z.md"
    path.parent.mkdir(parents=True)
    path.write_text(head, encoding="utf-8")
    [own] = specstory.parse(path, ImportOptions()).transcripts
    expected = [(p.text, p.at) for p in own.prompts]
    assert len(expected) >= 2
    path.write_text(head + prints, encoding="utf-8")
    [transcript] = specstory.parse(path, ImportOptions()).transcripts
    assert [(p.text, p.at) for p in transcript.prompts] == expected


def test_a_bad_byte_is_replaced_and_its_line_read(realdata, tmp_path):
    source = realdata / CC / "moredip-session-share/samples/claude-code-projects/0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
    lines = source.read_bytes().split(b"\n")
    lines[5] = lines[5][:40] + b"\xff\xfe" + lines[5][40:]  # an assistant record, broken
    broken = tmp_path / "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
    broken.write_bytes(b"\n".join(lines))
    parsed = claude_code.parse(broken, ImportOptions())
    assert parsed.problems == ["line 6: byte 0xff at column 41 is not UTF-8 (replaced by U+FFFD; the line is read)"]
    assert len(parsed.transcripts[0].prompts) == 7


def test_token_use_is_kept_per_turn(realdata, tmp_path):
    """Issue 14 point 7: each turn's model and tokens (input, output, cache read, cache write by
    tier) go into its frontmatter and the index; Codex per-turn figures, not its running totals."""
    rollout = realdata / CX / "27/rollout-2025-11-27T11-39-23-019ac364-f0dc-7043-9750-594e12f5fd21.jsonl"
    prompts = codex.parse(rollout, ImportOptions()).transcripts[0].prompts
    last_total = [json.loads(x)["payload"]["info"]["total_token_usage"] for x in rollout.read_text().splitlines()
                  if '"token_count"' in x and json.loads(x)["payload"].get("info")][-1]
    assert sum(p.tokens["input"] + p.tokens["cacheRead"] for p in prompts) == last_total["input_tokens"]
    assert sum(p.tokens["output"] for p in prompts) == last_total["output_tokens"]
    assert prompts[0].tokens == {"input": 3391, "cacheRead": 9216, "output": 431, "reasoning": 0}
    assert prompts[1].tokens["input"] < last_total["input_tokens"]  # not the running total
    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    source = realdata / CC / "moredip-session-share/samples/claude-code-projects/0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
    run_import(store, [source], claude_code.parse, ImportOptions())
    rows = index.rows_of_kind(store.conn, "prompt")
    first = json.loads(next(r for r in rows if r["body"].startswith("Spaw sub-agents"))["meta"])
    assert first["model"] == "claude-opus-4-5-20251101"
    # the transcript's own calls (16, 4, 37,199, 1,691) and its three sub-agents' six (subagents/ beside it)
    assert first["tokens"] == {"input": 16 + 6, "output": 4 + 7, "cacheRead": 37199 + 3 * 10923 + 3 * 11306,
                               "cacheWrite": 1691 + 3 * 383 + 1240 + 1205 + 1269,
                               "cacheWrite5m": 1691 + 3 * 383 + 1240 + 1205 + 1269, "cacheWrite1h": 0}
    on_disk = read_record(next((tmp_path / "v").rglob(f"{next(r['id'] for r in rows if r['body'].startswith('Spaw'))}.md")))
    assert on_disk[0]["tokens"] == first["tokens"]


def test_a_sub_agents_responses_relayed_as_progress_count_for_the_turn_once(realdata, tmp_path):
    """moredip 4b2030ed: the Task sub-agent's first API response reaches the parent transcript as
    an ``agent_progress`` record (relayed in two records) and is in its own file
    (``subagents/agent-a2018e5.jsonl``, with its second call: 1 in, 7 out, 11,560 read, 1,115
    written); both are spent for the turn and count once — the totals of the session's files."""
    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    source = realdata / CC / "moredip-session-share/samples/claude-code-projects/4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl"
    run_import(store, [source], claude_code.parse, ImportOptions())
    rows = index.rows_of_kind(store.conn, "prompt")
    store.close()
    totals = {key: sum(json.loads(r["meta"]).get("tokens", {}).get(key, 0) for r in rows)
              for key in ("input", "output", "cacheRead", "cacheWrite")}
    assert totals == {"input": 21 + 1, "output": 5 + 7, "cacheRead": 32772 + 11560, "cacheWrite": 18242 + 1115}


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles", "Asia/Tokyo"])
def test_old_specstory_local_times_are_reconciled_with_the_utc_of_the_file_name(realdata, zone):
    """The title says 16:30:55 (the author's local time), the file name 20-30 (UTC): UTC−04:00,
    whatever zone the import is told."""
    assert span(specstory, realdata / case("2025-04-26_20-30"), ZoneInfo(zone)) == (at("2025-04-26T20:30:55Z"),) * 2


def test_a_title_and_file_name_that_are_no_zone_apart_are_read_in_the_import_zone_and_said(tmp_path):
    path = tmp_path / ".specstory" / "history" / "2025-04-26_20-30-odd.md"
    path.parent.mkdir(parents=True)
    path.write_text("# Odd chat (2025-04-26 16:12:00)\n\n_**User**_\n\nhello\n\n---\n\n")
    parsed = specstory.parse(path, ImportOptions(zone=UTC))
    assert parsed.transcripts[0].activity == [at("2025-04-26T16:12:00Z")]
    assert parsed.problems == ["the title's local time 2025-04-26 16:12:00 and the file name's UTC time "
                               "2025-04-26 20:30 are no zone apart; its times are read in the import's zone"]


def test_an_imported_session_keeps_the_git_branch_and_commit_its_transcript_names(realdata, tmp_path):
    """Found by a new user: Claude Code lines carry ``gitBranch`` and a Codex rollout's
    ``session_meta`` its ``git`` (branch, commit), yet imported sessions and turns had
    ``branch: null`` (hand-offs address a branch). The repository URL, which may hold a token, is
    never read."""
    store = VaultStore(Settings(vault_root=tmp_path / "v", timezone="UTC"))
    try:
        folder = realdata / "claude-code-jsonl/DRMacIver-claude-reliability/snapshot-tests/tests/python-to-rust-port"
        run_import(store, list(walk_files([folder], claude_code.SUFFIXES)), claude_code.parse, ImportOptions(),
                   source=claude_code.SOURCE)
        folder = realdata / "codex-rollouts/7567491-Feishu_ClaudeCode/.codex/sessions/2025/11/27"
        run_import(store, list(walk_files([folder], codex.SUFFIXES)), codex.parse, ImportOptions(), source=codex.SOURCE)
    finally:
        store.close()
    sessions = [read_record(p)[0] for p in (tmp_path / "v" / "projects").glob("*/sessions/*.md")]
    by_source = {(s["source"], s["branch"], s["gitSha"]) for s in sessions}
    assert ("import:claude-code", "master", None) in by_source
    assert ("import:codex", "main", "f2b031bed8d177051858ed33b8181e901b4d38c9") in by_source
    turns = [read_record(p)[0] for p in (tmp_path / "v" / "projects").glob("*/prompts/*.md")]
    assert turns and all(t["branch"] in ("master", "main") for t in turns)
    assert "github_pat" not in "".join(p.read_text() for p in (tmp_path / "v").rglob("*.md"))


def test_another_agents_lines_in_a_claude_code_file_are_named_not_dropped_silently(realdata, tmp_path):
    """Found by a tester of bad files: a Codex rollout appended to a Claude Code transcript
    imported as Claude Code with "skipped 0" — the Codex prompts gone without a word (the Codex
    importer names every line it cannot read). Each such line is named."""
    claude = realdata / CC / "moredip-session-share/samples/claude-code-projects/0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
    [rollout] = sorted((realdata / "codex-rollouts").rglob("rollout-2025-11-27T11-39-23-*.jsonl"))
    mixed = tmp_path / "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
    codex_lines = [line for line in rollout.read_text(encoding="utf-8").splitlines() if line.strip()]
    mixed.write_text(claude.read_text(encoding="utf-8") + "\n".join(codex_lines) + "\n", encoding="utf-8")
    parsed = claude_code.parse(mixed, ImportOptions())
    alone = claude_code.parse(claude, ImportOptions())
    assert len(parsed.transcripts[0].prompts) == len(alone.transcripts[0].prompts)
    assert parsed.skipped_lines == alone.skipped_lines + len(codex_lines)
    assert any("not a Claude Code record (a 'session_meta' line naming no session, message or uuid)" in p
               for p in parsed.problems)


def test_specstory_exports_in_a_subfolder_of_a_repository_are_the_repositorys_project(realdata, tmp_path):
    """Found by a freelancer: the SpecStory exports of ``app/specstory-cli/.specstory`` (``app`` a
    git repository) were filed under project ``specstory-cli``, billed internal — the README
    says a subfolder of a repository is the repository's project, and ``memo prompt list`` there
    named ``app``. They are ``app``'s; outside a repository, the folder's name as before."""
    import shutil
    import subprocess

    from tests.inprocess import memo

    app = tmp_path / "code" / "app"
    shutil.copytree(realdata / SS / "specstoryai-getspecstory", app)
    subprocess.run(["git", "init", "-q", str(app)], check=True)
    vault = tmp_path / "v"
    memo("import", "specstory", str(app / "specstory-cli" / ".specstory"), vault=vault)
    assert sorted(p.name for p in (vault / "projects").iterdir()) == ["app"]
    plain = tmp_path / "plain"
    shutil.copytree(realdata / SS / "specstoryai-getspecstory" / "specstory-cli", plain / "specstory-cli")
    memo("import", "specstory", str(plain / "specstory-cli" / ".specstory"), vault=tmp_path / "w")
    assert sorted(p.name for p in (tmp_path / "w" / "projects").iterdir()) == ["specstory-cli"]
