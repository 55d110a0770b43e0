"""What a report template prints: a direction override a value carries (a transcript's summary,
an agent's text) is dropped, so it cannot reverse the cells and sentences printed after it."""

from __future__ import annotations

from markupsafe import Markup

from memo_analytics.reports.render import environment


def test_direction_controls_are_dropped_from_every_printed_value_and_the_letters_kept():
    template = environment().from_string("<td>{{ summary }}</td><td>{{ bank }}</td><td>{{ story }}</td>")
    printed = template.render(summary="fix \u202eproC\u202c login", bank="Commerz\u2067bank\u2069",
                              story=Markup("<p>\u202dsafe</p>"))
    assert printed == "<td>fix proC login</td><td>Commerzbank</td><td><p>safe</p></td>"
    assert environment().from_string("{{ name }}").render(name="<b>\u05e9\u05dc\u05d5\u05dd</b>") == (
        "&lt;b&gt;\u05e9\u05dc\u05d5\u05dd&lt;/b&gt;")  # still escaped; a right-to-left script kept as it is
