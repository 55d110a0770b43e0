from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from memo_analytics.domain.clock import hours_2dp, minutes_between, parse_bounds, parse_instant, to_iso
from memo_analytics.domain.errors import InvalidDateError

UTC = timezone.utc


def test_stored_timestamps_are_utc_with_z_and_fixed_millis():
    assert to_iso(datetime(2026, 1, 5, 10, 0, tzinfo=ZoneInfo("Europe/Berlin"))) == "2026-01-05T09:00:00.000Z"


def test_naive_timestamp_is_read_in_the_given_zone():
    assert parse_instant("2025-11-28T23:30:00", "x", ZoneInfo("Asia/Shanghai")) == datetime(2025, 11, 28, 15, 30, tzinfo=UTC)


def test_offset_wins_over_zone():
    assert parse_instant("2026-01-05T09:30:00+02:00", "x", ZoneInfo("Asia/Tokyo")) == datetime(2026, 1, 5, 7, 30, tzinfo=UTC)


@pytest.mark.parametrize("bad", ["2026-13-45", "yesterday", "2026-02-30", "12/01/2026", "   ", None, "2025-W53",
                                 "2026-W54"])
def test_unparseable_since_raises_invalid_since_date(bad):
    with pytest.raises(InvalidDateError) as info:
        parse_bounds(since=bad if bad is not None else object())
    assert str(info.value).startswith("Invalid since date")


def test_unparseable_until_raises_invalid_until_date():
    with pytest.raises(InvalidDateError, match="^Invalid until date"):
        parse_bounds(until="2026-13-45")


def test_date_only_until_covers_the_whole_day_in_the_zone():
    bounds = parse_bounds("2026-01-05", "2026-01-05", ZoneInfo("Europe/Berlin"))
    assert bounds.since == datetime(2026, 1, 4, 23, 0, tzinfo=UTC)
    assert bounds.until_exclusive == datetime(2026, 1, 5, 23, 0, tzinfo=UTC)
    assert bounds.contains(datetime(2026, 1, 5, 22, 59, 59, tzinfo=UTC))
    assert not bounds.contains(datetime(2026, 1, 5, 23, 0, tzinfo=UTC))


@pytest.mark.parametrize("given, since, until", [
    ("2026-03", datetime(2026, 2, 28, 23, tzinfo=UTC), datetime(2026, 3, 31, 22, tzinfo=UTC)),  # CEST from 29 March
    ("2026", datetime(2025, 12, 31, 23, tzinfo=UTC), datetime(2026, 12, 31, 23, tzinfo=UTC)),
    ("2026-W05", datetime(2026, 1, 25, 23, tzinfo=UTC), datetime(2026, 2, 1, 23, tzinfo=UTC)),
    ("20260301", datetime(2026, 2, 28, 23, tzinfo=UTC), datetime(2026, 3, 1, 23, tzinfo=UTC)),
    ("2026-060", datetime(2026, 2, 28, 23, tzinfo=UTC), datetime(2026, 3, 1, 23, tzinfo=UTC)),
    ("2026-W09-7", datetime(2026, 2, 28, 23, tzinfo=UTC), datetime(2026, 3, 1, 23, tzinfo=UTC)),
])
def test_an_until_naming_a_year_month_week_or_day_covers_the_whole_of_it(given, since, until):
    """Found by an analyst: ``--since 2026-03 --until 2026-03`` was the instant 2026-03-01T00:00 (a
    period of one millisecond, 0 minutes without a word); ``--until 20260301`` alike."""
    bounds = parse_bounds(given, given, ZoneInfo("Europe/Berlin"))
    assert (bounds.since, bounds.until_exclusive) == (since, until)


def test_until_with_a_time_is_inclusive_of_that_instant():
    bounds = parse_bounds(None, "2026-01-05T10:00:00Z")
    assert bounds.contains(datetime(2026, 1, 5, 10, 0, tzinfo=UTC))
    assert not bounds.contains(datetime(2026, 1, 5, 10, 0, 0, 1000, tzinfo=UTC))


def test_duration_rounds_to_whole_minutes_half_up():
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    assert minutes_between(start, datetime(2026, 1, 5, 10, 30, 29, tzinfo=UTC)) == 90
    assert minutes_between(start, datetime(2026, 1, 5, 10, 30, 30, tzinfo=UTC)) == 91
    assert minutes_between(start, start) == 0


def test_hours_round_half_up_to_two_decimals():
    assert hours_2dp(20) == 0.33
    assert hours_2dp(35) == 0.58
    assert hours_2dp(980) == 16.33
    assert hours_2dp(3) == 0.05


def test_an_until_with_a_time_is_exclusive_from_the_next_millisecond():
    """Found by a billing person: ``--until …T09:00`` (Berlin) read ``"untilExclusive":
    "…T08:00:00.000Z"`` and yet held a session starting at 08:00:00.000Z (the bound was 1 µs
    later). Records are stored to the millisecond: the exclusive bound is the next one."""
    from zoneinfo import ZoneInfo

    bounds = parse_bounds("2026-02-01T12:00", "2026-02-10T09:00", ZoneInfo("Europe/Berlin"))
    assert bounds.until_iso == "2026-02-10T08:00:00.001Z"
    assert parse_bounds(None, "2026-02-10T08:00:00.0004Z").until_iso == "2026-02-10T08:00:00.001Z"
    assert parse_bounds(None, "2026-02-10").until_iso == "2026-02-11T00:00:00.000Z"


def test_a_period_bound_in_a_skipped_or_repeated_hour_is_refused_by_name():
    """Found by a tester of bad input: ``--since 2026-03-29T02:30`` in Europe/Berlin (an hour the
    clocks skipped) began the report at 01:30 UTC without a word, as a session's start is refused."""
    from zoneinfo import ZoneInfo

    from memo_analytics.domain.errors import InvalidFieldError

    berlin = ZoneInfo("Europe/Berlin")
    with pytest.raises(InvalidFieldError, match=r"Invalid since: 2026-03-29T02:30 did not exist in Europe/Berlin"):
        parse_bounds("2026-03-29T02:30", None, berlin)
    with pytest.raises(InvalidFieldError, match=r"Invalid until: 2026-10-25T02:30 happened twice in Europe/Berlin"):
        parse_bounds(None, "2026-10-25T02:30", berlin)
    assert parse_bounds("2026-03-29", "2026-10-25", berlin).since.isoformat() == "2026-03-28T23:00:00+00:00"
    assert parse_bounds("2026-10-25T02:30+02:00", None, berlin).since.isoformat() == "2026-10-25T00:30:00+00:00"


def test_a_record_time_out_of_range_says_the_range_not_the_form():
    """Found by a tester of bad input: ``--start-time 1900-01-01T00:00:00Z`` said "give a date as
    YYYY-MM-DD or a time as YYYY-MM-DDTHH:MM" of a value in that very form."""
    from memo_analytics.domain.clock import parse_record_instant
    from memo_analytics.domain.errors import InvalidDateError

    with pytest.raises(InvalidDateError, match=r"^Invalid startTime date: '1900-01-01T00:00:00Z' \(a record's time "
                                                r"lies between 1970 and 9000\)$"):
        parse_record_instant("1900-01-01T00:00:00Z", "startTime")
    with pytest.raises(InvalidDateError, match=r"\(give a date as YYYY-MM-DD"):
        parse_record_instant("nope", "startTime")
