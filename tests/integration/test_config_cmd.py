"""``memo config show|set|unset`` on a real TOML file: values and their sources, validation
before any write, refusals that leave the file byte-for-byte unchanged. The CLI runs in-process
through its console-script entry point (:func:`tests.inprocess.memo`)."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from tests.inprocess import Ran
from tests.inprocess import memo as run_memo


def memo(config: Path, *args: str, env: dict | None = None) -> Ran:
    """``memo --vault-root <config's folder>/vault ARGS`` with ``$MEMO_CONFIG`` = ``config`` and
    no other ``MEMO_*`` variable than those of ``env``."""
    overrides: dict[str, str | None] = {name: None for name in os.environ if name.startswith("MEMO_")}
    overrides.update({"MEMO_CONFIG": str(config), **(env or {})})
    return run_memo("--vault-root", str(config.parent / "vault"), *args, env=overrides, check=False)


@pytest.fixture
def config(tmp_path) -> Path:
    return tmp_path / "memo" / "config.toml"


def test_set_writes_typed_values_and_keeps_the_other_keys(config):
    for key, value in [("vaultGit.enabled", "true"), ("hybrid.remoteUrl", "http://127.0.0.1:3200"),
                       ("operator.stalledMinutes", "45"), ("vaultGit.branch", "vault"), ("timezone", "Europe/Berlin"),
                       ('clients."Acme Corp"', '{hourlyRate = "120.50", currency = "EUR"}')]:
        done = memo(config, "config", "set", key, value)
        assert done.returncode == 0, done.stderr

    assert tomllib.loads(config.read_text(encoding="utf-8")) == {
        "vaultGit": {"enabled": True, "branch": "vault"},
        "hybrid": {"remoteUrl": "http://127.0.0.1:3200"},
        "operator": {"stalledMinutes": 45},
        "timezone": "Europe/Berlin",
        "clients": {"Acme Corp": {"hourlyRate": "120.50", "currency": "EUR"}},
    }
    assert memo(config, "config", "set", "operator.stalledMinutes", "50").stdout.strip() == (
        f"operator.stalledMinutes = 50 in {config}")


def test_show_lists_the_effective_settings_with_their_sources(config):
    config.parent.mkdir(parents=True)
    config.write_text('timezone = "Europe/Berlin"\n[vaultGit]\nenabled = true\n[hybrid]\ntoken = "s3cret"\n')

    shown = memo(config, "config", "show", "--json", env={"MEMO_IDLE_GAP_MINUTES": "15"})

    assert shown.returncode == 0, shown.stderr
    result = json.loads(shown.stdout)
    assert result["configPath"] == str(config) and result["configFileExists"] is True
    assert result["settings"]["vaultGit"] == {"enabled": True, "remote": "origin", "branch": "main"}
    assert result["settings"]["idleGapMinutes"] == 15 and result["settings"]["hybrid"]["token"] == "***"
    assert result["sources"]["vaultGit.enabled"] == "config file"
    assert result["sources"]["vaultGit.branch"] == "default"
    assert result["sources"]["timezone"] == "config file"
    assert result["sources"]["idleGapMinutes"] == "environment (MEMO_IDLE_GAP_MINUTES)"
    assert result["sources"]["vaultRoot"] == "command line (--vault-root)"
    human = memo(config, "config", "show").stdout
    assert human.splitlines()[0] == f"config file: {config}"
    assert "s3cret" not in human and "s3cret" not in shown.stdout
    assert any(line.split() == ["vaultGit.enabled", "true", "[config", "file]"] for line in human.splitlines())


@pytest.mark.parametrize(("key", "value", "message"), [
    ("colour", "blue", "error: Invalid config key colour: unknown key 'colour' (known: "),
    ("hybrid.remoteURL", "http://x:1", "error: Invalid config hybrid.remoteURL: unknown key"),
    ("hybrid.remoteUrl", "ftp://files", "error: Invalid config hybrid.remoteUrl: String should match pattern"),
    ("operator.stalledMinutes", "soon", "error: Invalid config operator.stalledMinutes: Input should be a valid integer"),
    ("vaultGit.enabled", "maybe", "error: Invalid config vaultGit.enabled: Input should be a valid boolean"),
    ("vaultGit.enabled.really", "true", "error: Invalid config key vaultGit.enabled.really: vaultGit.enabled is a value"),
    ("mode", "cloud", "error: Invalid config mode: Input should be 'local', 'hybrid' or 'remote'"),
    ("timezone", "Mars/Olympus", "error: Invalid config timezone: unknown time zone"),
    ("not a key", "1", "error: Invalid config key: 'not a key' is not a dotted key"),
    # found by a freelancer: a client's name with a space was refused without saying how to give it
    ("clients.Acme GmbH.roundingMinutes", "15", "error: Invalid config key: 'clients.Acme GmbH.roundingMinutes' is not "
                                                "a dotted key such as vaultGit.enabled (a name with a space or a dot in "
                                                "quotes: 'clients.\"Acme GmbH\".roundingMinutes')"),
    ('clients."G"', '{hourlyRate = "95", currency = "XYZ"}',
     "error: Invalid config clients.G.currency: 'XYZ' is not an ISO 4217 currency code in capitals (EUR, USD, JPY …)"),
    ('clients."G"', '{hourlyRate = "95", currency = "usd"}',
     "error: Invalid config clients.G.currency: 'usd' is not an ISO 4217 currency code in capitals"),
    ("invoice.name", "Ana \u202eDev GmbH", "error: Invalid config invoice.name: text holds the control character U+202E"),
    # found by a billing person: the refusal did not repeat the value nor say what was wrong with it
    ('clients."G"', '{hourlyRate = "95,50", currency = "EUR"}',
     "error: Invalid config clients.G.hourlyRate: Input should be a valid decimal, not '95,50' "
     "(a decimal point, not a comma: 95.50)"),
    # found by an attacker: a zero-width space made another client, apart from Acme Corp and its rates
    ("projectClients.shop", "Acme Corp\u200b", "error: Invalid config projectClients: shop: the client holds the "
                                               "control character U+200B"),
    # found by a billing person: a negative number was read as an option ("No such option: -1", exit 2)
    ("operator.stalledMinutes", "-10", "error: Invalid config operator.stalledMinutes: Input should be greater than or "
                                       "equal to 1, not -10"),
    # … and a key of a client named in another case said "a client needs both terms at once"
    ('clients."acme corp".hourlyRate', "100", "error: Invalid config key clients.\"acme corp\".hourlyRate: the config "
     "names this client 'Acme Corp' (a client's name matches in any case): memo config set "
     "'clients.\"Acme Corp\".hourlyRate' 100"),
    # found by an attacker: true was read as 1 (sessions split at every minute, billed in 1-minute steps)
    ("idleGapMinutes", "true", "error: Invalid config idleGapMinutes: true is not a number"),
    ('clients."Acme Corp".roundingMinutes', "true",
     'error: Invalid config clients."Acme Corp".roundingMinutes: true is not a number'),
    ("operator.openTooLongHours", "false", "error: Invalid config operator.openTooLongHours: false is not a number"),
])
def test_a_refused_set_names_the_key_and_leaves_the_file_byte_for_byte(config, key, value, message):
    config.parent.mkdir(parents=True)
    original = (b'# my settings\ntimezone = "UTC"   # where I work\n\n[vaultGit]\nenabled = false\n'
                b'\n[clients."Acme Corp"]\nhourlyRate = "95.50"\ncurrency = "EUR"\n')
    config.write_bytes(original)

    refused = memo(config, "config", "set", key, value)

    assert refused.returncode == 1
    assert len(refused.stderr.strip().splitlines()) == 1 and refused.stderr.startswith(message), refused.stderr
    assert config.read_bytes() == original


def test_set_on_a_file_with_comments_says_they_are_not_kept(config):
    config.parent.mkdir(parents=True)
    config.write_text("# mine\nmode = \"local\"\n")

    done = memo(config, "config", "set", "mode", "hybrid")

    assert done.returncode == 0
    assert "rewritten without its comments" in done.stderr
    assert config.read_text(encoding="utf-8") == 'mode = "hybrid"\n'


def test_the_environment_still_wins_and_set_says_so(config):
    done = memo(config, "config", "set", "timezone", "Asia/Tokyo", env={"MEMO_TIMEZONE": "UTC"})

    assert done.returncode == 0
    assert "MEMO_TIMEZONE is set in the environment and overrides" in done.stderr
    assert json.loads(memo(config, "--json", "config", "show", env={"MEMO_TIMEZONE": "UTC"}).stdout)[
        "settings"]["timezone"] == "UTC"
    assert tomllib.loads(config.read_text(encoding="utf-8")) == {"timezone": "Asia/Tokyo"}


def test_unset_removes_a_key_and_its_emptied_table(config):
    memo(config, "config", "set", "hybrid.remoteUrl", "http://127.0.0.1:3200")
    memo(config, "config", "set", "mode", "hybrid")

    removed = memo(config, "config", "unset", "hybrid.remoteUrl")
    again = memo(config, "config", "unset", "hybrid.remoteUrl")

    assert removed.returncode == 0
    assert tomllib.loads(config.read_text(encoding="utf-8")) == {"mode": "hybrid"}
    assert again.returncode == 1 and again.stderr.strip() == (
        f"error: hybrid.remoteUrl is not set in {config}: nothing to unset (its default applies)")
    # found by a bookkeeper: a number format of '/' was refused naming the table, not the key
    refused = memo(config, "config", "set", "invoice.numberFormat", "RE-{year}/{seq:04d}")
    assert refused.returncode == 1 and refused.stderr.startswith(
        "error: Invalid config invoice.numberFormat: 'RE-{year}/{seq:04d}' gives numbers such as 'RE-2026/0001'"), \
        refused.stderr


def test_the_config_commands_have_help_text(config):
    for command in (["config"], ["config", "show"], ["config", "set"], ["config", "unset"], ["sync", "git"]):
        shown = memo(config, *command, "--help")
        assert shown.returncode == 0 and len(shown.stdout) > 100, command
    assert "comments" in memo(config, "config", "set", "--help").stdout


def test_digits_for_a_key_that_holds_text_are_taken_as_written(config):
    """``memo config set invoice.postcode 10115`` was refused (``Input should be a valid string``)
    while the README writes such values unquoted; a number where the key holds a number stays one."""
    for key, value in [("invoice.postcode", "01067"), ("invoice.name", "Ana Dev"), ("operator.stalledMinutes", "45")]:
        done = memo(config, "config", "set", key, value)
        assert done.returncode == 0, done.stderr
    data = tomllib.loads(config.read_text(encoding="utf-8"))
    assert (data["invoice"]["postcode"], data["operator"]["stalledMinutes"]) == ("01067", 45)
    assert memo(config, "config", "set", "invoice.postcode", "10115").stdout.strip() == (
        f'invoice.postcode = "10115" in {config}')
    refused = memo(config, "config", "set", "operator.stalledMinutes", "4.5")
    assert refused.returncode == 1 and "Input should be a valid integer" in refused.stderr


def test_a_refused_value_in_the_file_is_repeated_unless_it_is_a_secret(config, tmp_path):
    """A command reading a broken file names the value it refused (``'95,50'``) with what to write
    instead; a token's value stays out of the message."""
    config.parent.mkdir(parents=True)
    config.write_text('[clients.Acme]\nhourlyRate = "95,50"\ncurrency = "EUR"\n', encoding="utf-8")
    refused = memo(config, "activity", "--all")
    assert (refused.returncode, refused.stderr.strip()) == (1, (
        f"error: Invalid clients.Acme.hourlyRate ({config}; repair: memo config set clients.Acme.hourlyRate VALUE, "
        "or memo config unset clients.Acme.hourlyRate): Input should be a valid decimal, not '95,50' "
        "(a decimal point, not a comma: 95.50)"))
    config.write_text('[remote]\nurl = "http://127.0.0.1:1"\ntoken = 123456789\n', encoding="utf-8")
    refused = memo(config, "activity", "--all")
    assert refused.returncode == 1 and refused.stderr.strip().endswith("Input should be a valid string")
    assert "123456789" not in refused.stderr
    config.write_text('[hybrid]\nremoteUrl = "ftp://alice:hunter2@host/x"\n', encoding="utf-8")
    from memo_analytics.config import config_file_problems, read_config_file

    # as a long-running process logs it, with no redaction after: the URL's password is masked
    [problem] = config_file_problems(read_config_file(config), config.parent)
    assert "hunter2" not in str(problem) and "'ftp://***@host/x'" in str(problem)


