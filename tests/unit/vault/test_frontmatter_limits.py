"""Frontmatter that could blow up the YAML loader is refused before it is loaded (SPEC §2.2): the
cheap first test lets a record's own dashes (timestamps, ids) through without walking its events,
and still catches every way of nesting deeper than the limit."""

from __future__ import annotations

import pytest

from memo_analytics.domain.errors import CorruptRecordError
from memo_analytics.vault.io import MAX_FRONTMATTER_DEPTH, _load_frontmatter, parse_record_text

DEEP = MAX_FRONTMATTER_DEPTH + 8


@pytest.mark.parametrize("fm", [
    "tags: " + "[" * DEEP + "]" * DEEP,
    "tags: " + "{a: " * DEEP + "1" + "}" * DEEP,
    "tags:\n" + "- " * DEEP + "x",
    "tags:\n" + "".join("  " * level + "-\n" for level in range(DEEP)) + "  " * DEEP + "x",
    "tags:\n" + "? " * DEEP + "x",
])
def test_nesting_deeper_than_the_limit_is_refused_however_it_is_written(fm):
    with pytest.raises(CorruptRecordError, match=f"nests deeper than {MAX_FRONTMATTER_DEPTH} levels"):
        _load_frontmatter(f"---\n{fm}\n---\nbody", "x.md")


def test_tabs_after_block_indicators_are_refused_too():
    with pytest.raises(CorruptRecordError):
        _load_frontmatter("---\ntags:\n" + "-\t" * DEEP + "x\n---\n", "x.md")


def test_anchors_and_aliases_are_refused():
    with pytest.raises(CorruptRecordError, match="anchors or aliases"):
        _load_frontmatter("---\na: &x [1]\nb: *x\n---\n", "x.md")


def test_a_record_with_many_dashes_loads():
    fm = ("id: prompt-claude-code-c8c9c331-63dc-5ebe-8946-74fb48328982-1-t1\ncreated: '2025-08-28T13:09:25.724Z'\n"
          "summary: fix the bug - then the docs - and the tests\nlinkedPaths:\n- a/b-c.py\n- d-e.md\n")
    meta, body = _load_frontmatter(f"---\n{fm}---\nthe body", "x.md")
    assert meta["summary"] == "fix the bug - then the docs - and the tests" and meta["linkedPaths"] == ["a/b-c.py", "d-e.md"]
    assert body == "the body"


@pytest.mark.parametrize("text, said", [
    ('---\nid: session-x\nkind: session\nproject: p\nstatus: active\nsummary: "unterminated\n---\nbody',
     "at line 7 (found unexpected end of stream, while scanning a quoted scalar from line 6)"),
    ("---\nid: session-x\nkind: session\n  project: p: q\nstatus: active\n---\nbody",
     "at line 4 (mapping values are not allowed in this context)"),
    ("---\n\n\nid: [a, b\nkind: x\n---\n", "at line 5 (did not find expected ',' or ']', while parsing a flow "
                                         "sequence from line 4)"),
])
def test_torn_yaml_is_named_by_the_line_of_the_file_where_it_breaks(text, said):
    """Found by a new user: a hand edit's torn YAML said "broken frontmatter (while parsing a
    block mapping)" and no line; lines count from the file's first (its ``---``)."""
    with pytest.raises(CorruptRecordError) as raised:
        _load_frontmatter(text, "x.md")
    assert str(raised.value) == f"Cannot parse x.md: broken frontmatter {said}"


SESSION = ("---\nid: session-s1\nkind: session\nproject: web\nstatus: completed\ncreated: '2026-03-02T09:00:00.000Z'\n"
           "updated: '2026-03-02T10:00:00.000Z'\nsessionId: s1\nstartTime: '2026-03-02T09:00:00.000Z'\n"
           "endTime: '2026-03-02T10:00:00.000Z'\ndurationMinutes: 60\nclient: null\nbillable: true\n{extra}---\n\nbody\n")


@pytest.mark.parametrize("extra, key", [
    ('"client": Evil Corp\n', "client"), ("'client': Evil Corp\n", "client"), ("client : Evil Corp\n", "client"),
    ("billable  : false\n", "billable"), ("? client\n: Evil Corp\n", "client"), ('"cl\\x69ent": Evil\n', "client"),
    ("deliverables:\n- type: pr\n  url: https://x/1\n  url: https://x/2\n", "url"),
], ids=["double-quoted", "single-quoted", "space", "spaced-bool", "explicit", "escaped", "nested"])
def test_a_key_given_twice_however_written_is_refused(extra, key):
    """Found by an attacker: only two alike unquoted keys at the start of a line were caught;
    a quoted, spaced, explicit or escaped second key, or one inside a deliverable, was read as
    its last line says."""
    with pytest.raises(CorruptRecordError, match=f"frontmatter names '{key}' twice"):
        parse_record_text(SESSION.format(extra=extra), "session-s1.md")


def test_a_key_given_twice_in_a_crlf_file_is_refused_and_alike_keys_of_sibling_items_are_not():
    crlf = SESSION.format(extra="").replace("\n", "\r\n").replace("client: null", "client:\r\nclient: Evil")
    with pytest.raises(CorruptRecordError, match="frontmatter names 'client' twice"):
        parse_record_text(crlf, "session-s1.md")
    for extra in ("deliverables:\n- type: pr\n  url: https://x/1\n- type: pr\n  url: https://x/2\n",
                  "summary: |\n  client: x\n  client: y\n"):
        assert parse_record_text(SESSION.format(extra=extra), "session-s1.md")[0]["id"] == "session-s1"
