"""`tune_app compare --html FILE`: a comparison of runs as one self-contained HTML page.

The figures are embedded as data URIs and the CSS inline (the report's), so the page opens
offline from disk; `templates/compare.html.j2` lays it out, autoescaped, so no run's text can
become markup. The page is written to a temporary file and renamed into place
(`files.write_text`): a reader sees the old page or the new one, never half of either.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tune_app.command import APP
from tune_app.readback.analyze import cell
from tune_app.readback.comparing import AXIS_WORDS, MIN_SCORES, Comparison
from tune_app.readback.report import TEMPLATES, page_path
from tune_app.rundir.files import for_the_user, write_text

PAGE_TEMPLATE = "compare.html.j2"


@dataclass(frozen=True)
class Figure:
    caption: str
    data_uri: str


@dataclass(frozen=True)
class RunRow:
    label: str
    color: str
    where: str
    scheduler: str
    trials: str
    best: str
    interval: str
    method: str


@dataclass(frozen=True)
class Page:
    title: str
    generated: str
    metric: str
    mode: str
    runs: tuple[RunRow, ...]
    figures: tuple[Figure, ...]
    methods: tuple[tuple[str, str], ...]  # (label, where its scores come from)
    improvements: tuple[tuple[str, str, str, str], ...]  # better, than, chance, interval
    notes: tuple[str, ...]


def write(c: Comparison, out: str | Path) -> Path:
    """Write the page of `c` to `out` (a folder: `compare.html` in it), atomically; an OSError
    becomes WriteError (exit 74)."""
    path = page_path(Path(out), "compare.html", "--html")
    with for_the_user():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, render(page(c)))
    return path


def page(c: Comparison) -> Page:
    """What the page shows, every cell already text."""
    from tune_app.readback.plots import png
    from tune_app.readback.plots.overlay import run_colors, staircases

    colors = run_colors(c)
    drawn = {axis: png(fig) for axis, fig in staircases(c).items()}
    figures = tuple(
        Figure(
            f"The best {c.metric} so far ({c.mode}) against {AXIS_WORDS[axis]}, one staircase "
            "per run; a trial counts from its last result (with seeds, a configuration from its "
            "last seed's), the dot marks where the run ended.",
            "data:image/png;base64," + base64.b64encode(image).decode("ascii"),
        )
        for axis, image in drawn.items()
        if image is not None
    )
    return Page(
        title=" vs ".join(r.label for r in c.runs),
        generated=datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        metric=c.metric,
        mode=c.mode,
        runs=tuple(
            RunRow(
                label=r.label,
                color=colors[r.label],
                where=r.where,
                scheduler=r.scheduler,
                trials=str(r.trials) + ("" if r.finished else " (not finished)"),
                best=cell(r.best),
                interval=r.interval_text(),
                method=r.method,
            )
            for r in c.runs
        ),
        figures=figures,
        methods=tuple((m.label, m.basis) for m in c.methods if len(m.scores) >= MIN_SCORES),
        improvements=tuple(
            (
                i.better,
                i.than,
                f"{i.chance:.2f}",
                f"[{i.interval[0]:.2f}, {i.interval[1]:.2f}] ({i.counts[0]} vs {i.counts[1]})",
            )
            for i in c.improvements
        ),
        notes=c.notes,
    )


def render(p: Page) -> str:
    """The page as HTML text."""
    return TEMPLATES.get_template(PAGE_TEMPLATE).render(page=p, app=APP)
