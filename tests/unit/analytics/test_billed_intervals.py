"""The covered-minutes arithmetic behind the overlap policy (issue 15 point 5), checked against a
plain set of minutes on random spans: what a new span adds is exactly its uncovered minutes."""

from __future__ import annotations

import random

from memo_analytics.analytics.billed import _Covered


def test_new_minutes_equal_a_brute_force_set_of_minutes():
    rng = random.Random(15)
    for _ in range(300):
        covered, minutes = _Covered(), set()
        for _ in range(rng.randint(1, 30)):
            start = rng.randint(0, 200)
            end = start + rng.randint(0, 40)
            assert covered.new_minutes(start, end) == len(set(range(start, end)) - minutes)
            covered.add(start, end)
            minutes |= set(range(start, end))
            assert all(covered.ends[i] < covered.starts[i + 1] for i in range(len(covered.starts) - 1))
            assert sum(b - a for a, b in zip(covered.starts, covered.ends)) == len(minutes)
