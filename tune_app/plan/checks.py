"""The plan's checks of one experiment, each raising SpecError with its key path: what its
trainable reports, its search, its population, seeds and objectives, its dotted keys and its
concurrency. `tune_app.plan.make` runs them all and reports every problem at once."""

from __future__ import annotations

import math
import os
from typing import Any

from tune_app.errors import Collector, SpecError
from tune_app.kinds import TrainableKind
from tune_app.methods import (
    BRACKET_SEARCHERS,
    SCHEDULERS,
    SEARCHERS,
    names_where,
    scheduler_of,
    searcher_of,
)
from tune_app.methods.searchers import OPTUNA_CONSTRAINED, reads_constraints
from tune_app.objectives import describe
from tune_app.ray_internals import buffering
from tune_app.seeds import SEED_KEY
from tune_app.space import iter_domains
from tune_app.spec.resolved import Experiment


def check_reported(exp: Experiment, kind: TrainableKind, metric: str | None) -> None:
    """Keys a trainable never reports would silently never stop or rank anything."""
    keys = [(f"stop.{k}", k) for k in exp.stop]
    keys += [(f"expect.{k}", k) for k in exp.expect.metrics]
    keys += [(f"expect.smoke.{k}", k) for k in exp.expect.smoke]  # a --smoke run's bounds
    if metric is not None:
        keys.append(("metric", metric))
    keys += [(f"metric[{i}]", o.name) for i, o in enumerate(exp.objectives)]
    keys += [(f"constraints.{c.name}", c.name) for c in exp.constraints]
    time_attr = getattr(exp.scheduler, "time_attr", None)
    if time_attr is not None:
        keys.append(("scheduler.time_attr", time_attr))
    score = exp.checkpoint.checkpoint_score_attribute
    if score is not None:
        keys.append(("checkpoint_config.checkpoint_score_attribute", score))
    kind.check_reported(exp, keys)


def check_search(exp: Experiment) -> None:
    """What the searcher needs of the space: no grid axes, no domain it cannot sample, at least
    one sampled value."""
    entry = searcher_of(exp.search)
    domains = list(iter_domains(exp.config))
    errors = Collector()
    grid = (
        f"{entry.name} cannot search a grid_search axis",
        "use choice: [...] instead, or search: grid",
    )
    for path, domain in domains:
        if domain.is_grid and not entry.takes_grid:
            refused: tuple[str, str] | None = grid
        else:
            refused = entry.refuses(domain) if entry.refuses is not None else None
        if refused is not None:
            at = f"{exp.key_path}.config.{path}"
            errors.errors.append(SpecError(refused[0], path=at, suggestion=refused[1]))
    if entry.needs_sampled and not domains:
        errors.errors.append(
            SpecError(
                f"{entry.name} needs at least one sampled parameter in config",
                path=f"{exp.key_path}.search",
                suggestion="or use search: grid",
            )
        )
    errors.raise_any()


def check_population(exp: Experiment, kind: TrainableKind, warnings: list[str]) -> None:
    """PBT and PB2 copy checkpoints between trials: a trainable that saves none is never
    exploited, and a mutated key the trainable does not read changes nothing."""
    entry = scheduler_of(exp.scheduler)
    if not entry.population:
        return
    if not searcher_of(exp.search).generates_variants:
        allowed = names_where(SEARCHERS, lambda s: s.generates_variants)
        raise SpecError(
            f"scheduler {entry.name} runs with {' or '.join(allowed)} search only, not "
            f"{exp.search.type}: its population's exploits and explores are the search (Tune "
            "refuses a searcher beside it when the run starts)",
            path=f"{exp.key_path}.search",
            allowed=allowed,
            suggestion=f"write search: {allowed[-1]}",
        )
    kind.check_population(exp, warnings)


def check_result_buffer(exp: Experiment) -> None:
    """Tune buffers a trial's results only where nothing needs its checkpoint between them:
    never beside a scheduler that pauses trials or copies them, nor with checkpoints Tune takes
    every few iterations or at each trial's end (it turns its buffering off for those; a class
    that checkpoints at its end by Tune's default: the kind's `check_checkpoint_keys`)."""
    if not exp.buffered:
        return
    entry = scheduler_of(exp.scheduler)
    option = exp.scheduler.pauses
    if entry.pauses or entry.population or option:
        allowed = names_where(SCHEDULERS, lambda s: not (s.pauses or s.population))
        raise SpecError(
            f"scheduler {entry.name}{f' with {option}' if option else ''} pauses trials and "
            "resumes them from checkpoints, which Tune cannot do while a trial's results are "
            "buffered",
            path=f"{exp.key_path}.result_buffer",
            allowed=allowed,
            suggestion="remove result_buffer, or "
            + (f"change {option}" if option else f"use scheduler: {_or(allowed)}"),
        )
    for key, value in (
        ("checkpoint_at_end", exp.checkpoint.checkpoint_at_end),
        ("checkpoint_frequency", exp.checkpoint.checkpoint_frequency),
    ):
        if value:
            raise SpecError(
                f"Tune does not buffer the results of a trial it checkpoints ({key}: {value})",
                path=f"{exp.key_path}.checkpoint_config.{key}",
                suggestion=f"remove {key}, or remove result_buffer",
            )


