"""The Panel dashboard (SPEC §3.4): the app (``app.py``, served by ``memo serve`` and by
``panel serve dashboards/app.py``), one view per tab and the styles. Shipped in the wheel as
``memo_analytics.dashboards`` (``pyproject.toml``: ``[tool.setuptools.package-dir]``); its
data access is :mod:`memo_analytics.dashboard_data`."""
