"""The numerics shared by every engine: log-sum-exps (:mod:`.lse`), cached constants
(:mod:`.constants`) and the one table of size thresholds (:mod:`.thresholds`). Imports torch only."""
