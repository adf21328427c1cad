"""`tune_app analyze`: a run's trials as a table, JSON or CSV, read from its files alone.

Trials come sorted by their best metric, with the searched parameters, status, iterations and
best and last metric (with several objectives: the front first, with each objective's value and
the front's mark); then the best trial, failed trials grouped by cause, and any file that could
not be read.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict
from typing import Any, Literal

from tune_app import scoring
from tune_app.readback import front
from tune_app.readback import importance as imports
from tune_app.rundir import budget, noise, rungs
from tune_app.rundir.files import jsonable
from tune_app.rundir.read import ExperimentResults
from tune_app.rundir.records import TrialOutcome, warm_start_line
from tune_app.seeds import Configuration, never_started
from tune_app.words import counted

Format = Literal["table", "json", "csv"]
FORMATS = ("table", "json", "csv")
# Without --top, a table shows this many trials at most (a terminal's table of 10,000 trials took
# rich 7 s to draw and scrolled the rest away); JSON and CSV hold every trial.
TABLE_ROWS = 100


def render(
    experiments: list[ExperimentResults],
    fmt: Format,
    top: int | None = None,
    importance: bool = False,
) -> str:
    """The experiments in `fmt`, each with its `top` best trials (when None: all, in a table
    the best TABLE_ROWS); in JSON, with
    `importance`, each searched parameter's importance (models fitted: seconds, not a read)."""
    if fmt == "json":
        found = [as_dict(e, top, importance) for e in experiments]
        return json.dumps(found, indent=2, allow_nan=False)
    if fmt == "csv":
        return _csv(experiments, top)
    return "\n\n".join(_table(e, top) for e in experiments)


def as_dict(
    exp: ExperimentResults, top: int | None = None, importance: bool = False
) -> dict[str, Any]:
    """One experiment as plain data: what `--format json` prints (`importance`: None unless
    asked for)."""
    best = exp.best_trial
    return jsonable(
        {
            "experiment": exp.name,
            "folder": exp.where,
            "metric": exp.metric,
            "mode": exp.mode,
            "searched": exp.searched,
            "finished": exp.finished,
            "counts": exp.counts,
            "best": _trial_dict(best, exp) if best else None,
            "trials": [_trial_dict(t, exp) for t in front.best_first(exp.summary)[:top]],
            "failed": {
                cause: [t.trial_id for t in members]
                for cause, members in exp.failed_by_cause().items()
            },
            "problems": exp.problems,
            "warm_start": [asdict(r) for r in exp.warm_start],
            "clones": [asdict(c) for c in exp.clones],
            "seeds": exp.summary.seeds,
            "aggregate": exp.summary.aggregate if exp.summary.seeds else None,
            "configurations": [asdict(c) for c in exp.summary.configurations()],
            **front.run_fields(exp.summary),
            "select": exp.summary.select if exp.summary.seeds else None,
            **statistics_dict(exp),
            # per searched parameter, its share by permutation, fANOVA and PED-ANOVA
            "importance": imports.as_json(exp) if importance else None,
        }
    )


def rung_checks(exp: ExperimentResults) -> list[rungs.RungCheck]:
    """ASHA's and HyperBand's rungs checked against the final scores, from the run's files."""
    return rungs.checks(exp.trials, exp.metric_curves(), exp.scheduler)


def statistics_dict(exp: ExperimentResults) -> dict[str, Any]:
    """The expected best of n trials (the whole curve) and the rungs' check, as plain data."""
    found = budget.curve(exp.summary)
    return {
        "expected_best": {
            "unit": found.unit,
            "count": found.count,
            "curve": [asdict(p) for p in found.points],
        }
        if found
        else None,
        "early_stopping": [
            {**asdict(c), "bound": rungs.BOUND, "predicts": c.predicts} for c in rung_checks(exp)
        ],
    }


def statistics_lines(exp: ExperimentResults) -> list[str]:
    """The expected best of n trials at a few n, and the rungs' check with its warning."""
    lines = []
    found = budget.curve(exp.summary)
    if found is not None:
        lines.append(budget.compact_text(found, cell))
    checks = rung_checks(exp)
    if checks:
        lines.append(rungs.check_text(checks))
        warning = rungs.warning(checks, exp.scheduler)
        lines += [warning] if warning else []
    return lines


# The fields `trial_rows` adds to a trial's: an objective of one of these names is renamed too.
ROW_FIELDS = ("experiment", "run", "metric")


def _trial_dict(t: TrialOutcome, exp: ExperimentResults) -> dict[str, Any]:
    files = exp.trial_files(t)
    own = {
        "trial_id": t.trial_id,
        "status": t.status,
        "params": t.params,
        "iterations": t.iterations,
        "score": t.score,
        "best": t.best,
        "last": t.last,
        "time_total_s": round(t.time_total_s, 3),
        "failures": t.failures,
        "stopped_early": t.stopped_early,
        "cause": t.failure.cause if t.failure else None,
        "error": t.failure.message if t.failure else None,
        "frame": t.frame,  # where in the user's code it failed: `my_train.py:14`
        "folder": t.folder,
        "error_file": files.error,
        "stdout_file": files.stdout,
        "stderr_file": files.stderr,
    }
    return {**own, **front.trial_fields(t, exp.summary, [*own, *ROW_FIELDS])}


