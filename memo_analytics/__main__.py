"""``python -m memo_analytics`` runs the ``memo`` command line."""

from .interfaces.cli import main

main()
