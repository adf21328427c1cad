"""`tune_app report`: a run as one self-contained HTML page, from its files alone.

This module decides what the page shows, as small typed views; `templates/report.html.j2` lays
them out, autoescaped, so no run or trial text can become markup. Each PNG is written beside the
page (`<page>_files/`) and embedded in it as a data URI, with the CSS and script inline and no
external script, font or server, so the page opens offline from disk.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2

from tune_app import scoring
from tune_app.command import APP
from tune_app.errors import SpecError
from tune_app.readback import front, importance, plots
from tune_app.readback.analyze import cell as _shown  # the same cells as `analyze` prints
from tune_app.readback.analyze import clone_lines, configuration_cells, rung_checks, status_cell
from tune_app.readback.importance import table as importance_table
from tune_app.readback.plots import front as front_plot
from tune_app.readback.plots import parallel as plots_parallel
from tune_app.readback.plots import timeline
from tune_app.rundir import budget, noise, rungs
from tune_app.rundir.allowed import output_problem, replaced_folder_problem
from tune_app.rundir.files import (
    for_the_user,
    new_file,
    remove,
    replace_folder,
    staged,
    write_all,
)
from tune_app.rundir.location import name_of
from tune_app.rundir.read import ExperimentResults
from tune_app.rundir.records import ERRORED, UNFINISHED, TrialOutcome, warm_start_line
from tune_app.seeds import SEED_KEY
from tune_app.words import counted

# The templates ship as package data; PackageLoader finds them in a wheel install as well.
TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("tune_app", "templates"),
    autoescape=True,  # on for every template, whatever its file name ends with
    undefined=jinja2.StrictUndefined,  # a misspelt field fails the render, not blanks a cell
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
PAGE_TEMPLATE = "report.html.j2"
# In every figures' folder a report writes: the next report replaces only a folder holding it.
FIGURES_MARKER = ".tune_app_report"


@dataclass(frozen=True)
class Figure:
    """One plot: its PNG file's name beside the page, its caption and the PNG itself."""

    file: str
    caption: str
    png: bytes

    @property
    def data_uri(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


@dataclass(frozen=True)
class Best:
    """The best trial's line: its id, its score by the experiment's scope, its parameters."""

    trial_id: str
    metric: str
    score: str
    scope: str  # how the score was taken, in words
    params: str  # `name = value, ...`, empty when nothing was searched


@dataclass(frozen=True)
class FailureGroup:
    """The failed trials that share a cause, and the first line of one's error."""

    cause: str
    count: int
    ids: str
    first_line: str


@dataclass(frozen=True)
class TrialRow:
    """One row of the trials table, every cell already shown as text."""

    trial_id: str
    rank: int
    color: str  # the trial's colour in the plots
    status: str
    params: tuple[str, ...]  # one cell per searched parameter, in the table's column order
    iterations: int
    values: tuple[str, ...]  # under `front.columns`: score, best, last; or each objective, mark
    early: str  # where the scheduler stopped it; empty if it was not stopped early
    classes: tuple[str, ...]  # the row's CSS classes: error, top (the best, or on the front),
    # unfinished


@dataclass(frozen=True)
class Section:
    """One experiment's part of the page."""

    anchor: str
    name: str
    where: str
    meta: str  # the one line under the heading: metric, scheduler, stop, trial counts, state
    finished: bool
    problems: tuple[str, ...]  # files that could not be read in full
    best: Best | None
    failures: tuple[FailureGroup, ...]
    figures: tuple[Figure, ...]
    files: str  # the folder beside the page that holds the PNGs, relative to the page
    no_metric: str  # why the page has no plots of a metric; "" when it has a metric or objectives
    columns: tuple[str, ...]
    rows: tuple[TrialRow, ...]  # best first
    clones: tuple[str, ...] = ()  # PBT's exploits: who copied whom, when, what changed
    configurations: tuple[dict[str, str], ...] = ()  # with seeds: aggregates, best first
    aggregate: str = ""  # how a configuration's seeds are judged
    importance: importance_table.ParamImportance | None = (
        None  # None without a metric or a searched parameter
    )
    select: str = "aggregate"  # what ranks configurations over seeds: aggregate or lcb
    bound: str = ""  # what their lcb is, in words
    rungs: tuple[rungs.RungCheck, ...] = ()  # ASHA's and HyperBand's rungs, checked
    rung_warning: str = ""  # the rungs did not predict the final scores: what to change
    rung_bound: str = ""  # what a rung at the bound keeps, for the run's reduction factor
    front: tuple[str, ...] = ()  # several objectives: the front's size and how `best` exports it


@dataclass(frozen=True)
class LiveNote:
    """A live page's line at its top (`readback.watch`), and how often the browser reloads it."""

    line: str
    every_s: int


@dataclass(frozen=True)
class Page:
    """The whole page: where the runs were read from, one section per experiment, and the live
    line of a page `report --watch` keeps current (None: a page written once, or the last)."""

    title: str
    source: str
    generated: str
    sections: tuple[Section, ...]
    live: LiveNote | None = None


def write(
    experiments: list[ExperimentResults],
    out: Path,
    source: str,
    *,
    live: LiveNote | None = None,
    importances: importance.Kept | None = None,
) -> Path:
    """Write the page for `experiments` (read from `source`) to `out`, its PNGs beside it; a
    `live` page says so at its top and reloads itself (`importances`: what the live page showed
    before, computed again only as the trials grow). The figures are written into a folder of
    their own and the page to a temporary file, each then renamed into place; a write that fails
    (a full disk, a read-only folder) leaves the earlier page as it was and nothing
    half-written, and raises WriteError (exit 74). A `<page>_files` the app did not write is
    refused (SpecError) before anything is written, not replaced."""
    images = out.with_name(f"{out.stem}_files")
    problem = replaced_folder_problem(images, FIGURES_MARKER)
    if problem and not _unmarked_figures(images):
        raise SpecError(problem, path="--out", suggestion="move it, or name another page")
    figures_tmp, page_tmp = staged(images), staged(out)
    try:
        with for_the_user():
            out.parent.mkdir(parents=True, exist_ok=True)
            figures_tmp.mkdir()
            sections = []
            for exp in experiments:
                begin = importances.begun if importances else importance.begun
                ranked = begin(exp, _log_axes(exp))  # beside the figures
                figures = _figures(exp)
                for figure in figures:
                    (figures_tmp / figure.file).write_bytes(figure.png)
                sections.append(_section(exp, figures, images.name, ranked))
            page = Page(
                title=name_of(source),
                source=source,
                generated=datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
                sections=tuple(sections),
                live=live,
            )
            with new_file(page_tmp) as f:
                write_all(f, render(page).encode("utf-8"))
            if any(figures_tmp.iterdir()):  # the figures first: the page names them
                (figures_tmp / FIGURES_MARKER).touch()
                replace_folder(figures_tmp, images)
            os.replace(page_tmp, out)
    finally:
        remove(figures_tmp)
        page_tmp.unlink(missing_ok=True)
    return out


def render(page: Page) -> str:
    """The page as HTML text."""
    return TEMPLATES.get_template(PAGE_TEMPLATE).render(page=page, app=APP)


def _unmarked_figures(images: Path) -> bool:
    """A report's figures as reports wrote them before the marker: `report_files` (the default
    page's) holding PNGs alone."""
    return (
        images.name == "report_files"
        and images.is_dir()
        and not images.is_symlink()
        and all(f.suffix == ".png" and f.is_file() and not f.is_symlink() for f in images.iterdir())
    )


def page_path(out: Path, default: str, option: str) -> Path:
    """Where the page the user named with `option` goes: `out`, or in a folder its `default`;
    SpecError where no page should be written there (`allowed.output_problem`)."""
    path = out / default if out.is_dir() else out
    problem = output_problem(path, (".html", ".htm"))
    if problem is not None:
        raise SpecError(problem, path=option, suggestion="name a page ending in .html")
    return path


def _figures(exp: ExperimentResults) -> tuple[Figure, ...]:
    """The experiment's figures that have data."""
    colors = plots.trial_colors(exp)
    prefix = re.sub(r"[^A-Za-z0-9_.-]+", "_", exp.folder.name) or "experiment"
    early = " ▼ marks where the scheduler stopped a trial." if exp.scheduler != "fifo" else ""
    faint = (
        f" Beyond {plots.MAX_LEGEND_TRIALS} trials only the best {plots.HIGHLIGHTED} are in "
        "colour; the rest are faint grey."
        if len(exp.trials) > plots.MAX_LEGEND_TRIALS
        else ""
    )
    x_label = plots.curve_x(exp)[1]
    drawn = {
        **front_figure(exp),
        **objective_curves(exp, colors, x_label),
        "curves": (
            f"Learning curves against {x_label}: one line per trial; a failed trial is dashed "
            "and crossed (✕) at its last result." + early + plots.marks.caption(exp) + faint,
            plots.learning_curves(exp, colors),
        ),
        "best-over-time": (
            "The best metric so far against wall time since the run's first result; grey dots "
            "are single results.",
            plots.best_over_time(exp),
        ),
        "timeline": (timeline.caption(), timeline.trial_timeline(exp)[0]),
        "params": (
            "Each searched parameter against the trial's score; hollow: stopped by the "
            "scheduler, ✕: failed; (log): a log axis (a log-scale sampler, or values spaced "
            "evenly in log).",
            plots.params_vs_metric(exp, colors),
        ),
        "parallel": (
            "Parallel coordinates: each scored trial is one line through its parameters' values "
            "to its score, the best on top; dashed: failed; (log): a log axis (a log-scale "
            "sampler, or values spaced evenly in log).",
            plots_parallel.parallel_coordinates(exp, colors),
        ),
        "expected-best": (_budget_caption(exp), plots.expected_best(exp)),
    }
    pngs = {k: (caption, plots.png(fig)) for k, (caption, fig) in drawn.items() if fig is not None}
    return tuple(
        Figure(f"{prefix}-{k}.png", caption, png)
        for k, (caption, png) in pngs.items()
        if png is not None  # an axis matplotlib cannot lay out: no figure
    )


def objective_curves(
    exp: ExperimentResults, colors: dict[str, str], x_label: str
) -> dict[str, tuple[str, Any]]:
    """Several objectives: each one's learning curves, after the front; {} with one metric."""
    return {
        "curves-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", o.name): (
            f"Learning curves of {o.name} ({o.mode}) against {x_label}: one line per trial, "
            "the front's trials in colour first; a failed trial is dashed and crossed (✕) at "
            "its last result.",
            plots.learning_curves(exp, colors, o.name),
        )
        for o in exp.summary.objectives
    }


