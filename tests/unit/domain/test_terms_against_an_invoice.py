"""``differs_from_issued`` (vault-git ``termsDiffer``): how this machine's terms for a client
would bill otherwise than an issued invoice did — and nothing raised by a pulled file of any shape."""

from __future__ import annotations

import pytest

from memo_analytics.domain.billing import ClientBilling, differs_from_issued

ISSUED = {"kind": "invoice", "currency": "EUR", "taxCategory": "S", "taxRate": "19",
          "lines": [{"project": "web", "rate": "120.00", "unit": "HUR"}, {"project": "api", "rate": "140.00"},
                    {"project": "AI usage", "rate": "3.10", "unit": "C62"}]}


def terms(**fields) -> ClientBilling:
    return ClientBilling(**{"hourlyRate": "120", "currency": "EUR", "taxRate": "19",
                            "projectRates": {"api": "140"}, **fields})


def test_the_same_terms_differ_in_nothing_and_each_difference_is_named():
    assert differs_from_issued(ISSUED, terms(), union=True) == []
    assert differs_from_issued(ISSUED, terms(hourlyRate="95", currency="USD", minimumMinutes=30, taxRate=None),
                               union=False) == [
        "currency USD (the invoice: EUR)", "hourlyRate web 95 (the invoice: 120.00)",
        "rounding: each session is billed at least 30 minutes (the invoice: none)", "VAT E 0 % (the invoice: S 19 %)"]
    assert differs_from_issued(ISSUED, None, union=True) == ["no billing terms here"]
    assert differs_from_issued({**ISSUED, "kind": "creditNote"}, None, union=True) == []


@pytest.mark.parametrize("lines", ["abc", [1, None, "x"], [{"project": ["web"], "rate": "1"}],
                                   [{"project": "web", "rate": [1]}], {"project": "web"}])
def test_a_pulled_invoice_of_any_shape_is_compared_without_raising(lines):
    assert differs_from_issued({**ISSUED, "lines": lines}, terms(), union=True) == []