def test_a_dashboard_refresh_under_a_second_is_refused(config):
    """Found by an attacker: ``dashboardRefreshSeconds = 0.0004`` made a period of 0 ms and a
    server busy for nobody; 0 (off) or 1–3600 seconds."""
    refused = memo(config, "config", "set", "operator.dashboardRefreshSeconds", "0.0004")
    assert (refused.returncode, refused.stderr.strip()) == (
        1, "error: Invalid config operator.dashboardRefreshSeconds: 0.0004 is under a second: give 0 (only the "
           "refresh button) or 1 to 3600 seconds")
    for fine in ("0", "1", "30"):
        assert memo(config, "config", "set", "operator.dashboardRefreshSeconds", fine).returncode == 0


def test_an_unknown_key_is_repaired_by_removing_it_not_by_a_value(config):
    """Found by a new user: ``operator.timezone`` in the file was refused with "Extra inputs are not
    permitted, not 'Mars/Olympus'" and the repair ``memo config set operator.timezone VALUE``, which
    no value can make right."""
    (config.parent / "vault" / "projects").mkdir(parents=True)  # a vault of nothing yet (a missing one is refused)
    config.write_text('[operator]\ntimezone = "Mars/Olympus"\n', encoding="utf-8")
    ran = memo(config, "activity", "--all")
    assert (ran.returncode, ran.stderr.strip()) == (1, f"error: Invalid operator.timezone ({config}; repair: memo "
                                                       "config unset operator.timezone): not a key memo knows (a "
                                                       "misspelling, or a key of another section?)")
    assert memo(config, "config", "unset", "operator.timezone").returncode == 0
    assert memo(config, "activity", "--all").returncode == 0
    # a key with a quoted part is printed as a shell word: pasted as printed, it is the key
    config.write_text('[clients."Acme Corp"]\nhourlyRate = "100"\ncurrency = "EUR"\ntaxrate = "19"\n', encoding="utf-8")
    ran = memo(config, "activity", "--all")
    assert "repair: memo config unset 'clients.\"Acme Corp\".taxrate')" in ran.stderr, ran.stderr


