"""``python -m hardneg.cli``: the ``hardneg`` command."""

from hardneg.cli import main

main()
