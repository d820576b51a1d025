"""Figures: PNG files written atomically; the numbers behind them."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch
from tests.reference.images import assert_png_has_content

from hardneg._io import atomic_write_bytes, atomic_write_text
from hardneg.figures import (
    hardest_negatives,
    plot_accuracy_curves,
    plot_hardest_negatives,
    plot_similarity_histograms,
    same_and_different_label_similarities,
    summarize_over_seeds,
)

PNG = b"\x89PNG\r\n\x1a\n"


def _only_png(folder: Path, name: str) -> None:
    assert_png_has_content(folder / name)  # a real picture: size, several colours, non-blank
    assert sorted(p.name for p in folder.iterdir()) == [name]  # no temp file left behind


def test_similarity_split_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    f = rng.normal(size=(23, 4))
    y = rng.integers(0, 3, size=23)
    same, diff = same_and_different_label_similarities(f, y, max_pairs=None, block_size=5)
    ref_same, ref_diff = [], []
    for i, j in itertools.combinations(range(23), 2):
        c = f[i] @ f[j] / np.linalg.norm(f[i]) / np.linalg.norm(f[j])
        (ref_same if y[i] == y[j] else ref_diff).append(c)
    np.testing.assert_allclose(np.sort(same), np.sort(ref_same), atol=1e-5)
    np.testing.assert_allclose(np.sort(diff), np.sort(ref_diff), atol=1e-5)
    sub, _ = same_and_different_label_similarities(f, y, max_pairs=10)
    assert sub.size == 10 and np.isin(sub, same).all()


def test_similarity_histograms_png(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(4), 20)
    runs = {"SimCLR": (rng.normal(size=(80, 8)), y), "HCL": (torch.randn(80, 8), torch.as_tensor(y))}
    out = plot_similarity_histograms(runs, tmp_path / "hist.png", bins=20)
    assert out == tmp_path / "hist.png"
    _only_png(tmp_path, "hist.png")


def test_accuracy_curves_png_and_summary(tmp_path: Path) -> None:
    results = {
        "hard": {0.0: [0.80, 0.82], 1.0: [0.84, 0.86], 2.0: [0.83]},
        "debiased": {0.0: [0.81], 1.0: [0.82]},
    }
    x, mean, std = summarize_over_seeds(results["hard"])
    assert x.tolist() == [0.0, 1.0, 2.0]
    np.testing.assert_allclose(mean, [0.81, 0.85, 0.83])
    np.testing.assert_allclose(std, [0.01, 0.01, 0.0], atol=1e-12)
    plot_accuracy_curves(results, tmp_path / "beta.png", xlabel="β", title="CIFAR-like")
    _only_png(tmp_path, "beta.png")
    with pytest.raises(ValueError, match="at least one"):
        summarize_over_seeds({1.0: []})


def test_hardest_negatives_selection() -> None:
    f = np.array([[1.0, 0.0], [0.2, 0.0], [0.9, 0.4], [-1.0, 0.0], [0.95, 0.0], [0.0, 1.0]])
    hard, rand = hardest_negatives(f, 0, num=3, exclude=[4], seed=0)
    assert hard.tolist() == [2, 1, 5]  # inner products 0.9, 0.2, 0.0 (4 excluded)
    assert len(set(rand.tolist())) == 3 and not {0, 4} & set(rand.tolist())
    # cosine: items 1 and 4 tie at 1.0 (stable order), then item 2 at 0.91
    assert hardest_negatives(f, 0, num=3, cosine=True)[0].tolist() == [1, 4, 2]
    with pytest.raises(ValueError, match=r"anchor_index must be in \[0, 6\), got 9"):
        hardest_negatives(f, 9)


@pytest.mark.parametrize("channels", [1, 3])
def test_hardest_negatives_png(tmp_path: Path, channels: int) -> None:
    images = torch.rand(30, channels, 8, 8)
    plot_hardest_negatives(images, torch.randn(30, 5), tmp_path / "hn.png", anchor_index=3)
    _only_png(tmp_path, "hn.png")


def test_atomic_writes_replace_and_clean_up(tmp_path: Path) -> None:
    target = tmp_path / "a" / "m.json"
    atomic_write_text(target, "{}")
    atomic_write_bytes(target, b"[1]")
    assert target.read_bytes() == b"[1]"

    with pytest.raises(TypeError):
        atomic_write_bytes(target, "text")  # type: ignore[arg-type]
    assert target.read_bytes() == b"[1]"
    assert sorted(p.name for p in target.parent.iterdir()) == ["m.json"]


def test_failed_figure_leaves_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hardneg._io as io_mod

    path = tmp_path / "fig.png"
    path.write_bytes(b"old")

    def broken_replace(src: str, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(io_mod.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        plot_accuracy_curves({"a": {1.0: [0.5]}}, path)
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.png"]