def trial_rows(
    experiments: list[ExperimentResults], top: int | None = None
) -> list[dict[str, Any]]:
    """Every trial as one flat row, best first within each experiment: `tune_app.load`'s
    DataFrame. Searched parameters are `config/<path>` columns, as in Tune's DataFrames; `run`
    is the run read (a folder or a URI), `metric` what `score` is a value of."""
    rows = []
    for e in experiments:
        for t in front.best_first(e.summary)[:top]:
            # The run read and its metric: a storage folder's runs may be re-runs (`e_2`) and
            # rank by different metrics.
            row: dict[str, Any] = dict(zip(ROW_FIELDS, (e.name, e.where, e.metric), strict=True))
            row.update(_trial_dict(t, e))
            params = row.pop("params")
            at = list(row).index("status") + 1
            items = list(row.items())
            items[at:at] = [(f"config/{k}", params.get(k)) for k in e.searched]
            rows.append(dict(items))
    return rows


def _csv(experiments: list[ExperimentResults], top: int | None) -> str:
    params = list(dict.fromkeys(k for e in experiments for k in e.searched))
    # Several objectives: each one's value by name, and whether the trial is on the front.
    names = list(dict.fromkeys(o.name for e in experiments for o in e.summary.objectives))
    # A parameter's or objective's column is its name, prefixed where the file has that column.
    own = {"experiment", "trial_id", "status", "iterations", "score", "best", "last", "cause"}
    own |= {"pareto"} if names else set()
    columns = front.shown_names(params, own, "config")
    objectives = front.shown_names(names, {*own, *columns.values()}, "objective")
    several = [*objectives.values(), "pareto"] if names else []
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "experiment",
            "trial_id",
            "status",
            *columns.values(),
            "iterations",
            "score",
            "best",
            "last",
            *several,
            "cause",
        ]
    )
    for e in experiments:
        on_front = set(e.summary.pareto())
        for t in front.best_first(e.summary)[:top]:
            values = [_raw(t.objectives.get(n)) for n in names]
            mark = [str(t.trial_id in on_front) if e.summary.objectives else ""]
            writer.writerow(
                [
                    e.name,
                    t.trial_id,
                    t.status,
                    *(_raw(t.params.get(p)) for p in params),
                    t.iterations,
                    _raw(t.score),
                    _raw(t.best),
                    _raw(t.last),
                    *(values + mark if names else []),
                    t.failure.cause if t.failure else "",
                ]
            )
    return out.getvalue().rstrip("\n")


def _table(exp: ExperimentResults, top: int | None) -> str:
    from rich.console import Console
    from rich.table import Table

    state = exp.state
    metric = (
        f"{exp.metric} ({exp.mode}, ranked by {scoring.describe(exp.scope)})"
        if exp.metric
        else front.title(exp.summary)
    )
    counts = ", ".join(f"{n} {s.lower()}" for s, n in sorted(exp.counts.items()))
    table = Table(title=f"{exp.name}: {metric}; {counts or 'no trials'}; {state}")
    numeric = ("iter", *front.columns(exp.summary))
    # The trial id is what finds a trial's folder: never cut; wide values fold instead.
    table.add_column("trial", no_wrap=True, min_width=11)
    for col in ("status", *exp.searched, *numeric):
        table.add_column(col, justify="right" if col in numeric else "left", overflow="fold")
    ranked = front.best_first(exp.summary)
    rows = top if top is not None else TABLE_ROWS
    for t in ranked[:rows]:
        table.add_row(
            t.trial_id,
            status_cell(t),
            *(cell(t.params.get(p)) for p in exp.searched),
            str(t.iterations),
            *front.cells(t, exp.summary, cell),
        )
    lines = []
    if len(ranked) > rows:
        more = "" if top is not None else "; --top N shows more, --format csv every one"
        lines.append(f"(the best {rows} of {counted(len(ranked), 'trial')}{more})")
    best = exp.best_trial
    configs = exp.summary.configurations()
    if best is not None and configs:  # with seeds: the best configuration and its best trial
        shown = ", ".join(f"{k}={cell(v)}" for k, v in configs[0].params.items())
        lines.append(
            f"best: {shown or 'the configuration'}: {exp.metric} = {cell(configs[0].score)} "
            f"({configs[0].of_seeds(exp.summary.aggregate)}"
            f"{', ' + configs[0].budgets_text if configs[0].mixed_budgets else ''}"
            f"{noise.chosen_by(configs[0], exp.summary.select)}); its best trial {best.trial_id}"
        )
    elif best is not None:
        shown = ", ".join(f"{k}={cell(v)}" for k, v in best.params.items())
        lines.append(f"best: {best.trial_id} {exp.metric} = {cell(best.score)} {shown}".rstrip())
    lines += front.lines(exp.summary, exp.where)
    lines += failed_lines(exp)
    lines += configuration_lines(exp)
    lines += statistics_lines(exp)
    lines += [f"clone: {line}" for line in clone_lines(exp)]
    lines += [f"skipped: {p}" for p in exp.problems]
    lines += [w for w in (warm_start_line(exp.warm_start),) if w]  # none of the rows above
    lines.append(f"folder: {exp.where}")
    text = io.StringIO()
    console = Console(file=text, width=120, color_system=None, force_terminal=False, markup=False)
    console.print(table)
    return text.getvalue().rstrip("\n") + "\n" + "\n".join(lines)


