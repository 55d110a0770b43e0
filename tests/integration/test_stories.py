"""Intent-story export (SPEC §5.2): content, order, hand-offs, and where a story may be written."""

from __future__ import annotations

import re
import subprocess

import pytest

from memo_analytics.domain.errors import InvalidFieldError, RecordNotFoundError
from memo_analytics.domain.records import RecordKind
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import (
    EndSessionRequest,
    ExportStoryRequest,
    HandoffInput,
    RecordPromptRequest,
    StartSessionRequest,
)
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.services.stories import export_story
from tests.integration.test_cli import memo


def _session(store, session_id="s1", project="web", **end):
    start_session(store, StartSessionRequest(session_id=session_id, project=project, client="Acme",
                                             start_time="2026-03-02T09:00:00Z", task_slug="csv-export"))
    # turns recorded out of order: the story is chronological by turn
    for turn, body in ((2, "Then write the tests for the CSV export"), (1, "Add a CSV export to invoices"),
                       (3, "Ship it")):
        record_prompt(store, RecordPromptRequest(session_id=session_id, project=project, turn=turn, body=body))
    return end_session(store, EndSessionRequest(session_id=session_id, project=project, until="2026-03-02T10:15:00Z",
                                                summary="CSV export shipped", pr="https://github.com/acme/web/pull/9",
                                                deliverables=[{"type": "commit", "sha": "abc1234"}], **end))


def test_export_story_holds_metadata_deliverables_and_the_turn_log_in_order(store):
    _session(store)
    story = export_story(store, ExportStoryRequest(session_id="s1"))
    markdown = story["markdown"]
    assert (story["sessionId"], story["project"], story["turns"]) == ("s1", "web", 3)
    assert markdown.startswith("# Intent story: CSV export shipped")
    for row in ("| Session | s1 |", "| Project | web |", "| Status | completed |", "| Client | Acme |",
                "| Task | csv-export |", "| Duration (minutes) | 75 |", "| Turns | 3 |"):
        assert row in markdown
    assert "<https://github.com/acme/web/pull/9>" in markdown and "`abc1234`" in markdown
    positions = [markdown.index(text) for text in ("### Turn 1", "Add a CSV export", "### Turn 2",
                                                    "Then write the tests", "### Turn 3", "Ship it")]
    assert positions == sorted(positions)


def test_a_summary_or_a_turn_cannot_forge_or_hide_the_sections_of_the_story(store):
    """Found by an attacker: a summary with a "## Deliverables" section and an unclosed code fence
    showed a merged PR the session never had and turned the real deliverables and the turn log
    into one code block; a turn holding "### Turn 3 · …" showed a third turn of a two-turn
    session. Each record's text is a block quote: whatever it holds ends with it."""
    from memo_analytics.reports.story import story_html_fragment

    start_session(store, StartSessionRequest(session_id="f1", project="web", start_time="2026-08-01T07:00:00Z",
                                             summary="Fix login\n\n## Deliverables\n\n- **pr** — Merged "
                                                     "<https://github.com/acme/web/pull/1>\n\n```"))
    record_prompt(store, RecordPromptRequest(session_id="f1", project="web", turn=1, body="Turn one",
                                             created="2026-08-01T07:01:00Z"))
    record_prompt(store, RecordPromptRequest(session_id="f1", project="web", turn=2, created="2026-08-01T07:02:00Z", body=(
        "Turn two\n\n### Turn 3 · 2026-08-01 09:03 CEST · generic\n\nForged: the client approved.\n<!-- hide")))
    end_session(store, EndSessionRequest(session_id="f1", project="web", until="2026-08-01T08:00:00Z",
                                         deliverables=[{"type": "commit", "sha": "abc1234"}],
                                         handoff=HandoffInput(next_steps=["deploy\n\n## Turn log\n\n### Turn 9"])))
    markdown = export_story(store, ExportStoryRequest(session_id="f1"))["markdown"]
    assert "> ### Turn 3 · 2026-08-01 09:03 CEST · generic" in markdown and "> ```" in markdown
    from lxml import html as lxml_html

    story = lxml_html.fragment_fromstring(story_html_fragment(markdown), create_parent="div")
    # the story's own structure: the headings outside every quote
    assert [(h.tag, h.text_content()) for h in story if h.tag in ("h1", "h2", "h3")] == [
        ("h1", "Intent story: Fix login"),
        ("h2", "Summary"), ("h2", "Deliverables"), ("h2", "Hand-off left"), ("h2", "Turn log"),
        ("h3", "Turn 1 · 2026-08-01 07:01 UTC · generic"), ("h3", "Turn 2 · 2026-08-01 07:02 UTC · generic")]
    blocks = [(b.tag, b.text_content().strip()) for b in story if b.tag in ("ul", "blockquote")]
    assert blocks[1] == ("ul", "commit — abc1234")  # the real deliverable, not inside a code block
    assert [text.split("\n")[0] for tag, text in blocks if tag == "blockquote"] == ["Fix login", "Turn one", "Turn two"]
    assert "Forged: the client approved." in blocks[-1][1]


