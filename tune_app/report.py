"""`tune_app report`: a run as one self-contained HTML page, from its files alone.

Each PNG is written beside the page (`<page>_files/`) and embedded in it as a data URI, with the
CSS inline and no external script, font or server, so the page opens offline from disk.
"""

from __future__ import annotations

import base64
import re
from datetime import datetime
from html import escape
from pathlib import Path

from tune_app import plots, scoring
from tune_app.analyze import cell as _shown  # the same cells as `analyze` prints
from tune_app.rundir.read import ExperimentResults
from tune_app.rundir.records import ERRORED, UNFINISHED, TrialOutcome

# Marks the page rendered once every image decoded, so a headless browser can check it.
_CHECK_IMAGES = """
window.addEventListener("load", () => {
  const images = Array.from(document.images);
  const ok = images.every((img) => img.complete && img.naturalWidth > 0);
  document.body.dataset.imageCount = String(images.length);
  document.body.dataset.images = ok ? "ok" : "broken";
});
"""

_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2933;
  margin: 0 auto; padding: 24px 32px 48px; max-width: 1100px; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 36px 0 4px; padding-top: 12px; border-top: 2px solid #e3e6eb; }
h3 { font-size: 15px; margin: 24px 0 8px; color: #3e4c59; }
.meta { color: #616e7c; margin: 2px 0; }
code { font: 12px/1.4 ui-monospace, "SFMono-Regular", Menlo, monospace; }
.note { padding: 8px 12px; border-radius: 4px; margin: 10px 0; }
.warn { background: #fff8e1; border-left: 4px solid #f9a825; }
.best { background: #e8f5e9; border-left: 4px solid #2e7d32; }
.note ul { margin: 4px 0; padding-left: 20px; }
figure { margin: 8px 0 16px; }
figure img { max-width: 100%; height: auto; display: block; }
figcaption { color: #616e7c; font-size: 12px; }
table { border-collapse: collapse; font-size: 13px; margin: 4px 0 12px; }
th, td { padding: 4px 10px; border-bottom: 1px solid #e3e6eb; text-align: left;
  vertical-align: top; }
th { background: #f5f7fa; font-weight: 600; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.error td { background: #fdecea; }
tr.unfinished td { color: #616e7c; font-style: italic; }
tr.top td { font-weight: 600; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px;
  margin-right: 6px; vertical-align: baseline; }
nav a { margin-right: 14px; }
"""


def write(experiments: list[ExperimentResults], out: Path, source: str) -> Path:
    """Write the page for `experiments` (read from `source`) to `out`, its PNGs beside it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    images = out.with_name(f"{out.stem}_files")
    sections = []
    for exp in experiments:
        figures = _figures(exp)
        if figures:
            images.mkdir(exist_ok=True)
        for name, (_, png) in figures.items():
            (images / name).write_bytes(png)
        sections.append(_section(exp, figures, images.name))
    out.write_text(_page(source, experiments, sections), encoding="utf-8")
    return out


def _figures(exp: ExperimentResults) -> dict[str, tuple[str, bytes]]:
    """PNG file name -> (caption, bytes) of the experiment's figures that have data."""
    colors = plots.trial_colors(exp)
    prefix = re.sub(r"[^A-Za-z0-9_.-]+", "_", exp.folder.name) or "experiment"
    early = " ▼ marks where the scheduler stopped a trial." if exp.scheduler != "fifo" else ""
    drawn = {
        "curves": (
            "Learning curves: one line per trial; a failed trial is dashed and crossed (✕) at "
            "its last result." + early,
            plots.learning_curves(exp, colors),
        ),
        "best-over-time": (
            "The best metric so far against wall time since the run's first result; grey dots "
            "are single results.",
            plots.best_over_time(exp),
        ),
        "params": (
            "Each searched parameter against the trial's best metric; hollow: stopped by the "
            "scheduler, ✕: failed.",
            plots.params_vs_metric(exp, colors),
        ),
    }
    return {f"{prefix}-{key}.png": (cap, png) for key, (cap, png) in drawn.items() if png}


def _page(source: str, experiments: list[ExperimentResults], sections: list[str]) -> str:
    nav = ""
    if len(experiments) > 1:
        links = (f'<a href="#{_anchor(e)}">{escape(e.name)}</a>' for e in experiments)
        nav = f"<nav>{''.join(links)}</nav>"
    generated = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tune_app report: {escape(source.rstrip("/").rsplit("/", 1)[-1] or source)}</title>
<style>{_CSS}</style>
</head>
<body>
<h1>tune_app report</h1>
<p class="meta"><code>{escape(source)}</code> · {len(experiments)} experiment(s) ·
generated {escape(generated)}</p>
{nav}
{"".join(sections)}
<script>{_CHECK_IMAGES}</script>
</body>
</html>
"""


def _section(exp: ExperimentResults, figures: dict[str, tuple[str, bytes]], folder: str) -> str:
    parts = [f'<section id="{_anchor(exp)}">', f"<h2>{escape(exp.name)}</h2>", _meta(exp)]
    parts.append(_problems(exp))
    best = exp.best_trial
    if best is not None:
        shown = ", ".join(f"{k} = {_shown(v)}" for k, v in best.params.items())
        parts.append(
            f'<p class="note best">Best: trial <b>{escape(best.trial_id)}</b>, '
            f"{escape(str(exp.metric))} = <b>{escape(_shown(best.score))}</b> "
            f"({escape(scoring.describe(exp.scope))})"
            + (f"; {escape(shown)}" if shown else "")
            + "</p>"
        )
    parts.append(_failures(exp))
    for name, (caption, png) in figures.items():
        data = base64.b64encode(png).decode("ascii")
        parts.append(
            f'<figure><img src="data:image/png;base64,{data}" alt="{escape(caption)}">'
            f'<figcaption>{escape(caption)} <a href="{escape(folder)}/{escape(name)}">PNG</a>'
            "</figcaption></figure>"
        )
    if exp.metric is None:
        parts.append('<p class="note warn">No metric is known (run.json is lost?): no plots.</p>')
    parts.append("<h3>Trials, best first</h3>" + _trials_table(exp))
    parts.append(f'<p class="meta">folder: <code>{escape(exp.where)}</code></p></section>')
    return "\n".join(p for p in parts if p)


def _meta(exp: ExperimentResults) -> str:
    metric = f"{exp.metric} ({exp.mode})" if exp.metric else "no metric"
    stop = ", ".join(f"{k} ≥ {_shown(v)}" for k, v in exp.stop.items()) or "none"
    counts = ", ".join(f"{n} {s.lower()}" for s, n in sorted(exp.counts.items()))
    state = "finished" if exp.finished else "not finished"
    items = [
        f"metric {metric}",
        f"scheduler {exp.scheduler}",
        f"stop {stop}",
        f"{len(exp.trials)} trial{'' if len(exp.trials) == 1 else 's'}: {counts or 'none yet'}",
        state,
    ]
    return f'<p class="meta">{escape(" · ".join(items))}</p>'


def _problems(exp: ExperimentResults) -> str:
    """Notes on an unfinished run and on the files that could not be read in full."""
    notes = []
    if not exp.finished:
        notes.append(
            '<p class="note warn">This run did not finish (interrupted, killed or still '
            "running): the page shows what its files hold so far. "
            f"<code>tune_app resume {escape(exp.where)}</code> continues it.</p>"
        )
    if exp.problems:
        items = "".join(f"<li><code>{escape(p)}</code></li>" for p in exp.problems)
        notes.append(
            '<div class="note warn problems"><b>Files that could not be read in full</b> '
            f"(the rest was read):<ul>{items}</ul></div>"
        )
    return "".join(notes)


def _failures(exp: ExperimentResults) -> str:
    groups = exp.failed_by_cause()
    if not groups:
        return ""
    rows = []
    for cause, members in groups.items():
        message = next((t.failure.message for t in members if t.failure and t.failure.message), "")
        first_line = message.splitlines()[0] if message else ""
        ids = ", ".join(t.trial_id for t in members)
        rows.append(
            f'<tr data-cause="{escape(cause)}"><td>{escape(cause)}</td>'
            f'<td class="num">{len(members)}</td><td>{escape(ids)}</td>'
            f"<td><code>{escape(first_line)}</code></td></tr>"
        )
    return (
        '<h3>Failures by cause</h3><table class="failures"><thead><tr><th>cause</th>'
        "<th>trials</th><th>ids</th><th>error (first line)</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _trials_table(exp: ExperimentResults) -> str:
    ranked = exp.ranked()
    if not ranked:
        return '<p class="meta">No trials yet.</p>'
    colors = plots.trial_colors(exp)
    head = [
        "#", "trial", "status", *exp.searched, "iterations", "score", "best", "last",
        "stopped early",
    ]  # fmt: skip
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    best = exp.best_trial
    rows = [
        _trial_row(i, t, exp.searched, colors[t.trial_id], t is best)
        for i, t in enumerate(ranked, 1)
    ]
    return (
        f'<table class="trials"><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _trial_row(rank: int, t: TrialOutcome, searched: list[str], color: str, top: bool) -> str:
    status = t.status.lower() + (" (early)" if t.stopped_early else "")
    if t.failure is not None:
        status = f"error: {t.failure.cause}"
    classes = [c for c, on in (("error", t.status == ERRORED), ("top", top)) if on]
    if t.status == UNFINISHED:
        classes.append("unfinished")
    early = f"at iteration {t.iterations}" if t.stopped_early else ""
    cells = [
        f'<td class="num">{rank}</td>',
        f'<td><span class="swatch" style="background:{color}"></span>{escape(t.trial_id)}</td>',
        f"<td>{escape(status)}</td>",
        *(f"<td>{escape(_shown(t.params.get(k)))}</td>" for k in searched),
        f'<td class="num">{t.iterations}</td>',
        f'<td class="num">{escape(_shown(t.score))}</td>',
        f'<td class="num">{escape(_shown(t.best))}</td>',
        f'<td class="num">{escape(_shown(t.last))}</td>',
        f'<td class="early">{early}</td>',
    ]
    return (
        f'<tr data-trial="{escape(t.trial_id)}" class="{" ".join(classes)}">{"".join(cells)}</tr>'
    )


def _anchor(exp: ExperimentResults) -> str:
    return "exp-" + re.sub(r"[^A-Za-z0-9_-]+", "-", exp.folder.name)