def test_a_currency_code_for_no_money_is_refused(config):
    """Found by an attacker: ``currency = "XXX"`` (ISO 4217's "no currency") was taken, and an
    invoice in it issued. Codes for no currency, testing and precious metals are refused."""
    for code in ("XXX", "XTS", "XAU"):
        ran = memo(config, "config", "set", 'clients."Acme"', f'{{hourlyRate = "100", currency = "{code}"}}')
        assert ran.returncode == 1 and f"'{code}' is an ISO 4217 code for no currency" in ran.stderr, ran.stderr
    assert memo(config, "config", "set", 'clients."Acme"', '{hourlyRate = "100", currency = "XOF"}').returncode == 0


@pytest.mark.parametrize("line, key", [
    ("idleGapMinutes = true", "idleGapMinutes"),
    ("[operator]\nstalledMinutes = true", "operator.stalledMinutes"),
    ('[clients.X]\nhourlyRate = "100"\ncurrency = "EUR"\npaymentTermsDays = true', "clients.X.paymentTermsDays"),
    ("[hybrid]\nbatchSize = false", "hybrid.batchSize"),
])
def test_a_flag_for_a_number_in_the_file_is_refused_not_read_as_one(config, line, key):
    """Found by an attacker: ``idleGapMinutes = true`` was shown as 1 and used (an import split a
    session at every minute); every command now names the key, as for ``1.5``."""
    config.parent.mkdir(parents=True)
    config.write_text(line + "\n", encoding="utf-8")
    ran = memo(config, "activity", "--all")
    assert ran.returncode == 1 and ran.stderr.startswith(f"error: Invalid {key} (") and \
        ran.stderr.rstrip().endswith(" is not a number"), ran.stderr


