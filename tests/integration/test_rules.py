"""Derived rules through the service, the CLI and the files (SPEC §5.3): traps, formats,
promotion into a managed block that never touches the person's own text, and precision
on hand-labelled candidates from the real transcripts."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from memo_analytics.domain.errors import InvalidFieldError
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import DeriveRulesRequest, RecordPromptRequest
from memo_analytics.services.rules import derive_rules
from memo_analytics.services.rules.promote import BLOCK_END, BLOCK_START
from memo_analytics.vault.io import read_record
from tests.integration.test_cli import memo, pdf_text

HAND_WRITTEN = """# CLAUDE.md

Our own notes for agents. Keep them.

- Use uv, not pip.
"""


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "web"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _say(store, *bodies, project="web", cwd=None):
    for i, body in enumerate(bodies, 1):
        record_prompt(store, RecordPromptRequest(body=body, project=project, session_id=f"s{i}", cwd=cwd))


def test_derive_rules_groups_repeats_and_returns_evidence(store):
    _say(store, "Never commit directly to main.", "ok, never commit directly to main!", "Always run the tests first.",
         "```\n# never do this in code\n```")
    result = derive_rules(store, DeriveRulesRequest(project="web"))
    assert result["total"] == 2
    top = result["items"][0]
    assert (top["text"], top["category"], top["confidence"], top["occurrences"]) == \
        ("Never commit directly to main.", "constraint", 0.95, 2)
    assert [e["id"] for e in top["evidence"]] == ["prompt-s1-t1", "prompt-s2-t1"]
    assert result["items"][1]["confidence"] == 0.85
    assert derive_rules(store, DeriveRulesRequest(project="web", min_confidence=0.9))["total"] == 1


def test_save_traps_keeps_only_confidence_at_least_08_with_id_severity_and_tags(store):
    _say(store, "Never commit directly to main.", "Always run the tests first.")
    saved = derive_rules(store, DeriveRulesRequest(project="web", save_traps=True))["savedTraps"]
    assert len(saved) == 2 and all(t.startswith("trap-derived-") for t in saved)
    meta, body = read_record(store.root / "projects" / "web" / "traps" / f"{saved[0]}.md")
    assert (meta["kind"], meta["severity"], meta["tags"]) == ("trap", "high", ["derived-rule", "constraint"])
    assert body.strip() == "Never commit directly to main."
    assert "Never commit directly to main." in (store.root / "projects" / "web" / "TRAPS.md").read_text()
    again = derive_rules(store, DeriveRulesRequest(project="web", save_traps=True))["savedTraps"]
    assert again == saved  # same ids: saving again updates, never duplicates
    assert len(list((store.root / "projects" / "web" / "traps").glob("*.md"))) == 2
    # below the threshold nothing is saved
    assert derive_rules(store, DeriveRulesRequest(project="web", save_traps=True, min_confidence=0.95)) \
        ["savedTraps"] == []


@pytest.mark.parametrize("fmt, marker", [("cursor", "### Constraint"), ("copilot", "## Rules derived from the team"),
                                         ("claude", "## Rules derived from your prompts"),
                                         ("gemini", "## Rules derived from your prompts"),
                                         ("markdown", "| Never commit directly to main. | constraint | 0.90 | 1 |")])
def test_each_format_renders_the_rules(store, fmt, marker):
    _say(store, "Never commit directly to main.")
    rules = derive_rules(store, DeriveRulesRequest(project="web", format=fmt))["formatted"]
    assert marker in rules and "Never commit directly to main." in rules


def test_the_candidates_are_also_answered_as_rules_under_spec_memo_names(store):
    """Agents written for spec-memo read ``rules`` (issue 13 point 6): the same candidates, each
    with ``rule`` (its text) and ``sourcePromptIds`` (its evidence turns) beside our fields."""
    _say(store, "Never commit directly to main.")
    result = derive_rules(store, DeriveRulesRequest(project="web"))
    assert [r["rule"] for r in result["rules"]] == [i["text"] for i in result["items"]] == ["Never commit directly to main."]
    [rule] = result["rules"]
    assert rule["sourcePromptIds"] == [e["id"] for e in rule["evidence"]] and rule["sourcePromptIds"]
    assert {k: v for k, v in rule.items() if k not in ("rule", "sourcePromptIds")} == result["items"][0]


def test_unknown_format_is_refused(store):
    with pytest.raises(InvalidFieldError, match="Invalid format: 'html' is not one of cursor"):
        derive_rules(store, DeriveRulesRequest(project="web", format="html"))


def test_promote_writes_a_managed_block_and_keeps_the_persons_text(store, repo):
    claude = repo / "CLAUDE.md"
    claude.write_text(HAND_WRITTEN, encoding="utf-8")
    _say(store, "Never commit directly to main.", cwd=str(repo))
    derive_rules(store, DeriveRulesRequest(cwd=str(repo), promote="CLAUDE.md"))
    first = claude.read_text(encoding="utf-8")
    assert first.startswith(HAND_WRITTEN) and BLOCK_START in first and first.rstrip().endswith(BLOCK_END)
    assert "- Never commit directly to main." in first
    # the person edits around the block; a re-promotion replaces only the block
    claude.write_text("Intro line.\n" + first + "\n## After\nMore of my own text.\n", encoding="utf-8")
    _say(store, "Always run the tests first.", "always run the tests first", cwd=str(repo))
    derive_rules(store, DeriveRulesRequest(cwd=str(repo), promote="CLAUDE.md"))
    second = claude.read_text(encoding="utf-8")
    before, rest = second.split(BLOCK_START, 1)
    block, after = rest.split(BLOCK_END, 1)
    assert before == "Intro line.\n" + HAND_WRITTEN + "\n"
    assert after == "\n\n## After\nMore of my own text.\n"
    assert "Always run the tests first." in block and "Never commit directly to main." in block
    assert second.count(BLOCK_START) == 1


def test_promote_into_a_new_cursor_rule_starts_with_front_matter(store, repo):
    _say(store, "Never commit directly to main.", cwd=str(repo))
    result = derive_rules(store, DeriveRulesRequest(cwd=str(repo), promote=".cursor/rules/derived.mdc"))
    text = (repo / ".cursor" / "rules" / "derived.mdc").read_text(encoding="utf-8")
    assert result["promoted"]["format"] == "cursor" and text.startswith("---\ndescription:")
    assert "alwaysApply: true" in text and "Never commit directly to main." in text


@pytest.mark.parametrize("destination, message", [
    ("README.md", "is not an agent instruction file"),
    ("src/CLAUDE.md", "is not an agent instruction file"),
    (".cursor/rules/x.txt", "is not an agent instruction file"),
    ("../CLAUDE.md", "is outside the product root"),
    ("/etc/CLAUDE.md", "is outside the product root"),
    (".cursor/rules/a\nb.mdc", "holds a control character"),  # it wrote a file named with a line break
    (".cursor/rules/a\x1b[2Jb.mdc", "holds a control character"),
])
def test_promote_refuses_files_outside_the_allow_list_and_writes_nothing(store, repo, destination, message):
    _say(store, "Never commit directly to main.", cwd=str(repo))
    before = sorted(repo.parent.rglob("*"))
    with pytest.raises(InvalidFieldError, match=f"Invalid promote: .*{message}"):
        derive_rules(store, DeriveRulesRequest(cwd=str(repo), promote=destination))
    assert sorted(repo.parent.rglob("*")) == before


def test_promote_refuses_hand_edited_markers(store, repo):
    (repo / "CLAUDE.md").write_text(f"mine\n{BLOCK_START}\nhalf a block\n", encoding="utf-8")
    _say(store, "Never commit directly to main.", cwd=str(repo))
    with pytest.raises(InvalidFieldError, match="markers were edited"):
        derive_rules(store, DeriveRulesRequest(cwd=str(repo), promote="CLAUDE.md"))
    assert (repo / "CLAUDE.md").read_text(encoding="utf-8") == f"mine\n{BLOCK_START}\nhalf a block\n"


def test_promote_needs_a_cwd_or_the_projects_last_seen_root(store, repo, tmp_path):
    _say(store, "Never commit directly to main.", project="api")  # no cwd: no lastSeenRoot
    with pytest.raises(InvalidFieldError, match="needs a cwd inside the product repository"):
        derive_rules(store, DeriveRulesRequest(project="api", promote="CLAUDE.md"))
    _say(store, "Never commit directly to main.", cwd=str(repo))  # project "web", seen at repo
    assert f'lastSeenRoot = "{repo}"' in (store.root / "projects" / "web" / "project.toml").read_text()
    result = derive_rules(store, DeriveRulesRequest(project="web", promote="CLAUDE.md"))
    assert result["promoted"]["path"] == str(repo / "CLAUDE.md")


def test_cli_report_rules_review_pdf_shows_candidates_and_evidence(tmp_path, repo):
    vault = tmp_path / "vault"
    for i, body in enumerate(["Never commit directly to main.", "never commit directly to main",
                              "Reject pull requests without tests."], 1):
        memo("prompt", "record", "--project", "web", "--session-id", f"c{i}", "--body", body, vault=vault)
    shown = memo("report", "rules", "--project", "web", "--save-traps", "-o", str(tmp_path / "review.pdf"),
                 vault=vault).stdout
    assert f"wrote {tmp_path / 'review.pdf'}: 2 rule candidates" in shown and "saved 2 traps" in shown
    assert "confidence" not in shown  # the table is in the report, not printed again
    text = pdf_text(tmp_path / "review.pdf")
    assert re.search(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d \(", text)  # as the timesheet says it: no raw ISO
    assert "Never commit directly to main." in text and "0.95" in text  # said twice: 0.90 + 0.05
    assert "c1" in text and "c2" in text and "Reject pull requests without tests." in text
    promoted = memo("report", "rules", "--project", "web", "--promote", "GEMINI.md", vault=vault, cwd=repo).stdout
    assert "promoted 2 rules" in promoted and "Never commit" in (repo / "GEMINI.md").read_text()


LABELS = Path(__file__).resolve().parents[1] / "data" / "rule_candidate_labels.tsv"


def _labels() -> dict[str, int]:
    rows = [line.split("\t") for line in LABELS.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")][1:]
    return {key: int(label) for label, _source, _note, key in rows}


def test_precision_on_hand_labelled_real_candidates(tmp_path, realdata):
    labels = _labels()
    assert len(labels) >= 50 and sum(labels.values()) >= 10
    vault = tmp_path / "vault"
    memo("import", "claude-code", str(realdata / "claude-code-jsonl"), vault=vault)
    memo("import", "specstory", str(realdata / "specstory-md"), vault=vault)
    memo("import", "codex", str(realdata / "codex-rollouts"), vault=vault)
    import json

    result = json.loads(memo("--json", "report", "rules", "--all", "--limit", "100", vault=vault).stdout)
    proposed = [item["key"] for item in result["items"]]
    unlabelled = [key for key in proposed if key not in labels]
    assert not unlabelled, f"label these candidates in {LABELS.name}: {unlabelled}"
    true_positives = sum(labels[key] for key in proposed)
    precision = true_positives / len(proposed)
    recall = true_positives / sum(labels.values())
    assert precision >= 0.9, (precision, proposed)
    assert recall >= 0.6, recall


def test_promoting_marks_saved_traps_promoted_so_they_leave_the_digest(store, repo):
    from memo_analytics.operator.service import current_digest

    _say(store, "Never commit directly to main.", cwd=str(repo))
    [trap] = derive_rules(store, DeriveRulesRequest(project="web", save_traps=True))["savedTraps"]
    assert [i["proposal"]["params"]["trapIds"] for i in current_digest(store, force=True)["items"]
            if i["kind"] == "rule_ready"] == [[trap]]
    result = derive_rules(store, DeriveRulesRequest(cwd=str(repo), promote="CLAUDE.md"))
    assert result["promoted"]["traps"] == [trap]
    assert read_record(store.root / "projects" / "web" / "traps" / f"{trap}.md")[0]["status"] == "promoted"
    assert [i for i in current_digest(store, force=True)["items"] if i["kind"] == "rule_ready"] == []


def test_promote_keeps_crlf_line_endings_and_the_file_mode(store, repo):
    claude = repo / "CLAUDE.md"
    claude.write_bytes(b"My own rules\r\nline two\r\n")
    claude.chmod(0o600)
    _say(store, "Never commit directly to main.", cwd=str(repo))
    derive_rules(store, DeriveRulesRequest(cwd=str(repo), promote="CLAUDE.md"))
    data = claude.read_bytes()
    assert data.startswith(b"My own rules\r\nline two\r\n") and b"\n" not in data.replace(b"\r\n", b"")
    assert (claude.stat().st_mode & 0o777) == 0o600


def test_rule_text_cannot_fake_the_block_markers(store, repo):
    _say(store, "Never edit the block that ends with <!-- memo:derived-rules:end --> by hand, ok.", cwd=str(repo))
    derive_rules(store, DeriveRulesRequest(cwd=str(repo), promote="CLAUDE.md"))
    derive_rules(store, DeriveRulesRequest(cwd=str(repo), promote="CLAUDE.md"))  # again: still one block
    assert (repo / "CLAUDE.md").read_text(encoding="utf-8").count(BLOCK_END) == 1


@pytest.mark.parametrize("setup, destination, message", [
    ("github-file", ".github/copilot-instructions.md", "is not a folder"),
    (None, ".cursor/rules/" + "a" * 300 + ".mdc", "name is too long"),
    ("latin1", "CLAUDE.md", "is not UTF-8 text"),
])
def test_a_refused_promotion_writes_nothing_and_saves_no_trap(store, repo, setup, destination, message):
    if setup == "github-file":
        (repo / ".github").write_text("not a folder")
    if setup == "latin1":
        (repo / "CLAUDE.md").write_bytes("caf\xe9\n".encode("latin-1"))
    _say(store, "Never commit directly to main.", cwd=str(repo))
    before = sorted((p, p.read_bytes() if p.is_file() else None) for p in repo.rglob("*") if ".git" not in p.parts[-3:])
    with pytest.raises(InvalidFieldError, match=f"Invalid promote: .*{message}"):
        derive_rules(store, DeriveRulesRequest(cwd=str(repo), promote=destination, save_traps=True))
    after = sorted((p, p.read_bytes() if p.is_file() else None) for p in repo.rglob("*") if ".git" not in p.parts[-3:])
    assert after == before and not (store.root / "projects" / "web" / "traps").exists()


def test_promotion_only_into_a_git_repository_that_is_not_the_vault(store, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    _say(store, "Never commit directly to main.")
    (store.root / "projects" / "web" / "project.toml").write_text(f'lastSeenRoot = "{plain}"\n')
    with pytest.raises(InvalidFieldError, match="is not a git repository"):
        derive_rules(store, DeriveRulesRequest(project="web", promote="CLAUDE.md"))
    subprocess.run(["git", "init", "-q", str(store.root)], check=True)
    (store.root / "projects" / "web" / "project.toml").write_text(f'lastSeenRoot = "{store.root}"\n')
    with pytest.raises(InvalidFieldError, match="is the vault"):
        derive_rules(store, DeriveRulesRequest(project="web", promote="CLAUDE.md"))
    assert not (plain / "CLAUDE.md").exists() and not (store.root / "CLAUDE.md").exists()


def test_promote_refuses_nothing_to_promote_and_cross_project_scope(store, repo):
    with pytest.raises(InvalidFieldError, match="Invalid promote: no rule of project web reaches 0.8"):
        derive_rules(store, DeriveRulesRequest(cwd=str(repo), promote="CLAUDE.md"))
    _say(store, "Never commit directly to main.", cwd=str(repo))
    with pytest.raises(InvalidFieldError, match="promotes the rules of one project"):
        derive_rules(store, DeriveRulesRequest(cwd=str(repo), cross_project=True, promote="CLAUDE.md"))
    assert not (repo / "CLAUDE.md").exists()
    assert derive_rules(store, DeriveRulesRequest(project="web"))["confident"] == 1


def test_rules_printed_in_a_format_are_alone_on_stdout_a_cursor_rule_whole(tmp_path):
    """`memo report rules --all --format cursor > rules.mdc` wrote the candidates' table into the
    file as well, and no front matter: stdout is the rules alone, what memo says is on stderr."""
    vault = tmp_path / "v"
    memo("prompt", "record", "--project", "web", "--body", "Never commit directly to main, open a PR.", vault=vault)
    ran = memo("report", "rules", "--all", "--format", "cursor", "--save-traps", vault=vault)
    assert ran.stdout.startswith("---\ndescription: Rules derived by memo") and "alwaysApply: true" in ran.stdout
    assert "- Never commit directly to main, open a PR." in ran.stdout
    assert "candidate" not in ran.stdout and "confidence" not in ran.stdout and "saved" not in ran.stdout
    assert "1 rule candidate; the rules as cursor on stdout" in ran.stderr and "saved 1 trap\n" in ran.stderr
    plain = memo("report", "rules", "--all", "--format", "claude", vault=vault).stdout
    assert plain.startswith("## Rules derived from your prompts")


def test_a_later_promotion_keeps_the_rules_promoted_before_into_the_same_file(store, repo):
    """Found by an attacker: ``--promote CLAUDE.md --since …`` rewrote the file's block with the new
    rule alone; the three promoted before vanished while their traps stayed ``promoted`` (never
    proposed again). The block keeps what was promoted into that file."""
    for n, body in enumerate(("Never commit directly to main.", "Always run the tests first."), 1):
        record_prompt(store, RecordPromptRequest(body=body, project="web", session_id=f"s{n}", cwd=str(repo),
                                                 created="2026-01-05T09:00:00Z"))
    derive_rules(store, DeriveRulesRequest(cwd=str(repo), save_traps=True, promote="CLAUDE.md"))
    record_prompt(store, RecordPromptRequest(body="Never use print statements for logging.", project="web",
                                             session_id="s9", cwd=str(repo), created="2026-06-01T09:00:00Z"))
    later = derive_rules(store, DeriveRulesRequest(cwd=str(repo), save_traps=True, promote="CLAUDE.md",
                                                   since="2026-05-01"))
    assert later["promoted"]["rules"] == 1
    text = (repo / "CLAUDE.md").read_text(encoding="utf-8")
    for rule in ("Never commit directly to main.", "Always run the tests first.", "Never use print statements"):
        assert rule in text


def test_an_edit_made_to_the_file_while_promoting_is_kept(store, repo, monkeypatch):
    """Found by an attacker: the file was read and merged, the traps saved, then the stale merge
    written — a line the person added meanwhile was lost. It is read again just before writing."""
    import memo_analytics.services.rules as rules

    (repo / "CLAUDE.md").write_text("# Team rules\n- keep it short\n", encoding="utf-8")
    _say(store, "Never commit directly to main.", cwd=str(repo))
    saving = rules.save_traps

    def meanwhile(*args, **kwargs):
        (repo / "CLAUDE.md").write_text("# Team rules\n- keep it short\n- IMPORTANT NEW LINE\n", encoding="utf-8")
        return saving(*args, **kwargs)

    monkeypatch.setattr(rules, "save_traps", meanwhile)
    derive_rules(store, DeriveRulesRequest(cwd=str(repo), save_traps=True, promote="CLAUDE.md"))
    text = (repo / "CLAUDE.md").read_text(encoding="utf-8")
    assert text.startswith("# Team rules\n- keep it short\n- IMPORTANT NEW LINE\n") and "Never commit directly" in text


def test_agents_md_and_a_claude_md_linked_to_it_take_the_rules_and_a_read_only_file_is_kept(store, repo):
    """Found by an attacker: the common ``CLAUDE.md -> AGENTS.md`` link was refused ("AGENTS.md is
    not an agent instruction file"), and a CLAUDE.md made read-only (0444) was replaced."""
    import os

    _say(store, "Never commit directly to main.", cwd=str(repo))
    (repo / "AGENTS.md").write_text("# Agents\n", encoding="utf-8")
    (repo / "CLAUDE.md").symlink_to("AGENTS.md")
    done = derive_rules(store, DeriveRulesRequest(cwd=str(repo), promote="CLAUDE.md"))
    assert done["promoted"]["path"] == str((repo / "AGENTS.md").resolve()) and (repo / "CLAUDE.md").is_symlink()
    assert (repo / "AGENTS.md").read_text(encoding="utf-8").startswith("# Agents\n")
    assert "Never commit directly to main." in (repo / "AGENTS.md").read_text(encoding="utf-8")
    (repo / "CLAUDE.md").unlink()
    (repo / "CLAUDE.md").write_text("# Frozen\n", encoding="utf-8")
    os.chmod(repo / "CLAUDE.md", 0o444)
    with pytest.raises(InvalidFieldError, match="is read-only"):
        derive_rules(store, DeriveRulesRequest(cwd=str(repo), promote="CLAUDE.md"))
    assert (repo / "CLAUDE.md").read_text(encoding="utf-8") == "# Frozen\n"


def test_one_projects_promotion_keeps_another_projects_rules_in_the_same_file(store, repo):
    """Found by an attacker: two projects recorded from one repository share its CLAUDE.md; the
    digest's promotion of the second project's rule rewrote the block with that rule alone, and
    the first project's three were gone (their traps still promoted). Saving traps again also
    turned promoted traps active, so a later promotion dropped them too."""
    from memo_analytics.operator.acting import apply_item
    from memo_analytics.operator.service import current_digest

    _say(store, "Never commit directly to main.", "Always run the tests first.", cwd=str(repo))
    derive_rules(store, DeriveRulesRequest(cwd=str(repo), save_traps=True, promote="CLAUDE.md"))
    derive_rules(store, DeriveRulesRequest(cwd=str(repo), save_traps=True))  # saved again: they stay promoted
    assert [i for i in current_digest(store, force=True)["items"] if i["kind"] == "rule_ready"] == []
    record_prompt(store, RecordPromptRequest(body="Always squash commits before merging.", project="other",
                                             session_id="o1", cwd=str(repo)))
    derive_rules(store, DeriveRulesRequest(project="other", save_traps=True))
    [item] = [i for i in current_digest(store, force=True)["items"] if i["kind"] == "rule_ready"]
    assert apply_item(store, item["id"], item["fingerprint"])["applied"] is True
    text = (repo / "CLAUDE.md").read_text(encoding="utf-8")
    for rule in ("Never commit directly to main.", "Always run the tests first.", "Always squash commits"):
        assert text.count(rule) == 1, text


def test_a_cut_or_empty_list_of_candidates_says_so(tmp_path):
    """Found by a new user: "21 rule candidates" above 20 rows said nothing of the 21st (listings
    say ``more: --offset 20``), and in a repository without turns the empty table gave no hint
    that only its project was read."""
    from tests.inprocess import memo as run

    sample = tmp_path / "d"
    run("demo", "--out", str(sample))
    shown = run("report", "rules", "--all", vault=sample / "vault").stdout
    assert "21 rule candidates" in shown and "… and 1 more: --limit 21" in shown
    repo = tmp_path / "fresh"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    empty = run("report", "rules", vault=sample / "vault", cwd=repo).stdout
    assert "0 rule candidates" in empty and "Projects: fresh (the current repository; --all for every project)" in empty
