"""The configuration boundary (issue "Trust every surface"): each finding replayed, its final
state asserted.

1. Relative paths of the config file are read against the config file's folder, wherever the
   command runs; paths of the environment and the command line against the current directory.
2. ``memo config unset``/``set`` repair a config file whatever else is wrong in it.
3. A zone name the reports cannot use (``right/UTC``, ``posix/Europe/Berlin``, ``Factory`` …)
   is refused with one line naming the field at ``config set``, at the file's load, at
   ``--tz``, in the MCP tool and in the HTTP API.
4. No password or token in any output of the config commands.

The CLI runs in-process (:func:`tests.inprocess.memo`: Typer's ``CliRunner`` isolation around
the real entry point, so the one-line ``error: …`` translation is the one users get).
"""

from __future__ import annotations

import asyncio
import json
import os
import tomllib
from pathlib import Path

import pytest
from mcp import Client
from pydantic import ValidationError

from memo_analytics.config import Settings
from memo_analytics.services.requests import ActivityReportRequest
from tests.inprocess import Ran
from tests.inprocess import memo as run_memo

BAD_ZONES = ["right/UTC", "posix/Europe/Berlin", "Factory", "localtime", "posixrules"]
PASSWORD = "s3cretPw-9f2"
TOKEN = "tok-7Hq2-LmN4-pQ8r"
REMOTE_TOKEN = "rtok-Zx81-Yw72"
HOOK_TOKEN = "hook-Qa55-Rb66"


def memo(*args: str) -> Ran:
    """``memo ARGS`` in this process, through the console-script entry point, in the
    environment the test set up (``MEMO_VAULT`` included)."""
    return run_memo(*args, env={"MEMO_VAULT": os.environ.get("MEMO_VAULT")}, check=False)