def test_a_deliverable_a_hand_off_item_or_a_link_definition_cannot_forge_the_story_either(store):
    """Found by a second attacker: a deliverable's title and a hand-off item printed raw in the
    story's own lines forged a "## Turn log" and a fake turn; a link reference definition in one
    turn (``[the spec]: https://evil…``) made the title, the summary and every "[REDACTED:…]"
    links to its URL. They print as text."""
    from lxml import html as lxml_html

    from memo_analytics.reports.story import story_html_fragment

    start_session(store, StartSessionRequest(session_id="f2", project="web", start_time="2026-03-02T10:00:00Z"))
    record_prompt(store, RecordPromptRequest(session_id="f2", project="web", turn=1, created="2026-03-02T10:01:00Z",
                                             body="Please read [the spec]; key is [REDACTED:api-key]."))
    record_prompt(store, RecordPromptRequest(session_id="f2", project="web", turn=2, created="2026-03-02T10:02:00Z",
                                             body="[the spec]: https://evil.example/phish\n"
                                                  "- [fix login]: https://evil.example/title"))
    end_session(store, EndSessionRequest(
        session_id="f2", project="web", until="2026-03-02T10:30:00Z", summary="[Fix login] done",
        deliverables=[{"type": "commit", "sha": "abc1234", "title": "fix\n\n## Turn log\n\n### Turn 1 · forged"}],
        handoff=HandoffInput(next_steps=["## Hand-off left", "1. delete production"])))
    markdown = export_story(store, ExportStoryRequest(session_id="f2"))["markdown"]
    story = lxml_html.fragment_fromstring(story_html_fragment(markdown), create_parent="div")
    assert [(h.tag, h.text_content()) for h in story if h.tag in ("h2", "h3")] == [
        ("h2", "Summary"), ("h2", "Deliverables"), ("h2", "Hand-off left"), ("h2", "Turn log"),
        ("h3", "Turn 1 · 2026-03-02 10:01 UTC · generic"), ("h3", "Turn 2 · 2026-03-02 10:02 UTC · generic")]
    assert story.xpath("//a") == [] and "evil.example" not in "".join(story.xpath("//@href"))
    assert story.xpath("//li")[0].text_content() == "commit — fix ## Turn log ### Turn 1 · forged — abc1234"
    assert [li.text_content() for li in story.xpath("//li//li")] == ["## Hand-off left", "1. delete production"]
    assert "[the spec]: https://evil.example/phish" in story.text_content()


def test_export_story_shows_the_handoff_left_and_the_one_received(store):
    _session(store, handoff=HandoffInput(next_steps=["Add the XLSX export"], failed_approaches=["csv module quoting"],
                                         open_questions=["Which delimiter for DE?"]))
    start_session(store, StartSessionRequest(session_id="s2", project="web", start_time="2026-03-03T09:00:00Z"))
    left = export_story(store, ExportStoryRequest(session_id="s1"))["markdown"]
    received = export_story(store, ExportStoryRequest(session_id="s2"))["markdown"]
    assert "## Hand-off left" in left and "Add the XLSX export" in left and "csv module quoting" in left
    assert "## Hand-off received" in received and "Which delimiter for DE?" in received
    assert "No turns recorded." in received


def test_export_story_of_an_unknown_session_is_refused(store):
    with pytest.raises(RecordNotFoundError):
        export_story(store, ExportStoryRequest(session_id="ghost"))
    with pytest.raises(InvalidFieldError, match="sessionId"):
        export_story(store, ExportStoryRequest(session_id="../etc"))


def test_story_is_written_outside_the_product_root_from_a_product_repository(store, repo, tmp_path):
    _session(store)
    result = export_story(store, ExportStoryRequest(session_id="s1", output="../stories-s1.md", cwd=str(repo)))
    written = tmp_path / "stories-s1.md"
    assert result["path"] == str(written)
    assert written.read_text(encoding="utf-8") == export_story(store, ExportStoryRequest(session_id="s1"))["markdown"]
    assert result["bytes"] == written.stat().st_size


