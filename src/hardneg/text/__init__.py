"""Text losses: quick-thoughts with a controllable negative distribution, and the supervised baseline.

:mod:`hardneg.text.quickthoughts` (Logeswaran & Lee, ICLR 2018, with the negatives of Robinson et
al., ICLR 2021, §5.3) and :mod:`hardneg.text.supervised` (Arora et al., ICML 2019, §8). They
import only the loss core; the text readers live in :mod:`hardneg.data.text`, the encoders in
:mod:`hardneg.models`, the training plug-ins in :mod:`hardneg.modalities`.
"""
