"""Terminal reports: the plan `validate` prints, and the summary a run ends with."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from tune_app import objectives, scoring
from tune_app.command import APP
from tune_app.errors import clip
from tune_app.plan.describe import describe_scheduler, describe_search
from tune_app.plan.types import Plan
from tune_app.ray_internals.buffering import WINDOW_S
from tune_app.readback import front
from tune_app.resources import amounts, gpu_sharing
from tune_app.rundir import noise, rungs
from tune_app.space import value_at
from tune_app.words import counted

if TYPE_CHECKING:
    from tune_app.contract import TrainableInfo
    from tune_app.expect import Outcome
    from tune_app.rundir.records import RunSummary
    from tune_app.spec.resolved import Spec


def trainables_text(infos: Iterable[TrainableInfo]) -> str:
    """Each registered trainable: what it is, its metric, what it reports, its knobs."""
    blocks = []
    for info in infos:
        lines = [
            f"{info.name}: {info.doc}",
            f"  metric      {info.metric} ({info.mode})",
            f"  reports     {', '.join(info.metrics)}",
        ]
        if info.simulations:
            lines.append(
                f"  simulations {info.simulations} by default (head bundle {info.head_cpu:g} CPU)"
            )
        for knob in info.knobs:
            default = "required" if knob.default is None else f"default {knob.default!r}"
            lines.append(f"  {knob.name:<11} {knob.type.__name__}, {default}: {knob.doc}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def algorithms_text(names: Iterable[str]) -> str:
    """Each RLlib algorithm: its default metric, its bundles by default, its main knobs."""
    from tune_app import rllib

    blocks = []
    for name in names:
        keys = rllib.algorithm_keys(name)
        runners = keys.defaults.get("num_env_runners", 0)
        lines = [
            f"{name}: RLlib algorithm (new API stack, torch); needs env:",
            f"  metric      {rllib.METRIC} ({rllib.MODE})",
            f"  simulations {runners} env runners by default (simulations: sets num_env_runners)",
        ]
        for knob in rllib.SHOWN_KNOBS:  # the main ones, where the algorithm has them
            if knob in keys.defaults:
                lines.append(f"  {knob:<26} default {keys.defaults[knob]!r}")
        lines.append(f"  ({len(keys.defaults)} keys in all: {APP} list {name})")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def algorithm_keys_text(name: str, word: str | None = None) -> str:
    """Every config key an RLlib algorithm accepts, with its default and what it is for (RLlib's
    own docstrings); with `word`, only the keys whose name or description holds it."""
    from tune_app import rllib
    from tune_app.errors import TuneAppError, did_you_mean

    keys = rllib.algorithm_keys(name)
    shown = sorted(keys.defaults)
    renamed = rllib.renamed_to(name, word) if word else None  # a legacy name specs accept
    read_as = renamed.split(".")[0] if renamed else None
    if word:
        low, whole = word.lower(), re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)
        shown = [
            k
            for k in shown
            if k == read_as or low in k.lower() or whole.search(keys.docs.get(k, ""))
        ]
        if not shown:
            hint = did_you_mean(word, keys.defaults)
            raise TuneAppError(
                f"no config key of {name} has '{word}' in its name or description"
                + (f"; {hint}" if hint else f"; {APP} list {name} shows all")
            )
    counted = f"{len(shown)} of {len(keys.defaults)}" if word else f"{len(keys.defaults)}"
    lines = [f"{name}: {counted} config keys (key = default: what it is for, from RLlib)"]
    if read_as in keys.defaults:
        lines.insert(0, f"{word}: a legacy key, read as {renamed}")
    for k in shown:
        doc = keys.docs.get(k)
        lines.append(f"  {k} = {_brief(keys.defaults[k])}" + (f": {doc}" if doc else ""))
    if not word:
        lines.append("legacy keys read under their new names: " + ", ".join(sorted(rllib.RENAMED)))
    return "\n".join(lines)


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def plan_text(plan: Plan) -> str:
    """The plan as plain text: per experiment what runs, how many trials, on what resources."""
    from tune_app.rundir.location import RunLocation

    experiments = counted(len(plan.experiments), "experiment")
    lines = [
        f"{plan.spec.file}: {experiments} ({plan.spec.form} form), "
        f"checked against {plan.machine.describe(memory=False)}"
    ]
    written = RunLocation.fresh_all([ep.folder for ep in plan.experiments])  # what `run` writes
    for ep, fresh in zip(plan.experiments, written, strict=True):
        exp = ep.experiment
        what = ep.trainable.kind.describe
        if ep.env is not None:
            what += f", env {ep.env.env}"
        trials = f"{ep.trials}" if ep.trials_exact else f"up to {ep.trials}"
        at_once = ep.at_once
        sharing = gpu_sharing(ep.bundles, at_once)
        stop = ", ".join(f"{k} >= {v:g}" for k, v in exp.stop.items())
        stop = f"{stop} (checked when a result arrives)" if stop else "none (trainable ends)"
        rows = [
            ("trainable", f"{exp.run} ({what})"),
            (
                "trials",
                f"{trials} ({counted(ep.trials // len(exp.seeds), 'configuration')} x "
                f"{len(exp.seeds)} "
                f"seeds {list(exp.seeds)}, judged by their {exp.aggregate}; num_samples "
                f"{exp.num_samples})"
                if exp.seeds
                else f"{trials} (num_samples {exp.num_samples})",
            ),
            ("searched", ", ".join(ep.searched) or "nothing (constants only)"),
            ("search", describe_search(exp)),
            ("scheduler", describe_scheduler(exp)),
            (
                "metric",
                f"{ep.metric} ({ep.mode}; a trial ranks by its "
                f"{scoring.describe(ep.experiment.scope)}, scope {ep.experiment.scope})"
                + objectives.kept(exp.constraints)
                if ep.metric
                else objectives.shown(exp.objectives, exp.constraints),
            ),
            ("stop", stop),
            ("time", _time_limits(exp)),
            (
                "bundles",
                f"{amounts(ep.bundles)} per trial = {ep.trial_cpus:g} CPUs; "
                f"{counted(at_once, 'trial')} at once"
                + (f" ({sharing})" if sharing else "")
                + (f"; {ep.sharing.line}" if ep.sharing else ""),
            ),
            ("iterations", f"at most {ep.iterations} in all" if ep.iterations else "not bounded"),
            ("expect", _expectations(exp)),
            (
                "results",
                ep.location
                if fresh.same_as(ep.folder)
                else f"{fresh.where} (a run writes there: {ep.location} holds an earlier one)",
            ),
        ]
        if ep.warm is not None:
            rows.insert(-1, ("warm start", ep.warm.line().removeprefix("warm start: ")))
        lines.append(f"\n{exp.name}")
        lines += [f"  {k:<11}{v}" for k, v in rows]
    return "\n".join(lines)


def evaluation_text(found: list[Any], summaries: list[RunSummary]) -> str:
    """`evaluate`'s table: each configuration's tuning score against its aggregate over the
    fresh seeds, with its interval: a 95% bootstrap one, or under 5 seeds the seeds' range,
    called so (`Configuration.interval_text`)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="evaluation on fresh seeds")
    for column in ("configuration", "tuning", "seeds", "evaluation", "interval"):
        table.add_column(column, overflow="fold")
    by_name = {s.experiment: s for s in summaries}
    for b in found:
        s = by_name.get(b.name)
        configs = s.configurations() if s is not None else []
        c = configs[0] if configs else None
        table.add_row(
            f"{b.name}: " + ", ".join(f"{k}={v}" for k, v in b.params.items()),
            f"{b.score:.6g} ({b.judged})",
            str(len(c.trial_ids)) if c else "0",
            f"{c.score:.6g} ({s.aggregate})" if c and c.score is not None and s else "-",
            c.interval_text() if c else "-",
        )
    console = Console(width=120, color_system=None, force_terminal=False, record=True, markup=False)
    with console.capture() as captured:
        console.print(table)
    return captured.get().rstrip("\n")


