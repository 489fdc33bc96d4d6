"""``python -m golem`` is the ``golem`` command."""

from golem.cli import main

main()
