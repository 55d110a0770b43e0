"""Attacks a security tester replayed: text planted in a transcript, a prompt or a teammate's
push, shaped against one regular expression, held a process for minutes — and, as Python's
``re`` holds the GIL, every request of ``memo serve`` or the team daemon meanwhile. Each now
takes time in proportion to its length. (Replayed attacks, not speed figures: each bound is
far above what the pass now takes, and far below what the code before took.)"""

from __future__ import annotations

import re
import time

import pytest

from memo_analytics.services.importers.claude_code import _between, _without_wrappers, classify_text
from memo_analytics.services.importers.cursor_export import _TITLE
from memo_analytics.services.importers.specstory import _SESSION_COMMENT
from memo_analytics.services.rules.extract import spoken_text
from memo_analytics.vault.redact import redact_secrets


def _quick(work, *args) -> object:
    began = time.perf_counter()
    result = work(*args)
    assert time.perf_counter() - began < 10, (work, len(args[0]))
    return result


@pytest.mark.parametrize("text", [
    "-u x\n" + "http " * 20_000,  # 100 KB: 35 s before
    "-u x\n" + "curl " * 20_000,
    "mysql " * 17_000,
    "docker login " * 8_000,
    "gh secret set " * 7_200,  # 51 s of a hook before
    "htpasswd -b " * 8_000,
    "curl x -u'" * 10_000,
])
def test_redaction_of_many_command_words_on_one_line(text):
    _quick(redact_secrets, text)


def test_the_command_forms_are_still_redacted():
    assert redact_secrets("curl -s https://x.example/api -u admin:s3cretPassw0rd")[0] == \
        "curl -s https://x.example/api -u admin:[REDACTED:cli-password]"
    assert redact_secrets("mysql -h db -u root -phunter22x")[0] == "mysql -h db -u root -p[REDACTED:cli-password]"
    assert redact_secrets("docker login -u ana --password s3cr3tpw registry.example")[0] == \
        "docker login -u ana --password [REDACTED:cli-password] registry.example"
    assert redact_secrets("gh secret set FOO --body hunter2hunter")[0] == \
        "gh secret set FOO --body [REDACTED:secret-assignment]"
    # forms that leaked (found by a breaker): no space after -u, a quoted password of words, -p'…', -p=…, -b"…",
    # htpasswd -b
    for said, hidden in (("curl -uadmin:S3cretPw https://x", "curl -uadmin:[REDACTED:cli-password] https://x"),
                         ("curl -u 'admin:Quoted Passw0rd' https://x",
                          "curl -u 'admin:[REDACTED:cli-password]' https://x"),
                         ("mysql -h db -p'QuotedDbPassw0rd' shop", "mysql -h db -p'[REDACTED:cli-password]' shop"),
                         ("docker login -p=S3cretPw registry", "docker login -p=[REDACTED:cli-password] registry"),
                         ('gh secret set K -b"hunter2hunter"', 'gh secret set K -b"[REDACTED:secret-assignment]"'),
                         ("htpasswd -b /etc/nginx/.htpasswd bob S3cretPw",
                          "htpasswd -b /etc/nginx/.htpasswd bob [REDACTED:cli-password]")):
        assert redact_secrets(said)[0] == hidden
    assert redact_secrets("htpasswd -c file bob")[0] == "htpasswd -c file bob"  # asks for it: nothing on the line


def test_rules_read_a_prompt_of_many_blank_lines():
    """``derive-rules`` over one turn of 100 KB of blank lines held the server 98 s."""
    for text in ("Never push to main.\n" + "\n" * 100_000 + "x", " \n" * 50_000, "-\n" * 50_000):
        _quick(spoken_text, text)
    assert "Never push to main." in spoken_text("\n\nNever push to main.\n")


def test_claude_codes_wrappers_left_unclosed():
    """300 KB of ``<system-reminder>`` in a planted transcript took 71 s to import."""
    text = "please help " + "<system-reminder>" * 60_000
    assert _quick(_without_wrappers, text) == text
    assert classify_text("<system-reminder>be nice</system-reminder>\n  fix the login") == ("prompt", "fix the login")
    assert _between("<command-name>/review</command-name><command-args>now</command-args>", "command-args") == "now"
    assert _quick(_between, "<command-name>" * 60_000, "command-name") is None


def test_specstory_session_comment_and_cursor_title_lines():
    """4,000 spaces after ``<!--`` took 52 s; a Cursor title line of 30 KB 6 s."""
    assert _quick(_SESSION_COMMENT.match, "<!--" + " " * 100_000 + "x") is None
    assert _SESSION_COMMENT.match("<!-- Claude Code Session 7e3c1a2b-0000 (2025-10-09 14:01:02Z) -->").group(
        "agent", "id", "stamp") == ("Claude Code", "7e3c1a2b-0000", "2025-10-09 14:01:02Z")
    assert _quick(_TITLE.match, "# a" + " " * 100_000 + "b").group("title").endswith("b")
    assert _TITLE.match("#   Fix the login  ").group("title") == "Fix the login"
    assert re.fullmatch(r"", _TITLE.match("# ").group("title"))
