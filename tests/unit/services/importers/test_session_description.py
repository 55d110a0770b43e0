"""A session's description (issue 15 point 5): the transcript's title, else the first line of
its prompts that says what the work is."""

from __future__ import annotations

import pytest

from memo_analytics.services.describe import session_description


@pytest.mark.parametrize("title, prompts, expected", [
    (None, ["[Image #4]", "k, done", "proceed", "Fix the CSV export of invoices\nand test it"],
     "Fix the CSV export of invoices"),  # the real cases the issue names, skipped
    (None, ["[Image: source: /tmp/shot.png]", "[Pasted text #1 +40 lines]", "## Rework the login form"],
     "Rework the login form"),
    ("Fix the Cart Total", ["k"], "Fix the Cart Total"),
    (None, ["/code-review"], "/code-review"),  # a bare command when nothing says more
    (None, ["/code-review", "review the rounding of taxes"], "review the rounding of taxes"),
    (None, ["阅读readme"], "阅读readme"),  # no spaces in Chinese: not mistaken for a one-word reply
    (None, ["me ajude a resolver"], "me ajude a resolver"),
    (None, ["proceed", "ok", "Thanks!"], None),  # nothing but acknowledgements: no description
    (None, ["x" * 300], "x" * 119 + "…"),
])
def test_the_description_is_the_first_line_that_says_what_the_work_is(title, prompts, expected):
    assert session_description(title, prompts) == expected


def test_a_line_that_held_a_secret_is_no_description():
    """Found by a new user: an issued invoice's line read "Fix the login redirect loop …; my key
    is [REDACTED:anthropic-key]" — the session's summary was its first prompt's line, secret
    redacted but announced to the client. The next meaningful line describes it, else none."""
    assert session_description(None, ["Fix the login loop; my key is [REDACTED:anthropic-key]",
                                      "Also handle the expired token"]) == "Also handle the expired token"
    assert session_description(None, ["token=[REDACTED:secret-assignment] please deploy"]) is None
