"""Collection settings for the whole repository (``testpaths`` holds ``tests`` and ``src/hardneg``,
whose doctests run too).

``src/hardneg/engines/tiled/triton_lse.py`` imports triton, the ``gpu`` extra (``pip install
"hardneg[gpu]"``), which ``all`` does not install: without it that module's doctest collection is
skipped, as its tests are (``tests/engines/tiled/test_triton_lse.py``).
"""

from __future__ import annotations

import importlib.util

collect_ignore = [] if importlib.util.find_spec("triton") else ["src/hardneg/engines/tiled/triton_lse.py"]
