"""``python -m hardneg``: the ``hardneg`` command, through the console script's entry point
(:mod:`hardneg._entry`: without the ``cli`` extra, one line names it)."""

from hardneg._entry import main

main()
