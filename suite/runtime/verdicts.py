"""The convergence verdicts a record's ``convergence.verdict`` holds (``suite.training.convergence`` gives them; the
report reads them)."""

PLATEAUED = "plateaued"
STILL_LEARNING = "still learning"
TOO_FEW = "too few evaluations"
DIVERGED = "diverged"
NO_CURVE = "no curve"
NOT_TRAINED = "not trained"  # a model with nothing to learn (Lead-k), or weights only scored again: no curve to have
VERDICTS = (PLATEAUED, STILL_LEARNING, TOO_FEW, DIVERGED, NO_CURVE)
