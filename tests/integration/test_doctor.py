"""``memo doctor`` (issue 12, point 6): one line per check, what is missing named with what to
install, exit 1 only when something required is missing, nothing in the vault changed.

The CLI runs in-process through the console-script entry point inside Typer's ``CliRunner``
isolation (:func:`tests.inprocess.memo`; its own environment: ``PATH``, ``MEMO_VAULT``,
``MEMO_CONFIG``); what the environment cannot point elsewhere (Chromium's path, the font query, the PDF renderer, the
Python version) is given to :func:`run_checks` as a :class:`Probe`.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from memo_analytics.interfaces.cli.doctor import Probe, as_json, check_lines, run_checks
from tests.inprocess import memo as run_memo

REQUIRED = ["python", "pango", "latinFont", "cjkFont", "config", "vault"]
OPTIONAL = ["harfbuzzSubset", "emojiFont", "pdftoppm", "chromium", "playwright"]


@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str

    def line(self, name: str) -> str:
        """The output line of check ``name``."""
        (found,) = [line for line in self.stdout.splitlines() if line[9:].split(" ", 1)[0] == name]
        return found


def memo(*args: str, env: dict[str, str | None]) -> Ran:
    """``memo ARGS`` in this process with ``env`` on top of the environment (None unsets)."""
    ran = run_memo(*args, env=env, check=False)
    return Ran(ran.returncode, ran.stdout, ran.stderr)


def env_for(tmp_path: Path, **extra: str | None) -> dict[str, str | None]:
    """A vault that is not there yet, no config file, and ``extra``."""
    return {"MEMO_VAULT": str(tmp_path / "vault"), "MEMO_CONFIG": str(tmp_path / "none.toml"),
            "MEMO_TIMEZONE": None, "MEMO_TEMPLATES_DIR": None, "MEMO_VAULTS": None, **extra}


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time (ns)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def test_on_this_machine_every_required_check_passes(tmp_path):
    ran = memo("doctor", env=env_for(tmp_path))
    assert ran.code == 0, ran.stdout + ran.stderr
    lines = ran.stdout.splitlines()
    assert [line[9:].split(" ", 1)[0] for line in lines[:-1]] == [
        "python", "pango", "harfbuzzSubset", "latinFont", "cjkFont", "emojiFont", "pdftoppm", "chromium",
        "playwright", "config", "vault", "hooks"]
    for name in REQUIRED:
        assert ran.line(name).startswith("ok ") and "  required  " in ran.line(name), ran.line(name)
    for name in OPTIONAL:
        assert "  optional  " in ran.line(name)
    assert "WeasyPrint" in ran.line("pango") and " ms " in ran.line("pango")  # it rendered, and says how fast
    assert "Noto" in ran.line("cjkFont")
    assert "is not there yet: the first record or import creates it" in ran.line("vault")
    assert "none.toml is not there: the defaults apply" in ran.line("config")
    assert lines[-1].startswith("everything required is there")
    assert ran.stderr == ""
    assert not (tmp_path / "vault").exists()  # looked at, not created


def test_missing_pieces_are_named_with_what_to_install_and_exit_1(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()  # a PATH with no pdftoppm on it
    config = tmp_path / "config.toml"
    config.write_text('templatesDir = "no-such-folder"\n', encoding="utf-8")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    ran = memo("doctor", env=env_for(tmp_path, PATH=str(bare), MEMO_CONFIG=str(config),
                                     MEMO_VAULT=str(blocker / "vault")))
    assert ran.code == 1
    assert ran.line("pdftoppm").startswith("missing ") and "  optional  " in ran.line("pdftoppm")
    assert ran.line("pdftoppm").endswith("→ apt-get install poppler-utils")
    # the one line every other command would refuse with, repair included
    assert ran.line("config").startswith("MISSING ")
    assert f"Invalid templatesDir ({config}; repair: memo config set templatesDir VALUE" in ran.line("config")
    assert ran.line("config").endswith("→ memo config set templatesDir VALUE, or memo config unset templatesDir")
    assert ran.line("vault").startswith("MISSING ") and "cannot be created" in ran.line("vault")
    assert ran.line("python").startswith("ok ")  # the rest is checked all the same
    assert ran.stderr.strip() == ("error: 2 required checks failed: config, vault "
                                  "(what to install or run is on each line above)")
    assert "everything required" not in ran.stdout


def test_a_vault_that_is_not_there_yet_is_fine_and_a_missing_optional_piece_fails_nothing(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    ran = memo("doctor", env=env_for(tmp_path, PATH=str(bare), MEMO_VAULT=str(tmp_path / "new" / "vault")))
    assert ran.code == 0, ran.stderr
    assert "pdftoppm" in ran.stdout.splitlines()[-1]  # "optional missing: …, pdftoppm"


def test_a_config_file_that_is_not_toml_is_named_with_its_line(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\nvaults = ["a" "b"]\n', encoding="utf-8")
    ran = memo("doctor", env=env_for(tmp_path, MEMO_CONFIG=str(config)))
    assert ran.code == 1
    assert str(config) in ran.line("config") and "line 2" in ran.line("config")
    assert ran.line("config").endswith(f"→ repair {config} in an editor")
    assert ran.line("vault").startswith("ok ")  # the vault is still checked (MEMO_VAULT)


def test_checks_pointed_at_missing_things_name_each_package(tmp_path):
    def no_pango():
        raise OSError("cannot load library 'libpango-1.0-0': libpango-1.0-0: cannot open shared object file")

    probe = Probe(path=str(tmp_path), chromium=tmp_path / "chromium", fonts=lambda pattern: [],
                  render_pdf=no_pango, python=(3, 10, 12), has_module=lambda name: False)
    checks = {c.name: c for c in run_checks(probe, vault_root=str(tmp_path / "vault"))}
    expected = {
        "python": "Python 3.11 or newer",
        "pango": "apt-get install libpango-1.0-0 libpangoft2-1.0-0",
        "harfbuzzSubset": "apt-get install libharfbuzz-subset0",
        "latinFont": "apt-get install fonts-dejavu-core",
        "cjkFont": "apt-get install fonts-noto-cjk",
        "emojiFont": "apt-get install fonts-noto-color-emoji",
        "pdftoppm": "apt-get install poppler-utils",
        "chromium": "apt-get install chromium",
        "playwright": "pip install -e '.[test]'",
    }
    for name, install in expected.items():
        assert not checks[name].ok and checks[name].install.startswith(install), (name, checks[name])
    assert "libpango-1.0-0" in checks["pango"].detail
    assert checks["cjkFont"].detail == "no font for Chinese, Japanese, Korean"
    assert "older than 3.11" in checks["python"].detail
    assert [c.name for c in checks.values() if c.status == "missing"] == ["python", "pango", "latinFont", "cjkFont"]
    assert "browser tests only" in checks["chromium"].title and "browser tests only" in checks["playwright"].title
    lines = check_lines(list(checks.values()))
    assert lines[1].startswith("MISSING  pango ") and lines[1].endswith(
        "→ apt-get install libpango-1.0-0 libpangoft2-1.0-0")
    assert lines[7].startswith("missing  chromium ") and "optional" in lines[7]


def test_weasyprint_not_installed_says_pip(tmp_path):
    def no_weasyprint():
        raise ImportError("No module named 'weasyprint'")

    (pango,) = [c for c in run_checks(Probe(render_pdf=no_weasyprint), vault_root=str(tmp_path)) if c.name == "pango"]
    assert not pango.ok and pango.install.startswith("pip install -e .")


def test_json_shape(tmp_path):
    ran = memo("--json", "doctor", env=env_for(tmp_path))
    assert ran.code == 0, ran.stderr
    result = json.loads(ran.stdout)  # nothing but the JSON on stdout
    assert set(result) == {"ok", "missingRequired", "missingOptional", "elapsedMs", "checks"}
    assert result["ok"] is True and result["missingRequired"] == []
    assert [c["name"] for c in result["checks"]] == ["python", "pango", "harfbuzzSubset", "latinFont", "cjkFont",
                                                     "emojiFont", "pdftoppm", "chromium", "playwright", "config",
                                                     "vault", "hooks"]
    for check in result["checks"]:
        assert set(check) == {"name", "title", "required", "ok", "status", "detail", "debianPackages", "install",
                              "elapsedMs"}
        assert check["status"] == ("ok" if check["ok"] else "missing" if check["required"] else "optional")
        assert (check["install"] is None) == check["ok"]
        assert isinstance(check["elapsedMs"], float)
    by_name = {c["name"]: c for c in result["checks"]}
    assert by_name["cjkFont"]["debianPackages"] == ["fonts-noto-cjk"]
    assert by_name["pango"]["debianPackages"] == ["libpango-1.0-0", "libpangoft2-1.0-0"]
    assert {c["name"] for c in result["checks"] if c["required"]} == set(REQUIRED)

    config = tmp_path / "config.toml"
    config.write_text("timezone = \"Factory\"\n", encoding="utf-8")
    broken = memo("--json", "doctor", env=env_for(tmp_path, MEMO_CONFIG=str(config)))
    assert broken.code == 1
    result = json.loads(broken.stdout)
    assert result["ok"] is False and result["missingRequired"] == ["config"]
    (config_check,) = [c for c in result["checks"] if c["name"] == "config"]
    assert config_check["detail"].startswith(f"Invalid timezone ({config}; repair: memo config set timezone VALUE")
    assert config_check["install"] == "memo config set timezone VALUE, or memo config unset timezone"
    assert json.loads(broken.stderr) == {"error": "1 required check failed: config", "errorType": "MemoError",
                                         "exitCode": 1}  # under --json every stderr line is JSON


def test_the_vault_and_its_index_are_only_read(tmp_path):
    vault = tmp_path / "vault"
    env = env_for(tmp_path, MEMO_VAULT=str(vault))
    recorded = memo("prompt", "record", "--body", "check the fonts", "--project", "p1", "--session-id", "s1", env=env)
    assert recorded.code == 0, recorded.stderr
    before = tree(vault)
    ran = memo("doctor", env=env)
    assert ran.code == 0, ran.stderr
    assert f"vault: {vault}: writable; index opens (1 prompt" in ran.line("vault")
    assert tree(vault) == before  # no -wal/-shm file, no lock, no index rebuilt

    (vault / ".memo" / "index.sqlite").write_bytes(b"this is not a database" * 100)
    for extra in ("-wal", "-shm"):
        (vault / ".memo" / f"index.sqlite{extra}").unlink(missing_ok=True)
    before = tree(vault)
    damaged = memo("doctor", env=env)
    assert damaged.code == 1
    assert "does not open" in damaged.line("vault") and damaged.line("vault").endswith("→ memo reindex")
    assert tree(vault) == before  # reported, not repaired


def test_a_new_vault_is_for_its_user_alone_and_an_older_shared_one_is_said(tmp_path):
    vault = tmp_path / "deeper" / "vault"
    env = env_for(tmp_path, MEMO_VAULT=str(vault))
    old = os.umask(0o022)  # the usual umask: files and folders others can read
    try:
        recorded = memo("prompt", "record", "--body", "the key is in the wiki", "--project", "p1",
                        "--session-id", "s1", env=env)
    finally:
        os.umask(old)
    assert recorded.code == 0, recorded.stderr
    assert vault.stat().st_mode & 0o777 == 0o700  # nobody else lists or reads the turns
    assert (tmp_path / "deeper").stat().st_mode & 0o777 == 0o755  # the folders above it as the umask gives
    ran = memo("doctor", env=env)
    assert ran.code == 0 and "other users" not in ran.line("vault")

    vault.chmod(0o755)  # a vault made before, or copied
    shared = memo("doctor", env=env)
    assert shared.code == 0, shared.stderr  # said, not a failure
    assert shared.line("vault").endswith(f"(mode 755): chmod 700 {vault} keeps it yours")


def test_an_index_a_writer_holds_open_is_read_without_new_files(tmp_path):
    vault = tmp_path / "vault"
    env = env_for(tmp_path, MEMO_VAULT=str(vault))
    assert memo("prompt", "record", "--body", "x", "--project", "p1", "--session-id", "s1", env=env).code == 0
    writer = sqlite3.connect(vault / ".memo" / "index.sqlite")  # holds -wal and -shm open
    try:
        writer.execute("PRAGMA journal_mode = WAL")
        writer.execute("PRAGMA wal_autocheckpoint = 0")  # as a server's open connection: pages stay in the WAL
        writer.execute("INSERT INTO folder_stamps VALUES ('x', 1)")
        writer.execute("UPDATE record_counts SET n = n + 362 WHERE kind = 'prompt'")
        writer.commit()
        before = set(tree(vault))
        ran = memo("doctor", env=env)
        # the counts the WAL holds (a doctor run beside `memo serve` said 1 prompt of 363)
        assert ran.code == 0 and "index opens (363 prompts)" in ran.line("vault"), ran.line("vault")
        assert set(tree(vault)) == before
    finally:
        writer.close()


def test_as_json_is_what_the_lines_say(tmp_path):
    probe = Probe(fonts=lambda pattern: ["Some Font"], render_pdf=lambda: (b"%PDF-1.7", {"harfbuzzSubset": True}))
    checks = run_checks(probe, vault_root=str(tmp_path))
    result = as_json(checks, 12.34)
    assert result["elapsedMs"] == 12.3
    assert len(check_lines(checks)) == len(result["checks"])


def test_in_hybrid_mode_doctor_checks_the_daemon_the_push_goes_to(tmp_path):
    """Found by a team lead: in hybrid mode ``memo doctor`` said all was well while ``memo sync
    status`` showed records waiting on an HTTP 401. The daemon is an optional check of its own
    (the vault here works alone): named with the repair, and passing once the token is right."""
    from tests.integration.test_http_api import Server, free_port

    port, config = free_port(), tmp_path / "hybrid.toml"
    env = env_for(tmp_path, MEMO_CONFIG=str(config))
    daemon = Server(tmp_path / "team", "--token", "the-teams-token-1234", port=port)
    try:
        # found by a team lead: the check read [remote] (remote mode's keys), so a hybrid laptop whose
        # push worked was told its daemon "does not take calls … memo config set remote.url URL"
        config.write_text(f'mode = "hybrid"\n[hybrid]\nremoteUrl = "http://127.0.0.1:{port}"\n'
                          'token = "a-wrong-token-1234"\n')
        checks = {c["name"]: c for c in json.loads(memo("--json", "doctor", env=env).stdout)["checks"]}
        assert checks["daemon"]["ok"] is False and checks["daemon"]["required"] is False
        assert "HTTP 401" in checks["daemon"]["detail"] and "records wait in the outbox" in checks["daemon"]["detail"]
        assert checks["daemon"]["install"].startswith("memo config set hybrid.token TOKEN")
        config.write_text(f'mode = "hybrid"\n[hybrid]\nremoteUrl = "http://127.0.0.1:{port}"\n'
                          'token = "the-teams-token-1234"\n')
        checks = {c["name"]: c for c in json.loads(memo("--json", "doctor", env=env).stdout)["checks"]}
        assert checks["daemon"]["ok"] is True and "answers and takes this machine's token" in checks["daemon"]["detail"]
        assert f"127.0.0.1:{port}" in checks["daemon"]["detail"]
        assert not (tmp_path / "team" / "projects").exists()  # the empty push wrote nothing there
    finally:
        daemon.stop()


def test_the_vault_count_says_how_many_records_lists_and_reports_leave_out(tmp_path):
    """Found by a newcomer: doctor said 58 prompts and 14 sessions where every list and report
    said 56 and 12 — hook captures an import superseded, counted without a word."""
    vault = tmp_path / "vault"
    env = env_for(tmp_path, MEMO_VAULT=str(vault))
    for n in (1, 2):
        assert memo("prompt", "record", "--body", f"turn {n}", "--project", "p1", "--session-id", "s1",
                    env=env).code == 0
    path = vault / "projects/p1/prompts/prompt-s1-t2.md"
    path.write_text(path.read_text(encoding="utf-8").replace("status: recorded", "status: superseded"),
                    encoding="utf-8")
    assert memo("reindex", env=env).code == 0
    line = memo("doctor", env=env).line("vault")
    assert "index opens (2 prompts; 1 of them superseded — a hook's capture by its transcript's " \
           "import, and the like — and left out of lists and reports)" in line, line
