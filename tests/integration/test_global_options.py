"""The global options ``--json`` and ``--vault-root`` are accepted before or after the command
(``memo activity --all --json`` is ``memo --json activity --all``). Click parses them where
they stand, so a value that only looks like one (``--body --json``, anything after ``--``)
stays a value."""

from __future__ import annotations

import json

import pytest

from tests.inprocess import memo
from tests.integration.test_startup import _probe


@pytest.fixture
def vault(tmp_path):
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "p", "--client", "Acme", "--start-time", "2026-03-02T09:00:00Z",
         vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "p", "--body", "alpha turn",
         "--created", "2026-03-02T09:05:00Z", vault=vault)
    memo("session", "end", "s1", "--until", "2026-03-02T10:00:00Z", vault=vault)
    return vault


COMMANDS = [["activity", "--all"], ["prompt", "list", "--all"], ["prompt", "search", "alpha", "--all"],
            ["session", "handoff", "--all"], ["prompts", "get", "prompt-s1-t1"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_global_options_after_the_command_give_byte_identical_output(vault, command):
    before = memo("--json", "--vault-root", str(vault), *command)
    assert before.stdout.startswith(("{", "[")) and before.stderr == ""
    for after in ([*command, "--json", "--vault-root", str(vault)],
                  [*command, "--vault-root", str(vault), "--json"],
                  [*command, f"--vault-root={vault}", "--json"],
                  ["--json", *command, "--vault-root", str(vault)],
                  ["--vault-root", str(vault), *command, "--json"]):
        ran = memo(*after)
        assert (ran.stdout, ran.stderr, ran.returncode) == (before.stdout, before.stderr, 0), after


def test_vault_root_after_the_command_gives_the_same_table(vault):
    assert memo("prompt", "list", "--all", "--vault-root", str(vault)).stdout == \
        memo("--vault-root", str(vault), "prompt", "list", "--all").stdout


def test_vault_root_after_the_command_is_the_vault_written_and_the_last_one_wins(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    memo("--vault-root", str(first), "prompt", "record", "--project", "p", "--session-id", "x", "--body", "hi",
         "--vault-root", str(second))
    assert (second / "projects" / "p" / "prompts" / "prompt-x-t1.md").is_file()
    assert not first.exists()


def test_a_body_that_is_literally_json_flag_stays_a_body(tmp_path):
    vault = tmp_path / "v"
    ran = memo("prompt", "record", "--project", "p", "--body", "--json", "--vault-root", str(vault))
    assert ran.stdout.startswith("recorded ")  # --json was the body's value, not the option
    ran = memo("prompt", "record", "--project", "p", "--body-file", "-", "--json", "--vault-root", str(vault),
               input="--vault-root elsewhere --json")
    assert json.loads(ran.stdout)["body"] == "--vault-root elsewhere --json"
    bodies = [i["body"] for i in json.loads(memo("prompt", "list", "--all", "--sort", "date-asc", "--json",
                                                 "--vault-root", str(vault)).stdout)["items"]]
    assert bodies == ["--json", "--vault-root elsewhere --json"]
    assert not (tmp_path / "elsewhere").exists()


def test_after_a_double_dash_the_global_options_are_text(vault):
    page = json.loads(memo("prompt", "search", "--all", "--json", "--vault-root", str(vault), "--", "--json").stdout)
    assert page["total"] == 0  # searched for the text "--json"
    ran = memo("prompt", "search", "--all", "--vault-root", str(vault), "--", "--json")
    assert not ran.stdout.lstrip().startswith("{")  # the text, not the option: a table


def test_vault_root_after_the_command_without_its_folder_is_refused(vault):
    ran = memo("prompt", "list", "--all", "--vault-root", "--json", check=False)
    assert ran.returncode == 1
    assert json.loads(ran.stderr)["error"].startswith("Invalid vaultRoot: '--json' is an option, not a folder")
    ran = memo("prompt", "list", "--all", "--vault-root", check=False)
    assert ran.returncode == 2 and ran.stderr.startswith("error: Option '--vault-root' requires an argument")


def test_under_json_an_error_is_one_json_line_on_stderr(vault):
    """A machine that asked for ``--json`` gets its error as JSON too: the message, the kind of
    error, the exit status and the field at fault — wherever ``--json`` stood."""
    for args in (["--json", "activity", "--since", "nope"], ["activity", "--since", "nope", "--json"]):
        ran = memo(*args, vault=vault, check=False)
        assert ran.returncode == 1 and ran.stdout == ""
        assert ran.stderr.count("\n") == 1
        assert json.loads(ran.stderr) == {"error": "Invalid since date: 'nope' (give a date as YYYY-MM-DD, a time as YYYY-MM-DDTHH:MM, a month YYYY-MM, a year YYYY or an ISO week YYYY-Www, ISO 8601)", "errorType": "InvalidDateError",
                                          "exitCode": 1, "field": "since"}
    ran = memo("activity", "--bogus", "--json", vault=vault, check=False)
    assert ran.returncode == 2
    assert json.loads(ran.stderr) == {"error": "No such option: --bogus (memo activity); see --help",
                                      "errorType": "NoSuchOption", "exitCode": 2}
    typed = memo("prompt", "list", "--limit", "abc", "--json", vault=vault, check=False)
    assert typed.returncode == 2 and json.loads(typed.stderr)["field"] == "limit"  # the parser's own refusal too
    assert json.loads(typed.stderr)["errorType"] == "BadParameter"
    choice = memo("report", "rules", "--min-confidence", "many", "--json", vault=vault, check=False)
    assert choice.returncode == 2 and json.loads(choice.stderr)["field"] == "minConfidence"  # camelCase, as on the wire
    zone = memo("activity", "--all", "--tz", "Mars/X", "--json", vault=vault, check=False)
    assert json.loads(zone.stderr)["field"] == "tz"  # a request's refused field is named, as a date's is
    ran = memo("prompt", "get", "0" * 26, "--json", vault=vault, check=False)
    assert json.loads(ran.stderr)["errorType"] == "RecordNotFoundError"
    plain = memo("activity", "--since", "nope", vault=vault, check=False)
    assert plain.returncode == 1 and plain.stderr == "error: Invalid since date: 'nope' (give a date as YYYY-MM-DD, a time as YYYY-MM-DDTHH:MM, a month YYYY-MM, a year YYYY or an ISO week YYYY-Www, ISO 8601)\n"
    text = memo("prompt", "search", "--all", "--since", "nope", "--", "--json", vault=vault, check=False)
    assert text.stderr.startswith("error: ")  # after `--` it is the text searched for, not the option


def test_a_usage_error_no_longer_tells_to_move_json(vault):
    ran = memo("prompt", "list", "--jsn", vault=vault, check=False)
    assert ran.returncode == 2 and "No such option: --jsn" in ran.stderr
    assert "before the command" not in ran.stderr


@pytest.mark.parametrize("command", [[], ["activity"], ["prompt", "list"], ["session", "start"], ["config", "show"]],
                         ids=lambda c: " ".join(c) or "memo")
def test_help_texts_document_the_global_options(command):
    text = memo(*command, "--help").stdout
    assert "--json" in text and "--vault-root" in text and "MEMO_VAULT" in text


def test_global_options_after_the_command_still_load_only_that_command(tmp_path):
    probe, stderr = _probe(["prompt", "list", "--all", "--json", "--vault-root", str(tmp_path / "v")],
                           tmp_path / "vault", tmp_path)
    assert probe["code"] == 0, stderr
    loaded = {m.rsplit(".", 1)[-1] for m in probe["loaded"] if m.startswith("memo_analytics.interfaces.cli.")}
    assert "prompts" in loaded and not loaded & {"reports", "operations", "operator", "serve", "rules"}


def test_version_prints_the_installed_version_without_opening_a_vault(tmp_path):
    """``memo --version`` as every command-line tool has it: the package's version (the one pip
    installed), exit 0, and no vault made — even where ``MEMO_VAULT`` names a path that is a file."""
    from importlib.metadata import version

    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    ran = memo("--version", env={"MEMO_VAULT": str(not_a_folder)})
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, f"memo {version('memo_analytics')}\n", "")
    assert not_a_folder.read_text() == "x"
    assert json.loads(memo("--json", "--version").stdout) == {"version": version("memo_analytics")}


def test_no_command_offers_to_install_shell_completion(tmp_path):
    """The global options a command accepts are ``--vault-root`` and ``--json`` alone: no command
    offers ``--install-completion`` (it would write into the person's shell start-up files)."""
    home = tmp_path / "home"
    home.mkdir()
    for command in (["activity"], ["invoice", "issue"], ["prompt", "list"], ["import", "claude-code"]):
        shown = memo(*command, "--help", env={"HOME": str(home)})
        assert "--json" in shown.stdout and "completion" not in shown.stdout
        refused = memo(*command, "--install-completion", env={"HOME": str(home), "SHELL": "/bin/bash"}, check=False)
        assert refused.returncode == 2 and "No such option: --install-completion" in refused.stderr
    assert list(home.iterdir()) == []


def test_under_json_every_stderr_line_is_json_notes_and_warnings_too(tmp_path):
    """A script that asked for ``--json`` read the error as JSON but a ``note:`` line as plain
    text on the same stream."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "p", "--start-time", "2026-03-02T08:00:00Z", vault=vault)
    memo("session", "end", "s1", "--until", "2026-03-02T09:00:00Z", vault=vault)
    (vault / ".memo" / "index.sqlite").unlink()  # rebuilt by the next command, which says so
    ran = memo("activity", "--all", "--json", vault=vault)
    assert json.loads(ran.stdout)["totalSessions"] == 1
    [line] = ran.stderr.splitlines()
    assert list(json.loads(line)) == ["note"] and json.loads(line)["note"].startswith("rebuilding the index ")
    (vault / ".memo" / "index.sqlite").unlink()
    plain = memo("activity", "--all", vault=vault)
    assert plain.stderr.startswith("note: rebuilding the index ")
    late = memo("--json", "prompt", "record", "--session-id", "s1", "--project", "p", "--body", "late", vault=vault)
    assert late.stderr == ""  # its warning is in the answer itself
    assert json.loads(late.stdout)["warnings"][0].startswith("session s1 ended at")


def test_json_as_another_options_value_leaves_stderr_plain(tmp_path):
    """``--client --json`` names a client called ``--json``: the run is not under ``--json``, so
    its error and notes are the plain lines (they were JSON objects while stdout was a table)."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "p", "--start-time", "2026-03-02T08:00:00Z", vault=vault)
    ran = memo("activity", "--all", "--client", "--json", vault=vault, check=False)
    assert ran.returncode == 1
    assert ran.stderr.startswith("error: Invalid client: ") and "'--json'" in ran.stderr
    (vault / ".memo" / "index.sqlite").unlink()
    ran = memo("prompt", "list", "--all", "--model", "--json", vault=vault)
    assert ran.stderr.startswith("note: rebuilding the index ")
    asked = memo("activity", "--all", "--client", "nobody", "--json", vault=vault, check=False)
    assert json.loads(asked.stderr)["field"] == "client"  # the option itself still switches