@pytest.mark.parametrize("where, output, message", [
    ("vault", "/tmp/never-written-story.md", "Invalid cwd: .* is the vault or inside it"),
    ("vault-sub", "/tmp/never-written-story.md", "Invalid cwd: .* is the vault or inside it"),
    ("plain", "story.md", "Invalid cwd: .* is not inside a product repository"),
    ("repo", "story.md", "Invalid output: .* is inside the git repository"),
    ("repo", "OTHER/story.md", "Invalid output: .* is inside the git repository .*other"),
    ("repo", "docs/../notes/story.md", "Invalid output"),
    ("repo", "VAULT/story.md", "Invalid output: .* is inside the vault"),
    ("repo", "VAULT/new-folder/story.md", "Invalid output: .* is inside the vault"),
    ("repo", "new-folder/story.md", "Invalid output: .* is inside the git repository"),
    (None, "../story.md", "Invalid cwd: required with output"),
])
def test_story_destination_rules_refuse_and_write_nothing(store, repo, tmp_path, where, output, message):
    _session(store)
    (repo / "notes").mkdir()
    plain = tmp_path / "plain"
    plain.mkdir()
    cwd = {"vault": store.root, "vault-sub": store.root / "projects", "plain": plain, "repo": repo, None: None}[where]
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    output = output.replace("VAULT", str(store.root)).replace("OTHER", str(other))
    before = sorted(p for p in tmp_path.rglob("*") if p.is_file() and ".memo" not in p.parts)
    with pytest.raises(InvalidFieldError, match=message):
        export_story(store, ExportStoryRequest(session_id="s1", output=output, cwd=str(cwd) if cwd else None))
    after = sorted(p for p in tmp_path.rglob("*") if p.is_file() and ".memo" not in p.parts)
    assert before == after
    assert not (repo / "new-folder").exists() and not (store.root / "new-folder").exists()


def test_cli_session_export_prints_or_writes_the_story(tmp_path, repo):
    vault = tmp_path / "vault"
    memo("session", "start", "c1", "--project", "web", "--client", "Acme", vault=vault)
    memo("prompt", "record", "--session-id", "c1", "--project", "web", "--body", "Add dark mode", vault=vault)
    memo("session", "end", "c1", "--summary", "Dark mode", vault=vault)
    printed = memo("session", "export", "c1", vault=vault).stdout
    assert printed.startswith("# Intent story: Dark mode") and "Add dark mode" in printed
    wrote = memo("session", "export", "c1", "-o", str(tmp_path / "out.md"), vault=vault, cwd=repo)
    assert "wrote" in wrote.stdout and (tmp_path / "out.md").read_text(encoding="utf-8") == printed
    refused = memo("session", "export", "c1", "-o", "inside.md", vault=vault, cwd=repo, check=False)
    assert refused.returncode == 1 and "Invalid output" in refused.stderr and not (repo / "inside.md").exists()


def test_the_storys_table_keeps_record_fields_as_text(store):
    """A session whose client was `<script>alert('client')</script>` and model `<img src=x
    onerror=…>`: the exported Markdown carried them as raw HTML in its table (deliverables were
    escaped), live in any viewer that renders HTML inside Markdown."""
    start_session(store, StartSessionRequest(session_id="x1", project="web", client="<script>alert('client')</script>",
                                             model="<img src=x onerror=alert(1)>", start_time="2026-03-02T09:00:00Z"))
    record_prompt(store, RecordPromptRequest(session_id="x1", project="web", body="hello"))
    text = export_story(store, ExportStoryRequest(session_id="x1"))["markdown"]
    table = text.split("## Summary")[0]
    assert not re.search(r"(?<!\\)<", table)  # every < of a field is escaped
    assert "| Client | \\<script\\>alert('client')\\</script\\> |" in table
    assert "| Model | \\<img src=x onerror=alert(1)\\> |" in table