def check_seeds(exp: Experiment, kind: TrainableKind) -> None:
    """The seeds axis passes each seed as config.seed: the trainable must read it, the config
    must not set it too, and the searcher must take repeated configurations."""
    if not exp.seeds:
        return
    where = f"{exp.key_path}.seeds"
    if SEED_KEY in exp.config:
        raise SpecError(
            "config.seed is set by the seeds axis; the config must not set it too",
            path=f"{exp.key_path}.config.seed",
            suggestion="remove config.seed, or remove seeds",
        )
    kind.check_seeds(exp)
    entry = searcher_of(exp.search)
    if entry.pairs_with is not None:
        others = names_where(SEARCHERS, lambda s: s.pairs_with is None)
        raise SpecError(
            f"search {entry.name} runs its own brackets and cannot judge a configuration by "
            "several seeds",
            path=where,
            suggestion=f"use search: {_or(others[::-1])} with seeds",
        )
    sampled = any(not d.is_grid for _, d in iter_domains(exp.config))
    if entry.takes_grid and exp.num_samples > 1 and not sampled:
        raise SpecError(
            f"num_samples {exp.num_samples} repeats every grid configuration on the same "
            f"seeds (nothing is sampled), so each seed would count {exp.num_samples} times",
            path=f"{exp.key_path}.num_samples",
            suggestion=f"leave num_samples out and write seeds: "
            f"{len(exp.seeds) * exp.num_samples} for more seeds",
        )
    if not scheduler_of(exp.scheduler).takes_seeds:
        raise SpecError(
            f"scheduler {exp.scheduler.type} copies single trials into others, so the seeds of "
            "a configuration would not stay one configuration",
            path=where,
            suggestion=f"use scheduler {_or(names_where(SCHEDULERS, lambda e: e.takes_seeds))} "
            "with seeds",
        )


def warn_unwatched_time(exp: Experiment, warnings: list[str]) -> None:
    """Tune checks `stop` only when a result arrives: `time_total_s` there never ends a trial
    that stops reporting, which only `result_timeout_s` fails."""
    if "time_total_s" in exp.stop and exp.result_timeout_s is None:
        warnings.append(
            f"{exp.key_path}.stop.time_total_s: checked only when a trial reports a result, so "
            "it never stops a trial that hangs; set result_timeout_s to fail a trial silent "
            "that long (time_budget_s bounds the whole search)"
        )


def warn_no_metric(exp: Experiment, metric: str | None, warnings: list[str]) -> None:
    """A search with no metric runs (Tune allows it), but nothing ranks its trials."""
    if metric is None and not exp.objectives:
        warnings.append(
            f"{exp.key_path}.metric: none set or declared by its trainable, so nothing ranks "
            "its trials: `best` finds no best one, `analyze` and `report` rank none, and a "
            "scheduler or search that needs one is refused; set metric: and mode: at the top of "
            f"the spec or in {exp.key_path}"
        )


def check_dotted_keys(exp: Experiment) -> None:
    """Results and readers name config values by dotted paths: a key `opt.lr` beside a nested
    `opt: {lr: ...}` would be two values under one name, each read as the other."""
    seen: set[str] = set()

    def walk(tree: Any, prefix: str) -> None:
        if not isinstance(tree, dict):
            return
        for key, value in tree.items():
            path = f"{prefix}{key}"
            if path in seen:
                raise SpecError(
                    f"'{path}' names two values: a key with a dot in it and a nested key",
                    path=f"{exp.key_path}.config.{path}",
                    suggestion="rename one of them (a key without dots, or nest both)",
                )
            seen.add(path)
            walk(value, f"{path}.")

    walk(exp.config, "")


def _period(text: str) -> bool:
    return text in ("", "auto") or (math.isfinite(float(text)) and float(text) >= 0)


# Tune's variables a user may set, with how Tune reads each (a ValueError or False refuses it) and
# what it allows: the app hands them to Tune, where a value it cannot read fails every experiment
# once Ray has started. Blank, the state period is the app's choice.
_TUNE_VARIABLES = (
    ("TUNE_GLOBAL_CHECKPOINT_S", _period, "auto, or seconds between state saves (0 or more)"),
    (buffering.LENGTH, int, "a whole number of results a call (1: one), or result_buffer: N"),
    (buffering.MIN_TIME, float, "seconds, a number, or result_buffer: N"),
    (buffering.MAX_TIME, float, "seconds, a number, or result_buffer: N"),
)


