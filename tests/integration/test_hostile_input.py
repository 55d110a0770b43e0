"""Hostile input through the ``memo`` console-script entry point (in-process,
:func:`tests.inprocess.memo`): refused in one line, nothing lost or leaked."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from tests.inprocess import Ran, memo

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def vault_bytes(vault: Path) -> bytes:
    """Every byte of the vault: record files and the index (WAL included)."""
    return b"".join(p.read_bytes() for p in sorted(vault.rglob("*")) if p.is_file())


def one_line_error(proc: Ran, starts: str) -> None:
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(starts), proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args, starts",
    [
        ([], None),
        (["nosuch"], "error: No such command 'nosuch'"),
        (["prompt", "record"], "error: Invalid body: give exactly one of --body and --body-file"),
        (["prompt", "record", "--body"], "error: Option '--body' requires an argument"),
        (["--bogus"], "error: No such option: --bogus"),
        (["prompt", "record", "--body", "x", "--turn", "abc"], "error: Invalid value for '--turn'"),
        (["prompt", "list", "--limit", "abc"], "error: Invalid value for '--limit'"),
        (["import", "codex", "/nonexistent", "--idle-gap", "0"], "error: Invalid value for '--idle-gap'"),
    ],
)
def test_usage_errors_are_one_line_without_traceback(tmp_path, args, starts):
    proc = memo(*args, vault=tmp_path / "v" if args else None, check=False)
    if starts is None:  # no arguments: the help, exit 0
        assert proc.returncode == 0 and "Usage: memo" in proc.stdout
    else:
        one_line_error(proc, starts)


def test_an_explicit_turn_never_overwrites_a_recorded_turn(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "first", "--session-id", "u", "--project", "p", vault=vault)
    proc = memo("prompt", "record", "--body", "OVERWRITE", "--session-id", "u", "--turn", "1", "--project", "p",
                vault=vault, check=False)
    one_line_error(proc, "error: Invalid turn: turn 1 of session u is already recorded")
    assert "first" in (vault / "projects/p/prompts/prompt-u-t1.md").read_text()


@pytest.mark.parametrize("turn", ["99999999999999999999999", "9223372036854775807", "1000001"])
def test_a_huge_turn_is_refused_and_nothing_is_written(tmp_path, turn):
    vault = tmp_path / "v"
    proc = memo("prompt", "record", "--body", "a", "--session-id", "t", "--turn", turn, "--project", "p",
                vault=vault, check=False)
    one_line_error(proc, "error: Invalid")
    assert not (vault / "projects").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["prompt", "record", "--body", "x" * 25_000 + f" password = \"Hunter2SuperSecretPw\" {TOKEN}"],
        ["prompt", "record", "--body", "ok", "--model", TOKEN, "--agent", f"token={TOKEN}", "--ide", TOKEN,
         "--tag", TOKEN],
        ["session", "start", "s1", "--summary", f"key {TOKEN}", "--client", TOKEN, "--branch", TOKEN],
    ],
)
def test_secrets_in_any_field_reach_neither_file_nor_index(tmp_path, args):
    vault = tmp_path / "v"
    memo(*args, "--project", "p", vault=vault)
    data = vault_bytes(vault)
    assert TOKEN.encode() not in data and b"Hunter2SuperSecretPw" not in data


def test_secrets_in_deliverables_are_redacted_in_every_value(tmp_path):
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "p", vault=vault)
    # (a key of its own, nested, is refused now — without echoing its value)
    nested = f'[{{"type":"commit","sha":"{TOKEN}","note":{{"deep":"password=Sup3rS3cretPw!"}}}}]'
    refused = memo("session", "end", "s1", "--deliverables", nested, vault=vault, check=False)
    assert refused.returncode == 1 and "Sup3rS3cretPw" not in refused.stderr and TOKEN not in refused.stderr
    deliverables = f'[{{"type":"commit","sha":"{TOKEN}","title":"password=Sup3rS3cretPw!"}}]'
    memo("session", "end", "s1", "--deliverables", deliverables, "--pr", f"https://u:Pa55word9@host/{TOKEN}",
         vault=vault)
    data = vault_bytes(vault)
    for secret in (TOKEN, "Sup3rS3cretPw", "Pa55word9"):
        assert secret.encode() not in data


@pytest.mark.parametrize("option", ["--session-id", "--task-slug", "--project"])
def test_a_token_shaped_id_is_refused(tmp_path, option):
    proc = memo("prompt", "record", "--body", "x", option, TOKEN, vault=tmp_path / "v", check=False)
    one_line_error(proc, "error: Invalid")
    assert "looks like a secret" in proc.stderr and TOKEN not in proc.stderr


def test_error_messages_never_echo_a_secret(tmp_path):
    memo("prompt", "record", "--body", "x", "--project", "p", vault=tmp_path / "v")
    proc = memo("prompt", "list", "--since", TOKEN, vault=tmp_path / "v", check=False)
    one_line_error(proc, "error: Invalid since date")
    assert TOKEN not in proc.stderr


def test_a_secret_pasted_into_a_file_by_hand_stays_out_of_the_index(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "clean", "--session-id", "r", "--project", "p", vault=vault)
    path = vault / "projects/p/prompts/prompt-r-t1.md"
    path.write_text(path.read_text().replace("clean", f"clean {TOKEN}"))
    memo("reindex", vault=vault)
    conn = sqlite3.connect(vault / ".memo/index.sqlite")
    assert conn.execute("SELECT count(*) FROM records WHERE instr(body, ?)", (TOKEN,)).fetchone()[0] == 0
    assert TOKEN in path.read_text()  # the file is the person's: left as they wrote it


@pytest.mark.parametrize("body", ["array[/] slice", "def f(x: list[int]) -> dict[str]: see [bold]", ":smile: [link=https://evil.example]x[/link]"])
def test_stored_text_prints_literally_in_human_output(tmp_path, body):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", body, "--project", "p", "--session-id", "s", vault=vault)
    memo("session", "start", "s2", "--project", "p", "--summary", body, vault=vault)
    listed = memo("prompt", "list", "--project", "p", vault=vault)
    got = memo("prompt", "get", "prompt-s-t1", vault=vault)
    memo("activity", "--all", vault=vault)
    assert body in got.stdout
    assert body[:10] in listed.stdout


def test_timestamps_outside_1970_to_9000_are_refused(tmp_path):
    proc = memo("session", "start", "old", "--project", "p", "--start-time", "0001-01-01T00:00:00Z",
                vault=tmp_path / "v", check=False)
    one_line_error(proc, "error: Invalid startTime date")


def test_a_start_in_the_future_is_refused(tmp_path):
    proc = memo("session", "start", "f", "--project", "p", "--start-time", "2099-01-01T00:00:00Z",
                vault=tmp_path / "v", check=False)
    one_line_error(proc, "error: Invalid startTime:")


@pytest.mark.parametrize("args, shown, said", [
    (["prompt", "list", "--all", "--until", "9999-12-31"], "1 prompt (showing 1–1)", ""),
    (["activity", "--all", "--until", "9999-12-31"], "Total billable: 0:00 (0.00 h) · prompts: 1",
     "note: no session in this period and scope\n"),  # a prompt outside any session
    (["prompt", "list", "--all", "--offset", str(2**53)], "No prompts on this page: 1 match", ""),
])
def test_extreme_bounds_do_not_crash(tmp_path, args, shown, said):
    """A date at the end of the calendar and the largest offset are bounds like any other: the
    command answers (exit 0, no warning) with what they select (an offset beyond 2^53 is refused:
    test_an_offset_past_the_last_prompt_says_so_and_one_past_2_53_is_refused)."""
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "x", "--project", "p", vault=vault)
    proc = memo(*args, vault=vault, check=False)
    assert (proc.returncode, proc.stderr) == (0, said), proc.stderr
    assert shown in proc.stdout


def test_invalid_utf8_in_any_argument_is_refused(tmp_path):
    vault = tmp_path / "v"
    # what the interpreter puts in sys.argv for the bytes b"bad\xffmodel" (surrogate escapes)
    model = os.fsdecode(b"bad\xffmodel")
    assert model == "bad\udcffmodel"
    proc = memo("prompt", "record", "--body", "ok", "--project", "p", "--model", model, vault=vault, check=False)
    one_line_error(proc, "error: Invalid model: is not valid UTF-8")
    assert not (vault / "projects").exists()


@pytest.mark.parametrize("name", ["nl\n", "proj\n"])
def test_a_trailing_newline_is_not_a_safe_slug(tmp_path, name):
    proc = memo("session", "start", name, "--project", "p", vault=tmp_path / "v", check=False)
    one_line_error(proc, "error: Invalid sessionId")


def test_a_long_session_id_is_refused_up_front(tmp_path):
    proc = memo("session", "start", "s" * 161, "--project", "p", vault=tmp_path / "v", check=False)
    one_line_error(proc, "error: Invalid sessionId: longer than 160 characters")


def test_a_vault_inside_a_repository_or_an_empty_path_is_refused(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    proc = memo("prompt", "record", "--body", "x", vault=repo / "inner-vault", check=False)
    one_line_error(proc, "error: Invalid vaultRoot:")
    assert "is inside the git repository" in proc.stderr
    proc = memo("--vault-root", "", "prompt", "record", "--body", "x", cwd=repo, check=False)
    one_line_error(proc, "error: Invalid vaultRoot")
    assert sorted(p.name for p in repo.iterdir()) == [".git"]


def test_reads_never_create_a_vault_at_a_mistyped_path(tmp_path):
    """And (found by a tester of bad files) a report of a mistyped vault is refused: it printed an
    empty activity, "Nothing needs you now" and wrote an empty timesheet, exit 0."""
    refused = (f"error: No vault at {tmp_path / 'typo'}: nothing is recorded or imported there (check --vault-root "
               "and MEMO_VAULT; an agent's hooks or `memo import auto` fill one)")
    for args in (["prompt", "list", "--all"], ["activity", "--all"], ["digest"],
                 ["report", "timesheet", "--all", "-o", str(tmp_path / "t.csv")]):
        one_line_error(memo(*args, vault=tmp_path / "typo", check=False), refused)
    assert json.loads(memo("--json", "activity", "--all", vault=tmp_path / "typo", check=False).stderr)["error"] \
        == refused.removeprefix("error: ")
    assert not (tmp_path / "t.csv").exists()
    one_line_error(memo("prompt", "get", "x", vault=tmp_path / "typo", check=False), "error: Record not found: x")
    assert not (tmp_path / "typo").exists()


def test_a_vault_at_the_root_of_a_product_repository_is_refused(tmp_path):
    repo = tmp_path / "product"
    (repo / ".git").mkdir(parents=True)
    (repo / "main.py").write_text("print()")
    one_line_error(memo("prompt", "record", "--body", "x", vault=repo, check=False), "error: Invalid vaultRoot:")
    assert sorted(p.name for p in repo.iterdir()) == [".git", "main.py"]
    vault_git = tmp_path / "vault-git"
    (vault_git / ".git").mkdir(parents=True)
    memo("prompt", "record", "--body", "x", "--project", "p", vault=vault_git)  # an empty repository may become a vault


def test_a_cwd_that_does_not_exist_is_refused(tmp_path):
    from memo_analytics.config import Settings
    from memo_analytics.domain.errors import InvalidFieldError
    from memo_analytics.services.prompts import record_prompt
    from memo_analytics.services.requests import RecordPromptRequest
    from memo_analytics.services.store import VaultStore

    store = VaultStore(Settings(vault_root=tmp_path / "v"))
    with pytest.raises(InvalidFieldError, match="^Invalid cwd: /nonexistent/dir is not an existing folder"):
        record_prompt(store, RecordPromptRequest(body="x", cwd="/nonexistent/dir"))


@pytest.mark.parametrize("kind", ["fifo", "symlink", "device"])
def test_timesheet_output_never_destroys_special_files(tmp_path, kind):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "x", "--project", "p", vault=vault)
    target = tmp_path / "target.pdf"
    path = tmp_path / "out.pdf"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        target.write_text("old")
        path.symlink_to(target)
    else:
        if os.geteuid() != 0:
            pytest.fail("device nodes need root; the CI runs as root")
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 7))
    proc = memo("report", "timesheet", "--all", "--force", "-o", str(path), vault=vault, check=False)
    if kind == "symlink":  # never followed, even with --force: the link and its target stay as they were
        one_line_error(proc, "error: Invalid output:")
        assert "is a symbolic link" in proc.stderr and path.is_symlink() and target.read_text() == "old"
    else:
        one_line_error(proc, "error: Invalid output:")
        mode = path.lstat().st_mode
        assert stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISCHR(mode)


def test_a_missing_template_folder_is_refused(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "x", "--project", "p", vault=vault)
    proc = memo("report", "timesheet", "--all", "-o", str(tmp_path / "t.pdf"), "--templates", str(tmp_path / "none"),
                vault=vault, check=False)
    one_line_error(proc, "error: Invalid templates:")


def test_body_file_and_stdin_carry_long_prompts(tmp_path):
    vault = tmp_path / "v"
    text = "long prompt " * 20_000  # 240 KB: more than one command-line argument may hold
    (tmp_path / "body.txt").write_text(text)
    memo("prompt", "record", "--body-file", str(tmp_path / "body.txt"), "--session-id", "b", "--project", "p",
         vault=vault)
    proc = memo("prompt", "record", "--body-file", "-", "--session-id", "b", "--project", "p", vault=vault,
                input="from stdin", check=False)
    assert proc.returncode == 0, proc.stderr
    assert (vault / "projects/p/prompts/prompt-b-t1.md").read_text().rstrip().endswith(text.strip())
    assert "from stdin" in (vault / "projects/p/prompts/prompt-b-t2.md").read_text()


def test_reindex_skips_every_kind_of_bad_file_and_indexes_the_rest(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "good", "--session-id", "g", "--project", "p", vault=vault)
    prompts = vault / "projects/p/prompts"
    head = "---\nid: {id}\nkind: prompt\nproject: p\ncreated: '{created}'\nupdated: '2026-01-05T09:00:00.000Z'\n{extra}---\nbody\n"
    bad = {
        "b1": head.format(id="b1", created="2026-13-45", extra=""),
        "b2": "---\nid: b2\nproject: p\ncreated: '2026-01-05T09:00:00Z'\n---\nno kind\n",
        "b3": "---\nid: &a [*a]\n---\nx\n",
        "b4": head.format(id="b4", created="2026-01-05T09:00:00Z", extra="turn: 99999999999999999999\nsessionId: s\n"),
        "b5": head.format(id="other-id", created="2026-01-05T09:00:00Z", extra=""),
        "b6": head.format(id="b6", created="2026-01-05T09:00:00Z", extra="billable: maybe\n"),
    }
    for name, text in bad.items():
        (prompts / f"{name}.md").write_text(text)
    (prompts / "dir.md").mkdir()
    before = {name: (prompts / f"{name}.md").read_bytes() for name in bad}
    proc = memo("--json", "reindex", vault=vault)
    import json

    result = json.loads(proc.stdout)
    assert result["indexed"] == 1
    assert sorted(Path(s["path"]).name for s in result["skipped"]) == sorted([*(f"{n}.md" for n in bad), "dir.md"])
    assert {name: (prompts / f"{name}.md").read_bytes() for name in bad} == before


def test_reindex_rebuilds_a_damaged_index_and_other_commands_say_so(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "good", "--session-id", "g", "--project", "p", vault=vault)
    index = vault / ".memo/index.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(str(index) + suffix).unlink(missing_ok=True)
    index.write_bytes(b"junk" * 100)
    proc = memo("prompt", "list", "--all", vault=vault, check=False)
    one_line_error(proc, "error: The index")
    assert "run `memo reindex`" in proc.stderr
    memo("reindex", vault=vault)
    assert '"total": 1' in memo("--json", "prompt", "list", "--all", vault=vault).stdout
    assert list((vault / ".memo").glob("index.sqlite.damaged-*"))


def test_reindex_removes_temp_files_a_killed_writer_left(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "good", "--session-id", "g", "--project", "p", vault=vault)
    torn = vault / "projects/p/prompts/.prompt-g-t2.md.abcd1234.tmp"
    torn.write_bytes(b"---\nid: prompt-g-t2\nki")
    import json

    # found by a reliability tester: a compiled view's, left by a kill of `memo project client`, stayed for good
    view = vault / "projects/p/.PROMPTS.md.1e02e5b1.tmp"
    view.write_bytes(b"")
    notes = vault / "projects/p/.NOTES.md.1e02e5b1.tmp"  # no view of memo's: not its file to remove
    notes.write_bytes(b"")
    result = json.loads(memo("--json", "reindex", vault=vault).stdout)
    assert result["removedTempFiles"] == 2 and not torn.exists() and not view.exists() and result["indexed"] == 1
    assert notes.exists()


def test_files_are_created_with_the_umask_not_0600(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "x", "--session-id", "m", "--project", "p", vault=vault)
    mode = stat.S_IMODE((vault / "projects/p/prompts/prompt-m-t1.md").stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask


def test_a_body_of_invisible_characters_is_empty(tmp_path):
    proc = memo("prompt", "record", "--body", "\u200b\ufeff \u200b", "--project", "p", vault=tmp_path / "v", check=False)
    one_line_error(proc, "error: Invalid body: must not be empty")


def test_a_report_is_never_written_into_the_vault(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "keep me", "--session-id", "s1", "--project", "p", vault=vault)
    record = vault / "projects/p/prompts/prompt-s1-t1.md"
    before = record.read_bytes()
    for target in (record, vault / ".memo/index.sqlite", vault / "new.pdf"):
        proc = memo("report", "timesheet", "--all", "-o", str(target), vault=vault, check=False)
        one_line_error(proc, "error: Invalid output:")
        assert "is inside the vault" in proc.stderr
    assert record.read_bytes() == before and not (vault / "new.pdf").exists()


@pytest.mark.parametrize("args, field", [
    (["session", "end", "f", "--until", "2099-03-01T10:00:00Z"], "until"),
    (["prompt", "record", "--body", "x", "--created", "2100-01-01"], "created"),
])
def test_instants_in_the_future_are_refused(tmp_path, args, field):
    vault = tmp_path / "v"
    memo("session", "start", "f", "--project", "p", vault=vault)
    proc = memo(*args, "--project", "p", vault=vault, check=False)
    one_line_error(proc, f"error: Invalid {field}:")
    assert "is in the future" in proc.stderr


def test_secrets_pasted_into_frontmatter_stay_out_of_the_index_and_reports(tmp_path):
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "p", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    memo("session", "end", "s1", "--until", "2026-03-02T10:00:00Z", vault=vault)
    path = vault / "projects/p/sessions/session-s1.md"
    text = path.read_text().replace("client: null", f"client: {TOKEN}").replace("summary: null", f"summary: key {TOKEN}")
    path.write_text(text)
    memo("reindex", vault=vault)
    assert TOKEN.encode() not in (vault / ".memo/index.sqlite").read_bytes()
    report = memo("--json", "activity", "--all", vault=vault).stdout
    assert TOKEN not in report and "[REDACTED:github-token]" in report


def test_an_index_damaged_inside_gives_one_line(tmp_path):
    vault = tmp_path / "v"
    for n in range(30):
        memo("prompt", "record", "--body", f"text {n} " * 200, "--session-id", "s", "--project", "p", vault=vault)
    memo("reindex", vault=vault)  # checkpoints the WAL into the main file
    index = vault / ".memo/index.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(str(index) + suffix).unlink(missing_ok=True)
    data = bytearray(index.read_bytes())
    data[8192:] = b"\x00" * (len(data) - 8192)
    index.write_bytes(bytes(data))
    proc = memo("prompt", "search", "text", "--all", vault=vault, check=False)
    one_line_error(proc, "error: The index")


def test_symlink_loop_output_and_unknown_home_are_one_line(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "x", "--project", "p", vault=vault)
    loop = tmp_path / "loop1"
    loop.symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(loop)
    one_line_error(memo("report", "timesheet", "--all", "-o", str(loop), vault=vault, check=False), "error: Invalid output:")
    one_line_error(memo("--vault-root", "~nosuchuser-xyz/v", "prompt", "list", check=False), "error: Invalid vaultRoot:")


@pytest.mark.parametrize("url", ["javascript:alert(1)", "not a url", ""])
def test_pr_must_be_a_web_address(tmp_path, url):
    vault = tmp_path / "v"
    memo("session", "start", "s", "--project", "p", vault=vault)
    one_line_error(memo("session", "end", "s", "--pr", url, vault=vault, check=False), "error: Invalid pr:")


def test_junk_settings_from_the_environment_are_one_line(tmp_path):
    proc = memo("prompt", "list", "--all", vault=tmp_path / "v", env={"MEMO_IDLE_GAP_MINUTES": "abc"}, check=False)
    one_line_error(proc, "error: Invalid idleGapMinutes (MEMO_IDLE_GAP_MINUTES):")


def test_byte_order_marks_are_not_content(tmp_path):
    vault = tmp_path / "v"
    (tmp_path / "body.txt").write_bytes("\ufeffhello bom".encode("utf-8"))
    memo("prompt", "record", "--body-file", str(tmp_path / "body.txt"), "--session-id", "b", "--project", "p", vault=vault)
    path = vault / "projects/p/prompts/prompt-b-t1.md"
    assert "\ufeff" not in path.read_text()
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # an editor added a BOM
    import json

    assert json.loads(memo("--json", "reindex", vault=vault).stdout)["skipped"] == []


def test_terminal_control_sequences_are_stripped_not_run(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body", "\x1b]0;pwned\x07\x1b[2J\x1b[31mRED", "--session-id", "e", "--project", "p",
         vault=vault)
    for args in (["prompt", "get", "prompt-e-t1"], ["prompt", "list", "--all"]):
        out = memo(*args, vault=vault).stdout
        assert "\x1b" not in out and "\x07" not in out and "RED" in out and "pwned" not in out and "[2J" not in out


@pytest.mark.parametrize("option, field", [("--model", "model"), ("--branch", "branch"), ("--agent", "agent"),
                                           ("--ide", "ide")])
def test_a_one_line_name_with_a_line_break_or_an_override_is_refused(tmp_path, option, field):
    """``model``, ``branch``, ``agent`` and ``ide`` are printed in table cells and report headings:
    a line break or a direction override in one is refused by name, nothing written."""
    from tests.inprocess import memo as run

    for value, code in (("gpt\nx", "000A"), ("main\u202e", "202E")):
        ran = run("session", "start", "s1", "--project", "p", option, value, vault=tmp_path / "v", check=False)
        assert (ran.returncode, ran.stderr.strip()) == (
            1, f"error: Invalid {field}: holds the control character U+{code}; a {field} is one line of text")
    assert not (tmp_path / "v" / "projects").exists()


def test_a_crafted_specstory_title_is_read_in_linear_time(tmp_path):
    """Found by an attacker: the title pattern backtracked in the cube of the line's length (a
    4 KB title took 47 s, so a 20 KB one would hold an import or `memo watch` for hours). A real
    process with a deadline: the hang is what is tested."""
    import subprocess
    import sys

    history = tmp_path / "d" / ".specstory" / "history"
    history.mkdir(parents=True)
    (history / "x.md").write_text("<!-- Generated by SpecStory -->\n\n# Fix" + " " * 20_000 + "(2025-04-29 13:36\n\n"
                                  "_**User (2025-04-29 13:40Z)**_\n\nhi\n\n---\n\n"
                                  "_**Assistant (2025-04-29 13:41Z)**_\n\nok\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "memo_analytics", "--vault-root", str(tmp_path / "vault"), "--json",
                           "import", "specstory", str(history.parent)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "MEMO_CONFIG": str(tmp_path / "none.toml")})
    assert done.returncode == 0, done.stderr
    [turn] = (tmp_path / "vault" / "projects").glob("*/prompts/*.md")
    assert turn.read_text(encoding="utf-8").rstrip().endswith("hi")


@pytest.mark.parametrize("body", ["_secret_" * 25_000, "-".join(["_secret_"] * 25_000), "a." * 100_000 + "secret"])
def test_a_crafted_turn_is_redacted_in_linear_time(tmp_path, body):
    """Found by an attacker: the secret-assignment pattern and the detector's keyword plugin
    backtracked in the square of a long run of name characters (200 KB of ``_secret_``: 82 s of
    CPU for one turn, and a 1 MB body — within the limit — about 7 minutes of a hook agents run
    synchronously). A real process with a deadline: the hang is what is tested."""
    import subprocess
    import sys

    source = tmp_path / "body.txt"
    source.write_text(body, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "memo_analytics", "--vault-root", str(tmp_path / "vault"), "prompt",
                           "record", "--project", "p", "--body-file", str(source)], capture_output=True, text=True,
                          timeout=40, env={**os.environ, "MEMO_CONFIG": str(tmp_path / "none.toml")})
    assert done.returncode == 0, done.stderr
    [turn] = (tmp_path / "vault" / "projects" / "p" / "prompts").glob("*.md")
    assert turn.read_text(encoding="utf-8").rstrip().endswith(body[-50:])  # nothing in it is a secret


@pytest.mark.parametrize("field, value", [
    ("url", "https://x.example/pull/1\u001b[2J\u001b]0;pwned\u0007"),
    ("url", "https://x.example/pull/1\u202e<!channel>"),
    ("title", "Fix the cart\u2066 reversed"),
    ("sha", "abc1234\nforged"),
])
def test_a_deliverable_with_a_control_or_direction_character_is_refused(tmp_path, field, value):
    """Found by an attacker: a pull request's URL with an escape clearing the screen, an OSC
    setting the window title or a U+202E was stored, then printed raw by ``memo session export``
    and sent in the webhook's text (the digest table alone cleaned it)."""
    vault = tmp_path / "v"
    memo("session", "start", "pr-1", "--project", "shop", vault=vault)
    item = {"type": "pr", "url": "https://x.example/pull/1", "sha": "abc1234", field: value}
    ran = memo("session", "end", "pr-1", "--project", "shop", "--deliverables", json.dumps([item]), vault=vault,
               check=False)
    assert ran.returncode == 1 and ran.stderr.startswith(f"error: Invalid deliverables[0].{field}: holds a control "
                                                         "or direction character"), ran.stderr
    shown = json.loads(memo("--json", "session", "show", "pr-1", "--project", "shop", vault=vault).stdout)
    assert shown["session"]["status"] == "active"  # nothing written
    # a commit's whole message as its title (an agent's habit) is taken as one line
    item = {"type": "commit", "sha": "abc1234", "title": "Fix the cart\n\nThe total was\trounded twice."}
    memo("session", "end", "pr-1", "--project", "shop", "--deliverables", json.dumps([item]), vault=vault)
    shown = json.loads(memo("--json", "session", "show", "pr-1", "--project", "shop", vault=vault).stdout)
    assert shown["session"]["deliverables"][0]["title"] == "Fix the cart The total was rounded twice."


