"""InfoGraph's local–global objective (Sun et al., ICLR 2020), negatives of your choice.

Hard, debiased and optimal-transport negatives for graph-level representations as in Robinson
et al. (ICLR 2021), §5.2 and App. B: every node of a batch of graphs scored against every graph
(:class:`InfoGraphLoss`, :func:`local_global_detailed`), and the authors' released loss with each
of its deviations from the paper a switch (:func:`released_local_global_loss`). Losses only: the
GIN encoder is :mod:`hardneg.models.gin`, the data :mod:`hardneg.data.graphs`, training the graph
modality of the pipeline (:mod:`hardneg.modalities.graphs`, ``hardneg train graphs``). Named by
its objective (as :mod:`hardneg.theory.jiang` by its paper); ``hardneg.graphs``, its old path, still
works with a ``DeprecationWarning`` until 0.4. Names are imported on first use.
"""

from __future__ import annotations

from hardneg._lazy import lazy_names

_WHERE = {
    "InfoGraphLoss": "hardneg.infograph.objective",
    "RELEASED_SWITCHES": "hardneg.infograph.released",
    "local_global_detailed": "hardneg.infograph.objective",
    "local_global_mask": "hardneg.infograph.objective",
    "local_global_pairs": "hardneg.infograph.objective",
    "released_local_global_loss": "hardneg.infograph.released",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_names(globals(), _WHERE)
