"""Content checks for figures: a PNG of the expected size that actually shows something."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def assert_png_has_content(
    path: Path, *, min_size: tuple[int, int] = (300, 200), min_colours: int = 8
) -> None:
    """The file is a PNG at least ``min_size`` pixels, with drawn (non-background) content.

    A blank or single-colour canvas fails: at least 1 % of the pixels must differ from the most
    common colour (the background) and the image must hold ``min_colours`` distinct colours.
    """
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    with Image.open(path) as img:
        assert img.width >= min_size[0] and img.height >= min_size[1], (path, img.size)
        pixels = np.asarray(img.convert("RGB")).reshape(-1, 3)
    colours, counts = np.unique(pixels, axis=0, return_counts=True)
    assert len(colours) >= min_colours, f"{path}: only {len(colours)} colours"
    assert 1.0 - counts.max() / counts.sum() > 0.01, f"{path}: almost only the background colour"