def start_line(spec: Spec, smoke: bool) -> str:
    """The line a run prints at once, from the spec alone: before the trainables are imported
    (which may import Ray) and before storage is contacted, so it claims nothing the plan's
    checks may refuse (`results_line` says where the results go, once they passed)."""
    experiments = counted(len(spec.experiments), "experiment")
    what = f"{spec.file.name}{' --smoke' if smoke else ''}, {experiments}"
    return f"tune_app: starting {what}: checking it (imports its trainables, reads the machine)"


def results_line(plan: Plan) -> str:
    """Where a checked plan's run writes (its folders, `api.run`'s fresh ones), the earlier
    runs it keeps, and where each trial's output goes."""
    from tune_app.rundir.location import RunLocation

    kept = []
    for ep in plan.experiments:  # the folder the spec names, unless an earlier run holds it
        named = RunLocation.for_experiment(ep.folder.parent, ep.name)
        if not named.same_as(ep.folder):
            kept.append(named.where)
    line = f"tune_app: results in {', '.join(ep.location for ep in plan.experiments)}"
    if kept:
        line += f" (earlier runs kept in {', '.join(kept)} and beside)"
    if any(ep.experiment.log_to_file for ep in plan.experiments):  # Tune's, on by default
        line += "; each trial's output (print) in its folder there: stdout, stderr"
    return line


