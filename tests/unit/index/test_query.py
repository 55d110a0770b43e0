import sqlite3

import pytest

from memo_analytics.index.query import clamp_page, fts_match_expression


@pytest.mark.parametrize(
    "given, expected",
    [((None, None), (20, 0)), ((0, -5), (1, 0)), ((500, 3), (100, 3)), ((50, 10), (50, 10)), (("7", " 2 "), (7, 2)),
     ((1e9, 2.0), (100, 2)), (("", ""), (20, 0))],
)
def test_limit_clamps_to_1_100_default_20_and_offset_to_non_negative(given, expected):
    assert clamp_page(*given) == expected


@pytest.mark.parametrize("given, field", [
    (("abc", None), "limit"), ((True, None), "limit"), (("1e9", None), "limit"), ((2.5, None), "limit"),
    ((float("inf"), None), "limit"), ((None, "x"), "offset"), ((None, False), "offset"), ((None, [1]), "offset"),
    (("\uff15", None), "limit"), ((None, "\u0663"), "offset"),  # digits of other scripts
])
def test_a_page_value_that_is_no_whole_number_is_refused_by_name(given, field):
    """`limit=abc` answered 20 items and `limit: true` one, as if asked: a mistyped value is refused."""
    from memo_analytics.domain.errors import InvalidFieldError

    with pytest.raises(InvalidFieldError, match=f"Invalid {field}: .* is not a whole number"):
        clamp_page(*given)


@pytest.mark.parametrize(
    "query, matches",
    [('"', None), ('C++', 1), ('AND', 1), ('a AND OR NOT b', 0), ('-x', 1), ('a:b', 1), ('(unbalanced', 1),
     ('x"y', 1), ('NEAR(a b)', 0), ('*', None), ('col:val^', 0), ("'quote'", 0), ('日本語の検索', 0)],
)
def test_any_typed_text_is_a_valid_fts5_query(query, matches):
    """Typed text is searched as words, never read as FTS5 syntax: no query is an error;
    ``AND``/``OR``/``NOT``/``NEAR``, ``-``, ``col:`` and quotes are words to find (``a AND OR
    NOT b`` needs ``or`` and ``not`` in the text; ``NEAR(a b)`` is not a's nearness to b);
    text without a letter or digit is no query at all (None)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61 remove_diacritics 2')")
    conn.execute("INSERT INTO t VALUES ('C and C++ code: a:b x\"y (unbalanced NEAR')")
    expression = fts_match_expression(query)
    assert (expression is None) == (not any(c.isalnum() for c in query))
    found = None if expression is None else conn.execute("SELECT count(*) FROM t WHERE t MATCH ?",
                                                         (expression,)).fetchone()[0]
    assert found == matches


def test_tokens_without_letters_leave_nothing_to_search():
    assert fts_match_expression("-- ** ()") is None
    assert fts_match_expression("   ") is None


def test_tokens_are_quoted_phrases_and_combined():
    assert fts_match_expression('say "hi"') == '"say" """hi"""'


def test_cjk_runs_become_overlapping_bigrams_and_latin_is_kept():
    from memo_analytics.index.query import fts_text

    assert fts_text("请查看飞书文档").split() == ["请查", "查看", "看飞", "飞书", "书文", "文档", "档"]
    assert fts_text("阅读readme now").split() == ["阅读", "读", "readme", "now"]


def test_cjk_query_is_a_phrase_of_bigrams_and_a_trailing_star_is_a_prefix():
    assert fts_match_expression("飞书文档") == '"飞书 书文 文档"'
    assert fts_match_expression("飞") == '"飞"*'
    assert fts_match_expression("decorat*") == '"decorat"*'
    assert fts_match_expression("a*b") == '"a*b"'