def front_figure(exp: ExperimentResults) -> dict[str, tuple[str, Any]]:
    """The Pareto front's figure, first, for a search of several objectives; {} otherwise."""
    fig = front_plot.pareto_front(exp)
    return {"pareto": (front_plot.caption(exp), fig)} if fig is not None else {}


def _budget_caption(exp: ExperimentResults) -> str:
    found = budget.curve(exp.summary)
    if found is None:
        return ""
    gain = found.gain()
    return (
        f"Enough trials? The expected best score of a search of n {found.unit}, n drawn without "
        f"replacement from this run's {found.count} scored ones (Dodge et al. 2019, \"Show your "
        'work"), with a band of one standard deviation; the dashed line marks this run. A '
        "curve still rising there says more would likely find better"
        + (
            f"; the second half of this run added {_shown(gain)} to the expected best."
            if gain is not None
            else "."
        )
        + (
            " Trials stopped early count with their scores at the budget they reached."
            if exp.scheduler != "fifo"
            else ""
        )
    )


def _section(
    exp: ExperimentResults,
    figures: tuple[Figure, ...],
    files: str,
    ranked: Callable[[], importance.RunImportance | None] | None = None,
) -> Section:
    """`ranked`: the importances begun beside the figures (None: computed now)."""
    ranked = ranked or importance.begun(exp, _log_axes(exp))
    checks = rung_checks(exp)
    return Section(
        anchor="exp-" + re.sub(r"[^A-Za-z0-9_-]+", "-", exp.folder.name),
        name=exp.name,
        where=exp.where,
        meta=_meta(exp),
        finished=exp.finished,
        problems=tuple(exp.problems),
        clones=tuple(clone_lines(exp)),
        configurations=tuple(configuration_cells(exp)),
        aggregate=exp.summary.aggregate,
        select=exp.summary.select,
        bound=noise.bound_words(exp.mode),
        rungs=tuple(checks),
        rung_warning=rungs.warning(checks, exp.scheduler) or "",
        rung_bound=rungs.cut_words(exp.reduction_factor) if checks else "",
        importance=importance_table.table(exp, ranked()),
        best=_best(exp),
        failures=_failures(exp),
        figures=figures,
        files=files,
        no_metric=_no_metric(exp),
        columns=(
            "#",
            "trial",
            "status",
            *exp.searched,
            "iterations",
            *front.columns(exp.summary),
            "stopped early",
        ),  # fmt: skip
        rows=_rows(exp),
        front=tuple(front.lines(exp.summary, exp.where)) if front.several(exp.summary) else (),
    )