def test_a_synced_session_with_a_hidden_character_in_a_deliverable_is_refused():
    from datetime import datetime, timezone

    from memo_analytics.domain.errors import InvalidFieldError
    from memo_analytics.services.record_rules import check_record

    meta = {"id": "session-s1", "kind": "session", "project": "web", "sessionId": "s1", "status": "active",
            "created": "2026-03-10T09:00:00.000Z", "updated": "2026-03-10T09:00:00.000Z",
            "startTime": "2026-03-10T09:00:00.000Z",
            "deliverables": [{"type": "pr", "url": "https://x.example/pull/1", "title": "ok\u202eevil"}]}
    with pytest.raises(InvalidFieldError, match=r"deliverables\[1\]\.title"):
        check_record(meta, "", datetime.now(timezone.utc))


def test_a_pull_request_item_without_its_url_is_named_by_its_place(tmp_path):
    """Found by an attacker: ``--deliverables '[{"type": "pr", "title": "t"}]'`` said "Invalid pr:
    None is not an http(s) URL" — no --pr was given."""
    vault = tmp_path / "v"
    memo("session", "start", "s", "--project", "p", vault=vault)
    ran = memo("session", "end", "s", "--project", "p", "--deliverables", '[{"type": "pr", "title": "t"}]',
               vault=vault, check=False)
    one_line_error(ran, "error: Invalid deliverables[0].url: a pull request needs its url, an http(s) URL")


