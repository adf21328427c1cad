"""Which searched parameters matter: how much each one explains of the trials' scores.

Three methods side by side: permutation importance over extremely randomized trees
(`permutation`, scikit-learn), and Optuna's fANOVA and PED-ANOVA evaluators
(`optuna_evaluators`); `run` gathers them for one experiment read back, as `analyze --format
json` and `report` show them. Ray-free; each library is imported only when an importance is
computed, and a missing one is a note saying how to get it.
"""

from tune_app.readback.importance.optuna_evaluators import EVALUATORS, Evaluated, evaluate
from tune_app.readback.importance.permutation import (
    MIN_TRIALS,
    Importance,
    Importances,
    importances,
)
from tune_app.readback.importance.run import (
    PERMUTATION,
    Kept,
    RunImportance,
    as_json,
    begun,
    of_run,
)

__all__ = [
    "EVALUATORS",
    "MIN_TRIALS",
    "PERMUTATION",
    "Evaluated",
    "Importance",
    "Importances",
    "Kept",
    "RunImportance",
    "as_json",
    "begun",
    "evaluate",
    "importances",
    "of_run",
]
