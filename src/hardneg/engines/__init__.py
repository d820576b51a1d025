"""Every way the loss is computed, and the one chooser between them.

- :mod:`.dispatch`: :class:`~hardneg.engines.dispatch.PreparedLoss` (a loss's settings) and one
  entry per layout, which asks the chooser and runs the route;
- :mod:`.choice`: the chooser (:func:`~hardneg.engines.choice.choose_engine`,
  :func:`~hardneg.engines.choice.small_route`), on the thresholds of
  :data:`hardneg._numerics.thresholds.THRESHOLDS`;
- :mod:`.materialised`: the (A, N) score matrix, every distribution and objective;
- :mod:`.tiled`: the same without the matrix (tiles streamed), its fused Triton kernels;
- :mod:`.gathered`: only the A·K logits of K-subsampled negatives;
- :mod:`.small`, :mod:`.fused_node`: SimCLR's small batches by few operators, the debiased loss
  as one autograd node.

The chooser imports the engines; no engine imports the chooser or the dispatcher.
"""