def test_a_transcript_that_is_a_pipe_when_opened_is_refused_without_waiting(tmp_path):
    """Found by an attacker: a transcript swapped for a named pipe between the walk (which checks
    a file's type) and the read held ``memo import`` for good, waiting for a writer. The type is
    read from the open handle, opened without waiting."""
    import threading

    from memo_analytics.services.importers.lines import read_transcript

    pipe = tmp_path / "session.jsonl"
    os.mkfifo(pipe)
    outcome: list[BaseException | bytes] = []
    reader = threading.Thread(target=lambda: outcome.append(_raised(read_transcript, pipe)), daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # it waits for a writer: give it one, so the test ends
        with open(pipe, "wb"):
            pass
        reader.join(10)
        pytest.fail("reading a named pipe waited for a writer")
    [error] = outcome
    assert isinstance(error, OSError) and "not a regular file" in str(error)


def _raised(function, *args):
    try:
        return function(*args)
    except BaseException as exc:  # noqa: BLE001 - the test inspects it
        return exc


def test_a_transcript_turn_over_the_size_limit_is_kept_cut_with_its_session(tmp_path):
    """Found by an attacker: a Claude Code transcript whose one prompt was 50 MB was written as a
    session of 0 turns and 0 minutes; then (a tester of bad files) such a session was not recorded
    at all — a pasted log or an image's data lost the session and its minutes, exit 0, and the
    next import said nothing. The turn is kept cut to the limit, saying so; the import says how
    many were cut."""
    import json as _json

    from memo_analytics.vault.io import read_record
    from tests.inprocess import memo as run

    folder = tmp_path / "cc"
    folder.mkdir()

    def line(sid: str, text: str, at: str) -> str:
        return _json.dumps({"type": "user", "sessionId": sid, "timestamp": at, "uuid": f"{sid}-{at}",
                            "message": {"role": "user", "content": text}}) + "\n"

    big = "11111111-2222-4333-8444-555555555555"
    (folder / f"{big}.jsonl").write_text(line(big, "é" * 550_000, "2026-11-30T09:00:00.000Z"), encoding="utf-8")
    fine = "66666666-7777-4888-8999-000000000000"
    (folder / f"{fine}.jsonl").write_text(line(fine, "a prompt", "2026-11-30T10:00:00.000Z"), encoding="utf-8")
    vault = tmp_path / "v"
    ran = run("--json", "import", "claude-code", str(folder), "--project", "web", vault=vault)
    answer = _json.loads(ran.stdout)
    assert (answer["sessions"], answer["turns"], answer["skipped"], answer["cut"]) == (2, 2, 0, 1), answer
    [turn] = (vault / "projects/web/prompts").glob("prompt-claude-code-11111111-*")
    body = read_record(turn)[1]
    assert body.startswith("éé") and body.rstrip().endswith(
        "[… cut by memo: the turn held 1,100,000 bytes; a turn keeps at most 1,000,000]")
    assert len(body.encode("utf-8")) <= 1_000_000
    again = run("import", "claude-code", str(folder), "--project", "web", vault=vault)
    assert "turns 0" in again.stdout


@pytest.mark.parametrize("item", [{"type": "commit", "sha": "abc1234", "url": "javascript:alert(1)"},
                                  {"type": "doc", "url": "file:///etc/passwd"},
                                  {"type": "doc", "url": "data:text/html,<script>alert(1)</script>"}])
def test_a_deliverable_linking_elsewhere_than_the_web_is_refused(tmp_path, item):
    """Found by an attacker: a pull request's URL had to be http(s), but a commit's or a
    document's ``javascript:`` link was stored and went into the story's Markdown export."""
    vault = tmp_path / "v"
    memo("session", "start", "d-1", "--project", "shop", vault=vault)
    ran = memo("session", "end", "d-1", "--project", "shop", "--deliverables", json.dumps([item]), vault=vault,
               check=False)
    assert ran.returncode == 1 and ran.stderr.startswith("error: Invalid deliverables[0].url: ") \
        and "is not an http(s) URL" in ran.stderr, ran.stderr
    shown = json.loads(memo("--json", "session", "show", "d-1", "--project", "shop", vault=vault).stdout)
    assert shown["session"]["status"] == "active"  # nothing written


def test_ending_a_session_whose_file_cannot_be_read_names_the_file_not_a_missing_session(tmp_path):
    """Found by a tester: ``memo session end ow1`` of a session whose file says ``billable: maybe``
    answered "No session record for ow1. Call session_start first" — whose advice then failed
    with the parse error. The file is named with what is wrong, and left as it is."""
    vault = tmp_path / "v"
    memo("session", "start", "ow1", "--project", "alpha", vault=vault)
    memo("prompt", "record", "--session-id", "ow1", "--project", "alpha", "--body", "x", vault=vault)
    path = vault / "projects/alpha/sessions/session-ow1.md"
    edited = path.with_name("edited.tmp")  # as an editor (sed -i) saves: a new file renamed over it
    edited.write_text(path.read_text().replace("billable: true", "billable: maybe"))
    os.replace(edited, path)
    before = path.read_bytes()
    ran = memo("session", "end", "ow1", "--summary", "end it", vault=vault, cwd=tmp_path, check=False)
    assert ran.returncode == 1 and ran.stderr.splitlines()[-1].startswith(f"error: Cannot parse {path}: billable:"), \
        ran.stderr
    assert path.read_bytes() == before


def test_an_index_that_is_a_folder_is_named_so_not_sent_back_to_reindex(tmp_path):
    """Found by a tester: with a folder where the index file goes, every command — ``memo
    reindex`` too — said "damaged; run `memo reindex`": advice that loops."""
    vault = tmp_path / "v"
    memo("prompt", "record", "--project", "p", "--body", "x", vault=vault)
    index_path = vault / ".memo" / "index.sqlite"
    index_path.unlink()
    index_path.mkdir()
    for args in (("reindex",), ("activity", "--all")):
        ran = memo(*args, vault=vault, check=False)
        assert ran.returncode == 1 and ran.stderr.strip() == (
            f"error: The index {index_path} is a folder or a special file, not memo's index: move it away, then run "
            "`memo reindex` to rebuild it"), ran.stderr


def test_an_offset_past_the_last_prompt_says_so_and_one_past_2_53_is_refused(tmp_path):
    """Found by a tester: ``--offset`` past the end said "No prompts match" (59 did), and a huge
    one was answered as another offset (its JSON echoed 9007199254740992)."""
    vault = tmp_path / "v"
    for n in (1, 2):
        memo("prompt", "record", "--project", "p", "--body", f"turn {n}", vault=vault)
    past = memo("prompt", "list", "--all", "--offset", "5", vault=vault)
    assert past.stdout.startswith("No prompts on this page: 2 match, and --offset 5 skips past the last of them.")
    huge = memo("prompt", "list", "--all", "--offset", str(2**53 + 1), vault=vault, check=False)
    assert huge.returncode == 1 and huge.stderr.strip() == (
        f"error: Invalid offset: {2**53 + 1} is above {2**53}: the prompts to skip")


def test_an_unknown_deliverable_key_and_an_empty_hand_off_owner_are_refused(tmp_path):
    """Found by a tester of bad input: ``--deliverables '[{"type": "pr", "url": "https://a", "bogus": 1}]'``
    wrote ``bogus`` into the session, and ``--handoff-owner ""`` was stored as no owner (every other
    empty option is refused). Both refused, one line naming the field; nothing written."""
    vault = tmp_path / "v"
    memo("session", "start", "s8", "--project", "p1", vault=vault)
    before = (vault / "projects/p1/sessions/session-s8.md").read_bytes()
    for args, said in ((["--deliverables", '[{"type": "pr", "url": "https://a", "bogus": 1}]'],
                        "error: Invalid deliverables[0]: has 'bogus': a deliverable is {type, url?, sha?, title?}"),
                       (["--handoff-owner", "", "--next-step", "x"],
                        "error: Invalid handoff.owner: is empty: give a value, or leave the option out"),
                       # (a tester of bad input, round four: a traceback, a title of 100,000 characters taken,
                       # a javascript: URL of --deliverables said to be --pr's)
                       (["--deliverables", "[" * 5000],
                        "error: Invalid deliverables: nested too deeply: expected a JSON list of objects"),
                       (["--deliverables", "{"], "error: Invalid deliverables: not JSON (Expecting property name "
                                                 "enclosed in double quotes)"),
                       (["--deliverables", '[{"type": "pr", "url": "https://a", "title": "' + "t" * 600 + '"}]'],
                        "error: Invalid deliverables[0].title: is 600 characters; at most 500 (one line)"),
                       (["--deliverables", '[{"type": "commit", "sha": "a b"}]'],
                        "error: Invalid deliverables[0].sha: 'a b' is no commit id (one word of at most 100 "
                        "characters)"),
                       (["--deliverables", '[{"type": " "}]'],
                        "error: Invalid deliverables[0].type: is empty: a word such as pr, commit, doc (at most 40)"),
                       (["--deliverables", '[{"type": "pr", "url": "javascript:alert(1)"}]'],
                        "error: Invalid deliverables[0].url: 'javascript:alert(1)' is not an http(s) URL"),
                       (["--pr", "javascript:alert(1)"], "error: Invalid pr: 'javascript:alert(1)' is not an http(s) "
                                                         "URL")):
        ran = memo("session", "end", "s8", "--project", "p1", *args, vault=vault, check=False)
        assert (ran.returncode, ran.stderr.strip()) == (1, said)
    assert (vault / "projects/p1/sessions/session-s8.md").read_bytes() == before


def test_a_vault_inside_another_vault_is_refused(tmp_path):
    """Found by a tester of bad input: ``--vault-root`` naming a folder inside a vault
    (``<vault>/projects/acme-web``) made a second index and records there that the outer vault
    never sees (`memo reindex` skipped them, `memo doctor` said ok). Refused, naming the vault."""
    vault = tmp_path / "v"
    memo("prompt", "record", "--session-id", "s1", "--project", "acme-web", "--body", "outer", vault=vault)
    inner = vault / "projects" / "acme-web"
    ran = memo("prompt", "record", "--session-id", "n1", "--project", "nest", "--body", "nested", vault=inner,
               check=False)
    assert (ran.returncode, ran.stderr) == (1, f"error: Invalid vaultRoot: {inner.resolve()} is inside the vault "
                                               f"{vault.resolve()}; give that vault, or a folder outside it\n")
    assert not (inner / ".memo").exists() and not (inner / "projects").exists()