@pytest.mark.parametrize("value, said", [("42", "must be a folder path"), ('""', "must not be empty")])
def test_a_refused_vault_root_in_the_file_names_the_file_and_its_repair(config, value, said):
    """Found by a tester: ``vaultRoot = 42`` said only "Invalid vaultRoot: must be a folder path"
    while every other key named the config file and how to repair it."""
    config.parent.mkdir(parents=True)
    config.write_text(f"vaultRoot = {value}\n", encoding="utf-8")
    overrides: dict[str, str | None] = {name: None for name in os.environ if name.startswith("MEMO_")}
    refused = run_memo("activity", "--all", env={**overrides, "MEMO_CONFIG": str(config)}, check=False)
    assert (refused.returncode, refused.stderr.strip()) == (1, (
        f"error: Invalid vaultRoot ({config}; repair: memo config set vaultRoot VALUE, or memo config unset "
        f"vaultRoot): {said}"))


def test_a_config_path_that_is_no_file_is_refused_before_a_lock_is_left_beside_it(tmp_path):
    """Found by a tester of bad input: ``MEMO_CONFIG=/dev/null memo config set …`` was refused and
    left ``/dev/.null.lock`` (a folder, a fifo, a file in the vault alike): nothing is written."""
    from tests.inprocess import memo as run

    folder = tmp_path / "conf"
    folder.mkdir()
    ran = run("config", "set", "timezone", "UTC", env={"MEMO_CONFIG": str(folder)}, check=False)
    assert ran.returncode == 1 and "is not a regular file" in ran.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conf"]


