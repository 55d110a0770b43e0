"""Reports: Jinja2 templates rendered to HTML and, with WeasyPrint, to PDF (SPEC §5)."""