@pytest.fixture
def config(tmp_path, monkeypatch) -> Path:
    """``<tmp>/A/config.toml`` as ``$MEMO_CONFIG``; home in ``<tmp>/home``; no ``MEMO_*`` else."""
    for name in ("MEMO_VAULT", "MEMO_TIMEZONE", "MEMO_TEMPLATES_DIR", "MEMO_VAULTS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = tmp_path / "A" / "config.toml"
    path.parent.mkdir()
    monkeypatch.setenv("MEMO_CONFIG", str(path))
    return path


def one_error_line(ran: Ran) -> str:
    lines = ran.stderr.strip().splitlines()
    assert ran.code == 1 and len(lines) == 1, ran
    return lines[0]


# 1. relative paths -----------------------------------------------------------------------

def test_relative_paths_of_the_config_file_are_read_against_its_folder_from_any_cwd(config, tmp_path, monkeypatch):
    folder = config.parent
    (folder / "tpl").mkdir()
    config.write_text('vaultRoot = "vault"\ntemplatesDir = "tpl"\nvaults = ["team", "~/other"]\n'
                      '[operator]\nstoriesDir = "stories"\n')
    for n, cwd in enumerate((tmp_path / "c1", tmp_path / "c2" / "deeper")):
        cwd.mkdir(parents=True)
        monkeypatch.chdir(cwd)
        done = memo("prompt", "record", "--project", "p", "--session-id", "s", "--body", f"from {cwd.name}")
        assert done.code == 0, done.stderr
        settings = Settings()
        assert settings.vault_root == (folder / "vault").resolve()
        assert settings.templates_dir == folder / "tpl"
        assert settings.vaults == [folder / "team", tmp_path / "home" / "other"]
        assert settings.operator.stories_dir == folder / "stories"
        assert not (cwd / "vault").exists()
        shown = json.loads(memo("--json", "config", "show").stdout)
        assert shown["settings"]["vaultRoot"] == str((folder / "vault").resolve())
        assert shown["sources"]["vaultRoot"] == "config file"
    assert sorted(p.name for p in (folder / "vault" / "projects" / "p" / "prompts").iterdir()) == [
        "prompt-s-t1.md", "prompt-s-t2.md"]


def test_paths_of_the_environment_and_command_line_are_read_against_the_cwd(config, tmp_path, monkeypatch):
    config.write_text('vaultRoot = "vault"\n')
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here-tpl").mkdir()
    monkeypatch.setenv("MEMO_TEMPLATES_DIR", "here-tpl")
    assert Settings(vault_root="mine").vault_root == tmp_path / "mine"
    assert Settings().templates_dir == tmp_path / "here-tpl"
    monkeypatch.setenv("MEMO_VAULT", "env-vault")
    assert Settings().vault_root == tmp_path / "env-vault"
    assert memo("--vault-root", "cli-vault", "prompt", "record", "--project", "p", "--body", "x").code == 0
    assert (tmp_path / "cli-vault" / "projects" / "p").is_dir() and not (config.parent / "vault").exists()


def test_config_set_checks_a_relative_path_against_the_config_files_folder(config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tpl").mkdir()  # beside the cwd only: not what the file would mean

    refused = memo("config", "set", "templatesDir", "tpl")
    assert one_error_line(refused) == f"error: Invalid config templatesDir: {config.parent / 'tpl'} is not a folder"
    assert not config.exists()

    (config.parent / "tpl").mkdir()
    done = memo("config", "set", "templatesDir", "tpl")
    assert done.code == 0 and f"read against its folder {config.parent}" in done.stderr
    assert tomllib.loads(config.read_text()) == {"templatesDir": "tpl"}  # written as given
    assert Settings().templates_dir == config.parent / "tpl"


# 2. repairing a broken file --------------------------------------------------------------

def test_unset_removes_a_bad_templates_dir_that_blocks_every_other_command(config, tmp_path):
    (tmp_path / "v" / "projects").mkdir(parents=True)  # a vault of nothing yet (a missing one is refused)
    config.write_text('timezone = "UTC"\ntemplatesDir = "/no/such/folder"\n')
    blocked = memo("--vault-root", str(tmp_path / "v"), "activity", "--all")
    assert one_error_line(blocked).startswith("error: Invalid templatesDir (")
    assert "memo config unset templatesDir" in blocked.stderr

    shown = memo("--json", "config", "show")
    assert shown.code == 0, shown.stderr
    assert [p["key"] for p in json.loads(shown.stdout)["problems"]] == ["templatesDir"]

    removed = memo("config", "unset", "templatesDir")
    assert removed.code == 0 and removed.stdout.strip() == f"templatesDir removed from {config}"
    assert removed.stderr == ""
    assert tomllib.loads(config.read_text()) == {"timezone": "UTC"}
    assert memo("--vault-root", str(tmp_path / "v"), "activity", "--all").code == 0


def test_unset_works_whatever_else_is_wrong_and_says_what_still_is(config, tmp_path):
    (tmp_path / "v" / "projects").mkdir(parents=True)  # a vault of nothing yet (a missing one is refused)
    config.write_text('timezone = "Factory"\ntemplatesDir = "/no/such/folder"\ncolour = "blue"\n'
                      '[operator]\nstalledMinutes = 0\nhorizonDays = 3\n')

    removed = memo("--json", "config", "unset", "templatesDir")

    assert removed.code == 0, removed.stderr
    assert tomllib.loads(config.read_text()) == {"timezone": "Factory", "colour": "blue",
                                                 "operator": {"stalledMinutes": 0, "horizonDays": 3}}
    still = json.loads(removed.stdout)["problems"]
    assert [p.split(":")[0] for p in still] == ["Invalid config timezone", "Invalid config colour",
                                               "Invalid config operator.stalledMinutes"]
    assert "still has 3 invalid settings" in removed.stderr
    # each of the rest is repaired by set or unset, even while the others are still wrong
    assert memo("config", "set", "timezone", "Europe/Berlin").code == 0
    assert memo("config", "unset", "colour").code == 0  # an unknown key can be removed
    last = memo("config", "set", "operator.stalledMinutes", "45")
    assert last.code == 0 and last.stderr == ""
    assert tomllib.loads(config.read_text()) == {"timezone": "Europe/Berlin",
                                                 "operator": {"stalledMinutes": 45, "horizonDays": 3}}
    assert memo("--vault-root", str(tmp_path / "v"), "activity", "--all").code == 0


def test_set_refuses_only_its_own_bad_value_and_leaves_the_file_as_it_was(config):
    original = b'templatesDir = "/no/such/folder"\ntimezone = "UTC"\n'
    config.write_bytes(original)
    refused = memo("config", "set", "timezone", "Factory")
    assert one_error_line(refused).startswith("error: Invalid config timezone: 'Factory' is a placeholder")
    assert config.read_bytes() == original
    again = memo("config", "set", "templatesDir", "/still/not/there")
    assert one_error_line(again).startswith("error: Invalid config templatesDir: /still/not/there is not a folder")
    assert config.read_bytes() == original


def test_unset_refuses_a_removal_that_itself_breaks_a_table(config):
    original = b'[clients.Acme]\nhourlyRate = "120"\ncurrency = "EUR"\n'
    config.write_bytes(original)
    refused = memo("config", "unset", "clients.Acme.currency")
    assert one_error_line(refused).startswith("error: Invalid config clients.Acme.currency: Field required; "
                                              "a client needs both terms at once")
    assert config.read_bytes() == original
    assert memo("config", "unset", "clients.Acme").code == 0 and tomllib.loads(config.read_text()) == {}


# 3. zone names ---------------------------------------------------------------------------

@pytest.mark.parametrize("zone", BAD_ZONES)
def test_a_zone_reports_cannot_use_is_refused_at_config_set_and_at_the_files_load(config, tmp_path, zone):
    config.write_text('timezone = "UTC"\n')
    refused = memo("config", "set", "timezone", zone)
    assert one_error_line(refused).startswith(f"error: Invalid config timezone: {zone!r} is ")
    assert tomllib.loads(config.read_text()) == {"timezone": "UTC"}

    config.write_text(f'timezone = "{zone}"\n')  # written by hand
    loaded = memo("--vault-root", str(tmp_path / "v"), "activity", "--all")
    assert one_error_line(loaded).startswith(f"error: Invalid timezone ({config}; repair: memo config set timezone "
                                             f"VALUE, or memo config unset timezone): {zone!r} is ")
    assert memo("config", "set", "timezone", "Europe/Berlin").code == 0


@pytest.mark.parametrize("zone", BAD_ZONES)
def test_a_zone_reports_cannot_use_is_refused_at_tz_of_every_command(config, tmp_path, zone):
    config.write_text("", encoding="utf-8")  # (a missing one is said by every command, a line of its own)
    vault = str(tmp_path / "v")
    assert memo("--vault-root", vault, "session", "start", "s", "--project", "p", "--start-time",
                "2026-03-02T09:00:00Z").code == 0
    for command in (["activity", "--all"], ["report", "timesheet", "--all", "-o", str(tmp_path / "t.pdf")],
                    ["report", "invoice", "--all", "-o", str(tmp_path / "i.pdf")],
                    ["import", "codex", str(tmp_path / "none")]):
        refused = memo("--vault-root", vault, *command, "--tz", zone)
        assert one_error_line(refused).startswith(f"error: Invalid tz: {zone!r} is "), command
    assert not (tmp_path / "t.pdf").exists() and not (tmp_path / "i.pdf").exists()
    with pytest.raises(ValidationError, match=r"tz\n  Value error, "):
        ActivityReportRequest(tz=zone)


def test_a_bad_zone_is_a_tool_error_naming_tz_in_the_mcp_tool(tmp_path):
    from memo_analytics.interfaces.mcp import build_server

    async def scenario():
        async with Client(build_server(Settings(vault_root=tmp_path / "v", timezone="UTC"))) as client:
            answers = {}
            for zone in [*BAD_ZONES, "Europe/Berlin"]:
                result = await client.call_tool("prompt", {"action": "activity_report", "crossProject": True,
                                                           "tz": zone})
                answers[zone] = (result.is_error, result.content[0].text)
            return answers

    answers = asyncio.run(scenario())
    for zone in BAD_ZONES:
        is_error, text = answers[zone]
        message = text.removeprefix("Error executing tool prompt: ")  # the SDK's prefix
        assert is_error and message.startswith(f"Invalid tz: {zone!r} is ") and "\n" not in text, text
    assert answers["Europe/Berlin"][0] is False and json.loads(answers["Europe/Berlin"][1])["timezone"] == "Europe/Berlin"


def test_a_bad_zone_is_a_400_naming_tz_in_the_http_api(tmp_path):
    from urllib.parse import quote

    from tests.integration.test_http_api import Server

    vault = tmp_path / "v"
    assert memo("--vault-root", str(vault), "prompt", "record", "--project", "p", "--body", "seed").code == 0
    server = Server(vault)
    try:
        for zone in BAD_ZONES:
            status, body = server.get_json(f"/api/activity?crossProject=true&tz={quote(zone)}")
            assert status == 400, (zone, body)
            assert body["error"].startswith(f"Invalid tz: {zone!r} is ") and "\n" not in body["error"], body
        status, body = server.get_json("/api/activity?crossProject=true&tz=Europe/Berlin")
        assert status == 200 and body["timezone"] == "Europe/Berlin"
    finally:
        server.stop()


# 4. no secret in any output --------------------------------------------------------------

def secrets_in(text: str) -> list[str]:
    return [s for s in (PASSWORD, TOKEN, REMOTE_TOKEN, HOOK_TOKEN) if s in text]


def test_config_show_masks_url_passwords_and_every_token(config):
    config.write_text(f'mode = "hybrid"\n[hybrid]\nremoteUrl = "https://ana:{PASSWORD}@team.example/"\n'
                      f'token = "{TOKEN}"\n[remote]\nurl = "https://bob:{PASSWORD}@daemon.example:3124"\n'
                      f'token = "{REMOTE_TOKEN}"\n[operator]\n'
                      f'webhookUrl = "https://hooks.example/notify?channel=ops&token={HOOK_TOKEN}"\n')

    text, as_json = memo("config", "show"), memo("--json", "config", "show")

    assert text.code == 0 and as_json.code == 0
    for ran in (text, as_json):
        assert secrets_in(ran.stdout + ran.stderr) == []
    settings = json.loads(as_json.stdout)["settings"]
    assert settings["hybrid"]["remoteUrl"] == "https://ana:***@team.example/"
    assert settings["remote"]["url"] == "https://bob:***@daemon.example:3124"
    assert settings["hybrid"]["token"] == "***" and settings["remote"]["token"] == "***"
    assert settings["operator"]["webhookUrl"] == "https://hooks.example/***?channel=***&token=***"
    assert any(line.split()[:2] == ["hybrid.remoteUrl", '"https://ana:***@team.example/"']
               for line in text.stdout.splitlines())


@pytest.mark.parametrize("path", ["/hook/s3cr3t-path-of-ours", "/hooks/catch/1234567/abcdefg/", "/webhook/2f1c9a7e"])
def test_any_webhook_url_is_shown_without_its_path_which_is_its_secret(config, path):
    """Found by an operator: a receiver of one's own at ``/hook/<secret>`` (or Zapier's, n8n's)
    was shown whole by ``memo config show`` and echoed whole by ``memo config set``: only a
    Slack or Discord path was known for a secret. A webhook's path is masked whatever it is."""
    hook = f"https://hooks.example:8443{path}"
    config.write_text(f'[operator]\nwebhookUrl = "{hook}"\n')
    text, as_json = memo("config", "show"), memo("--json", "config", "show")
    assert json.loads(as_json.stdout)["settings"]["operator"]["webhookUrl"] == "https://hooks.example:8443/***"
    assert path not in text.stdout + text.stderr + as_json.stdout
    echoed = memo("config", "set", "operator.webhookUrl", f"https://other.example{path}")
    assert echoed.stdout.startswith('operator.webhookUrl set to "https://other.example/***" in ')
    assert path not in echoed.stdout + echoed.stderr
    refused = memo("config", "set", "operator.webhookUrl", f"https://other.example:87650{path}")
    assert refused.code != 0 and path not in refused.stdout + refused.stderr, refused.stderr


def test_a_slack_webhook_url_is_shown_without_its_secret_path(config):
    hook = "https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/" + HOOK_TOKEN.replace("-", "")
    config.write_text(f'[operator]\nwebhookUrl = "{hook}"\n')
    shown = json.loads(memo("--json", "config", "show").stdout)
    assert shown["settings"]["operator"]["webhookUrl"] == "https://hooks.slack.com/***"


@pytest.mark.parametrize("key, value, echoed", [
    ("hybrid.token", TOKEN, "hybrid.token set to *** in "),
    ("remote.token", REMOTE_TOKEN, "remote.token set to *** in "),
    ("hybrid.remoteUrl", f"https://ana:{PASSWORD}@team.example/", 'hybrid.remoteUrl set to "https://ana:***@team.example/" in '),
    ("operator.webhookUrl", f"https://hooks.example/n?token={HOOK_TOKEN}", 'operator.webhookUrl set to "https://hooks.example/***?token=***" in '),
    ("hybrid", f'{{token = "{TOKEN}", remoteUrl = "https://ana:{PASSWORD}@team.example"}}', "hybrid set to "),
])
def test_config_set_never_echoes_a_secret(config, key, value, echoed):
    text = memo("config", "set", key, value)
    as_json = memo("--json", "config", "set", key, value)

    assert text.code == 0 and as_json.code == 0, text.stderr
    assert text.stdout.startswith(echoed) and text.stdout.strip().endswith(str(config))
    for ran in (text, as_json):
        assert secrets_in(ran.stdout + ran.stderr) == []
    assert "***" in json.dumps(json.loads(as_json.stdout)["value"])
    assert secrets_in(config.read_text()) != []  # the file itself keeps the value


def test_a_refused_set_or_a_problem_note_never_echoes_a_secret(config):
    refused = memo("config", "set", "hybrid.remoteUrl", f"ftp://ana:{PASSWORD}@team.example/")
    assert one_error_line(refused).startswith("error: Invalid config hybrid.remoteUrl:")
    assert secrets_in(refused.stdout + refused.stderr) == []
    config.write_text(f'[remote]\nurl = "https://bob:{PASSWORD}@daemon.example/a/path"\ntoken = "{REMOTE_TOKEN}"\n')
    for ran in (memo("config", "show"), memo("--json", "config", "show"), memo("config", "set", "timezone", "UTC"),
                memo("config", "unset", "timezone"), memo("activity", "--all")):
        assert secrets_in(ran.stdout + ran.stderr) == [], ran


def test_the_config_file_that_holds_tokens_is_readable_by_its_owner_only(config):
    ran = memo("config", "set", "hybrid.token", "s3cret-hybrid-t0ken")
    assert ran.code == 0, ran
    assert config.stat().st_mode & 0o777 == 0o600
    assert "s3cret-hybrid-t0ken" in config.read_text()  # kept for the push, shown to nobody else


# found by an attacker ------------------------------------------------------------------------

@pytest.mark.parametrize("key, value, said", [
    ("operator.stalledMinutes = 5\nmode", "local", "is not a dotted key"),  # a traceback (two keys)
    ("operator.stalledMinutes = 5 #", "7", "is not a dotted key"),  # was stored as operator.stalledMinutes = 5
    ("timezone = 0 #", "Europe/Paris", "is not a dotted key"),  # its value 0 passed for the key's own
    ('clients."x\u202ey"', '{hourlyRate = "1", currency = "EUR"}', "is no client name"),  # matched no session
    ('clients."a\nb"', '{hourlyRate = "1", currency = "EUR"}', "is not a dotted key"),
    ('clients."A\u2028B"', '{hourlyRate = "1", currency = "EUR"}', "is no client name"),  # a line separator
])
def test_a_key_that_is_no_key_or_no_client_name_is_one_line_and_leaves_the_file(config, key, value, said):
    original = b'timezone = "UTC"\n'
    config.write_bytes(original)
    assert said in one_error_line(memo("config", "set", key, value))
    assert config.read_bytes() == original


def test_a_config_file_that_is_not_utf8_is_one_line_for_set_and_unset(config):
    config.write_bytes(b"\xff")
    for ran in (memo("config", "set", "timezone", "UTC"), memo("config", "unset", "timezone")):
        assert "is not UTF-8" in one_error_line(ran)
    assert config.read_bytes() == b"\xff"


def test_a_config_file_that_is_a_link_is_written_where_it_points(config, tmp_path):
    """It replaced the link with a file of its own: the dotfiles copy stayed behind, detached."""
    kept = tmp_path / "dotfiles" / "memo.toml"
    kept.parent.mkdir()
    kept.write_text('timezone = "UTC"\n', encoding="utf-8")
    config.symlink_to(kept)
    assert memo("config", "set", "operator.stalledMinutes", "45").code == 0
    assert config.is_symlink() and tomllib.loads(kept.read_text(encoding="utf-8")) == {
        "timezone": "UTC", "operator": {"stalledMinutes": 45}}


def test_config_sets_run_at_once_each_keep_their_key(config):
    """Seven parallel sets of different keys all said done, and one key went missing in three of
    five rounds: each read the file, the later write lost the earlier's key."""
    import subprocess
    import sys

    keys = [("operator.stalledMinutes", "45"), ("operator.horizonDays", "9"), ("timezone", "UTC"),
            ("operator.openTooLongHours", "7"), ("idleGapMinutes", "40"), ("operator.handoffUnclaimedHours", "5")]
    runs = [subprocess.Popen([sys.executable, "-m", "memo_analytics", "config", "set", key, value],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for key, value in keys]
    said = [r.communicate(timeout=60)[1] for r in runs]
    assert [r.returncode for r in runs] == [0] * len(keys), said
    data = tomllib.loads(config.read_text(encoding="utf-8"))
    assert data["operator"] == {"stalledMinutes": 45, "horizonDays": 9, "openTooLongHours": 7, "handoffUnclaimedHours": 5}
    assert (data["timezone"], data["idleGapMinutes"]) == ("UTC", 40)


@pytest.mark.parametrize("value, reason, secret", [
    ("http://user:PASSW0RD-9@127.0.0.1:18777/hook", "a user or password before the host", "PASSW0RD"),
    ("http://127.0.0.1:18777/hook/SEC\x01RET", "a control character", "SEC"),
    ("http://127.0.0.1:18777/hook/SEC\x7fRET", "a control character", "SEC"),
    ("https://hooks.example/s\u00e9cretpath", "beyond ASCII: percent-encode it", "cretpath"),
])
def test_a_webhook_url_no_post_can_use_is_refused_without_showing_it(config, value, reason, secret):
    """Found by an attacker: ``user:password@`` (urllib sends neither), a control character or a
    letter beyond ASCII in operator.webhookUrl were taken; every POST then failed, and its error,
    logged on every pass, quoted the password or the path."""
    refused = memo("config", "set", "operator.webhookUrl", value)
    assert refused.code != 0 and reason in refused.stderr, refused.stderr
    assert secret not in refused.stdout + refused.stderr