def test_a_vault_root_that_is_no_folder_is_refused_where_it_is_set(tmp_path):
    """Found by a tester of bad input: ``memo config set vaultRoot /dev/null`` was taken, and then
    every command failed ("is not a folder") without the config's repair hint."""
    from tests.inprocess import memo as run

    config = tmp_path / "config.toml"
    ran = run("config", "set", "vaultRoot", "/dev/null", env={"MEMO_CONFIG": str(config)}, check=False)
    assert (ran.returncode, ran.stderr.strip()) == (1, "error: Invalid config vaultRoot: /dev/null is not a folder")
    assert not config.exists()


def test_a_default_project_that_is_no_project_id_is_refused_and_a_hook_keeps_its_prompt(tmp_path):
    """Found by a tester of bad input: ``memo config set defaultProject ../x`` (or ``My Shop``) was
    taken, ``memo doctor`` said the config was valid, and every hook prompt from outside a
    repository was then dropped for good ("event dropped: Invalid project"). It is refused where
    it is set; written by hand, the hook keeps its event in the spool until the config is mended."""
    from tests.inprocess import memo as run

    config = tmp_path / "config.toml"
    vault = tmp_path / "vault"
    config.write_text(f'vaultRoot = "{vault}"\n', encoding="utf-8")
    before = config.read_bytes()
    env = {"MEMO_CONFIG": str(config)}
    for value in ("../x", "My Shop", "a" * 300):
        ran = run("config", "set", "defaultProject", value, env=env, check=False)
        assert ran.returncode == 1 and ran.stderr.startswith("error: Invalid config defaultProject: "), ran.stderr
        assert config.read_bytes() == before
    config.write_text(f'vaultRoot = "{vault}"\ndefaultProject = "../x"\n', encoding="utf-8")
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "dp", "prompt": "hi from nowhere",
                        "cwd": str(tmp_path)})
    assert run("hook", "claude-code", env=env, input=event).returncode == 0
    assert run("doctor", env=env, check=False).returncode != 0
    config.write_text(f'vaultRoot = "{vault}"\ndefaultProject = "misc"\n', encoding="utf-8")
    run("hooks", "replay", env=env)
    found = json.loads(run("--json", "prompt", "search", "nowhere", "--all", env=env).stdout)
    assert [(item["project"], item["body"]) for item in found["items"]] == [("misc", "hi from nowhere")]


def test_a_value_nested_too_deeply_is_refused_in_one_line(tmp_path):
    """Found by a tester of bad input: ``memo config set captureIgnore "[[[[…"`` ended in a
    RecursionError traceback."""
    from tests.inprocess import memo as run

    config = tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\n', encoding="utf-8")
    ran = run("config", "set", "captureIgnore", "[" * 5000 + "]" * 5000, env={"MEMO_CONFIG": str(config)},
              check=False)
    assert (ran.returncode, ran.stderr) == (1, "error: Invalid config captureIgnore: the value is nested too deeply\n")
    assert config.read_text(encoding="utf-8") == 'timezone = "UTC"\n'


