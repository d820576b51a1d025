"""The tiny graph run the graph tests share (2 epochs of 40 motif graphs; a test that needs other
values appends its overrides, which win)."""

TINY = [
    "data.graphs.num_graphs=40",
    "train.epochs=2",
    "train.batch_size=16",
    "train.threads=1",
    "train.progress=false",
    "eval.cv_folds=3",
    "eval.logistic=false",
    "eval.figures=false",
]