def _no_metric(exp: ExperimentResults) -> str:
    """Why the page draws no metric ("" with a metric or several objectives): a run folder
    whose record is lost is refused before this, so its spec named none."""
    if exp.metric is not None or front.several(exp.summary):
        return ""
    return "The spec names no metric: no plots of one."


def _meta(exp: ExperimentResults) -> str:
    metric = f"metric {exp.metric} ({exp.mode})" if exp.metric else front.title(exp.summary)
    stop = ", ".join(f"{k} ≥ {_shown(v)}" for k, v in exp.stop.items()) or "none"
    counts = ", ".join(f"{n} {s.lower()}" for s, n in sorted(exp.counts.items()))
    state = exp.state if exp.finished else "not finished"  # a refused run says it ended early
    items = [
        metric,
        f"scheduler {exp.scheduler}",
        f"stop {stop}",
        f"{counted(len(exp.trials), 'trial')}: {counts or 'none yet'}",
        state,
        warm_start_line(exp.warm_start),  # the earlier runs' trials: none of this page's
    ]
    return " · ".join(item for item in items if item)


def _best(exp: ExperimentResults) -> Best | None:
    best = exp.best_trial
    if best is None:
        return None
    configs = exp.summary.configurations()
    if configs:  # with seeds: the best configuration, by its seeds' aggregate
        top = configs[0]
        return Best(
            trial_id=best.trial_id,
            metric=str(exp.metric),
            score=_shown(top.score),
            scope=f"{top.of_seeds(exp.summary.aggregate)}, each {scoring.describe(exp.scope)}"
            + (f"; {top.budgets_text}" if top.mixed_budgets else "")
            + noise.chosen_by(top, exp.summary.select),
            params=", ".join(f"{k} = {_shown(v)}" for k, v in top.params.items()),
        )
    return Best(
        trial_id=best.trial_id,
        metric=str(exp.metric),
        score=_shown(best.score),
        scope=scoring.describe(exp.scope),
        params=", ".join(f"{k} = {_shown(v)}" for k, v in best.params.items()),
    )


