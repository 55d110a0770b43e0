"""The lean user-agent stylesheet keeps what reports use (lists, tables, line breaks)."""

from __future__ import annotations

import io

from pypdf import PdfReader

from memo_analytics.reports.render import _lean_html_class, render_pdf_bytes


def test_the_lean_sheet_is_in_use_and_lists_tables_and_breaks_still_render():
    assert _lean_html_class().__name__ == "LeanHTML"
    html = ("<ol><li>first item</li><li>second item</li></ol><table><tr><td>cell A</td><td>cell B</td></tr></table>"
            "<p>line one<br>line two</p>")
    text = PdfReader(io.BytesIO(render_pdf_bytes(html))).pages[0].extract_text()
    lines = [line.strip() for line in text.splitlines()]
    assert {"first item", "second item", "1.", "2.", "cell A cell B", "line one", "line two"} <= set(lines), lines
