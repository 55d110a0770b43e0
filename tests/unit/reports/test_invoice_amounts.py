"""Invoice arithmetic (pure): half-up rounding to the currency's minor unit, exact decimals."""

from __future__ import annotations

from decimal import Decimal

import pytest

from memo_analytics.reports.invoice import format_money, line_amount, minor_unit


@pytest.mark.parametrize("hours, rate, currency, amount", [
    ("0.33", "120.00", "EUR", "39.60"),
    ("0.12", "95.55", "USD", "11.47"),     # 11.466 → half up
    ("0.10", "0.125", "EUR", "0.01"),      # 0.0125 → 0.01
    ("0.50", "0.125", "EUR", "0.06"),      # 0.0625 → 0.06
    ("1.00", "0.005", "EUR", "0.01"),      # exactly half a cent rounds up (a float would not)
    ("0.42", "9000", "JPY", "3780"),
    ("0.01", "50", "JPY", "1"),            # 0.5 yen → 1
    ("1.00", "10.0005", "KWD", "10.001"),  # three decimals
    ("0.00", "120.00", "EUR", "0.00"),
])
def test_a_line_amount_is_hours_times_rate_rounded_half_up_to_the_minor_unit(hours, rate, currency, amount):
    result = line_amount(Decimal(hours), Decimal(rate), currency)
    assert result == Decimal(amount) and str(result) == amount


def test_minor_units_and_printed_money():
    assert (minor_unit("EUR"), minor_unit("JPY"), minor_unit("BHD")) == (Decimal("0.01"), Decimal(1), Decimal("0.001"))
    assert format_money(Decimal("1234567.5"), "EUR") == "1,234,567.50"
    assert format_money(Decimal("3780"), "JPY") == "3,780"
    assert format_money(Decimal("10.001"), "KWD") == "10.001"


def test_the_printed_rate_is_the_rate_the_amounts_use():
    from decimal import Decimal

    from memo_analytics.reports.invoice import format_rate

    assert format_rate(Decimal("19.99"), "JPY") == "19.99"  # not rounded to 20 yen
    assert format_rate(Decimal("120"), "EUR") == "120.00"
    assert format_rate(Decimal("98.755"), "USD") == "98.755"


def test_the_rate_and_amount_columns_widen_for_figures_that_would_run_over_the_next():
    """A rate of 99,999,999.9999 printed over the amount beside it on an issued invoice (found by a
    helper): the columns keep their widths for usual figures and widen for long ones."""
    from memo_analytics.reports.invoice import AMOUNT_MM, RATE_MM, number_column_mm

    assert number_column_mm(["120.00", "140.00"], ["1,005.41", "190.95"], "EUR") == {"rate": RATE_MM,
                                                                                   "amount": AMOUNT_MM}
    wide = number_column_mm(["99,999,999.9999"], ["200,000,000.00", "742,000,000.00"], "EUR")
    assert wide["rate"] >= 15 * 2.0 and wide["amount"] >= len("EUR 742,000,000.00") * 2.0
