"""Frontmatter that could blow up the YAML loader is refused before it is loaded (SPEC §2.2): the
cheap first test lets a record's own dashes (timestamps, ids) through without walking its events,
and still catches every way of nesting deeper than the limit."""

from __future__ import annotations

import pytest

from memo_analytics.domain.errors import CorruptRecordError
from memo_analytics.vault.io import MAX_FRONTMATTER_DEPTH, _load_frontmatter

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
