"""The rounding policy (memo_analytics.domain.rounding): exact, deterministic, rows add up."""

from __future__ import annotations

from datetime import date, datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from memo_analytics.domain.clock import local_day_spans
from memo_analytics.domain.rounding import apportion, cents_to_hours, hours_cents, minutes_by_local_day

UTC = timezone.utc
BERLIN = ZoneInfo("Europe/Berlin")


@pytest.mark.parametrize("minutes, cents", [(0, 0), (1, 2), (2, 3), (3, 5), (20, 33), (35, 58), (115, 192),
                                            (145, 242), (980, 1633), (30, 50), (59, 98), (60, 100)])
def test_hours_cents_round_half_up_from_minutes(minutes, cents):
    assert hours_cents(minutes) == cents


def test_hours_cents_refuses_negative_minutes():
    with pytest.raises(ValueError):
        hours_cents(-1)


def test_cents_to_hours_prints_two_decimals():
    assert [cents_to_hours(c) for c in (242, 33, 100, 0)] == [2.42, 0.33, 1.0, 0.0]


def test_apportion_parts_add_up_where_naive_rounding_does_not():
    # three rows of 20 minutes: naive 0.33 + 0.33 + 0.33 = 0.99 ≠ 1.00
    assert apportion(100, [20, 20, 20]) == [34, 33, 33]
    # 110 + 35 minutes of a 2.42 h total: naive 1.83 + 0.58 = 2.41
    assert apportion(242, [110, 35]) == [184, 58]


def test_apportion_ties_go_to_the_larger_weight_then_the_earlier_position():
    assert apportion(1, [1, 3]) == [0, 1]
    assert apportion(2, [1, 1, 1]) == [1, 1, 0]


def test_apportion_gives_zero_weights_nothing_and_handles_nothing_to_share():
    assert apportion(5, [0, 1, 0, 1]) == [0, 3, 0, 2]
    assert apportion(0, [0, 0]) == [0, 0]
    assert apportion(0, []) == []
    with pytest.raises(ValueError):
        apportion(1, [0, 0])
    with pytest.raises(ValueError):
        apportion(1, [-1, 2])


def test_apportion_each_part_is_its_exact_share_rounded_down_or_up():
    weights = [7, 13, 1, 29, 50, 3, 97]
    total = 1001
    parts = apportion(total, weights)
    assert sum(parts) == total
    for part, weight in zip(parts, weights):
        exact = total * weight / sum(weights)
        assert int(exact) <= part <= int(exact) + 1


def test_local_day_spans_cut_at_local_midnight_and_add_up():
    start = datetime(2026, 3, 2, 22, 30, tzinfo=UTC)  # 23:30 in Berlin
    end = datetime(2026, 3, 3, 0, 15, tzinfo=UTC)  # 01:15 the next day
    spans = local_day_spans(start, end, BERLIN)
    assert [(d, s.total_seconds() / 60) for d, s in spans] == [(date(2026, 3, 2), 30), (date(2026, 3, 3), 75)]
    assert local_day_spans(end, start, BERLIN) == []


def test_a_session_across_midnight_splits_into_parts_that_add_up_to_its_duration():
    # 23:40:20 → 00:20:40 local: 19:40 before midnight, 20:40 after; 40 minutes (40:20 half up)
    start = datetime(2026, 1, 5, 22, 40, 20, tzinfo=UTC)
    end = datetime(2026, 1, 5, 23, 20, 40, tzinfo=UTC)
    parts = minutes_by_local_day(start, end, 40, BERLIN)
    assert parts == [(date(2026, 1, 5), 20), (date(2026, 1, 6), 20)]
    # 10 minutes with 30 s before midnight: shares 0.5 and 9.5, the tie goes to the longer part
    parts = minutes_by_local_day(datetime(2026, 1, 5, 22, 59, 30, tzinfo=UTC), datetime(2026, 1, 5, 23, 9, 30,
                                                                                        tzinfo=UTC), 10, BERLIN)
    assert parts == [(date(2026, 1, 5), 0), (date(2026, 1, 6), 10)]


def test_a_session_over_several_days_and_a_kept_duration_are_apportioned_exactly():
    start = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
    end = datetime(2026, 1, 7, 12, 0, tzinfo=UTC)  # 13:00 on the 5th to 13:00 on the 7th in Berlin
    parts = minutes_by_local_day(start, end, 2880, BERLIN)
    assert parts == [(date(2026, 1, 5), 660), (date(2026, 1, 6), 1440), (date(2026, 1, 7), 780)]
    # a duration that is not end − start (kept on re-end) is shared in the same proportions
    kept = minutes_by_local_day(start, end, 7, BERLIN)
    assert sum(m for _, m in kept) == 7 and kept == [(date(2026, 1, 5), 2), (date(2026, 1, 6), 3), (date(2026, 1, 7), 2)]


def test_the_daylight_saving_night_is_a_23_hour_day():
    start = datetime(2026, 3, 28, 23, 0, tzinfo=UTC)  # 00:00 on the 29th in Berlin (CET)
    end = datetime(2026, 3, 29, 23, 0, tzinfo=UTC)  # 01:00 on the 30th (CEST)
    parts = minutes_by_local_day(start, end, 1440, BERLIN)
    assert parts == [(date(2026, 3, 29), 1380), (date(2026, 3, 30), 60)]


def test_an_open_or_empty_session_lands_on_its_start_day():
    start = datetime(2026, 1, 5, 23, 30, tzinfo=UTC)
    assert minutes_by_local_day(start, None, 0, BERLIN) == [(date(2026, 1, 6), 0)]
    assert minutes_by_local_day(start, start, 0, UTC) == [(date(2026, 1, 5), 0)]
