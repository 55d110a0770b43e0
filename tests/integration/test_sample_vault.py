"""``memo_analytics.sample_vault`` (the sample of ``memo demo`` for notebooks) and
``Vault.rule_candidates`` (derived-rule candidates as a frame, SPEC §5.3)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import polars as pl
import pytest

import memo_analytics as memo
from memo_analytics.api import RULE_SCHEMA


def files(root):
    return {p.relative_to(root): p.read_bytes() for p in (root / "projects").rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return memo.sample_vault(tmp_path_factory.mktemp("sample") / "vault")


def test_the_sample_is_the_same_week_of_march_2026_on_every_build(sample, tmp_path):
    again = memo.sample_vault(tmp_path / "again")
    assert files(again) == files(sample)
    with memo.open_vault(sample) as vault:
        sessions = vault.sessions()
    assert sessions["start_time"].min() == datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc)  # 09:00 Berlin
    assert sessions.height == 17 and sessions.filter(pl.col("status") == "active").height == 1


def test_the_sample_totals_are_those_of_memo_demo(sample):
    with memo.open_vault(sample) as vault:
        report = vault.activity(tz="Europe/Berlin")
    assert report.total_duration_minutes == 980 and report.total_billable_hours == 16.34
    assert {c: b["billableHours"] for c, b in report.by_client.items()} == {
        "Acme Corp": 5.5, "Globex": 7.42, "Initech": 3.42}


@pytest.mark.parametrize("mine", ["keep.txt", "projects/p/prompts/x.md"])
def test_sample_vault_refuses_a_folder_that_is_not_empty_and_touches_nothing(tmp_path, mine):
    (tmp_path / mine).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / mine).write_text("mine", encoding="utf-8")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(memo.InvalidFieldError, match="is not an empty folder"):
        memo.sample_vault(tmp_path)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert (tmp_path / mine).read_text(encoding="utf-8") == "mine"


def test_sample_vault_refuses_a_folder_inside_a_git_repository(tmp_path):
    (tmp_path / ".git").mkdir()
    with pytest.raises(memo.InvalidFieldError, match="inside the git repository"):
        memo.sample_vault(tmp_path / "vault")
    assert not (tmp_path / "vault").exists()


def test_rule_candidates_are_a_frame_of_the_documented_schema_by_confidence(sample):
    with memo.open_vault(sample) as vault:
        rules = vault.rule_candidates()
        prompt_ids = set(vault.prompts()["id"])
    assert rules.schema == pl.Schema(RULE_SCHEMA)
    assert rules.height == 21
    assert rules.rows() == rules.sort(["confidence", "occurrences", "key"], descending=[True, True, False]).rows()
    top = rules.row(0, named=True)
    assert top["text"] == "Always run the linter before you commit changes to invoices."
    assert (top["category"], top["confidence"], top["occurrences"]) == ("process", 0.95, 3)
    assert top["projects"] == ["acme-web", "internal-tools"]
    assert top["first_said"] == datetime(2026, 3, 5, 10, 15, tzinfo=timezone.utc)
    assert top["last_said"] == datetime(2026, 3, 6, 13, 55, tzinfo=timezone.utc)
    assert all(set(ids) <= prompt_ids and len(ids) == n for ids, n in rules.select("evidence", "occurrences").rows())
    assert dict(rules["category"].value_counts().rows()) == {
        "architecture": 1, "constraint": 11, "process": 8, "security": 1}


def test_an_instruction_said_twice_gains_005_and_pasted_output_is_no_instruction(sample):
    with memo.open_vault(sample) as vault:
        rules = vault.rule_candidates(project="acme-web")
    texts = dict(zip(rules["text"], rules.select("category", "confidence", "occurrences").rows()))
    assert texts["Every migration must be listed in the release notes."] == ("architecture", 0.9, 2)
    assert texts["Reject any dependency upgrade that is not pinned in the lockfile."] == ("security", 0.9, 1)
    assert not any("healthcheck" in t for t in texts)  # "never" inside a pasted log block
    assert {p for ps in rules["projects"] for p in ps} == {"acme-web"}


def test_rule_candidates_filter_by_confidence_and_time_and_write_nothing(sample):
    before = files(sample)
    with memo.open_vault(sample, timezone="Europe/Berlin") as vault:
        assert vault.rule_candidates(min_confidence=0.95).height == 6
        monday = vault.rule_candidates(since="2026-03-02", until="2026-03-02")
        empty = vault.rule_candidates(since="2027-01-01")
    assert monday.height > 0 and monday["last_said"].max() < datetime(2026, 3, 2, 23, tzinfo=timezone.utc)
    assert empty.height == 0 and empty.schema == pl.Schema(RULE_SCHEMA)
    assert files(sample) == before


def test_the_sample_reads_the_same_whatever_this_machines_config_says(sample, tmp_path, monkeypatch):
    """Found by a billing user: a client's ``roundingMinutes = 15`` in the config file turned the
    sample's 16.34 h into 16.67 h in ``memo demo`` and in the activity notebook, while the
    invoicing notebook (its own config) showed 7.42 h for Globex. The sample reads none of this
    machine's terms: ``memo demo`` and ``open_vault(…, config=False)``."""
    from tests.inprocess import memo as run

    config = tmp_path / "config.toml"
    config.write_text('timezone = "Asia/Tokyo"\n[clients.Globex]\nroundingMinutes = 15\nhourlyRate = "100"\n'
                      'currency = "EUR"\n', encoding="utf-8")
    monkeypatch.setenv("MEMO_CONFIG", str(config))
    with memo.open_vault(sample) as vault:  # your terms, on your vault
        assert vault.activity(tz="Europe/Berlin").by_client["Globex"]["billableHours"] == 7.75
    with memo.open_vault(sample, config=False, timezone="Europe/Berlin") as vault:
        report = vault.activity()
    assert report.total_billable_hours == 16.34 and report.by_client["Globex"]["billableHours"] == 7.42
    demo = json.loads(run("--json", "demo", "--out", str(tmp_path / "demo"), env={"MEMO_CONFIG": str(config)}).stdout)
    assert demo["activity"]["totalBillableHours"] == 16.34
    with pytest.raises(memo.InvalidFieldError, match="Invalid path: required with config=False"):
        memo.open_vault(config=False)
