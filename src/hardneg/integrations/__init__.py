"""Adapters that carry hardneg's negative distributions into other libraries' training loops.

* :mod:`hardneg.integrations.metric_learning` — a pytorch-metric-learning loss
  (``loss(embeddings, labels)``, with its miners, reducers and regularisers).
* :mod:`hardneg.integrations.sentence_transformers` — sentence-transformers losses used like
  ``MultipleNegativesRankingLoss`` and its cached (GradCache) variant.

Each module imports its library when it is imported; without it, the ImportError names the pip
extra that installs it. Nothing here is imported by ``import hardneg``.
"""
