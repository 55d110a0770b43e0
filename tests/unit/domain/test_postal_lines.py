"""An address as an invoice prints it: the town line(s) in the country's order (SPEC §5.1)."""

from __future__ import annotations

import pytest

from memo_analytics.domain.billing import ClientBilling


@pytest.mark.parametrize("fields, lines", [
    # found by a freelancer: a US address printed postcode first ("94105 San Francisco")
    ({"address": ["1 Market St", "Suite 200"], "city": "San Francisco", "region": "CA", "postcode": "94105",
      "country": "US"}, ["1 Market St", "Suite 200", "San Francisco, CA 94105", "United States"]),
    ({"address": ["Hauptstraße 1"], "city": "Berlin", "postcode": "10115", "country": "DE"},
     ["Hauptstraße 1", "10115 Berlin", "Germany"]),
    ({"address": ["10 Downing St"], "city": "London", "postcode": "SW1A 1AA", "country": "GB"},
     ["10 Downing St", "London", "SW1A 1AA", "United Kingdom"]),
    # found by an attacker: China's own order ran region and city together ("GuangdongShenzhen"),
    # the postcode first and the street last; an invoice in English takes the Latin order
    ({"address": ["8 Keyuan Road"], "city": "Shenzhen", "region": "Guangdong", "postcode": "518057", "country": "CN"},
     ["8 Keyuan Road", "Shenzhen", "Guangdong, 518057", "China"]),
    # Luxembourg's format writes "L-" itself: a postcode given with it is not printed L-L-2540
    ({"address": ["2 rue X"], "city": "Luxembourg", "postcode": "L-2540", "country": "LU"},
     ["2 rue X", "L-2540 Luxembourg", "Luxembourg"]),
    # found by a billing person: a Japanese address printed "100-0005 千代田区 東京都" after the street
    ({"address": ["丸の内1-9-1"], "city": "千代田区", "region": "東京都", "postcode": "100-0005", "country": "JP"},
     ["〒100-0005", "東京都千代田区", "丸の内1-9-1", "Japan"]),
    ({"address": ["1-9-1 Marunouchi"], "city": "Chiyoda-ku", "region": "Tokyo", "postcode": "100-0005",
      "country": "JP"}, ["1-9-1 Marunouchi, Chiyoda-ku, Tokyo", "100-0005", "Japan"]),
    ({"address": ["科苑路8号"], "city": "深圳市", "region": "广东省", "postcode": "518057", "country": "CN"},
     ["518057", "广东省深圳市", "科苑路8号", "China"]),
    ({"address": ["x"], "city": "Somewhere", "postcode": "123"}, ["x", "123 Somewhere"]),
])
def test_an_address_is_printed_in_its_countrys_order(fields, lines):
    assert ClientBilling(hourly_rate=1, currency="EUR", **fields).postal_lines() == lines