def print_summaries(plan: Plan, summaries: list[RunSummary], width: int | None = None) -> None:
    """A table per experiment: status counts, the best trial, its config and metric."""
    from rich.console import Console
    from rich.table import Table

    # A log file is no terminal: rich would cut the table to 80 columns. No markup: the cells and
    # lines hold the spec's and the trials' text, and `[/]` in a value would end the command.
    console = Console(width=width or (None if sys.stdout.isatty() else 200), markup=False)
    table = Table(title="tune_app results")
    # On a narrow terminal the long cells fold; trial ids and times are never cut.
    table.add_column("experiment", overflow="fold")
    table.add_column("trials", overflow="fold")
    table.add_column("best trial", no_wrap=True, min_width=11)
    table.add_column("metric", overflow="fold")
    table.add_column("config", overflow="fold", ratio=2)
    table.add_column("wall time", no_wrap=True)
    for ep, s in zip(plan.experiments, summaries, strict=True):
        counts = ", ".join(f"{v} {k.lower()}" for k, v in sorted(s.counts.items()))
        best = s.best
        configs = s.configurations()
        top = configs[0] if configs and configs[0].score is not None else None
        table.add_row(
            s.experiment,
            counts or "none",
            best.trial_id if best else front.best_cell(s),
            (
                f"{s.metric} = {top.score:.6g} ({top.of_seeds(s.aggregate)}"
                f"{', ' + top.budgets_text if top.mixed_budgets else ''}"
                f"{noise.chosen_by(top, s.select)})"
                if top is not None
                else f"{s.metric} = {best.score:.6g}"
                if best and best.score is not None
                else front.title(s)  # several objectives: theirs (the front is listed below)
                if front.several(s)
                else "-"
            ),
            (
                _short(top.params.items())
                if top is not None
                else _short((path, value_at(best.config, path)) for path in ep.searched)
                if best and ep.searched
                else _unsearched(ep.experiment)
                if best
                else "the front's, below"
                if front.several(s)
                else "-"
            ),
            f"{s.wall_time_s:.1f} s",
        )
    console.print(table)
    for ep, s in zip(plan.experiments, summaries, strict=True):
        console.print(f"results: {ep.location}", highlight=False)
        if ep.warm is not None:  # its trials are the earlier runs': none is in the table above
            console.print(f"  {ep.warm.line()}", highlight=False)
        for line in front.lines(s, ep.location):
            console.print(f"  {line}", highlight=False)
        for line in failures_text(s.trials).splitlines():
            console.print(line, highlight=False)
        if s.early_stopping:
            console.print(f"  {rungs.check_text(s.early_stopping)}", highlight=False)
        for note in s.notes:
            console.print(f"  note: {note}", highlight=False)


