"""Permutation importance: how much each searched parameter explains of the trials' scores.

An ensemble of extremely randomized trees (scikit-learn's ExtraTreesRegressor) learns the score
from the searched parameters. A parameter's importance is how much the trees' fit (R²) drops
when that parameter's values are shuffled among the trials (permutation importance): a parameter
the score does not depend on stays near zero however many distinct values it has, where the
trees' impurity importances favour many values. Random split points keep a strong parameter
from crowding a weaker one out of the trees, as a random forest's best splits do with a few
dozen trials. Everything is seeded, so a report shows the same numbers each time. Ray-free;
scikit-learn is imported only when an importance is computed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from tune_app.extras import install_line, installed
from tune_app.rundir.records import TrialOutcome
from tune_app.scoring import finite
from tune_app.words import counted

MIN_TRIALS = 5  # fewer scored trials than this teach the trees nothing worth showing
TREES = 100  # scikit-learn's default; 200 doubled the fits of a large report for the same ranks
SHUFFLES = 10  # shuffles per parameter; their mean drop is its importance
FOLDS = 5  # for the cross-validated R² that says whether the parameters predict the score
SEED = 0
# More scored trials than this: every importance learns from a seeded sample of this many
# (`sample`). Its cost grows with the trials: a 10,000-trial report spent 21 s of its 37 here
# when the permutation took 1,000 trials and Optuna's evaluators every one.
MAX_TRIALS = 500


@dataclass(frozen=True)
class Importance:
    """One parameter's importance: its share of all the parameters' importance (the shares sum
    to 1) and the mean drop of the trees' R² when its values are shuffled."""

    param: str
    share: float
    drop: float


@dataclass(frozen=True)
class Importances:
    """The parameters' importances, most important first, or a note saying why there are none."""

    params: tuple[Importance, ...]  # empty when not computed
    trials: int  # the scored trials the trees learned from
    fit: float | None = None  # cross-validated R²: how well the parameters predict the score
    note: str = ""  # why nothing was computed, or what to keep in mind reading the numbers


def importances(
    trials: Sequence[TrialOutcome], params: Sequence[str], log_scaled: Collection[str] = ()
) -> Importances:
    """The importance of each of `params` (searched paths) to the score of `trials`.

    Only trials with a score count. Numbers are features as they are, their log10 for the
    parameters in `log_scaled` (the trees draw split points uniformly between the values);
    anything else is coded as ordered categories.
    """
    scored = scored_trials(trials)
    n = len(scored)
    why = too_little(scored, params)
    if why:
        return Importances((), n, note=why)
    if not installed("sklearn"):
        return Importances(
            (), n, note=f"Parameter importance needs scikit-learn: {install_line('importance')}."
        )
    scored = sample(scored)
    scores = [float(t.score) for t in scored if t.score is not None]
    columns = [_feature([t.params.get(p) for t in scored], p in log_scaled) for p in params]

    import numpy as np
    from sklearn.ensemble import ExtraTreesRegressor
    from sklearn.inspection import permutation_importance
    from sklearn.metrics import r2_score
    from sklearn.model_selection import KFold, cross_val_predict

    x = np.array(columns, dtype=float).T
    y = np.array(scores)
    trees = ExtraTreesRegressor(n_estimators=TREES, random_state=SEED, n_jobs=1)
    folds = KFold(min(FOLDS, len(scores)), shuffle=True, random_state=SEED)
    fit = float(r2_score(y, cross_val_predict(trees, x, y, cv=folds)))
    trees.fit(x, y)
    shuffled = permutation_importance(trees, x, y, n_repeats=SHUFFLES, random_state=SEED, n_jobs=1)
    drops = [max(float(d), 0.0) for d in shuffled.importances_mean]  # below 0: chance
    total = sum(drops)
    ranked = sorted(
        (Importance(p, d / total if total else 0.0, d) for p, d in zip(params, drops, strict=True)),
        key=lambda i: -i.share,
    )
    notes = []
    if len(scored) < n:
        notes.append(sample_words(n))
    if fit <= 0:
        notes.append(
            f"The parameters do not predict the score (cross-validated R² = {fit:.2f}): too few "
            "trials, or noise larger than any parameter's effect; read the shares with care."
        )
    if len(params) == 1:
        notes.append("Only one parameter was searched, so its share is 1 by construction.")
    return Importances(tuple(ranked), n, fit, " ".join(notes))


def sample(scored: Sequence[TrialOutcome]) -> list[TrialOutcome]:
    """A seeded sample of MAX_TRIALS of `scored`, in their order (all of them when fewer)."""
    import numpy as np

    if len(scored) <= MAX_TRIALS:
        return list(scored)
    keep = sorted(np.random.default_rng(SEED).choice(len(scored), MAX_TRIALS, replace=False))
    return [scored[i] for i in keep]


def sample_words(n: int) -> str:
    return f"Learnt from a random {MAX_TRIALS:,} of the {n:,} scored trials."


def scored_trials(trials: Sequence[TrialOutcome]) -> list[TrialOutcome]:
    """The trials with a finite score: the only ones any importance learns from."""
    return [t for t in trials if finite(t.score) is not None]


def too_little(scored: Sequence[TrialOutcome], params: Sequence[str]) -> str:
    """Why no importance can be learnt from the `scored` trials (`scored_trials`) over `params`;
    "" when it can."""
    scores = [float(t.score) for t in scored if t.score is not None]
    n = len(scores)
    if not params:
        return "No parameter was searched."
    if n < MIN_TRIALS:
        return (
            f"Only {counted(n, 'trial')} with a score: parameter importance needs at "
            f"least {MIN_TRIALS}."
        )
    if max(scores) == min(scores):
        return "Every trial has the same score: no parameter matters."
    return ""


def _feature(values: list[Any], log: bool) -> list[float]:
    """One parameter's values as numbers: finite numbers as they are (as their log10 with `log`,
    when all are positive), anything else (strings, lists, booleans, a value some trials lack)
    as the rank of its category."""
    numbers = [finite(v) for v in values]
    xs = [x for x in numbers if x is not None]
    if len(xs) == len(numbers):
        return [math.log10(x) for x in xs] if log and min(xs) > 0 else xs
    labels = [json.dumps(v, sort_keys=True, default=str) for v in values]
    by_label = dict(zip(labels, values, strict=True))
    try:
        order = sorted(by_label, key=lambda label: by_label[label])
    except TypeError:  # values that do not compare: by their text
        order = sorted(by_label)
    return [float(order.index(label)) for label in labels]
