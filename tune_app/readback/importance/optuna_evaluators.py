"""Optuna's fANOVA and PED-ANOVA importance evaluators over a run's scored trials.

The trials become an in-memory Optuna study (`create_study` and `add_trials`), each parameter's
distribution taken from the spec's search space (a `space.Domain`) and widened to every value a
trial holds, since Optuna refuses a trial outside its distribution; a parameter without a domain
(the spec could not be read) gets one from its values. fANOVA (Hutter et al. 2014) fits a random
forest to the scores and splits their variance into each parameter's main effect; PED-ANOVA
(Watanabe et al. 2023) measures how far the best trials' distribution of a parameter lies from
all trials'. Each is shown as shares that sum to 1. Seeded, so a report shows the same numbers
each time. Ray-free; Optuna (and scikit-learn, which fANOVA's forest needs) is imported only
when an importance is computed, and without it each evaluator's note says how to get it.
"""

from __future__ import annotations

import contextlib
import json
import math
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tune_app.errors import import_failure
from tune_app.extras import install_line, installed, reinstall_line
from tune_app.readback.importance.permutation import (
    MIN_TRIALS,
    SEED,
    sample,
    sample_words,
    scored_trials,
    too_little,
)
from tune_app.rundir.records import TrialOutcome
from tune_app.rundir.write import LOG_KINDS
from tune_app.scoring import finite
from tune_app.space import Domain, whole_number

# fANOVA's forest: Optuna's default (64 trees as deep as the data) took 7 s for 300 trials and
# 400 s for 3,000 (its trees' variances are summed in Python); 32 trees of depth 6 took under 2 s
# for 3,000, with the same ranking on synthetic searches and on LCBench (docs/results.md).
FANOVA_TREES = 32
FANOVA_DEPTH = 6
# PED-ANOVA compares the best trials with all: the best 10% (its default), but at least 5
# (its docs: "preferable to include at least 5 trials above target_quantile"), at most half.
PED_QUANTILE = 0.1
PED_MIN_BEST = 5
PED_MAX_QUANTILE = 0.5
# Kinds of `space.Domain` read as integers; the others of `space.RULES` as floats.
_INTEGER_KINDS = ("randint", "qrandint", "lograndint", "qlograndint")
_UPPER_EXCLUDED = ("randint", "lograndint")
_LISTS = ("choice", "grid_search")  # read as categories
_PACKAGE_NAMES = {"optuna": "Optuna", "sklearn": "scikit-learn"}


@dataclass(frozen=True)
class Evaluator:
    """One of Optuna's importance evaluators: its field in `analyze --format json`, its name on
    the report, the packages it imports, and how it is built for a study of n trials."""

    key: str
    label: str
    packages: tuple[str, ...]
    build: Callable[[int], Any]


def _fanova(n: int) -> Any:
    from optuna.importance import FanovaImportanceEvaluator

    return FanovaImportanceEvaluator(n_trees=FANOVA_TREES, max_depth=FANOVA_DEPTH, seed=SEED)


def _ped_anova(n: int) -> Any:
    from optuna.importance import PedAnovaImportanceEvaluator

    return PedAnovaImportanceEvaluator(target_quantile=ped_quantile(n))


def ped_quantile(n: int) -> float:
    """The share of `n` trials PED-ANOVA takes as the best ones."""
    return min(PED_MAX_QUANTILE, max(PED_QUANTILE, PED_MIN_BEST / n))


EVALUATORS: tuple[Evaluator, ...] = (
    Evaluator("fanova", "fANOVA", ("optuna", "sklearn"), _fanova),
    Evaluator("ped_anova", "PED-ANOVA", ("optuna",), _ped_anova),
)


@dataclass(frozen=True)
class Evaluated:
    """One evaluator's importances, most important first, or a note saying why there are none."""

    method: str  # an `Evaluator.key`
    shares: tuple[tuple[str, float], ...]  # (param, share); the shares sum to 1; empty: none
    trials: int  # the scored trials it learned from
    note: str = ""

    def share(self, param: str) -> float | None:
        return dict(self.shares).get(param)


def evaluate(
    trials: Sequence[TrialOutcome],
    params: Sequence[str],
    mode: str | None,
    domains: Mapping[str, Domain] | None = None,
    log_scaled: Collection[str] = (),
) -> tuple[Evaluated, ...]:
    """Each of `EVALUATORS` on the scored `trials` over `params` (searched paths), the better
    score the higher one under `mode` max; `domains` (searched path -> the spec's domain) give
    the distributions, `log_scaled` the log scale of a parameter without one."""
    scored = scored_trials(trials)
    why = too_little(scored, params)
    if why:
        return tuple(Evaluated(e.key, (), len(scored), why) for e in EVALUATORS)
    missing = {e.key: [p for p in e.packages if not installed(p)] for e in EVALUATORS}
    runnable = [e for e in EVALUATORS if not missing[e.key]]
    found: dict[str, Evaluated] = {}
    try:
        if runnable:
            with _quiet():
                some = sample(scored)
                found = _run(runnable, some, params, mode, domains or {}, log_scaled)
            if len(some) < len(scored):
                words = sample_words(len(scored))
                found = {
                    k: replace(e, note=" ".join(filter(None, [words, e.note])))
                    for k, e in found.items()
                }
    except ImportError as err:  # found but broken: a half-finished install, another Python's
        broken = (err.name or "optuna").partition(".")[0]
        note = (
            f"Optuna's evaluators could not import {broken} ({import_failure(err)}): reinstall "
            f"it: {reinstall_line(broken)}"
        )
        found = {e.key: Evaluated(e.key, (), len(scored), note) for e in runnable}
    return tuple(
        found.get(e.key) or Evaluated(e.key, (), len(scored), _needs(e, missing[e.key]))
        for e in EVALUATORS
    )