def failures_text(trials: list[Any]) -> str:
    """Failed trials grouped by cause, each group with its trials and one error's first lines."""
    groups: dict[str, list[Any]] = {}
    for t in trials:
        if t.cause:
            groups.setdefault(t.cause, []).append(t)
    lines = []
    for cause, members in sorted(groups.items(), key=lambda item: -len(item[1])):
        ids = ", ".join(t.trial_id for t in members)
        lines.append(f"  failed, {cause} ({len(members)}): {ids}")
        lines += [f"    {line}" for line in (members[0].error or "").splitlines()]
    retried = [t for t in trials if t.failures and not t.cause]
    if retried:
        ids = ", ".join(f"{t.trial_id} ({t.failures}x)" for t in retried)
        lines.append(f"  recovered after failures: {ids}")
    return "\n".join(lines)


def same_failures_line(ep: Any, summary: RunSummary) -> str | None:
    """The line a run whose trials all failed alike before any reported ends with (a mistake in
    the trainable's set-up, which `callbacks.SameFailures` ends the search for): the error, where
    in the user's code, and what to do; None for any other run, or one whose `expect` allows
    that many errors."""
    from tune_app.failures import near, same_before_results

    found = None if summary.interrupted else same_before_results(summary.trials)
    allowed = ep.experiment.expect.max_errored_trials
    if found is None or found[1] <= allowed:
        return None
    failure, failed = found
    first = failure.message.splitlines()[0] if failure.message else failure.cause
    at = f" at {failure.frame}" if failure.frame else ""
    left = len(summary.trials) - failed
    ended = f", so the search ended ({left} never ran)" if left else ""
    error = next((t for t in summary.trials if t.cause and t.folder), None)
    where = f"{near(ep.location)}/{error.folder}/error.txt" if error else "its error.txt"
    return (
        f"[{summary.experiment}] {counted(failed, 'trial')} failed alike before any trial "
        f"reported{ended}: {clip(first, 120)}{at}; fix that and run again (traceback in "
        f"{where}; expect.max_errored_trials: {failed} lets more trials fail first)"
    )


def _time_limits(exp: Any) -> str:
    parts = []
    if exp.time_budget_s is not None:
        parts.append(f"the search ends after {exp.time_budget_s:g} s (time_budget_s)")
    if exp.result_timeout_s is not None:
        parts.append(
            f"a trial with no result for {exp.result_timeout_s:g} s fails (result_timeout_s)"
        )
    if exp.buffered:
        parts.append(
            f"up to {exp.result_buffer} results a call, up to {WINDOW_S} s late (result_buffer)"
        )
    return "; ".join(parts) or "no limit (time_budget_s, result_timeout_s)"


def _expectations(exp: Any) -> str:
    expect = exp.expect
    parts = [
        f"{key} {op} {value:g}"
        for key, bound in expect.metrics.items()
        for op, value in ((">=", bound.min), ("<=", bound.max))
        if value is not None
    ]
    return ", ".join([*parts, f"errored trials <= {expect.max_errored_trials}"])


def print_outcomes(outcomes: list[Outcome]) -> None:
    """One line per expectation that failed or was skipped; passing ones stay quiet."""
    for o in outcomes:
        if o.skipped:
            print(f"[{o.experiment}] expect {o.name}: skipped ({o.message})")
        elif not o.passed:
            print(f"[{o.experiment}] expectation failed: {o.name}; {o.message}", file=sys.stderr)


def _unsearched(exp: Any) -> str:
    """The config cell of an experiment that searched nothing: what ran, not its whole config
    (an RLlib algorithm's is hundreds of keys)."""
    return f"nothing searched: {exp.run}" + (f" on {exp.env}" if exp.env else "")


def _short(values: Iterable[tuple[str, Any]]) -> str:
    """Searched values by their config paths, as `a=1, b.c=0.001` (floats to 4 figures)."""
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in values)