FAILED_SHOWN = 5  # failed trials listed per cause; --format json lists every one


def failed_lines(exp: ExperimentResults) -> list[str]:
    """Failed trials by cause, each with its error's first line, where in the user's code it
    was raised, and its error file and output, as a user names them."""
    lines = []
    for cause, members in exp.failed_by_cause().items():
        lines.append(f"failed, {cause} ({len(members)}): {', '.join(t.trial_id for t in members)}")
        for t in members[:FAILED_SHOWN]:
            failure, files = t.failure, exp.trial_files(t)
            text = failure.message.splitlines()[0] if failure and failure.message else cause
            at = f" at {t.frame}" if t.frame else ""
            where = [f"error: {files.error}"] if files.error else []
            where += [f"output: {files.stdout}"] if files.stdout else []
            lines.append(f"  {t.trial_id}: {text}{at}" + (f"; {', '.join(where)}" if where else ""))
        if len(members) > FAILED_SHOWN:
            lines.append(f"  ... and {len(members) - FAILED_SHOWN} more (--format json lists all)")
    return lines


def configuration_cells(exp: ExperimentResults) -> list[dict[str, str]]:
    """With seeds: each configuration as text cells (rank, params, seeds, aggregate, interval,
    each seed's score), best first; `analyze` and `report` show the same."""
    out = []
    for rank, c in enumerate(exp.summary.configurations(), 1):
        low_high = c.interval_text(cell)
        out.append(
            {
                "rank": str(rank),
                "params": ", ".join(f"{k}={cell(v)}" for k, v in c.params.items()) or "-",
                "seeds": _seeds_cell(c),
                "score": cell(c.score),
                "interval": low_high,
                "chance": f"{c.chance_best:.0%}" if c.chance_best is not None else "-",
                "bound": cell(c.bound),
                "per_seed": ", ".join(
                    f"{seed}: {cell(score)}" for seed, score in zip(c.seeds, c.scores, strict=True)
                ),
            }
        )
    return out


def _seeds_cell(c: Configuration) -> str:
    """How many seeds a configuration ran on; for an incomplete one, how many scored and
    failed."""
    budgets = f", {c.budgets_text}" if c.mixed_budgets else ""
    if c.complete:
        return str(len(c.trial_ids)) + budgets
    text = f"{c.scored} of {max(c.expected, len(c.trial_ids))} scored"
    return text + (f", {c.failed} failed" if c.failed else "") + budgets


def configuration_lines(exp: ExperimentResults) -> list[str]:
    """The configurations over seeds, a line each (the table's footer in `analyze`)."""
    rows = configuration_cells(exp)
    if not rows:
        return []
    s = exp.summary
    by = (
        f"by the {noise.bound_words(s.mode)} (lcb) of the {s.aggregate}"
        if s.select == "lcb"
        else f"by the {s.aggregate}"
    )
    head = (
        f"configurations over {counted(len(s.seeds), 'seed')}, {by} of their seeds' scores (a 95% "
        "bootstrap interval from 5 seeds, the seeds' range under 5; P(best): the chance of "
        f"being the best, lcb: the {noise.bound_words(s.mode)}, both by bootstrap):"
    )
    lines = [head] + [
        f"  {r['rank']}. {r['params']}: {r['score']} {r['interval']} P(best) {r['chance']}, "
        f"lcb {r['bound']} ({r['per_seed']})"
        + (f" [{r['seeds']}]" if "mixed budgets" in r["seeds"] else "")
        for r in rows
    ]
    waiting = sum(1 for t in exp.summary.trials if never_started(t))
    if waiting:
        never = counted(waiting, "trial")
        lines.append(f"  ({never} never started: no configuration was drawn for them)")
    return lines


def clone_lines(exp: ExperimentResults) -> list[str]:
    """PBT's exploits as `analyze` and `report` show them, one line each, in order."""
    return [
        f"{c.trial_id} at iteration {c.iteration} copied {c.from_trial} (iteration "
        f"{c.from_iteration})"
        + (
            ": " + ", ".join(f"{k} {cell(a)} -> {cell(b)}" for k, (a, b) in c.changed.items())
            if c.changed
            else ""
        )
        for c in exp.clones
    ]


def status_cell(t: TrialOutcome) -> str:
    """A trial's status as `analyze` and `report` show it: how it ended, or why it failed."""
    if t.failure is not None:
        return f"error: {t.failure.cause}"
    return t.status.lower() + (" (early)" if t.stopped_early else "")


def cell(value: Any) -> str:
    """A value as `analyze` shows it: floats to 6 digits, lists and mappings as JSON."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


def _raw(value: Any) -> str:
    """A CSV cell at full precision; lists and mappings as JSON, nothing as empty."""
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)
