"""The convergence verdicts a record's ``convergence.verdict`` holds (``suite.training.convergence`` gives them; the
report reads them)."""

PLATEAUED = "plateaued"
STILL_LEARNING = "still learning"
TOO_FEW = "too few evaluations"
DIVERGED = "diverged"
NO_CURVE = "no curve"
VERDICTS = (PLATEAUED, STILL_LEARNING, TOO_FEW, DIVERGED, NO_CURVE)