def _log_axes(exp: ExperimentResults) -> list[str]:
    """The searched parameters the page draws on a log axis (the seed is noise, not a choice)."""
    params = [k for k in exp.searched if k != SEED_KEY]
    return [k for k in params if plots.param_scale(exp, k, _values(exp, k)) == plots.LOG]


def _values(exp: ExperimentResults, key: str) -> list[object]:
    """The values of searched parameter `key` in the trials that have a score."""
    return [t.params.get(key) for t in exp.trials if t.score is not None]


def _failures(exp: ExperimentResults) -> tuple[FailureGroup, ...]:
    groups = []
    for cause, members in exp.failed_by_cause().items():
        message = next((t.failure.message for t in members if t.failure and t.failure.message), "")
        groups.append(
            FailureGroup(
                cause=cause,
                count=len(members),
                ids=", ".join(t.trial_id for t in members),
                first_line=message.splitlines()[0] if message else "",
            )
        )
    return tuple(groups)


def _rows(exp: ExperimentResults) -> tuple[TrialRow, ...]:
    colors = plots.trial_colors(exp)
    tops = {exp.best_trial.trial_id} if exp.best_trial else set(exp.summary.pareto())
    return tuple(
        _row(i, t, exp, colors[t.trial_id], t.trial_id in tops)
        for i, t in enumerate(front.best_first(exp.summary), 1)
    )


def _row(rank: int, t: TrialOutcome, exp: ExperimentResults, color: str, top: bool) -> TrialRow:
    classes = [c for c, on in (("error", t.status == ERRORED), ("top", top)) if on]
    if t.status == UNFINISHED:
        classes.append("unfinished")
    return TrialRow(
        trial_id=t.trial_id,
        rank=rank,
        color=color,
        status=status_cell(t),
        params=tuple(_shown(t.params.get(k)) for k in exp.searched),
        iterations=t.iterations,
        values=tuple(front.cells(t, exp.summary, _shown)),
        early=f"at iteration {t.iterations}" if t.stopped_early else "",
        classes=tuple(classes),
    )