def _needs(evaluator: Evaluator, packages: list[str]) -> str:
    names = " and ".join(_PACKAGE_NAMES.get(p, p) for p in packages)
    return f"{evaluator.label} needs {names}: {install_line('importance')}."


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Optuna's log lines ("A new study created in memory") and warnings off, restored after:
    PED-ANOVA's ExperimentalWarning and its "quantiles select the same set of trials" have
    nothing for a reader of the report to act on."""
    import optuna

    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        optuna.logging.set_verbosity(verbosity)


def _run(
    evaluators: Sequence[Evaluator],
    scored: Sequence[TrialOutcome],
    params: Sequence[str],
    mode: str | None,
    domains: Mapping[str, Domain],
    log_scaled: Collection[str],
) -> dict[str, Evaluated]:
    import optuna

    axes = {
        p: axis(domains.get(p), [t.params.get(p) for t in scored], p in log_scaled) for p in params
    }
    study = optuna.create_study(direction="minimize" if mode == "min" else "maximize")
    study.add_trials([_trial(t, axes) for t in scored])
    # Optuna's evaluators learn only from the trials that hold every parameter.
    complete = sum(1 for t in study.trials if len(t.params) == len(params))
    if complete < MIN_TRIALS:
        note = (
            f"Only {complete} of {len(scored)} scored trials hold a value of every parameter: "
            f"Optuna's evaluators need at least {MIN_TRIALS}."
        )
        return {e.key: Evaluated(e.key, (), complete, note) for e in evaluators}
    found = {}
    for e in evaluators:
        raw = optuna.importance.get_param_importances(
            study, evaluator=e.build(complete), params=list(params), normalize=False
        )
        values = {p: max(float(v), 0.0) for p, v in raw.items()}
        total = sum(values.values())
        if not total:
            note = f"{e.label} finds no parameter that explains the scores."
            found[e.key] = Evaluated(e.key, (), complete, note)
            continue
        shares = sorted(((p, v / total) for p, v in values.items()), key=lambda s: -s[1])
        found[e.key] = Evaluated(e.key, tuple(shares), complete)
    return found


_ABSENT = object()  # a trial left without a parameter: its value does not fit its distribution


@dataclass(frozen=True)
class Axis:
    """One parameter as Optuna sees it: its distribution, and a trial's value as Optuna holds
    it (`_ABSENT`: the trial is left without this parameter)."""

    distribution: Any  # optuna.distributions.BaseDistribution
    encode: Callable[[Any], Any]


def axis(domain: Domain | None, values: Sequence[Any], log: bool = False) -> Axis:
    """The Optuna distribution of a searched parameter from its spec `domain` (from `values`
    alone without one, on a log scale with `log`), widened to hold every one of `values`.

    A log-scale parameter is handed over as its log10, uniform: Optuna's fANOVA integrates over
    a parameter's raw range (`transform_log=False`), where a learning rate searched in
    [1e-4, 0.1] spends 90% of its width in the last decade. On LCBench task 167168 it ranked
    num_layers above learning_rate (0.54 against 0.30, 100 trials) where the surrogate's own
    main effects are 0.23 and 0.46; in log10 it ranks them 0.21 and 0.68.
    """
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    numbers = [x for x in (finite(v) for v in values) if x is not None]
    domain = domain or _inferred(values, log)
    if domain.kind in _LISTS:
        choices = list(dict.fromkeys(_label(v) for v in (*domain.args, *values)))
        return Axis(CategoricalDistribution(choices), _label)
    kind, args = domain.tune_form()
    bounds = [] if kind in ("randn", "qrandn") else list(args[:2])  # normal: no bounds
    if kind in _UPPER_EXCLUDED:
        bounds[1] -= 1
    low, high = min([*bounds, *numbers], default=0.0), max([*bounds, *numbers], default=0.0)
    if kind in LOG_KINDS and low > 0:  # as its log10, uniform (see above)
        logs = FloatDistribution(math.log10(low), math.log10(high))
        return Axis(logs, lambda v: math.log10(v) if (finite(v) or 0) > 0 else _ABSENT)
    if kind in _INTEGER_KINDS:
        ints = IntDistribution(math.floor(low), math.ceil(high))
        return Axis(ints, lambda v: int(v) if whole_number(v) else _ABSENT)
    floats = FloatDistribution(float(low), float(high))
    return Axis(floats, lambda v: _ABSENT if finite(v) is None else float(v))


def _inferred(values: Sequence[Any], log: bool) -> Domain:
    """The domain a parameter's `values` suggest, when the spec's is not known: numbers (whole
    ones as integers) between the least and the greatest, on a log scale with `log`; anything
    else, or a mix, as categories. None is a trial without the parameter."""
    present = [v for v in values if v is not None]
    numbers = [x for x in (finite(v) for v in present) if x is not None]
    if not present or len(numbers) < len(present):
        return Domain("choice", tuple(present) or (None,))
    if all(whole_number(v) for v in present):
        return Domain("lograndint" if log else "randint", (min(present), max(present) + 1))
    return Domain("loguniform" if log else "uniform", (min(numbers), max(numbers)))


def _label(value: Any) -> Any:
    """A value as an Optuna category: itself when Optuna takes it (None, a bool, a number, a
    string), else its JSON text (a list, a mapping)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _trial(t: TrialOutcome, axes: Mapping[str, Axis]) -> Any:
    import optuna

    encoded = {p: a.encode(t.params.get(p)) for p, a in axes.items()}
    kept = {p: v for p, v in encoded.items() if v is not _ABSENT}
    return optuna.trial.create_trial(
        params=kept, distributions={p: axes[p].distribution for p in kept}, value=t.score
    )
