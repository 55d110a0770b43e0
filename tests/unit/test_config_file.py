"""The TOML config file: camelCase keys, env beats file, client billing terms, clear errors."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import ValidationError

from memo_analytics.config import Settings
from memo_analytics.domain.errors import InvalidFieldError


@pytest.fixture
def config(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    monkeypatch.setenv("MEMO_CONFIG", str(path))
    monkeypatch.delenv("MEMO_TIMEZONE", raising=False)
    return path


def test_config_file_values_are_read_with_wire_names(config, tmp_path):
    config.write_text('timezone = "Europe/Berlin"\nidleGapMinutes = 45\nvaults = ["~/team-vault"]\n'
                      '[clients."Acme Corp"]\nhourlyRate = "120.50"\ncurrency = "EUR"\n[ports]\nstatus = 4000\n')
    settings = Settings(vault_root=tmp_path / "vault")
    assert settings.timezone == "Europe/Berlin"
    assert settings.idle_gap_minutes == 45
    assert settings.ports.status == 4000
    assert settings.vaults[0].name == "team-vault" and "~" not in str(settings.vaults[0])
    assert settings.billing_for("ACME corp").hourly_rate == Decimal("120.50")
    assert settings.billing_for("acme corp").currency == "EUR"
    assert settings.billing_for("Globex") is None


def test_environment_beats_the_config_file(config, tmp_path, monkeypatch):
    config.write_text('timezone = "Europe/Berlin"\n')
    monkeypatch.setenv("MEMO_TIMEZONE", "Asia/Tokyo")
    assert Settings(vault_root=tmp_path / "vault").timezone == "Asia/Tokyo"


def test_no_config_file_means_defaults(config, tmp_path):
    settings = Settings(vault_root=tmp_path / "vault")
    assert settings.clients == {} and settings.ports.status == 3124 and settings.templates_dir is None


def test_broken_toml_is_refused_naming_the_file(config, tmp_path):
    config.write_text("timezone = [\n")
    with pytest.raises(InvalidFieldError, match=r"Invalid config: .*config\.toml"):
        Settings(vault_root=tmp_path / "vault")


@pytest.mark.parametrize("terms", ['hourlyRate = "-1"\ncurrency = "EUR"', 'hourlyRate = "10"\ncurrency = "euro"',
                                   'hourlyRate = "abc"\ncurrency = "EUR"'])
def test_bad_billing_terms_are_refused(config, tmp_path, terms):
    config.write_text(f'[clients.Acme]\n{terms}\n')
    with pytest.raises(ValidationError):
        Settings(vault_root=tmp_path / "vault")


def test_cli_names_the_bad_config_field(config, tmp_path):
    from tests.integration.test_cli import memo

    config.write_text('[clients.Acme]\nhourlyRate = "-5"\ncurrency = "EUR"\n')
    result = memo("activity", "--all", vault=tmp_path / "vault", env={"MEMO_CONFIG": str(config)}, check=False)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "Invalid clients.Acme.hourlyRate" in result.stderr and "config.toml" in result.stderr


def test_vault_root_and_default_project_use_their_wire_names(config, tmp_path):
    config.write_text(f'vaultRoot = "{tmp_path / "v"}"\ndefaultProject = "web"\n')
    settings = Settings()
    assert settings.vault_root == (tmp_path / "v").resolve() and settings.default_project == "web"


@pytest.mark.parametrize("content, message", [
    ('vaultroot = "/x"\n', "unknown key 'vaultroot'"),
    ("unknownKey = 1\n", "unknown key 'unknownKey' .*; repair: memo config unset unknownKey\\)"),
    ("vaultRoot = 5\n", "vaultRoot"),
    ('timezone = ""\n', "timezone"),
    ('timezone = "Mars/Olympus"\n', "timezone"),
    ('templatesDir = "/no/such/folder"\n', "templatesDir"),
    (b'timezone = "caf\xe9"\n', "is not UTF-8"),
    ("x = " + "[" * 5000 + "]" * 5000 + "\n", "Invalid config"),
])
def test_bad_config_values_are_refused_naming_the_field(config, tmp_path, content, message):
    if isinstance(content, bytes):
        config.write_bytes(content)
    else:
        config.write_text(content)
    with pytest.raises((InvalidFieldError, ValidationError), match=message):
        Settings(vault_root=tmp_path / "vault") if "vaultRoot" not in str(content) else Settings()


def test_a_config_path_that_is_not_a_file_is_refused(config, tmp_path):
    import os

    os.mkfifo(config)
    with pytest.raises(InvalidFieldError, match="is not a regular file"):
        Settings(vault_root=tmp_path / "vault")


def test_relative_paths_of_the_file_are_made_absolute_against_its_folder(tmp_path):
    from memo_analytics.config import resolve_config_paths

    data = {"vaultRoot": "v", "templatesDir": "/abs/t", "vaults": ["../team", "~/x", 5], "timezone": "UTC",
            "operator": {"storiesDir": "s", "stalledMinutes": 5}}
    resolved = resolve_config_paths(data, tmp_path / "A")
    assert resolved == {"vaultRoot": str(tmp_path / "A" / "v"), "templatesDir": "/abs/t",
                        "vaults": [str(tmp_path / "A" / ".." / "team"), str(Path.home() / "x"), 5],
                        "timezone": "UTC", "operator": {"storiesDir": str(tmp_path / "A" / "s"), "stalledMinutes": 5}}
    assert data["vaultRoot"] == "v"  # a copy: the file's own text is never changed


def test_every_problem_of_the_file_is_listed_key_by_key_and_the_rest_still_applies(config, tmp_path):
    from memo_analytics.config import config_file_problems, load_config_toml, settings_despite_problems

    config.write_text('timezone = "Factory"\ntemplatesDir = "missing"\nidleGapMinutes = 45\ncolour = 1\n'
                      '[operator]\nstalledMinutes = 0\nhorizonDays = 3\n')
    problems = config_file_problems(load_config_toml(config), config.parent)
    assert [(p.key, p.kind) for p in problems] == [("timezone", "value_error"), ("templatesDir", "value_error"),
                                                  ("colour", "unknown_key"),
                                                  ("operator.stalledMinutes", "greater_than_equal")]
    assert str(problems[1]) == f"Invalid config templatesDir: {config.parent / 'missing'} is not a folder"
    settings, listed = settings_despite_problems(vault_root=tmp_path / "vault")
    assert listed == problems
    assert (settings.timezone, settings.templates_dir, settings.idle_gap_minutes) == (None, None, 45)
    assert (settings.operator.stalled_minutes, settings.operator.horizon_days) == (60, 3)


def test_each_source_gives_way_to_the_stronger_one_field_by_field_and_table_by_table(config, tmp_path, monkeypatch):
    """Arguments beat ``MEMO_*`` variables, which beat the file, which beats the defaults; a
    table the environment sets keeps the file's other keys (SPEC §2.1: one config, many
    entry points)."""
    config.write_text('timezone = "Europe/Berlin"\nidleGapMinutes = 45\ndefaultProject = "from-file"\n'
                      '[operator]\nstalledMinutes = 90\nhorizonDays = 3\n')
    monkeypatch.setenv("MEMO_IDLE_GAP_MINUTES", "20")
    monkeypatch.setenv("MEMO_OPERATOR", '{"horizonDays": 5}')
    monkeypatch.setenv("memo_project", "from-env")  # any case, as the shells of the three systems spell it
    settings = Settings(vault_root=tmp_path / "vault", idleGapMinutes=10)
    assert (settings.timezone, settings.idle_gap_minutes, settings.default_project) == ("Europe/Berlin", 10, "from-env")
    assert (settings.operator.stalled_minutes, settings.operator.horizon_days) == (90, 5)
    assert Settings(vault_root=tmp_path / "vault").idle_gap_minutes == 20
    monkeypatch.delenv("MEMO_IDLE_GAP_MINUTES")
    assert Settings(vault_root=tmp_path / "vault").idle_gap_minutes == 45


def test_the_vault_is_named_by_memo_vault_or_memo_vault_root(config, tmp_path, monkeypatch):
    monkeypatch.delenv("MEMO_VAULT", raising=False)
    monkeypatch.setenv("MEMO_VAULT_ROOT", str(tmp_path / "by-root"))
    assert Settings().vault_root == (tmp_path / "by-root").resolve()
    monkeypatch.setenv("MEMO_VAULT", str(tmp_path / "by-vault"))
    assert Settings().vault_root == (tmp_path / "by-vault").resolve()


def test_a_list_variable_that_is_not_json_is_refused_naming_the_variable(config, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMO_CAPTURE_IGNORE", "secrets/*")
    with pytest.raises(InvalidFieldError) as caught:
        Settings(vault_root=tmp_path / "vault")
    assert caught.value.field == "captureIgnore"
    assert str(caught.value).startswith("Invalid captureIgnore: MEMO_CAPTURE_IGNORE must be JSON")
    monkeypatch.setenv("MEMO_CAPTURE_IGNORE", '["secrets/*"]')
    assert Settings(vault_root=tmp_path / "vault").capture_ignore == ["secrets/*"]


def test_one_key_spelled_two_ways_in_two_sources_is_one_key_in_nested_tables_too(config, tmp_path, monkeypatch):
    config.write_text('[operator]\nstalledMinutes = 10\nhorizonDays = 3\n[clients."Acme"]\nhourlyRate = "90"\n'
                      'currency = "EUR"\n')
    monkeypatch.setenv("MEMO_OPERATOR", '{"stalled_minutes": 99}')
    monkeypatch.setenv("MEMO_CLIENTS", '{"Acme": {"hourly_rate": "120"}}')
    settings = Settings(vault_root=tmp_path / "vault")
    assert (settings.operator.stalled_minutes, settings.operator.horizon_days) == (99, 3)
    assert (settings.billing_for("acme").hourly_rate, settings.billing_for("acme").currency) == (Decimal("120"), "EUR")


@pytest.mark.parametrize("name,value,key", [
    ("MEMO_CLIENTS", '{"Acme": {"hourlyRate": "abc"}}', "clients.Acme.hourlyRate"),
    ("memo_timezone", "Mars/X", "timezone"),
    ("MEMO_CAPTURE_IGNORE", "[" * 1500 + "]" * 1500, "captureIgnore"),
    ("MEMO_CAPTURE_IGNORE", "not json", "captureIgnore"),
    ("MEMO_PROJECT_CLIENTS", '{"Bad Slug!": "x"}', "projectClients"),
])
def test_memo_config_show_lists_a_refused_variable_and_goes_on_without_it(config, tmp_path, monkeypatch, name,
                                                                          value, key):
    """``memo config show`` explains a broken environment instead of failing: the refused variable
    is named (as it is spelled, any case) and left out; the file's value or the default applies."""
    from memo_analytics.config import settings_despite_problems

    config.write_text('timezone = "Europe/Berlin"\n')
    monkeypatch.setenv(name, value)
    settings, problems = settings_despite_problems(vault_root=tmp_path / "vault")
    assert [p.key for p in problems][:1] == [key] and problems[0].source == f"environment ({name})"
    assert settings.timezone == "Europe/Berlin" and settings.capture_ignore == [] and settings.clients == {}
    with pytest.raises((ValidationError, InvalidFieldError)):  # every other command refuses to run
        Settings(vault_root=tmp_path / "vault")
