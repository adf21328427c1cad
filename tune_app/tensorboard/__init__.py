"""TensorBoard for runs: per-trial scalars in groups, HParams from each trial's start (the server
is `tune_app.tensorboard.server`).

Each trial folder holds one events file, written by `TrialBoard` in place of Tune's TensorBoard
logger. Its scalars come in TensorBoard groups (a tag's prefix before the first `/`): first the
keys the spec names (metric, stop, expect), then every other group by name: RLlib's own
(`env_runners`, `learners`, ...), `metrics` for top-level keys, `tune_app/score`. Tune's
bookkeeping keys and RLlib's timers are left out unless the spec's `tensorboard.include` asks
for them. On the HParams tab each trial is a row from the moment it starts, named by its trial
number, with its searched parameters, its status and its last metric values.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ray.tune.logger import LoggerCallback

from tune_app import scoring
from tune_app.callbacks import located
from tune_app.config_keys import restore_private_keys
from tune_app.divergence import diverged
from tune_app.interrupts import stops_on_write_error
from tune_app.rundir.files import jsonable, read_rows
from tune_app.rundir.layout import flatten, latest_results
from tune_app.seeds import SEED_KEY
from tune_app.space import Domain, iter_domains, value_at
from tune_app.tensorboard import hparams as hp
from tune_app.tensorboard.events import EventWriter, ended_in_events

if TYPE_CHECKING:
    from ray.tune.experiment import Trial

    from tune_app.plan.types import ExperimentPlan
    from tune_app.rundir.location import RunLocation

# TensorBoard orders groups by name, digits before letters, and opens the first two: the group
# of the spec's keys starts with one so it comes first.
SPEC_GROUP = "0_spec"
OTHER_GROUP = "metrics"  # the group of top-level keys (a key without `/` would be a group alone)
SCORE_TAG = "tune_app/score"  # the trial's score under the experiment's scope
# Keys Tune adds to every result that say nothing about the trial's progress (the step is the
# x axis already); shown only when the spec names them or `include` asks for them.
BOOKKEEPING = (
    "done",
    "should_checkpoint",
    "training_iteration",
    "iterations_since_restore",
    "time_since_restore",
    "timesteps_since_restore",
    "timestamp",
    "pid",
    "date",
    "hostname",
    "node_ip",
    "trial_id",
    "experiment_tag",
    "checkpoint_dir_name",
)
# RLlib's timers (about 30 keys of a PPO result): its `timers` group, the `timers` inside its
# connector pipelines, and the `*_timer` keys of its env runners and learners.
TIMERS = ("timers", "*/timers/*", "*_timer")
# Samplers drawing from [lower, upper] (give or take the upper bound) show as a range filter.
_INTERVALS = (
    "uniform",
    "quniform",
    "loguniform",
    "qloguniform",
    "randint",
    "qrandint",
    "lograndint",
    "qlograndint",
)


def matches(key: str, patterns: Iterable[str]) -> bool:
    """Whether a result key (`a/b/c`) is one of `patterns`: the key, a group prefix of it
    (`a`, `a/b`) or a glob matching it (`*` spans `/`)."""
    for pattern in patterns:
        prefix = pattern if pattern.endswith("/") else pattern + "/"
        if key == pattern or key.startswith(prefix) or fnmatch.fnmatchcase(key, pattern):
            return True
    return False


@dataclass(frozen=True)
class TagLayout:
    """Which result keys an experiment's trials show in TensorBoard, and under which tags.

    `named` are the spec's keys, always shown, in the first group. Any other key is shown if
    `include` matches it, else unless `exclude`, `BOOKKEEPING` or `TIMERS` does; under its own
    group when it has one, else under OTHER_GROUP.
    """

    named: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @classmethod
    def for_experiment(cls, ep: ExperimentPlan) -> TagLayout:
        exp = ep.experiment
        named = [*ep.ranked_by, *exp.stop, *exp.expect.metrics]  # the metric, or each objective
        board = exp.tensorboard
        return cls(tuple(dict.fromkeys(named)), board.include, board.exclude)

    def tag(self, key: str) -> str | None:
        """The scalar tag of result key `key` (flattened with `/`), or None: not shown."""
        return _tag(self, key)

    def shown(self, flat: dict[str, Any]) -> dict[str, float]:
        """A result's shown numbers by tag (`flat_result`), the spec's keys first; NaNs and
        infinities left out."""
        keys = [*(k for k in self.named if k in flat), *(k for k in flat if k not in self.named)]
        shown = {}
        for key in keys:
            tag = _tag(self, key)
            if tag is not None and (value := scoring.finite(flat[key])) is not None:
                shown[tag] = value
        return shown


def flat_result(result: dict[str, Any]) -> dict[str, Any]:
    """A result's keys flattened with `/`, as TensorBoard's tags name them; its config left out."""
    return flatten({k: v for k, v in result.items() if k != "config"}, "/")


@functools.lru_cache(maxsize=4096)
def _tag(layout: TagLayout, key: str) -> str | None:
    # A result's keys are the same from one result to the next: each is matched against the
    # layout's patterns once, not at every result.
    if key in layout.named:
        return f"{SPEC_GROUP}/{key}"
    if not matches(key, layout.include) and (
        key in BOOKKEEPING or matches(key, TIMERS) or matches(key, layout.exclude)
    ):
        return None
    return key if "/" in key else f"{OTHER_GROUP}/{key}"


class TrialBoard(LoggerCallback):
    """The run's TensorBoard logger, with the scalars of `TagLayout` and HParams from the start.

    Tune's own writes every result key under one `ray/tune/` group, and HParams only when a
    trial ends (none for a trial that errored before reporting) and of every config key. This
    writes the experiment's config and a session start when a trial starts, its end with a
    status, into the events file of the trial's scalars. Tune adds its own logger unless told
    not to: `tuner.given_loggers_only` holds while a Tuner fits.
    """

    # The keys that rank its trials (the metric, or each objective): a class default, so a
    # board saved in an older run's state reads as ranking by its metric alone.
    ranked: tuple[str, ...] = ()
    # The run's other experiments' searched paths and HParams metrics (`for_experiment`).
    others: tuple[tuple[dict[str, Domain], dict[str, str]], ...] = ()

    def __init__(
        self,
        hparams: dict[str, Domain],
        metrics: tuple[str, ...],
        metric: str | None,
        scope: str = scoring.DEFAULT_SCOPE,
        mode: str | None = "max",
        layout: TagLayout | None = None,
    ) -> None:
        # Not Tune's TBXLoggerCallback: it imports tensorboardX, whose writer imports torch
        # (2.5 s of a short search's start). The events are written with TensorBoard's writer.
        super().__init__()
        self.writers: dict[Trial, EventWriter] = {}
        self.hparams = dict(hparams)  # dotted config path -> its domain in the spec
        self.metrics = tuple(metrics)
        self.metric = metric
        self.scope, self.mode = scope, mode
        self.layout = layout or TagLayout(named=(metric,) if metric else ())
        # Trial id -> its metric's values by step so far, as results.jsonl keeps them.
        self.scored: dict[str, scoring.StepScore] = {}
        self.last_step: dict[Trial, int] = {}  # the last iteration in the trial's open events file
        self.written: set[str] = set()  # trials this process wrote events for
        self.results: Path | None = None  # results.jsonl, where `for_experiment` knows it
        self.resumed: Path | None = None  # in a resumed run: results.jsonl where it is now
        self.experiment = ""
        self.folder: RunLocation | None = None
        self.created = time.time()

    @classmethod
    def for_experiment(
        cls, ep: ExperimentPlan, together: Iterable[ExperimentPlan] = ()
    ) -> TrialBoard:
        """`ep`'s board; `together`: the experiments run with it, whose HParams columns and
        metrics its trials write too."""
        domains = dict(iter_domains(ep.experiment.config))
        if ep.env is not None and ep.env.grid:  # RLlib's env grid: a column of its own
            domains["env"] = Domain("grid_search", tuple(e.env for e in ep.env.grid))
        if ep.experiment.seeds:  # the seeds axis: a column of its own
            domains[SEED_KEY] = Domain("choice", tuple(ep.experiment.seeds))
        board = cls(
            {p: domains[p] for p in ep.searched if p in domains},
            metric_keys(ep),
            ep.metric,
            scope=ep.experiment.scope,
            mode=ep.mode,
            layout=TagLayout.for_experiment(ep),
        )
        board.results, board.experiment, board.folder = ep.folder.results, ep.name, ep.folder
        board.ranked = ep.ranked_by
        others = [cls.for_experiment(o) for o in together if o.name != ep.name]
        board.others = tuple((o.hparams, o.shown_metrics) for o in others)
        return board

    @property
    def shown_metrics(self) -> dict[str, str]:
        """HParams' metric columns, tag -> name: the trial's score first, then the metrics."""
        shown = {}
        if self.metric:
            shown[SCORE_TAG] = f"score: {self.metric} ({scoring.describe(self.scope)})"
        for key in self.metrics:
            tag = self.layout.tag(key)
            if tag is not None:
                shown[tag] = key
        return shown

    @stops_on_write_error
    def log_trial_start(self, trial: Trial) -> None:
        self.written.add(trial.trial_id)
        if trial in self.writers:
            self.writers[trial].close()
        self.last_step.pop(trial, None)
        self.writers[trial] = EventWriter(self.trial_folder(trial))
        # TensorBoard shows one HParams experiment for a folder, the first it reads: each trial
        # writes its run's every experiment, so a folder of them shows all their trials. Also on
        # a restart (resume, retry, unpause); TensorBoard keeps the first of each tag.
        mine = (self.hparams, self.shown_metrics)
        self._write(trial, experiment_summary((mine, *self.others), self.created))
        values = searched_values(trial.config, self.hparams)
        # Its row named as `analyze`, the report and its folder spell the trial.
        self._write(trial, hp.session_start(values, trial.trial_id))
        self.writers[trial].flush()  # listed in HParams at once, before any result

    @stops_on_write_error
    def log_trial_result(self, iteration: int, trial: Trial, result: dict) -> None:
        if trial not in self.writers:
            self.log_trial_start(trial)
        writer = self.writers[trial]
        step = result.get("timesteps_total") or result["training_iteration"]  # as Tune's
        # Going back is told by the iteration, as results.jsonl tells it: the x-axis step may
        # stand still or start over (timesteps_total 0, then 1: step 1 twice) where the trial
        # only went on.
        iteration = result["training_iteration"]
        last = self.last_step.get(trial)
        if last is None or iteration <= last:
            # A trial's first result in an events file, or one going back (a resume, a retry, a
            # restore): TensorBoard drops what earlier files or steps hold from this step on
            # (its restart rule), so the trial's scalars are what results.jsonl keeps.
            writer.restart(step)
        self.last_step[trial] = iteration
        flat = flat_result(result)
        shown = self.layout.shown(flat)
        if self.metric:
            scored = self.scored.get(trial.trial_id)
            if scored is None:
                scored = self.scored[trial.trial_id] = scoring.StepScore(self.scope, self.mode)
            value = scoring.finite(flat.get(self.metric))
            scored.add(step, value)
            # The score as the summary ranks trials, so HParams sorts them the same way.
            if value is not None and scored.value is not None:
                shown[SCORE_TAG] = scored.value
        # One event holds the result's scalars, as a merged summary of TensorFlow's: a result
        # costs one record (its framing and checksums), not one per key.
        writer.add_scalars(shown, global_step=step)

    @stops_on_write_error
    def log_trial_end(self, trial: Trial, failed: bool = False) -> None:
        if trial not in self.writers:  # ended before it started (its actor failed)
            self.log_trial_start(trial)
        last = flatten(trial.last_result or {}, "/")
        self._write(
            trial, hp.session_end(failed or diverged(last, self.ranked or self.metric) is not None)
        )
        self.writers.pop(trial).close()
        self.last_step.pop(trial, None)

    @stops_on_write_error
    def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
        """Events reach the disk within FLUSH_S, also a trial's that reports no more."""
        for writer in self.writers.values():
            writer.flush_if_due()

    @stops_on_write_error
    def on_experiment_end(self, trials: list, **info: Any) -> None:
        """Close what an interrupted run left open: its trials never ended. In a resumed run,
        write again the trials that ended in the killed one before their events were flushed."""
        for writer in self.writers.values():
            writer.close()
        if self.resumed is not None:
            self._complete(trials, self.resumed)

    def _complete(self, trials: list, results: Path) -> None:
        """Each trial this process did not write whose events never recorded its end (a driver
        killed within FLUSH_S of its last results) is written again from results.jsonl, in an
        events file of its own that replaces what the earlier ones hold (`restart`)."""
        rows: dict[str, list[dict[str, Any]]] = {}
        if results.exists():
            for row in latest_results(read_rows(results.read_bytes())):
                rows.setdefault(str(row.get("trial_id")), []).append(row)
        for trial in trials:
            kept = rows.get(trial.trial_id)
            if trial.trial_id in self.written or not kept:
                continue
            if ended_in_events(Path(self.trial_folder(trial))):
                continue
            self.log_trial_start(trial)
            for row in kept:
                self.log_trial_result(0, trial, row)
            self.log_trial_end(trial, failed=trial.status == "ERROR")

    def trial_folder(self, trial: Trial) -> str:
        """Where a trial's events are written: its folder in the run folder, appended in place,
        so a TensorBoard reading the run sees each event once it is flushed (FLUSH_S). Not Tune's
        staging folder (`trial.local_path`, under Ray's session): that reaches the run folder
        only when Tune copies it, as often as it saves its state (10 s or more for RLlib), and
        each copy replaces a file whole (`ray_internals.uploads`), so a TensorBoard that had
        the file open kept reading the old one and froze. On cloud storage the staging folder,
        which Tune copies up."""
        trial.init_local_path()
        if self.folder is not None and self.folder.uri is None and trial.path:
            return trial.path
        return trial.local_path or "."

    def _write(self, trial: Trial, summary: Any) -> None:
        self.writers[trial].add_summary(summary)  # on disk within FLUSH_S

    def __getstate__(self) -> dict[str, Any]:
        # Tune pickles its run config for resume; open event writers cannot travel.
        return {**self.__dict__, "writers": {}, "last_step": {}, "written": set()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        # A run begun by an earlier version, resumed: its pickle holds no layout.
        state.setdefault("layout", TagLayout(named=tuple(state.get("metrics", ()))))
        # A run begun when the writers were TBXLoggerCallback's own state, resumed.
        for old in ("_trial_writer", "_trial_result", "_summary_writer_cls"):
            state.pop(old, None)
        state.update(writers={}, last_step={}, written=set())
        # Unpickled: a resumed run (Tune restores its callbacks). Its folder may have moved.
        results = state.get("results")
        if results is not None and state.get("folder") is not None:
            results = located(state["experiment"], state["folder"]).results
        state["resumed"] = results
        # Before the values were kept with their steps: a resume starts a trial's score again.
        state.pop("values", None)
        state["scored"] = {
            trial_id: _step_score(
                kept, state.get("scope", scoring.DEFAULT_SCOPE), state.get("mode")
            )
            for trial_id, kept in state.get("scored", {}).items()
        }
        self.__dict__.update(state)


def _step_score(kept: Any, scope: str, mode: str | None) -> scoring.StepScore:
    """A trial's StepScore, from a pickle that holds one or, before it did, its (step, value)s."""
    if isinstance(kept, scoring.StepScore):
        return kept
    scored = scoring.StepScore(scope, mode)
    for step, value in kept:
        scored.add(step, value)
    return scored


def metric_keys(ep: ExperimentPlan) -> tuple[str, ...]:
    """Result keys the HParams table shows: the metric (or each objective), stop and expect keys,
    the declared ones, each only if it is a scalar TensorBoard shows."""
    layout = TagLayout.for_experiment(ep)  # its `named`: the metric(s), stop and expect keys
    keys = [*layout.named, *ep.trainable.kind.declared_metrics]
    return tuple(k for k in dict.fromkeys(keys) if layout.tag(k) is not None)


def hparam_value(value: Any) -> bool | float | str:
    """A config value as HParams holds it: a bool, a number, a string, or JSON text for the rest."""
    value = jsonable(value)
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        return float(value)
    return json.dumps(value)


def searched_values(config: dict[str, Any], hparams: dict[str, Domain]) -> dict[str, Any]:
    """The trial's value of each searched path (`a.b[0]`), as HParams holds it."""
    config = restore_private_keys(config)  # RLlib's attribute names back to the spec's
    missing = object()
    values = {}
    for path in hparams:
        node = value_at(config, path, missing)
        if node is not missing:
            values[path] = hparam_value(node)
    return values


def hparam_info(path: str, domain: Domain) -> Any:
    """The HParams column of a searched path: its discrete values, its range, or just its name."""
    if domain.kind in ("grid_search", "choice"):
        values = list(dict.fromkeys(hparam_value(v) for v in domain.args))
        nested = any(next(iter_domains(v), None) for v in domain.args)
        if not nested and len({type(v) for v in values}) == 1:
            return hp.column(path, values)
    elif domain.kind in _INTERVALS:
        return hp.column(path, interval=(float(domain.args[0]), float(domain.args[1])))
    return hp.column(path)


def experiment_summary(
    experiments: Iterable[tuple[dict[str, Domain], dict[str, str]]], created: float | None = None
) -> Any:
    """The HParams experiment of `experiments` (each one's searched paths, and its metrics as
    scalar tags of each trial -> name): a path searched two ways is a column of no domain (one
    would hide the other's trials), a tag named two ways is named by itself."""
    columns: dict[str, Any] = {}
    metrics: dict[str, str] = {}
    for searched, shown in experiments:
        for path, domain in searched.items():
            info = hparam_info(path, domain)
            columns[path] = info if columns.get(path, info) == info else hp.column(path)
        for tag, name in shown.items():
            metrics[tag] = name if metrics.get(tag, name) == name else tag
    return hp.experiment(list(columns.values()), metrics, created)