def check_tune_variables() -> None:
    """Each of `_TUNE_VARIABLES` the environment sets is one Tune can read."""
    for name, reads, allowed in _TUNE_VARIABLES:
        given = os.environ.get(name)
        if given is None:
            continue
        try:
            fine = reads(given) is not False
        except ValueError:
            fine = False
        if not fine:
            raise SpecError(
                f"the environment variable {name} is {given!r}, which Tune cannot read",
                allowed=allowed,
                suggestion="unset it to let the app choose",
            )


def check_concurrency(exp: Experiment, trials: int) -> None:
    """Tune's synchronous HyperBand halves a rung among the trials its bracket holds when the
    last of them reaches it. Under a concurrency limit a trial waiting at a rung still counts
    against the limit, so no later trial joins its bracket: each rung is "halved" among the few
    trials let in at once, and with a limit below the reduction factor no trial is ever stopped
    early. Measured with random search, max_t 9, 17 trials: 75 iterations in all without a
    limit, 153 (all 17 to max_t) with max_concurrent_trials 2. BOHB's HyperBand waits for its
    bracket to fill, and its searcher does not count waiting trials, so it is not affected."""
    limit, entry = exp.max_concurrent_trials, scheduler_of(exp.scheduler)
    if not entry.synchronous or exp.search.type in BRACKET_SEARCHERS or limit is None:
        return
    if limit >= trials:
        return  # every trial may be made at once: the limit changes nothing
    asynchronous = names_where(SCHEDULERS, lambda e: e.bounds_time and not e.synchronous)
    raise SpecError(
        f"max_concurrent_trials {limit} with scheduler {entry.name}: Tune's synchronous "
        f"{entry.name} halves each rung among the trials its bracket holds at that moment, and "
        f"the limit lets it hold {limit} of {trials}, so trials would not be stopped early",
        path=f"{exp.key_path}.max_concurrent_trials",
        suggestion=f"leave max_concurrent_trials out (trials that do not fit wait, and "
        f"{entry.name} resumes its paused ones), or use scheduler {_or(asynchronous)} "
        "(asynchronous: made for a fixed number of trials at once), or search "
        f"{_or(sorted(BRACKET_SEARCHERS))}",
    )


def _or(names: list[str]) -> str:
    """'a, b or c'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def warn_unread_constraints(exp: Experiment, warnings: list[str]) -> None:
    """A warning when the search samples without the constraints (they still keep a trial that
    breaks one off the front and from being best); none when it reads them or there are none."""
    if exp.constraints and not reads_constraints(exp.search):
        warnings.append(
            f"{exp.key_path}.constraints: search {exp.search.type} samples without them "
            f"(Optuna's {' or '.join(OPTUNA_CONSTRAINED)} sampler reads them); a trial that "
            "breaks one is still never best nor on the front"
        )


def check_objectives(exp: Experiment) -> None:
    """What a search of several objectives cannot have: a scheduler or searcher that compares
    trials by one metric, seeds (judged by one aggregate score), expect's bounds on the best
    trial, and a scope other than the last value (what Optuna is told of each trial)."""
    if not exp.objectives:
        return
    errors = Collector()
    shown = f"metric lists {len(exp.objectives)} objectives ({describe(exp.objectives)})"
    scheduler = scheduler_of(exp.scheduler)
    if scheduler.needs_metric:
        errors.errors.append(
            SpecError(
                f"scheduler {scheduler.name} stops or copies trials by one metric, but {shown}",
                path=f"{exp.key_path}.scheduler",
                allowed=names_where(SCHEDULERS, lambda e: not e.needs_metric),
                suggestion="leave scheduler out, or optimise one metric",
            )
        )
    searcher = searcher_of(exp.search)
    why = (
        f"search {searcher.name} learns from one metric"
        if searcher.objectives is None
        else searcher.objectives(exp.search)
    )
    if why is not None:
        errors.errors.append(
            SpecError(
                f"{why}, but {shown}",
                path=f"{exp.key_path}.search",
                allowed=names_where(SEARCHERS, lambda e: e.objectives is not None),
                suggestion="write search: {type: optuna, sampler: nsga2} (or tpe), random or grid",
            )
        )
    refusals = (
        (bool(exp.seeds), "seeds", "a configuration's seeds are judged by one aggregate score, "
         "and an aggregate front of several objectives is not there yet",
         "leave seeds out, or optimise one metric"),
        (bool(exp.expect.metrics), "expect", "expect's bounds are checked on the best trial, and "
         "several objectives have a front, not one best", "leave expect's metric bounds out"),
        (exp.scope != "last", "scope", f"scope {exp.scope}: each trial's objectives are its "
         "last values (what Optuna is told)", "leave scope out"),
    )  # fmt: skip
    for refused, key, reason, fix in refusals:
        if refused:
            errors.errors.append(
                SpecError(f"{reason}; {shown}", path=f"{exp.key_path}.{key}", suggestion=fix)
            )
    errors.raise_any()
