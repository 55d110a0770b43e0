"""``python -m memo_analytics`` runs the ``memo`` command line."""

from .interfaces.launch import main

main()