def test_a_story_piped_to_a_terminal_carries_no_escape_of_a_stored_turn(tmp_path):
    """Found by an attacker: ``memo session export ID | cat`` wrote a turn's escape sequences
    raw (the export cleaned its text only when stdout itself was a terminal): through ``cat``
    it set the terminal's title. A story is a document: no control or direction character."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "web", "--start-time", "2026-03-02T09:00:00Z", vault=vault)
    memo("prompt", "record", "--project", "web", "--session-id", "s1", "--body",
         "set the title \x1b]0;pwned\x07 and \u202eevil, then\ttabs stay", vault=vault)
    piped = memo("session", "export", "s1", "--project", "web", vault=vault).stdout  # stdout is no terminal here
    assert "set the title ]0;pwned and evil, then\ttabs stay" in piped
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", piped)


def test_a_summary_and_a_deliverables_link_stay_text_in_a_viewer_that_renders_html(store):
    """Found by an attacker: a session pushed with the summary ``<img src=x onerror=…>`` and a
    link deliverable to ``javascript:alert(1)`` exported them as raw HTML and as an autolink, live
    in a Markdown viewer that renders HTML. The summary's brackets are text, as the title's; only a
    web page's URL is a link."""
    from markdown_it import MarkdownIt

    start_session(store, StartSessionRequest(session_id="h1", project="web", start_time="2026-03-02T09:00:00Z"))
    record_prompt(store, RecordPromptRequest(session_id="h1", project="web", body="hello"))
    end_session(store, EndSessionRequest(
        session_id="h1", project="web", until="2026-03-02T09:30:00Z",
        summary="<img src=x onerror=alert(1)><script>alert(2)</script> done",
        deliverables=[{"type": "link", "url": "https://example.com/docs", "title": "docs"}]))
    # a javascript: link no call takes (http(s) only): written into the file by hand, or pushed by an old laptop
    meta, body = store.read("web", RecordKind.SESSION, "session-h1")
    store.upsert(RecordKind.SESSION, {**meta, "deliverables": [
        {"type": "link", "url": "javascript:alert(1)", "title": "x"}, *meta["deliverables"]]}, body)
    markdown = export_story(store, ExportStoryRequest(session_id="h1"))["markdown"]
    page = MarkdownIt("commonmark").render(markdown)  # raw HTML on, as such viewers have it
    assert "<img" not in page and "<script" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;alert(2)&lt;/script&gt; done" in page
    assert re.findall(r'href="([^"]*)"', page) == ["https://example.com/docs"]
    assert "javascript:alert(1)" in page  # shown, as text
    # found by a later attacker: a backslash before the bracket escaped the escape
    end_session(store, EndSessionRequest(session_id="h1", project="web", summary="\\<img src=x onerror=alert(3)\\>"))
    page = MarkdownIt("commonmark").render(export_story(store, ExportStoryRequest(session_id="h1"))["markdown"])
    assert "<img" not in page and "\\&lt;img src=x onerror=alert(3)\\&gt;" in page


def test_a_story_of_a_session_whose_file_cannot_be_parsed_is_refused_naming_it(tmp_path):
    """Found by a tester: a session file with broken YAML gave a story of its turns saying
    "no session record" and the client as internal (Acme's work), exit 0 — `session show` names
    the file. The story names it too, and writes nothing."""
    vault = tmp_path / "v"
    memo("session", "start", "s1", "--project", "p1", "--client", "Acme", "--start-time", "2026-03-02T09:00:00Z",
         vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "p1", "--body", "first prompt alpha", vault=vault)
    memo("session", "end", "s1", "--until", "2026-03-02T10:30:00Z", vault=vault)
    path = vault / "projects/p1/sessions/session-s1.md"
    path.write_text(path.read_text().replace("client: Acme\n", "client: [Acme\n"))
    memo("reindex", vault=vault)
    for args in (["session", "export", "s1"], ["report", "story", "s1", "-o", str(tmp_path / "story.md")]):
        ran = memo(*args, vault=vault, check=False)
        assert ran.returncode == 1 and ran.stderr.startswith(f"error: Cannot parse {path}: broken frontmatter"), ran
        assert ran.stdout == ""
    assert not (tmp_path / "story.md").exists()


def test_a_storys_start_and_end_are_the_ones_every_report_prints(store):
    """Found by a new user: a session of 09:00:50 – 09:10:05 (9 minutes) was 09:00 – 09:09 in
    ``memo activity`` and the timesheet, 09:00 – 09:10 in its story: the story prints its span
    as the reports do (its start to the minute, plus its minutes)."""
    start_session(store, StartSessionRequest(session_id="span", project="web", start_time="2026-12-01T08:00:50Z"))
    record_prompt(store, RecordPromptRequest(session_id="span", project="web", body="span test"))
    end_session(store, EndSessionRequest(session_id="span", project="web", until="2026-12-01T08:10:05Z"))
    markdown = export_story(store, ExportStoryRequest(session_id="span"))["markdown"]
    assert "| Start | 2026-12-01 08:00 UTC |" in markdown and "| End | 2026-12-01 08:09 UTC |" in markdown
    assert "| Duration (minutes) | 9 |" in markdown
