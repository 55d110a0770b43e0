"""The covered-minutes arithmetic behind the overlap policy (issue 15 point 5), checked against a
plain set of minutes on random spans: what a new span adds is exactly its uncovered minutes."""

from __future__ import annotations

import random

from memo_analytics.analytics.billed import _Covered


def test_new_minutes_and_uncovered_parts_equal_a_brute_force_set_of_minutes():
    rng = random.Random(15)
    for _ in range(300):
        covered, minutes = _Covered(), set()
        for _ in range(rng.randint(1, 30)):
            start = rng.randint(0, 200)
            end = start + rng.randint(0, 40)
            assert covered.new_minutes(start, end) == len(set(range(start, end)) - minutes)
            parts = covered.uncovered(start, end)  # what an invoiced session covers (the parts it billed)
            assert set().union(*(set(range(a, b)) for a, b in parts)) == set(range(start, end)) - minutes
            assert all(a < b for a, b in parts) and all(parts[i][1] < parts[i + 1][0] for i in range(len(parts) - 1))
            covered.add(start, end)
            minutes |= set(range(start, end))
            assert all(covered.ends[i] < covered.starts[i + 1] for i in range(len(covered.starts) - 1))
            assert sum(b - a for a, b in zip(covered.starts, covered.ends)) == len(minutes)


def test_an_invoiced_session_covers_what_it_billed_and_a_later_recorded_one_bills_nothing_twice():
    """A session on an issued invoice covers the minutes it billed: an earlier overlapping session
    keeps what it billed (the union is billed once, whole). When the vault changed since the
    invoice (a session recorded after it overlaps the invoiced one, which billed its whole span),
    the invoiced session covers its span: nothing it billed is billed again."""
    from memo_analytics.analytics.billed import _union_per_person

    early, late = ("v", "p", "early"), ("v", "p", "late")
    spans = [(early, 0, 30, 30, "ana"), (late, 10, 40, 30, "ana")]
    assert _union_per_person(spans, {}) == {early: 30, late: 10}
    assert _union_per_person(spans, {late: 10}) == {early: 30, late: 10}  # it was made of these sessions
    assert _union_per_person(spans, {late: 30}) == {early: 10, late: 30}  # early recorded after: not twice
    unknown = [(early, 0, 30, 30, None), (late, 10, 40, 30, None)]
    assert _union_per_person(unknown, {late: 10}) == {early: 30, late: 10}