def test_mapping_a_project_to_a_client_names_the_sessions_recorded_before_and_the_command_that_files_them(tmp_path):
    """Found by a developer's first hour: ``memo config set projectClients.ccp "Acme Corp"`` after
    an import said only the key it set, and ``memo activity --client "Acme Corp"`` then showed
    nothing — the imported sessions still billed internal. It names them and the command."""
    from tests.inprocess import memo as run

    config, vault = tmp_path / "config.toml", tmp_path / "vault"
    config.write_text(f'vaultRoot = "{vault}"\n', encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    for sid in ("s1", "s2"):
        run("session", "start", sid, "--project", "ccp", env=env)
    set_ = run("config", "set", "projectClients.ccp", "Acme Corp", env=env)
    assert set_.stderr == ("note: 2 sessions of ccp recorded before bill another client or none; this setting files "
                           "the sessions recorded from now on — memo project client ccp 'Acme Corp' files them\n")
    run("project", "client", "ccp", "Acme Corp", env=env)
    assert run("config", "set", "projectClients.ccp", "acme corp", env=env).stderr == ""  # they bill it: nothing to say


def test_a_config_file_written_with_a_byte_order_mark_is_read(tmp_path):
    """Found by a tester of bad input: a config saved by Windows Notepad (a UTF-8 byte order mark
    first) was "Invalid statement (at line 1, column 1)", every command refused."""
    from tests.inprocess import memo as run

    config = tmp_path / "config.toml"
    config.write_bytes(b'\xef\xbb\xbftimezone = "Asia/Tokyo"\n')
    shown = json.loads(run("--json", "config", "show", env={"MEMO_CONFIG": str(config)}).stdout)
    assert (shown["settings"]["timezone"], shown["problems"]) == ("Asia/Tokyo", [])


def test_mapping_a_project_counts_no_session_an_issued_invoice_bills(tmp_path):
    """Found by a breaker: the note named "4 sessions … --every files them" where 3 were on an
    issued invoice and stay as billed (the command then moved 1). It counts only those it files."""
    from tests.inprocess import memo as run

    from .test_issued_invoices import ACME, ISSUER

    config, vault = tmp_path / "config.toml", tmp_path / "vault"
    config.write_text(f'vaultRoot = "{vault}"\n' + ISSUER + ACME, encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    for day in (5, 6):
        run("session", "start", f"s{day}", "--project", "ccp", "--client", "Acme Corp", "--start-time",
            f"2026-01-0{day}T09:00:00Z", env=env)
        run("session", "end", f"s{day}", "--project", "ccp", "--until", f"2026-01-0{day}T10:00:00Z", env=env)
    run("invoice", "issue", "--all", "--client", "Acme Corp", "--since", "2026-01-05", "--until", "2026-01-05",
        env=env)
    said = run("config", "set", "projectClients.ccp", "Globex", env=env).stderr
    assert said.startswith("note: 1 session of ccp recorded before bills another client or none;"), said
    assert said.rstrip().endswith("memo project client ccp Globex --every files it")


def test_an_amount_typed_without_quotes_is_kept_as_typed(config):
    """Found by a new user: `memo config set 'clients."Acme GmbH".hourlyRate' 130.00` stored the
    float 130.0 (and showed it so); a client's decimal terms keep the text typed."""
    assert memo(config, "config", "set", 'clients."Acme GmbH"', '{hourlyRate = "120", currency = "EUR"}').returncode == 0
    for key, value in (("hourlyRate", "130.00"), ("taxRate", "19.0"), ("projectRates.web", "140.50")):
        done = memo(config, "config", "set", f'clients."Acme GmbH".{key}', value)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f'clients."Acme GmbH".{key} = "{value}" in {config}'
    assert tomllib.loads(config.read_text(encoding="utf-8"))["clients"]["Acme GmbH"] == {
        "currency": "EUR", "hourlyRate": "130.00", "taxRate": "19.0", "projectRates": {"web": "140.50"}}
    assert memo(config, "config", "set", "operator.stalledMinutes", "45").returncode == 0  # other numbers as before
    assert tomllib.loads(config.read_text(encoding="utf-8"))["operator"] == {"stalledMinutes": 45}
